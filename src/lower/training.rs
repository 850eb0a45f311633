//! The structure of a training step, from the graphs alone: which nodes
//! accumulate which gradient buffers, which nodes update which weights,
//! and the assertions about that structure that need no test data.
//! Binding pairs these with the data's slots.

use crate::error::{Error, Result};
use crate::ir::roles::ACCUM_BUFFER_SUFFIX;
use crate::ir::{Graph, Model};
use crate::ops::{self, Train};

/// `InPlaceAccumulatorV2(buffer, gradient, reset)`: node and buffer names.
#[derive(Clone, Debug)]
pub struct Accumulator {
    pub node: String,
    pub buffer: String,
}

/// A per-parameter optimizer node `SGD(w, g){lr} -> w_updated`.
#[derive(Clone, Debug)]
pub struct SgdNode {
    pub node: String,
    pub op: String,
    pub weight: String,
    pub gradient: String,
    pub output: Option<String>,
    pub lr: Option<f32>,
}

/// An optimizer over sequences (`SGDOptimizerV2(lr, params, gradients)`).
#[derive(Clone, Debug)]
pub struct SequenceOptimizer {
    pub node: String,
    pub op: String,
    pub params: String,
    pub gradients: String,
}

#[derive(Clone, Debug, Default)]
pub struct Structure {
    pub accumulators: Vec<Accumulator>,
    /// SGD nodes inside the training graph (single-graph flavor).
    pub inline_sgd: Vec<SgdNode>,
    /// SGD nodes of the optimizer graph.
    pub optimizer_sgd: Vec<SgdNode>,
    pub sequence: Option<SequenceOptimizer>,
}

fn sgd_nodes(g: &Graph) -> Vec<SgdNode> {
    g.nodes()
        .filter(|(_, n)| ops::of(n).train == Train::Sgd)
        .filter_map(|(_, n)| {
            Some(SgdNode {
                node: n.name.clone(),
                op: n.op.clone(),
                weight: g.name_of(n.input(0)?).to_string(),
                gradient: g.name_of(n.input(1)?).to_string(),
                output: n.output(0).map(|t| g.name_of(t).to_string()),
                lr: n.attr_float("lr"),
            })
        })
        .collect()
}

/// Read the training structure and assert what the graphs alone can tell:
/// every accumulator's buffer names a trainable weight, and accumulated
/// gradients have an optimizer graph to consume them.
pub fn structure(model: &Model, trainable: &[String]) -> Result<Structure> {
    let g = &model.graph;
    let accumulators: Vec<Accumulator> = g
        .nodes()
        .filter(|(_, n)| ops::of(n).train == Train::Accumulator)
        .filter_map(|(_, n)| Some(Accumulator { node: n.name.clone(), buffer: g.name_of(n.input(0)?).to_string() }))
        .collect();
    for a in &accumulators {
        let weight = a.buffer.strip_suffix(ACCUM_BUFFER_SUFFIX);
        if !weight.is_some_and(|w| trainable.iter().any(|p| p == w)) {
            return Err(Error::binding(format!(
                "InPlaceAccumulatorV2 '{}' accumulates into '{}', which names no trainable weight (expected \
                 '<weight>{ACCUM_BUFFER_SUFFIX}' for a weight that is a graph input)",
                a.node, a.buffer
            )));
        }
    }
    let mut s = Structure { accumulators, inline_sgd: sgd_nodes(g), ..Structure::default() };
    match &model.optimizer {
        Some(og) => {
            s.optimizer_sgd = sgd_nodes(og);
            s.sequence = og.nodes().find(|(_, n)| ops::of(n).train == Train::SgdSequence).map(|(_, n)| {
                let name = |i: usize| n.input(i).map(|t| og.name_of(t).to_string()).unwrap_or_default();
                SequenceOptimizer { node: n.name.clone(), op: n.op.clone(), params: name(1), gradients: name(2) }
            });
        }
        None if !s.accumulators.is_empty() => {
            return Err(Error::binding(format!(
                "the training graph accumulates gradients for {} weight(s) but there is no optimizer graph \
                 (optimizer.onnx or optimizer_model.onnx) next to it",
                trainable.len()
            )));
        }
        None => {}
    }
    Ok(s)
}
