//! The buffer list: every tensor that needs memory, with its size, its
//! lifetime over the schedule, its kind and the tensors that share it.
//!
//! Schedule steps: the training (or inference) graph's nodes `0..N`, then
//! the optimizer graph's `N..N+M`; the two run one after the other and share
//! the weight and gradient buffers. A training model's prediction graph
//! (`lower::predict`) follows at `N+M..`: it shares the weight and
//! running-statistics buffers and has its own data inputs.
//!
//! Sharing (one buffer, several tensors), from the registry's facts:
//! - `Update::Always` (InPlaceAccumulatorV2) writes its input in place; its
//!   optional output is the same buffer.
//! - `Update::WhenLastReader` (SGD's `w_updated`) shares the input's buffer
//!   when `lower::alias` found no later reader; otherwise the output gets
//!   a buffer of its own.
//! - `Update::Sequence` (SGDOptimizerV2) updates the parameter buffers in
//!   place; its sequence inputs and outputs are views of the parameter and
//!   gradient buffers.
//! - Pointwise operators (a tile rule with `in_place`: Relu, Add, …) write their
//!   output over input 0 when that is a transient buffer of the same size
//!   that no later node reads: an activation the next node consumes takes
//!   no second buffer.
//! - Views (`OpDef::view`: Reshape, Squeeze, …) alias their input: no copy,
//!   no code; not when an in-place write to the input's buffer falls inside
//!   the alias's lifetime.
//!
//! Constants feeding only compile-time operands (`OpDef::compile_time`:
//! shapes, axes, bounds) need no buffer.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::{Index, IndexMut};

use petgraph::stable_graph::NodeIndex;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::ir::{DType, Graph, Model, Node, OpId, Origin, Readers, Role, TensorId};
use crate::lower::alias;
use crate::ops::{self, Update};
use crate::target::Level;

mod walk;
use walk::walk;

/// Index of a buffer in its plan's [`Buffers`]; its number in the plan's
/// JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct BufId(usize);

impl BufId {
    /// The lowest id (a bound for ranges over ids).
    pub const FIRST: BufId = BufId(0);

