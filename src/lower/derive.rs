//! The training step of an inference model (docs/training.md): forward, loss,
//! backward and optimizer, derived from the training spec and each
//! operator's gradient rule (`ops::grad`), as the same IR that
//! onnxruntime-training's artifacts give — weights as graph inputs, one
//! `InPlaceAccumulatorV2` per trainable weight into
//! `<w>_grad.accumulation.buffer` under `lazy_reset_grad`, and an optimizer
//! graph with one update per weight — so binding, planning and emission
//! treat it like imported artifacts.
//!
//! Backward stops where nothing trainable lies behind: only values that
//! depend on a trainable weight get gradients, frozen weights stay
//! constants (no gradient, no buffer).

use std::collections::{HashMap, HashSet};

use crate::error::{Error, Result};
use crate::ir::roles::ACCUM_BUFFER_SUFFIX;
use crate::ir::train::{Derived, Loss, Optimizer, TrainSpec};
use crate::ir::{DType, Graph, Model, Origin, TensorId, TensorType};
use crate::ops;
use crate::ops::grad::{self, Builder, GradCtx, LossKind, Update};
use petgraph::stable_graph::NodeIndex;

/// The reset flag onnxruntime names `lazy_reset_grad`.
pub const LAZY_RESET: &str = "lazy_reset_grad";

/// A training spec whose selection does not fit the graph: the output the
/// loss reads, or the weights that train.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    #[error("logits = '{name}' is not a graph output (outputs: {})", .outputs.join(", "))]
    NotAnOutput { name: String, outputs: Vec<String> },
    /// The named output is not float: a loss reads float scores.
    #[error(
        "logits = '{name}' is a {dtype} output; the loss reads float scores (float outputs: {})",
        if .floats.is_empty() { "none".to_string() } else { .floats.join(", ") }
    )]
    NotFloat { name: String, dtype: crate::ir::DType, floats: Vec<String> },
    /// No `logits` given, and not exactly one float output to read.
    #[error(
        "the graph has {floats} float outputs ({}): name the one the loss reads with 'logits'",
        .outputs.join(", ")
    )]
    WhichOutput { floats: usize, outputs: Vec<String> },
    #[error("glob '{glob}' matches no float initializer (they are: {})", .initializers.join(", "))]
    NoMatch { glob: String, initializers: Vec<String> },
}

