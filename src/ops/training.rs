//! Gradient accumulation and optimizer operators.

use super::{kernel, Ctx, OpDef, Train, Update};
use crate::error::Result;
use crate::ir::{DType, TensorType};

pub const OPS: &[OpDef] = &[
    // com.microsoft (buffer, gradient, overwrite: bool) -> (updated: bool [1]
    // [, buffer_out]). Writes `buffer` in place: overwrite when the flag is
    // set (lazy_reset_grad), else add.
    OpDef {
        name: "InPlaceAccumulatorV2",
        infer: accumulate,
        update: Update::Always { input: 0, output: 1 },
        train: Train::Accumulator,
        kernel: Some(kernel::accumulate),
        ..OpDef::BASE
    },
    // SGD(w, g){lr} -> w_updated (default domain as written by Deeploy's
    // exporters, though no ONNX opset defines it).
    OpDef {
        name: "SGD",
        infer: sgd,
        update: Update::WhenLastReader { input: 0, output: 0 },
        train: Train::Sgd,
        kernel: Some(kernel::sgd),
        ..OpDef::BASE
    },
    // com.microsoft SGDOptimizerV2(learning_rate, params: seq, gradients: seq
    // [, ...]) -> update_completed: bool [1] [, updated params: seq].
    OpDef {
        name: "SGDOptimizerV2",
        infer: sgd_v2,
        update: Update::Sequence,
        train: Train::SgdSequence,
        kernel: Some(kernel::sgd_optimizer_v2),
        ..OpDef::BASE
    },
];

fn accumulate(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if let (Some(b), Some(g)) = (ctx.shape(0)?, ctx.shape(1)?) {
        if b != g {
            return Err(ctx.err(format!("buffer {b:?} and gradient {g:?} differ in shape")));
        }
    }
    Ok(vec![TensorType::new(DType::Bool, &[1]), ctx.same_as(0)?])
}

fn sgd(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if let (Some(w), Some(g)) = (ctx.shape(0)?, ctx.shape(1)?) {
        if w != g {
            return Err(ctx.err(format!("weight {w:?} and gradient {g:?} differ in shape")));
        }
    }
    if ctx.node.attr_float("lr").is_none() {
        return Err(ctx.err("attribute lr (learning rate) is required"));
    }
    Ok(vec![ctx.same_as(0)?])
}

fn sgd_v2(_ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![TensorType::new(DType::Bool, &[1]), TensorType::unknown(DType::F32)])
}
