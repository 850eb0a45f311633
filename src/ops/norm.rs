//! BatchNormalization (inference and training mode), onnxruntime's
//! BatchNormInternal, LayerNormalization, and their gradients.

use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorType};

pub const OPS: &[OpDef] = &[
    // (X, scale, B, mean, var) -> Y [, running_mean, running_var] (opset 14+).
    OpDef { name: "BatchNormalization", infer: batch_norm, fold: None },
    // com.microsoft: -> Y, running_mean, running_var, saved_mean, saved_inv_std.
    OpDef { name: "BatchNormInternal", infer: batch_norm, fold: None },
    // (dY, X, scale, saved_mean, saved_inv_std) -> dX, dScale, dBias.
    OpDef { name: "BatchNormalizationGrad", infer: norm_grad, fold: None },
    // (X, scale[, B]) -> Y, Mean, InvStdDev.
    OpDef { name: "LayerNormalization", infer: layer_norm, fold: None },
    // com.microsoft (dY, X, scale, mean, inv_std_var) -> dX, dScale, dBias.
    OpDef { name: "LayerNormalizationGrad", infer: norm_grad, fold: None },
];

fn batch_norm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let y = ctx.same_as(0)?;
    let c = match ctx.shape(0)? {
        Some(x) if x.len() >= 2 => TensorType::new(y.dtype, &[x[1]]),
        Some(x) => return Err(ctx.err(format!("input shape {x:?} has no channel dim"))),
        None => TensorType::unknown(y.dtype),
    };
    let n = ctx.node.outputs.len().max(1);
    let mut out = vec![y];
    out.extend(std::iter::repeat_n(c, n - 1));
    Ok(out)
}

fn layer_norm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let y = ctx.same_as(0)?;
    // Mean and InvStdDev are float unless stash_type says otherwise.
    let stats = match ctx.shape(0)? {
        Some(x) => {
            let axis = ctx.axis(ctx.node.attr_int("axis").unwrap_or(-1), x.len())?;
            let s: Vec<usize> = x.iter().enumerate().map(|(i, &d)| if i < axis { d } else { 1 }).collect();
            TensorType::new(DType::F32, &s)
        }
        None => TensorType::unknown(DType::F32),
    };
    Ok(vec![y, stats.clone(), stats])
}

fn norm_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dx = ctx.same_as(1)?;
    let ds = ctx.same_as(2)?;
    Ok(vec![dx, ds.clone(), ds])
}
