//! ReduceSum / ReduceMean (axes as attribute before opset 13/18, as an
//! input after).

use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] =
    &[OpDef { name: "ReduceSum", infer: reduce, fold: None }, OpDef { name: "ReduceMean", infer: reduce, fold: None }];

/// Normalised, sorted, deduplicated reduction axes; `None` = no reduction
/// (noop_with_empty_axes with empty axes).
pub fn reduce_axes(ctx: &Ctx, rank: usize) -> Result<Option<Vec<usize>>> {
    let axes = ctx.ints_attr_or_input("axes", 1)?.unwrap_or_default();
    if axes.is_empty() {
        if ctx.node.attr_int("noop_with_empty_axes").unwrap_or(0) != 0 {
            return Ok(None);
        }
        return Ok(Some((0..rank).collect()));
    }
    let mut v = axes.iter().map(|&a| ctx.axis(a, rank)).collect::<Result<Vec<_>>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(Some(v))
}

fn reduce(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(x) = ctx.shape(0)? else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let keep = ctx.node.attr_int("keepdims").unwrap_or(1) != 0;
    let Some(axes) = reduce_axes(ctx, x.len())? else {
        return Ok(vec![TensorType::new(dtype, &x)]);
    };
    let mut out = Vec::new();
    for (i, &d) in x.iter().enumerate() {
        if axes.contains(&i) {
            if keep {
                out.push(1);
            }
        } else {
            out.push(d);
        }
    }
    Ok(vec![TensorType::new(dtype, &out)])
}
