//! Gradient rules: how an operator's backward nodes are built (SGD-style
//! reverse mode; docs/training.md, "Backward"). Each `OpDef` names its rule (`OpDef::grad`);
//! a rule reads the forward node and the gradients of its outputs and
//! adds nodes of operators the runtime already has (ConvGrad, ReluGrad,
//! Gemm with transposes, ReduceSum to undo a broadcast, …) that compute
//! the gradients of the inputs asked for.
//!
//! The [`Builder`] adds typed nodes and constants to a graph (every new
//! node's shape rule runs as it is added), and builds the parts of a
//! training step that are not one operator's gradient: the loss, gradient
//! accumulation and the optimizer updates. `lower::derive` drives it.

use std::collections::{HashMap, HashSet};

use petgraph::stable_graph::NodeIndex;

use super::{Ctx, OpDef};
use crate::error::{Error, Result};
use crate::ir::{Attr, DType, Graph, Node, Origin, Tensor, TensorData, TensorId, TensorType};

/// A gradient rule: adds the nodes that compute the gradients of the
/// inputs `ctx.needs(i)` from the outputs' gradients, and records them
/// with `ctx.set(i, t)`.
pub type GradFn = fn(&mut GradCtx) -> Result<()>;

/// `base` if not `taken`, else `base_<k>` for the first free `k`, the
/// search starting where the last one for `base` ended.
fn first_free(base: &str, next: &mut HashMap<String, usize>, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    let k = next.entry(base.to_string()).or_insert(1);
    while taken(&format!("{base}_{k}")) {
        *k += 1;
    }
    format!("{base}_{k}")
}

/// Domain of onnxruntime's training operators.
pub const MS: &str = "com.microsoft";

/// Adds nodes and tensors to a graph under fresh names, typing each node
/// as it is added.
pub struct Builder<'g> {
    pub graph: &'g mut Graph,
    /// File order given to the next node (after every existing one).
    next_order: usize,
    /// Nodes added, in order.
    pub added: Vec<NodeIndex>,
    /// Every node's name: a fresh name is found without a walk over the
    /// graph (a walk per node made a long step's backward quadratic).
    node_names: HashSet<String>,
    /// Per base name, the suffix `k` to try first: every smaller one is
    /// taken, and names are never freed, so a search need not walk them
    /// again (8,000 accumulators named alike made the walks quadratic).
    next_tensor: HashMap<String, usize>,
    next_node: HashMap<String, usize>,
}

