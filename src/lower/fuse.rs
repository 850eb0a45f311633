//! Activation fusion: a node whose kernel can apply an activation as it
//! stores its output (Conv, Gemm: [`OpDef::fuses_act`]) and whose output 0
//! only an activation node reads (Relu: [`OpDef::act`]) writes the
//! activation's output itself, with the activation's code in its
//! [`ops::FUSED_ACT`] attribute, and the activation node goes. That saves
//! a pass over the tensor, its buffer, and (tiled) a round trip through L1.
//!
//! Only where the pre-activation value is needed by nothing else: not a
//! graph output, not read by a second node (a training graph's ReluGrad
//! reads it, so training graphs keep their Relu).
//!
//! [`OpDef::fuses_act`]: crate::ops::OpDef::fuses_act
//! [`OpDef::act`]: crate::ops::OpDef::act

use std::collections::HashSet;

use petgraph::stable_graph::NodeIndex;

use crate::ir::{Attr, Graph, TensorId};
use crate::ops;

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
    readers: &std::collections::HashMap<TensorId, Vec<NodeIndex>>,
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
