//! `bind_data`'s steps, in order: the graph inputs as the data sees them,
//! layout detection, key → slot binding, positional and type checks, the
//! mini-batch schedule with the roles the data shows, `num_data_inputs`,
//! the slots, and what the data holds that nobody used.

use std::collections::BTreeMap;

use indexmap::IndexMap;

use super::layout::{self, Key, Layout, Target};
use super::npz::Header;
use super::positional::{realign_positional, shift_message};
use super::schedule::{self, Schedule};
use super::{quoted, short, DetectedFrom, Missing, Npz, Slot, Source, ACCUM_BUFFER_SUFFIX};
use crate::error::{Error, Result};
use crate::ir::{DType, Dim, Flavor, Model, Role, TensorData, TensorType};

/// The binding being built: what each step found, for the next.
pub(super) struct Draft<'a> {
    model: &'a Model,
    inputs: &'a Npz,
    /// The graph inputs, with the positions the positional layout uses.
    graph_inputs: Vec<Input>,
    by_name: IndexMap<String, usize>,
    /// Graph-input index of each position.
    by_position: Vec<usize>,
    pub meta: schedule::Meta,
    pub layout: Layout,
    /// The ordered layout's base keys, in graph order.
    ordered_keys: Vec<&'a str>,
    /// Keys that name nothing the graph has.
    unknown: Vec<&'a str>,
    /// (graph input index, mini-batch) → key.
    at: BTreeMap<(usize, usize), &'a str>,
    pub missing: Vec<Missing>,
    /// Roles as the data shows them, per graph input.
    role: Vec<Role>,
    /// Mini-batches stored, and the inputs that have more than one.
    stored: usize,
    per_mb: Vec<usize>,
    /// Slot order: graph-input indices.
    order: Vec<usize>,
    pub num_data_inputs: usize,
    pub detected_from: DetectedFrom,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
    /// Data inputs `force_num_data_inputs` bound as constants.
    pub held_constant: Vec<String>,
}

