//! Softmax and its gradient (`SoftmaxGrad`, or `SoftmaxGrad_13` for the
//! opset-13 axis semantics).

use super::{kernel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] = &[
    OpDef { name: "Softmax", infer: same, kernel: Some(kernel::softmax), ..OpDef::BASE },
    // (dY, Y) -> dX.
    OpDef {
        name: "SoftmaxGrad",
        infer: same,
        gradient: true,
        required: &[0, 1],
        kernel: Some(kernel::softmax_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "SoftmaxGrad_13",
        infer: same,
        gradient: true,
        required: &[0, 1],
        kernel: Some(kernel::softmax_grad),
        ..OpDef::BASE
    },
];

fn same(ctx: &Ctx) -> Result<Vec<TensorType>> {
    match ctx.shape(0)? {
        Some(s) => {
            ctx.axis_attr("axis", -1, s.len())?;
        }
        None => {
            ctx.node.int("axis")?;
        }
    }
    Ok(vec![ctx.same_as(0)?])
}
