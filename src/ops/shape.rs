//! Data-movement and shape operators. Most of them fold when their inputs
//! are constant, which is how static shape subgraphs (Shape → Gather →
//! Concat → Reshape) disappear at import.

use super::grad;
use super::kernel::{
    broadcast_strides, call, dims_list, elem_size, ints_list, max_dims, numel, one, strides, u, Arg, Kernel,
    KernelCall, KernelCtx, Local,
};
use super::tile::{Part, Space, TileMap, TileRefusal, TileRule, Tileable};
use super::{checked_numel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorData, TensorType};

/// Gather's `axis` default (ONNX's).
const GATHER_AXIS: i64 = 0;

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Identity",
        infer: identity,
        fold: Some(fold_identity),
        view: true,
        kernel: Some(Kernel::Bind(bind_copy)),
        grad: Some(grad::reshape_back),
        recompute: Some(super::recompute_copy),
        ..OpDef::BASE
    },
    OpDef {
        name: "Transpose",
        attrs: &["perm"],
        infer: transpose,
        kernel: Some(Kernel::Bind(bind_transpose)),
        grad: Some(transpose_grad),
        tile: Some(TRANSPOSE_TILES),
        recompute: Some(super::recompute_copy),
        qdq: Some(super::quant::Qdq::Passthrough),
        ..OpDef::BASE
    },
    OpDef {
        name: "Reshape",
        attrs: &["allowzero"],
        infer: reshape,
        required: &[0, 1],
        fold: Some(fold_view),
        compile_time: &[1],
        view: true,
        kernel: Some(Kernel::Bind(bind_copy)),
        grad: Some(grad::reshape_back),
        recompute: Some(super::recompute_copy),
        qdq: Some(super::quant::Qdq::Passthrough),
        ..OpDef::BASE
    },
    OpDef {
        name: "Squeeze",
        attrs: &["axes"],
        infer: squeeze,
        fold: Some(fold_view),
        compile_time: &[1],
        view: true,
        kernel: Some(Kernel::Bind(bind_copy)),
        grad: Some(grad::reshape_back),
        recompute: Some(super::recompute_copy),
        qdq: Some(super::quant::Qdq::Passthrough),
        ..OpDef::BASE
    },
    OpDef {
        name: "Unsqueeze",
        attrs: &["axes"],
        infer: unsqueeze,
        fold: Some(fold_view),
        compile_time: &[1],
        view: true,
        kernel: Some(Kernel::Bind(bind_copy)),
        grad: Some(grad::reshape_back),
        recompute: Some(super::recompute_copy),
        qdq: Some(super::quant::Qdq::Passthrough),
        ..OpDef::BASE
    },
    OpDef {
        name: "Flatten",
        attrs: &["axis"],
        infer: flatten,
        fold: Some(fold_view),
        view: true,
        kernel: Some(Kernel::Bind(bind_copy)),
        grad: Some(grad::reshape_back),
        recompute: Some(super::recompute_copy),
        qdq: Some(super::quant::Qdq::Passthrough),
        ..OpDef::BASE
    },
    OpDef {
        name: "Concat",
        attrs: &["axis"],
        infer: concat,
        fold: Some(fold_concat),
        kernel: Some(Kernel::Bind(|c| bind_concat(c, false))),
        grad: Some(concat_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "Slice",
        attrs: &["axes", "ends", "starts"],
        infer: slice,
        fold: Some(fold_slice),
        compile_time: &[1, 2, 3, 4],
        kernel: Some(Kernel::Bind(bind_slice)),
        ..OpDef::BASE
    },
    OpDef {
        name: "Expand",
        infer: expand,
        required: &[0, 1],
        compile_time: &[1],
        kernel: Some(Kernel::Bind(bind_expand)),
        ..OpDef::BASE
    },
    OpDef {
        name: "Tile",
        infer: tile,
        required: &[0, 1],
        compile_time: &[1],
        kernel: Some(Kernel::Bind(bind_tile)),
        ..OpDef::BASE
    },
    OpDef {
        name: "Gather",
        attrs: &["axis"],
        infer: gather,
        required: &[0, 1],
        compile_time: &[1],
        data_when_not_constant: &[1],
        fold: Some(fold_gather),
        kernel: Some(Kernel::Bind(bind_gather)),
        grad: Some(gather_grad),
        ..OpDef::BASE
    },
];

