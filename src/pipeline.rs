//! The generation pipeline, written once: import → lower → bind → check →
//! plan → emit. `build`, `test`, `triage` and `report` all run this
//! function; each stage's failure comes back tagged with the stage, and
//! each stage's time is measured.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::bind::{self, BindOptions, Binding};
use crate::emit::{self, EmitOptions, Project};
use crate::error::Error;
use crate::ir::{Model, Role};
use crate::plan::{self, Level, Plan, PlanOptions, StaticRequest};
use crate::{check, import, lower};

/// Where a case failed. The names are the ones the status table, the JUnit
/// `stage` property and the verdicts use; the pipeline produces the first
/// four, verification the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// The ONNX model could not be read or turned into the IR.
    #[serde(rename = "FAILED_IMPORT")]
    Import,
    /// The test data does not bind, or training cannot run with it (triage).
    #[serde(rename = "FAILED_BIND")]
    Bind,
    /// No memory plan (the model does not fit, or a buffer has no size).
    #[serde(rename = "FAILED_PLAN")]
    Plan,
    /// The C project could not be generated (or generating it panicked),
    /// or its `deploygen.json` is missing, malformed or promises nothing to
    /// compare.
    #[serde(rename = "FAILED_EMIT")]
    Emit,
    /// `make -f Makefile.host` failed (or timed out).
    #[serde(rename = "FAILED_C_COMPILE")]
    CCompile,
    /// The app crashed, timed out, failed an allocation, tripped a
    /// sanitizer, or did not report a well-formed `Errors:` line.
    #[serde(rename = "FAILED_RUNTIME")]
    Runtime,
    /// The comparison: values differ, or the harness did not compare what
    /// it had to.
    #[serde(rename = "INCORRECT_RESULT")]
    Result,
}

