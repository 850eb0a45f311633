//! Verification (docs/testing.md): generate a case's project into a temp folder,
//! build it with gcc (host emulation for GAP9 and Siracusa, plain C for
//! host), run it under a time limit, read what the harness printed, and
//! classify the result by the stage where it went wrong.
//!
//! ```text
//! run_case   gen(case, dir)        → FAILED_IMPORT / _BIND / _PLAN / _EMIT
//!            deploygen.json        → FAILED_EMIT (missing, malformed, nothing to compare)
//!            make -f Makefile.host → FAILED_C_COMPILE
//!            ./app                 → FAILED_RUNTIME (crash, time-out, FATAL, sanitizer,
//!                                    no or malformed `Errors:` line)
//!            `Errors: E out of N`  → INCORRECT_RESULT (E > 0, N ≠ expected, N = 0,
//!                                    detail lines that contradict E)
//! ```
//!
//! The exit code of the app is never trusted alone: a pass needs exactly one
//! well-formed `Errors: 0 out of N` line with N equal to the project's
//! `expected_compared` (> 0), no sanitizer report, no `FATAL:` line, and
//! exit status 0.
//!
//! [`runner`] runs many cases in parallel and judges them against the
//! status table ([`status`]); [`junit`] writes the JUnit report.

pub mod bisect;
pub mod cache;
pub mod exec;
pub mod harness;
pub mod junit;
pub mod manifest;
pub mod profile;
pub mod progress;
pub mod report;
pub mod runner;
pub mod status;
pub mod tools;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::pipeline;
use crate::plan::PlanOptions;

pub use crate::pipeline::{Stage, StageError};

