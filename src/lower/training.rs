//! The structure of a training step, from the graphs alone: which nodes
//! accumulate which gradient buffers, which nodes update which weights,
//! and the assertions about that structure that need no test data.
//! Binding pairs these with the data's slots.

use std::collections::{HashMap, HashSet};

use indexmap::IndexSet;

use crate::error::{Error, Result};
use crate::ir::roles::ACCUM_BUFFER_SUFFIX;
use crate::ir::{Graph, Model, Origin, TensorId};
use crate::ops::{self, Train};

/// onnxruntime's gradient builder calls weight `w`'s gradient `w_grad`.
const GRADIENT_SUFFIX: &str = "_grad";

/// One accumulator of the training graph, what ties its buffer to a
/// weight, and the weight it belongs to when that is decided.
#[derive(Clone, Debug)]
pub struct Accumulation {
    pub node: String,
    pub op: String,
    pub buffer: String,
    pub gradient: String,
    /// The weight whose gradient flows into the accumulator.
    pub gradient_of: Option<String>,
    /// The weight the buffer's name names (`<w>_grad.accumulation.buffer`).
    pub named_for: Option<String>,
    /// A per-weight optimizer node that reads the buffer: (node, weight).
    pub read_by: Option<(String, String)>,
    /// The weight whose buffer this is; `None` when nothing ties it to
    /// one or the ties disagree.
    pub weight: Option<String>,
}

/// Tie every accumulator's buffer to its weight. The accumulator that
/// writes a weight's buffer must accumulate that weight's gradient. Edges
/// alone cannot say whose gradient a tensor is (a bias's gradient, a
/// ReduceSum of the output's gradient, never reads the bias), so the
/// gradient flowing in is known by the name onnxruntime gives it,
/// `<w>_grad`, and the buffer's name must agree. A buffer named for no
/// weight is tied by wiring when the optimizer graph wires it: a per-weight
/// `SGD(w, buffer)` for the weight whose gradient it accumulates. A
/// sequence optimizer takes every buffer in one list and ties none, so
/// there the name decides, as it does for onnxruntime's training API and
/// the harness.
pub fn accumulations(model: &Model) -> Vec<Accumulation> {
    let g = &model.graph;
    let accumulators: Vec<_> = g.nodes().filter(|(_, n)| ops::of(n).train == Train::Accumulator).collect();
    let buffers: HashSet<&str> = accumulators.iter().filter_map(|(_, n)| n.input(0)).map(|t| g.name_of(t)).collect();
    // A weight is a graph input other than a buffer.
    let weight = |name: &str| -> Option<String> {
        let t = g.id(name)?;
        (g.tensor(t).origin == Origin::Input && !buffers.contains(name)).then(|| name.to_string())
    };
    let optimizer_sgd = model.optimizer.as_ref().map(sgd_nodes).unwrap_or_default();
    // The first optimizer node reading each gradient (a table: a long
    // step has thousands of both).
    let mut reader: HashMap<&str, &SgdNode> = HashMap::new();
    for s in &optimizer_sgd {
        reader.entry(s.gradient.as_str()).or_insert(s);
    }
    accumulators
        .iter()
        .filter_map(|(_, n)| {
            let (buffer, gradient) = (g.name_of(n.input(0)?).to_string(), g.name_of(n.input(1)?).to_string());
            let gradient_of = gradient.strip_suffix(GRADIENT_SUFFIX).and_then(weight);
            let named_for = buffer.strip_suffix(ACCUM_BUFFER_SUFFIX).and_then(weight);
            let read_by = reader.get(buffer.as_str()).and_then(|s| weight(&s.weight).map(|w| (s.node.clone(), w)));
            let wired = read_by.as_ref().map(|(_, w)| w.clone());
            let owner = match (&gradient_of, &named_for) {
                (Some(a), Some(b)) => (a == b).then(|| a.clone()),
                (Some(a), None) => wired.filter(|w| w == a),
                (None, Some(b)) => Some(b.clone()),
                (None, None) => wired,
            };
            Some(Accumulation {
                node: n.name.clone(),
                op: n.op.clone(),
                buffer,
                gradient,
                gradient_of,
                named_for,
                read_by,
                weight: owner,
            })
        })
        .collect()
}

