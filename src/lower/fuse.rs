//! Fusions of inference graphs, each a registry fact:
//!
//! - Channel affines fold into weights: a node that is a per-channel
//!   affine with constant factors ([`OpDef::channel_affine`]: inference
//!   BatchNormalization) and alone reads the output of a node whose output
//!   channels come from slices of a constant weight and bias
//!   ([`OpDef::channel_weights`]: Conv) is folded into that weight and bias
//!   at generation time, and goes. `W'[c] = W[c] s[c]`, `B'[c] = B[c] s[c] + t[c]`.
//! - Activations fuse into kernels: a node whose kernel can apply an
//!   activation as it stores its output (Conv, Gemm: [`OpDef::fuses_act`])
//!   and whose output 0 only an activation node reads (Relu: [`OpDef::act`])
//!   writes the activation's output itself, with the activation's code in
//!   its `marks.fused_act`, and the activation node goes. That
//!   saves a pass over the tensor, its buffer, and (tiled) a round trip
//!   through L1.
//!
//! Only where the intermediate value is needed by nothing else: not a
//! graph output, not read by a second node (a training graph's gradients
//! read it, so training graphs keep their BatchNorm and Relu).
//!
//! [`OpDef::fuses_act`]: crate::ops::OpDef::fuses_act
//! [`OpDef::act`]: crate::ops::OpDef::act
//! [`OpDef::channel_affine`]: crate::ops::OpDef::channel_affine
//! [`OpDef::channel_weights`]: crate::ops::OpDef::channel_weights

use std::collections::HashSet;
use std::sync::Arc;

use petgraph::stable_graph::NodeIndex;

use crate::ir::{DType, Graph, Origin, Readers, TensorData, TensorId};
use crate::ops::{self, ChannelAffine, ChannelWeights};

/// Fuse every activation that can be; returns how many were.
pub fn fuse_activations(g: &mut Graph) -> usize {
    let (readers, outputs) = (g.readers(), g.outputs.iter().copied().collect());
    let mut fused = 0;
    for n in g.schedule.clone() {
        let Some((act_node, code, z)) = fusable(g, n, &readers, &outputs) else { continue };
        g.dag[n].marks.fused_act = Some(code);
        absorb(g, n, act_node, z);
        fused += 1;
    }
    finish(g, fused)
}

/// The activation node that node `n` can absorb: (its index, its `act`
/// code, its output).
fn fusable(g: &Graph, n: NodeIndex, readers: &Readers, outputs: &Outputs) -> Option<(NodeIndex, i64, TensorId)> {
    let node = g.dag.node_weight(n)?;
    let can = ops::of(node).fuses_act?;
    let (r, z) = sole_reader(g, n, readers, outputs)?;
    let act = g.dag.node_weight(r)?;
    let code = ops::of(act).act?;
    // The activation reads y alone (one input).
    (act.inputs.len() == 1 && can(g, node)).then_some((r, code, z))
}

/// Fold every channel affine that can be into the weights before it;
/// returns how many were.
pub fn fold_channel_affines(g: &mut Graph) -> usize {
    let (readers, outputs) = (g.readers(), g.outputs.iter().copied().collect());
    let mut folded = 0;
    for n in g.schedule.clone() {
        let Some((affine_node, affine, slots, z)) = foldable(g, n, &readers, &outputs) else { continue };
        fold_into(g, n, slots, &affine);
        absorb(g, n, affine_node, z);
        folded += 1;
    }
    finish(g, folded)
}

type Outputs = HashSet<TensorId>;

/// The one node that reads node `n`'s output 0, and that node's output
/// `z`, when `n` can hand its output over to it: `n` has no other
/// output and no fused activation yet, its output 0 `y` is no graph
/// output, and the reader takes `y` as input 0 and gives `z` of `y`'s type.
/// (The readers are the graph's before any fusion: a node fusion removes
/// reads nothing a later check asks about.)
fn sole_reader(g: &Graph, n: NodeIndex, readers: &Readers, outputs: &Outputs) -> Option<(NodeIndex, TensorId)> {
    let node = g.dag.node_weight(n)?;
    if node.marks.fused_act.is_some() || node.outputs.iter().skip(1).any(Option::is_some) {
        return None;
    }
    let y = node.output(0)?;
    let [r] = readers.get(&y)?.as_slice() else { return None };
    let next = g.dag.node_weight(*r)?;
    let z = next.output(0)?;
    let ok = !outputs.contains(&y) && next.input(0) == Some(y) && g.tensor(y).ty == g.tensor(z).ty;
    ok.then_some((*r, z))
}

