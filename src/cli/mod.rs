//! The command line: one file per command. Flag parsing and every word
//! about flags live here; the stages take typed options and report typed
//! errors and hints, which this module words for the user.

pub mod build;
pub mod inspect;
mod output;
pub mod plan_args;
pub mod report;
pub mod test;
pub mod train;
pub mod triage;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::diag::Hint;
use crate::error::{Error, Result};
use crate::plan::{Level, PlanOptions};

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

/// Run the command line; the process exit code (docs/cli.md, "Exit codes").
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
        Hint::Capacities(caps) => {
            let flags: Vec<String> =
                caps.iter().map(|(l, bytes)| format!("--{} {bytes}", l.name().to_ascii_lowercase())).collect();
            format!("{} (or more)", flags.join(" "))
        }
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

/// `--tolerance T` and `--rtol R`: a finite, non-negative absolute
/// tolerance, and a relative one of at most what a model's `meta_rtol` may
/// say (above it wrong results pass).
pub fn check_tolerance(t: Option<f32>, rtol: Option<f32>) -> Result<()> {
    match t {
        Some(t) if !(t.is_finite() && t >= 0.0) => {
            return Err(Error::Usage(format!("--tolerance {t}: a tolerance is a finite, non-negative number")))
        }
        _ => {}
    }
    let max = crate::bind::MAX_RTOL;
    match rtol {
        Some(r) if !(r.is_finite() && (0.0..=max).contains(&r)) => Err(Error::Usage(format!(
            "--rtol {r}: a relative tolerance is a finite number from 0 to {max} (above it wrong results pass)"
        ))),
        _ => Ok(()),
    }
}

/// What the host emulation can back: every level lives in memory with
/// 32-bit addresses (below 2 GiB on Linux), beside the program.
pub const HOST_BACKING: u64 = 1 << 30;

/// A plan whose project is to run (build, test): its levels fit the host
/// emulation's backing store, or the app would abort at start.
pub fn runnable(o: &PlanOptions) -> Result<()> {
    let levels = [Level::L1, Level::L2, Level::L3];
    let total: u64 = levels.iter().map(|&l| o.platform.capacity(l)).sum();
    if total > HOST_BACKING {
        let each: Vec<String> =
            levels.iter().map(|&l| format!("{l} {}", crate::plan::thousands(o.platform.capacity(l)))).collect();
        return Err(Error::Usage(format!(
            "--l1/--l2/--l3: the levels total {} B ({}), more than the {} B the host emulation can back (all \
             levels live below 2 GiB); give smaller capacities",
            crate::plan::thousands(total),
            each.join(", "),
            crate::plan::thousands(HOST_BACKING)
        )));
    }
    Ok(())
}
