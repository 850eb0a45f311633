//! Binding: test data (`inputs.npz`, `outputs.npz`) to the graph, by name
//! (SPEC §2.2–2.3).
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
//! A required input the data lacks is not an error here: the binding records
//! it (`Binding::missing`) and `check` classifies it (SPEC §2.4).
//!
//! Slot order — the order of the generated input tables — is data inputs
//! `[0, D)`, trainable weights, frozen parameters, gradient buffers (in the
//! order of their weights), then `lazy_reset_grad`.

pub mod layout;
pub mod npz;
mod pairing;
pub mod report;
pub mod schedule;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;

use crate::error::{Error, Result};
pub(crate) use crate::ir::roles::ACCUM_BUFFER_SUFFIX;
use crate::ir::{DType, Dim, Flavor, Model, Role, TensorData, TensorType};
pub use layout::Layout;
use layout::{Key, Target};
pub use npz::Npz;
pub use pairing::{ParamBinding, Update, UpdateKind};
pub use schedule::Schedule;

pub const INPUTS_FILE: &str = "inputs.npz";
pub const OUTPUTS_FILE: &str = "outputs.npz";

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
    /// Absolute comparison tolerance; `None` = the harness default (1e-3).
    pub tolerance: Option<f32>,
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

    /// The data slots `[0, D)`.
    pub fn data_slots(&self) -> &[Slot] {
        &self.slots[..self.num_data_inputs.min(self.slots.len())]
    }
}

/// `inputs.npz` of a model, if there is one.
pub fn inputs_path(model: &Model) -> Option<PathBuf> {
    let p = model.dir.join(INPUTS_FILE);
    p.is_file().then_some(p)
}

/// Bind the model's `inputs.npz` (and `outputs.npz` when present).
pub fn bind(model: &Model, opts: &BindOptions) -> Result<Binding> {
    let path = inputs_path(model).ok_or_else(|| {
        Error::Usage(format!("{} has no {INPUTS_FILE}: there is no test data to bind", model.dir.display()))
    })?;
    let inputs = npz::read(&path)?;
    let out_path = model.dir.join(OUTPUTS_FILE);
    let outputs = if out_path.is_file() { Some(npz::read(&out_path)?) } else { None };
    bind_data(model, &inputs, outputs.as_ref(), opts)
}

/// A graph input as the binding sees it.
struct Input {
    name: String,
    ty: TensorType,
    role: Role,
    /// Position among the non-gradient inputs.
    position: Option<usize>,
}

fn ty_str(dtype: DType, shape: &[usize]) -> String {
    TensorType::new(dtype, shape).to_string()
}

/// Does an array fit a graph input's declared type? Symbolic dims take any
/// size; an unknown rank takes any shape.
fn fits(ty: &TensorType, t: &TensorData) -> bool {
    if ty.dtype != t.dtype {
        return false;
    }
    match &ty.dims {
        None => true,
        Some(d) => {
            d.len() == t.shape.len()
                && d.iter().zip(&t.shape).all(|(a, &b)| match a {
                    Dim::Fixed(n) => *n == b,
                    Dim::Sym(_) => true,
                })
        }
    }
}

/// An array with the declared dtype and element count whose shape differs
/// from the declared one only by size-1 dims (`[]` for `[1]`, `[8]` for
/// `[1, 8]`).
fn fits_but_size1(ty: &TensorType, t: &TensorData) -> bool {
    let Some(d) = ty.shape() else { return false };
    let strip = |v: &[usize]| -> Vec<usize> { v.iter().copied().filter(|&x| x != 1).collect() };
    ty.dtype == t.dtype && strip(&d) == strip(&t.shape) && ty.numel() == Some(t.numel())
}

