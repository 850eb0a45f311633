//! Why a training model has no prediction graph (`lower::predict` finds
//! it; emit and inspect word it).

use std::sync::Arc;

use crate::error::Error;

/// Why a training model has no prediction graph at a batch.
#[derive(Clone, Debug, thiserror::Error)]
pub enum NoPredict {
    #[error("the training graph has no forward part to predict with: {0}")]
    NoForward(Arc<Error>),
    #[error("forward output '{0}' is not computed by a node of the model file")]
    NotInFile(String),
    #[error("forward node '{node}' ({op}) is a training operator")]
    TrainingOp { node: String, op: String },
    #[error("data input '{0}' has no batch dimension")]
    NoBatchDim(String),
    #[error("the forward part reads no data input")]
    NoData,
    #[error("the forward part does not run at batch {batch}: {error}")]
    Infer { batch: usize, error: Arc<Error> },
    #[error("forward output '{output}' has no static shape at batch {batch}")]
    NoStaticShape { output: String, batch: usize },
    #[error(
        "forward output '{output}' is {shape:?} at batch {batch}, not batch-major: a shape constant of the model \
         spells out the training batch"
    )]
    NotBatchMajor { output: String, shape: Vec<usize>, batch: usize },
}
