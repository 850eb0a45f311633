//! The intermediate representation every later stage reads: graphs of
//! operator nodes over a tensor table, plus the training roles found in
//! them. Plain data: it depends on no stage and on no operator.

mod graph;
mod no_predict;
pub mod roles;
pub mod train;
mod types;

pub use graph::{Attr, Graph, Node, OpId, Origin, Readers, Tensor, TensorId, Tensors};
pub use no_predict::NoPredict;
pub use roles::{Flavor, Role, Roles};
pub use train::TrainSpec;
pub use types::{DType, Dim, TensorData, TensorType};

use std::path::PathBuf;

/// A model as deploygen sees it: the main graph (inference graph, or the
/// training step), the optimizer graph when it comes separately, and the
/// roles of their tensors.
#[derive(Clone, Debug)]
pub struct Model {
    /// The folder the model came from (test data is looked up there).
    pub dir: PathBuf,
    /// The main ONNX file.
    pub path: PathBuf,
    pub graph: Graph,
    pub optimizer: Option<Graph>,
    pub optimizer_path: Option<PathBuf>,
    pub roles: Roles,
    /// The training spec of an inference model (`train.toml` and flags):
    /// `lower` derives the training step from it.
    pub train: Option<TrainSpec>,
    /// Set when `lower` derived the training step from `train`.
    pub derived: Option<train::Derived>,
    /// Values asked for symbolic dims (`--dim`, `dims` in train.toml).
    pub dim_requests: Vec<DimValue>,
    /// Every symbolic dim of the graph inputs with the value it took and
    /// where that came from (set before lowering).
    pub dims: Vec<DimValue>,
    /// Initial values of graph inputs that were the model's initializers
    /// (the weights a derived step trains, BatchNorm running statistics):
    /// bound where the test data has no key of the same name.
    pub initial: indexmap::IndexMap<String, TensorData>,
    /// Graph inputs read when generating code whose values the test data
    /// gave (set before lowering): constants now, no longer graph inputs.
    pub pinned: Vec<PinnedInput>,
    /// Batch of `dg_model_predict` (`--predict-batch`, default 1).
    pub predict_batch: usize,
    /// Whether `--predict-batch` gave it.
    pub predict_batch_given: bool,
    /// Why the prediction runs at another batch than the default one.
    pub predict_note: Option<String>,
    /// The prediction graph of a training model (`lower::predict`): the
    /// forward part in eval mode at `predict_batch`, reading the training
    /// step's weights and BatchNorm running statistics by name.
    pub predict: Option<Graph>,
    /// Why a training model has no prediction graph.
    pub no_predict: Option<NoPredict>,
    /// The forward part of a training model's main graph (`lower::forward`):
    /// its nodes, in schedule order; `None` when it has none. Found once,
    /// when lowering, for the stages after it.
    pub forward_nodes: Option<Vec<petgraph::stable_graph::NodeIndex>>,
}

/// A graph input the code is generated for one value of (a shape, axes or
/// pads operand), and the `inputs.npz` keys that gave it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PinnedInput {
    pub name: String,
    pub keys: Vec<String>,
    /// The value, as the notes print it.
    pub value: String,
}

/// A symbolic dim's value and its source, for messages and `inspect`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DimValue {
    pub name: String,
    pub value: usize,
    /// `--dim`, the spec file, or `inputs.npz 'input'`.
    pub from: String,
}
