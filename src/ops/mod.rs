//! The operator registry: every fact about every supported operator, one
//! definition each, grouped by family (one file per family). Later stages
//! ask the registry (`ops::of(node)`) and never match operator names:
//! schema attributes, shape and dtype rule, folding, compile-time inputs,
//! views and in-place updates, scratch bytes, training-role hints,
//! BatchNorm facts, kernel binding.
//!
//! A family file reads top to bottom: its `OPS` table (one `OpDef` per
//! operator), then the shape and folding rules, then the kernel bindings
//! (`bind_*`, on the shared types of [`kernel`]); rules added later (tiling,
//! gradients) go beside them, one field of the `OpDef` each.
//!
//! Operators are matched by type; the domain is recorded but never a reason
//! to reject a known type (`GeluGrad` and `SGD` appear in the default
//! domain in the wild). Each node is resolved once, at import, to an
//! `ir::OpId` that indexes this registry.

mod constant;
pub mod conv;
mod conv_transpose;
mod elementwise;
pub mod grad;
pub mod kernel;
mod linear;
pub mod loss;
mod norm;
pub use norm::saved_stats_form;
mod group_norm;
mod int_approx;
mod pad;
mod pool;
pub mod quant;
mod quant_lookup;
mod range;
mod reduce;
mod requant;
mod resize;
mod select;
mod shape;
mod softmax;
mod split;
#[cfg(test)]
mod testing;
pub mod tile;
mod training;
pub use training::fixed_rate;
mod unary;

use crate::error::{Error, Result};
use crate::ir::{DType, Graph, Node, OpId, Origin, TensorData, TensorId, TensorType};

/// Shape and dtype rule: the type of every output slot, in order. Unknown
/// dims are allowed (`TensorType::unknown`); the rule must never panic.
pub type InferFn = fn(&Ctx) -> Result<Vec<TensorType>>;

/// Constant folding: the value of every output, when the inputs allow.
/// Gets the output types the shape rule just computed.
pub type FoldFn = fn(&Ctx, &[TensorType]) -> Result<Option<Vec<TensorData>>>;
/// `auto_pad` as explicit pads (begin then end), or `None` when it is not SAME_*.
pub type PadsFn = fn(&Ctx) -> Result<Option<Vec<i64>>>;

/// An input an older opset's form of the operator lays out otherwise,
/// as the constant the current form reads: `(slot, value)`.
pub type LegacyInputFn = fn(&Ctx) -> Result<Option<(usize, TensorData)>>;

/// Bytes of per-kernel scratch a node needs (runtime/kernels/dg_kernels.h).
pub type ScratchFn = fn(&Graph, &Node) -> u64;

/// Bytes of the constant tables a node's kernel call carries as static
/// data, from the node's shapes and attributes alone (nothing built).
pub type TablesFn = fn(&Graph, &Node) -> Result<u64>;

/// When a node with a fold rule is folded at import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldWhen {
    /// Every input is a constant and every output an integer or bool
    /// (shape and mask arithmetic; trainable weights are neither, so
    /// never fold).
    ConstantInts,
    /// As `ConstantInts`, and outputs of any type when every input read is
    /// a value computed when generating code (from Constant nodes, never an
    /// initializer, so never a trainable weight): a Cast of a Constant that
    /// another node reads when generating code (an expanded Attention's
    /// `CastLike(-inf, scores)` as Pad's value).
    ConstantValues,
    /// As `ConstantInts`, and outputs of any type when every node that
    /// reads an output reads it when generating code (a Pad's constant
    /// value given as a DequantizeLinear of an initializer): the value
    /// never exists at run time, so no weight is dequantized in the code.
    ReadWhenGenerating,
    /// From the input's static shape alone, whatever its value (Shape, Size).
    Shapes,
    /// Always, whatever the output type (Constant).
    Always,
}