fn identity(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![ctx.same_as(0)?])
}

fn unknown(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![TensorType::unknown(ctx.dtype(0)?)])
}

fn transpose(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let perm_attr = ctx.node.ints("perm")?;
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    let perm: Vec<usize> = match perm_attr {
        Some(p) => p.iter().map(|&a| ctx.axis(a, x.len())).collect::<Result<_>>()?,
        None => (0..x.len()).rev().collect(),
    };
    let mut seen = perm.clone();
    seen.sort_unstable();
    if seen != (0..x.len()).collect::<Vec<_>>() {
        return Err(ctx.err(format!("perm {perm:?} is not a permutation of rank {}", x.len())));
    }
    let out: Vec<usize> = perm.iter().map(|&p| x[p]).collect();
    Ok(vec![TensorType::new(dtype, &out)])
}

fn reshape(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(spec) = ctx.ints_attr_or_input("shape", 1)? else {
        return Err(ctx.err("the target shape (input 1) is required"));
    };
    let allowzero = ctx.node.flag("allowzero", false)?;
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    let total = checked_numel(ctx, &x)?;
    let mut out = Vec::with_capacity(spec.len());
    let mut infer_at = None;
    for (i, &s) in spec.iter().enumerate() {
        match s {
            -1 if infer_at.is_none() => {
                infer_at = Some(i);
                out.push(1);
            }
            0 if !allowzero => match x.get(i) {
                Some(&d) => out.push(d),
                None => return Err(ctx.err(format!("shape {spec:?}: 0 at dim {i} copies a dim the input {x:?} lacks"))),
            },
            s if s >= 0 => out.push(s as usize),
            _ => return Err(ctx.err(format!("shape {spec:?} is invalid"))),
        }
    }
    let known = checked_numel(ctx, &out)?;
    if let Some(i) = infer_at {
        if known == 0 || total % known != 0 {
            return Err(ctx.err(format!("cannot reshape {x:?} to {spec:?}")));
        }
        out[i] = total / known;
    } else if known != total {
        return Err(ctx.err(format!("cannot reshape {x:?} ({total} elements) to {out:?}")));
    }
    Ok(vec![TensorType::new(dtype, &out)])
}

fn squeeze(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    let axes = ctx.ints_attr_or_input("axes", 1)?;
    let out: Vec<usize> = match axes {
        None => x.iter().copied().filter(|&d| d != 1).collect(),
        Some(a) => {
            let axes = a.iter().map(|&v| ctx.axis(v, x.len())).collect::<Result<Vec<_>>>()?;
            for &a in &axes {
                if x[a] != 1 {
                    return Err(ctx.err(format!("cannot squeeze axis {a} of {x:?}: it is not 1")));
                }
            }
            x.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect()
        }
    };
    Ok(vec![TensorType::new(dtype, &out)])
}

fn unsqueeze(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(axes) = ctx.ints_attr_or_input("axes", 1)? else {
        return Err(ctx.err("axes are required"));
    };
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    let rank = x.len() + axes.len();
    let mut axes = axes.iter().map(|&a| ctx.axis(a, rank)).collect::<Result<Vec<_>>>()?;
    axes.sort_unstable();
    let mut out = Vec::with_capacity(rank);
    let mut src = x.iter();
    for i in 0..rank {
        if axes.contains(&i) {
            out.push(1);
        } else {
            out.push(*src.next().ok_or_else(|| ctx.err(format!("duplicate axes {axes:?}")))?);
        }
    }
    Ok(vec![TensorType::new(dtype, &out)])
}

