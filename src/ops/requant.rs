//! Deeploy's integer-emulation operators on integer-valued tensors:
//! RequantShift (domain '' or 'ai.onnx.contrib'; quantlib exports it).
//! Its kernel (runtime/kernels/requant.c) computes as Deeploy's Generic
//! target does: `clip(floor((x * mul + add + div / 2) / div), lo, hi)`
//! in 64-bit integers, with `lo, hi` the signed or unsigned range of
//! `n_levels` values (Deeploy's template passes `rounding = 1`). mul and
//! add broadcast to x, or hold one value per channel (axis 1) as Deeploy's
//! kernel reads them.

use super::kernel::{broadcast_strides, call, dims_list, max_dims, numel, one, u, Arg, Kernel, KernelCall, KernelCtx};
use super::{Ctx, OpDef};
use crate::error::{Error, Result};
use crate::ir::{Attr, DType, Node, TensorType};

pub const OPS: &[OpDef] = &[
    // RequantShift(x, mul, add){div, n_levels, signed}: mul and add
    // broadcast to x; the attributes are INT, FLOAT or one-value TENSOR
    // (quantlib writes float tensors). Older exports spell n_levels
    // `n_levels_out`.
    OpDef {
        name: "RequantShift",
        attrs: &["div", "n_levels", "signed"],
        renamed: &[("n_levels_out", "n_levels")],
        required: &[0, 1, 2],
        infer: requant_shift,
        kernel: Some(Kernel::Bind(bind_requant_shift)),
        ..OpDef::BASE
    },
];

/// RequantShift's attributes, checked.
struct Rqs {
    div: i64,
    lo: i64,
    hi: i64,
}

/// A one-value attribute (INT, FLOAT or a one-element TENSOR) that must
/// be a whole number.
pub(super) fn whole_attr(node: &Node, name: &str) -> Result<Option<i64>> {
    let wrong = |what: String| Error::node(node, format!("attribute '{name}' {what}"));
    let v: f64 = match node.attrs.get(name) {
        None => return Ok(None),
        Some(Attr::Int(v)) => return Ok(Some(*v)),
        Some(Attr::Float(v)) => f64::from(*v),
        Some(Attr::Tensor(t)) => match (t.to_f32(), t.to_i64()) {
            (Some(v), _) if v.len() == 1 => f64::from(v[0]),
            (_, Some(v)) if v.len() == 1 => v[0] as f64,
            _ => return Err(wrong(format!("must hold one number, found {} {:?}", t.dtype, t.shape))),
        },
        Some(_) => return Err(wrong("must be an INT, FLOAT or one-value TENSOR".to_string())),
    };
    if v.fract() != 0.0 || !v.is_finite() || v.abs() > (1u64 << 31) as f64 {
        return Err(wrong(format!("= {v} is not a whole number within 32 bits")));
    }
    Ok(Some(v as i64))
}

fn rqs(node: &Node) -> Result<Rqs> {
    let div = whole_attr(node, "div")?.ok_or_else(|| Error::node(node, "attribute 'div' is required"))?;
    if !(1..=i64::from(i32::MAX)).contains(&div) {
        return Err(Error::node(node, format!("attribute 'div' = {div} must be at least 1")));
    }
    let levels = whole_attr(node, "n_levels")?.ok_or_else(|| Error::node(node, "attribute 'n_levels' is required"))?;
    if !(2..=1i64 << 31).contains(&levels) {
        return Err(Error::node(node, format!("attribute 'n_levels' = {levels} is out of range 2..=2^31")));
    }
    let signed = match whole_attr(node, "signed")?.unwrap_or(1) {
        0 => false,
        1 => true,
        other => return Err(Error::node(node, format!("attribute 'signed' = {other} must be 0 or 1"))),
    };
    let (lo, hi) = if signed { (-(levels / 2), levels / 2 - 1) } else { (0, levels - 1) };
    Ok(Rqs { div, lo, hi })
}