/// Training step or inference graph: the last part of a case's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Training,
    Inference,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Training => "training",
            Kind::Inference => "inference",
        }
    }

    /// The kind of a model, whatever its folder is called: its training
    /// roles when it lowers; else, when it decodes, whether any node is a
    /// training step's (a loss, a gradient, an optimizer); else guessed
    /// from its files (an optimizer graph or onnxruntime's training file
    /// name mean training).
    pub fn detect(model: &Path) -> Kind {
        if let Ok(m) = crate::load_with(model, crate::import::UnknownAttrs::Warn) {
            return if m.roles.is_training() { Kind::Training } else { Kind::Inference };
        }
        if let Ok(m) = crate::import::load(model) {
            let step = |n: &crate::ir::Node| {
                let d = crate::ops::of(n);
                d.gradient || d.train != crate::ops::Train::None
            };
            let training = m.train.is_some() || m.optimizer.is_some() || m.graph.nodes().any(|(_, n)| step(n));
            return if training { Kind::Training } else { Kind::Inference };
        }
        let training_files = ["training_model.onnx", "optimizer.onnx", "optimizer_model.onnx", "train.toml"];
        if model.is_dir() && training_files.iter().any(|f| model.join(f).is_file()) {
            Kind::Training
        } else {
            Kind::Inference
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One (model, platform, level) to verify, and how.
#[derive(Clone, Debug)]
pub struct Case {
    /// The model folder (or `.onnx` file).
    pub model: PathBuf,
    /// The model's name in keys: its folder name.
    pub name: String,
    /// Canonical platform name (`GAP9`, `Siracusa`, `host`).
    pub platform: String,
    /// `L2` or `L3`.
    pub default_mem: String,
    pub kind: Kind,
    /// `--l1`, `--l2`, `--l3` capacity overrides.
    pub capacities: [Option<u64>; 3],
    /// `--l2-image`: the bound on weights baked into the L2 image.
    pub l2_image: Option<u64>,
    /// `--test-data`: where the harness keeps its data.
    pub test_data: Option<crate::plan::Level>,
    /// `--tolerance`: the per-model override handed to emission.
    pub tolerance: Option<f32>,
    /// `--rtol`: the same for the relative tolerance.
    pub rtol: Option<f32>,
    /// Build with AddressSanitizer and UBSan.
    pub sanitize: bool,
    /// Limit for the build and, separately, for the run.
    pub timeout: Duration,
    /// Keep the generated project folder (its path is in the outcome).
    pub keep: bool,
    /// Where the runtime archive is cached (`None`: compile the runtime
    /// with each case, as a plain `make -f Makefile.host` does).
    pub cache: Option<PathBuf>,
    /// `make -j` for the case's own sources.
    pub build_jobs: usize,
    /// Attributes the operator's schema does not define.
    pub unknown_attrs: crate::import::UnknownAttrs,
    /// Build with `-DDG_DUMP_TENSORS` and have the app write every node's
    /// outputs to this file (`--bisect`).
    pub dump: Option<PathBuf>,
    /// Training flags over the model's `train.toml`.
    pub train: crate::import::TrainRequest,
    /// Plan with tiling (`--no-tiling` turns it off).
    pub tiling: bool,
    /// `--recompute` and `--recompute-budget`.
    pub recompute: crate::plan::recompute::Mode,
    pub recompute_budget: u32,
}

impl Case {
    pub fn new(model: impl Into<PathBuf>, name: &str, platform: &str, default_mem: &str, kind: Kind) -> Case {
        Case {
            model: model.into(),
            name: name.to_string(),
            platform: platform.to_string(),
            default_mem: default_mem.to_string(),
            kind,
            capacities: [None; 3],
            l2_image: None,
            test_data: None,
            tolerance: None,
            rtol: None,
            sanitize: false,
            timeout: Duration::from_secs(300),
            keep: false,
            cache: cache::default_dir(),
            build_jobs: 1,
            unknown_attrs: Default::default(),
            dump: None,
            train: crate::import::TrainRequest::default(),
            tiling: true,
            recompute: Default::default(),
            recompute_budget: 10,
        }
    }

    /// `<model>/<platform>-<level>-training` (or `-inference`): the key of
    /// the status table and the JUnit test-case name.
    pub fn key(&self) -> String {
        status::Key::text(&self.name, &self.platform, &self.default_mem, self.kind)
    }
}

/// One `[loss i] computed=… ref=… diff=… tol=…` line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Loss {
    pub index: usize,
    pub computed: f64,
    pub reference: f64,
    pub diff: f64,
    pub tol: f64,
}

impl Loss {
    /// What the harness's rule 3 demands (docs/testing.md): NaN (anywhere) fails; equal
    /// infinities pass. The printed
    /// `diff` is not trusted alone: |computed - ref| is recomputed from the
    /// printed values (which carry 6 decimals, hence the slack), so a
    /// harness that compares a signed difference (a one-sided tolerance)
    /// cannot pass a loss below its reference.
    pub fn within(&self) -> bool {
        const PRINTED: f64 = 2e-6;
        // Equal infinities match, as in the harness.
        let same_infinity = self.computed.is_infinite() && self.computed == self.reference && self.diff == 0.0;
        same_infinity
            || self.computed.is_finite()
                && self.reference.is_finite()
                && self.diff >= 0.0
                && self.diff <= self.tol
                && (self.computed - self.reference).abs() <= self.tol + PRINTED
    }
}

/// What happened to one case. `stage` is `None` for a pass.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub stage: Option<Stage>,
    /// One line: what passed, or what went wrong.
    pub message: String,
    /// Supporting lines: compiler output, mismatches, sanitizer report.
    pub details: Vec<String>,
    /// E and N of the `Errors:` line, when there was a well-formed one.
    pub errors: Option<u64>,
    pub compared: Option<u64>,
    /// `expected_compared` of the project.
    pub expected: Option<u64>,
    /// The tolerance the project compares with: absolute, and relative
    /// (`|computed - ref| <= tolerance + rtol * |ref|`).
    pub tolerance: Option<f32>,
    pub rtol: Option<f32>,
    pub losses: Vec<Loss>,
    /// The `BENCH …` line, without the prefix.
    pub bench: Option<String>,
    pub elapsed: Duration,
    /// The project folder, when kept.
    pub project: Option<PathBuf>,
    /// What the app printed (stdout, then stderr), capped.
    pub output: String,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.stage.is_none()
    }

    /// The outcome's class: `PASSED` or the failure stage's name.
    pub fn class(&self) -> &'static str {
        self.stage.map_or("PASSED", Stage::name)
    }

    pub(crate) fn fail(stage: Stage, message: impl Into<String>) -> Outcome {
        Outcome { stage: Some(stage), message: message.into(), ..Default::default() }
    }

    fn with_details(mut self, details: Vec<String>) -> Outcome {
        self.details = details;
        self
    }
}