fn flatten(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    let axis = ctx.node.int("axis")?.unwrap_or(1);
    let r = x.len() as i64;
    if axis < -r || axis > r {
        return Err(ctx.err(format!("attribute 'axis' = {axis} is out of range {}..={r} for rank {r}", -r)));
    }
    let a = if axis < 0 { axis + r } else { axis } as usize;
    let out = [checked_numel(ctx, &x[..a])?, checked_numel(ctx, &x[a..])?];
    Ok(vec![TensorType::new(dtype, &out)])
}

fn concat(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let axis = ctx.node.int("axis")?.ok_or_else(|| ctx.err("attribute 'axis' is required"))?;
    let mut out: Option<Vec<usize>> = None;
    let mut ax = 0;
    for i in 0..ctx.node.inputs.len() {
        let Some(s) = ctx.shape(i)? else { return unknown(ctx) };
        match &mut out {
            None => {
                ax = ctx.axis(axis, s.len())?;
                out = Some(s);
            }
            Some(o) => {
                let ok = o.len() == s.len() && (0..s.len()).all(|d| d == ax || o[d] == s[d]);
                if !ok {
                    return Err(
                        ctx.err(format!("input {i} shape {s:?} does not concatenate with {o:?} on axis {axis}"))
                    );
                }
                o[ax] = o[ax].checked_add(s[ax]).ok_or_else(|| ctx.err("concatenated dim overflows"))?;
            }
        }
    }
    let out = out.ok_or_else(|| ctx.err("needs at least one input"))?;
    Ok(vec![TensorType::new(dtype, &out)])
}

/// Resolved (start, end, step) per axis, numpy semantics clamped as ONNX.
fn slice_params(ctx: &Ctx, x: &[usize]) -> Result<Vec<(usize, i64, i64, i64)>> {
    let starts = ctx.ints_attr_or_input("starts", 1)?.ok_or_else(|| ctx.err("starts are required"))?;
    let ends = ctx.ints_attr_or_input("ends", 2)?.ok_or_else(|| ctx.err("ends are required"))?;
    let axes = ctx.ints_attr_or_input("axes", 3)?.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = if ctx.node.ints("starts")?.is_some() {
        vec![1; starts.len()]
    } else {
        ctx.ints_attr_or_input("steps", 4)?.unwrap_or(vec![1; starts.len()])
    };
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(ctx.err("starts, ends, axes and steps differ in length"));
    }
    let mut out = Vec::new();
    for i in 0..starts.len() {
        let a = ctx.axis(axes[i], x.len())?;
        let dim = x[a] as i64;
        let step = steps[i];
        if step == 0 {
            return Err(ctx.err("slice step 0 is invalid"));
        }
        let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let norm = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
        let (s, e) = if step > 0 {
            (clamp(norm(starts[i]), 0, dim), clamp(norm(ends[i]), 0, dim))
        } else {
            (clamp(norm(starts[i]), 0, dim - 1), clamp(norm(ends[i]), -1, dim - 1))
        };
        out.push((a, s, e, step));
    }
    Ok(out)
}

fn slice(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    let mut out = x.clone();
    for (a, s, e, step) in slice_params(ctx, &x)? {
        let (s, e, step) = (s as i128, e as i128, step as i128);
        let n = if step > 0 { (e - s + step - 1) / step } else { (s - e - step - 1) / -step };
        out[a] = n.max(0) as usize;
    }
    Ok(vec![TensorType::new(dtype, &out)])
}

fn expand(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(spec) = ctx.ints_attr_or_input("shape", 1)? else {
        return Err(ctx.err("the target shape (input 1) is required"));
    };
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    if spec.iter().any(|&d| d < 0) {
        return Err(ctx.err(format!("shape {spec:?} is invalid")));
    }
    let spec: Vec<usize> = spec.iter().map(|&d| d as usize).collect();
    let out = super::broadcast(ctx, &x, &spec)?;
    Ok(vec![TensorType::new(dtype, &out)])
}

