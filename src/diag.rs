//! Diagnostics shared by every stage and the error type: the findings of
//! the training check (docs/triage.md) with their canonical reasons, and the
//! typed hints a stage attaches to an error for the command line to word
//! (stages never name command-line flags).

use serde::Serialize;

use crate::target::Level;

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
    /// substrings of the canonical reasons (docs/triage.md) and the triage workflow use.
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

/// Something the user can change to meet a request the plan could not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "try")]
pub enum Hint {
    /// Put graph I/O, weights and buffers at this level by default.
    DefaultMem { level: Level },
    /// Give a level at least this many bytes (a stage's own finding).
    Capacity { level: Level, bytes: u64 },
    /// Give each of these levels at least so many bytes, together: the
    /// planner checked that the plan then fits.
    Capacities(Vec<(Level, u64)>),
    /// Keep the harness's test data and references in L3.
    TestDataL3,
}