impl<'g> Builder<'g> {
    pub fn new(graph: &'g mut Graph) -> Builder<'g> {
        let next_order = graph.dag.node_indices().map(|n| graph.dag[n].order + 1).max().unwrap_or(0);
        let node_names = graph.dag.node_weights().map(|n| n.name.clone()).collect();
        Builder { graph, next_order, added: vec![], node_names, next_tensor: HashMap::new(), next_node: HashMap::new() }
    }

    /// `base`, or `base_<k>` for the first k that names no tensor yet.
    pub fn fresh(&mut self, base: &str) -> String {
        let graph = &*self.graph;
        first_free(base, &mut self.next_tensor, |n| graph.id(n).is_some())
    }

    /// A new tensor named `base` (or a fresh variant).
    pub fn tensor(&mut self, base: &str, ty: TensorType, origin: Origin, data: Option<TensorData>) -> TensorId {
        let name = self.fresh(base);
        let t = Tensor { name: name.clone(), ty, origin, data: data.map(std::sync::Arc::new), sequence: false };
        self.graph.tensors.insert_full(name, t).0
    }

    /// A constant (an initializer holding `data`).
    pub fn constant(&mut self, base: &str, data: TensorData) -> TensorId {
        let t = self.tensor(base, data.ty(), Origin::Initializer, Some(data));
        self.graph.initializers.push(t);
        t
    }

    pub fn ints(&mut self, base: &str, values: &[i64]) -> TensorId {
        self.constant(base, TensorData::from_i64(vec![values.len()], values))
    }

    pub fn scalar(&mut self, base: &str, v: f32) -> TensorId {
        self.constant(base, TensorData::from_f32(vec![], &[v]))
    }

    /// A graph input of type `ty`, listed after the existing ones.
    pub fn input(&mut self, name: &str, ty: TensorType) -> Result<TensorId> {
        if self.graph.id(name).is_some() {
            return Err(Error::model(format!(
                "the training step needs a graph input '{name}', but the model already has a tensor of that name"
            )));
        }
        let t = self.tensor(name, ty, Origin::Input, None);
        self.graph.inputs.push(t);
        Ok(t)
    }

    /// Add node `name` of operator `op` with outputs named `outs` (fresh
    /// variants); its shape rule types the outputs. An empty output name
    /// leaves the slot out.
    pub fn node(
        &mut self,
        name: &str,
        op: &str,
        domain: &str,
        inputs: &[Option<TensorId>],
        outs: &[&str],
        attrs: Vec<(&str, Attr)>,
    ) -> Result<Vec<Option<TensorId>>> {
        let op_id = super::resolve(op).ok_or_else(|| Error::model(format!("no operator '{op}' in the registry")))?;
        let placeholder = TensorType::unknown(DType::F32);
        let outputs: Vec<Option<TensorId>> = outs
            .iter()
            .map(|o| (!o.is_empty()).then(|| self.tensor(o, placeholder.clone(), Origin::Value, None)))
            .collect();
        let node = Node {
            name: self.fresh_node(name),
            op: op.to_string(),
            op_id,
            domain: domain.to_string(),
            inputs: inputs.to_vec(),
            outputs: outputs.clone(),
            attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            marks: Default::default(),
            order: self.next_order,
        };
        self.next_order += 1;
        self.type_outputs(&node)?;
        self.node_names.insert(node.name.clone());
        let n = self.graph.dag.add_node(node);
        self.added.push(n);
        Ok(outputs)
    }

    /// One-output node; returns its output.
    pub fn op(
        &mut self,
        name: &str,
        op: &str,
        inputs: &[TensorId],
        out: &str,
        attrs: Vec<(&str, Attr)>,
    ) -> Result<TensorId> {
        let ins: Vec<Option<TensorId>> = inputs.iter().map(|&t| Some(t)).collect();
        let outs = self.node(name, op, "", &ins, &[out], attrs)?;
        Ok(outs[0].expect("one named output"))
    }

    fn fresh_node(&mut self, base: &str) -> String {
        let names = &self.node_names;
        first_free(base, &mut self.next_node, |n| names.contains(n))
    }

    /// Run the node's shape rule and give its outputs their types.
    pub fn type_outputs(&mut self, node: &Node) -> Result<()> {
        let def = super::of(node);
        let types = (def.infer)(&Ctx { graph: self.graph, node })?;
        for (slot, t) in node.outputs.iter().enumerate() {
            if let (Some(t), Some(ty)) = (t, types.get(slot)) {
                self.graph.tensor_mut(*t).ty = ty.clone();
            }
        }
        Ok(())
    }

    pub fn ty(&self, t: TensorId) -> &TensorType {
        &self.graph.tensor(t).ty
    }

    /// Static shape of `t`; an error naming it when unknown.
    pub fn shape(&self, t: TensorId) -> Result<Vec<usize>> {
        self.ty(t).shape().ok_or_else(|| {
            Error::model(format!("tensor '{}' has no static shape: its gradient needs one", self.graph.name_of(t)))
        })
    }

    /// `t` reshaped to `shape` (no node when it has that shape already).
    pub fn reshape(&mut self, t: TensorId, shape: &[usize], name: &str) -> Result<TensorId> {
        if self.shape(t)? == shape {
            return Ok(t);
        }
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let s = self.ints(&format!("{name}_shape"), &dims);
        self.op(name, "Reshape", &[t, s], name, vec![])
    }

    /// A gradient `dy` of a broadcast result summed back to `shape`, the
    /// shape of the operand that was broadcast (numpy rules).
    pub fn unbroadcast(&mut self, dy: TensorId, shape: &[usize], name: &str) -> Result<TensorId> {
        let from = self.shape(dy)?;
        if from == shape {
            return Ok(dy);
        }
        let lead = from.len().saturating_sub(shape.len());
        let axes: Vec<i64> =
            (0..from.len()).filter(|&a| a < lead || (shape[a - lead] == 1 && from[a] != 1)).map(|a| a as i64).collect();
        let summed = if axes.is_empty() {
            dy
        } else {
            let ax = self.ints(&format!("{name}_axes"), &axes);
            self.op(name, "ReduceSum", &[dy, ax], &format!("{name}_sum"), vec![("keepdims", Attr::Int(1))])?
        };
        self.reshape(summed, shape, &format!("{name}_reshape"))
    }
}

/// What a gradient rule sees: the forward node, the gradient of each of
/// its outputs, and which inputs need one.
pub struct GradCtx<'b, 'g> {
    pub b: &'b mut Builder<'g>,
    pub node: Node,
    pub index: NodeIndex,
    dy: Vec<Option<TensorId>>,
    need: Vec<bool>,
    dx: Vec<Option<TensorId>>,
}

impl<'b, 'g> GradCtx<'b, 'g> {
    pub fn new(b: &'b mut Builder<'g>, index: NodeIndex, dy: Vec<Option<TensorId>>, need: Vec<bool>) -> Self {
        let node = b.graph.dag[index].clone();
        let dx = vec![None; node.inputs.len()];
        GradCtx { b, node, index, dy, need, dx }
    }