/// Derive the training step in place. The model must be an inference
/// graph (typed); afterwards it is a training model to every later stage.
pub fn derive(model: &mut Model, spec: &TrainSpec) -> Result<Derived> {
    let err = |detail: String| Error::model(format!("{}: {detail}", spec.source));
    let scores = logits(&model.graph, spec).map_err(|e| err(e.to_string()))?;
    let forward_nodes = model.graph.node_count();
    let (floats, weights) = candidates(&model.graph, spec).map_err(|e| err(e.to_string()))?;
    let logits = model.graph.name_of(scores).to_string();
    let shared = shared_weight_warnings(&model.graph, &weights);
    model.graph.warnings.extend(shared);
    let mut d = Derived { spec: Some(spec.clone()), logits, forward_nodes, ..Derived::default() };

    let mut b = Builder::new(&mut model.graph);
    computed_type(&mut b, scores)?;
    let labels = labels_input(&mut b, spec, scores)?;
    let kind = match spec.loss {
        Loss::CrossEntropy => LossKind::CrossEntropy,
        Loss::Mse => LossKind::Mse,
    };
    let (loss, d_scores) = grad::loss(&mut b, kind, scores, labels)?;
    let grads = backward(&mut b, &weights, scores, d_scores)?;

    // Weights with a gradient train; the others stay constants.
    let trainable: Vec<TensorId> = weights.iter().copied().filter(|w| grads.contains_key(w)).collect();
    if trainable.is_empty() {
        return Err(err("no weight trains: the selection leaves no float initializer with a path to the loss".into()));
    }
    let reset = b.input(LAZY_RESET, TensorType::new(DType::Bool, &[1]))?;
    let mut flags = vec![];
    for &w in &trainable {
        let name = b.graph.name_of(w).to_string();
        let ty = b.ty(w).clone();
        d.gradient_buffer_bytes += ty.bytes().unwrap_or(0) as u64;
        let buf = b.input(&format!("{name}{ACCUM_BUFFER_SUFFIX}"), ty)?;
        flags.push(grad::accumulate(&mut b, buf, grads[&w], reset, &format!("{name}_grad.accumulation.out"))?);
    }
    reserved_names(b.graph, &trainable, spec)?;
    d.nodes_added = b.added.len();
    let state_inputs = state_inputs(b.graph);
    rename_gradients(b.graph, &trainable, &grads);
    let g = &mut model.graph;
    // Their initializers stay their initial values (`Model::initial`).
    for &w in trainable.iter().chain(&state_inputs) {
        let t = g.tensor_mut(w);
        t.origin = Origin::Input;
        if let Some(v) = t.data.take() {
            model.initial.insert(t.name.clone(), std::sync::Arc::unwrap_or_clone(v));
        }
    }
    g.initializers.retain(|t| !trainable.contains(t) && !state_inputs.contains(t));
    // Weights before the buffers and the flag, as onnxruntime lists them.
    let added: Vec<TensorId> = g.inputs.drain(g.inputs.len() - trainable.len() - 1..).collect();
    g.inputs.extend(trainable.iter().chain(&state_inputs));
    g.inputs.extend(added.iter().skip(1).chain(added.first()));
    g.outputs = std::iter::once(loss).chain(flags).collect();
    g.rebuild_edges();
    g.compute_schedule()?;
    // Derived nodes count as the model's own.
    g.onnx_nodes = g.node_count();

    d.trainable = trainable.iter().map(|&w| g.name_of(w).to_string()).collect();
    d.frozen = floats.iter().filter(|w| !trainable.contains(w)).map(|&w| g.name_of(w).to_string()).collect();
    d.state_inputs = state_inputs.iter().map(|&w| g.name_of(w).to_string()).collect();
    let (og, state_bytes) = optimizer(g, &trainable, spec)?;
    d.optimizer_nodes = og.node_count();
    d.optimizer_state_bytes = state_bytes;
    model.optimizer = Some(og);
    model.optimizer_path = Some(model.dir.join("train.toml"));
    Ok(d)
}

/// The graph output the loss reads: `logits`, else the only float output.
fn logits(g: &Graph, spec: &TrainSpec) -> std::result::Result<TensorId, SelectionError> {
    let outputs: Vec<String> = g.outputs.iter().map(|&t| g.name_of(t).to_string()).collect();
    if let Some(name) = &spec.logits {
        let t = g
            .outputs
            .iter()
            .copied()
            .find(|&t| g.name_of(t) == name)
            .ok_or_else(|| SelectionError::NotAnOutput { name: name.clone(), outputs })?;
        let dtype = g.tensor(t).ty.dtype;
        if !dtype.is_float() {
            let floats = g
                .outputs
                .iter()
                .filter(|&&o| g.tensor(o).ty.dtype.is_float())
                .map(|&o| g.name_of(o).to_string())
                .collect();
            return Err(SelectionError::NotFloat { name: name.clone(), dtype, floats });
        }
        return Ok(t);
    }
    let float: Vec<TensorId> = g.outputs.iter().copied().filter(|&t| g.tensor(t).ty.dtype.is_float()).collect();
    match float.as_slice() {
        [one] => Ok(*one),
        _ => Err(SelectionError::WhichOutput { floats: float.len(), outputs }),
    }
}

/// The scores get the type their node computes: as a graph output they
/// kept a declared shape that may differ by size-1 dims, and the loss
/// reads them as computed.
fn computed_type(b: &mut Builder, scores: TensorId) -> Result<()> {
    if let Some(p) = b.graph.producer(scores) {
        let node = b.graph.dag[p].clone();
        b.type_outputs(&node)?;
    }
    Ok(())
}

/// The float initializers, and those the selection trains, in initializer
/// order; each glob must match some initializer.
type Candidates = (Vec<TensorId>, Vec<TensorId>);

