//! Binding: test data (`inputs.npz`, `outputs.npz`) to the graph, by name
//! (docs/cli.md, "Test data").
//!
//! Every array lands on a graph input by name; positional keys (`arr_NNNN`)
//! are accepted only after each one's dtype and shape are checked against
//! the graph input its position lands on. The number of data inputs `D` is
//! detected (the inputs with `mb1_` keys; with a single mini-batch, the
//! graph's data and label inputs), and an explicit `--num-data-inputs` is
//! accepted only where it cannot shift slots. Weights, gradient buffers and
//! optimizer updates are paired by name and the pairing is asserted
//! (`W == NG == number of SGD updates`).
//!
//! A weight or BatchNorm statistic of a step derived from `train.toml`
//! that the data does not name starts from the model's initializer
//! (`Source::Initializer`); a key of the same name overrides it.
//! Symbolic dims get their values before typing (`dims`).
//!
//! A required input the data lacks is not an error here: the binding records
//! it (`Binding::missing`) and `check` classifies it (docs/triage.md).
//!
//! Slot order — the order of the generated input tables — is data inputs
//! `[0, D)`, trainable weights, frozen parameters, gradient buffers (in the
//! order of their weights), then `lazy_reset_grad`.

mod data;
pub mod dims;
pub mod layout;
pub mod npz;
mod pairing;
pub mod pinned;
mod positional;
pub mod report;
pub mod schedule;

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;

use crate::error::{Error, Result};
pub(crate) use crate::ir::roles::ACCUM_BUFFER_SUFFIX;
use crate::ir::{DType, Flavor, Model, Role, TensorData, TensorType};
use data::{fits, ty_str, Draft};
pub use layout::Layout;
use npz::Header;
pub use npz::Npz;
pub use pairing::{ParamBinding, Update, UpdateKind};
pub use schedule::{Schedule, MAX_RTOL};

pub const INPUTS_FILE: &str = "inputs.npz";
pub const OUTPUTS_FILE: &str = "outputs.npz";
/// References of a training model's prediction after its training run
/// (`tools/make_predict_refs.py`): one array per forward output, on
/// mini-batch 0. The generated `demo.c` compares against them.
pub const PREDICT_FILE: &str = "predict.npz";

#[derive(Clone, Debug, Default)]
pub struct BindOptions {
    /// `--num-data-inputs`: accepted only where the data cannot tell (a
    /// single mini-batch) or where it agrees with detection.
    pub num_data_inputs: Option<usize>,
}

/// Where a slot's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// One value per sample: `Slot::keys[i]` / `values[i]` is sample i.
    PerMiniBatch,
    /// One value, copied in once (weights, frozen parameters).
    Constant,
    /// One value, copied in once: the model's initializer of the same name
    /// (a derived step's weights and BatchNorm statistics).
    Initializer,
    /// Zero-initialised (gradient buffers).
    Zeros,
    /// Written by the harness before every pass (`lazy_reset_grad`).
    Harness,
    /// The data has no value for it; `check` classifies why.
    Missing,
}

/// One entry of the generated input table.
#[derive(Clone, Debug)]
pub struct Slot {
    pub index: usize,
    /// Data, Labels, Param, Frozen, GradBuffer or LazyReset.
    pub role: Role,
    /// The graph input.
    pub input: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub source: Source,
    /// npz keys: one per sample for `PerMiniBatch`, one for `Constant`
    /// (and for `Harness` when the data carries an initial value).
    pub keys: Vec<String>,
    /// The arrays behind `keys`, raw little-endian bytes.
    pub values: Vec<TensorData>,
    /// Position among the non-gradient graph inputs (the positional layout's
    /// `NNNN`).
    pub position: Option<usize>,
}

impl Slot {
    /// The key shown for the slot: the mini-batch-0 key.
    pub fn key(&self) -> Option<&str> {
        self.keys.first().map(String::as_str)
    }

    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype, &self.shape)
    }
}

/// A graph input the data does not provide.
#[derive(Clone, Debug, Serialize)]
pub struct Missing {
    pub input: String,
    pub role: Role,
    /// The key that would have provided it.
    pub expected_key: String,
    /// Set when the input's value seems to be there under a position that
    /// binds it to a different input (the positional layout skipped it).
    pub misplaced: Option<String>,
    /// A key of the data whose dtype and shape fit the input.
    pub hint: Option<String>,
}