/// Tile: every dim times its (constant) repeat count.
fn tile(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(reps) = ctx.konst_i64(1) else { return Err(ctx.not_constant(1, "repeats")) };
    let Some(x) = ctx.shape(0)? else { return unknown(ctx) };
    if reps.len() != x.len() || reps.iter().any(|&r| r < 0) {
        return Err(
            ctx.err(format!("repeats {reps:?} must hold one non-negative count per input dim (input shape {x:?})"))
        );
    }
    let out = x
        .iter()
        .zip(&reps)
        .map(|(&d, &r)| d.checked_mul(r as usize))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| ctx.err(format!("tiling shape {x:?} by {reps:?} overflows")))?;
    checked_numel(ctx, &out)?;
    Ok(vec![TensorType::new(dtype, &out)])
}

fn gather(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let (Some(x), Some(idx)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        ctx.node.int("axis")?;
        return unknown(ctx);
    };
    if x.is_empty() {
        return Err(ctx.err("cannot gather from a scalar"));
    }
    let a = ctx.axis_attr("axis", GATHER_AXIS, x.len())?;
    let mut out = x[..a].to_vec();
    out.extend(idx);
    out.extend_from_slice(&x[a + 1..]);
    super::split::check_indices(ctx, 1, x[a])?;
    Ok(vec![TensorType::new(dtype, &out)])
}

/// Gather on 1-D integer data (the shape-subgraph case).
fn fold_gather(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let (Some(d), Some(i)) = (ctx.konst(0), ctx.konst(1)) else { return Ok(None) };
    if d.shape.len() != 1 {
        return Ok(None);
    }
    let (Some(vals), Some(idx)) = (d.to_i64(), i.to_i64()) else { return Ok(None) };
    let n = vals.len() as i64;
    let mut out = Vec::with_capacity(idx.len());
    for &k in &idx {
        let k = if k < 0 { k + n } else { k };
        if k < 0 || k >= n {
            return Err(ctx.err(format!("index {k} is out of range for {n} elements")));
        }
        out.push(vals[k as usize]);
    }
    Ok(TensorData::from_i64_as(d.dtype, i.shape.clone(), &out).map(|t| vec![t]))
}

/// Same bytes, new shape (Reshape, Squeeze, Unsqueeze, Flatten).
fn fold_view(ctx: &Ctx, out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let Some(d) = ctx.konst(0) else { return Ok(None) };
    let Some(shape) = out.first().and_then(|t| t.shape()) else {
        return Ok(None);
    };
    Ok(Some(vec![TensorData { dtype: d.dtype, shape, bytes: d.bytes.clone() }]))
}

fn fold_concat(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let mut parts = Vec::new();
    for i in 0..ctx.node.inputs.len() {
        let Some(d) = ctx.konst(i) else { return Ok(None) };
        if d.shape.len() > 1 {
            return Ok(None);
        }
        parts.push(d);
    }
    let Some(first) = parts.first() else { return Ok(None) };
    let dtype = first.dtype;
    if parts.iter().any(|p| p.dtype != dtype) {
        return Err(ctx.err("inputs have different element types"));
    }
    let bytes: Vec<u8> = parts.iter().flat_map(|p| p.bytes.iter().copied()).collect();
    let n: usize = parts.iter().map(|p| p.numel()).sum();
    Ok(Some(vec![TensorData { dtype, shape: vec![n], bytes }]))
}

fn fold_slice(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let Some(d) = ctx.konst(0) else { return Ok(None) };
    if d.shape.len() != 1 {
        return Ok(None);
    }
    let Some(vals) = d.to_i64() else { return Ok(None) };
    let mut out = Vec::new();
    for (_, s, e, step) in slice_params(ctx, &d.shape)? {
        let (mut k, e, step) = (s as i128, e as i128, step as i128);
        while (step > 0 && k < e) || (step < 0 && k > e) {
            out.push(vals[k as usize]);
            k += step;
        }
    }
    Ok(TensorData::from_i64_as(d.dtype, vec![out.len()], &out).map(|t| vec![t]))
}

fn fold_identity(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    Ok(ctx.konst(0).map(|d| vec![d.clone()]))
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bind_copy(ctx: &KernelCtx) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    let bytes = numel(&ctx.in_shape(0)?) * elem_size(ctx, d)?;
    one(call("dg_copy_kernel", "dg_copy_args_t", vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("bytes", u(bytes))]))
}