fn candidates(g: &Graph, spec: &TrainSpec) -> std::result::Result<Candidates, SelectionError> {
    let float: Vec<TensorId> = g
        .initializers
        .iter()
        .copied()
        .filter(|&t| g.tensor(t).ty.dtype == DType::F32 && g.tensor(t).origin == Origin::Initializer)
        .collect();
    for pat in spec.globs() {
        if !float.iter().any(|&t| crate::ir::train::glob(pat, g.name_of(t))) {
            let initializers = float.iter().map(|&t| g.name_of(t).to_string()).collect();
            return Err(SelectionError::NoMatch { glob: pat.clone(), initializers });
        }
    }
    // Running statistics are state the step updates, never weights.
    let stats = running_stats(g);
    let chosen = float.iter().copied().filter(|t| !stats.contains(t) && spec.trains(g.name_of(*t))).collect();
    Ok((float, chosen))
}

/// A trained weight read by several nodes ties them: every reader's
/// gradient updates the one tensor. Models tie on purpose (embeddings),
/// but an exporter that merges initializers with equal values ties
/// layers the source model keeps apart, so each one is named.
fn shared_weight_warnings(g: &Graph, weights: &[TensorId]) -> Vec<String> {
    let all = g.readers();
    let mut out = vec![];
    for &w in weights {
        let readers = all.get(&w).map(Vec::as_slice).unwrap_or_default();
        if readers.len() < 2 {
            continue;
        }
        let names: Vec<String> = readers.iter().map(|&n| g.display_node(n)).collect();
        out.push(format!(
            "trainable weight '{}' is read by {} nodes ({}): training updates them as one tensor; \
             an exporter that merges equal initializers does this (docs/training.md, \"Exporting from PyTorch\")",
            g.name_of(w),
            readers.len(),
            names.join(", ")
        ));
    }
    out
}

/// The labels graph input: class indices `[N, d…]` for cross-entropy,
/// the scores' type for MSE.
fn labels_input(b: &mut Builder, spec: &TrainSpec, scores: TensorId) -> Result<TensorId> {
    let s = b.shape(scores)?;
    let ty = match spec.loss {
        Loss::Mse => TensorType::new(DType::F32, &s),
        Loss::CrossEntropy => {
            if s.len() < 2 {
                return Err(Error::model(format!(
                    "{}: cross-entropy needs scores [N, C, …], but '{}' is {s:?}",
                    spec.source,
                    b.graph.name_of(scores)
                )));
            }
            let mut l = vec![s[0]];
            l.extend_from_slice(&s[2..]);
            TensorType::new(DType::I64, &l)
        }
    };
    b.input(&spec.labels, ty)
}

/// Reverse mode from `d_scores` over the forward nodes; returns each
/// trainable weight's gradient.
fn backward(
    b: &mut Builder,
    weights: &[TensorId],
    scores: TensorId,
    d_scores: TensorId,
) -> Result<HashMap<TensorId, TensorId>> {
    let forward: Vec<NodeIndex> = b.graph.schedule.clone();
    let needs = needing_gradient(b.graph, &forward, weights);
    let mut contrib: HashMap<TensorId, Vec<TensorId>> = HashMap::new();
    contrib.insert(scores, vec![d_scores]);
    for &n in forward.iter().rev() {
        let node = b.graph.dag[n].clone();
        let need: Vec<bool> = node.inputs.iter().map(|t| t.is_some_and(|t| needs.contains(&t))).collect();
        if !need.iter().any(|&x| x) {
            continue;
        }
        let mut dy = vec![];
        for t in &node.outputs {
            dy.push(match t {
                Some(t) => total(b, &mut contrib, *t)?,
                None => None,
            });
        }
        if dy.iter().all(Option::is_none) {
            continue;
        }
        let Some(rule) = grad::rule(ops::of(&node)) else {
            let behind = behind_names(b.graph, &node, &needs, weights);
            return Err(Error::node(
                &node,
                format!(
                    "operator {} has no gradient rule, and trainable weights lie behind it ({behind}): freeze them \
                     ('frozen' in train.toml) or replace the operator",
                    node.op
                ),
            ));
        };
        let mut ctx = GradCtx::new(b, n, dy, need.clone());
        ctx.fit_outputs()?;
        rule(&mut ctx)?;
        let dx = ctx.finish();
        for (i, t) in node.inputs.iter().enumerate() {
            match (t, dx.get(i).copied().flatten()) {
                (Some(t), Some(g)) if need[i] => contrib.entry(*t).or_default().push(g),
                (Some(t), None) if need[i] && weights.contains(t) => {}
                _ => {}
            }
        }
    }
    training_mode(b, &forward)?;
    let mut out = HashMap::new();
    for &w in weights {
        if let Some(g) = total(b, &mut contrib, w)? {
            out.insert(w, g);
        }
    }
    Ok(out)
}

