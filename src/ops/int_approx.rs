//! Integer-only approximations that quantlib exports for integerised
//! transformers and Deeploy runs (its Generic C kernels): iSoftmax,
//! ITAMax, ITAPartialMax, iRMSNorm, iLayerNorm, iHardswish, iGELU, iNoNorm,
//! TrueIntegerDiv and IntegerDiv, in any domain (`PACTOps`, the default one).
//!
//! Their tensors hold integer values, declared f32 or i32 as in
//! RequantShift's graphs; the kernels (runtime/kernels/requant.c) compute
//! as Deeploy's do, on the real values the references hold, and
//! `dg_k_quant.h` states each formula. Each operator's attributes are read
//! once, into its parameter struct, by the shape rule and the binding
//! alike.

use super::kernel::{broadcast_strides, call, dims_list, max_dims, numel, one, u, Arg, Kernel, KernelCall, KernelCtx};
use super::requant::whole_attr;
use super::{Ctx, OpDef};
use crate::error::{Error, Result};
use crate::ir::{DType, Node, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "iSoftmax",
        attrs: &["coeffA", "coeffB", "coeffC", "log2", "n_levels", "axis"],
        infer: |c| rowwise(c, 1, isoftmax(c.node).map(drop), false),
        kernel: Some(Kernel::Bind(bind_isoftmax)),
        ..OpDef::BASE
    },
    OpDef {
        name: "ITAMax",
        attrs: &["n_levels", "axis"],
        infer: |c| rowwise(c, 1, itamax(c.node, false).map(drop), false),
        kernel: Some(Kernel::Bind(|c| bind_itamax(c, false))),
        ..OpDef::BASE
    },
    OpDef {
        name: "ITAPartialMax",
        attrs: &["group_width", "n_levels", "axis"],
        infer: |c| rowwise(c, 1, itamax(c.node, true).map(drop), false),
        kernel: Some(Kernel::Bind(|c| bind_itamax(c, true))),
        ..OpDef::BASE
    },
    // iRMSNorm(x, weight){D, n_levels, axis}: weight holds one value per
    // element of the normalised trailing dims (from `axis`, the last by
    // default).
    OpDef {
        name: "iRMSNorm",
        attrs: &["D", "n_levels", "axis", "stash_type"],
        required: &[0, 1],
        infer: |c| rowwise(c, 2, inorm(c.node).map(drop), true),
        kernel: Some(Kernel::Bind(|c| bind_inorm(c, "dg_irmsnorm"))),
        ..OpDef::BASE
    },
    // iLayerNorm(x, weight, bias){D, n_levels}: over the last axis.
    OpDef {
        name: "iLayerNorm",
        attrs: &["D", "n_levels", "axis"],
        required: &[0, 1, 2],
        infer: |c| rowwise(c, 3, inorm(c.node).map(drop), false),
        kernel: Some(Kernel::Bind(|c| bind_inorm(c, "dg_ilayernorm"))),
        ..OpDef::BASE
    },
    OpDef {
        name: "iHardswish",
        attrs: &["one_over_six", "three", "six"],
        infer: |c| pointwise(c, ihardswish(c.node).map(drop)),
        kernel: Some(Kernel::Bind(|c| bind_ipoint(c, "dg_ihardswish", ihardswish(c.node)?))),
        ..OpDef::BASE
    },
    OpDef {
        name: "iGELU",
        attrs: &["b", "one"],
        infer: |c| pointwise(c, igelu(c.node).map(drop)),
        kernel: Some(Kernel::Bind(|c| bind_ipoint(c, "dg_igelu", igelu(c.node)?))),
        ..OpDef::BASE
    },
    // TrueIntegerDiv(x){Delta, eps, eta, y}: x divided by the constant y.
    OpDef {
        name: "TrueIntegerDiv",
        attrs: &["Delta", "eps", "eta", "y"],
        infer: |c| pointwise(c, true_div(c.node).map(drop)),
        kernel: Some(Kernel::Bind(|c| bind_ipoint(c, "dg_itrue_div", true_div(c.node)?))),
        ..OpDef::BASE
    },
    // IntegerDiv(a, b){Delta, eps, eta}: a / b, rounded half away from
    // zero; a and b broadcast (numpy rules).
    OpDef {
        name: "IntegerDiv",
        attrs: &["Delta", "eps", "eta"],
        required: &[0, 1],
        infer: integer_div,
        kernel: Some(Kernel::Bind(bind_integer_div)),
        ..OpDef::BASE
    },
    // iNoNorm(x, weights, bias){D, mul, n_levels}: weights and bias
    // broadcast to x.
    OpDef {
        name: "iNoNorm",
        attrs: &["D", "mul", "n_levels"],
        required: &[0, 1, 2],
        infer: nonorm,
        kernel: Some(Kernel::Bind(bind_inonorm)),
        ..OpDef::BASE
    },
];

