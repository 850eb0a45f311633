//! Quantized operators (int8 / uint8 operands, int32 sums): QuantizeLinear,
//! DequantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger and
//! ConvInteger. Their kernels (runtime/kernels/quant.c) compute as
//! onnxruntime does, so that integer outputs compare exactly.

use super::conv::{auto_same, conv_fields, conv_macs, conv_shape, geom, kernel_attr, same_pads};
use super::kernel::{call, numel, one, to_u32, u, Arg, KernelCall, KernelCtx};
use super::linear::{matmul_shapes, product_fields};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, Graph, Node, TensorType};

const CONV_ATTRS: &[&str] = &["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"];

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "QuantizeLinear",
        attrs: &["axis", "block_size", "output_dtype", "saturate", "precision"],
        infer: quantize,
        required: &[0, 1],
        kernel: Some(bind_quantize),
        ..OpDef::BASE
    },
    OpDef {
        name: "DequantizeLinear",
        attrs: &["axis", "block_size", "output_dtype"],
        infer: dequantize,
        required: &[0, 1],
        kernel: Some(bind_dequantize),
        ..OpDef::BASE
    },
    OpDef {
        name: "QLinearMatMul",
        infer: qlinear_matmul,
        required: &[0, 1, 2, 3, 4, 5, 6, 7],
        kernel: Some(bind_qlinear_matmul),
        macs: Some(|g, n| product_macs(g, n, 0)),
        ..OpDef::BASE
    },
    OpDef {
        name: "MatMulInteger",
        infer: matmul_integer,
        required: &[0, 1],
        kernel: Some(bind_matmul_integer),
        macs: Some(|g, n| product_macs(g, n, 0)),
        ..OpDef::BASE
    },
    OpDef {
        name: "QLinearConv",
        attrs: CONV_ATTRS,
        explicit_pads: Some(|ctx| window_same_pads(ctx, QCONV.w)),
        infer: qlinear_conv,
        required: &[0, 1, 2, 3, 4, 5, 6, 7],
        kernel: Some(bind_qlinear_conv),
        macs: Some(|g, n| conv_macs(g, n.output(0)?, n.input(QCONV.w)?)),
        ..OpDef::BASE
    },
    OpDef {
        name: "ConvInteger",
        attrs: CONV_ATTRS,
        explicit_pads: Some(|ctx| window_same_pads(ctx, CONV_INTEGER.w)),
        infer: conv_integer,
        required: &[0, 1],
        kernel: Some(bind_conv_integer),
        macs: Some(|g, n| conv_macs(g, n.output(0)?, n.input(CONV_INTEGER.w)?)),
        ..OpDef::BASE
    },
];

/// Where a quantized product finds its operands: `x` (A) and `w` (B),
/// their scales and zero points, the output's, and the int32 bias.
/// `None`: the operator has no such input (the integer forms have no
/// scales).
struct Slots {
    x: usize,
    w: usize,
    x_scale: Option<usize>,
    x_zp: usize,
    w_scale: Option<usize>,
    w_zp: usize,
    y_scale: Option<usize>,
    y_zp: Option<usize>,
    bias: Option<usize>,
}

/// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B) and
/// QLinearMatMul (the same first eight).
const QCONV: Slots = Slots {
    x: 0,
    w: 3,
    x_scale: Some(1),
    x_zp: 2,
    w_scale: Some(4),
    w_zp: 5,
    y_scale: Some(6),
    y_zp: Some(7),
    bias: Some(8),
};

/// ConvInteger(x, w, x_zp, w_zp) and MatMulInteger(A, B, a_zp, b_zp).
const CONV_INTEGER: Slots =
    Slots { x: 0, w: 1, x_scale: None, x_zp: 2, w_scale: None, w_zp: 3, y_scale: None, y_zp: None, bias: None };

// ---- shape and dtype rules ------------------------------------------------------------------

/// QuantizeLinear's output type: the zero point's, else `output_dtype`,
/// else uint8 (the schema's default).
fn quantize(ctx: &Ctx) -> Result<Vec<TensorType>> {
    scale_matches_zero_point(ctx, 1, 2)?;
    let dtype = match (ctx.has(2), ctx.node.int("output_dtype")?) {
        (true, _) => ctx.dtype(2)?,
        (false, Some(code)) if code != 0 => DType::from_onnx(code as i32),
        _ => DType::U8,
    };
    Ok(vec![with_shape_of(ctx, 0, dtype)?])
}

/// DequantizeLinear gives the scale's type.
fn dequantize(ctx: &Ctx) -> Result<Vec<TensorType>> {
    scale_matches_zero_point(ctx, 1, 2)?;
    Ok(vec![with_shape_of(ctx, 0, ctx.dtype(1)?)?])
}