/// Nodes that normalise with batch statistics in training (BatchNorm)
/// train in that mode even where no gradient passes (a frozen region), as
/// in onnxruntime's training graph: their rule runs with nothing asked.
fn training_mode(b: &mut Builder, forward: &[NodeIndex]) -> Result<()> {
    for &n in forward {
        let node = &b.graph.dag[n];
        let def = ops::of(node);
        let (Some(stats), Some(rule)) = (def.batch_stats, grad::rule(def)) else { continue };
        if stats(node) {
            continue;
        }
        let (outs, ins) = (node.outputs.len(), node.inputs.len());
        let mut ctx = GradCtx::new(b, n, vec![None; outs], vec![false; ins]);
        rule(&mut ctx)?;
    }
    Ok(())
}

/// The gradient of `t`: its one contribution, or their `Sum`.
fn total(b: &mut Builder, contrib: &mut HashMap<TensorId, Vec<TensorId>>, t: TensorId) -> Result<Option<TensorId>> {
    let Some(parts) = contrib.get(&t) else { return Ok(None) };
    if parts.len() == 1 {
        return Ok(Some(parts[0]));
    }
    let name = format!("{}_grad", b.graph.name_of(t));
    let sum = b.op(&format!("{name}/Sum"), "Sum", &parts.clone(), &name, vec![])?;
    contrib.insert(t, vec![sum]);
    Ok(Some(sum))
}

/// Tensors computed from a trainable weight (and the weights).
fn needing_gradient(g: &Graph, forward: &[NodeIndex], weights: &[TensorId]) -> HashSet<TensorId> {
    let mut needs: HashSet<TensorId> = weights.iter().copied().collect();
    for &n in forward {
        let node = &g.dag[n];
        if node.inputs.iter().flatten().any(|t| needs.contains(t)) {
            needs.extend(node.outputs.iter().flatten().filter(|&&t| g.tensor(t).ty.dtype.is_float()));
        }
    }
    needs
}