/// A required whole-number attribute within `lo..=hi`.
fn need(node: &Node, name: &str, lo: i64, hi: i64) -> Result<i64> {
    let v = whole_attr(node, name)?.ok_or_else(|| Error::node(node, format!("attribute '{name}' is required")))?;
    if !(lo..=hi).contains(&v) {
        return Err(Error::node(node, format!("attribute '{name}' = {v} is out of range {lo}..={hi}")));
    }
    Ok(v)
}

/// `D` as its base-2 logarithm: Deeploy shifts by log2(D).
fn log2_of(node: &Node) -> Result<i64> {
    let d = need(node, "D", 1, 1 << 30)?;
    if d & (d - 1) != 0 {
        return Err(Error::node(
            node,
            format!("attribute 'D' = {d} must be a power of two (Deeploy shifts by log2 D)"),
        ));
    }
    Ok(i64::from(d.trailing_zeros()))
}

/// The signed range of `n_levels` values.
fn signed_range(node: &Node) -> Result<(i64, i64)> {
    let levels = need(node, "n_levels", 2, 1 << 31)?;
    Ok((-(levels / 2), levels / 2 - 1))
}

const I32_MAX: i64 = i32::MAX as i64;

/// iSoftmax's polynomial and level count.
struct ISoftmax {
    a: i64,
    b: i64,
    c: i64,
    log2: i64,
    levels: i64,
}

fn isoftmax(node: &Node) -> Result<ISoftmax> {
    Ok(ISoftmax {
        a: need(node, "coeffA", -I32_MAX, I32_MAX)?,
        b: need(node, "coeffB", -I32_MAX, I32_MAX)?,
        c: need(node, "coeffC", -I32_MAX, I32_MAX)?,
        log2: need(node, "log2", 1, i64::from(i16::MAX))?,
        levels: need(node, "n_levels", 2, 1 << 24)?,
    })
}

/// ITAMax's level count and, for ITAPartialMax, its group width.
fn itamax(node: &Node, partial: bool) -> Result<(i64, i64)> {
    if !partial {
        return Ok((need(node, "n_levels", 2, 1 << 24)?, 0));
    }
    Ok((need(node, "n_levels", 4, 1 << 24)?, need(node, "group_width", 1, I32_MAX)?))
}

/// The shift and output range of iRMSNorm and iLayerNorm.
fn inorm(node: &Node) -> Result<(i64, i64, i64)> {
    let (lo, hi) = signed_range(node)?;
    Ok((log2_of(node)?, lo, hi))
}

/// The constants a, b, c of `dg_ipoint_args_t`.
type Point = (i64, i64, i64);

fn ihardswish(node: &Node) -> Result<Point> {
    Ok((
        need(node, "one_over_six", -I32_MAX, I32_MAX)?,
        need(node, "three", -I32_MAX, I32_MAX)?,
        need(node, "six", 0, I32_MAX)?,
    ))
}

fn igelu(node: &Node) -> Result<Point> {
    Ok((need(node, "b", -I32_MAX, 0)?, need(node, "one", -I32_MAX, I32_MAX)?, 0))
}

/// x * Delta * eta / (y * eta + eps), floored.
fn true_div(node: &Node) -> Result<Point> {
    let (delta, eps) = (need(node, "Delta", 0, I32_MAX)?, need(node, "eps", 0, I32_MAX)?);
    let (eta, y) = (need(node, "eta", 1, I32_MAX)?, need(node, "y", 1, I32_MAX)?);
    Ok((delta * eta, y * eta + eps, 0))
}

