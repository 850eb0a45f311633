//! Training roles, found from the graph alone: which inputs are data and
//! labels, which are trainable parameters, frozen parameters, gradient
//! buffers and the reset flag; which value is the loss; which outputs are
//! updated parameters. Pairings are by the accumulator/optimizer nodes'
//! slots and by name (`training::accumulations`) — never by position
//! arithmetic. The registry says which
//! node plays which part (`ops::Train`).

use indexmap::IndexMap;

use crate::ir::roles::ParamRoles;
use crate::ir::roles::ACCUM_OUT_SUFFIX;
use crate::ir::{Flavor, Graph, Model, Node, Origin, Role, Roles, TensorId};
use crate::ops::{self, Train};

use super::training;

/// Detect every role in a model.
pub fn detect(model: &Model) -> Roles {
    let g = &model.graph;
    // By name: a long step has thousands, each looked up by name.
    let mut params: IndexMap<String, ParamRoles> = IndexMap::new();
    let mut main: IndexMap<String, Role> = IndexMap::new();
    let lazy_reset = accumulation_roles(model, &mut params, &mut main);
    inline_sgd_roles(g, &mut params, &mut main);
    let optimizer = model.optimizer.as_ref().map(|og| optimizer_roles(og, &mut params)).unwrap_or_default();

    // Keep parameters in graph-input (or initializer) order.
    let position = |name: &str| g.id(name).map_or(usize::MAX, TensorId::index);
    let mut params: Vec<ParamRoles> = params.into_values().collect();
    params.sort_by_key(|p| position(&p.name));
    for p in &params {
        main.insert(p.name.clone(), Role::Param);
    }

    let flavor = flavor(model);
    let loss = find_loss(g, flavor, &main);
    if let Some(l) = &loss {
        main.insert(l.clone(), Role::Loss);
    }
    let labels = labels(g, loss.as_deref());
    input_roles(g, &labels, &mut main);

    Roles { flavor, main, optimizer, params, loss, lazy_reset }
}

/// The nodes of `g` that play `part` in training.
fn nodes_of(g: &Graph, part: Train) -> impl Iterator<Item = &Node> {
    g.nodes().filter(move |(_, n)| ops::of(n).train == part).map(|(_, n)| n)
}

/// Gradient accumulation (artifacts flavor): the accumulator's slots
/// name the buffer, the gradient and the reset flag; `training` ties
/// each buffer to its weight (by the gradient it accumulates, its name,
/// the optimizer's wiring). A weight whose gradient is accumulated is
/// trainable even when no buffer is tied to it (lowering refuses that).
/// Returns the reset flag's name.
fn accumulation_roles(
    model: &Model,
    params: &mut IndexMap<String, ParamRoles>,
    main: &mut IndexMap<String, Role>,
) -> Option<String> {
    let g = &model.graph;
    for a in training::accumulations(model) {
        let gradient = Some(a.gradient.clone());
        match (&a.weight, &a.gradient_of) {
            (Some(w), _) if !params.contains_key(w) => {
                let p = ParamRoles { name: w.clone(), grad_buffer: Some(a.buffer.clone()), gradient, updated: None };
                params.insert(w.clone(), p);
            }
            (None, Some(w)) if !params.contains_key(w) => {
                params.insert(w.clone(), ParamRoles { name: w.clone(), grad_buffer: None, gradient, updated: None });
            }
            _ => {}
        }
    }
    let mut lazy_reset = None;
    for n in nodes_of(g, Train::Accumulator) {
        let Some(buf) = n.input(0) else { continue };
        main.insert(g.name_of(buf).to_string(), Role::GradBuffer);
        if let Some(flag) = n.input(2) {
            if g.tensor(flag).origin == Origin::Input {
                main.insert(g.name_of(flag).to_string(), Role::LazyReset);
                lazy_reset = Some(g.name_of(flag).to_string());
            }
        }
        if let Some(out) = n.output(0) {
            main.insert(g.name_of(out).to_string(), Role::GradFlag);
        }
    }
    lazy_reset
}

/// Inline SGD (single-graph flavor): SGD(w, g) -> w_updated.
fn inline_sgd_roles(g: &Graph, params: &mut IndexMap<String, ParamRoles>, main: &mut IndexMap<String, Role>) {
    for n in nodes_of(g, Train::Sgd) {
        let Some(w) = n.input(0) else { continue };
        let name = g.name_of(w).to_string();
        let gradient = n.input(1).map(|t| g.name_of(t).to_string());
        let updated = n.output(0).map(|t| g.name_of(t).to_string());
        if let Some(u) = &updated {
            main.insert(u.clone(), Role::UpdatedParam);
        }
        match params.get_mut(&name) {
            Some(p) => p.updated = updated,
            None => {
                params.insert(name.clone(), ParamRoles { name, grad_buffer: None, gradient, updated });
            }
        }
    }
}