/// How an operator writes one of its inputs in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    None,
    /// Always writes input `input`; output `output`, when present, is the
    /// same buffer (InPlaceAccumulatorV2).
    Always {
        input: usize,
        output: usize,
    },
    /// Output `output` may share input `input`'s buffer, when no later node
    /// reads the input (SGD: w_updated over w).
    WhenLastReader {
        input: usize,
        output: usize,
    },
    /// Updates every member of its parameter-sequence input in place, one
    /// parameter at a time; outputs from 1 on are those parameters
    /// (SGDOptimizerV2).
    Sequence,
}

/// The part an operator plays in a training step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Train {
    None,
    /// Forward pass: output 0 is the loss value.
    Loss,
    /// Gradient accumulation: (buffer, gradient, reset flag).
    Accumulator,
    /// Per-parameter optimizer step: (weight, gradient[, state…]){lr} ->
    /// updated; state inputs (momentum, AdamW's moments and step count)
    /// are updated in place on every step.
    Sgd,
    /// Optimizer over sequences: (learning_rate, params, gradients, …).
    SgdSequence,
}

pub struct OpDef {
    pub name: &'static str,
    /// The attribute names the operator's schema defines (ONNX, or
    /// onnxruntime's contrib and training schemas), legacy forms included;
    /// [`UNIVERSAL_ATTRS`] are accepted on every operator.
    pub attrs: &'static [&'static str],
    /// Attributes of the operator's older schemas, accepted on a node of a
    /// model whose opset is older than `before`.
    pub legacy: &'static [LegacyAttr],
    /// Attributes a third-party convention spells differently:
    /// `(theirs, the schema's)`; import renames them.
    pub renamed: &'static [(&'static str, &'static str)],
    pub infer: InferFn,
    /// Input slots that must be present (a non-empty name): the typing
    /// pass refuses a node that leaves one empty, before its rule runs.
    pub required: &'static [usize],
    /// Set for the operators that make up static shape subgraphs.
    pub fold: Option<FoldFn>,
    /// A window operator's `auto_pad = SAME_UPPER / SAME_LOWER` as explicit
    /// `pads` (begin then end), once the input shape is known: typing
    /// rewrites the node with them, so later stages see only `pads`.
    pub explicit_pads: Option<PadsFn>,
    /// A constant input of an older opset's form in the current form's
    /// layout: typing gives the node that constant (a new tensor) before
    /// its rule runs, so later stages see only the current form.
    pub legacy_input: Option<LegacyInputFn>,
    pub fold_when: FoldWhen,
    /// Input slots of which only the type is read, never the value
    /// (CastLike's target): folding does not wait for them to be known.
    pub type_only: &'static [usize],
    /// Input slots read when generating code, when constant (shapes, axes,
    /// bounds): such constants need no buffer.
    pub compile_time: &'static [usize],
    /// Of those, the slots that may be run-time data when not constant
    /// (Gather's indices; Shape reads only its input's shape): a graph
    /// input there is never built into the code (`bind::pinned`).
    pub data_when_not_constant: &'static [usize],
    /// Output 0 is input 0 under another shape: it can alias it (no copy).
    pub view: bool,
    pub update: Update,
    /// A backward-pass operator (its outputs are gradients).
    pub gradient: bool,
    pub train: Train,
    /// Slot of the input a loss (or loss gradient) compares against.
    pub labels: Option<fn(&Node) -> Option<usize>>,
    pub scratch: Option<ScratchFn>,
    /// Constant tables the kernel call carries in static data (Resize's
    /// taps): the plan counts them in L2 before the call is built.
    pub tables: Option<TablesFn>,
    /// A BatchNormalization that normalises with batch statistics on this
    /// node (training mode).
    pub batch_stats: Option<fn(&Node) -> bool>,
    /// The node in eval mode (`lower::predict`): a BatchNorm with batch
    /// statistics rewritten to normalise with its running statistics.
    pub eval_form: Option<fn(&mut Node)>,
    /// Inputs a node with batch statistics updates as running statistics
    /// (model state a checkpoint keeps, that eval mode reads).
    pub running_stats: &'static [usize],
    /// Makes a fixed 1×1 spatial map whatever the input resolution
    /// (global pools; reductions over every spatial axis with keepdims).
    pub fixed_1x1: Option<fn(&Graph, &Node) -> bool>,
    /// How a node becomes a call of a `runtime/kernels` function; `None`:
    /// no kernel (the emitter refuses the node, naming it).
    pub kernel: Option<kernel::Kernel>,
    /// How the backward pass of a node is built (`grad.rs`); `None`: no
    /// gradient, so a derived training step refuses the node when a
    /// trainable weight lies behind it.
    pub grad: Option<grad::GradFn>,
    /// How the node's work splits into L1 tiles; `None`: it runs untiled.
    pub tile: Option<tile::TileRule>,
    /// An activation that a producing kernel can apply as it stores its
    /// outputs: the kernels' `act` code (1: ReLU).
    pub act: Option<i64>,
    /// Whether this node's kernel can apply an activation (`act`) to its
    /// output 0, so that an activation node reading only that output fuses
    /// into it (`lower::fuse`).
    pub fuses_act: Option<fn(&Graph, &Node) -> bool>,
    /// The node is `y = x * scale[c] + shift[c]` over channel axis 1 with
    /// constant factors (BatchNormalization in inference form): `None`
    /// from the function when this node is not.
    pub channel_affine: Option<fn(&Graph, &Node) -> Option<ChannelAffine>>,
    /// Output channel c (axis 1) of this node is linear in slice c (axis 0)
    /// of one weight input plus entry c of an optional bias input, so a
    /// channel affine that alone reads it folds into them (`lower::fuse`).
    pub channel_weights: Option<ChannelWeights>,
    /// The labels input ([`OpDef::labels`]) holds class indices: how many
    /// classes there are and which value is ignored, when known.
    pub class_labels: Option<fn(&Graph, &Node) -> Option<ClassLabels>>,
    /// The node is cheap to run a second time and gives the same value
    /// from the same inputs (no state, no batch statistics computed
    /// afresh): the planner may recompute its output just before the
    /// backward pass reads it instead of keeping it (`plan::recompute`).
    /// `None` from the function: not this node.
    pub recompute: Option<fn(&Graph, &Node) -> Option<Recompute>>,
    /// Multiply-adds the node computes (convolutions and matrix products):
    /// the compute part of a node's estimated cost, next to the bytes it
    /// moves (`plan::tile::compute_cost`). `None`: bytes only.
    pub macs: Option<fn(&Graph, &Node) -> Option<u64>>,
    /// The part the node plays in a QDQ graph (`lower::qdq`): a quantizer,
    /// or how it computes on 8-bit values when DequantizeLinear nodes feed
    /// it and a QuantizeLinear alone reads its output.
    pub qdq: Option<quant::Qdq>,
}