/// Bind already-read data; `bind` reads the files.
pub fn bind_data(model: &Model, inputs: &Npz, outputs: Option<&Npz>, opts: &BindOptions) -> Result<Binding> {
    let g = &model.graph;
    let roles = &model.roles;
    let mut warnings = Vec::new();
    let mut notes = Vec::new();

    // Graph inputs, with the positions the positional layout uses.
    let mut graph_inputs: Vec<Input> = Vec::new();
    let mut n_positions = 0;
    for &t in &g.inputs {
        let tensor = g.tensor(t);
        if tensor.sequence {
            continue;
        }
        let role = roles.role(&tensor.name).unwrap_or(Role::Data);
        let is_buffer = role == Role::GradBuffer || tensor.name.ends_with(ACCUM_BUFFER_SUFFIX);
        let role = if is_buffer { Role::GradBuffer } else { role };
        let position = (!is_buffer).then(|| {
            n_positions += 1;
            n_positions - 1
        });
        graph_inputs.push(Input { name: tensor.name.clone(), ty: tensor.ty.clone(), role, position });
    }
    let by_name: IndexMap<&str, usize> = graph_inputs.iter().enumerate().map(|(i, x)| (x.name.as_str(), i)).collect();
    let by_position: Vec<usize> =
        graph_inputs.iter().enumerate().filter(|(_, x)| x.position.is_some()).map(|(i, _)| i).collect();

    // Parse every key.
    let mut meta = schedule::Meta::default();
    let mut named = Vec::new();
    let mut positional = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    // (graph input index, mini-batch) -> key
    let mut raw: Vec<(Target, usize, &str)> = Vec::new();
    for (key, t) in &inputs.arrays {
        match layout::parse(key, |s| by_name.contains_key(s)) {
            Key::Meta(what) => meta.set(&what, t)?,
            Key::Value { target: Target::Name(n), mb } => {
                if by_name.contains_key(n.as_str()) {
                    named.push(key.as_str());
                    raw.push((Target::Name(n), mb, key));
                } else {
                    unknown.push(key);
                }
            }
            Key::Value { target: Target::Position(p), mb } => {
                positional.push(key.as_str());
                raw.push((Target::Position(p), mb, key));
            }
        }
    }
    // Ordered layout: no key names a graph input and none is positional;
    // the keys hold the non-gradient inputs in graph order. Each one is
    // checked against the input it lands on below, like positional keys.
    let mut ordered_keys: Vec<&str> = Vec::new();
    if named.is_empty() && positional.is_empty() && !unknown.is_empty() {
        let (base, per_mb) = layout::ordered(&unknown);
        for (p, &key) in base.iter().enumerate() {
            raw.push((Target::Position(p), 0, key));
        }
        for &(p, mb, key) in &per_mb {
            raw.push((Target::Position(p), mb, key));
        }
        notes.push(format!(
            "{} uses the ordered layout: its keys name no graph input and bind in graph order ({})",
            short(&inputs.path),
            base.iter()
                .enumerate()
                .map(|(p, k)| {
                    let to = by_position.get(p).map_or("nothing", |&i| graph_inputs[i].name.as_str());
                    format!("'{k}' -> '{to}'")
                })
                .collect::<Vec<_>>()
                .join(", ")
        ));
        ordered_keys = base;
        unknown.clear();
    }
    let layout = match (named.is_empty(), positional.is_empty()) {
        _ if !ordered_keys.is_empty() => Layout::Ordered,
        (_, true) => Layout::Named,
        (true, false) => Layout::Positional,
        (false, false) => {
            return Err(Error::binding(format!(
                "{} mixes named keys ('{}') and positional keys ('{}'): use one layout",
                inputs.path.display(),
                named[0],
                positional[0]
            )))
        }
    };

    // Key per (graph input, mini-batch).
    let mut at: BTreeMap<(usize, usize), &str> = BTreeMap::new();
    for (target, mb, key) in &raw {
        let idx = match target {
            Target::Name(n) => by_name[n.as_str()],
            Target::Position(p) => match by_position.get(*p) {
                Some(&i) => i,
                None => {
                    unknown.push(key);
                    continue;
                }
            },
        };
        at.insert((idx, *mb), key);
    }

    // Positional keys land where their position says: check each one, and
    // explain a mismatch (two slots swapped, or inputs skipped so that the
    // rest moved up) before giving up.
    let mut missing: Vec<Missing> = Vec::new();
    if layout == Layout::Positional {
        realign_positional(inputs, &graph_inputs, &by_position, &mut at, &mut missing)?;
    }

    // Every bound array must fit its input (named keys, mini-batch keys).
    let mut bad = Vec::new();
    for (&(idx, _), key) in &at {
        let x = &graph_inputs[idx];
        let t = &inputs.arrays[*key];
        if !fits(&x.ty, t) {
            bad.push(format!(
                "  key '{key}' binds graph input '{}' ({}): expected {}, found {}",
                x.name,
                x.role.name(),
                x.ty,
                ty_str(t.dtype, &t.shape)
            ));
        }
    }
    if !bad.is_empty() {
        let how = if layout == Layout::Ordered {
            " (ordered layout: keys bind to the graph inputs in graph order)"
        } else {
            ""
        };
        return Err(Error::binding(format!(
            "{}: {} array(s) do not fit the graph input they bind to{how}:\n{}",
            inputs.path.display(),
            bad.len(),
            bad.join("\n")
        )));
    }

    // Mini-batches stored, and per-mini-batch inputs.
    let stored = at.keys().map(|&(_, mb)| mb).max().unwrap_or(0).saturating_add(1);
    let per_mb: Vec<usize> = {
        let mut v: Vec<usize> = at.keys().filter(|&&(_, mb)| mb > 0).map(|&(i, _)| i).collect();
        v.dedup();
        v
    };
    let mut schedule_warnings = Vec::new();
    let schedule = meta.schedule(stored, &mut schedule_warnings)?;
    warnings.extend(schedule_warnings);

    // Roles as the data shows them.
    let mut role: Vec<Role> = graph_inputs.iter().map(|x| x.role).collect();
    for &i in &per_mb {
        let x = &graph_inputs[i];
        match x.role {
            Role::Data | Role::Labels => {}
            Role::Frozen => {
                warnings.push(format!(
                    "graph input '{}' comes after the first parameter, so the graph alone makes it a frozen \
                     parameter, but the data gives it per-mini-batch values ('{}'): bound as data",
                    x.name,
                    at.range((i, 1)..(i, usize::MAX)).next().map(|(_, k)| *k).unwrap_or("?")
                ));
                role[i] = Role::Data;
            }
            other => {
                return Err(Error::binding(format!(
                    "graph input '{}' is a {} but inputs.npz gives it per-mini-batch values ('{}'): only data \
                     and label inputs change per mini-batch",
                    x.name,
                    other.name(),
                    at.range((i, 1)..(i, usize::MAX)).next().map(|(_, k)| *k).unwrap_or("?")
                )));
            }
        }
    }
    let has_value = |i: usize| at.contains_key(&(i, 0));
    if stored > 1 {
        for (i, x) in graph_inputs.iter().enumerate() {
            if matches!(role[i], Role::Data | Role::Labels) && has_value(i) && !per_mb.contains(&i) {
                warnings.push(format!(
                    "graph input '{}' ({}) has no mb<i>_ keys although inputs.npz holds {stored} mini-batches: its \
                     one value '{}' is used for every mini-batch (bound as a constant)",
                    x.name,
                    role[i].name(),
                    at[&(i, 0)]
                ));
                role[i] = Role::Frozen;
            }
        }
    }
    let is_data = |r: Role| matches!(r, Role::Data | Role::Labels);
    let detected = role.iter().filter(|&&r| is_data(r)).count();
    let mut detected_from = if stored > 1 { DetectedFrom::MiniBatchKeys } else { DetectedFrom::GraphRoles };

    let mut order = slot_order(&graph_inputs, &role, model);

    // --num-data-inputs.
    let mut num_data_inputs = detected;
    if let Some(n) = opts.num_data_inputs {
        if n != detected {
            if stored > 1 {
                return Err(Error::binding(shift_message(
                    n,
                    detected,
                    stored,
                    &order,
                    &role,
                    &graph_inputs,
                    &at,
                    roles.params.iter().filter_map(|p| p.grad_buffer.clone()).collect(),
                )));
            }
            if n < detected {
                // Single mini-batch: a data input outside [0, n) keeps its one
                // value for the whole run, which is what it has anyway.
                for &i in &order[n..detected] {
                    notes.push(format!(
                        "num_data_inputs = {n}: '{}' ({}) is bound as a constant input (the data has one \
                         mini-batch, so its value never changes)",
                        graph_inputs[i].name,
                        role[i].name()
                    ));
                    role[i] = Role::Frozen;
                }
            } else {
                let Some(extra) = order.get(detected..n) else {
                    return Err(Error::binding(format!(
                        "num_data_inputs = {n}: the graph has only {} inputs that are not gradient buffers",
                        n_positions
                    )));
                };
                for &i in extra {
                    if role[i] != Role::Frozen {
                        return Err(Error::binding(format!(
                            "num_data_inputs = {n} would make {} '{}' a per-mini-batch data input; the graph has {} \
                             data input(s) ({}), and every weight after them would pair with the wrong gradient \
                             buffer. Drop the flag.",
                            role[i].name(),
                            graph_inputs[i].name,
                            detected,
                            quoted(order[..detected].iter().map(|&j| graph_inputs[j].name.as_str()))
                        )));
                    }
                }
                for &i in extra {
                    notes.push(format!("num_data_inputs = {n}: '{}' is bound as data", graph_inputs[i].name));
                    role[i] = Role::Data;
                }
            }
            num_data_inputs = n;
            detected_from = DetectedFrom::Flag;
            order = slot_order(&graph_inputs, &role, model);
        }
    }

    // Slots.
    let mut slots = Vec::with_capacity(order.len());
    for (index, &i) in order.iter().enumerate() {
        let x = &graph_inputs[i];
        let r = role[i];
        let base = at.get(&(i, 0)).copied();
        let key_of = |mb: usize| match (layout, x.position.and_then(|p| ordered_keys.get(p))) {
            (Layout::Ordered, Some(k)) if mb == 0 => k.to_string(),
            (Layout::Ordered, Some(k)) => format!("mb{mb}_{k}"),
            _ => layout::key_for(layout, &x.name, x.position, mb),
        };
        let expected_key = key_of(0);
        let (source, keys) = match r {
            Role::GradBuffer => {
                if let Some(k) = base {
                    warnings.push(format!(
                        "inputs.npz key '{k}' gives gradient buffer '{}' a value; buffers start at zero, so it is \
                         ignored",
                        x.name
                    ));
                }
                (Source::Zeros, vec![])
            }
            Role::LazyReset => (Source::Harness, base.map(str::to_string).into_iter().collect()),
            _ if base.is_none() => {
                if let Some((_, k)) = at.range((i, 1)..(i, usize::MAX)).next() {
                    return Err(Error::binding(format!(
                        "inputs.npz has '{k}' but no '{expected_key}': mini-batch 0 of graph input '{}' is missing",
                        x.name
                    )));
                }
                if !missing.iter().any(|m| m.input == x.name) {
                    missing.push(Missing {
                        input: x.name.clone(),
                        role: r,
                        expected_key,
                        misplaced: None,
                        hint: hint_for(x, inputs, &unknown),
                    });
                }
                (Source::Missing, vec![])
            }
            Role::Data | Role::Labels => {
                let mut keys = Vec::new();
                for mb in 0..schedule.data_size {
                    match at.get(&(i, mb)) {
                        Some(k) => keys.push(k.to_string()),
                        None => {
                            return Err(Error::binding(format!(
                                "inputs.npz has no '{}' for mini-batch {mb} of graph input '{}' ({}), but the \
                                 schedule uses {} mini-batches (keys found: {})",
                                key_of(mb),
                                x.name,
                                r.name(),
                                schedule.data_size,
                                quoted(at.range((i, 0)..(i, usize::MAX)).map(|(_, k)| *k))
                            )))
                        }
                    }
                }
                (Source::PerMiniBatch, keys)
            }
            _ => (Source::Constant, vec![base.unwrap_or_default().to_string()]),
        };
        let values: Vec<TensorData> = keys.iter().map(|k| inputs.arrays[k.as_str()].clone()).collect();
        let shape = match (x.ty.shape(), values.first()) {
            (Some(s), _) => s,
            (None, Some(v)) => {
                notes.push(format!(
                    "graph input '{}' is declared {}; the data binds it to {:?} (shapes after it are not \
                     specialised: code generation needs static shapes)",
                    x.name, x.ty, v.shape
                ));
                v.shape.clone()
            }
            (None, None) => vec![],
        };
        slots.push(Slot {
            index,
            role: r,
            input: x.name.clone(),
            dtype: x.ty.dtype,
            shape,
            source,
            keys,
            values,
            position: x.position,
        });
    }

    // Keys nobody used.
    for k in &unknown {
        warnings.push(format!("inputs.npz key '{k}' matches no graph input and is ignored"));
    }
    for k in &meta.unknown {
        warnings.push(format!("inputs.npz key '{k}' is not a meta key deploygen knows and is ignored"));
    }
    let used_mbs = schedule.data_size;
    let unused_mb: Vec<&str> = at.iter().filter(|(&(_, mb), _)| mb >= used_mbs).map(|(_, k)| *k).collect();
    if !unused_mb.is_empty() && !warnings.iter().any(|w| w.contains("never used")) {
        warnings.push(format!("inputs.npz keys {} are beyond meta_data_size and unused", quoted(unused_mb)));
    }

    // An inference graph has no training triage: a data input without a
    // value is a binding error with what the data does hold.
    if model.roles.flavor == Flavor::Inference && !missing.is_empty() {
        let found: Vec<&str> = inputs.arrays.keys().map(String::as_str).collect();
        let lines: Vec<String> = missing
            .iter()
            .map(|m| {
                let ty = g.id(&m.input).map(|t| g.tensor(t).ty.to_string()).unwrap_or_default();
                let hint = m.hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default();
                format!("  graph input '{}' ({}, {ty}): no key '{}'{hint}", m.input, m.role.name(), m.expected_key)
            })
            .collect();
        return Err(Error::binding(format!(
            "{}: the inference graph's input(s) have no value in the test data ({} layout):\n{}\n  keys found: {}",
            inputs.path.display(),
            layout.name(),
            lines.join("\n"),
            quoted(found)
        )));
    }

    // Weights ↔ gradient buffers ↔ optimizer updates.
    let (params, lr, lr_source) = pairing::pair(model, &slots, meta.learning_rate, &mut warnings)?;

    let mut binding = Binding {
        inputs_path: inputs.path.clone(),
        outputs_path: outputs.map(|o| o.path.clone()),
        layout,
        outputs_layout: Layout::Named,
        num_data_inputs,
        detected_from,
        slots,
        schedule,
        learning_rate: lr,
        learning_rate_source: lr_source,
        params,
        loss: None,
        references: vec![],
        missing,
        warnings,
        notes,
        tolerance: None,
    };
    match outputs {
        Some(o) => bind_outputs(model, &mut binding, o)?,
        None => binding
            .warnings
            .push(format!("{} has no {OUTPUTS_FILE}: there are no references to compare against", model.dir.display())),
    }
    Ok(binding)
}