impl<'a> Draft<'a> {
    /// The graph inputs as the binding sees them.
    pub fn new(model: &'a Model, inputs: &'a Npz) -> Draft<'a> {
        let graph_inputs = graph_inputs(model);
        let by_name = graph_inputs.iter().enumerate().map(|(i, x)| (x.name.clone(), i)).collect();
        let by_position =
            graph_inputs.iter().enumerate().filter(|(_, x)| x.position.is_some()).map(|(i, _)| i).collect();
        let role = graph_inputs.iter().map(|x| x.role).collect();
        Draft {
            model,
            inputs,
            graph_inputs,
            by_name,
            by_position,
            meta: schedule::Meta::default(),
            layout: Layout::Named,
            ordered_keys: vec![],
            unknown: vec![],
            at: BTreeMap::new(),
            missing: vec![],
            role,
            stored: 1,
            per_mb: vec![],
            order: vec![],
            num_data_inputs: 0,
            detected_from: DetectedFrom::GraphRoles,
            warnings: vec![],
            notes: vec![],
            held_constant: vec![],
        }
    }

    /// Parse every key and decide the layout: named, positional, or
    /// ordered (no key names a graph input and none is positional). Returns
    /// each value key with its target and mini-batch.
    pub fn detect_layout(&mut self) -> Result<Vec<(Target, usize, &'a str)>> {
        let inputs = self.inputs;
        let mut named = Vec::new();
        let mut positional = Vec::new();
        let mut raw = Vec::new();
        for key in inputs.keys() {
            match layout::parse(key, |s| self.by_name.contains_key(s)) {
                Key::Meta(what) if schedule::Meta::reads(&what) => self.meta.set(&what, &meta_value(inputs, key)?)?,
                Key::Meta(_) => self.meta.unknown.push(key.to_string()),
                Key::Value { target: Target::Name(n), mb } if self.by_name.contains_key(n.as_str()) => {
                    named.push(key);
                    raw.push((Target::Name(n), mb, key));
                }
                // A pinned input's value is built into the code already.
                Key::Value { target: Target::Name(n), .. } if self.model.pinned.iter().any(|p| p.name == n) => {}
                Key::Value { target: Target::Name(_), .. } => self.unknown.push(key),
                Key::Value { target: Target::Position(p), mb } => {
                    positional.push(key);
                    raw.push((Target::Position(p), mb, key));
                }
            }
        }
        if named.is_empty() && positional.is_empty() && !self.unknown.is_empty() {
            raw.extend(self.ordered());
            self.layout = Layout::Ordered;
            return Ok(raw);
        }
        self.layout = match (named.is_empty(), positional.is_empty()) {
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
        Ok(raw)
    }

    /// The ordered layout: the unknown keys hold the non-gradient inputs
    /// in graph order. Each one is checked against the input it lands on
    /// later, like positional keys.
    fn ordered(&mut self) -> Vec<(Target, usize, &'a str)> {
        let (base, per_mb) = layout::ordered(&self.unknown);
        let mut raw: Vec<(Target, usize, &'a str)> =
            base.iter().enumerate().map(|(p, &key)| (Target::Position(p), 0, key)).collect();
        raw.extend(per_mb.iter().map(|&(p, mb, key)| (Target::Position(p), mb, key)));
        let pairs: Vec<String> = base
            .iter()
            .enumerate()
            .map(|(p, k)| {
                let to = self.by_position.get(p).map_or("nothing", |&i| self.graph_inputs[i].name.as_str());
                format!("'{k}' -> '{to}'")
            })
            .collect();
        self.notes.push(format!(
            "{} uses the ordered layout: its keys name no graph input and bind in graph order ({})",
            short(&self.inputs.path),
            pairs.join(", ")
        ));
        self.ordered_keys = base;
        self.unknown.clear();
        raw
    }

    /// Key → (graph input, mini-batch); a position beyond the graph's
    /// inputs is an unknown key.
    pub fn bind_keys(&mut self, raw: Vec<(Target, usize, &'a str)>) {
        for (target, mb, key) in raw {
            let idx = match target {
                Target::Name(n) => self.by_name[n.as_str()],
                Target::Position(p) => match self.by_position.get(p) {
                    Some(&i) => i,
                    None => {
                        self.unknown.push(key);
                        continue;
                    }
                },
            };
            self.at.insert((idx, mb), key);
        }
    }

    /// Positional keys land where their position says: check each one and
    /// explain a mismatch before giving up. Then every bound array must fit
    /// its input.
    pub fn check_types(&mut self) -> Result<()> {
        if self.layout == Layout::Positional {
            realign_positional(self.inputs, &self.graph_inputs, &self.by_position, &mut self.at, &mut self.missing)?;
        }
        let mut bad = Vec::new();
        for (&(idx, _), key) in &self.at {
            let x = &self.graph_inputs[idx];
            let t = self.inputs.header(key).expect("bound keys are listed");
            if !fits_data(&x.ty, t) {
                bad.push(format!(
                    "  key '{key}' binds graph input '{}' ({}): expected {}, found {}",
                    x.name,
                    x.role.name(),
                    x.ty,
                    ty_str(t.dtype, &t.shape)
                ));
            } else if t.dtype.is_int() && x.ty.dtype == DType::F32 {
                let v = self.inputs.get(key)?.expect("bound keys are listed");
                if let Err(why) = int_as_f32(v) {
                    bad.push(format!(
                        "  key '{key}' binds graph input '{}' ({}): expected {}, found {} that f32 cannot hold \
                         exactly: {why} (integer data converts to f32 only when every |value| <= 2^24)",
                        x.name,
                        x.role.name(),
                        x.ty,
                        ty_str(t.dtype, &t.shape)
                    ));
                }
            }
        }
        if bad.is_empty() {
            return Ok(());
        }
        let how = if self.layout == Layout::Ordered {
            " (ordered layout: keys bind to the graph inputs in graph order)"
        } else {
            ""
        };
        Err(Error::binding(format!(
            "{}: {} array(s) do not fit the graph input they bind to{how}:\n{}",
            self.inputs.path.display(),
            bad.len(),
            bad.join("\n")
        )))
    }

    /// The first key of graph input `i` beyond mini-batch 0.
    fn mb_key(&self, i: usize) -> &str {
        self.at.range((i, 1)..(i, usize::MAX)).next().map(|(_, k)| *k).unwrap_or("?")
    }

    /// The mini-batch schedule, and the roles as the data shows them: an
    /// input with per-mini-batch values is data, a data input with one
    /// value among several mini-batches is a constant.
    pub fn schedule(&mut self) -> Result<Schedule> {
        self.stored = self.at.keys().map(|&(_, mb)| mb).max().unwrap_or(0).saturating_add(1);
        self.per_mb = self.at.keys().filter(|&&(_, mb)| mb > 0).map(|&(i, _)| i).collect();
        self.per_mb.dedup();
        let spec = self.model.train.as_ref().map(|t| (t.accumulation_steps as usize, t.source.as_str()));
        let schedule = self.meta.schedule(self.stored, spec, &mut self.warnings)?;
        for &i in &self.per_mb.clone() {
            let x = &self.graph_inputs[i];
            match x.role {
                Role::Data | Role::Labels => {}
                Role::Frozen => {
                    self.warnings.push(format!(
                        "graph input '{}' comes after the first parameter, so the graph alone makes it a frozen \
                         parameter, but the data gives it per-mini-batch values ('{}'): bound as data",
                        x.name,
                        self.mb_key(i)
                    ));
                    self.role[i] = Role::Data;
                }
                other => {
                    return Err(Error::binding(format!(
                        "graph input '{}' is a {} but inputs.npz gives it per-mini-batch values ('{}'): only data \
                         and label inputs change per mini-batch",
                        x.name,
                        other.name(),
                        self.mb_key(i)
                    )));
                }
            }
        }
        if self.stored > 1 {
            self.constants_among_mini_batches();
        }
        self.num_data_inputs = self.role.iter().filter(|&&r| is_data(r)).count();
        if self.stored > 1 {
            self.detected_from = DetectedFrom::MiniBatchKeys;
        }
        self.order = slot_order(&self.graph_inputs, &self.role, self.model);
        Ok(schedule)
    }

    fn constants_among_mini_batches(&mut self) {
        for (i, x) in self.graph_inputs.iter().enumerate() {
            let r = self.role[i];
            if is_data(r) && self.at.contains_key(&(i, 0)) && !self.per_mb.contains(&i) {
                self.warnings.push(format!(
                    "graph input '{}' ({}) has no mb<i>_ keys although inputs.npz holds {} mini-batches: its one \
                     value '{}' is used for every mini-batch (bound as a constant)",
                    x.name,
                    r.name(),
                    self.stored,
                    self.at[&(i, 0)]
                ));
                self.role[i] = Role::Frozen;
            }
        }
    }

    /// An explicit number of data inputs: accepted where it agrees with
    /// detection, or with a single mini-batch where it shifts no weight.
    pub fn force_num_data_inputs(&mut self, n: usize) -> Result<()> {
        let detected = self.num_data_inputs;
        if n == detected {
            return Ok(());
        }
        if self.stored > 1 {
            let buffers =
                self.model.roles.params.iter().filter_map(|p| Some((p.name.clone(), p.grad_buffer.clone()?))).collect();
            let msg =
                shift_message(n, detected, self.stored, &self.order, &self.role, &self.graph_inputs, &self.at, buffers);
            return Err(Error::binding(msg));
        }
        if n < detected {
            // Single mini-batch: a data input outside [0, n) keeps its one
            // value for the whole run, which is what it has anyway.
            for &i in &self.order[n..detected] {
                self.notes.push(format!(
                    "num_data_inputs = {n}: '{}' ({}) is bound as a constant input (the data has one mini-batch, so \
                     its value never changes)",
                    self.graph_inputs[i].name,
                    self.role[i].name()
                ));
                self.role[i] = Role::Frozen;
                self.held_constant.push(self.graph_inputs[i].name.clone());
            }
        } else {
            self.more_data_inputs(n)?;
        }
        self.num_data_inputs = n;
        self.detected_from = DetectedFrom::Flag;
        self.order = slot_order(&self.graph_inputs, &self.role, self.model);
        Ok(())
    }

    /// `n` above detection: only frozen inputs may become data.
    fn more_data_inputs(&mut self, n: usize) -> Result<()> {
        let detected = self.num_data_inputs;
        let Some(extra) = self.order.get(detected..n) else {
            let positions = self.by_position.len();
            return Err(Error::binding(format!(
                "num_data_inputs = {n}: the graph has only {positions} inputs that are not gradient buffers"
            )));
        };
        let extra = extra.to_vec();
        for &i in &extra {
            if self.role[i] != Role::Frozen {
                return Err(Error::binding(format!(
                    "num_data_inputs = {n} would make {} '{}' a per-mini-batch data input; the graph has {} data \
                     input(s) ({}), and every weight after them would pair with the wrong gradient buffer. Drop the \
                     flag.",
                    self.role[i].name(),
                    self.graph_inputs[i].name,
                    detected,
                    quoted(self.order[..detected].iter().map(|&j| self.graph_inputs[j].name.as_str()))
                )));
            }
        }
        for i in extra {
            self.notes.push(format!("num_data_inputs = {n}: '{}' is bound as data", self.graph_inputs[i].name));
            self.role[i] = Role::Data;
        }
        Ok(())
    }

    /// One slot per graph input, in slot order.
    pub fn slots(&mut self, schedule: &Schedule) -> Result<Vec<Slot>> {
        let order = self.order.clone();
        order.iter().enumerate().map(|(index, &i)| self.slot(index, i, schedule)).collect()
    }

    /// The key of graph input `x` in mini-batch `mb`, in the data's layout.
    fn key_of(&self, x: &Input, mb: usize) -> String {
        match (self.layout, x.position.and_then(|p| self.ordered_keys.get(p))) {
            (Layout::Ordered, Some(k)) if mb == 0 => k.to_string(),
            (Layout::Ordered, Some(k)) => format!("mb{mb}_{k}"),
            _ => layout::key_for(self.layout, &x.name, x.position, mb),
        }
    }

    fn slot(&mut self, index: usize, i: usize, schedule: &Schedule) -> Result<Slot> {
        let r = self.role[i];
        let (source, keys) = self.source(i, schedule)?;
        let x = &self.graph_inputs[i];
        // Only now, each header known to fit, are the bound arrays read.
        let mut values: Vec<TensorData> = keys
            .iter()
            .map(|k| Ok(self.inputs.get(k)?.expect("bound keys are listed").clone()))
            .collect::<Result<_>>()?;
        for (v, k) in values.iter_mut().zip(&keys) {
            if v.dtype == DType::F64 && x.ty.dtype == DType::F32 {
                self.notes
                    .push(format!("inputs.npz key '{k}' is f64; converted to f32 for graph input '{}' (f32)", x.name));
                *v = TensorData::from_f32(v.shape.clone(), &v.to_f32().unwrap_or_default());
            } else if v.dtype.is_int() && x.ty.dtype == DType::F32 {
                let f = int_as_f32(v).map_err(|why| {
                    Error::binding(format!("inputs.npz key '{k}' for graph input '{}' (f32): {why}", x.name))
                })?;
                self.notes.push(format!(
                    "inputs.npz key '{k}' is {}; converted to f32 for graph input '{}' (f32): every value is exact",
                    v.dtype.name(),
                    x.name
                ));
                *v = TensorData::from_f32(v.shape.clone(), &f);
            } else if v.dtype.is_int() && v.dtype != DType::I32 && x.ty.dtype == DType::I32 {
                let from = v.dtype.name();
                *v = int_as_i32(v).map_err(|why| {
                    Error::binding(format!("inputs.npz key '{k}' for graph input '{}' (i32): {why}", x.name))
                })?;
                self.notes.push(format!(
                    "inputs.npz key '{k}' is {from}; converted to i32 for graph input '{}' (i32): every value fits",
                    x.name
                ));
            }
        }
        match (source, self.model.initial.get(&x.name)) {
            (Source::Initializer, Some(v)) => values.push(v.clone()),
            (Source::Constant, Some(_)) => self.notes.push(format!(
                "inputs.npz '{}' overrides the initial value of '{}' in the model's initializers",
                keys[0], x.name
            )),
            _ => {}
        }
        let shape = match (x.ty.shape(), values.first()) {
            (Some(s), _) => s,
            (None, Some(v)) => {
                self.notes.push(format!(
                    "graph input '{}' is declared {}; the data binds it to {:?} (shapes after it are not \
                     specialised: code generation needs static shapes)",
                    x.name, x.ty, v.shape
                ));
                v.shape.clone()
            }
            (None, None) => vec![],
        };
        let (input, dtype, position) = (x.name.clone(), x.ty.dtype, x.position);
        Ok(Slot { index, role: r, input, dtype, shape, source, keys, values, position })
    }

    /// Where graph input `i`'s value comes from, and its keys.
    fn source(&mut self, i: usize, schedule: &Schedule) -> Result<(Source, Vec<String>)> {
        let x = &self.graph_inputs[i];
        let r = self.role[i];
        let base = self.at.get(&(i, 0)).copied();
        Ok(match r {
            Role::GradBuffer => {
                if let Some(k) = base {
                    self.warnings.push(format!(
                        "inputs.npz key '{k}' gives gradient buffer '{}' a value; buffers start at zero, so it is \
                         ignored",
                        x.name
                    ));
                }
                (Source::Zeros, vec![])
            }
            Role::LazyReset => (Source::Harness, base.map(str::to_string).into_iter().collect()),
            _ if base.is_none() && self.model.initial.contains_key(&x.name) => (Source::Initializer, vec![]),
            _ if base.is_none() => {
                self.record_missing(i)?;
                (Source::Missing, vec![])
            }
            Role::Data | Role::Labels => (Source::PerMiniBatch, self.per_mini_batch_keys(i, schedule)?),
            _ => (Source::Constant, vec![base.unwrap_or_default().to_string()]),
        })
    }

    /// Graph input `i` has no mini-batch-0 value: missing (for `check` to
    /// classify), unless later mini-batches have one.
    fn record_missing(&mut self, i: usize) -> Result<()> {
        let x = &self.graph_inputs[i];
        let expected_key = self.key_of(x, 0);
        if let Some((_, k)) = self.at.range((i, 1)..(i, usize::MAX)).next() {
            return Err(Error::binding(format!(
                "inputs.npz has '{k}' but no '{expected_key}': mini-batch 0 of graph input '{}' is missing",
                x.name
            )));
        }
        if !self.missing.iter().any(|m| m.input == x.name) {
            let hint = hint_for(x, self.inputs, &self.unknown);
            let m = Missing { input: x.name.clone(), role: self.role[i], expected_key, misplaced: None, hint };
            self.missing.push(m);
        }
        Ok(())
    }

    /// The keys of a data input, one per mini-batch the schedule uses.
    fn per_mini_batch_keys(&self, i: usize, schedule: &Schedule) -> Result<Vec<String>> {
        let x = &self.graph_inputs[i];
        let mut keys = Vec::new();
        for mb in 0..schedule.data_size {
            match self.at.get(&(i, mb)) {
                Some(k) => keys.push(k.to_string()),
                None => {
                    return Err(Error::binding(format!(
                        "inputs.npz has no '{}' for mini-batch {mb} of graph input '{}' ({}), but the schedule uses \
                         {} mini-batches (keys found: {})",
                        self.key_of(x, mb),
                        x.name,
                        self.role[i].name(),
                        schedule.data_size,
                        quoted(self.at.range((i, 0)..(i, usize::MAX)).map(|(_, k)| *k))
                    )))
                }
            }
        }
        Ok(keys)
    }

    /// Warnings for the keys nobody used.
    pub fn unused_keys(&mut self, schedule: &Schedule) {
        for k in &self.unknown {
            self.warnings.push(format!("inputs.npz key '{k}' matches no graph input and is ignored"));
        }
        for k in &self.meta.unknown {
            self.warnings.push(format!("inputs.npz key '{k}' is not a meta key deploygen knows and is ignored"));
        }
        let used = schedule.data_size;
        let unused_mb: Vec<&str> = self.at.iter().filter(|(&(_, mb), _)| mb >= used).map(|(_, k)| *k).collect();
        if !unused_mb.is_empty() && !self.warnings.iter().any(|w| w.contains("never used")) {
            self.warnings.push(format!("inputs.npz keys {} are beyond meta_data_size and unused", quoted(unused_mb)));
        }
    }

    /// An inference graph has no training triage: a data input without a
    /// value is a binding error with what the data does hold.
    pub fn inference_inputs_present(&self) -> Result<()> {
        if self.model.roles.flavor != Flavor::Inference || self.missing.is_empty() {
            return Ok(());
        }
        let g = &self.model.graph;
        let found: Vec<&str> = self.inputs.keys().collect();
        let lines: Vec<String> = self
            .missing
            .iter()
            .map(|m| {
                let ty = g.id(&m.input).map(|t| g.tensor(t).ty.to_string()).unwrap_or_default();
                let hint = m.hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default();
                format!("  graph input '{}' ({}, {ty}): no key '{}'{hint}", m.input, m.role.name(), m.expected_key)
            })
            .collect();
        Err(Error::binding(format!(
            "{}: the inference graph's input(s) have no value in the test data ({} layout):\n{}\n  keys found: {}",
            self.inputs.path.display(),
            self.layout.name(),
            lines.join("\n"),
            quoted(found)
        )))
    }
}

fn is_data(r: Role) -> bool {
    matches!(r, Role::Data | Role::Labels)
}

/// The graph inputs, with the positions the positional layout uses
/// (gradient buffers have none).
fn graph_inputs(model: &Model) -> Vec<Input> {
    let g = &model.graph;
    let mut out = Vec::new();
    let mut n_positions = 0;
    for &t in &g.inputs {
        let tensor = g.tensor(t);
        if tensor.sequence {
            continue;
        }
        let role = model.roles.role(&tensor.name).unwrap_or(Role::Data);
        // The name alone makes a buffer only in a training graph: an
        // inference input may be called anything.
        let named = model.roles.is_training() && tensor.name.ends_with(ACCUM_BUFFER_SUFFIX);
        let is_buffer = role == Role::GradBuffer || named;
        let role = if is_buffer { Role::GradBuffer } else { role };
        let position = (!is_buffer).then(|| {
            n_positions += 1;
            n_positions - 1
        });
        out.push(Input { name: tensor.name.clone(), ty: tensor.ty.clone(), role, position });
    }
    out
}

/// A graph input as the binding sees it.
pub(super) struct Input {
    pub name: String,
    pub ty: TensorType,
    pub role: Role,
    /// Position among the non-gradient inputs.
    pub position: Option<usize>,
}

pub(super) fn ty_str(dtype: DType, shape: &[usize]) -> String {
    TensorType::new(dtype, shape).to_string()
}

/// Does an array bind to a graph input: it fits, or it is f64 or integer
/// data for an f32 input (third-party test runners write float64 or
/// integer inputs and cast them to the graph's type; so does binding, with
/// a note). Whether integer values are exact in f32 needs the data: the
/// check stage asks `int_as_f32`.
pub(super) fn fits_data(ty: &TensorType, t: &Header) -> bool {
    let narrowed = (t.dtype == DType::F64 || t.dtype.is_int()) && ty.dtype == DType::F32;
    let to_i32 = t.dtype.is_int() && ty.dtype == DType::I32;
    let as_read = |dtype| Header { dtype, shape: t.shape.clone() };
    fits(ty, t) || (narrowed && fits(ty, &as_read(DType::F32))) || (to_i32 && fits(ty, &as_read(DType::I32)))
}

/// Integer data as i32 (Deeploy writes int8 arrays for int32 graph
/// inputs), when every value fits; otherwise the first that does not.
pub(super) fn int_as_i32(v: &TensorData) -> std::result::Result<TensorData, NotI32> {
    let wide = v.to_i64().ok_or(NotI32::NotInteger(v.dtype))?;
    if let Some(index) = wide.iter().position(|&x| i32::try_from(x).is_err()) {
        return Err(NotI32::Overflow { dtype: v.dtype, value: wide[index], index });
    }
    Ok(TensorData::from_i64_as(DType::I32, v.shape.clone(), &wide).expect("checked to fit"))
}

/// Why integer data does not convert to i32.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotI32 {
    #[error("{} data is not integer", .0.name())]
    NotInteger(DType),
    #[error("{} value {value} at flat index {index} does not fit in i32", .dtype.name())]
    Overflow { dtype: DType, value: i64, index: usize },
}

/// Why integer data does not convert to f32.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotF32 {
    #[error("{} data is not integer", .0.name())]
    NotInteger(DType),
    #[error("{} value {value} at flat index {index} is not exact in f32", .dtype.name())]
    Inexact { dtype: DType, value: i128, index: usize },
}

