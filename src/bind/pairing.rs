//! Weights ↔ gradient buffers ↔ optimizer updates, paired by name and
//! asserted: `W == NG == number of SGD updates`, and every update reads the
//! gradient buffer of the weight it writes. Index arithmetic never decides
//! a pairing; the slot indices recorded here are read off the names.

use serde::Serialize;

use super::{quoted, Slot};
use crate::error::{Error, Result};
use crate::ir::roles::ParamRoles;
use crate::ir::{Flavor, Model, Role};
use crate::lower::training::{self, SgdNode, Structure};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateKind {
    /// `SGD(w, g){lr}` inside the training graph (single-graph flavor).
    InlineSgd,
    /// `SGD(w, g){lr}` in the optimizer graph.
    Sgd,
    /// onnxruntime's `SGDOptimizerV2` over sequences: `index` is the weight's
    /// place in the `params` / `gradients` sequences the harness builds.
    SgdOptimizerV2 { index: usize },
}

/// How one weight is updated.
#[derive(Clone, Debug, Serialize)]
pub struct Update {
    pub kind: UpdateKind,
    /// The optimizer node.
    pub node: String,
    /// The node's weight and gradient inputs (tensor names in the graph the
    /// node lives in; sequence names for `SGDOptimizerV2`).
    pub weight_input: String,
    pub grad_input: String,
    /// The updated-weight output, when the node has one per weight.
    pub output: Option<String>,
    pub lr: Option<f32>,
}

/// One trainable weight with everything that pairs with it.
#[derive(Clone, Debug, Serialize)]
pub struct ParamBinding {
    pub name: String,
    /// Its slot (artifacts flavor: weights are graph inputs); `None` for a
    /// weight kept as an initializer (single-graph flavor).
    pub slot: Option<usize>,
    pub grad_buffer: Option<String>,
    pub grad_buffer_slot: Option<usize>,
    /// The gradient value the accumulator or the SGD node reads.
    pub gradient: Option<String>,
    pub update: Update,
    /// `outputs.npz` key holding the weight after training.
    pub reference: Option<String>,
}

type Paired = (Vec<ParamBinding>, Option<f32>, Option<String>);

/// Pair every trainable weight; returns the pairs in slot order, the shared
/// learning rate and where it came from.
pub fn pair(model: &Model, slots: &[Slot], meta_lr: Option<f32>, warnings: &mut Vec<String>) -> Result<Paired> {
    let roles = &model.roles;
    if roles.flavor == Flavor::Inference {
        return Ok((vec![], None, None));
    }

    // W: the trainable weights, in slot order (initializers after slots).
    let mut params = roles.params.clone();
    params.sort_by_key(|p| slot_of(slots, &p.name).unwrap_or(usize::MAX));

    // NG: the gradient buffers, each accumulated by one InPlaceAccumulatorV2
    // and tied to its weight when lowering (`lower::training`).
    let buffers: Vec<&Slot> = slots.iter().filter(|s| s.role == Role::GradBuffer).collect();
    let names: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
    let st = training::structure(model, &names)?;
    check_accumulated(&st, &params, &buffers)?;
    let accumulating = !st.accumulators.is_empty();

    let updates = updates(&st, &params, meta_lr);
    let mut out = match_updates(&st, &params, &updates, slots)?;
    check_counts(&params, &buffers, &out, accumulating)?;
    // Buffer slots follow their weights by construction (`slot_order`);
    // that the graph lists them in the order of their weights, which the
    // harness relies on, was asserted when lowering.
    out.sort_by_key(|p| (p.slot.unwrap_or(usize::MAX), params.iter().position(|q| q.name == p.name)));

    if out.is_empty() {
        return Ok((out, None, None));
    }
    let (lr, source) = learning_rate(&st, &mut out, meta_lr, warnings)?;
    Ok((out, lr, source))
}

fn slot_of(slots: &[Slot], name: &str) -> Option<usize> {
    slots.iter().find(|s| s.input == name).map(|s| s.index)
}

fn bad(m: String) -> Error {
    Error::binding(m)
}