/// How a [`OpDef::recompute`] node is run again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recompute {
    /// The same node on the same inputs, every output made again.
    Copy,
    /// A training BatchNorm: output 0 again from the batch statistics it
    /// saved (outputs `mean` and `inv_std`), in inference form with the
    /// `marks.saved_stats`: the statistics are never recomputed.
    SavedStats { mean: usize, inv_std: usize },
}

/// Recompute rule of an operator that is pure and one-output.
pub fn recompute_copy(_: &Graph, n: &Node) -> Option<Recompute> {
    (n.outputs.iter().flatten().count() == 1).then_some(Recompute::Copy)
}

/// What a class-index labels input may hold: `0..classes`, or `ignore`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassLabels {
    pub classes: usize,
    pub ignore: Option<i64>,
}

/// Per-channel factors of a [`OpDef::channel_affine`] node.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelAffine {
    pub scale: Vec<f32>,
    pub shift: Vec<f32>,
}

/// Input slots of a [`OpDef::channel_weights`] node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelWeights {
    pub weight: usize,
    pub bias: usize,
}

impl OpDef {
    /// Defaults for every fact but name and rule: entries write
    /// `OpDef { name, infer, .., ..OpDef::BASE }`.
    pub const BASE: OpDef = OpDef {
        name: "",
        attrs: &[],
        legacy: &[],
        renamed: &[],
        infer: no_rule,
        required: &[0],
        fold: None,
        explicit_pads: None,
        legacy_input: None,
        fold_when: FoldWhen::ConstantInts,
        type_only: &[],
        compile_time: &[],
        data_when_not_constant: &[],
        view: false,
        update: Update::None,
        gradient: false,
        train: Train::None,
        labels: None,
        scratch: None,
        tables: None,
        batch_stats: None,
        eval_form: None,
        running_stats: &[],
        fixed_1x1: None,
        kernel: None,
        grad: None,
        tile: None,
        act: None,
        fuses_act: None,
        channel_affine: None,
        channel_weights: None,
        class_labels: None,
        recompute: None,
        macs: None,
        qdq: None,
    };

