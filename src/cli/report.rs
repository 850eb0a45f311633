//! `deploygen report`: generation speed, memory packing and the generated
//! step's speed per model × platform × level, as Markdown or JSON.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::ValueEnum;

use super::output::{write_file, write_json_stdout, write_stdout};
use crate::error::{Error, Result};
use crate::verify::cache;
use crate::verify::profile;
use crate::verify::progress::Progress;
use crate::verify::report::{self, Options};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Md,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Model folders, `.onnx` files, or folders of model folders.
    #[arg(required_unless_present = "profile", value_name = "MODEL")]
    models: Vec<PathBuf>,
    /// Instead of measuring models: tabulate the per-node cycles in a saved
    /// run output of a project built with DG_PROFILE (its `BENCH node`
    /// lines).
    #[arg(long, value_name = "RUN_OUTPUT", conflicts_with = "models")]
    profile: Option<PathBuf>,
    /// With --profile: also write a bar chart of the nodes' cycles (SVG).
    #[arg(long, value_name = "FILE", requires = "profile")]
    svg: Option<PathBuf>,
    /// Platforms (repeat; default: GAP9, Siracusa and host).
    #[arg(long, value_name = "P")]
    platform: Vec<String>,
    /// Default memory levels (repeat; default: L2 and L3).
    #[arg(long, value_name = "LEVEL")]
    default_mem: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
    /// Generation runs per case; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Skip the host run of the generated project (no step time).
    #[arg(long)]
    no_run: bool,
    /// onnxruntime step times (tools/ort_step_time.py's JSON).
    /// (default: models/ort_step_times.json, when there is one).
    #[arg(long, value_name = "FILE")]
    ort: Option<PathBuf>,
    /// Where the compiled runtime is cached (default: $DEPLOYGEN_CACHE_DIR,
    /// else $XDG_CACHE_HOME/deploygen, else ~/.cache/deploygen).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    #[command(flatten)]
    plan: super::plan_args::PlanArgs,
}

pub fn run(a: Args) -> Result<()> {
    if let Some(run_output) = &a.profile {
        return profile(run_output, a.svg.as_deref(), a.format);
    }
    let ort = match &a.ort {
        Some(p) => report::ort_times(p, true)?,
        None => report::ort_times(Path::new(report::DEFAULT_ORT), false)?,
    };
    let mut notes = vec![];
    let models = super::test::expand_models(&a.models, &mut notes)?;
    if models.is_empty() {
        return Err(report::no_models(&a.models));
    }
    let platforms = if a.platform.is_empty() {
        crate::plan::Platform::all().into_iter().map(|p| p.name).collect()
    } else {
        a.platform
    };
    let levels = if a.default_mem.is_empty() { vec!["L2".into(), "L3".into()] } else { a.default_mem };
    let opts = Options {
        runs: a.runs as usize,
        run_host: !a.no_run,
        exe: std::env::current_exe().ok(),
        ort,
        cache: a.cache_dir.or_else(cache::default_dir),
    };
    let mut rows = vec![];
    let progress = Progress::new("deploygen report", models.len() * platforms.len() * levels.len());
    for (name, path) in &models {
        for p in &platforms {
            for l in &levels {
                let plan_opts = a.plan.options(p, Some(l))?;
                let label = format!("{name}/{p}-{l}");
                progress.start(&label);
                let t = Instant::now();
                let row = report::measure(name, path, &plan_opts, &opts);
                progress.end(&label, if row.error.is_some() { "error" } else { "measured" }, t.elapsed());
                rows.push(row);
            }
        }
    }
    progress.finish();
    match a.format {
        Format::Md => write_stdout(&report::markdown(&rows))?,
        Format::Json => write_json_stdout(&(serde_json::to_string_pretty(&rows).expect("rows serialize") + "\n"))?,
    }
    // The report is written whole; a case it could not measure still
    // makes the run a failure (exit 2), as in `test`.
    let failed: Vec<_> = rows.iter().filter(|r| r.error.is_some()).collect();
    match failed.first() {
        None => Ok(()),
        Some(r) => Err(Error::model(format!(
            "{} of {} case(s) could not be measured; the first, {}/{}-{}: {}",
            failed.len(),
            rows.len(),
            r.model,
            r.platform,
            r.default_mem,
            r.error.as_deref().unwrap_or_default()
        ))),
    }
}

/// `report --profile`: the per-node table (and chart) of one run's output.
fn profile(run_output: &Path, svg: Option<&Path>, format: Format) -> Result<()> {
    let bytes = crate::limits::read(run_output, crate::limits::PROFILE_INPUT, "a run output")?;
    let layers = profile::parse(&String::from_utf8_lossy(&bytes))
        .map_err(|e| Error::Usage(format!("{}: {e}", run_output.display())))?;
    if let Some(svg) = svg {
        write_file(svg, &profile::svg(&layers, &format!("cycles per node: {}", run_output.display())))?;
    }
    match format {
        Format::Md => write_stdout(&profile::markdown(&layers)),
        Format::Json => write_json_stdout(&(serde_json::to_string_pretty(&layers).expect("layers serialize") + "\n")),
    }
}