/// The output has x's shape; it is i32 when any input is i32, else f32
/// (Deeploy's integer graphs declare either).
fn requant_shift(ctx: &Ctx) -> Result<Vec<TensorType>> {
    rqs(ctx.node)?;
    let mut any_i32 = false;
    for i in 0..3 {
        match ctx.dtype(i)? {
            DType::F32 => {}
            DType::I32 => any_i32 = true,
            other => return Err(ctx.err(format!("input {i} is {other}; RequantShift takes f32 or i32"))),
        }
    }
    let dtype = if any_i32 { DType::I32 } else { DType::F32 };
    let Some(x) = ctx.shape(0)? else { return Ok(vec![TensorType::unknown(dtype)]) };
    for i in [1, 2] {
        if let Some(s) = ctx.shape(i)? {
            if !broadcasts(&x, &s) && !per_channel(&x, &s) {
                return Err(ctx.err(format!(
                    "input {i} of shape {s:?} neither broadcasts to x's shape {x:?} nor holds one value per \
                     channel (axis 1)"
                )));
            }
        }
    }
    Ok(vec![TensorType::new(dtype, &x)])
}

/// `s` broadcasts to `x` (numpy rules) without changing it.
fn broadcasts(x: &[usize], s: &[usize]) -> bool {
    s.len() <= x.len() && s.iter().rev().zip(x.iter().rev()).all(|(&a, &b)| a == 1 || a == b)
}

/// `s` holds one value per channel of `x` (axis 1) whatever its own
/// shape: Deeploy's kernel reads mul and add as `[C]` over NCHW data
/// (`mul[i / HW]`), so quantlib writes `[C, 1, 1]` for a 1-D convolution.
fn per_channel(x: &[usize], s: &[usize]) -> bool {
    x.len() >= 2 && s.iter().product::<usize>() == x[1]
}

/// Element strides of `s` (a mul or add) per dimension of `y`.
fn strides(ctx: &KernelCtx, s: &[usize], y: &[usize]) -> Result<Vec<usize>> {
    if broadcasts(y, s) {
        return broadcast_strides(ctx, s, y);
    }
    Ok((0..y.len()).map(|d| usize::from(d == 1)).collect())
}

fn dtype_code(d: DType) -> Arg {
    Arg::Enum(if d == DType::I32 { "DG_DT_I32" } else { "DG_DT_F32" })
}

fn bind_requant_shift(ctx: &KernelCtx) -> Result<KernelCall> {
    let r = rqs(ctx.node)?;
    let y = ctx.out_shape(0)?;
    let (m, a) = (ctx.in_shape(1)?, ctx.in_shape(2)?);
    let mut fields =
        vec![("x", ctx.inp(0)?), ("mul", ctx.inp(1)?), ("add", ctx.inp(2)?), ("y", ctx.out(0)?), ("n", u(numel(&y)))];
    if numel(&m) == 1 && numel(&a) == 1 {
        fields.push(("ndim", u(0)));
    } else {
        max_dims(ctx, y.len())?;
        fields.push(("ndim", u(y.len())));
        fields.push(("shape", dims_list(&y)));
        fields.push(("mul_strides", dims_list(&strides(ctx, &m, &y)?)));
        fields.push(("add_strides", dims_list(&strides(ctx, &a, &y)?)));
    }
    fields.push(("div", Arg::I(r.div)));
    fields.push(("lo", Arg::I(r.lo)));
    fields.push(("hi", Arg::I(r.hi)));
    for (name, slot) in [("x_dtype", 0), ("mul_dtype", 1), ("add_dtype", 2)] {
        fields.push((name, dtype_code(ctx.in_dtype(slot)?)));
    }
    fields.push(("y_dtype", dtype_code(ctx.out_dtype(0)?)));
    one(call("dg_requant_shift", "dg_requant_shift_args_t", fields))
}