/// What an `outputs.npz` array is the reference for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    /// One loss per forward pass.
    Loss,
    /// A trainable weight after the last optimizer step.
    UpdatedParam,
    /// A frozen parameter (e.g. BatchNorm running statistics) after the run.
    Frozen,
    /// An inference output, by graph-output name.
    Output,
}

#[derive(Clone, Debug)]
pub struct Reference {
    pub key: String,
    pub kind: RefKind,
    /// Graph output, parameter or loss value the reference is for.
    pub target: String,
    pub data: TensorData,
    /// The key held integers, converted to the f32 output they are the
    /// reference for: the harness compares them exactly (an integer graph
    /// declared f32, as Deeploy's are).
    pub integral: bool,
}

/// Test data bound to a model: what the emitter writes into the input
/// tables, the test vectors and the references.
#[derive(Clone, Debug)]
pub struct Binding {
    pub inputs_path: PathBuf,
    pub outputs_path: Option<PathBuf>,
    pub layout: Layout,
    /// `outputs.npz`'s layout: named, or ordered (graph outputs in order).
    pub outputs_layout: Layout,
    /// `D`: slots `[0, D)` change per mini-batch.
    pub num_data_inputs: usize,
    /// How `D` was found.
    pub detected_from: DetectedFrom,
    pub slots: Vec<Slot>,
    pub schedule: Schedule,
    /// The optimizer's learning rate, when all updates share one.
    pub learning_rate: Option<f32>,
    pub learning_rate_source: Option<String>,
    /// Trainable weights with their gradient buffers and updates, in slot order.
    pub params: Vec<ParamBinding>,
    pub loss: Option<Reference>,
    /// Updated parameters, frozen parameters after the run, inference outputs.
    pub references: Vec<Reference>,
    pub missing: Vec<Missing>,
    /// Things the user should look at; a clean binding has none.
    pub warnings: Vec<String>,
    /// Facts worth showing that need no action.
    pub notes: Vec<String>,
    /// Absolute comparison tolerance (`meta_tolerance`); `None` = the
    /// harness default.
    pub tolerance: Option<f32>,
    /// Relative comparison tolerance (`meta_rtol`); `None` = the harness
    /// default.
    pub rtol: Option<f32>,
    /// Data and label inputs `--num-data-inputs` left out of the
    /// per-mini-batch slots (one mini-batch): bound as constants, their one
    /// value serving every pass.
    pub held_constant: Vec<String>,
    /// `predict.npz`: forward output name → its value after training.
    pub predict_refs: Vec<(String, TensorData)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectedFrom {
    /// The inputs with `mb<i>_` keys.
    MiniBatchKeys,
    /// Single mini-batch: the graph's data and label inputs.
    GraphRoles,
    /// Single mini-batch and `--num-data-inputs`.
    Flag,
}

impl Binding {
    pub fn slot(&self, input: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.input == input)
    }

    /// Slots with a given role, in slot order.
    pub fn slots_with(&self, role: Role) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter(move |s| s.role == role)
    }

    /// Bytes of the test vectors and references a generated project
    /// carries as static L2 arrays (`testinputs.h`, `testoutputs.h`): each
    /// data slot's value per mini-batch the schedule uses, the loss values
    /// of the forward passes, and every float reference as f32.
    pub fn test_data_bytes(&self, training: bool) -> u64 {
        let mbs = if training { self.schedule.data_size.max(1) } else { 1 };
        let per_mb: usize = self.data_slots().iter().map(|s| s.ty().bytes().unwrap_or(0)).sum();
        let passes = self.schedule.n_steps * self.schedule.n_accum.max(1);
        let loss = self.loss.as_ref().map_or(0, |l| l.data.numel().min(passes));
        // Float references are written as f32; integer and boolean ones as
        // their own type (compared exactly).
        let refs: usize = self
            .references
            .iter()
            .map(|r| r.data.numel() * if r.data.dtype.is_float() { 4 } else { r.data.dtype.size().unwrap_or(4) })
            .sum();
        (mbs * per_mb + 4 * loss + refs) as u64
    }

    /// The data slots `[0, D)`.
    pub fn data_slots(&self) -> &[Slot] {
        &self.slots[..self.num_data_inputs.min(self.slots.len())]
    }
}