    /// The position in the buffer list.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for BufId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The buffer list, indexed by [`BufId`] (a buffer's id is its position).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(transparent)]
pub struct Buffers(Vec<Buffer>);

impl Buffers {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Room for `more` buffers without growing (a long step's list would
    /// otherwise double, briefly holding both copies).
    pub fn reserve_exact(&mut self, more: usize) {
        self.0.reserve_exact(more);
    }

    /// The id the next buffer pushed gets.
    pub fn next_id(&self) -> BufId {
        BufId(self.0.len())
    }

    /// Appends `b`, whose id must be [`Buffers::next_id`].
    pub fn push(&mut self, b: Buffer) -> BufId {
        let id = self.next_id();
        assert_eq!(b.id, id, "buffer '{}' pushed with another id than its position", b.name);
        self.0.push(b);
        id
    }

    pub fn get(&self, id: BufId) -> Option<&Buffer> {
        self.0.get(id.0)
    }

    pub fn as_slice(&self) -> &[Buffer] {
        &self.0
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Buffer> {
        self.0.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Buffer> {
        self.0.iter_mut()
    }
}

impl Index<BufId> for Buffers {
    type Output = Buffer;

    fn index(&self, id: BufId) -> &Buffer {
        &self.0[id.0]
    }
}

impl IndexMut<BufId> for Buffers {
    fn index_mut(&mut self, id: BufId) -> &mut Buffer {
        &mut self.0[id.0]
    }
}

impl<'a> IntoIterator for &'a Buffers {
    type Item = &'a Buffer;
    type IntoIter = std::slice::Iter<'a, Buffer>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// What a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Graph input fed per run: data, labels, `lazy_reset_grad`.
    Input,
    /// Trainable parameter.
    Param,
    /// Parameter graph input no optimizer updates (BatchNorm statistics).
    Frozen,
    /// An initializer no optimizer updates (inference weights, frozen
    /// layers, loss seeds) or a folded value a node reads as data.
    Constant,
    /// Gradient accumulation buffer.
    GradBuffer,
    /// Optimizer graph input that is not a parameter or gradient
    /// (learning rate, step).
    OptimizerInput,
    /// Graph output (loss, inference outputs, flags).
    Output,
    /// Forward value.
    Activation,
    /// Backward value.
    Gradient,
    /// Per-kernel scratch of one node.
    Scratch,
    /// L2 staging copy of an L3 operand for one node.
    Staging,
    /// L1 copy of an operand for one node.
    L1Operand,
    /// Extra static buffer asked for by a later stage (test data).
    Static,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Input => "input",
            Kind::Param => "param",
            Kind::Frozen => "frozen",
            Kind::Constant => "constant",
            Kind::GradBuffer => "grad_buffer",
            Kind::OptimizerInput => "optimizer_input",
            Kind::Output => "output",
            Kind::Activation => "activation",
            Kind::Gradient => "gradient",
            Kind::Scratch => "scratch",
            Kind::Staging => "staging",
            Kind::L1Operand => "l1_operand",
            Kind::Static => "static",
        }
    }

    /// Holds a value that must be supplied before the first run.
    pub fn is_weight(self) -> bool {
        matches!(self, Kind::Param | Kind::Frozen | Kind::Constant)
    }

    /// Made per node by the level stage (staging, L1 copies, scratch).
    pub fn is_per_node(self) -> bool {
        matches!(self, Kind::Scratch | Kind::Staging | Kind::L1Operand)
    }
}

/// Which graph a tensor or node belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphSel {
    Main,
    Optimizer,
    /// The prediction graph (`lower::predict`), after the optimizer's steps.
    Predict,
}

/// Another tensor stored in a buffer, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Alias {
    pub tensor: String,
    pub graph: GraphSel,
    pub why: String,
}

/// Where a buffer's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "at")]
pub enum Placement {
    /// Not placed yet.
    Unplaced,
    /// At this offset in its level's arena.
    Arena { offset: u64 },
    /// An initialised static array of its own (baked), outside the arena.
    Static,
}

#[derive(Clone, Debug, Serialize)]
pub struct Buffer {
    pub id: BufId,
    pub name: String,
    pub graph: GraphSel,
    pub kind: Kind,
    /// Exact bytes of the value.
    pub bytes: u64,
    /// Bytes reserved: `bytes` rounded up to the platform alignment. A
    /// zero-size value reserves one unit all the same, so that its address
    /// is a place of its own in a real arena (an arena of no bytes is never
    /// allocated: its base is NULL).
    pub size: u64,
    #[serde(serialize_with = "dtype_name")]
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// First and last schedule step at which the buffer is live.
    pub start: u32,
    pub end: u32,
    /// Live across runs (graph inputs, weights, gradient buffers): its bytes
    /// are never shared.
    pub persistent: bool,
    pub aliases: Vec<Alias>,
    pub level: Level,
    /// Why the buffer is at its level. Empty for a per-node buffer (staging,
    /// L1 copy, tile buffer, scratch): its reason is the node it serves,
    /// told by [`crate::plan::Plan::level_reason`] (a long step has hundreds
    /// of thousands of them).
    pub level_reason: String,
    pub placement: Placement,
    /// For per-node buffers: the step they serve and the buffer they copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_of: Option<BufId>,
}

/// A dtype in the plan's JSON: its short name (`f32`, `u8`, …).
fn dtype_name<S: serde::Serializer>(d: &DType, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&d.name())
}

