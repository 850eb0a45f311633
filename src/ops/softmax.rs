//! Softmax and its gradient (`SoftmaxGrad`, or `SoftmaxGrad_13` for the
//! opset-13 axis semantics).

use super::{kernel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] = &[
    OpDef { name: "Softmax", infer: same, kernel: Some(kernel::softmax), ..OpDef::BASE },
    // (dY, Y) -> dX.
    OpDef { name: "SoftmaxGrad", infer: same, gradient: true, kernel: Some(kernel::softmax_grad), ..OpDef::BASE },
    OpDef { name: "SoftmaxGrad_13", infer: same, gradient: true, kernel: Some(kernel::softmax_grad), ..OpDef::BASE },
];

fn same(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if let Some(s) = ctx.shape(0)? {
        if let Some(axis) = ctx.node.attr_int("axis") {
            ctx.axis(axis, s.len())?;
        }
    }
    Ok(vec![ctx.same_as(0)?])
}