pub(super) fn strided(
    ctx: &KernelCtx,
    func: &str,
    shape: &[usize],
    strides: &[i64],
    offset: i64,
) -> Result<KernelCall> {
    max_dims(ctx, shape.len())?;
    let es = elem_size(ctx, ctx.in_dtype(0)?)?;
    let fits = |v: i64| i32::try_from(v).is_ok();
    if !strides.iter().all(|&s| fits(s)) || !fits(offset) {
        return Err(ctx.err("strides do not fit the kernel's 32-bit fields"));
    }
    one(call(
        func,
        "dg_strided_copy_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("elem_size", u(es)),
            ("ndim", u(shape.len())),
            ("shape", dims_list(shape)),
            ("strides", ints_list(strides)),
            ("offset", Arg::I(offset)),
        ],
    ))
}

/// Tile: input and output shapes (one rank, at most DG_MAX_DIMS).
pub(super) fn bind_tile(ctx: &KernelCtx) -> Result<KernelCall> {
    let (x, y) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    max_dims(ctx, x.len())?;
    one(call(
        "dg_tile",
        "dg_tile_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("elem_size", u(elem_size(ctx, ctx.in_dtype(0)?)?)),
            ("ndim", u(x.len())),
            ("in_shape", dims_list(&x)),
            ("out_shape", dims_list(&y)),
        ],
    ))
}

pub(super) fn bind_transpose(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let perm = transpose_perm(ctx, x.len())?;
    let st = strides(&x);
    let shape: Vec<usize> = perm.iter().map(|&p| x[p]).collect();
    let s: Vec<i64> = perm.iter().map(|&p| st[p] as i64).collect();
    strided(ctx, "dg_transpose", &shape, &s, 0)
}

pub(super) fn bind_slice(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let o = ctx.ops();
    let starts = o.ints_attr_or_input("starts", 1)?.ok_or_else(|| ctx.err("starts are required"))?;
    // The ends decide the output shape, which the graph already holds.
    let axes = o.ints_attr_or_input("axes", 3)?.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = o.ints_attr_or_input("steps", 4)?.unwrap_or_else(|| vec![1; starts.len()]);
    let st = strides(&x);
    let mut start = vec![0i64; x.len()];
    let mut step = vec![1i64; x.len()];
    for (k, &a) in axes.iter().enumerate() {
        let d = ctx.axis(a, x.len())?;
        let dim = x[d] as i64;
        let sp = *steps.get(k).unwrap_or(&1);
        if sp == 0 {
            return Err(ctx.err("slice step 0"));
        }
        let mut s = *starts.get(k).ok_or_else(|| ctx.err("starts and axes differ in length"))?;
        if s < 0 {
            s += dim;
        }
        s = if sp > 0 { s.clamp(0, dim) } else { s.clamp(0, dim - 1) };
        start[d] = s;
        step[d] = sp;
    }
    let y = ctx.out_shape(0)?;
    let offset: i64 = (0..x.len()).map(|d| start[d] * st[d] as i64).sum();
    let s: Vec<i64> = (0..x.len()).map(|d| st[d] as i64 * step[d]).collect();
    strided(ctx, "dg_slice", &y, &s, offset)
}

pub(super) fn bind_expand(ctx: &KernelCtx) -> Result<KernelCall> {
    let (x, y) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let s: Vec<i64> = broadcast_strides(ctx, &x, &y)?.into_iter().map(|v| v as i64).collect();
    strided(ctx, "dg_expand", &y, &s, 0)
}