/// Every gradient buffer slot is accumulated, and when gradients are
/// accumulated every weight has a buffer.
fn check_accumulated(st: &Structure, params: &[ParamRoles], buffers: &[&Slot]) -> Result<()> {
    for b in buffers {
        if !st.accumulators.iter().any(|a| a.buffer == b.input) {
            return Err(bad(format!(
                "gradient buffer '{}' (slot {}) is accumulated by no InPlaceAccumulatorV2",
                b.input, b.index
            )));
        }
    }
    if !st.accumulators.is_empty() {
        let without: Vec<&str> = params.iter().filter(|p| p.grad_buffer.is_none()).map(|p| p.name.as_str()).collect();
        if !without.is_empty() {
            return Err(bad(format!("trainable weight(s) {} have no gradient buffer", quoted(without))));
        }
    }
    Ok(())
}

/// The updates, each with the weight it names: SGD nodes of either graph,
/// then one per weight for an `SGDOptimizerV2` (in the weights' order).
fn updates(st: &Structure, params: &[ParamRoles], meta_lr: Option<f32>) -> Vec<(String, Update)> {
    let mut updates: Vec<(String, Update)> = Vec::new();
    let sgd = |nodes: &[SgdNode], kind: UpdateKind| -> Vec<(String, Update)> {
        nodes
            .iter()
            .map(|n| {
                let u = Update {
                    kind,
                    node: n.node.clone(),
                    weight_input: n.weight.clone(),
                    grad_input: n.gradient.clone(),
                    output: n.output.clone(),
                    lr: n.lr,
                };
                (n.weight.clone(), u)
            })
            .collect()
    };
    updates.extend(sgd(&st.inline_sgd, UpdateKind::InlineSgd));
    updates.extend(sgd(&st.optimizer_sgd, UpdateKind::Sgd));
    if let Some(v) = &st.sequence {
        for (i, p) in params.iter().enumerate() {
            updates.push((
                p.name.clone(),
                Update {
                    kind: UpdateKind::SgdOptimizerV2 { index: i },
                    node: v.node.clone(),
                    weight_input: v.params.clone(),
                    grad_input: v.gradients.clone(),
                    output: None,
                    lr: meta_lr,
                },
            ));
        }
    }
    updates
}

/// Every update writes a known weight, once, from that weight's gradient;
/// the pairs in update order.
fn match_updates(
    st: &Structure,
    params: &[ParamRoles],
    updates: &[(String, Update)],
    slots: &[Slot],
) -> Result<Vec<ParamBinding>> {
    let mut out: Vec<ParamBinding> = Vec::with_capacity(params.len());
    for (w, u) in updates {
        let Some(p) = params.iter().find(|p| p.name == *w) else {
            let op = st.optimizer_sgd.iter().chain(&st.inline_sgd).find(|n| n.node == u.node).map(|n| n.op.as_str());
            let op = op.or(st.sequence.as_ref().map(|v| v.op.as_str())).unwrap_or("?");
            return Err(bad(format!(
                "optimizer node '{}' ({op}) updates '{w}', which is not a trainable weight of the training graph",
                u.node
            )));
        };
        if out.iter().any(|q| q.name == *w) {
            return Err(bad(format!("trainable weight '{w}' is updated twice (second time by '{}')", u.node)));
        }
        check_gradient(p, w, u)?;
        out.push(ParamBinding {
            name: p.name.clone(),
            slot: slot_of(slots, &p.name),
            grad_buffer: p.grad_buffer.clone(),
            grad_buffer_slot: p.grad_buffer.as_deref().and_then(|b| slot_of(slots, b)),
            gradient: p.gradient.clone(),
            update: u.clone(),
            reference: None,
        });
    }
    Ok(out)
}

/// An SGD update of weight `w` reads that weight's gradient buffer (optimizer
/// graph) or its gradient (inline).
fn check_gradient(p: &ParamRoles, w: &str, u: &Update) -> Result<()> {
    if u.kind == UpdateKind::Sgd {
        let expected = p.grad_buffer.as_deref().unwrap_or("");
        if u.grad_input != expected {
            return Err(bad(format!(
                "optimizer SGD node '{}' updates '{w}' with '{}', but the gradient buffer of '{w}' is \
                 '{expected}': the weight would move along another weight's gradient",
                u.node, u.grad_input
            )));
        }
    }
    if u.kind == UpdateKind::InlineSgd && p.gradient.as_deref() != Some(u.grad_input.as_str()) {
        return Err(bad(format!(
            "SGD node '{}' updates '{w}' with '{}', but the gradient of '{w}' is {}",
            u.node,
            u.grad_input,
            p.gradient.as_deref().map(|x| format!("'{x}'")).unwrap_or_else(|| "unknown".into())
        )));
    }
    Ok(())
}