impl Stage {
    pub const ALL: [Stage; 7] =
        [Stage::Import, Stage::Bind, Stage::Plan, Stage::Emit, Stage::CCompile, Stage::Runtime, Stage::Result];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Import => "FAILED_IMPORT",
            Stage::Bind => "FAILED_BIND",
            Stage::Plan => "FAILED_PLAN",
            Stage::Emit => "FAILED_EMIT",
            Stage::CCompile => "FAILED_C_COMPILE",
            Stage::Runtime => "FAILED_RUNTIME",
            Stage::Result => "INCORRECT_RESULT",
        }
    }

    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.name() == s)
    }

    /// The stage an error of unknown origin most likely comes from, by its
    /// variant. [`generate`] tags its errors itself; this is for callers
    /// that run stages on their own.
    pub fn of(e: &Error) -> Stage {
        match e {
            Error::Io { .. }
            | Error::Decode { .. }
            | Error::UnknownOp { .. }
            | Error::Cycle { .. }
            | Error::Dangling { .. }
            | Error::ExternalData { .. }
            | Error::Node { .. }
            | Error::AttrType { .. }
            | Error::Model { .. }
            | Error::Pairing { .. }
            | Error::Derive { .. }
            | Error::NoModel { .. } => Stage::Import,
            Error::Npz { .. } | Error::Binding { .. } | Error::Triage { .. } => Stage::Bind,
            // Options that do not describe a plan (an unknown platform or
            // level) are found when the plan is made.
            Error::Plan { .. } | Error::Capacity { .. } | Error::Usage { .. } => Stage::Plan,
            Error::Write { .. } => Stage::Emit,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A generation error with the stage it happened in. `From<Error>`
/// classifies by variant ([`Stage::of`]); code that knows better says so
/// with [`StageError::at`].
#[derive(Debug)]
pub struct StageError {
    pub stage: Stage,
    pub error: Box<Error>,
}

impl StageError {
    pub fn at(stage: Stage) -> impl FnOnce(Error) -> StageError {
        move |error| StageError { stage, error: Box::new(error) }
    }
}

impl From<Error> for StageError {
    fn from(error: Error) -> Self {
        StageError { stage: Stage::of(&error), error: Box::new(error) }
    }
}

impl From<StageError> for Error {
    fn from(e: StageError) -> Self {
        *e.error
    }
}

/// Whether the model must come with test data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Data {
    /// Bind and check it when there is some (`build`, `report`).
    #[default]
    Optional,
    /// A model without test data is a bind failure: there is nothing to
    /// run and compare (`test`, `triage`).
    Required,
}

/// Everything the stages need, typed.
#[derive(Clone, Debug)]
pub struct Options {
    pub plan: PlanOptions,
    pub bind: BindOptions,
    pub emit: EmitOptions,
    pub data: Data,
    /// Attributes the operator's schema does not define: refused, or
    /// ignored with a warning.
    pub unknown_attrs: import::UnknownAttrs,
    /// Told the name of each stage as it starts (`build` says what it is
    /// doing when generation takes long).
    pub on_stage: Option<StageHook>,
    /// Training flags over the model's `train.toml`.
    pub train: import::TrainRequest,
}

/// Told a stage's name as it starts.
pub type StageHook = fn(&'static str);

impl Options {
    pub fn new(plan: PlanOptions) -> Options {
        Options {
            plan,
            bind: BindOptions::default(),
            emit: EmitOptions::default(),
            data: Data::Optional,
            unknown_attrs: import::UnknownAttrs::Refuse,
            on_stage: None,
            train: import::TrainRequest::default(),
        }
    }
}

/// One stage's wall time.
#[derive(Clone, Debug, Serialize)]
pub struct Timing {
    pub stage: &'static str,
    pub time: Duration,
}

/// What the pipeline produced: every stage's result and time.
pub struct Generated {
    pub model: Model,
    pub binding: Option<Binding>,
    pub plan: Plan,
    pub project: Project,
    pub timings: Vec<Timing>,
}

/// Runs `f`, recording its time under `stage`, and tags its error.
fn timed<T>(
    (timings, on_stage): (&mut Vec<Timing>, Option<StageHook>),
    name: &'static str,
    stage: Stage,
    f: impl FnOnce() -> crate::Result<T>,
) -> Result<T, StageError> {
    if let Some(tell) = on_stage {
        tell(name);
    }
    let t = Instant::now();
    let r = f().map_err(StageError::at(stage));
    timings.push(Timing { stage: name, time: t.elapsed() });
    r
}

/// The stages before emission: the model, its test data and its plan.
pub struct Planned {
    pub model: Model,
    pub binding: Option<Binding>,
    pub plan: Plan,
    pub timings: Vec<Timing>,
}

/// import → lower → bind → check → plan, without emission.
pub fn plan(path: &Path, o: &Options) -> Result<Planned, StageError> {
    let mut t = vec![];
    let load = || {
        let mut m = import::load_with(path, &o.train)?;
        import::check_attributes(&mut m, o.unknown_attrs)?;
        Ok(m)
    };
    let mut raw = timed((&mut t, o.on_stage), "import", Stage::Import, load)?;
    timed((&mut t, o.on_stage), "dims", Stage::Bind, || {
        bind::dims::specialise(&mut raw)?;
        bind::pinned::pin(&mut raw)
    })?;
    let limit = lower::FoldLimit::of(&o.plan.platform);
    let mut model = timed((&mut t, o.on_stage), "lower", Stage::Import, || lower::lower_within(raw, limit))?;
    let binding = timed((&mut t, o.on_stage), "bind", Stage::Bind, || bind_data(&model, o))?;
    if let Some(b) = &binding {
        timed((&mut t, o.on_stage), "check", Stage::Bind, || check::training(&model, b))?;
        held_constant(&mut model, b);
    }
    let opts = plan_options(&model, binding.as_ref(), &o.plan);
    let plan = timed((&mut t, o.on_stage), "plan", Stage::Plan, || {
        let recompute = plan::recompute::apply(&mut model, &opts)?;
        Ok(plan::Plan { recompute, ..plan::plan(&model, &opts)? })
    })?;
    Ok(Planned { model, binding, plan, timings: t })
}

/// import → dims → lower: the typed model with its training roles, the
/// stages every command runs before binding.
pub fn lowered(path: &Path, train: &import::TrainRequest, attrs: import::UnknownAttrs) -> crate::Result<Model> {
    let mut m = import::load_with(path, train)?;
    import::check_attributes(&mut m, attrs)?;
    bind::dims::specialise(&mut m)?;
    bind::pinned::pin(&mut m)?;
    lower::lower(m)
}

/// Generate the C project of the model at `path`, in memory. Nothing is
/// written: an error of any stage leaves no output behind.
pub fn generate(path: &Path, o: &Options) -> Result<Generated, StageError> {
    let Planned { model, binding, plan, mut timings } = plan(path, o)?;
    let emitted = || emit::generate(&model, binding.as_ref(), &plan, &o.emit);
    let project = timed((&mut timings, o.on_stage), "emit", Stage::Emit, emitted)?;
    Ok(Generated { model, binding, plan, project, timings })
}

/// The plan options with the test data the project will carry: static L2
/// arrays the plan must count (in the L2 image and its capacity), or one
/// L3 block the harness streams from (`PlanOptions::test_data`).
pub fn plan_options(model: &Model, binding: Option<&Binding>, base: &PlanOptions) -> PlanOptions {
    let mut o = base.clone();
    if let Some(b) = binding {
        let bytes = b.test_data_bytes(model.roles.is_training());
        if bytes > 0 {
            let (level, movable) = match base.test_data {
                Some(l) => (l, false),
                None => (Level::L2, true),
            };
            o.statics.push(StaticRequest { name: plan::TEST_DATA.into(), bytes, level, movable });
        }
    }
    o
}

/// A data or label input that the binding holds constant for the whole
/// run (`--num-data-inputs` below the data inputs, with one mini-batch:
/// its one value serves every pass) is planned as a frozen input, whose
/// value is supplied from inputs.npz like a weight's, not as a
/// per-mini-batch slot the harness fills.
fn held_constant(model: &mut Model, b: &Binding) {
    let mut changed = false;
    for name in &b.held_constant {
        if let Some(r) = model.roles.main.get_mut(name) {
            if matches!(*r, Role::Data | Role::Labels) {
                *r = Role::Frozen;
                changed = true;
            }
        }
    }
    // The forward part follows the roles (a frozen label is a forward
    // value): found again, as emission reads it.
    if changed {
        model.forward_nodes = lower::forward::forward(model).ok().map(|f| f.nodes);
    }
}

/// The binding of the model's test data; `None` when it has none and
/// none is required.
fn bind_data(model: &Model, o: &Options) -> crate::Result<Option<Binding>> {
    if bind::inputs_path(model)?.is_some() {
        return bind::bind(model, &o.bind).map(Some);
    }
    if o.data == Data::Required {
        return Err(Error::binding(format!(
            "{} has no {}: there is nothing to run and compare",
            model.dir.display(),
            bind::INPUTS_FILE
        )));
    }
    if o.bind.num_data_inputs.is_some() {
        return Err(Error::binding(format!(
            "{} has no {}, so there are no data inputs to count",
            model.dir.display(),
            bind::INPUTS_FILE
        )));
    }
    Ok(None)
}
