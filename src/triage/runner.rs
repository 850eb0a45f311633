//! The seam between triage and the host run: one case (model folder,
//! platform, memory level) in, its outcome out.
//!
//! `deploygen::verify` owns the real host run (generate the C project,
//! compile it with gcc against the host emulation, run it, compare with
//! `outputs.npz`): [`host_run`]. [`stages_only`] runs only import → lower →
//! bind → check → plan and never compares numbers (it says so); tests use
//! it where a run is not the point.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::pipeline::{self, Stage, StageError};
use crate::plan::PlanOptions;
use crate::verify::progress::Progress;

/// What one run of a case found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CaseOutcome {
    /// `None`: passed. Otherwise the stage that failed: `FAILED_IMPORT`,
    /// `FAILED_BIND`, `FAILED_PLAN`, `FAILED_C_COMPILE`, `FAILED_RUNTIME` or
    /// `INCORRECT_RESULT`.
    pub stage: Option<String>,
    /// The error (first line is the one a status table records), or what
    /// the pass checked.
    pub message: String,
    /// How many reference values were compared (0 when none were).
    pub compared: u64,
}

impl CaseOutcome {
    pub fn passed(&self) -> bool {
        self.stage.is_none()
    }

    pub fn pass(message: impl Into<String>, compared: u64) -> CaseOutcome {
        CaseOutcome { stage: None, message: message.into(), compared }
    }

    pub fn fail(stage: &str, message: impl Into<String>) -> CaseOutcome {
        CaseOutcome { stage: Some(stage.to_string()), message: message.into(), compared: 0 }
    }

    /// `stage: message`, or `passed (N values compared)`.
    pub fn summary(&self) -> String {
        match &self.stage {
            None => format!("passed ({} values compared): {}", self.compared, self.message),
            Some(s) => format!("{s}: {}", self.message.lines().next().unwrap_or("")),
        }
    }
}

/// Run one case: the model folder, the platform (`GAP9`, `Siracusa`,
/// `host`) and the default memory level (`L2`, `L3`).
pub type RunCase<'a> = dyn Fn(&Path, &str, &str) -> CaseOutcome + 'a;

/// The runner `deploygen triage` uses: the real host run, with the
/// runtime archive cached in `cache` (`None`: the default cache folder),
/// a line on stderr as each run starts and ends.
pub fn default_runner(cache: Option<PathBuf>) -> Box<RunCase<'static>> {
    let progress = Progress::new("deploygen triage", 0);
    Box::new(move |dir, platform, level| {
        let label = format!("{} {platform}-{level}", dir.display());
        progress.start(&label);
        let t = Instant::now();
        let o = host_run_in(dir, platform, level, cache.clone());
        progress.end(&label, o.stage.as_deref().unwrap_or("PASSED"), t.elapsed());
        o
    })
}

/// Generate the project, build it against the host emulation, run it and
/// judge it (`deploygen test`'s case run).
pub fn host_run(dir: &Path, platform: &str, level: &str) -> CaseOutcome {
    host_run_in(dir, platform, level, None)
}

fn host_run_in(dir: &Path, platform: &str, level: &str, cache: Option<PathBuf>) -> CaseOutcome {
    use crate::verify::{self, Case, Kind};
    let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    let mut case = Case::new(dir, &name, platform, level, Kind::detect(dir));
    if cache.is_some() {
        case.cache = cache;
    }
    let o = verify::run_case(&case, &verify::generate_case);
    match o.stage {
        None => CaseOutcome::pass(o.message, o.compared.unwrap_or(0)),
        Some(stage) => CaseOutcome::fail(stage.name(), o.message),
    }
}

/// import → lower → bind → check → plan; a pass means those stages
/// succeeded. No C is generated or run and nothing is compared.
pub fn stages_only(dir: &Path, platform: &str, level: &str) -> CaseOutcome {
    let run = || -> Result<(), StageError> {
        let plan = PlanOptions::named(platform, level, [None; 3]).map_err(StageError::at(Stage::Plan))?;
        let mut o = pipeline::Options::new(plan);
        o.data = pipeline::Data::Required;
        pipeline::plan(dir, &o).map(|_| ())
    };
    match run() {
        Ok(()) => CaseOutcome::pass(
            "import, bind, training check and memory plan succeeded (stages only: no C was generated or run, \
             nothing was compared)",
            0,
        ),
        Err(e) => CaseOutcome::fail(e.stage.name(), e.error.to_string()),
    }
}