    pub fn err(&self, detail: impl Into<String>) -> Error {
        Error::node(&self.node, detail)
    }

    /// Give each output gradient the shape the node computes: a graph
    /// output may keep a declared shape that differs by size-1 dims.
    pub fn fit_outputs(&mut self) -> Result<()> {
        let types = (super::of(&self.node).infer)(&Ctx { graph: self.b.graph, node: &self.node })?;
        for (slot, ty) in types.iter().enumerate() {
            let (Some(dy), Some(want)) = (self.dy.get(slot).copied().flatten(), ty.shape()) else { continue };
            let name = format!("{}_fit", self.b.graph.name_of(dy));
            self.dy[slot] = Some(self.b.reshape(dy, &want, &name)?);
        }
        Ok(())
    }

    /// Whether input `i` needs a gradient.
    pub fn needs(&self, i: usize) -> bool {
        self.need.get(i).copied().unwrap_or(false)
    }

    /// Forward input `i`.
    pub fn x(&self, i: usize) -> Result<TensorId> {
        self.node.input(i).ok_or_else(|| self.err(format!("input {i} is missing; the gradient needs it")))
    }

    pub fn has_x(&self, i: usize) -> bool {
        self.node.input(i).is_some()
    }

    /// Gradient of output `i`.
    pub fn dy(&self, i: usize) -> Result<TensorId> {
        self.dy.get(i).copied().flatten().ok_or_else(|| self.err(format!("output {i} has no gradient")))
    }

    /// Forward output `i`, added to the node when the graph left it out
    /// (MaxPool's indices, LayerNormalization's mean and inverse deviation).
    pub fn y(&mut self, i: usize) -> Result<TensorId> {
        if let Some(t) = self.node.output(i) {
            return Ok(t);
        }
        let base = format!("{}_out{i}", self.node.name);
        let t = self.b.tensor(&base, TensorType::unknown(DType::F32), Origin::Value, None);
        if self.node.outputs.len() <= i {
            self.node.outputs.resize(i + 1, None);
        }
        self.node.outputs[i] = Some(t);
        self.commit_forward()?;
        Ok(t)
    }