/// What `EXTRA_CFLAGS` gets with `--sanitize`.
pub const SANITIZE_CFLAGS: &str = "-fsanitize=address,undefined -fno-omit-frame-pointer";

/// The last `n` non-empty lines of a tool's output.
fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|l| l.to_string()).collect()
}

/// The generation step of a case: the pipeline, then the project written
/// into `out`.
pub fn generate_case(case: &Case, out: &Path) -> Result<(), StageError> {
    let mut plan =
        PlanOptions::named(&case.platform, &case.default_mem, case.capacities).map_err(StageError::at(Stage::Plan))?;
    plan.tiling = case.tiling;
    plan.l2_image_limit = case.l2_image;
    plan.test_data = case.test_data;
    plan.recompute = case.recompute;
    plan.recompute_budget = case.recompute_budget;
    let mut o = pipeline::Options::new(plan);
    o.data = pipeline::Data::Required;
    o.emit.tolerance = case.tolerance;
    o.emit.rtol = case.rtol;
    o.unknown_attrs = case.unknown_attrs;
    o.train = case.train.clone();
    let g = pipeline::generate(&case.model, &o)?;
    // Test data without one reference cannot be tested: the case would
    // compare nothing (its harness would fail it, as a run, not as data).
    if g.project.manifest.compares_nothing() {
        let detail = match &g.binding {
            Some(b) => crate::bind::no_references(&g.model, b),
            None => format!("{} has no test data", case.model.display()),
        };
        return Err(StageError { stage: Stage::Bind, error: Box::new(crate::Error::binding(detail)) });
    }
    g.project.write(out, true).map_err(StageError::at(Stage::Emit))
}

/// Verify one case: `gen` generates its project into the given (empty)
/// folder and returns the stage error when a pipeline stage fails; then the
/// project is built, run and judged.
pub fn run_case<E>(case: &Case, gen: &(dyn Fn(&Case, &Path) -> Result<(), E> + Sync)) -> Outcome
where
    E: Into<StageError>,
{
    let start = Instant::now();
    let dir = match tempfile::Builder::new().prefix(&format!("deploygen-test-{}-", case.name)).tempdir() {
        Ok(d) => d,
        Err(e) => {
            let mut o = Outcome::fail(Stage::Emit, format!("cannot create a temp folder for the project: {e}"));
            o.elapsed = start.elapsed();
            return o;
        }
    };
    // A panic in the pipeline is a bug; it fails this case, not the run.
    let generated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gen(case, dir.path())));
    let mut outcome = match generated {
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Outcome::fail(Stage::Emit, format!("deploygen panicked while generating the project (a bug): {what}"))
        }
        Ok(Err(e)) => {
            let e: StageError = e.into();
            let mut lines = e.error.to_string().lines().map(str::to_string).collect::<Vec<_>>();
            let first = if lines.is_empty() { String::new() } else { lines.remove(0) };
            Outcome::fail(e.stage, first).with_details(lines)
        }
        Ok(Ok(())) => build_and_run(case, dir.path()),
    };
    outcome.elapsed = start.elapsed();
    if case.keep {
        outcome.project = Some(dir.keep());
    }
    outcome
}