/// `inputs.npz` of a model, if there is one. A path that exists but is
/// a directory, FIFO or device is an error saying so, not "absent".
pub fn inputs_path(model: &Model) -> Result<Option<PathBuf>> {
    let p = model.dir.join(INPUTS_FILE);
    Ok(crate::import::regular_file(&p)?.then_some(p))
}

/// Bind the model's `inputs.npz` (and `outputs.npz` when present).
pub fn bind(model: &Model, opts: &BindOptions) -> Result<Binding> {
    let path = inputs_path(model)?.ok_or_else(|| {
        Error::binding(format!("{} has no {INPUTS_FILE}: there is no test data to bind", model.dir.display()))
    })?;
    let inputs = npz::read(&path)?;
    let out_path = model.dir.join(OUTPUTS_FILE);
    let outputs = if crate::import::regular_file(&out_path)? { Some(npz::read(&out_path)?) } else { None };
    let mut binding = bind_data(model, &inputs, outputs.as_ref(), opts)?;
    let predict_path = model.dir.join(PREDICT_FILE);
    if model.roles.is_training() && crate::import::regular_file(&predict_path)? {
        binding.predict_refs = predict_refs(model, &npz::read_all(&predict_path)?)?;
    }
    Ok(binding)
}

/// `predict.npz`'s arrays, each the value of a forward output of the
/// training graph with as many elements as that output.
fn predict_refs(model: &Model, z: &npz::Loaded) -> Result<Vec<(String, TensorData)>> {
    let g = &model.graph;
    let outputs = crate::lower::forward::forward(model)
        .map(|f| f.outputs.iter().map(|&t| g.name_of(t).to_string()).collect::<Vec<_>>())
        .unwrap_or_default();
    let err = |key: &str, detail: String| Error::Npz { path: z.path.clone(), key: Some(key.to_string()), detail };
    let mut refs = vec![];
    for (key, data) in &z.arrays {
        let Some(t) = outputs.iter().find(|o| *o == key).and_then(|o| g.id(o)) else {
            return Err(err(
                key,
                format!(
                    "not a forward output of the training graph (forward outputs: {})",
                    quoted(outputs.iter().map(String::as_str))
                ),
            ));
        };
        let want = g.tensor(t).ty.numel();
        if want.is_some_and(|n| n != data.numel()) {
            return Err(err(key, format!("holds {} values, the output has {}", data.numel(), want.unwrap_or(0))));
        }
        refs.push((key.clone(), data.clone()));
    }
    Ok(refs)
}

/// Bind already-read data; `bind` reads the files. The steps are
/// [`data::Draft`]'s, in order.
pub fn bind_data(model: &Model, inputs: &Npz, outputs: Option<&Npz>, opts: &BindOptions) -> Result<Binding> {
    let mut d = Draft::new(model, inputs);
    let keys = d.detect_layout()?;
    d.bind_keys(keys);
    d.check_types()?;
    let schedule = d.schedule()?;
    if let Some(n) = opts.num_data_inputs {
        d.force_num_data_inputs(n)?;
    }
    let slots = d.slots(&schedule)?;
    d.unused_keys(&schedule);
    d.notes.extend(model.pinned.iter().map(|p| {
        format!(
            "graph input '{}' is read when generating code (shapes, axes, pads): the code is generated for its \
             value {} from inputs.npz '{}'",
            p.name, p.value, p.keys[0]
        )
    }));
    d.inference_inputs_present()?;

    // Weights ↔ gradient buffers ↔ optimizer updates.
    let (params, lr, lr_source) = pairing::pair(model, &slots, d.meta.learning_rate, &mut d.warnings)?;
    let mut binding = Binding {
        inputs_path: inputs.path.clone(),
        outputs_path: outputs.map(|o| o.path.clone()),
        layout: d.layout,
        outputs_layout: Layout::Named,
        num_data_inputs: d.num_data_inputs,
        detected_from: d.detected_from,
        slots,
        schedule,
        learning_rate: lr,
        learning_rate_source: lr_source,
        params,
        loss: None,
        references: vec![],
        missing: d.missing,
        warnings: d.warnings,
        notes: d.notes,
        tolerance: d.meta.tolerance,
        rtol: d.meta.rtol,
        held_constant: d.held_constant,
        predict_refs: vec![],
    };
    match outputs {
        Some(o) => bind_outputs(model, &mut binding, o)?,
        None => binding.warnings.push(no_references(model, &binding)),
    }
    Ok(binding)
}