    /// Whether the node writes input `slot` in place as optimizer state.
    pub fn updates_state(&self, slot: usize) -> bool {
        self.train == Train::Sgd && slot >= 2
    }

    /// Whether input `slot` is read at generation time (when constant).
    pub fn compile_time_input(&self, slot: usize) -> bool {
        self.compile_time.contains(&slot)
    }

    /// Whether input `slot` must have a value when generating code: a
    /// run-time value there cannot be computed with.
    pub fn value_at_generation(&self, slot: usize) -> bool {
        self.compile_time_input(slot) && !self.data_when_not_constant.contains(&slot)
    }
}

/// Attributes any operator may carry: onnxruntime-training writes a
/// `description` on the nodes its gradient builder makes.
pub const UNIVERSAL_ATTRS: &[&str] = &["description"];

/// An attribute an older schema of the operator defines (and a later one
/// dropped): accepted below opset `before` when `unsupported` finds nothing
/// to refuse in its value (a hint deploygen computes the same without).
pub struct LegacyAttr {
    pub name: &'static str,
    pub before: i64,
    /// Why the node's value of the attribute is refused; `None`: it is
    /// ignorable.
    pub unsupported: fn(&Node) -> Option<String>,
}

pub fn ignorable(_: &Node) -> Option<String> {
    None
}

fn legacy_axis(n: &Node) -> Option<String> {
    Some(format!(
        "'axis' = {} aligns the second operand by axis (opset < 7 broadcasting); deploygen broadcasts as numpy does \
         (trailing dims) only",
        match n.attrs.get("axis") {
            Some(crate::ir::Attr::Int(v)) => v.to_string(),
            _ => "?".to_string(),
        }
    ))
}

/// Opset < 7 broadcasting of the binary elementwise operators: `broadcast`
/// (numpy broadcasting covers its trailing-aligned form), `axis`
/// (refused), and opset < 6 `consumed_inputs` (a memory hint).
pub const LEGACY_BROADCAST: &[LegacyAttr] = &[
    LegacyAttr { name: "broadcast", before: 7, unsupported: ignorable },
    LegacyAttr { name: "axis", before: 7, unsupported: legacy_axis },
    LegacyAttr { name: "consumed_inputs", before: 6, unsupported: ignorable },
];

/// Opset < 6 `consumed_inputs` (a memory hint, ignorable).
pub const LEGACY_CONSUMED: &[LegacyAttr] = &[LegacyAttr { name: "consumed_inputs", before: 6, unsupported: ignorable }];

impl OpDef {
    /// The legacy attribute `name` a node of opset `opset` may carry.
    pub fn legacy_attr(&self, name: &str, opset: i64) -> Option<&LegacyAttr> {
        self.legacy.iter().find(|l| l.name == name && opset < l.before)
    }
}

impl OpDef {
    /// Whether the operator's schema defines attribute `name`.
    pub fn defines_attr(&self, name: &str) -> bool {
        self.attrs.contains(&name) || UNIVERSAL_ATTRS.contains(&name)
    }
}

fn no_rule(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Err(ctx.err("operator has no shape rule"))
}

const FAMILIES: &[&[OpDef]] = &[
    elementwise::OPS,
    conv::OPS,
    linear::OPS,
    pool::OPS,
    norm::OPS,
    softmax::OPS,
    loss::OPS,
    reduce::OPS,
    shape::OPS,
    constant::OPS,
    training::OPS,
    unary::OPS,
    select::OPS,
    pad::OPS,
    split::OPS,
    group_norm::OPS,
    conv_transpose::OPS,
    resize::OPS,
    quant::OPS,
    quant_lookup::OPS,
    requant::OPS,
    int_approx::OPS,
];