/// The trainable weights upstream of a node, for the refusal message.
fn behind_names(g: &Graph, node: &crate::ir::Node, needs: &HashSet<TensorId>, weights: &[TensorId]) -> String {
    let mut seen: HashSet<TensorId> = HashSet::new();
    let mut stack: Vec<TensorId> = node.inputs.iter().flatten().copied().filter(|t| needs.contains(t)).collect();
    let mut found = vec![];
    while let Some(t) = stack.pop() {
        if !seen.insert(t) {
            continue;
        }
        if weights.contains(&t) {
            found.push(g.name_of(t).to_string());
        }
        if let Some(p) = g.producer(t) {
            stack.extend(g.dag[p].inputs.iter().flatten().copied().filter(|t| needs.contains(t)));
        }
    }
    found.sort();
    let more = found.len().saturating_sub(4);
    let mut s = found.into_iter().take(4).map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// The initializers that nodes normalising with batch statistics keep as
/// running mean and variance (inputs 3 and 4).
fn running_stats(g: &Graph) -> HashSet<TensorId> {
    let mut out = HashSet::new();
    for (_, n) in g.nodes() {
        if ops::of(n).batch_stats.is_some() {
            out.extend([3, 4].iter().filter_map(|&slot| n.input(slot)));
        }
    }
    out
}

/// Initializers a node updates as training state (BatchNorm running
/// statistics in training mode): they become graph inputs so the step's
/// write-back reaches them.
fn state_inputs(g: &Graph) -> Vec<TensorId> {
    let mut out = vec![];
    for (_, n) in g.nodes() {
        let def = ops::of(n);
        if def.batch_stats.is_some_and(|f| f(n)) {
            for slot in [3, 4] {
                if let Some(t) = n.input(slot).filter(|&t| g.tensor(t).origin == Origin::Initializer) {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// The names the step gives each trainable weight's update and optimizer
/// state are matched by name later (the update is copied over its weight):
/// a forward tensor of such a name would be taken for one.
fn reserved_names(g: &Graph, trainable: &[TensorId], spec: &TrainSpec) -> Result<()> {
    let state: Vec<&str> = optimizer_update(spec).state().iter().map(|(what, _, _)| *what).collect();
    for &w in trainable {
        let name = g.name_of(w);
        let mut names = vec![format!("{name}_updated")];
        names.extend(state.iter().map(|what| format!("{name}.{what}")));
        if let Some(clash) = names.iter().find(|n| g.id(n).is_some()) {
            return Err(Error::model(format!(
                "{}: the graph has a tensor '{clash}', the name the training step gives to trainable weight \
                 '{name}''s update or optimizer state: rename that tensor in the model, or freeze '{name}'",
                spec.source
            )));
        }
    }
    Ok(())
}

/// Each trainable weight's gradient is called `<w>_grad`, the name
/// onnxruntime gives it (and pairing reads).
fn rename_gradients(g: &mut Graph, trainable: &[TensorId], grads: &HashMap<TensorId, TensorId>) {
    let mut rename: HashMap<TensorId, String> = HashMap::new();
    for &w in trainable {
        let want = format!("{}_grad", g.name_of(w));
        let t = grads[&w];
        if g.name_of(t) != want && g.id(&want).is_none() && !rename.contains_key(&t) {
            rename.insert(t, want);
        }
    }
    if rename.is_empty() {
        return;
    }
    g.tensors.rename(&rename);
}

/// The spec's optimizer as an update rule.
fn optimizer_update(spec: &TrainSpec) -> Update {
    match spec.optimizer {
        Optimizer::Sgd => Update::Sgd { lr: spec.learning_rate },
        Optimizer::Momentum => {
            Update::Momentum { lr: spec.learning_rate, momentum: spec.momentum, weight_decay: spec.weight_decay }
        }
        Optimizer::Adamw => Update::AdamW {
            lr: spec.learning_rate,
            beta1: spec.beta1,
            beta2: spec.beta2,
            epsilon: spec.epsilon,
            weight_decay: spec.weight_decay,
        },
    }
}

/// The optimizer graph: one update per trainable weight, reading its
/// accumulation buffer; state tensors are inputs of this graph only.
fn optimizer(main: &Graph, trainable: &[TensorId], spec: &TrainSpec) -> Result<(Graph, u64)> {
    let u = optimizer_update(spec);
    let mut og = Graph { name: "optimizer".into(), opsets: main.opsets.clone(), ..Graph::default() };
    let mut state_bytes = 0u64;
    let mut b = Builder::new(&mut og);
    for &w in trainable {
        let name = main.name_of(w).to_string();
        let ty = main.tensor(w).ty.clone();
        let wi = b.input(&name, ty.clone())?;
        let gi = b.input(&format!("{name}{ACCUM_BUFFER_SUFFIX}"), ty.clone())?;
        let mut state = vec![];
        for (what, dtype, full) in u.state() {
            let sty = if *full {
                TensorType::new(*dtype, &ty.shape().unwrap_or_default())
            } else {
                TensorType::new(*dtype, &[1])
            };
            state_bytes += sty.bytes().unwrap_or(0) as u64;
            state.push(b.input(&format!("{name}.{what}"), sty)?);
        }
        let out = grad::update(&mut b, u, wi, gi, &state, &format!("{name}_updated"))?;
        b.graph.outputs.push(out);
    }
    og.rebuild_edges();
    og.compute_schedule()?;
    og.onnx_nodes = og.node_count();
    Ok((og, state_bytes))
}