/// `W == NG == number of updates` (NG only when gradients are accumulated)
/// and every weight is updated; otherwise name what does not pair.
fn check_counts(params: &[ParamRoles], buffers: &[&Slot], out: &[ParamBinding], accumulating: bool) -> Result<()> {
    let not_updated: Vec<&str> =
        params.iter().filter(|p| !out.iter().any(|q| q.name == p.name)).map(|p| p.name.as_str()).collect();
    let (w, ng, u) = (params.len(), buffers.len(), out.len());
    let counts_ok = w == u && (!accumulating || ng == w);
    if not_updated.is_empty() && counts_ok {
        return Ok(());
    }
    // Name what does not pair: weights without a buffer slot, buffer
    // slots no weight claims.
    let no_buffer: Vec<&str> = params
        .iter()
        .filter(|p| !p.grad_buffer.as_deref().is_some_and(|b| buffers.iter().any(|s| s.input == b)))
        .map(|p| p.name.as_str())
        .collect();
    let stray: Vec<&str> = buffers
        .iter()
        .filter(|s| !params.iter().any(|p| p.grad_buffer.as_deref() == Some(s.input.as_str())))
        .map(|s| s.input.as_str())
        .collect();
    let mut detail = String::new();
    if !not_updated.is_empty() {
        detail += &format!("; no update for {}", quoted(not_updated));
    }
    if accumulating && !no_buffer.is_empty() {
        detail += &format!("; no gradient buffer for {}", quoted(no_buffer));
    }
    if !stray.is_empty() {
        detail += &format!("; buffer(s) {} pair with no weight", quoted(stray));
    }
    Err(bad(format!(
        "weights, gradient buffers and optimizer updates do not pair up: W = {w} trainable weights, NG = {ng} \
         gradient buffers, {u} optimizer updates{detail}"
    )))
}

/// The learning rate and where it came from: an `SGDOptimizerV2` takes
/// inputs.npz's; SGD nodes their shared attribute, else inputs.npz's, else
/// each its own. Updates without a rate get the shared one.
fn learning_rate(
    st: &Structure,
    out: &mut [ParamBinding],
    meta_lr: Option<f32>,
    warnings: &mut Vec<String>,
) -> Result<(Option<f32>, Option<String>)> {
    let mut rates: Vec<f32> = out.iter().filter_map(|p| p.update.lr).collect();
    rates.sort_by(f32::total_cmp);
    rates.dedup();
    let (lr, source) = if let Some(v2) = &st.sequence {
        let Some(lr) = meta_lr else {
            return Err(bad(format!(
                "the optimizer graph's SGDOptimizerV2 '{}' takes the learning rate as an input, but inputs.npz has \
                 no meta_learning_rate",
                v2.node
            )));
        };
        (Some(lr), Some("meta_learning_rate".to_string()))
    } else if rates.len() == 1 {
        if let Some(m) = meta_lr.filter(|m| *m != rates[0]) {
            warnings.push(format!(
                "inputs.npz meta_learning_rate is {m} but the SGD nodes' lr attribute is {}: the attribute is used",
                rates[0]
            ));
        }
        (Some(rates[0]), Some("SGD attribute lr".to_string()))
    } else if rates.is_empty() {
        match meta_lr {
            Some(lr) => {
                for p in out.iter_mut() {
                    p.update.lr = Some(lr);
                }
                (Some(lr), Some("meta_learning_rate".to_string()))
            }
            None => {
                return Err(bad(
                    "the SGD nodes carry no lr attribute and inputs.npz has no meta_learning_rate".to_string()
                ))
            }
        }
    } else {
        (None, Some("per-weight SGD attribute lr".to_string()))
    };
    if out.iter().any(|p| p.update.lr.is_none()) {
        let lr = lr.or(meta_lr);
        for p in out.iter_mut() {
            p.update.lr = p.update.lr.or(lr);
        }
    }
    Ok((lr, source))
}
