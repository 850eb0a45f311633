//! Convolution (regular, depthwise/grouped, pointwise) and ConvGrad.

use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] = &[
    OpDef { name: "Conv", infer: conv, ..OpDef::BASE },
    // ConvGrad(dY, X, W) -> (dX, dW, dB): shapes of X, W and [M].
    OpDef { name: "ConvGrad", infer: conv_grad, gradient: true, ..OpDef::BASE },
];

/// Spatial geometry shared by Conv and the pooling operators.
pub struct Window {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    /// Begin pads then end pads, as in ONNX.
    pub pads: Vec<usize>,
}

/// Read kernel/stride/dilation/pad attributes for `spatial` dims,
/// resolving `auto_pad`.
pub fn window(ctx: &Ctx, input: &[usize], kernel: Vec<usize>, ceil: bool) -> Result<(Window, Vec<usize>)> {
    let sp = kernel.len();
    if input.len() != sp + 2 {
        return Err(ctx.err(format!("input has shape {input:?}, expected N, C and {sp} spatial dims")));
    }
    let get = |name: &str, default: usize| -> Result<Vec<usize>> {
        match ctx.node.attr_ints(name) {
            None => Ok(vec![default; sp]),
            Some(v) if v.len() == sp && v.iter().all(|&x| x >= 1) => Ok(v.iter().map(|&x| x as usize).collect()),
            Some(v) => Err(ctx.err(format!("attribute {name}={v:?} is invalid for {sp} spatial dims"))),
        }
    };
    let strides = get("strides", 1)?;
    let dilations = get("dilations", 1)?;
    let mut pads = match ctx.node.attr_ints("pads") {
        None => vec![0; 2 * sp],
        Some(v) if v.len() == 2 * sp && v.iter().all(|&x| x >= 0) => v.iter().map(|&x| x as usize).collect(),
        Some(v) => return Err(ctx.err(format!("attribute pads={v:?} is invalid for {sp} spatial dims"))),
    };
    let auto = ctx.node.attr_str("auto_pad").unwrap_or("NOTSET");
    let mut out = Vec::with_capacity(sp);
    for d in 0..sp {
        let inp = input[d + 2];
        let k = kernel[d];
        let too_large = || ctx.err(format!("spatial dim {d} overflows: input {inp}, kernel {k}"));
        let eff_k = dilations[d]
            .checked_mul(kernel[d].saturating_sub(1))
            .and_then(|x| x.checked_add(1))
            .ok_or_else(too_large)?;
        let o = match auto {
            "SAME_UPPER" | "SAME_LOWER" => {
                let o = inp.div_ceil(strides[d]);
                let total = o
                    .saturating_sub(1)
                    .checked_mul(strides[d])
                    .and_then(|x| x.checked_add(eff_k))
                    .ok_or_else(too_large)?
                    .saturating_sub(inp);
                let (lo, hi) =
                    if auto == "SAME_UPPER" { (total / 2, total - total / 2) } else { (total - total / 2, total / 2) };
                pads[d] = lo;
                pads[d + sp] = hi;
                o
            }
            "VALID" | "NOTSET" | "" => {
                if auto == "VALID" {
                    pads[d] = 0;
                    pads[d + sp] = 0;
                }
                let padded =
                    inp.checked_add(pads[d]).and_then(|x| x.checked_add(pads[d + sp])).ok_or_else(too_large)?;
                if padded < eff_k {
                    return Err(ctx.err(format!(
                        "kernel extent {eff_k} is larger than the padded input {padded} in spatial dim {d}"
                    )));
                }
                let span = padded - eff_k;
                if ceil {
                    span.div_ceil(strides[d]) + 1
                } else {
                    span / strides[d] + 1
                }
            }
            other => return Err(ctx.err(format!("auto_pad '{other}' is not a valid value"))),
        };
        out.push(o);
    }
    Ok((Window { kernel, strides, dilations, pads }, out))
}

fn conv(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let (Some(x), Some(w)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    if w.len() != x.len() || w.len() < 3 {
        return Err(ctx.err(format!("weight shape {w:?} does not match input shape {x:?}")));
    }
    let group = ctx.node.attr_int("group").unwrap_or(1);
    let group_ok =
        group >= 1 && (w[1] as u128) * (group as u128) == x[1] as u128 && (w[0] as u128).is_multiple_of(group as u128);
    if !group_ok {
        return Err(ctx.err(format!("input channels {} do not match weight {w:?} with group {group}", x[1])));
    }
    let kernel = match ctx.node.attr_ints("kernel_shape") {
        Some(k) => k.iter().map(|&v| v.max(0) as usize).collect(),
        None => w[2..].to_vec(),
    };
    if kernel != w[2..] {
        return Err(ctx.err(format!("kernel_shape {kernel:?} disagrees with weight shape {w:?}")));
    }
    if ctx.has(2) {
        if let Some(b) = ctx.shape(2)? {
            if b != [w[0]] {
                return Err(ctx.err(format!("bias shape {b:?} should be [{}]", w[0])));
            }
        }
    }
    let (_, spatial) = window(ctx, &x, kernel, false)?;
    let mut out = vec![x[0], w[0]];
    out.extend(spatial);
    Ok(vec![TensorType::new(dtype, &out)])
}

fn conv_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dx = ctx.same_as(1)?;
    let dw = ctx.same_as(2)?;
    let db = match ctx.shape(2)? {
        Some(w) if !w.is_empty() => TensorType::new(dw.dtype, &[w[0]]),
        _ => TensorType::unknown(dw.dtype),
    };
    Ok(vec![dx, dw, db])
}
