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
//!   its [`ops::FUSED_ACT`] attribute, and the activation node goes. That
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

use petgraph::stable_graph::NodeIndex;

use crate::ir::{Attr, DType, Graph, Origin, TensorData, TensorId, TensorType};
use crate::ops::{self, ChannelAffine, ChannelWeights};

/// Fuse every activation that can be; returns how many were.
pub fn fuse_activations(g: &mut Graph) -> usize {
    let readers = g.readers();
    let outputs: HashSet<TensorId> = g.outputs.iter().copied().collect();
    let mut fused = 0;
    for n in g.schedule.clone() {
        let Some((act_node, code, z)) = fusable(g, n, &readers, &outputs) else { continue };
        let node = &mut g.dag[n];
        node.outputs[0] = Some(z);
        node.attrs.insert(ops::FUSED_ACT.into(), Attr::Int(code));
        g.dag.remove_node(act_node);
        fused += 1;
    }
    if fused > 0 {
        g.schedule.retain(|n| g.dag.contains_node(*n));
        g.rebuild_edges();
    }
    fused
}

/// The activation node that node `n` can absorb: (its index, its `act`
/// code, its output).
fn fusable(
    g: &Graph,
    n: NodeIndex,
    readers: &Readers,
    outputs: &HashSet<TensorId>,
) -> Option<(NodeIndex, i64, TensorId)> {
    let node = g.dag.node_weight(n)?;
    let can = ops::of(node).fuses_act?;
    if node.attrs.contains_key(ops::FUSED_ACT) || node.outputs.iter().skip(1).any(Option::is_some) {
        return None;
    }
    let y = node.output(0)?;
    let [r] = readers.get(&y)?.as_slice() else { return None };
    let act = g.dag.node_weight(*r)?;
    let code = ops::of(act).act?;
    let z = act.output(0)?;
    // The activation reads y alone (one input), with y's type.
    let reads_only_y = act.inputs.len() == 1 && act.input(0) == Some(y);
    let same_type = g.tensor(y).ty == g.tensor(z).ty;
    let ok = !outputs.contains(&y) && reads_only_y && same_type && can(g, node);
    ok.then_some((*r, code, z))
}

/// Fold every channel affine that can be into the weights before it;
/// returns how many were.
pub fn fold_channel_affines(g: &mut Graph) -> usize {
    let mut folded = 0;
    let mut readers = g.readers();
    for n in g.schedule.clone() {
        let Some((affine_node, affine, slots)) = foldable(g, n, &readers) else { continue };
        let z = g.dag[affine_node].output(0).expect("a channel affine has an output");
        fold_into(g, n, slots, &affine);
        g.dag[n].outputs[0] = Some(z);
        g.dag.remove_node(affine_node);
        g.schedule.retain(|m| *m != affine_node);
        g.rebuild_edges();
        readers = g.readers();
        folded += 1;
    }
    folded
}

type Readers = std::collections::HashMap<TensorId, Vec<NodeIndex>>;

/// The channel affine node that node `n` can absorb into its weights.
fn foldable(g: &Graph, n: NodeIndex, readers: &Readers) -> Option<(NodeIndex, ChannelAffine, ChannelWeights)> {
    let node = g.dag.node_weight(n)?;
    let slots = ops::of(node).channel_weights?;
    if node.outputs.iter().skip(1).any(Option::is_some) || node.attrs.contains_key(ops::FUSED_ACT) {
        return None;
    }
    let y = node.output(0)?;
    let [r] = readers.get(&y)?.as_slice() else { return None };
    let next = g.dag.node_weight(*r)?;
    let affine = (ops::of(next).channel_affine?)(g, next)?;
    let z = next.output(0)?;
    let c = affine.scale.len();
    let channels = g.tensor(y).ty.shape().and_then(|s| s.get(1).copied());
    let weight = own_constant(g, n, node.input(slots.weight)?, readers)?;
    let bias_ok = node.input(slots.bias).is_none_or(|b| own_constant(g, n, b, readers).is_some_and(|d| d.shape == [c]));
    let ok = next.input(0) == Some(y)
        && g.tensor(y).ty == g.tensor(z).ty
        && channels == Some(c)
        && !g.outputs.contains(&y)
        && weight.shape.first() == Some(&c)
        && bias_ok;
    ok.then_some((*r, affine, slots))
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
    g.tensor_mut(w).data = Some(TensorData::from_f32(data.shape, &v));
    let bias: Vec<f32> = match g.dag[n].input(slots.bias) {
        Some(b) => g.tensor(b).data.as_ref().and_then(TensorData::to_f32).expect("checked by foldable"),
        None => vec![0.0; a.scale.len()],
    };
    let folded: Vec<f32> = bias
        .iter()
        .enumerate()
        .map(|(c, &b)| (f64::from(b) * f64::from(a.scale[c]) + f64::from(a.shift[c])) as f32)
        .collect();
    let data = TensorData::from_f32(vec![folded.len()], &folded);
    match g.dag[n].input(slots.bias) {
        Some(b) => g.tensor_mut(b).data = Some(data),
        None => {
            let b = new_initializer(g, &format!("{}.folded_bias", g.name_of(w)), data);
            let node = &mut g.dag[n];
            node.inputs.resize(node.inputs.len().max(slots.bias + 1), None);
            node.inputs[slots.bias] = Some(b);
        }
    }
}

/// A new initializer named `base` (or `base_<k>`, the first free name).
fn new_initializer(g: &mut Graph, base: &str, data: TensorData) -> TensorId {
    let name = (0..).map(|k| if k == 0 { base.to_string() } else { format!("{base}_{k}") });
    let name = name.into_iter().find(|n| g.id(n).is_none()).expect("some name is free");
    let ty: TensorType = data.ty();
    let t =
        crate::ir::Tensor { name: name.clone(), ty, origin: Origin::Initializer, data: Some(data), sequence: false };
    let id = g.tensors.insert_full(name, t).0;
    g.initializers.push(id);
    id
}