/// IntegerDiv's Delta * eta, eta and eps.
fn idiv(node: &Node) -> Result<(i64, i64, i64)> {
    let (delta, eps, eta) =
        (need(node, "Delta", 0, I32_MAX)?, need(node, "eps", 0, I32_MAX)?, need(node, "eta", 1, I32_MAX)?);
    Ok((delta * eta, eta, eps))
}

/// iNoNorm's multiplier, shift and output range.
fn inonorm(node: &Node) -> Result<(i64, i64, i64, i64)> {
    let (lo, hi) = signed_range(node)?;
    Ok((need(node, "mul", -I32_MAX, I32_MAX)?, log2_of(node)?, lo, hi))
}

/// x's dtype, f32 or i32 (the output's too).
fn int_dtype(ctx: &Ctx, slot: usize) -> Result<DType> {
    match ctx.dtype(slot)? {
        d @ (DType::F32 | DType::I32) => Ok(d),
        other => Err(ctx.err(format!("input {slot} is {other}; {} takes f32 or i32", ctx.node.op))),
    }
}

/// Same type as x; the normalised axis is the last one (Deeploy's
/// kernels read rows of contiguous values), except iRMSNorm's, which
/// normalises every dim from `axis` on.
fn rowwise(ctx: &Ctx, inputs: usize, attrs: Result<()>, trailing: bool) -> Result<Vec<TensorType>> {
    attrs?;
    for i in 0..inputs {
        int_dtype(ctx, i)?;
    }
    let dtype = int_dtype(ctx, 0)?;
    let Some(x) = ctx.shape(0)? else { return Ok(vec![TensorType::unknown(dtype)]) };
    let (_, len) = rows(ctx.node, &x, trailing).map_err(|e| ctx.err(e.to_string()))?;
    for i in 1..inputs {
        if let Some(s) = ctx.shape(i)? {
            if numel(&s) != len {
                return Err(ctx.err(format!(
                    "input {i} holds {} values; it must hold one per normalised element ({len})",
                    numel(&s)
                )));
            }
        }
    }
    Ok(vec![TensorType::new(dtype, &x)])
}

/// (rows, values per row) of x: with `trailing` (iRMSNorm) the dims from
/// `axis` on, else the last axis (any other `axis` is refused).
fn rows(node: &Node, x: &[usize], trailing: bool) -> std::result::Result<(usize, usize), RowsError> {
    let rank = x.len() as i64;
    if rank == 0 {
        return Err(RowsError::Scalar);
    }
    let axis = match node.attrs.get("axis") {
        None => rank - 1,
        Some(crate::ir::Attr::Int(a)) if (-rank..rank).contains(a) => a.rem_euclid(rank),
        Some(other) => return Err(RowsError::NotAnAxis { attr: format!("{other:?}"), rank }),
    } as usize;
    if !trailing && axis as i64 != rank - 1 {
        return Err(RowsError::NotLast(axis));
    }
    let len = numel(&x[axis..]);
    Ok((numel(x) / len.max(1), len))
}

/// Why `rows` refuses a node's `axis`.
#[derive(Debug, thiserror::Error)]
enum RowsError {
    #[error("x must have at least one dimension")]
    Scalar,
    #[error("attribute 'axis' = {attr} is not an axis of rank {rank}")]
    NotAnAxis { attr: String, rank: i64 },
    #[error("axis {0} is not the last one; Deeploy's kernel reads the last axis")]
    NotLast(usize),
}

fn pointwise(ctx: &Ctx, attrs: Result<()>) -> Result<Vec<TensorType>> {
    attrs?;
    let dtype = int_dtype(ctx, 0)?;
    Ok(vec![match ctx.shape(0)? {
        Some(x) => TensorType::new(dtype, &x),
        None => TensorType::unknown(dtype),
    }])
}