    /// Turn the forward node into another operator (its training form,
    /// e.g. BatchNormalization into BatchNormInternal with batch
    /// statistics), keeping its inputs and outputs.
    pub fn retarget(&mut self, op: &str, domain: &str, attrs: Vec<(&str, Attr)>) -> Result<()> {
        self.node.op_id = super::resolve(op).ok_or_else(|| self.err(format!("no operator '{op}' in the registry")))?;
        self.node.op = op.to_string();
        self.node.domain = domain.to_string();
        for (k, v) in attrs {
            self.node.attrs.insert(k.to_string(), v);
        }
        self.commit_forward()
    }

    fn commit_forward(&mut self) -> Result<()> {
        let node = self.node.clone();
        self.b.type_outputs(&node)?;
        self.b.graph.dag[self.index] = node;
        Ok(())
    }

    /// Record input `i`'s gradient.
    pub fn set(&mut self, i: usize, t: TensorId) {
        if i < self.dx.len() {
            self.dx[i] = Some(t);
        }
    }

    /// The gradients recorded, per input.
    pub fn finish(self) -> Vec<Option<TensorId>> {
        self.dx
    }

    /// Name for a gradient tensor of this node.
    pub fn name(&self, what: &str) -> String {
        format!("{}_grad/{what}", self.node.name)
    }

    /// Name of input `i`'s gradient (`<x>_grad`, onnxruntime's naming).
    pub fn dx_name(&self, i: usize) -> String {
        match self.node.input(i) {
            Some(t) => format!("{}_grad", self.b.graph.name_of(t)),
            None => self.name(&format!("dx{i}")),
        }
    }

    /// Output names for a gradient node whose outputs are the gradients of
    /// inputs `slots` (empty for the ones not needed).
    pub fn dx_names(&self, slots: &[usize]) -> Vec<String> {
        slots.iter().map(|&i| if self.needs(i) { self.dx_name(i) } else { String::new() }).collect()
    }

    /// A forward attribute, copied.
    pub fn attr(&self, name: &str) -> Option<(String, Attr)> {
        self.node.attrs.get(name).map(|a| (name.to_string(), a.clone()))
    }