/// Per-parameter SGD in a separate optimizer graph pairs by input name.
fn optimizer_roles(og: &Graph, params: &mut IndexMap<String, ParamRoles>) -> IndexMap<String, Role> {
    let mut optimizer: IndexMap<String, Role> = IndexMap::new();
    for (_, n) in og.nodes() {
        match ops::of(n).train {
            Train::Sgd => {
                let (Some(w), Some(gr)) = (n.input(0), n.input(1)) else { continue };
                let (w, gr) = (og.name_of(w).to_string(), og.name_of(gr).to_string());
                optimizer.insert(w.clone(), Role::Param);
                optimizer.insert(gr.clone(), Role::GradBuffer);
                let updated = n.output(0).map(|t| og.name_of(t).to_string());
                if let Some(u) = &updated {
                    optimizer.insert(u.clone(), Role::UpdatedParam);
                }
                if let Some(p) = params.get_mut(&w) {
                    p.updated = updated;
                }
                for s in (2..n.inputs.len()).filter(|&s| ops::of(n).updates_state(s)) {
                    if let Some(t) = n.input(s) {
                        optimizer.insert(og.name_of(t).to_string(), Role::OptimizerState);
                    }
                }
            }
            Train::SgdSequence => {
                let slots = [Role::LearningRate, Role::ParamSequence, Role::GradSequence];
                for (i, role) in slots.iter().enumerate() {
                    if let Some(t) = n.input(i) {
                        optimizer.insert(og.name_of(t).to_string(), *role);
                    }
                }
            }
            _ => {}
        }
    }
    for &t in &og.inputs {
        let name = og.name_of(t);
        if !optimizer.contains_key(name) {
            let role = match name {
                "step" => Role::Step,
                "learning_rate" | "lr" => Role::LearningRate,
                _ if og.tensor(t).sequence => Role::OptimizerState,
                _ => Role::Other,
            };
            optimizer.insert(name.to_string(), role);
        }
    }
    for &t in &og.outputs {
        optimizer.entry(og.name_of(t).to_string()).or_insert(Role::Other);
    }
    optimizer
}

/// Training artifacts (accumulators, an optimizer graph, or gradient
/// operators alone), a training step (inline SGD), or inference.
fn flavor(model: &Model) -> Flavor {
    let g = &model.graph;
    let has_grad_ops = g.nodes().any(|(_, n)| ops::of(n).gradient);
    if nodes_of(g, Train::Accumulator).count() > 0 || model.optimizer.is_some() {
        Flavor::TrainingArtifacts
    } else if nodes_of(g, Train::Sgd).count() > 0 {
        Flavor::TrainingStep
    } else if has_grad_ops {
        Flavor::TrainingArtifacts
    } else {
        Flavor::Inference
    }
}

/// The loss: a loss operator's first output, else (ORT's composed MSE)
/// the first scalar graph output that is not an accumulation flag.
fn find_loss(g: &Graph, flavor: Flavor, main: &IndexMap<String, Role>) -> Option<String> {
    g.nodes()
        .find(|(_, n)| ops::of(n).train == Train::Loss)
        .filter(|(_, n)| !ops::loss::log_prob_only(g, n))
        .and_then(|(_, n)| n.output(0))
        .or_else(|| {
            (flavor != Flavor::Inference)
                .then(|| {
                    g.outputs.iter().copied().find(|&t| {
                        let name = g.name_of(t);
                        !name.ends_with(ACCUM_OUT_SUFFIX)
                            && main.get(name).is_none()
                            && g.tensor(t).ty.dtype.is_float()
                            && g.tensor(t).ty.numel() == Some(1)
                    })
                })
                .flatten()
        })
        .map(|t| g.name_of(t).to_string())
}

/// Labels: what the loss compares against.
fn labels(g: &Graph, loss: Option<&str>) -> Vec<TensorId> {
    let mut labels: Vec<TensorId> = Vec::new();
    for (_, n) in g.nodes() {
        let Some(slot) = ops::of(n).labels.and_then(|f| f(n)) else { continue };
        labels.extend(n.input(slot));
    }
    if let Some(l) = loss.and_then(|l| g.id(l)) {
        labels.extend(ops::loss::composed_mse_target(g, l));
    }
    labels
}

/// Remaining graph inputs: data before the first parameter, frozen
/// parameters after it (onnxruntime lists user inputs, then labels, then
/// parameters). Single-graph and inference models keep weights as
/// initializers, so all their inputs are data. Then the graph outputs.
fn input_roles(g: &Graph, labels: &[TensorId], main: &mut IndexMap<String, Role>) {
    let first_param = g.inputs.iter().position(|&t| main.get(g.name_of(t)) == Some(&Role::Param));
    for (pos, &t) in g.inputs.iter().enumerate() {
        let name = g.name_of(t);
        if main.contains_key(name) || g.tensor(t).sequence {
            continue;
        }
        let role = if labels.contains(&t) {
            Role::Labels
        } else if first_param.is_some_and(|f| pos > f) {
            Role::Frozen
        } else {
            Role::Data
        };
        main.insert(name.to_string(), role);
    }
    for &t in &g.outputs {
        main.entry(g.name_of(t).to_string()).or_insert(Role::Output);
    }
}