/// Resolve an operator type to its registry handle.
pub fn resolve(op: &str) -> Option<OpId> {
    FAMILIES.iter().enumerate().find_map(|(f, defs)| {
        defs.iter().position(|d| d.name == op).map(|i| OpId { family: f as u16, index: i as u16 })
    })
}

/// The definition behind a handle.
pub fn def(id: OpId) -> &'static OpDef {
    &FAMILIES[id.family as usize][id.index as usize]
}

/// The definition of a node's operator.
pub fn of(node: &Node) -> &'static OpDef {
    def(node.op_id)
}

pub fn lookup(op: &str) -> Option<&'static OpDef> {
    resolve(op).map(def)
}

/// The activation a node applies fused (its `marks.fused_act` code, named
/// by the operator whose [`OpDef::act`] it is), for comments.
pub fn fused_activation(node: &Node) -> Option<&'static str> {
    let code = node.marks.fused_act?;
    FAMILIES.iter().flat_map(|f| f.iter()).find(|d| d.act == Some(code)).map(|d| d.name)
}

/// The operator types that have a kernel binding, sorted.
pub fn with_kernels() -> Vec<&'static str> {
    let mut v: Vec<&str> =
        FAMILIES.iter().flat_map(|f| f.iter()).filter(|d| d.kernel.is_some()).map(|d| d.name).collect();
    v.sort_unstable();
    v
}

/// All supported operator types, sorted, for error messages.
pub fn supported() -> Vec<&'static str> {
    let mut v: Vec<&str> = FAMILIES.iter().flat_map(|f| f.iter()).map(|d| d.name).collect();
    v.sort_unstable();
    v
}

/// What a rule sees: the node and the types/values of its inputs.
pub struct Ctx<'a> {
    pub graph: &'a Graph,
    pub node: &'a Node,
}

impl<'a> Ctx<'a> {
    pub fn err(&self, detail: impl Into<String>) -> Error {
        Error::node(self.node, detail)
    }

    pub fn has(&self, i: usize) -> bool {
        self.node.input(i).is_some()
    }