/// The command that makes a model folder's references: onnxruntime-training
/// for a `train.toml` model, the zoo's onnxruntime recipe otherwise.
pub fn refs_command(model: &Model) -> String {
    let tool = if model.derived.is_some() { "make_train_refs.py" } else { "make_refs.py" };
    format!("python tools/{tool} {}", model.dir.display())
}

/// The one message for test data that has nothing to compare against,
/// used by `inspect`, `build` and `test` alike: what is missing, and the
/// command that makes it.
pub fn no_references(model: &Model, b: &Binding) -> String {
    let what = match &b.outputs_path {
        None => format!("{} has no {OUTPUTS_FILE}", model.dir.display()),
        Some(p) => format!("{} holds no reference for this model", p.display()),
    };
    format!("{what}: nothing is compared; make the references with `{}`", refs_command(model))
}

pub(crate) fn quoted<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let v: Vec<String> = names.into_iter().map(|n| format!("'{n}'")).collect();
    match v.len() {
        0 => "none".into(),
        1 => v[0].clone(),
        _ => format!("{} and {}", v[..v.len() - 1].join(", "), v[v.len() - 1]),
    }
}

/// Match `outputs.npz` keys: losses, `<param>_updated`, inference outputs.
fn bind_outputs(model: &Model, b: &mut Binding, o: &Npz) -> Result<()> {
    let g = &model.graph;
    let mut refs = OutputKeys {
        model,
        o,
        frozen: b.slots_with(Role::Frozen).map(|s| s.input.clone()).collect(),
        output_names: g.outputs.iter().map(|&t| g.name_of(t)).collect(),
        notes: Vec::new(),
    };
    let keys: Vec<&str> = o.keys().collect();
    let ordered = refs.ordered_layout(b, &keys);
    for (key, t) in o.headers() {
        let target = ordered.get(key);
        if !ordered.is_empty() && target.is_none() {
            continue;
        }
        refs.bind_key(b, key, t, target)?;
    }
    b.notes.extend(std::mem::take(&mut refs.notes));
    refs.check_complete(b, &keys)
}

/// What matching `outputs.npz` keys needs besides the binding.
struct OutputKeys<'a> {
    model: &'a Model,
    o: &'a Npz,
    frozen: Vec<String>,
    output_names: Vec<&'a str>,
    /// Conversions and reshapes of references, reported after the keys.
    notes: Vec<String>,
}

