//! Pooling and its gradients.

use super::conv::window;
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, Graph, Node, TensorType};

pub const OPS: &[OpDef] = &[
    // MaxPool -> (Y, Indices); training graphs need Indices for MaxPoolGrad.
    OpDef { name: "MaxPool", infer: max_pool, ..OpDef::BASE },
    // MaxPoolGrad(dY, Indices) -> dX with the pooled input's shape.
    OpDef { name: "MaxPoolGrad", infer: max_pool_grad, gradient: true, ..OpDef::BASE },
    OpDef { name: "AveragePool", infer: avg_pool, ..OpDef::BASE },
    // AveragePoolGrad(dY) -> dX; the input shape is not local, see below.
    OpDef { name: "AveragePoolGrad", infer: avg_pool_grad, gradient: true, ..OpDef::BASE },
    OpDef { name: "GlobalAveragePool", infer: global_pool, fixed_1x1: Some(always_1x1), ..OpDef::BASE },
    OpDef { name: "GlobalMaxPool", infer: global_pool, fixed_1x1: Some(always_1x1), ..OpDef::BASE },
    // GlobalAveragePoolGrad(dY, X) -> dX (shape of X).
    OpDef { name: "GlobalAveragePoolGrad", infer: global_pool_grad, gradient: true, ..OpDef::BASE },
];

/// Global pools make a 1×1 map whatever the input resolution.
fn always_1x1(_: &Graph, _: &Node) -> bool {
    true
}

fn kernel_shape(ctx: &Ctx) -> Result<Vec<usize>> {
    match ctx.node.attr_ints("kernel_shape") {
        Some(k) if !k.is_empty() && k.iter().all(|&v| v >= 1) => Ok(k.iter().map(|&v| v as usize).collect()),
        Some(k) => Err(ctx.err(format!("kernel_shape {k:?} is invalid"))),
        None => Err(ctx.err("attribute kernel_shape is required")),
    }
}

fn pooled(ctx: &Ctx) -> Result<Option<Vec<usize>>> {
    let Some(x) = ctx.shape(0)? else { return Ok(None) };
    let ceil = ctx.node.attr_int("ceil_mode").unwrap_or(0) != 0;
    let (_, spatial) = window(ctx, &x, kernel_shape(ctx)?, ceil)?;
    let mut out = x[..2].to_vec();
    out.extend(spatial);
    Ok(Some(out))
}

fn max_pool(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    Ok(match pooled(ctx)? {
        Some(s) => vec![TensorType::new(dtype, &s), TensorType::new(DType::I64, &s)],
        None => vec![TensorType::unknown(dtype), TensorType::unknown(DType::I64)],
    })
}

fn avg_pool(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    Ok(vec![match pooled(ctx)? {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    }])
}

/// The pooled input's shape is found through the forward MaxPool that
/// produced the Indices.
fn max_pool_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let fwd =
        ctx.node.input(1).and_then(|t| ctx.graph.producer(t)).map(|n| ctx.graph.node(n)).filter(|n| n.op == "MaxPool");
    if let Some(x) = fwd.and_then(|n| n.input(0)) {
        let mut t = ctx.graph.tensor(x).ty.clone();
        t.dtype = dtype;
        return Ok(vec![t]);
    }
    Ok(vec![TensorType::unknown(dtype)])
}

/// AveragePoolGrad has no link to its forward input. The input extent is
/// `(out-1)*stride + kernel - pads` when the window tiles it exactly; if
/// the file declares the shape (value_info), import checks it against this.
fn avg_pool_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(dy) = ctx.shape(0)? else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let k = kernel_shape(ctx)?;
    let sp = k.len();
    if dy.len() != sp + 2 || ctx.node.attr_str("auto_pad").is_some_and(|a| a != "NOTSET" && a != "VALID") {
        return Ok(vec![TensorType::unknown(dtype)]);
    }
    let strides: Vec<usize> =
        ctx.node.attr_ints("strides").map(|s| s.iter().map(|&v| v.max(1) as usize).collect()).unwrap_or(vec![1; sp]);
    let pads: Vec<usize> =
        ctx.node.attr_ints("pads").map(|s| s.iter().map(|&v| v.max(0) as usize).collect()).unwrap_or(vec![0; 2 * sp]);
    if strides.len() != sp || pads.len() != 2 * sp {
        return Ok(vec![TensorType::unknown(dtype)]);
    }
    let mut out = dy[..2].to_vec();
    for d in 0..sp {
        let full = dy[d + 2].saturating_sub(1).saturating_mul(strides[d]).saturating_add(k[d]);
        out.push(full.saturating_sub(pads[d] + pads[d + sp]));
    }
    Ok(vec![TensorType::new(dtype, &out)])
}

fn global_pool(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    Ok(vec![match ctx.shape(0)? {
        Some(x) if x.len() >= 3 => {
            let mut s = x[..2].to_vec();
            s.extend(std::iter::repeat_n(1, x.len() - 2));
            TensorType::new(dtype, &s)
        }
        Some(x) => return Err(ctx.err(format!("input shape {x:?} needs N, C and spatial dims"))),
        None => TensorType::unknown(dtype),
    }])
}

fn global_pool_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if ctx.has(1) {
        return Ok(vec![ctx.same_as(1)?]);
    }
    Ok(vec![TensorType::unknown(ctx.dtype(0)?)])
}