/// A value's bytes, element type and shape.
pub struct Value {
    pub bytes: u64,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl Buffer {
    /// The one constructor: a main-graph buffer at L2, unplaced, with no
    /// aliases, its size the bytes rounded up to `align`; callers set the
    /// rest with struct-update syntax.
    pub fn new(
        id: BufId,
        name: String,
        kind: Kind,
        v: Value,
        align: u64,
        live: (u32, u32),
        persistent: bool,
    ) -> Buffer {
        Buffer {
            id,
            name,
            graph: GraphSel::Main,
            kind,
            bytes: v.bytes,
            size: v.bytes.max(1).div_ceil(align) * align,
            dtype: v.dtype,
            shape: v.shape,
            start: live.0,
            end: live.1,
            persistent,
            aliases: vec![],
            level: Level::L2,
            level_reason: String::new(),
            placement: Placement::Unplaced,
            step: None,
            copy_of: None,
        }
    }

    pub fn lifetime(&self) -> (u32, u32) {
        (self.start, self.end)
    }
}

/// How a node touches a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

/// One scheduled node and the buffers it reads and writes.
#[derive(Clone, Debug)]
pub struct Step {
    pub index: u32,
    pub graph: GraphSel,
    pub node: NodeIndex,
    pub name: String,
    pub op: String,
    pub op_id: OpId,
    /// Distinct buffers in first-use order, with how they are touched.
    pub operands: Vec<(BufId, Access)>,
    /// A shape-only node whose output aliases its input: no code.
    pub alias_only: bool,
    /// Bytes of per-kernel scratch.
    pub scratch_bytes: u64,
}

/// Everything discovered from the graphs, before levels and offsets.
#[derive(Clone, Debug)]
pub struct Discovery {
    pub buffers: Buffers,
    pub steps: Vec<Step>,
    /// Steps of the main graph (the optimizer's start here).
    pub main_steps: u32,
    /// Buffer of each main-graph tensor that has one.
    pub main: HashMap<TensorId, BufId>,
    pub optimizer: HashMap<TensorId, BufId>,
    pub predict: HashMap<TensorId, BufId>,
    /// Decisions worth telling a person: aliasing refused, compile-time
    /// constants, views.
    pub notes: Vec<String>,
}

/// A buffer a later stage needs (e.g. test data), with its preferred level.
#[derive(Clone, Debug)]
pub struct StaticRequest {
    pub name: String,
    pub bytes: u64,
    pub level: Level,
    /// The requester can use it at L2 or L3: when L2 is short it moves to
    /// L3 before any of the network's own buffers does.
    pub movable: bool,
}

fn is_constant(g: &Graph, t: TensorId) -> bool {
    matches!(g.tensor(t).origin, Origin::Initializer | Origin::Folded) && g.tensor(t).data.is_some()
}

/// Bytes per element and shape of a tensor, or an error naming it.
fn size_of(g: &Graph, t: TensorId, what: &str) -> Result<(u64, Vec<usize>)> {
    let tensor = g.tensor(t);
    let shape = tensor.ty.shape();
    match (tensor.ty.bytes(), shape) {
        (Some(b), Some(s)) => Ok((b as u64, s)),
        _ => Err(Error::plan(format!(
            "{what} '{}' has no static size ({}); the memory plan needs every buffer's shape",
            tensor.name, tensor.ty
        ))),
    }
}

/// Each tensor's buffer, by tensor index: the walk asks it at every
/// operand of every step (a hash map was most of a trial's time).
#[derive(Default)]
struct Bound(Vec<Option<BufId>>);

impl Bound {
    fn new(tensors: usize) -> Bound {
        Bound(vec![None; tensors])
    }

    fn get(&self, t: &TensorId) -> Option<&BufId> {
        self.0.get(t.index()).and_then(Option::as_ref)
    }

    fn contains_key(&self, t: &TensorId) -> bool {
        self.get(t).is_some()
    }

    fn insert(&mut self, t: TensorId, b: BufId) {
        if self.0.len() <= t.index() {
            self.0.resize(t.index() + 1, None);
        }
        self.0[t.index()] = Some(b);
    }

