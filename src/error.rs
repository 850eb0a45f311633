//! One error type for the whole pipeline. Every message names the thing the
//! user has to look at (file, node, op, tensor, key, slot) and every variant
//! maps to the exit code of SPEC §1: 2 for bad input or an unmeetable
//! request, 1 for a deployed network that computed wrong results.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{}: not a readable ONNX model: {detail}", path.display())]
    Decode { path: PathBuf, detail: String },

    #[error(
        "node '{node}' uses operator '{op}' (domain '{domain}', opset {opset}), which deploygen does not support.\n  supported operators: {supported}"
    )]
    UnknownOp { node: String, op: String, domain: String, opset: String, supported: String },

    #[error("the graph has a cycle through these nodes: {}", nodes.join(" -> "))]
    Cycle { nodes: Vec<String> },

    #[error("node '{node}' ({op}) reads tensor '{tensor}', which no node produces and which is neither a graph input nor an initializer")]
    Dangling { node: String, op: String, tensor: String },

    #[error("initializer '{tensor}' keeps its data in an external file {}: {detail}", path.display())]
    ExternalData { tensor: String, path: PathBuf, detail: String },

    #[error("node '{node}' ({op}): {detail}")]
    Node { node: String, op: String, detail: String },

    /// Anything else wrong with the model's structure.
    #[error("{0}")]
    Model(String),

    /// Usage errors: a flag combination or path that cannot be honoured.
    #[error("{0}")]
    Usage(String),

    /// A memory plan that cannot be made (a buffer without a static size).
    #[error("{0}")]
    Plan(String),

    /// A memory plan that does not fit the platform; the message gives the
    /// bytes needed and available, split into arena, weights and reserved.
    #[error("{message}")]
    Capacity { platform: String, level: String, needed: u64, available: u64, message: String },

    /// An `.npz` file (or one array in it) that cannot be read.
    #[error("{}{}: {detail}", path.display(), key.as_ref().map(|k| format!(", key '{k}'")).unwrap_or_default())]
    Npz { path: PathBuf, key: Option<String>, detail: String },

    /// Test data that does not fit the graph: slot mismatches, schedule
    /// inconsistencies, a `--num-data-inputs` that would shift slots,
    /// weights that do not pair with their gradients and updates.
    #[error("{0}")]
    Binding(String),

    /// Training cannot run with this data (SPEC §2.4), classified.
    #[error("{}", crate::check::describe(.0))]
    Triage(Vec<crate::check::Finding>),
}

impl Error {
    /// Exit code for the command line, per SPEC §1.
    pub fn exit_code(&self) -> i32 {
        2
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    pub fn node(node: &crate::ir::Node, detail: impl Into<String>) -> Self {
        Error::Node { node: node.name.clone(), op: node.op.clone(), detail: detail.into() }
    }
}
