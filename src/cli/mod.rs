//! The command line: one file per command. Flag parsing and every word
//! about flags live here; the stages take typed options and report typed
//! errors and hints, which this module words for the user.

pub mod build;
pub mod inspect;
mod output;
pub mod report;
pub mod test;
pub mod train;
pub mod triage;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::diag::Hint;
use crate::error::{Error, Result};
use crate::plan::{Level, PlanOptions, Platform};

#[derive(Parser)]
#[command(name = "deploygen", version, about = "ONNX models to C deployment projects for GAP9 and Siracusa")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what is inside a model: graph, operators, inputs, outputs, roles,
    /// how its test data binds and, with --platform, its memory plan.
    Inspect(inspect::Args),
    /// Generate the C deployment project (network, test harness, build files).
    Build(build::Args),
    /// Generate, build and run models on the host emulation; check their
    /// results against the references (exit 0 pass, 1 wrong, 2 not run).
    Test(test::TestArgs),
    /// Merge the JUnit files of `deploygen test --partition K/N` slices into
    /// one report.
    MergeJunit(test::MergeArgs),
    /// Measure generation time and memory, arena packing, weight supply and
    /// the generated step's speed next to onnxruntime.
    Report(report::Args),
    /// Triage a training case that fails for a missing input
    /// (missing_targets, decoder_inputs, bn_single_value): reproduce it,
    /// with --fix repair the test data, re-run, update status.toml.
    Triage(triage::Args),
}

/// Run the command line; the process exit code per SPEC §1.
pub fn main() -> ExitCode {
    let matches = Cli::command().after_help(supported_operators()).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(a).map(|()| 0),
        Command::Build(a) => build::run(a).map(|same| if same { 0 } else { 1 }),
        Command::Report(a) => report::run(a).map(|()| 0),
        Command::Test(a) => test::run(&a),
        Command::MergeJunit(a) => test::merge_junit(&a).map(|()| 0),
        Command::Triage(a) => triage::run(a),
    };
    match result {
        // 1: wrong results, or differences found by `build --check`.
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("error: {}", crate::escape::terminal(&describe(&e)));
            // 2: bad input, or a request that cannot be met.
            ExitCode::from(2)
        }
    }
}

/// The `--help` footer: every operator of the registry, wrapped.
pub fn supported_operators() -> String {
    let mut out = String::from("Supported operators (matched by type, any domain):");
    let mut line = String::from(" ");
    for op in crate::ops::supported() {
        if line.len() + op.len() + 2 > 100 {
            out.push('\n');
            out.push_str(line.trim_end_matches(' '));
            line = String::from(" ");
        }
        line.push(' ');
        line.push_str(op);
        line.push(',');
    }
    out.push('\n');
    out.push_str(line.trim_end_matches(','));
    out
}

/// An error's message with its hints in command-line words.
pub fn describe(e: &Error) -> String {
    let mut msg = e.to_string();
    if let Error::Capacity { hints, .. } = e {
        let tries: Vec<String> = hints.iter().map(hint).collect();
        if !tries.is_empty() {
            msg.push_str(&format!("\n  try: {}", tries.join(", or ")));
        }
    }
    msg
}

fn hint(h: &Hint) -> String {
    match h {
        Hint::DefaultMem { level } => format!("--default-mem {level}"),
        Hint::Capacity { level, bytes } => format!("--{} {bytes} (or more)", level.name().to_ascii_lowercase()),
        Hint::TestDataL3 => "--test-data L3".to_string(),
    }
}

/// `--allow-unknown-attributes`: warn about attributes the schema does not
/// define instead of refusing the node.
pub fn unknown_attrs(allow: bool) -> crate::import::UnknownAttrs {
    if allow {
        crate::import::UnknownAttrs::Warn
    } else {
        crate::import::UnknownAttrs::Refuse
    }
}

/// `--test-data L2|L3`: where the harness keeps its test data.
pub fn test_data_level(s: &str) -> Result<Level> {
    Level::parse(s)
        .filter(|l| *l != Level::L1)
        .ok_or_else(|| Error::Usage(format!("--test-data {s}: the test data lives in L2 or L3")))
}

/// `--recompute` and `--recompute-budget`, shared by the commands that plan.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RecomputeArgs {
    /// Recompute forward values for the backward pass where that lowers
    /// the peak (auto, the default) or keep every one (off).
    #[arg(long, value_name = "MODE")]
    pub recompute: Option<String>,
    /// Most estimated cost recompute may add, in percent of the step's
    /// (default: 10).
    #[arg(long = "recompute-budget", value_name = "PCT")]
    pub recompute_budget: Option<u32>,
}

impl RecomputeArgs {
    /// The mode and budget, checked.
    pub fn get(&self) -> Result<(crate::plan::recompute::Mode, u32)> {
        let mode = self.recompute.as_deref().map_or(Ok(Default::default()), crate::plan::recompute::Mode::parse)?;
        let budget = self.recompute_budget.unwrap_or(10);
        if budget > 1000 {
            return Err(Error::Usage(format!(
                "--recompute-budget {budget}: the budget is a percentage of the step's cost, at most 1000"
            )));
        }
        Ok((mode, budget))
    }

    pub fn apply(&self, o: &mut PlanOptions) -> Result<()> {
        (o.recompute, o.recompute_budget) = self.get()?;
        Ok(())
    }
}

/// `--tolerance T`: a finite, non-negative absolute tolerance.
pub fn check_tolerance(t: Option<f32>) -> Result<()> {
    match t {
        Some(t) if !(t.is_finite() && t >= 0.0) => {
            Err(Error::Usage(format!("--tolerance {t}: a tolerance is a finite, non-negative number")))
        }
        _ => Ok(()),
    }
}

/// Memory-plan options from `--platform`, `--default-mem` (default L2),
/// `--l1`, `--l2`, `--l3`. `None` when no platform is named; the other
/// flags without `--platform` are an error.
pub fn plan_options(
    platform: Option<&str>,
    default_mem: Option<&str>,
    capacities: [Option<u64>; 3],
) -> Result<Option<PlanOptions>> {
    let Some(name) = platform else {
        if default_mem.is_some() || capacities.iter().any(Option::is_some) {
            return Err(Error::Usage(format!(
                "--default-mem, --l1, --l2 and --l3 shape a memory plan, which needs --platform ({})",
                Platform::all().iter().map(|p| p.name.clone()).collect::<Vec<_>>().join(", ")
            )));
        }
        return Ok(None);
    };
    let level = default_mem.unwrap_or("L2");
    if !matches!(Level::parse(level), Some(Level::L2 | Level::L3)) {
        return Err(Error::Usage(format!("--default-mem {level}: the default memory level must be L2 or L3")));
    }
    PlanOptions::named(name, level, capacities).map(Some)
}