fn with_shape_of(ctx: &Ctx, slot: usize, dtype: DType) -> Result<TensorType> {
    Ok(match ctx.shape(slot)? {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    })
}

/// A zero point has its scale's shape (one per tensor, or one per entry
/// of the quantized axis).
fn scale_matches_zero_point(ctx: &Ctx, scale: usize, zp: usize) -> Result<()> {
    if !ctx.has(zp) {
        return Ok(());
    }
    match (ctx.shape(scale)?, ctx.shape(zp)?) {
        (Some(s), Some(z)) if numel(&s) != numel(&z) => Err(ctx.err(format!(
            "the zero point (input {zp}) has shape {z:?}, its scale (input {scale}) {s:?}: they must hold as many \
             values"
        ))),
        _ => Ok(()),
    }
}

fn qlinear_matmul(ctx: &Ctx) -> Result<Vec<TensorType>> {
    for (s, z) in [(1, 2), (4, 5), (6, 7)] {
        scale_matches_zero_point(ctx, s, z)?;
    }
    product_type(ctx, 0, 3, ctx.dtype(7)?)
}

fn matmul_integer(ctx: &Ctx) -> Result<Vec<TensorType>> {
    product_type(ctx, 0, 1, DType::I32)
}

fn product_type(ctx: &Ctx, a: usize, b: usize, dtype: DType) -> Result<Vec<TensorType>> {
    let (Some(sa), Some(sb)) = (ctx.shape(a)?, ctx.shape(b)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    Ok(vec![TensorType::new(dtype, &matmul_shapes(ctx, sa, sb)?)])
}

fn qlinear_conv(ctx: &Ctx) -> Result<Vec<TensorType>> {
    for (s, z) in [(1, 2), (4, 5), (6, 7)] {
        scale_matches_zero_point(ctx, s, z)?;
    }
    window_type(ctx, &QCONV, ctx.dtype(7)?)
}

fn conv_integer(ctx: &Ctx) -> Result<Vec<TensorType>> {
    window_type(ctx, &CONV_INTEGER, DType::I32)
}

fn window_type(ctx: &Ctx, s: &Slots, dtype: DType) -> Result<Vec<TensorType>> {
    Ok(vec![match conv_shape(ctx, s.x, s.w, s.bias)? {
        Some(shape) => TensorType::new(dtype, &shape),
        None => TensorType::unknown(dtype),
    }])
}

/// `auto_pad = SAME_*` as explicit pads, the kernel from weight slot `w`.
fn window_same_pads(ctx: &Ctx, w: usize) -> Result<Option<Vec<i64>>> {
    if !auto_same(ctx)? {
        return Ok(None);
    }
    let (Some(x), Some(ws)) = (ctx.shape(0)?, ctx.shape(w)?) else { return Ok(None) };
    if ws.len() < 3 {
        return Ok(None);
    }
    let kernel = kernel_attr(ctx, Some(ws.len() - 2))?.unwrap_or_else(|| ws[2..].to_vec());
    same_pads(ctx, &x, kernel)
}

/// Multiply-adds of a product whose A is input `a`: every output sums
/// over A's last dim.
fn product_macs(g: &Graph, n: &Node, a: usize) -> Option<u64> {
    let k = *g.tensor(n.input(a)?).ty.shape()?.last()?;
    Some(g.tensor(n.output(0)?).ty.numel()? as u64 * k as u64)
}

// ---- kernel bindings --------------------------------------------------------------------------

/// The kernels' name for a quantized operand's type.
fn dtype_enum(ctx: &KernelCtx, what: &str, d: DType) -> Result<Arg> {
    Ok(Arg::Enum(match d {
        DType::I8 => "DG_DT_I8",
        DType::U8 => "DG_DT_U8",
        other => return Err(ctx.err(format!("{what} is {other}; the quantized kernels take int8 and uint8 operands"))),
    }))
}

/// Scale input `slot` must be f32.
fn require_f32_scale(ctx: &KernelCtx, slot: usize) -> Result<()> {
    match ctx.in_dtype(slot)? {
        DType::F32 => Ok(()),
        other => Err(ctx.err(format!("the scale (input {slot}) is {other}; the kernels take f32 scales"))),
    }
}

/// A zero point's type must be its operand's.
fn require_zp_type(ctx: &KernelCtx, zp: usize, of: DType) -> Result<()> {
    match ctx.node.input(zp) {
        Some(_) if ctx.in_dtype(zp)? != of => Err(ctx.err(format!(
            "the zero point (input {zp}) is {}, its operand {of}: they must be of one type",
            ctx.in_dtype(zp)?
        ))),
        _ => Ok(()),
    }
}

/// Values in input `slot` (1 when omitted).
fn count(ctx: &KernelCtx, slot: usize) -> Result<usize> {
    Ok(if ctx.node.input(slot).is_some() { numel(&ctx.in_shape(slot)?) } else { 1 })
}

/// The `[outer, axis_len, inner]` view and `per_axis` flag of a
/// QuantizeLinear / DequantizeLinear node whose scale is input 1.
fn axis_fields(ctx: &KernelCtx) -> Result<Vec<(&'static str, Arg)>> {
    if ctx.attr_int("block_size", 0)? != 0 {
        return Err(ctx.err("blocked quantization ('block_size' > 0) is not supported"));
    }
    let x = ctx.in_shape(0)?;
    let scales = count(ctx, 1)?;
    if scales == 1 {
        return Ok(vec![("outer", u(1)), ("axis_len", u(numel(&x))), ("inner", u(1)), ("per_axis", u(0))]);
    }
    let axis = ctx.axis(ctx.attr_int("axis", 1)?, x.len())?;
    if scales != x[axis] {
        return Err(ctx.err(format!("{scales} scales for axis {axis} of {x:?}: a per-axis scale has one per entry")));
    }
    Ok(vec![
        ("outer", u(numel(&x[..axis]))),
        ("axis_len", u(x[axis])),
        ("inner", u(numel(&x[axis + 1..]))),
        ("per_axis", u(1)),
    ])
}

fn bind_quantize(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    require_f32_scale(ctx, 1)?;
    let y = ctx.out_dtype(0)?;
    require_zp_type(ctx, 2, y)?;
    let mut fields =
        vec![("x", ctx.inp(0)?), ("scale", ctx.inp(1)?), ("zero_point", ctx.opt_in(2)), ("y", ctx.out(0)?)];
    fields.extend(axis_fields(ctx)?);
    fields.push(("y_dtype", dtype_enum(ctx, "the output", y)?));
    one(call("dg_quantize_linear", "dg_quantize_args_t", fields))
}

fn bind_dequantize(ctx: &KernelCtx) -> Result<KernelCall> {
    require_f32_scale(ctx, 1)?;
    let x = ctx.in_dtype(0)?;
    require_zp_type(ctx, 2, x)?;
    let x_dtype = match x {
        DType::I32 => Arg::Enum("DG_DT_I32"),
        other => dtype_enum(ctx, "the input", other)?,
    };
    let mut fields =
        vec![("x", ctx.inp(0)?), ("scale", ctx.inp(1)?), ("zero_point", ctx.opt_in(2)), ("y", ctx.out(0)?)];
    fields.extend(axis_fields(ctx)?);
    fields.push(("x_dtype", x_dtype));
    one(call("dg_dequantize_linear", "dg_dequantize_args_t", fields))
}

/// What [`quant_fields`] found: per-channel W, per-row A (MatMulInteger).
struct PerEntry {
    channel: bool,
    row: bool,
}

/// The operands' dtypes, scales and zero points of a product (`y_dtype`
/// last): checked, as the kernels' fields. `channels`: the entries a
/// per-channel W scale and zero point hold; `rows`: those a per-row x
/// zero point holds, when the operator allows one (0: it does not).
fn quant_fields(
    ctx: &KernelCtx,
    s: &Slots,
    channels: usize,
    rows: usize,
) -> Result<(Vec<(&'static str, Arg)>, PerEntry)> {
    let (xd, wd, yd) = (ctx.in_dtype(s.x)?, ctx.in_dtype(s.w)?, ctx.out_dtype(0)?);
    require_zp_type(ctx, s.x_zp, xd)?;
    require_zp_type(ctx, s.w_zp, wd)?;
    let mut fields = vec![];
    for (name, slot) in [("x_scale", s.x_scale), ("w_scale", s.w_scale), ("y_scale", s.y_scale)] {
        if let Some(slot) = slot {
            require_f32_scale(ctx, slot)?;
            fields.push((name, ctx.inp(slot)?));
        }
    }
    fields.push(("x_zero_point", ctx.opt_in(s.x_zp)));
    fields.push(("w_zero_point", ctx.opt_in(s.w_zp)));
    if let Some(z) = s.y_zp {
        require_zp_type(ctx, z, yd)?;
        fields.push(("y_zero_point", ctx.opt_in(z)));
    }
    for slot in [s.x_scale, s.y_scale, s.y_zp].into_iter().flatten() {
        per_tensor(ctx, slot)?;
    }
    let row = rows > 1 && count(ctx, s.x_zp)? == rows;
    if !row {
        per_tensor(ctx, s.x_zp)?;
    }
    let w_entries = count(ctx, s.w_zp)?.max(s.w_scale.map_or(Ok(1), |w| count(ctx, w))?);
    let channel = w_entries != 1;
    if channel && w_entries != channels {
        return Err(ctx.err(format!(
            "the weight's scale and zero point hold {w_entries} values; per channel they hold one per output \
             channel ({channels})"
        )));
    }
    fields.push(("x_dtype", dtype_enum(ctx, "input x", xd)?));
    fields.push(("w_dtype", dtype_enum(ctx, "the weight", wd)?));
    fields
        .push(("y_dtype", if yd == DType::I32 { Arg::Enum("DG_DT_I32") } else { dtype_enum(ctx, "the output", yd)? }));
    Ok((fields, PerEntry { channel, row }))
}

/// Input `slot` holds one value (per tensor).
fn per_tensor(ctx: &KernelCtx, slot: usize) -> Result<()> {
    match count(ctx, slot)? {
        1 => Ok(()),
        n => Err(ctx.err(format!("input {slot} holds {n} values; it must hold one (per tensor)"))),
    }
}

fn bind_qlinear_conv(ctx: &KernelCtx) -> Result<KernelCall> {
    conv_call(ctx, &QCONV)
}

fn bind_conv_integer(ctx: &KernelCtx) -> Result<KernelCall> {
    conv_call(ctx, &CONV_INTEGER)
}

fn conv_call(ctx: &KernelCtx, s: &Slots) -> Result<KernelCall> {
    let (x, w, y) = (ctx.in_shape(s.x)?, ctx.in_shape(s.w)?, ctx.out_shape(0)?);
    let group = to_u32(ctx, "group", ctx.attr_int("group", 1)?)?;
    let g = geom(ctx, &x, &y, &w[2..])?;
    if let Some(b) = s.bias.filter(|&b| ctx.node.input(b).is_some()) {
        if ctx.in_dtype(b)? != DType::I32 {
            return Err(ctx.err(format!("the bias (input {b}) is {}; QLinearConv's bias is int32", ctx.in_dtype(b)?)));
        }
    }
    let (quant, per) = quant_fields(ctx, s, g.out_c, 0)?;
    let mut fields = vec![
        ("x", ctx.inp(s.x)?),
        ("w", ctx.inp(s.w)?),
        ("b", s.bias.map_or(Arg::Null, |b| ctx.opt_in(b))),
        ("y", ctx.out(0)?),
    ];
    fields.extend(quant);
    fields.extend(conv_fields(&g, group));
    fields.push(("w_per_channel", u(usize::from(per.channel))));
    one(call("dg_qlinear_conv", "dg_qconv_args_t", fields))
}

fn bind_qlinear_matmul(ctx: &KernelCtx) -> Result<KernelCall> {
    matmul_call(ctx, &QCONV)
}

fn bind_matmul_integer(ctx: &KernelCtx) -> Result<KernelCall> {
    matmul_call(ctx, &CONV_INTEGER)
}

/// The product's fields: the kernel calls its operands A and B, where the
/// conv's are x and w.
fn matmul_call(ctx: &KernelCtx, s: &Slots) -> Result<KernelCall> {
    let (a, b) = (ctx.in_shape(s.x)?, ctx.in_shape(s.w)?);
    let geometry = product_fields(ctx, a.clone(), b.clone(), false, false)?;
    // MatMulInteger's A zero point may hold one value per row of a 2-D A.
    let rows = if s.x_scale.is_none() && a.len() == 2 { geometry.m } else { 0 };
    let (quant, per) = quant_fields(ctx, s, geometry.n, rows)?;
    if per.channel && b.len() > 2 {
        return Err(ctx.err(format!("per-column scales and zero points of a batched B {b:?} are not supported")));
    }
    let mut fields = vec![("a", ctx.inp(s.x)?), ("b", ctx.inp(s.w)?), ("y", ctx.out(0)?)];
    fields.extend(quant.into_iter().map(|(k, v)| (rename(k), v)));
    fields.extend(geometry.fields);
    fields.push(("b_per_col", u(usize::from(per.channel))));
    fields.push(("a_zp_per_row", u(usize::from(per.row))));
    one(call("dg_qlinear_matmul", "dg_qmatmul_args_t", fields))
}

/// A conv field's name in the matmul kernel's struct (x, w -> a, b).
fn rename(k: &'static str) -> &'static str {
    match k {
        "x_scale" => "a_scale",
        "w_scale" => "b_scale",
        "x_zero_point" => "a_zero_point",
        "w_zero_point" => "b_zero_point",
        "x_dtype" => "a_dtype",
        "w_dtype" => "b_dtype",
        other => other,
    }
}