    /// Type of input `i`; an error if a required input is missing.
    pub fn ty(&self, i: usize) -> Result<&'a TensorType> {
        match self.node.input(i) {
            Some(t) => Ok(&self.graph.tensor(t).ty),
            None => Err(self.err(format!("input {i} is required but missing"))),
        }
    }

    pub fn dtype(&self, i: usize) -> Result<DType> {
        Ok(self.ty(i)?.dtype)
    }

    /// Static shape of input `i`, if known.
    pub fn shape(&self, i: usize) -> Result<Option<Vec<usize>>> {
        Ok(self.ty(i)?.shape())
    }

    /// Constant value of input `i` (initializer or folded), if any.
    pub fn konst(&self, i: usize) -> Option<&'a TensorData> {
        self.graph.tensor(self.node.input(i)?).data.as_deref()
    }

    pub fn konst_i64(&self, i: usize) -> Option<Vec<i64>> {
        self.konst(i)?.to_i64()
    }

    /// An integer-list attribute, or a constant integer input at `i` (ops
    /// moved attributes to inputs across opsets: axes, pads, shape…; files
    /// keep the old form at newer opsets, so either is honoured at any
    /// opset). `Ok(None)` when neither is given; an error when the input
    /// exists but is not constant, or when both are given and disagree.
    pub fn ints_attr_or_input(&self, attr: &str, i: usize) -> Result<Option<Vec<i64>>> {
        let from_attr = self.node.ints(attr)?.map(<[i64]>::to_vec);
        if !self.has(i) {
            return Ok(from_attr);
        }
        let name = self.graph.name_of(self.node.input(i).expect("checked by has"));
        let Some(from_input) = self.konst_i64(i) else { return Err(self.not_constant(i, attr)) };
        match from_attr {
            Some(a) if a != from_input => Err(self.err(format!(
                "{attr} is given both as attribute ({a:?}) and as input {i} ('{name}', {from_input:?}), and they \
                 disagree"
            ))),
            _ => Ok(Some(from_input)),
        }
    }

    /// The error for input `i` (the operand `what`) having no value when
    /// generating code, with the graph inputs fed at run time it comes
    /// from and what to do about them.
    pub fn not_constant(&self, i: usize, what: &str) -> Error {
        let g = self.graph;
        let t = self.node.input(i).expect("a present input");
        let name = g.name_of(t);
        let fed = runtime_inputs_behind(g, t);
        let why = match fed.as_slice() {
            [] => String::new(),
            [only] if only == name => format!(
                ": it is a graph input fed at run time; give its value in inputs.npz under '{name}' (the code is \
                 then generated for that value) or make it an initializer"
            ),
            v => format!(
                ": it is computed from graph input(s) {} fed at run time; give their values in inputs.npz (the \
                 code is then generated for them) or make them initializers",
                v.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
            ),
        };
        self.err(format!("input {i} ('{name}', {what}) must be a constant known when generating code{why}"))
    }

    /// An INT attribute naming an axis of a rank-`rank` tensor, normalised
    /// (negative counts from the end); `default` when absent.
    pub fn axis_attr(&self, name: &str, default: i64, rank: usize) -> Result<usize> {
        let r = rank as i64;
        let v = self.node.int(name)?.unwrap_or(default);
        if v < -r || v >= r {
            return Err(self.err(format!(
                "attribute '{name}' = {v} is out of range {}..={} for rank {rank}",
                -r,
                r - 1
            )));
        }
        Ok(if v < 0 { v + r } else { v } as usize)
    }

    /// Normalise a possibly negative axis against `rank`.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let r = rank as i64;
        if axis < -r || axis >= r {
            return Err(self.err(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(if axis < 0 { axis + r } else { axis } as usize)
    }

    /// Input `i`'s type, unchanged, for rules where output = input.
    pub fn same_as(&self, i: usize) -> Result<TensorType> {
        Ok(self.ty(i)?.clone())
    }
}

/// The graph inputs fed at run time that tensor `t` is computed from
/// (through every producer), in the order found.
fn runtime_inputs_behind(g: &Graph, t: TensorId) -> Vec<String> {
    let (mut seen, mut todo, mut out) = (std::collections::HashSet::new(), vec![t], vec![]);
    while let Some(x) = todo.pop() {
        if !seen.insert(x) {
            continue;
        }
        let tensor = g.tensor(x);
        if tensor.origin == Origin::Input {
            out.push(tensor.name.clone());
        } else if tensor.data.is_none() {
            if let Some(p) = g.producer(x) {
                todo.extend(g.node(p).inputs.iter().flatten());
            }
        }
    }
    out
}

/// Numpy-style broadcast of static shapes.
pub fn broadcast(ctx: &Ctx, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        *o = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(ctx.err(format!("shapes {a:?} and {b:?} do not broadcast (dim {i}: {da} vs {db})")));
        };
    }
    Ok(out)
}

/// Broadcast of every present input's type (elementwise ops).
pub fn broadcast_inputs(ctx: &Ctx) -> Result<TensorType> {
    let dtype = ctx.dtype(0)?;
    let mut shape: Option<Vec<usize>> = Some(vec![]);
    for i in 0..ctx.node.inputs.len() {
        if !ctx.has(i) {
            continue;
        }
        shape = match (shape, ctx.shape(i)?) {
            (Some(s), Some(t)) => Some(broadcast(ctx, &s, &t)?),
            _ => None,
        };
    }
    Ok(match shape {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    })
}

/// Multiply dims with overflow checking (shape rules must not panic on
/// hostile files).
pub fn checked_numel(ctx: &Ctx, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| ctx.err(format!("shape {shape:?} has too many elements")))
}

/// Folded values are kept small: they are shape arithmetic, not data.
pub const FOLD_LIMIT: usize = 1 << 16;