    /// The tensors of graph `g` that have a buffer, with it.
    fn iter<'s>(&'s self, g: &'s Graph) -> impl Iterator<Item = (TensorId, BufId)> + 's {
        g.tensors.ids().filter_map(|t| Some((t, *self.get(&t)?)))
    }

    /// As a map, when the discovery writes it ([`Detail::Full`]).
    fn into_map(self, g: Option<&Graph>, detail: Detail) -> HashMap<TensorId, BufId> {
        match (g, detail) {
            (Some(g), Detail::Full) => self.iter(g).collect(),
            _ => HashMap::new(),
        }
    }
}

struct Builder<'a> {
    model: &'a Model,
    align: u64,
    last: u32,
    buffers: Buffers,
    main: Bound,
    opt: Bound,
    pred: Bound,
    notes: Vec<String>,
    /// Whether names, reasons and notes are written ([`Detail`]).
    detail: Detail,
}

/// How much a discovery writes down besides sizes and lifetimes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Buffer and step names, aliasing reasons, notes: for the plan.
    Full,
    /// Sizes, kinds and lifetimes only: for the trials of a planning
    /// choice, which ask the peak of many schedules.
    Sizes,
}

impl<'a> Builder<'a> {
    /// Record a note, when notes are written.
    fn note(&mut self, text: impl FnOnce() -> String) {
        if self.detail == Detail::Full {
            self.notes.push(text());
        }
    }

    fn graph(&self, sel: GraphSel) -> &'a Graph {
        match sel {
            GraphSel::Main => &self.model.graph,
            GraphSel::Optimizer => self.model.optimizer.as_ref().expect("optimizer steps only exist with a graph"),
            GraphSel::Predict => self.model.predict.as_ref().expect("predict steps only exist with a graph"),
        }
    }

    fn map(&self, sel: GraphSel) -> &Bound {
        match sel {
            GraphSel::Main => &self.main,
            GraphSel::Optimizer => &self.opt,
            GraphSel::Predict => &self.pred,
        }
    }

    fn bind(&mut self, sel: GraphSel, t: TensorId, b: BufId) {
        match sel {
            GraphSel::Main => self.main.insert(t, b),
            GraphSel::Optimizer => self.opt.insert(t, b),
            GraphSel::Predict => self.pred.insert(t, b),
        };
    }

    fn new_buffer(
        &mut self,
        sel: GraphSel,
        t: TensorId,
        kind: Kind,
        start: u32,
        end: u32,
        persistent: bool,
    ) -> Result<BufId> {
        let g = self.graph(sel);
        let (bytes, shape) = size_of(g, t, kind.name())?;
        let id = self.buffers.next_id();
        let v = Value { bytes, dtype: g.tensor(t).ty.dtype, shape };
        let name = if self.detail == Detail::Full { g.name_of(t).to_string() } else { String::new() };
        self.buffers
            .push(Buffer { graph: sel, ..Buffer::new(id, name, kind, v, self.align, (start, end), persistent) });
        self.bind(sel, t, id);
        Ok(id)
    }

    fn persistent(&mut self, sel: GraphSel, t: TensorId, kind: Kind) -> Result<BufId> {
        let last = self.last;
        self.new_buffer(sel, t, kind, 0, last, true)
    }

    /// Tensor `t` of graph `sel` lives in buffer `b`; `why` (given the
    /// buffer) says so when reasons are written.
    fn alias(&mut self, sel: GraphSel, t: TensorId, b: BufId, why: impl FnOnce(&Buffer) -> String) {
        if self.detail == Detail::Full {
            let name = self.graph(sel).name_of(t).to_string();
            let why = why(&self.buffers[b]);
            self.buffers[b].aliases.push(Alias { tensor: name, graph: sel, why });
        }
        self.bind(sel, t, b);
    }

    fn touch(&mut self, b: BufId, step: u32) {
        let buf = &mut self.buffers[b];
        buf.start = buf.start.min(step);
        buf.end = buf.end.max(step);
    }
}