    /// The forward node's attributes (for gradient operators that take
    /// the same ones: ConvGrad, the pooling gradients).
    pub fn same_attrs(&self) -> Vec<(String, Attr)> {
        self.node.attrs.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Add a gradient node; outputs named `outs` (empty: left out).
    pub fn emit(
        &mut self,
        op: &str,
        domain: &str,
        inputs: &[Option<TensorId>],
        outs: &[String],
        attrs: Vec<(String, Attr)>,
    ) -> Result<Vec<Option<TensorId>>> {
        let name = self.name(op);
        let outs: Vec<&str> = outs.iter().map(String::as_str).collect();
        let attrs = attrs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        self.b.node(&name, op, domain, inputs, &outs, attrs)
    }

    /// One-output gradient node.
    pub fn emit1(
        &mut self,
        op: &str,
        domain: &str,
        inputs: &[TensorId],
        out: &str,
        attrs: Vec<(String, Attr)>,
    ) -> Result<TensorId> {
        let ins: Vec<Option<TensorId>> = inputs.iter().map(|&t| Some(t)).collect();
        let outs = self.emit(op, domain, &ins, &[out.to_string()], attrs)?;
        Ok(outs[0].expect("one named output"))
    }

    pub fn shape(&self, t: TensorId) -> Result<Vec<usize>> {
        self.b.shape(t)
    }

    /// A float scalar constant of this node's gradient.
    pub fn scalar(&mut self, what: &str, v: f32) -> TensorId {
        let name = self.name(what);
        self.b.scalar(&name, v)
    }

    /// One-output node of the default domain, named after this gradient.
    pub fn op(&mut self, op: &str, inputs: &[TensorId], what: &str) -> Result<TensorId> {
        let out = self.name(what);
        self.emit1(op, "", inputs, &out, vec![])
    }

    /// A bool tensor as 0.0 / 1.0.
    pub fn as_float(&mut self, cond: TensorId, what: &str) -> Result<TensorId> {
        let out = self.name(what);
        self.emit1("Cast", "", &[cond], &out, vec![("to".into(), Attr::Int(1))])
    }

    /// Record input `i`'s gradient `dy * factor`, summed back to the
    /// input's shape where the product broadcast.
    pub fn set_product(&mut self, i: usize, dy: TensorId, factor: TensorId) -> Result<()> {
        let shape = self.shape(self.x(i)?)?;
        let name = self.dx_name(i);
        let full = self.b.shape(dy)? == shape && self.b.shape(factor)? == shape;
        let prod = if full { name.clone() } else { self.name(&format!("mul{i}")) };
        let p = self.emit1("Mul", "", &[dy, factor], &prod, vec![])?;
        let g = self.b.unbroadcast(p, &shape, &name)?;
        self.set(i, g);
        Ok(())
    }

    /// Record input `i`'s gradient `t`, summed back to the input's shape.
    pub fn set_unbroadcast(&mut self, i: usize, t: TensorId) -> Result<()> {
        let shape = self.shape(self.x(i)?)?;
        let name = self.dx_name(i);
        let g = self.b.unbroadcast(t, &shape, &name)?;
        self.set(i, g);
        Ok(())
    }
}

/// The gradient rule of a node's operator.
pub fn rule(def: &OpDef) -> Option<GradFn> {
    def.grad
}

// ---- rules shared by several families ------------------------------------------------------

/// Identity-like operators: dX = dY under X's shape (Reshape, Flatten,
/// Squeeze, Unsqueeze, Identity).
pub fn reshape_back(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
    let shape = ctx.shape(x)?;
    let name = ctx.dx_name(0);
    let dx = ctx.b.reshape(dy, &shape, &name)?;
    ctx.set(0, dx);
    Ok(())
}

/// Unary activations with a `<Op>Grad(dY, X)` operator.
pub fn act_grad(ctx: &mut GradCtx, grad_op: &str, domain: &str) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
    let attrs = ctx.same_attrs();
    let out = ctx.dx_name(0);
    let dx = ctx.emit1(grad_op, domain, &[dy, x], &out, attrs)?;
    ctx.set(0, dx);
    Ok(())
}

/// Activations whose gradient operator reads the output:
/// `<Op>Grad(dY, Y)` (SigmoidGrad, TanhGrad).
pub fn act_grad_y(ctx: &mut GradCtx, grad_op: &str) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, y) = (ctx.dy(0)?, ctx.y(0)?);
    let out = ctx.dx_name(0);
    let dx = ctx.emit1(grad_op, MS, &[dy, y], &out, vec![])?;
    ctx.set(0, dx);
    Ok(())
}

/// An operator whose derivative is 0 almost everywhere (Floor, Ceil):
/// nothing flows back.
pub fn zero(_ctx: &mut GradCtx) -> Result<()> {
    Ok(())
}

// ---- the parts of a training step that are no operator's gradient --------------------------

/// The loss a derived training step ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// Softmax cross-entropy against integer class indices, mean over
    /// the batch.
    CrossEntropy,
    /// Mean of the squared differences over every element.
    Mse,
}

