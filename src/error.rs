//! One error type for the whole pipeline. Every message names the thing the
//! user has to look at (file, node, op, tensor, key, slot) and every variant
//! maps to an exit code (docs/cli.md): 2 for bad input or an unmeetable
//! request, 1 for a deployed network that computed wrong results.

use std::path::PathBuf;

use crate::diag::{Finding, Hint};
// Names in messages stay on their line: a line break in a node, operator
// or tensor name cannot forge a line of the message.
use crate::escape::name;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A file or folder of the output that could not be written, named as
    /// the user asked for it (never the temporary folder it goes through).
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{}: not a readable ONNX model: {detail}", path.display())]
    Decode { path: PathBuf, detail: String },

    #[error(
        "node '{}' uses operator '{}' (domain '{}', opset {opset}), which deploygen does not support.\n  {supported}",
        name(node),
        name(op),
        name(domain)
    )]
    UnknownOp { node: String, op: String, domain: String, opset: String, supported: String },

    #[error("the graph has a cycle through these nodes: {}", nodes.iter().map(|n| name(n)).collect::<Vec<_>>().join(" -> "))]
    Cycle { nodes: Vec<String> },

    #[error(
        "node '{}' ({}) reads tensor '{}', which no node produces and which is neither a graph input nor an initializer",
        name(node), name(op), name(tensor)
    )]
    Dangling { node: String, op: String, tensor: String },

    #[error("initializer '{}' keeps its data in an external file {}: {detail}", name(tensor), path.display())]
    ExternalData { tensor: String, path: PathBuf, detail: String },

    #[error("node '{}' ({}): {detail}", name(node), name(op))]
    Node { node: String, op: String, detail: String },

    /// An attribute of another type than the operator reads it as: `want`
    /// and `found` are ONNX attribute types ("INTS", "an INT"). Typed so
    /// that the typing pass can recognise the forms it reads leniently (a
    /// single INT as INTS, an INT as a FLOAT) without parsing a message.
    #[error("node '{}' ({}): attribute '{}' must be {want}, found {found}", name(node), name(op), name(attr))]
    AttrType { node: String, op: String, attr: String, want: &'static str, found: &'static str },

    /// Anything else wrong with the model's structure, naming the tensor
    /// or node at fault when there is one.
    #[error("{detail}")]
    Model { tensor: Option<String>, node: Option<String>, detail: String },

    /// Trainable weights and gradient-accumulation buffers of a training
    /// graph that do not pair: `weights` left without a buffer, `buffers`
    /// that belong to no weight (or to one in the wrong place).
    #[error("{detail}")]
    Pairing { weights: Vec<String>, buffers: Vec<String>, detail: String },

    /// A MODEL argument that names no model: a folder without a main graph,
    /// a path that is not a regular file.
    #[error("{} {detail}", path.display())]
    NoModel { path: PathBuf, detail: String },

    /// Usage errors: a flag combination or path that cannot be honoured
    /// (worded by the command line, which owns the flags).
    #[error("{0}")]
    Usage(String),

    /// A memory plan that cannot be made (a buffer without a static size),
    /// naming the buffer or node.
    #[error("{detail}")]
    Plan { buffer: Option<String>, node: Option<String>, detail: String },

    /// A memory plan that does not fit the platform; the message gives the
    /// bytes needed and available, split into arena, weights and reserved;
    /// `hints` what would make it fit (the command line words them).
    #[error("{message}")]
    Capacity { platform: String, level: String, needed: u64, available: u64, message: String, hints: Vec<Hint> },

    /// An `.npz` file (or one array in it) that cannot be read.
    #[error("{}{}: {detail}", path.display(), key.as_ref().map(|k| format!(", key '{}'", name(k))).unwrap_or_default())]
    Npz { path: PathBuf, key: Option<String>, detail: String },

    /// Test data that does not fit the graph: slot mismatches, schedule
    /// inconsistencies, a forced number of data inputs that would shift
    /// slots, weights that do not pair with their gradients and updates.
    /// Names the slot, graph input and npz key when there is one.
    #[error("{detail}")]
    Binding { slot: Option<usize>, input: Option<String>, key: Option<String>, detail: String },

    /// Training cannot run with this data (docs/triage.md), classified.
    #[error("{}", crate::diag::describe(.0))]
    Triage(Vec<Finding>),

    /// A training model whose inference variant cannot be derived (no
    /// forward value feeds the loss, a forward input without data, …),
    /// naming the model file and, when there is one, the tensor.
    #[error("{}: cannot derive an inference variant: {detail}", path.display())]
    Derive { path: PathBuf, tensor: Option<String>, detail: String },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Write { path: path.into(), source }
    }

    pub fn model(detail: impl Into<String>) -> Self {
        Error::Model { tensor: None, node: None, detail: detail.into() }
    }

    pub fn plan(detail: impl Into<String>) -> Self {
        Error::Plan { buffer: None, node: None, detail: detail.into() }
    }

    pub fn binding(detail: impl Into<String>) -> Self {
        Error::Binding { slot: None, input: None, key: None, detail: detail.into() }
    }

    /// The same binding error, naming the graph input it concerns.
    pub fn at_input(mut self, name: &str) -> Self {
        if let Error::Binding { input, .. } = &mut self {
            *input = Some(name.to_string());
        }
        self
    }

    /// The same binding error, naming the slot it concerns.
    pub fn at_slot(mut self, index: usize) -> Self {
        if let Error::Binding { slot, .. } = &mut self {
            *slot = Some(index);
        }
        self
    }

    /// The same binding error, naming the npz key it concerns.
    pub fn at_key(mut self, name: &str) -> Self {
        if let Error::Binding { key, .. } = &mut self {
            *key = Some(name.to_string());
        }
        self
    }

    pub fn node(node: &crate::ir::Node, detail: impl Into<String>) -> Self {
        Error::Node { node: node.name.clone(), op: node.op.clone(), detail: detail.into() }
    }
}