fn nonorm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    inonorm(ctx.node)?;
    let dtype = int_dtype(ctx, 0)?;
    int_dtype(ctx, 1)?;
    int_dtype(ctx, 2)?;
    let Some(x) = ctx.shape(0)? else { return Ok(vec![TensorType::unknown(dtype)]) };
    for i in [1, 2] {
        if let Some(s) = ctx.shape(i)? {
            let fits = s.len() <= x.len() && s.iter().rev().zip(x.iter().rev()).all(|(&a, &b)| a == 1 || a == b);
            if !fits {
                return Err(ctx.err(format!("input {i} of shape {s:?} does not broadcast to x's shape {x:?}")));
            }
        }
    }
    Ok(vec![TensorType::new(dtype, &x)])
}

/// The numpy broadcast of a and b.
fn integer_div(ctx: &Ctx) -> Result<Vec<TensorType>> {
    idiv(ctx.node)?;
    let dtype = int_dtype(ctx, 0)?;
    int_dtype(ctx, 1)?;
    let (Some(a), Some(b)) = (ctx.shape(0)?, ctx.shape(1)?) else { return Ok(vec![TensorType::unknown(dtype)]) };
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], d: usize| if d + s.len() < rank { 1 } else { s[d + s.len() - rank] };
    let mut y = Vec::with_capacity(rank);
    for d in 0..rank {
        let (p, q) = (dim(&a, d), dim(&b, d));
        if p != q && p != 1 && q != 1 {
            return Err(ctx.err(format!("inputs of shapes {a:?} and {b:?} do not broadcast")));
        }
        y.push(if p == 1 { q } else { p });
    }
    Ok(vec![TensorType::new(dtype, &y)])
}

fn dtype_code(d: DType) -> Arg {
    Arg::Enum(if d == DType::I32 { "DG_DT_I32" } else { "DG_DT_F32" })
}

/// x, y, rows and len of a row-wise kernel.
fn row_fields(ctx: &KernelCtx, trailing: bool) -> Result<Vec<(&'static str, Arg)>> {
    let x = ctx.in_shape(0)?;
    let (rows, len) = rows(ctx.node, &x, trailing).map_err(|e| ctx.err(e.to_string()))?;
    Ok(vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("rows", u(rows)), ("len", u(len))])
}

fn io_dtypes(ctx: &KernelCtx, fields: &mut Vec<(&'static str, Arg)>) -> Result<()> {
    fields.push(("x_dtype", dtype_code(ctx.in_dtype(0)?)));
    fields.push(("y_dtype", dtype_code(ctx.out_dtype(0)?)));
    Ok(())
}

fn bind_isoftmax(ctx: &KernelCtx) -> Result<KernelCall> {
    let p = isoftmax(ctx.node)?;
    let mut f = row_fields(ctx, false)?;
    f.extend([("coeff_a", Arg::I(p.a)), ("coeff_b", Arg::I(p.b)), ("log2", Arg::I(p.log2)), ("coeff_c", Arg::I(p.c))]);
    f.extend([("n_levels", Arg::U(p.levels as u64)), ("group", u(0))]);
    io_dtypes(ctx, &mut f)?;
    one(call("dg_isoftmax", "dg_isoftmax_args_t", f))
}

fn bind_itamax(ctx: &KernelCtx, partial: bool) -> Result<KernelCall> {
    let (levels, group) = itamax(ctx.node, partial)?;
    let mut f = row_fields(ctx, false)?;
    let len = ctx.in_shape(0)?.last().copied().unwrap_or(1) as i64;
    if group > 0 && len % group != 0 {
        return Err(ctx.err(format!("group_width {group} does not divide the last axis ({len})")));
    }
    // The polynomial's fields are iSoftmax's; zero here.
    f.extend([("coeff_a", Arg::I(0)), ("coeff_b", Arg::I(0)), ("log2", Arg::I(0)), ("coeff_c", Arg::I(0))]);
    f.extend([("n_levels", Arg::U(levels as u64)), ("group", Arg::U(group as u64))]);
    io_dtypes(ctx, &mut f)?;
    one(call("dg_itamax", "dg_isoftmax_args_t", f))
}

/// iRMSNorm (no bias) and iLayerNorm (bias, last axis).
fn bind_inorm(ctx: &KernelCtx, func: &'static str) -> Result<KernelCall> {
    let (log2d, lo, hi) = inorm(ctx.node)?;
    let bias = ctx.node.inputs.len() >= 3;
    let mut f = row_fields(ctx, !bias)?;
    f.insert(1, ("w", ctx.inp(1)?));
    f.insert(2, ("b", if bias { ctx.inp(2)? } else { Arg::Null }));
    f.extend([("log2d", Arg::I(log2d)), ("lo", Arg::I(lo)), ("hi", Arg::I(hi))]);
    f.push(("x_dtype", dtype_code(ctx.in_dtype(0)?)));
    f.push(("w_dtype", dtype_code(ctx.in_dtype(1)?)));
    f.push(("b_dtype", dtype_code(if bias { ctx.in_dtype(2)? } else { DType::F32 })));
    f.push(("y_dtype", dtype_code(ctx.out_dtype(0)?)));
    one(call(func, "dg_inorm_args_t", f))
}

fn bind_ipoint(ctx: &KernelCtx, func: &'static str, (a, b, c): Point) -> Result<KernelCall> {
    let n = numel(&ctx.out_shape(0)?);
    let mut f = vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n))];
    f.extend([("a", Arg::I(a)), ("b", Arg::I(b)), ("c", Arg::I(c))]);
    io_dtypes(ctx, &mut f)?;
    one(call(func, "dg_ipoint_args_t", f))
}