/// The loss node and the gradient of its scores: (loss value, dScores).
pub fn loss(b: &mut Builder, kind: LossKind, scores: TensorId, labels: TensorId) -> Result<(TensorId, TensorId)> {
    let one = b.scalar("loss_grad_seed", 1.0);
    let reduction = || vec![("reduction", Attr::String("mean".into()))];
    let d_scores = format!("{}_grad", b.graph.name_of(scores));
    match kind {
        LossKind::CrossEntropy => {
            let outs = b.node(
                "SoftmaxCrossEntropyLoss",
                "SoftmaxCrossEntropyLoss",
                "",
                &[Some(scores), Some(labels)],
                &["loss", "log_prob"],
                reduction(),
            )?;
            let (loss, log_prob) = (outs[0].expect("named"), outs[1].expect("named"));
            let ins = [Some(one), Some(log_prob), Some(labels)];
            let g = b.node(
                "SoftmaxCrossEntropyLossGrad",
                "SoftmaxCrossEntropyLossGrad",
                MS,
                &ins,
                &[&d_scores],
                reduction(),
            )?;
            Ok((loss, g[0].expect("named")))
        }
        LossKind::Mse => {
            let loss = b.op("MSELoss", "MSELoss", &[scores, labels], "loss", reduction())?;
            let ins = [Some(one), Some(scores), Some(labels)];
            let g = b.node("MSELossGrad", "MSELossGrad", MS, &ins, &[&d_scores], reduction())?;
            Ok((loss, g[0].expect("named")))
        }
    }
}

/// onnxruntime's gradient accumulation: `InPlaceAccumulatorV2(buffer,
/// gradient, lazy_reset_grad) -> <p>_grad.accumulation.out`.
pub fn accumulate(
    b: &mut Builder,
    buffer: TensorId,
    gradient: TensorId,
    reset: TensorId,
    flag: &str,
) -> Result<TensorId> {
    let outs = b.node(
        "InPlaceAccumulatorV2",
        "InPlaceAccumulatorV2",
        MS,
        &[Some(buffer), Some(gradient), Some(reset)],
        &[flag],
        vec![],
    )?;
    Ok(outs[0].expect("named"))
}

/// The optimizer update of one weight, by kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Update {
    Sgd { lr: f32 },
    Momentum { lr: f32, momentum: f32, weight_decay: f32 },
    AdamW { lr: f32, beta1: f32, beta2: f32, epsilon: f32, weight_decay: f32 },
}

impl Update {
    /// Names of the per-weight state tensors the update keeps, with their
    /// element type and whether they have the weight's shape (else one
    /// value).
    pub fn state(&self) -> &'static [(&'static str, DType, bool)] {
        match self {
            Update::Sgd { .. } => &[],
            Update::Momentum { .. } => &[("momentum", DType::F32, true)],
            Update::AdamW { .. } => {
                &[("exp_avg", DType::F32, true), ("exp_avg_sq", DType::F32, true), ("step", DType::I64, false)]
            }
        }
    }
}

/// `w_updated = update(w, g, state…)`: SGD, SGD with momentum, AdamW.
pub fn update(b: &mut Builder, u: Update, w: TensorId, g: TensorId, state: &[TensorId], out: &str) -> Result<TensorId> {
    let mut ins = vec![Some(w), Some(g)];
    ins.extend(state.iter().map(|&s| Some(s)));
    let (op, attrs) = match u {
        Update::Sgd { lr } => ("SGD", vec![("lr", Attr::Float(lr))]),
        Update::Momentum { lr, momentum, weight_decay } => (
            "MomentumSGD",
            vec![
                ("lr", Attr::Float(lr)),
                ("momentum", Attr::Float(momentum)),
                ("weight_decay", Attr::Float(weight_decay)),
            ],
        ),
        Update::AdamW { lr, beta1, beta2, epsilon, weight_decay } => (
            "AdamW",
            vec![
                ("lr", Attr::Float(lr)),
                ("beta1", Attr::Float(beta1)),
                ("beta2", Attr::Float(beta2)),
                ("epsilon", Attr::Float(epsilon)),
                ("weight_decay", Attr::Float(weight_decay)),
            ],
        ),
    };
    let outs = b.node(op, op, "", &ins, &[out], attrs)?;
    Ok(outs[0].expect("named"))
}
