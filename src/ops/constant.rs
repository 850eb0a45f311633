//! Operators that make a value from attributes, generation-time inputs or
//! a tensor's shape: Constant, ConstantOfShape, Range, Shape and Size. They
//! fold at import (ConstantOfShape beyond FOLD_LIMIT elements runs a fill
//! kernel instead), which is how shape subgraphs disappear.

use super::kernel::{call, elem_size, numel, one, u, Arg, Kernel, KernelCall, KernelCtx};
use super::range::{self, Operand};
use super::{checked_numel, Ctx, FoldWhen, OpDef, FOLD_LIMIT};
use crate::error::Result;
use crate::ir::{DType, TensorData, TensorType};

pub const OPS: &[OpDef] = &[
    // ConstantOfShape and Range depend only on generation-time values: they
    // fold (ConstantOfShape up to FOLD_LIMIT elements, then a fill kernel).
    OpDef {
        name: "ConstantOfShape",
        attrs: &["value"],
        infer: constant_of_shape,
        compile_time: &[0],
        fold: Some(fold_constant_of_shape),
        fold_when: FoldWhen::Always,
        kernel: Some(Kernel::Bind(bind_fill)),
        ..OpDef::BASE
    },
    OpDef {
        name: "Range",
        infer: range,
        required: &[0, 1, 2],
        compile_time: &[0, 1, 2],
        fold: Some(fold_range),
        fold_when: FoldWhen::Always,
        ..OpDef::BASE
    },
    OpDef {
        name: "Shape",
        attrs: &["end", "start"],
        infer: shape,
        fold: Some(fold_shape),
        fold_when: FoldWhen::Shapes,
        compile_time: &[0],
        data_when_not_constant: &[0],
        ..OpDef::BASE
    },
    OpDef {
        name: "Size",
        infer: size,
        fold: Some(fold_size),
        fold_when: FoldWhen::Shapes,
        compile_time: &[0],
        data_when_not_constant: &[0],
        ..OpDef::BASE
    },
    OpDef {
        name: "Constant",
        attrs: &[
            "sparse_value",
            "value",
            "value_float",
            "value_floats",
            "value_int",
            "value_ints",
            "value_string",
            "value_strings",
        ],
        infer: constant,
        required: &[],
        fold: Some(fold_constant),
        fold_when: FoldWhen::Always,
        ..OpDef::BASE
    },
];

/// The element types the fill kernel writes (ConstantOfShape's value).
const FILL_TYPES: &[DType] = &[DType::F32, DType::I64, DType::I32, DType::U8, DType::Bool];