fn bind_inonorm(ctx: &KernelCtx) -> Result<KernelCall> {
    let (mul, log2d, lo, hi) = inonorm(ctx.node)?;
    let y = ctx.out_shape(0)?;
    let (w, b) = (ctx.in_shape(1)?, ctx.in_shape(2)?);
    let mut f =
        vec![("x", ctx.inp(0)?), ("w", ctx.inp(1)?), ("b", ctx.inp(2)?), ("y", ctx.out(0)?), ("n", u(numel(&y)))];
    if numel(&w) == 1 && numel(&b) == 1 {
        f.push(("ndim", u(0)));
    } else {
        max_dims(ctx, y.len())?;
        f.push(("ndim", u(y.len())));
        f.push(("shape", dims_list(&y)));
        f.push(("w_strides", dims_list(&broadcast_strides(ctx, &w, &y)?)));
        f.push(("b_strides", dims_list(&broadcast_strides(ctx, &b, &y)?)));
    }
    f.extend([("mul", Arg::I(mul)), ("log2d", Arg::I(log2d)), ("lo", Arg::I(lo)), ("hi", Arg::I(hi))]);
    f.push(("x_dtype", dtype_code(ctx.in_dtype(0)?)));
    f.push(("w_dtype", dtype_code(ctx.in_dtype(1)?)));
    f.push(("b_dtype", dtype_code(ctx.in_dtype(2)?)));
    f.push(("y_dtype", dtype_code(ctx.out_dtype(0)?)));
    one(call("dg_inonorm", "dg_inonorm_args_t", f))
}

fn bind_integer_div(ctx: &KernelCtx) -> Result<KernelCall> {
    let (delta_eta, eta, eps) = idiv(ctx.node)?;
    let y = ctx.out_shape(0)?;
    max_dims(ctx, y.len())?;
    let (a, b) = (ctx.in_shape(0)?, ctx.in_shape(1)?);
    let mut f = vec![("a", ctx.inp(0)?), ("b", ctx.inp(1)?), ("y", ctx.out(0)?), ("n", u(numel(&y)))];
    f.push(("ndim", u(y.len())));
    f.push(("shape", dims_list(&y)));
    f.push(("a_strides", dims_list(&broadcast_strides(ctx, &a, &y)?)));
    f.push(("b_strides", dims_list(&broadcast_strides(ctx, &b, &y)?)));
    f.extend([("delta_eta", Arg::I(delta_eta)), ("eta", Arg::I(eta)), ("eps", Arg::I(eps))]);
    f.push(("a_dtype", dtype_code(ctx.in_dtype(0)?)));
    f.push(("b_dtype", dtype_code(ctx.in_dtype(1)?)));
    f.push(("y_dtype", dtype_code(ctx.out_dtype(0)?)));
    one(call("dg_integer_div", "dg_integer_div_args_t", f))
}
