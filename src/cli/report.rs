//! `deploygen report`: generation speed, memory packing and the generated
//! step's speed per model × platform × level, as Markdown or JSON.

use std::path::PathBuf;

use clap::ValueEnum;

use super::output::write_stdout;
use crate::error::Result;
use crate::verify::report::{self, Options};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Md,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Model folders, `.onnx` files, or folders of model folders.
    #[arg(required = true, value_name = "MODEL")]
    models: Vec<PathBuf>,
    /// Platforms (repeat; default: GAP9, Siracusa and host).
    #[arg(long, value_name = "P")]
    platform: Vec<String>,
    /// Default memory levels (repeat; default: L2 and L3).
    #[arg(long, value_name = "LEVEL")]
    default_mem: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
    /// Generation runs per case; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Skip the host run of the generated project (no step time).
    #[arg(long)]
    no_run: bool,
    /// onnxruntime step times (tools/ort_step_time.py's JSON).
    #[arg(long, value_name = "FILE", default_value = "models/ort_step_times.json")]
    ort: PathBuf,
    /// Keep today's untiled plan: whole-operand copies around each kernel.
    #[arg(long)]
    no_tiling: bool,
}

pub fn run(a: Args) -> Result<()> {
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
        runs: a.runs,
        run_host: !a.no_run,
        exe: std::env::current_exe().ok(),
        ort: report::ort_times(&a.ort),
    };
    let mut rows = vec![];
    for (name, path) in &models {
        for p in &platforms {
            for l in &levels {
                let mut plan_opts = super::plan_options(Some(p), Some(l), [None; 3])?.expect("a platform is named");
                plan_opts.tiling = !a.no_tiling;
                if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                    eprint!("\r\x1b[Kreport: {name} {p} {l}");
                }
                rows.push(report::measure(name, path, &plan_opts, &opts));
            }
        }
    }
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprint!("\r\x1b[K");
    }
    let out = match a.format {
        Format::Md => report::markdown(&rows),
        Format::Json => serde_json::to_string_pretty(&rows).expect("rows serialize") + "\n",
    };
    write_stdout(&out)
}