/// Kind of a value a node produces.
fn value_kind(g: &Graph, node: &Node, t: TensorId) -> Kind {
    let named_grad = g.name_of(t).as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"grad"));
    let def = ops::of(node);
    if def.gradient || def.train == ops::Train::Accumulator || named_grad {
        Kind::Gradient
    } else {
        Kind::Activation
    }
}

/// Bytes of per-kernel scratch a node needs (its registry entry says).
pub fn scratch_bytes(g: &Graph, node: &Node) -> u64 {
    ops::of(node).scratch.map_or(0, |f| f(g, node))
}

/// Discover every buffer of the model (main graph, then optimizer graph)
/// plus the extra static buffers asked for.
pub fn discover(model: &Model, statics: &[StaticRequest], align: u64) -> Result<Discovery> {
    discover_with(model, statics, align, Detail::Full)
}

/// [`discover`], writing down `detail`: with [`Detail::Sizes`] the same
/// buffers, kinds and lifetimes, without names, reasons, notes or the
/// tensor-to-buffer maps.
pub fn discover_with(model: &Model, statics: &[StaticRequest], align: u64, detail: Detail) -> Result<Discovery> {
    let main_steps = model.graph.schedule.len() as u32;
    let opt_steps = model.optimizer.as_ref().map_or(0, |g| g.schedule.len() as u32);
    let pred_steps = model.predict.as_ref().map_or(0, |g| g.schedule.len() as u32);
    let total = (main_steps + opt_steps + pred_steps).max(1);
    let mut b = Builder {
        model,
        align: align.max(1),
        last: total - 1,
        buffers: Buffers::default(),
        main: Bound::new(model.graph.tensors.len()),
        opt: Bound::new(model.optimizer.as_ref().map_or(0, |g| g.tensors.len())),
        pred: Bound::new(model.predict.as_ref().map_or(0, |g| g.tensors.len())),
        notes: vec![],
        detail,
    };
    let roles = &model.roles;
    let g = &model.graph;

    // Graph inputs, in file order: persistent.
    for &t in &g.inputs {
        if g.tensor(t).sequence {
            continue;
        }
        let kind = match roles.role(g.name_of(t)) {
            Some(Role::Param) => Kind::Param,
            Some(Role::Frozen) => Kind::Frozen,
            Some(Role::GradBuffer) => Kind::GradBuffer,
            _ => Kind::Input,
        };
        b.persistent(GraphSel::Main, t, kind)?;
    }

    // Constants read as data by some node: initializers in file order, then
    // folded values in tensor order. Constants read only at compile time
    // need no buffer.
    let readers = g.readers();
    // A constant that is a graph output (a folded Shape, a Constant node)
    // is read by the caller: it gets a buffer filled from its value.
    let output = |t: TensorId| g.outputs.contains(&t);
    let read = |t: TensorId| readers.contains_key(&t) || output(t);
    let mut compile_time: Vec<String> = vec![];
    for &t in &g.initializers {
        if b.main.contains_key(&t) {
            continue;
        }
        let is_param = roles.role(g.name_of(t)) == Some(Role::Param);
        if is_param || data_use(g, &readers, t) || output(t) {
            let kind = if is_param { Kind::Param } else { Kind::Constant };
            b.persistent(GraphSel::Main, t, kind)?;
        } else if read(t) {
            compile_time.push(g.name_of(t).to_string());
        }
    }
    for t in g.tensors.ids() {
        if g.tensor(t).origin == Origin::Folded && !b.main.contains_key(&t) && read(t) {
            if data_use(g, &readers, t) || output(t) {
                b.persistent(GraphSel::Main, t, Kind::Constant)?;
            } else {
                compile_time.push(g.name_of(t).to_string());
            }
        }
    }
    if !compile_time.is_empty() {
        b.note(|| {
            format!(
                "{} constant(s) are read only at compile time (shapes, axes, bounds) and get no buffer: {}",
                compile_time.len(),
                compile_time.join(", ")
            )
        });
    }

    let mut steps = Vec::with_capacity(total as usize);
    walk(&mut b, GraphSel::Main, 0, readers, &mut steps)?;
    if let Some(og) = &model.optimizer {
        // Optimizer inputs share the training graph's buffers by name;
        // sequences are views; anything else (learning rate, step) is its own.
        for &t in &og.inputs {
            let name = og.name_of(t);
            if let Some(&mb) = g.id(name).and_then(|mt| b.main.get(&mt)) {
                b.alias(GraphSel::Optimizer, t, mb, |_| "same name as the training graph's buffer".into());
            } else if og.tensor(t).sequence {
                continue;
            } else {
                b.persistent(GraphSel::Optimizer, t, Kind::OptimizerInput)?;
            }
        }
        let opt_readers = og.readers();
        for &t in &og.initializers {
            if !b.opt.contains_key(&t) && data_use(og, &opt_readers, t) {
                b.persistent(GraphSel::Optimizer, t, Kind::Constant)?;
            }
        }
        walk(&mut b, GraphSel::Optimizer, main_steps, opt_readers, &mut steps)?;
    }
    if let Some(pg) = &model.predict {
        // Weights, frozen values and BatchNorm running statistics are the
        // training step's buffers (by name, of the same size); the data
        // inputs, at the prediction's batch, have their own.
        for &t in pg.inputs.iter().chain(&pg.initializers) {
            if b.pred.contains_key(&t) {
                continue;
            }
            let name = pg.name_of(t);
            let shared = g.id(name).and_then(|mt| b.main.get(&mt).copied()).filter(|&mb| {
                !matches!(roles.role(name), Some(Role::Data | Role::Labels))
                    && pg.tensor(t).ty.bytes().map(|x| x as u64) == Some(b.buffers[mb].bytes)
            });
            if let Some(mb) = shared {
                b.alias(GraphSel::Predict, t, mb, |_| "same name as the training graph's buffer".into());
            } else if pg.inputs.contains(&t) {
                b.persistent(GraphSel::Predict, t, Kind::Input)?;
            }
        }
        let pred_readers = pg.readers();
        for &t in &pg.initializers {
            if !b.pred.contains_key(&t) && data_use(pg, &pred_readers, t) {
                b.persistent(GraphSel::Predict, t, Kind::Constant)?;
            }
        }
        for t in pg.tensors.ids() {
            if pg.tensor(t).origin == Origin::Folded && !b.pred.contains_key(&t) && data_use(pg, &pred_readers, t) {
                b.persistent(GraphSel::Predict, t, Kind::Constant)?;
            }
        }
        walk(&mut b, GraphSel::Predict, main_steps + opt_steps, pred_readers, &mut steps)?;
    }

    for s in statics {
        let id = b.buffers.next_id();
        let v = Value { bytes: s.bytes, dtype: DType::U8, shape: vec![s.bytes as usize] };
        let buf = Buffer::new(id, s.name.clone(), Kind::Static, v, b.align, (0, b.last), true);
        b.buffers.push(Buffer { level: s.level, ..buf });
    }

    Ok(Discovery {
        buffers: b.buffers,
        steps,
        main_steps,
        main: b.main.into_map(Some(&model.graph), detail),
        optimizer: b.opt.into_map(model.optimizer.as_ref(), detail),
        predict: b.pred.into_map(model.predict.as_ref(), detail),
        notes: b.notes,
    })
}

/// Whether some node reads `t` as data (not only at compile time).
fn data_use(g: &Graph, readers: &Readers, t: TensorId) -> bool {
    readers.get(&t).is_some_and(|ns| {
        ns.iter().any(|&n| {
            let node = g.node(n);
            node.inputs.iter().enumerate().any(|(i, s)| *s == Some(t) && !ops::of(node).compile_time_input(i))
        })
    })
}