/// ConstantOfShape's `value`: one element (default float 0).
fn fill_value(ctx: &Ctx) -> Result<TensorData> {
    let Some(v) = ctx.node.tensor_attr("value")? else { return Ok(TensorData::from_f32(vec![1], &[0.0])) };
    if v.numel() != 1 {
        return Err(ctx.err(format!("attribute 'value' must hold one element, it holds {}", v.numel())));
    }
    if !FILL_TYPES.contains(&v.dtype) {
        return Err(ctx.err(format!(
            "attribute 'value' is {}; deploygen fills {}",
            v.dtype,
            FILL_TYPES.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(v.clone())
}

/// ConstantOfShape's output shape: input 0, a constant 1-D int64 tensor.
fn fill_shape(ctx: &Ctx) -> Result<Vec<usize>> {
    let Some(spec) = ctx.konst_i64(0) else { return Err(ctx.not_constant(0, "the output shape")) };
    if spec.iter().any(|&d| d < 0) {
        return Err(ctx.err(format!("shape {spec:?} has a negative dim")));
    }
    let out: Vec<usize> = spec.iter().map(|&d| d as usize).collect();
    checked_numel(ctx, &out)?;
    Ok(out)
}

fn constant_of_shape(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let v = fill_value(ctx)?;
    Ok(vec![TensorType::new(v.dtype, &fill_shape(ctx)?)])
}

fn fold_constant_of_shape(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let (v, shape) = (fill_value(ctx)?, fill_shape(ctx)?);
    let n: usize = shape.iter().product();
    if n > FOLD_LIMIT {
        return Ok(None);
    }
    Ok(Some(vec![TensorData { dtype: v.dtype, shape, bytes: v.bytes.repeat(n) }]))
}

/// Range's scalar input `i` in its own type (all three have one type,
/// checked).
fn range_operand(ctx: &Ctx, i: usize, what: &str) -> Result<Operand> {
    let Some(d) = ctx.konst(i) else { return Err(ctx.not_constant(i, what)) };
    if d.numel() != 1 {
        return Err(ctx.err(format!("input {i} ({what}) must be a scalar, it has shape {:?}", d.shape)));
    }
    if d.dtype.is_int() {
        Ok(Operand::Int(d.to_i64().and_then(|v| v.first().copied()).unwrap_or(0)))
    } else {
        Ok(Operand::Float(d.to_f32().and_then(|v| v.first().copied()).unwrap_or(0.0) as f64))
    }
}

/// Range: `start + i * delta` for i in `0..max(ceil((limit - start) / delta), 0)`,
/// counted exactly ([`super::range`]).
fn range_values(ctx: &Ctx) -> Result<(DType, Operand, Operand, usize)> {
    let dtype = ctx.dtype(0)?;
    if ![DType::F32, DType::I64, DType::I32].contains(&dtype) {
        return Err(ctx.err(format!("inputs are {dtype}; deploygen computes Range on f32, i64 and i32")));
    }
    for i in 1..3 {
        if ctx.dtype(i)? != dtype {
            return Err(ctx.err(format!("inputs must have one element type, input {i} is {}", ctx.dtype(i)?)));
        }
    }
    let (start, limit, delta) =
        (range_operand(ctx, 0, "start")?, range_operand(ctx, 1, "limit")?, range_operand(ctx, 2, "delta")?);
    let n = range::count(start, limit, delta).map_err(|e| ctx.err(e.to_string()))?;
    if n > FOLD_LIMIT as u128 {
        return Err(ctx.err(format!(
            "Range of {n} elements: deploygen computes Range when generating code, up to {FOLD_LIMIT} elements"
        )));
    }
    Ok((dtype, start, delta, n as usize))
}

fn range(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let (dtype, _, _, n) = range_values(ctx)?;
    Ok(vec![TensorType::new(dtype, &[n])])
}

fn fold_range(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let (dtype, start, delta, n) = range_values(ctx)?;
    Ok(Some(vec![match (start, delta) {
        (Operand::Int(s), Operand::Int(d)) => TensorData::from_i64_as(dtype, vec![n], &range::int_values(s, d, n))
            .ok_or_else(|| ctx.err("Range values do not fit the type"))?,
        (Operand::Float(s), Operand::Float(d)) => {
            let (s, d) = (s as f32, d as f32);
            TensorData::from_f32(vec![n], &(0..n).map(|i| s + i as f32 * d).collect::<Vec<_>>())
        }
        _ => return Err(ctx.err("inputs must have one element type")),
    }]))
}

/// Shape's `start`/`end` (clamped to the rank, as ONNX defines).
fn shape_range(ctx: &Ctx, rank: usize) -> Result<(usize, usize)> {
    let r = rank as i64;
    let norm = |v: i64| (if v < 0 { v.saturating_add(r) } else { v }).clamp(0, r) as usize;
    let s = norm(ctx.node.int("start")?.unwrap_or(0));
    let e = norm(ctx.node.int("end")?.unwrap_or(r));
    Ok((s, e.max(s)))
}

fn shape(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![match ctx.ty(0)?.dims.as_ref() {
        Some(d) => {
            let (s, e) = shape_range(ctx, d.len())?;
            TensorType::new(DType::I64, &[e - s])
        }
        None => TensorType::unknown(DType::I64),
    }])
}

fn fold_shape(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let Some(x) = ctx.shape(0)? else { return Ok(None) };
    let (s, e) = shape_range(ctx, x.len())?;
    let v: Vec<i64> = x[s..e].iter().map(|&d| d as i64).collect();
    Ok(Some(vec![TensorData::from_i64(vec![v.len()], &v)]))
}

fn size(_ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![TensorType::new(DType::I64, &[])])
}

fn fold_size(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let Some(x) = ctx.shape(0)? else { return Ok(None) };
    Ok(Some(vec![TensorData::from_i64(vec![], &[checked_numel(ctx, &x)? as i64])]))
}

/// Constant's one value attribute, read through the typed accessors: a
/// `value_int` that is not an INT is an error, not skipped.
fn constant_value(ctx: &Ctx) -> Result<TensorData> {
    let n = ctx.node;
    let mut found = Vec::new();
    if let Some(t) = n.tensor_attr("value")? {
        found.push(t.clone());
    }
    if let Some(v) = n.float("value_float")? {
        found.push(TensorData::from_f32(vec![], &[v]));
    }
    if let Some(v) = n.floats("value_floats")? {
        found.push(TensorData::from_f32(vec![v.len()], v));
    }
    if let Some(v) = n.int("value_int")? {
        found.push(TensorData::from_i64(vec![], &[v]));
    }
    if let Some(v) = n.ints("value_ints")? {
        found.push(TensorData::from_i64(vec![v.len()], v));
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(ctx.err("has no value attribute deploygen can read (value, value_float(s), value_int(s))")),
        k => Err(
            ctx.err(format!("has {k} value attributes; exactly one of value, value_float(s), value_int(s) is allowed"))
        ),
    }
}

fn constant(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![constant_value(ctx)?.ty()])
}

fn fold_constant(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let d = constant_value(ctx)?;
    if d.numel() > FOLD_LIMIT * 16 {
        return Ok(None);
    }
    Ok(Some(vec![d]))
}

// ---- kernel bindings --------------------------------------------------------

/// ConstantOfShape beyond FOLD_LIMIT elements: the value's little-endian
/// bytes, written n times.
pub(super) fn bind_fill(ctx: &KernelCtx) -> Result<KernelCall> {
    fill(ctx, &fill_value(&ctx.ops())?)
}

/// Output 0 filled with `v`'s one element, its little-endian bytes
/// written n times.
pub(super) fn fill(ctx: &KernelCtx, v: &TensorData) -> Result<KernelCall> {
    let mut bits = [0u8; 8];
    bits[..v.bytes.len().min(8)].copy_from_slice(&v.bytes[..v.bytes.len().min(8)]);
    one(call(
        "dg_fill",
        "dg_fill_args_t",
        vec![
            ("y", ctx.out(0)?),
            ("n", u(numel(&ctx.out_shape(0)?))),
            ("elem_size", u(elem_size(ctx, v.dtype)?)),
            ("value", Arg::I(i64::from_le_bytes(bits))),
        ],
    ))
}
