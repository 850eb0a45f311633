//! `deploygen triage`: the missing-input training triage, one model per
//! invocation (docs/triage.md).

use std::path::PathBuf;

use super::inspect::Format;
use super::output::{write_json_stdout, write_stdout};
use crate::error::Result;
use crate::triage::{self, runner, Options};

#[derive(clap::Args)]
pub struct Args {
    /// `<model>/<platform>-<level>-training` (a status-table key) or a model folder.
    test_name: String,
    /// Write the minimal test-data fix for the flavor (next to the
    /// original: inputs.triage.npz, or a copied model folder
    /// `<model>.triage/` for a batch-2 fix).
    #[arg(long)]
    fix: bool,
    /// With --fix: write the fix over the original files.
    #[arg(long, requires = "fix")]
    in_place: bool,
    /// With --fix: regenerate outputs.npz with tools/make_refs.py (Python
    /// from DEPLOYGEN_PYTHON or python3 on PATH, with onnxruntime).
    #[arg(long, requires = "fix")]
    refs: bool,
    /// The status table that governs the model (default: status.toml of
    /// --root, when it exists; triage never creates one unasked).
    #[arg(long, value_name = "FILE")]
    status: Option<PathBuf>,
    /// Repository root: status.toml, models/, tests/fixtures/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The folder of make_refs.py and make_train_refs.py (default:
    /// $DEPLOYGEN_TOOLS, else deploygen's own tools/; never the working
    /// directory's).
    #[arg(long, value_name = "DIR")]
    tools: Option<PathBuf>,
    /// Where the compiled runtime is cached (default: $DEPLOYGEN_CACHE_DIR,
    /// else $XDG_CACHE_HOME/deploygen, else ~/.cache/deploygen).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
}

/// Exit code 0: fixed and passing, or nothing to do; 1: a fix was asked
/// for and the model still does not pass; 2: errors (bad input, a name
/// that does not resolve, not a missing-input failure).
pub fn run(a: Args) -> Result<i32> {
    if let Some(t) = a.tools {
        crate::verify::tools::set_dir(t);
    }
    let opts =
        Options { root: a.root, name: a.test_name, fix: a.fix, in_place: a.in_place, refs: a.refs, status: a.status };
    // The host run plugs in here (see `triage::runner`).
    let run_case = runner::default_runner(a.cache_dir);
    let report = triage::run(&opts, run_case.as_ref())?;
    match a.format {
        Format::Text => write_stdout(&triage::text(&report))?,
        Format::Json => {
            write_json_stdout(&(serde_json::to_string_pretty(&report).expect("the report serialises") + "\n"))?
        }
    }
    Ok(report.exit_code)
}
