//! QDQ graphs become integer graphs (inference): a node whose inputs come
//! from DequantizeLinear nodes and whose output only a QuantizeLinear
//! reads computes on the 8-bit values themselves, as onnxruntime runs such
//! a graph ([`OpDef::qdq`](crate::ops::OpDef::qdq)):
//!
//! - a [`Qdq::Fuse`] node (Conv, MatMul, Gemm, GlobalAveragePool, Softmax)
//!   becomes its integer operator (QLinearConv, ...), reading the quantized
//!   values, scales and zero points, and writing the QuantizeLinear's
//!   output; an int32 bias is taken only when its scale is the product of
//!   the input's and the weight's (else the sum would not be the graph's);
//! - a [`Qdq::Passthrough`] node (MaxPool, Reshape, ...) reads the 8-bit
//!   input and writes the 8-bit output, when the two share one scale and
//!   zero point;
//! - the QuantizeLinear goes, and so does every DequantizeLinear that
//!   nothing reads any more: weights stay 8-bit, never dequantized.

use std::collections::HashSet;

use petgraph::stable_graph::NodeIndex;

use crate::ir::{Graph, Node, Readers, TensorData, TensorId};
use crate::ops::quant::{Fused, QSlot, Qdq};
use crate::ops::{self, grad::Builder};

/// A DequantizeLinear feeding a node: its value, scale, zero point.
#[derive(Clone, Copy)]
struct Dq {
    value: TensorId,
    scale: TensorId,
    zero_point: Option<TensorId>,
}

/// The QuantizeLinear reading a node's output: it, its scale, zero point
/// and output.
struct Q {
    node: NodeIndex,
    scale: TensorId,
    zero_point: Option<TensorId>,
    out: TensorId,
}

/// Rewrite every QDQ pattern that can be; returns how many were.
pub fn fuse_qdq(g: &mut Graph) -> usize {
    let (readers, outputs): (Readers, HashSet<TensorId>) = (g.readers(), g.outputs.iter().copied().collect());
    let mut gone = vec![];
    for n in g.schedule.clone() {
        let Some(rule) = ops::of(&g.dag[n]).qdq else { continue };
        let Some(q) = sole_quantizer(g, n, &readers, &outputs) else { continue };
        let done = match rule {
            Qdq::Passthrough => pass_through(g, n, &q),
            Qdq::Fuse(f) => fuse(g, n, &q, f),
            Qdq::Quantize | Qdq::Dequantize => false,
        };
        if done {
            gone.push(q.node);
        }
    }
    for &n in &gone {
        g.dag.remove_node(n);
    }
    let count = gone.len();
    if count > 0 {
        drop_unread_dequantizers(g);
        g.schedule.retain(|n| g.dag.contains_node(*n));
        g.rebuild_edges();
    }
    count
}

/// The QuantizeLinear that alone reads node `n`'s only output (no graph
/// output), per tensor.
fn sole_quantizer(g: &Graph, n: NodeIndex, readers: &Readers, outputs: &HashSet<TensorId>) -> Option<Q> {
    let node = &g.dag[n];
    if node.outputs.iter().skip(1).any(Option::is_some) {
        return None;
    }
    let y = node.output(0)?;
    let [r] = readers.get(&y)?.as_slice() else { return None };
    let q = &g.dag[*r];
    let is_q = matches!(ops::of(q).qdq, Some(Qdq::Quantize)) && q.input(0) == Some(y) && !outputs.contains(&y);
    let q = Q { node: *r, scale: q.input(1)?, zero_point: q.input(2), out: q.output(0)? };
    (is_q && one_value(g, q.scale)).then_some(q)
}

/// The DequantizeLinear producing `t`.
fn dequantizer(g: &Graph, t: TensorId) -> Option<Dq> {
    let p = g.producer(t)?;
    let node = &g.dag[p];
    matches!(ops::of(node).qdq, Some(Qdq::Dequantize)).then_some(())?;
    Some(Dq { value: node.input(0)?, scale: node.input(1)?, zero_point: node.input(2) })
}

fn one_value(g: &Graph, t: TensorId) -> bool {
    g.tensor(t).ty.numel() == Some(1)
}

fn constant(g: &Graph, t: Option<TensorId>) -> Option<&TensorData> {
    g.tensor(t?).data.as_deref()
}

/// Input 0 and the output share one constant scale and zero point: the
/// node runs on the 8-bit values.
fn pass_through(g: &mut Graph, n: NodeIndex, q: &Q) -> bool {
    let Some(dq) = g.dag[n].input(0).and_then(|x| dequantizer(g, x)) else { return false };
    let same = |a: Option<TensorId>, b: Option<TensorId>| match (constant(g, a), constant(g, b)) {
        (Some(x), Some(y)) => x.dtype == y.dtype && x.bytes == y.bytes,
        _ => a.is_none() && b.is_none(),
    };
    let typed = g.tensor(dq.value).ty.dtype == g.tensor(q.out).ty.dtype;
    if !(typed && same(Some(dq.scale), Some(q.scale)) && same(dq.zero_point, q.zero_point)) {
        return false;
    }
    let node = &mut g.dag[n];
    node.inputs[0] = Some(dq.value);
    node.outputs[0] = Some(q.out);
    true
}