fn quoted<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    names.into_iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
}

/// Assert the pairing of weights and gradient buffers in the training
/// graph: every weight whose gradient is accumulated has exactly one
/// buffer, every buffer belongs to one weight, and the buffers sit in the
/// graph inputs in the order of their weights (the harness takes weight
/// `i` and buffer `i` by index). Errors name the tensors that do not pair.
pub fn check_pairing(model: &Model) -> Result<()> {
    let g = &model.graph;
    let acc = accumulations(model);
    if acc.is_empty() {
        return Ok(());
    }
    let input_at: HashMap<TensorId, usize> = g.inputs.iter().enumerate().map(|(k, &t)| (t, k)).collect();
    let position = |name: &str| g.id(name).and_then(|t| input_at.get(&t).copied());

    // W: every weight something ties to an accumulator, in graph order.
    let mut weights: IndexSet<String> = IndexSet::new();
    for a in &acc {
        for w in [&a.weight, &a.gradient_of, &a.named_for].into_iter().flatten() {
            weights.insert(w.clone());
        }
    }
    let mut weights: Vec<String> = weights.into_iter().collect();
    weights.sort_by_key(|w| position(w));
    let mut of_weight: HashMap<&str, Vec<&Accumulation>> = HashMap::new();
    for a in &acc {
        if let Some(w) = &a.weight {
            of_weight.entry(w.as_str()).or_default().push(a);
        }
    }

    // Exactly one buffer per weight.
    for w in &weights {
        let mine = of_weight.get(w.as_str()).map(Vec::as_slice).unwrap_or_default();
        if mine.len() > 1 {
            let bufs: Vec<String> = mine.iter().map(|a| a.buffer.clone()).collect();
            return Err(Error::Pairing {
                weights: vec![w.clone()],
                detail: format!(
                    "trainable weight '{w}' has {} gradient buffers, {} (written by {}): a weight accumulates its \
                     gradient into exactly one",
                    mine.len(),
                    quoted(&bufs),
                    quoted(&mine.iter().map(|a| a.node.clone()).collect::<Vec<_>>())
                ),
                buffers: bufs,
            });
        }
    }

    let stray: Vec<&Accumulation> = acc.iter().filter(|a| a.weight.is_none()).collect();
    let sequence = model.optimizer.as_ref().and_then(|og| {
        og.nodes().find(|(_, n)| ops::of(n).train == Train::SgdSequence).map(|(_, n)| (n.op.clone(), n.name.clone()))
    });
    let optimizer_sgd = model.optimizer.as_ref().map(sgd_nodes).unwrap_or_default();
    let without: Vec<String> = weights.iter().filter(|w| !of_weight.contains_key(w.as_str())).cloned().collect();
    if !stray.is_empty() || !without.is_empty() {
        let paired = acc.len() - stray.len();
        let mut detail = format!(
            "the training graph's trainable weights and gradient-accumulation buffers do not pair up: W = {} \
             trainable weights, NG = {paired} gradient buffers paired with them ({} accumulated in all)",
            weights.len(),
            acc.len()
        );
        if !without.is_empty() {
            detail += &format!("; no gradient buffer for {}", quoted(&without));
            let taken: HashSet<&str> = acc.iter().map(|a| a.buffer.as_str()).collect();
            let expected: Vec<String> = without
                .iter()
                .map(|w| format!("{w}{ACCUM_BUFFER_SUFFIX}"))
                .filter(|b| !taken.contains(b.as_str()))
                .collect();
            if !expected.is_empty() {
                detail += &format!(" (expected {})", quoted(&expected));
            }
        }
        for a in &stray {
            let why = match (&a.gradient_of, &a.named_for) {
                (Some(w), Some(n)) => format!(
                    "{} '{}' adds '{}', the gradient of '{w}', into it, but its name makes it the buffer of '{n}'",
                    a.op, a.node, a.gradient
                ),
                (Some(w), None) => {
                    let wiring = match (&a.read_by, &sequence) {
                        (Some((node, other)), _) => format!("optimizer node '{node}' reads it for '{other}'"),
                        (None, Some((op, node))) => format!(
                            "the optimizer's {op} '{node}' takes every buffer in one sequence, which ties none to a \
                             weight: there the name does"
                        ),
                        (None, None) => match optimizer_sgd.iter().find(|s| s.weight == *w) {
                            Some(s) => {
                                format!("optimizer node '{}' updates '{w}' from '{}', not from it", s.node, s.gradient)
                            }
                            None => format!("no optimizer node reads it for '{w}'"),
                        },
                    };
                    format!(
                        "{} '{}' adds '{}', the gradient of '{w}', into it, but it is not named \
                         '{w}{ACCUM_BUFFER_SUFFIX}' and {wiring}",
                        a.op, a.node, a.gradient
                    )
                }
                _ => format!(
                    "{} '{}' adds '{}' into it, and neither that gradient's name ('<weight>{GRADIENT_SUFFIX}'), the \
                     buffer's ('<weight>{ACCUM_BUFFER_SUFFIX}') nor an optimizer node reading it names a weight",
                    a.op, a.node, a.gradient
                ),
            };
            detail += &format!("; buffer '{}' pairs with no weight: {why}", a.buffer);
        }
        return Err(Error::Pairing {
            weights: without,
            buffers: stray.iter().map(|a| a.buffer.clone()).collect(),
            detail,
        });
    }

    // The buffers, in graph-input order, sit in the order of their weights.
    let mut in_graph: Vec<&Accumulation> = acc.iter().filter(|a| position(&a.buffer).is_some()).collect();
    in_graph.sort_by_key(|a| position(&a.buffer));
    let mut by_weight = in_graph.clone();
    by_weight.sort_by_key(|a| a.weight.as_deref().and_then(position));
    if let Some(i) = in_graph.iter().zip(&by_weight).position(|(a, b)| a.buffer != b.buffer) {
        let (here, due) = (in_graph[i], by_weight[i]);
        let misplaced = in_graph.iter().zip(&by_weight).filter(|(a, b)| a.buffer != b.buffer).count();
        let w = |a: &Accumulation| a.weight.clone().unwrap_or_default();
        return Err(Error::Pairing {
            weights: vec![w(here), w(due)],
            buffers: vec![here.buffer.clone(), due.buffer.clone()],
            detail: format!(
                "gradient buffers are not in the order of their weights: the graph inputs list '{}' (the buffer of \
                 '{}') as gradient buffer {i}, but weight '{}' comes before '{}', so buffer {i} should be '{}'; \
                 {misplaced} buffers are out of place, and the harness pairs weight i with buffer i, so those \
                 weights would move along each other's gradients",
                here.buffer,
                w(here),
                w(due),
                w(here),
                due.buffer
            ),
        });
    }
    Ok(())
}

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
/// every accumulator's buffer is a trainable weight's, and accumulated
/// gradients have an optimizer graph to consume them.
pub fn structure(model: &Model, trainable: &[String]) -> Result<Structure> {
    let g = &model.graph;
    let accumulators: Vec<Accumulator> = g
        .nodes()
        .filter(|(_, n)| ops::of(n).train == Train::Accumulator)
        .filter_map(|(_, n)| Some(Accumulator { node: n.name.clone(), buffer: g.name_of(n.input(0)?).to_string() }))
        .collect();
    // `check_pairing` tied every buffer to its weight when lowering.
    for a in &accumulators {
        let owner = model.roles.params.iter().find(|p| p.grad_buffer.as_deref() == Some(a.buffer.as_str()));
        if !owner.is_some_and(|p| trainable.contains(&p.name)) {
            return Err(Error::binding(format!(
                "InPlaceAccumulatorV2 '{}' accumulates into '{}', which is the gradient buffer of no trainable weight",
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
