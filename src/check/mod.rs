//! Before anything is emitted: can training run with this data? (docs/triage.md, "The training check")
//!
//! What cannot run is classified into one of three flavors, each with its
//! canonical reason string, so that other code (the status table, `deploygen
//! triage`) can act on the value:
//!
//! - `missing_targets`: the loss reads a label/target input the data lacks;
//! - `decoder_inputs`: another required input is absent, or present only
//!   under a position that binds it to a different input;
//! - `bn_single_value`: a BatchNormalization in training mode sees one value
//!   per channel (see [`bn`]).

pub mod bn;

use crate::bind::Binding;
pub use crate::diag::{Finding, TriageFlavor, BN_SINGLE_VALUE_REASON, MISSING_TARGETS_REASON};
use crate::error::{Error, Result};
use crate::ir::{Flavor, Model, Role};

/// Every finding, most specific first: missing inputs (any flavor of
/// model), then BatchNorm (training graphs).
pub fn findings(model: &Model, binding: &Binding) -> Vec<Finding> {
    let mut out = missing_inputs(model, binding);
    if model.roles.flavor != Flavor::Inference {
        out.extend(bn::single_value(model, binding));
    }
    out
}

/// `Ok` when training (or inference) can run with the bound data; else
/// `Error::Triage` with every finding.
pub fn training(model: &Model, binding: &Binding) -> Result<()> {
    labels_in_range(model, binding)?;
    let f = findings(model, binding);
    if f.is_empty() {
        Ok(())
    } else {
        Err(Error::Triage(f))
    }
}

/// Class-index labels name a class: every value in `0..C` or the loss's
/// ignored index. Another value would make the loss kernel read outside
/// its scores.
fn labels_in_range(model: &Model, binding: &Binding) -> Result<()> {
    let g = &model.graph;
    for (n, node) in g.nodes() {
        let def = crate::ops::of(node);
        let (Some(rule), Some(slot)) = (def.class_labels, def.labels.and_then(|f| f(node))) else { continue };
        let (Some(c), Some(t)) = (rule(g, node), node.input(slot)) else { continue };
        let Some(s) = binding.slots.iter().find(|s| s.input == g.name_of(t)) else { continue };
        for (key, v) in s.keys.iter().zip(&s.values) {
            let Some(vals) = v.to_i64() else { continue };
            let outside = |x: i64| (x < 0 || x >= c.classes as i64) && Some(x) != c.ignore;
            if let Some((i, &bad)) = vals.iter().enumerate().find(|(_, &x)| outside(x)) {
                let ignored = c.ignore.map(|v| format!(", or the ignored index {v}")).unwrap_or_default();
                return Err(Error::binding(format!(
                    "{}: key '{key}' holds the labels of {}: element {i} is {bad}, not a class (0 to {}{ignored})",
                    crate::bind::short(&binding.inputs_path),
                    g.display_node(n),
                    c.classes.saturating_sub(1)
                ))
                .at_input(&s.input)
                .at_key(key));
            }
        }
    }
    Ok(())
}

/// The graph nodes that read a graph input, as `'name' (Op)`.
fn readers(model: &Model, input: &str) -> Vec<String> {
    let g = &model.graph;
    let Some(t) = g.id(input) else { return vec![] };
    g.consumers(t).into_iter().map(|n| g.display_node(n)).collect()
}

fn missing_inputs(model: &Model, binding: &Binding) -> Vec<Finding> {
    let data_file = crate::bind::short(&binding.inputs_path);
    let mut out = Vec::new();
    for m in &binding.missing {
        let read_by = readers(model, &m.input);
        let read_by = if read_by.is_empty() { String::new() } else { format!(", read by {}", read_by.join(", ")) };
        let whereabouts = match &m.misplaced {
            Some(why) => why.clone(),
            None => format!("{data_file} has no key '{}'", m.expected_key),
        };
        let hint = m.hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default();
        if m.role == Role::Labels {
            let loss = model.roles.loss.as_deref().map(|l| format!(" '{l}'")).unwrap_or_default();
            out.push(Finding {
                flavor: TriageFlavor::MissingTargets,
                reason: MISSING_TARGETS_REASON.to_string(),
                detail: format!(
                    "the loss{loss} compares against graph input '{}' ({}){read_by}, and {whereabouts}{hint}",
                    m.input,
                    model.graph.id(&m.input).map(|t| model.graph.tensor(t).ty.to_string()).unwrap_or_default()
                ),
                input: Some(m.input.clone()),
                node: None,
                shape: None,
                batch2_fixes: None,
                fix: format!(
                    "add the targets to {data_file} as '{}' (one per sample, and per mini-batch as '{}')",
                    m.expected_key,
                    crate::bind::layout::key_for(
                        binding.layout,
                        &m.input,
                        binding.slot(&m.input).and_then(|s| s.position),
                        1
                    )
                ),
            });
        } else {
            let reason = match &m.misplaced {
                Some(_) => format!(
                    "graph input '{}' is present only under a position that binds it to a different input",
                    m.input
                ),
                None => format!("graph input '{}' ({}) has no value in the test data", m.input, m.role.name()),
            };
            out.push(Finding {
                flavor: TriageFlavor::DecoderInputs,
                reason,
                detail: format!("'{}' ({}){read_by}: {whereabouts}{hint}", m.input, m.role.name()),
                input: Some(m.input.clone()),
                node: None,
                shape: None,
                batch2_fixes: None,
                fix: match &m.misplaced {
                    Some(_) => format!(
                        "write {data_file} with every graph input at its position, or use the named layout (keys \
                         = graph-input names)"
                    ),
                    None => format!("add '{}' to {data_file}", m.expected_key),
                },
            });
        }
    }
    out
}