/// Concat, or (`lengths`) ConcatTraining, which also outputs each input's
/// extent on the axis.
pub(super) fn bind_concat(ctx: &KernelCtx, lengths: bool) -> Result<KernelCall> {
    let y = ctx.out_shape(0)?;
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, y.len())?;
    let es = elem_size(ctx, ctx.out_dtype(0)?)?;
    let (mut xs, mut sizes) = (vec![], vec![]);
    for i in 0..ctx.node.inputs.len() {
        let s = ctx.in_shape(i)?;
        if numel(&s) == 0 {
            continue;
        }
        xs.push(ctx.inp(i)?);
        sizes.push(u(s[axis]));
    }
    ctx.list_fits("inputs", xs.len())?;
    let mut inv = call(
        "dg_concat",
        "dg_concat_args_t",
        vec![
            ("x", Arg::Local("xs")),
            ("sizes", Arg::Local("sizes")),
            ("nin", u(xs.len())),
            ("y", ctx.out(0)?),
            ("elem_size", u(es)),
            ("outer", u(numel(&y[..axis]))),
            ("inner", u(numel(&y[axis + 1..]))),
        ],
    );
    inv.locals.push(Local { ctype: "const void *const", name: "xs", values: xs });
    inv.locals.push(Local { ctype: "const uint32_t", name: "sizes", values: sizes });
    let mut kc = one(inv)?;
    if lengths && ctx.has_out(1) {
        // Output 1, per_input_length (int64): each input's extent on the
        // axis, known when generating code.
        let mut lens = vec![];
        for i in 0..ctx.node.inputs.len() {
            lens.push(Arg::I(ctx.in_shape(i)?[axis] as i64));
        }
        let mut inv = call(
            "dg_copy_kernel",
            "dg_copy_args_t",
            vec![("x", Arg::Local("lengths")), ("y", ctx.out(1)?), ("bytes", u(8 * lens.len()))],
        );
        inv.locals.push(Local { ctype: "static const int64_t", name: "lengths", values: lens });
        kc.calls.push(inv);
    }
    Ok(kc)
}

/// Constant indices, normalised to `[0, dim)` and written as int64.
pub(super) fn const_indices(ctx: &KernelCtx, slot: usize, dim: usize) -> Result<Local> {
    let k = ctx.ops().konst(slot).ok_or_else(|| ctx.err(format!("indices (input {slot}) must be a constant")))?;
    if !matches!(k.dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("indices must be int64 or int32, found {}", k.dtype)));
    }
    let v = k.to_i64().ok_or_else(|| ctx.err("indices have no integer value"))?;
    let n = dim as i64;
    let values = v
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + n } else { i };
            if !(0..n).contains(&j) {
                return Err(ctx.err(format!("index {i} is out of range for an axis of {dim}")));
            }
            Ok(Arg::I(j))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Local { ctype: "static const int64_t", name: "indices", values })
}

pub(super) fn bind_gather(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(GATHER_AXIS), x.len())?;
    let n_idx = numel(&ctx.in_shape(1)?);
    // Constant indices are written out normalised; others (token ids of an
    // embedding lookup) are data the kernel reads, int64 or int32.
    let (idx, indices, i32_flag) = if ctx.ops().konst(1).is_some() {
        (Some(const_indices(ctx, 1, x[axis])?), Arg::Local("indices"), 0)
    } else {
        let flag = match ctx.in_dtype(1)? {
            DType::I64 => 0,
            DType::I32 => 1,
            d => return Err(ctx.err(format!("indices must be int64 or int32, found {d}"))),
        };
        (None, ctx.inp(1)?, flag)
    };
    let mut inv = call(
        "dg_gather",
        "dg_gather_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("indices", indices),
            ("indices_i32", u(i32_flag)),
            ("y", ctx.out(0)?),
            ("elem_size", u(elem_size(ctx, ctx.in_dtype(0)?)?)),
            ("outer", u(numel(&x[..axis]))),
            ("axis_dim", u(x[axis])),
            ("inner", u(numel(&x[axis + 1..]))),
            ("n_idx", u(n_idx)),
        ],
    );
    inv.locals.extend(idx);
    one(inv)
}

// ---- tile rules ---------------------------------------------------------------

/// Transpose tiles over its output; a tile of the output reads the box of
/// the input with the same extents on the permuted axes.
pub(super) const TRANSPOSE_TILES: TileRule =
    TileRule { space: transpose_tile_space, map: transpose_tile_map, in_place: false };