impl OutputKeys<'_> {
    /// The reference under `key` for `what` (of type `ty`): one that fits,
    /// or fits after a conversion (f64 to f32) or a reshape of the same
    /// element count, which a note reports. The header is checked first:
    /// only a reference that fits is read.
    fn read(&mut self, key: &str, what: &str, ty: &TensorType, h: &Header) -> Result<TensorData> {
        let o = self.o;
        let narrowed = (h.dtype == DType::F64 || h.dtype.is_int()) && ty.dtype == DType::F32;
        let as_read = Header { dtype: if narrowed { DType::F32 } else { h.dtype }, shape: h.shape.clone() };
        let same_count = ty.shape().is_some_and(|s| s.iter().product::<usize>() == as_read.numel());
        let reshape = if fits(ty, &as_read) {
            None
        } else if ty.dtype == as_read.dtype && same_count {
            ty.shape()
        } else {
            return Err(Error::binding(format!(
                "{}: key '{key}' is the reference for {what}: expected {ty}, found {}",
                o.path.display(),
                ty_str(as_read.dtype, &as_read.shape)
            ))
            .at_key(key));
        };
        let mut t = o.get(key)?.expect("a listed key").clone();
        if narrowed && t.dtype.is_int() {
            let f = data::int_as_f32(&t).map_err(|why| {
                Error::binding(format!(
                    "{}: key '{key}' is the reference for {what}: expected {ty}, found {} that f32 cannot hold \
                     exactly: {why} (integer data converts to f32 only when every |value| <= 2^24)",
                    o.path.display(),
                    ty_str(t.dtype, &t.shape)
                ))
                .at_key(key)
            })?;
            self.notes.push(format!(
                "{}: key '{key}' is {}; converted to f32 for {what} (f32): every value is exact",
                o.path.display(),
                t.dtype.name()
            ));
            t = TensorData::from_f32(t.shape.clone(), &f);
        } else if narrowed {
            self.notes.push(format!("{}: key '{key}' is f64; converted to f32", o.path.display()));
            t = TensorData::from_f32(t.shape.clone(), &t.to_f32().unwrap_or_default());
        }
        if let Some(s) = reshape {
            self.notes.push(format!(
                "{}: key '{key}' has shape {:?}, {what} is {ty}: same element count, read as {s:?}",
                o.path.display(),
                t.shape
            ));
            t.shape = s;
        }
        Ok(t)
    }

    fn param_ty(&self, name: &str) -> Option<TensorType> {
        let g = &self.model.graph;
        g.id(name).map(|t| g.tensor(t).ty.clone())
    }

    /// Ordered layout: no key is a loss, `<param>_updated` or graph-output
    /// key; key k (by trailing number) is then graph output k. Returns key
    /// -> graph output, empty when the keys bind by name.
    fn ordered_layout(&self, b: &mut Binding, keys: &[&str]) -> IndexMap<String, String> {
        let (o, output_names) = (self.o, &self.output_names);
        let matches_by_name = |key: &str| {
            key.contains("loss")
                || output_names.contains(&key)
                || key
                    .strip_suffix("_updated")
                    .is_some_and(|n| b.params.iter().any(|p| p.name == n) || self.frozen.iter().any(|f| f == n))
        };
        let mut ordered: IndexMap<String, String> = IndexMap::new();
        // A step derived from train.toml has its references from
        // make_train_refs.py, by name; positions would read an inference
        // reference as the loss.
        let derived = self.model.derived.is_some();
        if derived || keys.is_empty() || keys.iter().any(|k| matches_by_name(k)) {
            return ordered;
        }
        let (base, _) = layout::ordered(keys);
        for (k, key) in base.iter().enumerate() {
            match output_names.get(k) {
                Some(out) => {
                    ordered.insert(key.to_string(), out.to_string());
                }
                None => b.warnings.push(format!(
                    "{}: key '{key}' is position {k} of the ordered layout, but the graph has only {} output(s): \
                     ignored",
                    o.path.display(),
                    output_names.len()
                )),
            }
        }
        b.outputs_layout = Layout::Ordered;
        b.notes.push(format!(
            "{} uses the ordered layout: its keys name no graph output and bind in graph order ({})",
            short(&o.path),
            ordered.iter().map(|(k, out)| format!("'{k}' -> '{out}'")).collect::<Vec<_>>().join(", ")
        ));
        ordered
    }

    /// Bind one key, by name or as the graph output `target` of the
    /// ordered layout: the loss, a weight after training, or a graph output;
    /// any other key is ignored with a warning.
    fn bind_key(&mut self, b: &mut Binding, key: &str, t: &Header, target: Option<&String>) -> Result<()> {
        let (model, o) = (self.model, self.o);
        let g = &model.graph;
        let is_loss = match target {
            Some(out) => model.roles.loss.as_deref() == Some(out.as_str()),
            None => b.loss.is_none() && key.contains("loss"),
        };
        // `<param>_updated`, or the graph output that is a weight's update.
        let updated: Option<String> = match target {
            Some(out) => {
                model.roles.params.iter().find(|p| p.updated.as_deref() == Some(out.as_str())).map(|p| p.name.clone())
            }
            None => key.strip_suffix("_updated").map(str::to_string),
        };
        let output: Option<&str> = match target {
            Some(out) => Some(out.as_str()),
            None => self.output_names.iter().find(|&&n| n == key).copied(),
        };
        if is_loss {
            return self.bind_loss(b, key, t);
        }
        if let Some(name) = updated.as_deref() {
            if self.bind_updated(b, key, name, t)? {
                return Ok(());
            }
        }
        if let Some(out) = output {
            let ty = &g.tensor(g.id(out).expect("outputs are tensors")).ty;
            let data = self.read(key, &format!("graph output '{out}'"), ty, t)?;
            let integral = t.dtype.is_int() && data.dtype == DType::F32;
            b.references.push(Reference {
                key: key.to_string(),
                kind: RefKind::Output,
                target: out.to_string(),
                data,
                integral,
            });
            return Ok(());
        }
        b.warnings.push(format!(
            "{}: key '{key}' matches no loss, parameter or graph output and is ignored",
            o.path.display()
        ));
        Ok(())
    }

    /// The loss references: floats, one per forward pass.
    fn bind_loss(&self, b: &mut Binding, key: &str, t: &Header) -> Result<()> {
        let o = self.o;
        if !t.dtype.is_float() {
            return Err(Error::binding(format!(
                "{}: key '{key}' holds the loss references but is {}, not a float",
                o.path.display(),
                t.dtype
            )));
        }
        let n = t.numel();
        if n != b.schedule.n_batches {
            return Err(Error::binding(format!(
                "{}: key '{key}' holds {n} loss(es) but the schedule runs {} forward passes (meta_n_batches, or \
                 1 + the highest mini-batch index); one loss per forward pass is needed",
                o.path.display(),
                b.schedule.n_batches,
            ))
            .at_key(key));
        }
        let target = self.model.roles.loss.clone().unwrap_or_default();
        if target.is_empty() {
            b.warnings.push(format!(
                "{}: '{key}' holds loss references but the graph computes no loss value",
                o.path.display()
            ));
        }
        let data = o.get(key)?.expect("a listed key").clone();
        b.loss = Some(Reference { key: key.to_string(), kind: RefKind::Loss, target, data, integral: false });
        Ok(())
    }

    /// Weight `name` after the run: a trainable weight's or a frozen
    /// parameter's reference. False when `name` is neither.
    fn bind_updated(&mut self, b: &mut Binding, key: &str, name: &str, t: &Header) -> Result<bool> {
        if b.params.iter().any(|p| p.name == name) {
            let ty = self.param_ty(name).expect("parameters are graph tensors");
            let data = self.read(key, &format!("trainable weight '{name}' after training"), &ty, t)?;
            if let Some(p) = b.params.iter_mut().find(|p| p.name == name) {
                p.reference = Some(key.to_string());
            }
            b.references.push(Reference {
                key: key.to_string(),
                kind: RefKind::UpdatedParam,
                target: name.to_string(),
                data,
                integral: false,
            });
            return Ok(true);
        }
        if self.frozen.iter().any(|f| f == name) {
            let ty = self.param_ty(name).expect("frozen parameters are graph inputs");
            let data = self.read(key, &format!("frozen parameter '{name}' after the run"), &ty, t)?;
            b.references.push(Reference {
                key: key.to_string(),
                kind: RefKind::Frozen,
                target: name.to_string(),
                data,
                integral: false,
            });
            return Ok(true);
        }
        Ok(false)
    }

    /// After every key: a derived step needs its loss references; every
    /// graph output (inference) or trainable weight (training) should have
    /// a reference.
    fn check_complete(&self, b: &mut Binding, keys: &[&str]) -> Result<()> {
        let (model, o) = (self.model, self.o);
        if model.derived.is_some() && b.loss.is_none() {
            return Err(Error::binding(format!(
                "{}: no loss references for the training step of {} (keys found: {}): outputs.npz needs 'loss', one per \
                 forward pass, and '<weight>_updated'; make them with `{}` \
                 (onnxruntime-training, tools/requirements.txt)",
                o.path.display(),
                model.train.as_ref().map_or("train.toml", |t| t.source.as_str()),
                quoted(keys.iter().copied()),
                refs_command(model)
            )));
        }
        if model.roles.flavor == Flavor::Inference {
            for out in &self.output_names {
                if !b.references.iter().any(|r| r.target == *out) {
                    b.warnings.push(format!("{}: no reference for graph output '{out}'", o.path.display()));
                }
            }
        } else {
            let unchecked: Vec<&str> =
                b.params.iter().filter(|p| p.reference.is_none()).map(|p| p.name.as_str()).collect();
            if !unchecked.is_empty() {
                b.warnings.push(format!(
                    "{}: no '<param>_updated' reference for {} trainable weight(s): {}",
                    o.path.display(),
                    unchecked.len(),
                    quoted(unchecked.iter().take(5).copied())
                ));
            }
        }
        Ok(())
    }
}

/// Helper for messages elsewhere: a path relative to the model folder.
pub fn short(path: &Path) -> String {
    path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}