/// The node becomes `f.op` when every input it quantizes comes from a
/// DequantizeLinear (and a bias's scale is the product of the others).
fn fuse(g: &mut Graph, n: NodeIndex, q: &Q, f: &Fused) -> bool {
    let node = &g.dag[n];
    if !(f.when)(node) {
        return false;
    }
    let mut dqs = vec![];
    for (i, t) in node.inputs.iter().enumerate() {
        match t.and_then(|t| dequantizer(g, t)) {
            Some(dq) => dqs.push(Some(dq)),
            None if t.is_none() && f.optional.contains(&i) => dqs.push(None),
            None => return false,
        }
    }
    if !bias_scale_is_product(g, &dqs) {
        return false;
    }
    let Some(inputs) = inputs_of(g, f, &dqs, q) else { return false };
    let attrs = (f.attrs)(g, &g.dag[n]);
    let Some(op_id) = ops::resolve(f.op) else { return false };
    let node = &mut g.dag[n];
    *node = Node {
        op: f.op.to_string(),
        op_id,
        domain: f.domain.to_string(),
        inputs,
        outputs: vec![Some(q.out)],
        attrs: attrs.into_iter().collect(),
        ..node.clone()
    };
    true
}

/// The fused node's inputs; a missing zero point becomes a zero of its
/// value's type.
fn inputs_of(g: &mut Graph, f: &Fused, dqs: &[Option<Dq>], q: &Q) -> Option<Vec<Option<TensorId>>> {
    let mut out = vec![];
    for slot in f.inputs {
        out.push(match *slot {
            QSlot::Value(i) => dqs.get(i).copied().flatten().map(|d| d.value),
            QSlot::Scale(i) => Some(dqs.get(i).copied().flatten()?.scale),
            QSlot::ZeroPoint(i) => {
                let dq = dqs.get(i).copied().flatten()?;
                Some(match dq.zero_point {
                    Some(z) => z,
                    None => zero_like(g, dq.value)?,
                })
            }
            QSlot::OutScale => Some(q.scale),
            QSlot::OutZeroPoint => Some(match q.zero_point {
                Some(z) => z,
                None => zero_like(g, q.out)?,
            }),
        });
    }
    Some(out)
}

/// A zero scalar of `t`'s type (8-bit integers only: other types are not
/// fused).
fn zero_like(g: &mut Graph, t: TensorId) -> Option<TensorId> {
    let dtype = g.tensor(t).ty.dtype;
    if !matches!(dtype, crate::ir::DType::I8 | crate::ir::DType::U8) {
        return None;
    }
    let base = format!("{}.zero_point", g.name_of(t));
    let zero = TensorData::from_i64_as(dtype, vec![], &[0])?;
    Some(Builder::new(g).constant(&base, zero))
}

/// A third dequantized input (Conv's, Gemm's bias) is an int32 sum only
/// when its scale is input 0's times input 1's (per channel) and its zero
/// point 0: onnxruntime's quantizer makes it so; anything else is not
/// fused.
fn bias_scale_is_product(g: &Graph, dqs: &[Option<Dq>]) -> bool {
    let Some(Some(b)) = dqs.get(2) else { return true };
    let (Some(Some(x)), Some(Some(w))) = (dqs.first(), dqs.get(1)) else { return false };
    let f32s = |t: TensorId| constant(g, Some(t)).and_then(TensorData::to_f32);
    let (Some(bs), Some(xs), Some(ws)) = (f32s(b.scale), f32s(x.scale), f32s(w.scale)) else { return false };
    let zero = constant(g, b.zero_point).is_none_or(|z| z.to_i64().is_some_and(|v| v.iter().all(|&x| x == 0)));
    let int32 = g.tensor(b.value).ty.dtype == crate::ir::DType::I32;
    let product = xs.len() == 1
        && (ws.len() == bs.len() || ws.len() == 1)
        && bs.iter().enumerate().all(|(c, s)| (xs[0] * ws[if ws.len() == 1 { 0 } else { c }]).to_bits() == s.to_bits());
    zero && int32 && product
}

/// Remove the DequantizeLinear nodes nothing reads any more.
fn drop_unread_dequantizers(g: &mut Graph) {
    let outputs: HashSet<TensorId> = g.outputs.iter().copied().collect();
    let read: HashSet<TensorId> = g.dag.node_weights().flat_map(|n| n.inputs.iter().flatten().copied()).collect();
    let unread: Vec<NodeIndex> = g
        .dag
        .node_indices()
        .filter(|&n| {
            let node = &g.dag[n];
            matches!(ops::of(node).qdq, Some(Qdq::Dequantize))
                && node.outputs.iter().flatten().all(|t| !read.contains(t) && !outputs.contains(t))
        })
        .collect();
    for n in unread {
        g.dag.remove_node(n);
    }
}