/// Slot order: data and labels (graph order), trainable weights (in the
/// order of `roles.params`), frozen parameters (graph order), gradient
/// buffers (in the order of their weights), `lazy_reset_grad`, then anything
/// else.
fn slot_order(graph_inputs: &[Input], role: &[Role], model: &Model) -> Vec<usize> {
    let params = &model.roles.params;
    let all = 0..graph_inputs.len();
    let with = |r: Role| all.clone().filter(move |&i| role[i] == r);
    let mut order: Vec<usize> = all.clone().filter(|&i| matches!(role[i], Role::Data | Role::Labels)).collect();
    let mut weights: Vec<usize> = with(Role::Param).collect();
    weights.sort_by_key(|&i| params.iter().position(|p| p.name == graph_inputs[i].name).unwrap_or(usize::MAX));
    order.extend(weights);
    order.extend(with(Role::Frozen));
    let mut buffers: Vec<usize> = with(Role::GradBuffer).collect();
    buffers.sort_by_key(|&i| {
        params
            .iter()
            .position(|p| p.grad_buffer.as_deref() == Some(graph_inputs[i].name.as_str()))
            .unwrap_or(usize::MAX)
    });
    order.extend(buffers);
    order.extend(with(Role::LazyReset));
    let rest: Vec<usize> = all.filter(|i| !order.contains(i)).collect();
    order.extend(rest);
    order
}