/// Integer data as f32, when every value is exact there (|v| <= 2^24);
/// otherwise the first value that is not, and where.
pub(super) fn int_as_f32(v: &TensorData) -> std::result::Result<Vec<f32>, NotF32> {
    const EXACT: u64 = 1 << 24;
    let wide: Vec<i128> = if v.dtype == DType::U64 {
        v.bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) as i128).collect()
    } else {
        v.to_i64().ok_or(NotF32::NotInteger(v.dtype))?.into_iter().map(i128::from).collect()
    };
    match wide.iter().position(|x| x.unsigned_abs() > EXACT as u128) {
        Some(index) => Err(NotF32::Inexact { dtype: v.dtype, value: wide[index], index }),
        None => Ok(wide.iter().map(|&x| x as f32).collect()),
    }
}

/// Does an array fit a graph input's declared type? Symbolic dims take any
/// size; an unknown rank takes any shape.
pub(super) fn fits(ty: &TensorType, t: &Header) -> bool {
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

/// A `meta_*` value, read only when its header says it is one value.
fn meta_value(inputs: &Npz, key: &str) -> Result<TensorData> {
    let h = inputs.header(key).expect("a listed key");
    if h.numel() != 1 {
        return Err(Error::binding(format!(
            "inputs.npz key '{key}' must be a scalar, found {} {:?}",
            h.dtype, h.shape
        )));
    }
    Ok(inputs.get(key)?.expect("a listed key").clone())
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

/// A key the data has (and nobody used) whose type fits `x`.
fn hint_for(x: &Input, inputs: &Npz, unknown: &[&str]) -> Option<String> {
    unknown
        .iter()
        .find(|k| inputs.header(k).is_some_and(|h| fits_data(&x.ty, h)))
        .map(|k| format!("inputs.npz has an unused key '{k}' of type {}", x.ty))
}