/// Node `n` writes `z` itself, and the node `gone` that made it goes.
fn absorb(g: &mut Graph, n: NodeIndex, gone: NodeIndex, z: TensorId) {
    g.dag[n].outputs[0] = Some(z);
    g.dag.remove_node(gone);
}

/// The schedule and edges after `count` nodes went; returns `count`.
fn finish(g: &mut Graph, count: usize) -> usize {
    if count > 0 {
        g.schedule.retain(|n| g.dag.contains_node(*n));
        g.rebuild_edges();
    }
    count
}

/// The channel affine node that node `n` can absorb into its weights.
fn foldable(
    g: &Graph,
    n: NodeIndex,
    readers: &Readers,
    outputs: &Outputs,
) -> Option<(NodeIndex, ChannelAffine, ChannelWeights, TensorId)> {
    let node = g.dag.node_weight(n)?;
    let slots = ops::of(node).channel_weights?;
    let (r, z) = sole_reader(g, n, readers, outputs)?;
    let next = g.dag.node_weight(r)?;
    let affine = (ops::of(next).channel_affine?)(g, next)?;
    let c = affine.scale.len();
    let channels = g.tensor(node.output(0)?).ty.shape().and_then(|s| s.get(1).copied());
    let weight = own_constant(g, n, node.input(slots.weight)?, readers)?;
    let bias_ok = node.input(slots.bias).is_none_or(|b| own_constant(g, n, b, readers).is_some_and(|d| d.shape == [c]));
    let ok = channels == Some(c) && weight.shape.first() == Some(&c) && bias_ok;
    ok.then_some((r, affine, slots, z))
}

/// The value of an f32 initializer that only node `n` reads and the graph
/// does not output (so that changing it changes nothing else).
fn own_constant<'g>(g: &'g Graph, n: NodeIndex, t: TensorId, readers: &Readers) -> Option<&'g TensorData> {
    let tensor = g.tensor(t);
    let d = tensor.data.as_ref()?;
    let own = tensor.origin == Origin::Initializer
        && d.dtype == DType::F32
        && readers.get(&t).is_some_and(|r| r.as_slice() == [n])
        && !g.outputs.contains(&t);
    own.then_some(d)
}

/// Scale the weight's channel slices and the bias, add the shift (a bias
/// initializer is added when the node had none).
fn fold_into(g: &mut Graph, n: NodeIndex, slots: ChannelWeights, a: &ChannelAffine) {
    let w = g.dag[n].input(slots.weight).expect("checked by foldable");
    let data = g.tensor(w).data.clone().expect("checked by foldable");
    let mut v = data.to_f32().expect("f32");
    let per = v.len() / a.scale.len();
    for (c, chunk) in v.chunks_mut(per.max(1)).enumerate() {
        chunk.iter_mut().for_each(|x| *x = (f64::from(*x) * f64::from(a.scale[c])) as f32);
    }
    g.tensor_mut(w).data = Some(Arc::new(TensorData::from_f32(data.shape.clone(), &v)));
    let bias: Vec<f32> = match g.dag[n].input(slots.bias) {
        Some(b) => g.tensor(b).data.as_deref().and_then(TensorData::to_f32).expect("checked by foldable"),
        None => vec![0.0; a.scale.len()],
    };
    let folded: Vec<f32> = bias
        .iter()
        .enumerate()
        .map(|(c, &b)| (f64::from(b) * f64::from(a.scale[c]) + f64::from(a.shift[c])) as f32)
        .collect();
    let data = TensorData::from_f32(vec![folded.len()], &folded);
    match g.dag[n].input(slots.bias) {
        Some(b) => g.tensor_mut(b).data = Some(Arc::new(data)),
        None => {
            let base = format!("{}.folded_bias", g.name_of(w));
            let b = ops::grad::Builder::new(g).constant(&base, data);
            let node = &mut g.dag[n];
            node.inputs.resize(node.inputs.len().max(slots.bias + 1), None);
            node.inputs[slots.bias] = Some(b);
        }
    }
}