fn quoted<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let v: Vec<String> = names.into_iter().map(|n| format!("'{n}'")).collect();
    match v.len() {
        0 => "none".into(),
        1 => v[0].clone(),
        _ => format!("{} and {}", v[..v.len() - 1].join(", "), v[v.len() - 1]),
    }
}

/// A key the data has (and nobody used) whose type fits `x`.
fn hint_for(x: &Input, inputs: &Npz, unknown: &[&str]) -> Option<String> {
    unknown
        .iter()
        .find(|k| fits(&x.ty, &inputs.arrays[**k]))
        .map(|k| format!("inputs.npz has an unused key '{k}' of type {}", x.ty))
}

/// Check the positional base keys against the inputs their positions land
/// on. A permutation among them is an error naming the slots; a run of
/// inputs skipped (every later array fits the input `k` positions further
/// on) is recorded as missing inputs with their arrays re-seated, so the
/// check stage can classify what is missing. Anything else is an error
/// listing every mismatched slot.
fn realign_positional(
    inputs: &Npz,
    graph_inputs: &[Input],
    by_position: &[usize],
    at: &mut BTreeMap<(usize, usize), &str>,
    missing: &mut Vec<Missing>,
) -> Result<()> {
    let key_at = |p: usize| format!("arr_{p:04}");
    let array = |p: usize| inputs.arrays.get(&key_at(p));
    let fits_at = |p: usize, q: usize| match (array(p), by_position.get(q)) {
        (Some(t), Some(&i)) => fits(&graph_inputs[i].ty, t),
        _ => false,
    };
    let mismatched: Vec<usize> = (0..by_position.len()).filter(|&p| array(p).is_some() && !fits_at(p, p)).collect();
    if mismatched.is_empty() {
        return Ok(());
    }
    let input_at = |p: usize| &graph_inputs[by_position[p]];
    let describe = |p: usize| {
        let x = input_at(p);
        let t = array(p).expect("mismatched slots have arrays");
        format!(
            "slot {p} ('{}') lands on graph input '{}' ({}): expected {}, found {}",
            key_at(p),
            x.name,
            x.role.name(),
            x.ty,
            ty_str(t.dtype, &t.shape)
        )
    };

    // Swapped: every mismatched array fits another mismatched slot's input.
    let partner = |p: usize| mismatched.iter().copied().find(|&q| q != p && fits_at(p, q));
    if mismatched.iter().all(|&p| partner(p).is_some()) {
        let mut lines = vec![];
        let mut seen = vec![];
        for &p in &mismatched {
            let q = partner(p).expect("checked");
            if seen.contains(&p) {
                continue;
            }
            let swapped_back = partner(q) == Some(p);
            if swapped_back {
                seen.extend([p, q]);
                lines.push(format!(
                    "  slots {p} and {q} are swapped: '{}' holds '{}' ({}) and '{}' holds '{}' ({})",
                    key_at(p),
                    input_at(q).name,
                    input_at(q).ty,
                    key_at(q),
                    input_at(p).name,
                    input_at(p).ty
                ));
            } else {
                seen.push(p);
                lines.push(format!("  '{}' holds what fits slot {q} ('{}')", key_at(p), input_at(q).name));
            }
        }
        let details: Vec<String> = mismatched.iter().map(|&p| format!("  {}", describe(p))).collect();
        return Err(Error::binding(format!(
            "{}: positional slots do not match the graph inputs they land on:\n{}\n{}",
            inputs.path.display(),
            details.join("\n"),
            lines.join("\n")
        )));
    }

    // Skipped: from the first mismatch on, every array fits the input k
    // positions further on.
    let s = mismatched[0];
    let present: Vec<usize> = (s..by_position.len()).filter(|&p| array(p).is_some()).collect();
    for k in 1..=4usize {
        if present.iter().all(|&p| fits_at(p, p + k)) {
            let skipped: Vec<usize> = (s..(s + k).min(by_position.len())).collect();
            // Re-seat every key (all mini-batches) from position p to p + k.
            let moved: Vec<((usize, usize), &str)> =
                at.iter().filter(|(&(i, _), _)| by_position[s..].contains(&i)).map(|(&k2, &v)| (k2, v)).collect();
            for (key, _) in &moved {
                at.remove(key);
            }
            for ((i, mb), v) in moved {
                let p = by_position.iter().position(|&j| j == i).expect("a positional input");
                if let Some(&to) = by_position.get(p + k) {
                    at.insert((to, mb), v);
                }
            }
            let shifted = quoted(present.iter().map(|&p| key_at(p)).collect::<Vec<_>>().iter().map(String::as_str));
            for &p in &skipped {
                let x = input_at(p);
                let holds = match (array(p), by_position.get(p + k)) {
                    (Some(_), Some(&i)) => format!("'{}' holds '{}' instead", key_at(p), graph_inputs[i].name),
                    _ => format!("there is no '{}'", key_at(p)),
                };
                missing.push(Missing {
                    input: x.name.clone(),
                    role: x.role,
                    expected_key: key_at(p),
                    misplaced: Some(format!(
                        "{holds}: the arrays from '{}' on ({shifted}) each fit the graph input {k} position(s) further \
                         on, so the data skipped '{}'",
                        key_at(s),
                        x.name
                    )),
                    hint: None,
                });
            }
            return Ok(());
        }
    }

    let details: Vec<String> = mismatched.iter().map(|&p| format!("  {}", describe(p))).collect();
    Err(Error::binding(format!(
        "{}: positional slots do not match the graph inputs they land on:\n{}",
        inputs.path.display(),
        details.join("\n")
    )))
}