/// Build and run a generated project folder, and judge what it printed.
pub fn build_and_run(case: &Case, dir: &Path) -> Outcome {
    let m = match manifest::read(dir) {
        Ok(m) => m,
        Err(e) => return Outcome::fail(Stage::Emit, e.to_string()),
    };
    if let Err(e) = manifest::agrees_with(&m, case) {
        return Outcome::fail(Stage::Emit, e.to_string());
    }
    let base = Outcome {
        expected: Some(m.expected_compared),
        tolerance: Some(m.tolerance),
        rtol: Some(m.rtol),
        ..Default::default()
    };

    // Build: the case's sources, linked with the cached runtime archive.
    let mut extra: Vec<&str> = vec![];
    if case.sanitize {
        extra.push(SANITIZE_CFLAGS);
    }
    if case.dump.is_some() {
        extra.push("-DDG_DUMP_TENSORS");
    }
    let vars = cache::MakeVars { cc: cached_compiler(), extra_cflags: (!extra.is_empty()).then(|| extra.join(" ")) };
    let mut make = Command::new("make");
    make.arg("-f").arg(manifest::MAKEFILE).arg(format!("-j{}", case.build_jobs.max(1))).current_dir(dir);
    vars.apply(&mut make);
    if let Some(cache) = &case.cache {
        match cache::archive(cache, dir, &vars, parallelism(), case.timeout) {
            Ok(lib) => {
                make.arg(format!("RUNTIME_LIB={}", lib.display()));
            }
            Err(cache::Miss::Unsupported) => {}
            Err(cache::Miss::Unusable(why)) => {
                eprintln!("deploygen: warning: {why}; building the runtime in the project instead");
            }
            Err(cache::Miss::Failed(msg, log)) => {
                return Outcome::fail(Stage::CCompile, msg).with_details(tail(&log, 30)).merge(base)
            }
        }
    }
    let built = match exec::run(&mut make, case.timeout) {
        Ok(r) => r,
        Err(e) => return Outcome::fail(Stage::CCompile, format!("cannot run make: {e}")).merge(base),
    };
    let log = built.text();
    if built.timed_out {
        let msg = format!("the build did not finish within {} s", case.timeout.as_secs_f64());
        return Outcome::fail(Stage::CCompile, msg).with_details(tail(&log, 20)).merge(base);
    }
    if !built.success() {
        let msg = format!("make -f {} failed ({})", manifest::MAKEFILE, built.describe_status());
        return Outcome::fail(Stage::CCompile, msg).with_details(tail(&log, 30)).merge(base);
    }
    let app = dir.join(manifest::APP);
    if !app.is_file() {
        let msg = format!("make -f {} succeeded but built no ./{}", manifest::MAKEFILE, manifest::APP);
        return Outcome::fail(Stage::CCompile, msg).with_details(tail(&log, 10)).merge(base);
    }

    // Run.
    let mut cmd = Command::new(&app);
    cmd.current_dir(dir).env("DG_HOST_QUIET", "1");
    if let Some(d) = &case.dump {
        cmd.env("DG_DUMP_FILE", d);
    }
    if case.sanitize {
        cmd.env("ASAN_OPTIONS", "halt_on_error=1:detect_leaks=1")
            .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
    }
    let ran = match exec::run(&mut cmd, case.timeout) {
        Ok(r) => r,
        Err(e) => return Outcome::fail(Stage::Runtime, format!("cannot start ./{}: {e}", manifest::APP)).merge(base),
    };
    let mut o = harness::judge(&m, &ran, case.timeout).merge(base);
    o.output = ran.text();
    o
}

/// The cores of this machine.
pub fn parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `ccache gcc` when `CC` is not set, ccache is on `PATH` and
/// `DEPLOYGEN_CCACHE` is not `0`: a case run again (the same generated
/// sources) compiles nothing. The runtime comes from its archive either way.
fn cached_compiler() -> Option<String> {
    if std::env::var_os("CC").is_some() || std::env::var("DEPLOYGEN_CCACHE").is_ok_and(|v| v == "0") {
        return None;
    }
    static CCACHE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let found =
        *CCACHE.get_or_init(|| Command::new("ccache").arg("--version").output().is_ok_and(|o| o.status.success()));
    found.then(|| "ccache gcc".to_string())
}

impl Outcome {
    /// Fill what `self` leaves unset from `base`.
    fn merge(mut self, base: Outcome) -> Outcome {
        self.expected = self.expected.or(base.expected);
        self.tolerance = self.tolerance.or(base.tolerance);
        self.rtol = self.rtol.or(base.rtol);
        self
    }
}
