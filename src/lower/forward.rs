//! The forward part of a training graph: the values the forward pass
//! hands to the loss, and the nodes, graph inputs and constants that
//! compute them. What is left out is the loss, the backward pass, gradient
//! accumulation and the optimizer, with the inputs only they read (labels,
//! gradient buffers, `lazy_reset_grad`). `deploygen triage` derives the
//! inference variant of a training model from it (docs/triage.md, "Re-run").
//!
//! Which node is which comes from the registry (`ops::of`) and the roles
//! of `roles.rs`, never from names:
//!
//! - *training values*: the labels, gradient buffers, the reset flag and
//!   every other input that is neither data nor a parameter, plus what
//!   loss, gradient, accumulator and optimizer nodes write, and everything
//!   computed from those;
//! - *forward values*: all the others;
//! - *forward outputs*: the forward values a node on the way to the loss
//!   reads where that node computes a training value (a loss operator's
//!   scores; the prediction in onnxruntime's composed `Sub`/`Pow`/
//!   `ReduceMean` MSE), and forward values that are graph outputs.

use std::collections::{BTreeSet, HashMap, HashSet};

use petgraph::stable_graph::NodeIndex;

use crate::error::{Error, Result};
use crate::ir::{Model, Origin, Role, TensorId};
use crate::ops::{self, Train};

/// The forward part of a training graph.
#[derive(Clone, Debug)]
pub struct Forward {
    /// The forward outputs, in tensor (file) order.
    pub outputs: Vec<TensorId>,
    /// Nodes computing them, in schedule order.
    pub nodes: Vec<NodeIndex>,
    /// Graph inputs those nodes read, in graph-input order.
    pub inputs: Vec<TensorId>,
    /// Constants those nodes read: initializers and constant-folded
    /// values, in tensor order.
    pub constants: Vec<TensorId>,
    /// Graph inputs left out, with their roles, in graph-input order.
    pub dropped_inputs: Vec<(TensorId, Option<Role>)>,
    /// How many nodes are left out.
    pub dropped_nodes: usize,
    /// Kept nodes that normalise with batch statistics (training-mode
    /// BatchNorm): they stay as the training step computes them.
    pub batch_stats: Vec<NodeIndex>,
}

/// Roles of the graph inputs a forward value may read.
fn forward_role(role: Option<Role>) -> bool {
    matches!(role, Some(Role::Data | Role::Param | Role::Frozen))
}

/// Find the forward part of a training model's main graph.
pub fn forward(model: &Model) -> Result<Forward> {
    let g = &model.graph;
    let err = |tensor: Option<String>, detail: String| Error::Derive { path: model.path.clone(), tensor, detail };
    if !model.roles.is_training() {
        return Err(err(None, "it is an inference model already".into()));
    }
    let role = |t: TensorId| model.roles.role(g.name_of(t));
    let mut producer: HashMap<TensorId, NodeIndex> = HashMap::new();
    for (n, node) in g.nodes() {
        for &t in node.outputs.iter().flatten() {
            producer.insert(t, n);
        }
    }

    // Training values, forward through the schedule.
    let mut training: HashSet<TensorId> = HashSet::new();
    for &t in &g.inputs {
        if g.tensor(t).sequence || !forward_role(role(t)) {
            training.insert(t);
        }
    }
    let mut training_node: HashSet<NodeIndex> = HashSet::new();
    for (n, node) in g.nodes() {
        let def = ops::of(node);
        if def.gradient || def.train != Train::None || node.inputs.iter().flatten().any(|t| training.contains(t)) {
            training_node.insert(n);
            training.extend(node.outputs.iter().flatten());
        }
    }

    // The nodes on the way to the loss: the loss value's producer and
    // every loss operator (the log-prob-only form computes no loss value),
    // with their ancestors.
    let mut seeds: Vec<NodeIndex> =
        g.nodes().filter(|(_, node)| ops::of(node).train == Train::Loss).map(|(n, _)| n).collect();
    if let Some(p) = model.roles.loss.as_deref().and_then(|l| g.id(l)).and_then(|l| producer.get(&l)) {
        seeds.push(*p);
    }
    let to_loss = ancestors(g, &producer, seeds);

    let is_forward_value =
        |t: TensorId| !training.contains(&t) && g.tensor(t).origin == Origin::Value && producer.contains_key(&t);
    let mut outputs: BTreeSet<TensorId> = BTreeSet::new();
    for &n in &to_loss {
        if training_node.contains(&n) {
            outputs.extend(g.node(n).inputs.iter().flatten().copied().filter(|&t| is_forward_value(t)));
        }
    }
    for &t in &g.outputs {
        if role(t) == Some(Role::Output) && is_forward_value(t) {
            outputs.insert(t);
        }
    }
    if outputs.is_empty() {
        return Err(err(
            model.roles.loss.clone(),
            match &model.roles.loss {
                Some(l) => format!(
                    "no forward value feeds the loss '{l}': every value on the way to it is computed from labels or \
                     gradients, or none is computed by the forward pass"
                ),
                None => "the graph has no loss operator and no loss value to find the forward outputs by".into(),
            },
        ));
    }

    // The forward slice: the outputs' ancestors.
    let kept = ancestors(g, &producer, outputs.iter().filter_map(|t| producer.get(t).copied()).collect());
    let mut read: BTreeSet<TensorId> = BTreeSet::new();
    for &n in &kept {
        read.extend(g.node(n).inputs.iter().flatten().copied());
    }
    for &t in &read {
        // Ancestors of forward values are forward values; this holds by
        // construction and is checked rather than assumed.
        if training.contains(&t) {
            return Err(err(
                Some(g.name_of(t).to_string()),
                format!("forward value depends on the training value '{}'", g.name_of(t)),
            ));
        }
    }
    let inputs: Vec<TensorId> = g.inputs.iter().copied().filter(|t| read.contains(t)).collect();
    let constants: Vec<TensorId> =
        read.iter().copied().filter(|&t| matches!(g.tensor(t).origin, Origin::Initializer | Origin::Folded)).collect();
    let dropped_inputs = g.inputs.iter().copied().filter(|t| !read.contains(t)).map(|t| (t, role(t))).collect();
    let nodes: Vec<NodeIndex> = g.schedule.iter().copied().filter(|n| kept.contains(n)).collect();
    let batch_stats =
        nodes.iter().copied().filter(|&n| ops::of(g.node(n)).batch_stats.is_some_and(|f| f(g.node(n)))).collect();
    Ok(Forward {
        outputs: outputs.into_iter().collect(),
        dropped_nodes: g.node_count() - nodes.len(),
        nodes,
        inputs,
        constants,
        dropped_inputs,
        batch_stats,
    })
}

/// `seeds` and every node they depend on.
fn ancestors(
    g: &crate::ir::Graph,
    producer: &HashMap<TensorId, NodeIndex>,
    seeds: Vec<NodeIndex>,
) -> HashSet<NodeIndex> {
    let mut seen: HashSet<NodeIndex> = HashSet::new();
    let mut stack = seeds;
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        for t in g.node(n).inputs.iter().flatten() {
            if let Some(&p) = producer.get(t) {
                stack.push(p);
            }
        }
    }
    seen
}