/// The error for a `--num-data-inputs` that contradicts detection: which
/// inputs change per mini-batch, and what the harness's index arithmetic
/// (weight i at slot N + i, gradient buffer i at its own slot) would pair.
#[allow(clippy::too_many_arguments)]
fn shift_message(
    n: usize,
    detected: usize,
    stored: usize,
    order: &[usize],
    role: &[Role],
    graph_inputs: &[Input],
    at: &BTreeMap<(usize, usize), &str>,
    buffers: Vec<String>,
) -> String {
    let data: Vec<usize> = order.iter().copied().filter(|&i| matches!(role[i], Role::Data | Role::Labels)).collect();
    let describe = |i: usize| {
        let keys: Vec<&str> = at.range((i, 0)..(i, 2)).map(|(_, k)| *k).collect();
        format!("'{}' ({}, keys {}, …)", graph_inputs[i].name, role[i].name(), keys.join(", "))
    };
    let mut m = String::new();
    let _ = write!(
        m,
        "num_data_inputs = {n} contradicts the test data: inputs.npz holds {stored} mini-batches and {detected} graph \
         input(s) change per mini-batch: {}. So num_data_inputs is {detected}.",
        data.iter().map(|&i| describe(i)).collect::<Vec<_>>().join(" and ")
    );
    let weights: Vec<usize> = order.iter().copied().filter(|&i| role[i] == Role::Param).collect();
    let moved = &order[n.min(detected)..n.max(detected).min(order.len())];
    for &i in moved {
        let name = &graph_inputs[i].name;
        let _ = if n < detected {
            write!(
                m,
                "\nWith {n}, '{name}' ({}) would be copied in once and never change per mini-batch: every pass would \
                       train on mini-batch 0's value.",
                role[i].name()
            )
        } else {
            write!(m, "\nWith {n}, '{name}' ({}) would be overwritten with per-mini-batch data.", role[i].name())
        };
    }
    if weights.is_empty() || buffers.is_empty() {
        let _ = write!(
            m,
            "\nThe constant slots would start at index {n} instead of {detected}, so every slot after the data would \
             be filled from the wrong array. Drop the flag: the data decides."
        );
        return m;
    }
    let _ = write!(
        m,
        "\nWith {n}, the harness would take weight i from slot {n} + i instead of {detected} + i, shifting every weight \
         {} slot(s) against its gradient buffer:",
        detected.abs_diff(n)
    );
    let mut wrong = 0;
    for (w, buffer) in buffers.iter().enumerate() {
        let Some(&slot_input) = order.get(n + w) else { break };
        let name = &graph_inputs[slot_input].name;
        if format!("{name}{ACCUM_BUFFER_SUFFIX}") == *buffer {
            continue;
        }
        wrong += 1;
        if wrong <= 4 {
            let _ = write!(
                m,
                "\n  weight {w} would be '{name}' ({}, slot {}), paired with '{buffer}'",
                role[slot_input].name(),
                n + w
            );
        }
    }
    if wrong > 4 {
        let _ =
            write!(m, "\n  … {wrong} of {} weights in all would pair with the wrong gradient buffer", buffers.len());
    }
    let _ = write!(
        m,
        "\nStep 0 would still match the reference (the weights start right); every later step would diverge. Drop the \
         flag: the data decides."
    );
    m
}

