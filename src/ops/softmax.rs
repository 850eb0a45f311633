//! Softmax and its gradient (`SoftmaxGrad`, or `SoftmaxGrad_13` for the
//! opset-13 axis semantics).

use super::grad::{self, GradCtx};
use super::{kernel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] = &[
    OpDef { name: "Softmax", infer: same, kernel: Some(kernel::softmax), grad: Some(softmax_grad_rule), ..OpDef::BASE },
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

// ---- gradient rules ------------------------------------------------------------------------

/// SoftmaxGrad_13(dY, Y) over the forward axis.
fn softmax_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, y) = (ctx.dy(0)?, ctx.y(0)?);
    let (out, attrs) = (ctx.dx_name(0), ctx.attr("axis").into_iter().collect());
    let dx = ctx.emit1("SoftmaxGrad_13", grad::MS, &[dy, y], &out, attrs)?;
    ctx.set(0, dx);
    Ok(())
}