fn transpose_perm(ctx: &KernelCtx, rank: usize) -> Result<Vec<usize>> {
    match ctx.attr_ints("perm")? {
        Some(p) => p.iter().map(|&v| ctx.axis(v, rank)).collect(),
        None => Ok((0..rank).rev().collect()),
    }
}

fn transpose_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    let y = ctx.graph_out_shape(0)?;
    if y.is_empty() {
        return Ok(Err(TileRefusal::Scalar));
    }
    Ok(Ok(Space { split: vec![true; y.len()], dims: y }))
}

fn transpose_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let x = ctx.graph_in_shape(0)?;
    let y = ctx.graph_out_shape(0)?;
    let perm = transpose_perm(ctx, x.len())?;
    let (mut xs, mut xl) = (vec![0; x.len()], x.clone());
    for (i, &p) in perm.iter().enumerate() {
        xs[p] = start[i];
        xl[p] = len[i];
    }
    let part = |full: &[usize], s: Vec<usize>, l: Vec<usize>| {
        if l == full {
            Part::Whole
        } else {
            Part::Box { start: s, len: l }
        }
    };
    Ok(TileMap {
        inputs: vec![Some(part(&x, xs, xl))],
        outputs: vec![Some(part(&y, start.to_vec(), len.to_vec()))],
        ..Default::default()
    })
}

// ---- gradient rules ------------------------------------------------------------------------

/// Transpose: dX = Transpose(dY) by the inverse permutation.
fn transpose_grad(ctx: &mut super::grad::GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
    let rank = ctx.shape(x)?.len();
    let perm: Vec<i64> = match ctx.node.ints("perm")? {
        Some(p) => p.to_vec(),
        None => (0..rank as i64).rev().collect(),
    };
    let mut inverse = vec![0i64; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        let slot = usize::try_from(p).ok().filter(|&p| p < perm.len());
        let slot = slot.ok_or_else(|| ctx.err(format!("perm {perm:?} is not a permutation")))?;
        inverse[slot] = i as i64;
    }
    let out = ctx.dx_name(0);
    let dx = ctx.emit1("Transpose", "", &[dy], &out, vec![("perm".into(), crate::ir::Attr::Ints(inverse))])?;
    ctx.set(0, dx);
    Ok(())
}

/// Concat: each input's gradient is its part of dY (a Split on the axis).
fn concat_grad(ctx: &mut super::grad::GradCtx) -> Result<()> {
    let dy = ctx.dy(0)?;
    let shape = ctx.shape(dy)?;
    let axis = Ctx { graph: ctx.b.graph, node: &ctx.node }.axis_attr("axis", 0, shape.len())?;
    let mut sizes = vec![];
    for i in 0..ctx.node.inputs.len() {
        sizes.push(ctx.shape(ctx.x(i)?)?[axis] as i64);
    }
    let outs: Vec<String> =
        (0..sizes.len()).map(|i| if ctx.needs(i) { ctx.dx_name(i) } else { ctx.name(&format!("unused{i}")) }).collect();
    let split = ctx.b.ints(&ctx.name("sizes"), &sizes);
    let attrs = vec![("axis".to_string(), crate::ir::Attr::Int(axis as i64))];
    let parts = ctx.emit("Split", "", &[Some(dy), Some(split)], &outs, attrs)?;
    for (i, t) in parts.into_iter().enumerate() {
        if let (true, Some(t)) = (ctx.needs(i), t) {
            ctx.set(i, t);
        }
    }
    Ok(())
}

/// Gather: onnxruntime's GatherGrad(shape of X, indices, dY){axis}.
fn gather_grad(ctx: &mut super::grad::GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x, idx) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let dims: Vec<i64> = ctx.shape(x)?.iter().map(|&d| d as i64).collect();
    let shape = ctx.b.ints(&ctx.name("shape"), &dims);
    let attrs = ctx.attr("axis").into_iter().collect();
    let out = ctx.dx_name(0);
    let dx = ctx.emit1("GatherGrad", super::grad::MS, &[shape, idx, dy], &out, attrs)?;
    ctx.set(0, dx);
    Ok(())
}
