//! Before anything is emitted: can training run with this data? (SPEC §2.4)
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

use serde::Serialize;

use crate::bind::Binding;
use crate::error::{Error, Result};
use crate::ir::{Flavor, Model, Role};

/// Canonical reason of `missing_targets`.
pub const MISSING_TARGETS_REASON: &str = "Model expects targets to be passed while in training mode";
/// Prefix of the canonical reason of `bn_single_value`; the shape follows.
pub const BN_SINGLE_VALUE_REASON: &str = "Expected more than 1 value per channel when training, got input size";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TriageFlavor {
    MissingTargets,
    DecoderInputs,
    BnSingleValue,
}

impl TriageFlavor {
    pub fn name(self) -> &'static str {
        match self {
            TriageFlavor::MissingTargets => "missing_targets",
            TriageFlavor::DecoderInputs => "decoder_inputs",
            TriageFlavor::BnSingleValue => "bn_single_value",
        }
    }

    /// Classify a recorded reason string (a status-table entry) by the
    /// substrings SPEC §2.4 and the triage workflow use.
    pub fn from_reason(reason: &str) -> Option<TriageFlavor> {
        if reason.contains(BN_SINGLE_VALUE_REASON) {
            Some(TriageFlavor::BnSingleValue)
        } else if reason.contains(MISSING_TARGETS_REASON)
            || reason.contains("targets should not be none when in training mode")
            || reason.contains("'NoneType' object has no attribute 'max'")
        {
            Some(TriageFlavor::MissingTargets)
        } else if reason.contains("decoder_input_ids or decoder_inputs_embeds") || reason.starts_with("graph input '") {
            Some(TriageFlavor::DecoderInputs)
        } else {
            None
        }
    }
}

/// One reason training cannot run.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub flavor: TriageFlavor,
    /// The canonical reason (the status table records it verbatim).
    pub reason: String,
    /// What deploygen saw: inputs, keys, nodes.
    pub detail: String,
    /// The graph input concerned (missing-input flavors).
    pub input: Option<String>,
    /// The node concerned (`bn_single_value`).
    pub node: Option<String>,
    /// The offending input shape (`bn_single_value`).
    pub shape: Option<Vec<usize>>,
    /// `bn_single_value`: whether repeating the batch to 2 fixes it.
    pub batch2_fixes: Option<bool>,
    /// What would fix it.
    pub fix: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}\n  {}\n  fix: {}", self.flavor.name(), self.reason, self.detail, self.fix)
    }
}

/// The message of `Error::Triage`.
pub fn describe(findings: &[Finding]) -> String {
    let mut s = String::from("training cannot run with this model and data");
    match findings.first() {
        Some(f) => s.push_str(&format!(" ({}): {}", f.flavor.name(), f.reason)),
        None => return s,
    }
    for f in findings {
        s.push_str(&format!("\n{f}"));
    }
    s
}

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
    let f = findings(model, binding);
    if f.is_empty() {
        Ok(())
    } else {
        Err(Error::Triage(f))
    }
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