/// Match `outputs.npz` keys: losses, `<param>_updated`, inference outputs.
fn bind_outputs(model: &Model, b: &mut Binding, o: &Npz) -> Result<()> {
    let g = &model.graph;
    let frozen: Vec<String> = b.slots_with(Role::Frozen).map(|s| s.input.clone()).collect();
    let output_names: Vec<&str> = g.outputs.iter().map(|&t| g.name_of(t)).collect();
    let mut notes = Vec::new();
    let mut check = |key: &str, what: &str, ty: &TensorType, t: &TensorData| -> Result<()> {
        if fits(ty, t) {
            Ok(())
        } else if fits_but_size1(ty, t) {
            // The file declares the output with extra or fewer size-1 dims
            // than its reference tool computed (import warned): same values.
            notes.push(format!(
                "{}: key '{key}' ({}) is the reference for {what}, declared {ty}: they differ only by size-1 dims",
                short(&o.path),
                ty_str(t.dtype, &t.shape)
            ));
            Ok(())
        } else {
            Err(Error::binding(format!(
                "{}: key '{key}' is the reference for {what}: expected {ty}, found {}",
                o.path.display(),
                ty_str(t.dtype, &t.shape)
            )))
        }
    };
    let param_ty = |name: &str| -> Option<TensorType> { g.id(name).map(|t| g.tensor(t).ty.clone()) };
    // Ordered layout: no key is a loss, `<param>_updated` or graph-output
    // key; key k (by trailing number) is then graph output k.
    let matches_by_name = |key: &str| {
        key.contains("loss")
            || output_names.contains(&key)
            || key
                .strip_suffix("_updated")
                .is_some_and(|n| b.params.iter().any(|p| p.name == n) || frozen.iter().any(|f| f == n))
    };
    let keys: Vec<&str> = o.arrays.keys().map(String::as_str).collect();
    let mut ordered: IndexMap<String, String> = IndexMap::new();
    if !keys.is_empty() && !keys.iter().any(|k| matches_by_name(k)) {
        let (base, _) = layout::ordered(&keys);
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
    }
    let loss_name = model.roles.loss.clone();
    for (key, t) in &o.arrays {
        let target = ordered.get(key.as_str());
        if !ordered.is_empty() && target.is_none() {
            continue;
        }
        let is_loss = match target {
            Some(out) => loss_name.as_deref() == Some(out.as_str()),
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
            None => output_names.iter().find(|&&n| n == key).copied(),
        };
        if is_loss {
            if !t.dtype.is_float() {
                return Err(Error::binding(format!(
                    "{}: key '{key}' holds the loss references but is {}, not a float",
                    o.path.display(),
                    t.dtype
                )));
            }
            let n = t.numel();
            if n != b.schedule.n_batches {
                b.warnings.push(format!(
                    "{}: '{key}' holds {n} loss(es) but the schedule runs {} forward passes{}",
                    o.path.display(),
                    b.schedule.n_batches,
                    if n < b.schedule.n_batches { ": the later ones go unchecked" } else { "" }
                ));
            }
            let target = model.roles.loss.clone().unwrap_or_default();
            if target.is_empty() {
                b.warnings.push(format!(
                    "{}: '{key}' holds loss references but the graph computes no loss value",
                    o.path.display()
                ));
            }
            b.loss = Some(Reference { key: key.clone(), kind: RefKind::Loss, target, data: t.clone() });
            continue;
        }
        if let Some(name) = updated.as_deref() {
            if let Some(p) = b.params.iter_mut().find(|p| p.name == name) {
                let ty = param_ty(name).expect("parameters are graph tensors");
                check(key, &format!("trainable weight '{name}' after training"), &ty, t)?;
                p.reference = Some(key.clone());
                b.references.push(Reference {
                    key: key.clone(),
                    kind: RefKind::UpdatedParam,
                    target: name.to_string(),
                    data: t.clone(),
                });
                continue;
            }
            if frozen.iter().any(|f| f == name) {
                let ty = param_ty(name).expect("frozen parameters are graph inputs");
                check(key, &format!("frozen parameter '{name}' after the run"), &ty, t)?;
                b.references.push(Reference {
                    key: key.clone(),
                    kind: RefKind::Frozen,
                    target: name.to_string(),
                    data: t.clone(),
                });
                continue;
            }
        }
        if let Some(out) = output {
            let ty = &g.tensor(g.id(out).expect("outputs are tensors")).ty;
            check(key, &format!("graph output '{out}'"), ty, t)?;
            b.references.push(Reference {
                key: key.clone(),
                kind: RefKind::Output,
                target: out.to_string(),
                data: t.clone(),
            });
            continue;
        }
        b.warnings.push(format!(
            "{}: key '{key}' matches no loss, parameter or graph output and is ignored",
            o.path.display()
        ));
    }
    b.notes.extend(notes);
    if model.roles.flavor == Flavor::Inference {
        for out in &output_names {
            if !b.references.iter().any(|r| r.target == *out) {
                b.warnings.push(format!("{}: no reference for graph output '{out}'", o.path.display()));
            }
        }
    } else {
        let unchecked: Vec<&str> = b.params.iter().filter(|p| p.reference.is_none()).map(|p| p.name.as_str()).collect();
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

/// Helper for messages elsewhere: a path relative to the model folder.
pub fn short(path: &Path) -> String {
    path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}
