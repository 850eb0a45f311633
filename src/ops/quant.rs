//! Quantized operators (int8 / uint8 operands, int32 sums): QuantizeLinear,
//! DequantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger and
//! ConvInteger. Their kernels (runtime/kernels/quant*.c) compute as
//! onnxruntime does, so that integer outputs compare exactly.

use super::conv::{auto_same, conv_fields, conv_macs, conv_shape, geom, kernel_attr, same_pads};
use super::kernel::{call, numel, one, to_u32, u, Arg, Kernel, KernelCall, KernelCtx, Local};
use super::linear::{matmul_shapes, product_fields};
use super::{Ctx, FoldWhen, OpDef};
use crate::error::Result;
use crate::ir::{Attr, DType, Graph, Node, TensorData, TensorType};

/// QLinearAdd and QLinearMul(A, a_scale, a_zp, B, b_scale, b_zp, y_scale, y_zp).
const QLINEAR_BINARY: OpDef = OpDef { infer: qlinear_binary, required: &[0, 1, 3, 4, 6], ..OpDef::BASE };

const CONV_ATTRS: &[&str] = &["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"];

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "QuantizeLinear",
        attrs: &["axis", "block_size", "output_dtype", "saturate", "precision"],
        infer: quantize,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_quantize)),
        qdq: Some(Qdq::Quantize),
        fold: Some(fold_quantize),
        fold_when: FoldWhen::ReadWhenGenerating,
        ..OpDef::BASE
    },
    OpDef {
        name: "DequantizeLinear",
        attrs: &["axis", "block_size", "output_dtype"],
        infer: dequantize,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_dequantize)),
        qdq: Some(Qdq::Dequantize),
        fold: Some(fold_dequantize),
        fold_when: FoldWhen::ReadWhenGenerating,
        ..OpDef::BASE
    },
    OpDef {
        name: "QLinearMatMul",
        infer: qlinear_matmul,
        required: &[0, 1, 2, 3, 4, 5, 6, 7],
        kernel: Some(Kernel::Bind(bind_qlinear_matmul)),
        scratch: Some(|g, n| qmatmul_scratch(g, n, QCONV.w, false)),
        macs: Some(|g, n| product_macs(g, n, 0)),
        ..OpDef::BASE
    },
    OpDef {
        name: "MatMulInteger",
        infer: matmul_integer,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_matmul_integer)),
        scratch: Some(|g, n| qmatmul_scratch(g, n, CONV_INTEGER.w, false)),
        macs: Some(|g, n| product_macs(g, n, 0)),
        ..OpDef::BASE
    },
    OpDef {
        name: "QLinearConv",
        attrs: CONV_ATTRS,
        explicit_pads: Some(|ctx| window_same_pads(ctx, QCONV.w)),
        infer: qlinear_conv,
        required: &[0, 1, 2, 3, 4, 5, 6, 7],
        kernel: Some(Kernel::Bind(bind_qlinear_conv)),
        scratch: Some(|g, n| qconv_scratch(g, n, &QCONV)),
        macs: Some(|g, n| conv_macs(g, n.output(0)?, n.input(QCONV.w)?)),
        ..OpDef::BASE
    },
    OpDef {
        name: "ConvInteger",
        attrs: CONV_ATTRS,
        explicit_pads: Some(|ctx| window_same_pads(ctx, CONV_INTEGER.w)),
        infer: conv_integer,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_conv_integer)),
        scratch: Some(|g, n| qconv_scratch(g, n, &CONV_INTEGER)),
        macs: Some(|g, n| conv_macs(g, n.output(0)?, n.input(CONV_INTEGER.w)?)),
        ..OpDef::BASE
    },
    // com.microsoft, onnxruntime's QOperator forms (and what its QDQ
    // fusion makes).
    OpDef {
        name: "QGemm",
        attrs: &["alpha", "transA", "transB"],
        infer: qgemm,
        required: &[0, 1, 2, 3, 4, 5],
        kernel: Some(Kernel::Bind(bind_qgemm)),
        scratch: Some(|g, n| qmatmul_scratch(g, n, QGEMM_SLOTS.w, n.attr_int("transB").unwrap_or(0) != 0)),
        macs: Some(|g, n| product_macs(g, n, 0)),
        ..OpDef::BASE
    },
    OpDef { name: "QLinearAdd", kernel: Some(Kernel::Named(bind_qlinear_binary, "dg_qlinear_add")), ..QLINEAR_BINARY },
    OpDef { name: "QLinearMul", kernel: Some(Kernel::Named(bind_qlinear_binary, "dg_qlinear_mul")), ..QLINEAR_BINARY },
    OpDef {
        name: "QLinearGlobalAveragePool",
        attrs: &["channels_last"],
        infer: qlinear_gap,
        required: &[0, 1, 2, 3, 4],
        kernel: Some(Kernel::Bind(bind_qlinear_gap)),
        fixed_1x1: Some(|_, _| true),
        ..OpDef::BASE
    },
    OpDef {
        name: "QLinearSoftmax",
        attrs: &["axis", "opset"],
        infer: qlinear_softmax,
        required: &[0, 1, 2, 3, 4],
        kernel: Some(Kernel::Bind(bind_qlinear_softmax)),
        tables: Some(|_, _| Ok(SOFTMAX_TABLE as u64 * 4)),
        ..OpDef::BASE
    },
];

// ---- QDQ forms ----------------------------------------------------------------------------------

/// A node's part in a QDQ graph ([`OpDef::qdq`](super::OpDef::qdq)).
#[derive(Clone, Copy, Debug)]
pub enum Qdq {
    Quantize,
    Dequantize,
    /// The node moves values without computing on them (MaxPool, Reshape,
    /// ...): it runs on the 8-bit values as they are, when its input 0's
    /// DequantizeLinear and its output's QuantizeLinear share one constant
    /// scale and zero point.
    Passthrough,
    /// The node becomes the integer operator `Fused::op`.
    Fuse(&'static Fused),
}

/// How a node fed by DequantizeLinear nodes and read by one
/// QuantizeLinear becomes an integer operator: onnxruntime's QDQ fusions,
/// so that the fused graph computes what onnxruntime runs.
#[derive(Debug)]
pub struct Fused {
    pub op: &'static str,
    pub domain: &'static str,
    /// The integer node's inputs, in order.
    pub inputs: &'static [QSlot],
    /// Its attributes, from the node's.
    pub attrs: fn(&Graph, &Node) -> Vec<(String, Attr)>,
    /// Node inputs that may be absent (then their slots are too).
    pub optional: &'static [usize],
    /// Whether the node's attributes allow the fusion.
    pub when: fn(&Node) -> bool,
}

/// Where an input of a fused node comes from.
#[derive(Clone, Copy, Debug)]
pub enum QSlot {
    /// The quantized value behind the node's input `i` (its
    /// DequantizeLinear's input 0).
    Value(usize),
    /// That DequantizeLinear's scale.
    Scale(usize),
    /// Its zero point (a zero of the value's type when it has none).
    ZeroPoint(usize),
    /// The reading QuantizeLinear's scale and zero point.
    OutScale,
    OutZeroPoint,
}

use QSlot::{OutScale, OutZeroPoint, Scale, Value, ZeroPoint};

fn same_attrs(_: &Graph, n: &Node) -> Vec<(String, Attr)> {
    n.attrs.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn always(_: &Node) -> bool {
    true
}

/// Conv (x, w[, b]) -> QLinearConv; the int32 bias is the value behind
/// b's DequantizeLinear (its scale checked by the fusion pass).
pub const QDQ_CONV: Fused = Fused {
    op: "QLinearConv",
    domain: "",
    inputs: &[Value(0), Scale(0), ZeroPoint(0), Value(1), Scale(1), ZeroPoint(1), OutScale, OutZeroPoint, Value(2)],
    attrs: same_attrs,
    optional: &[2],
    when: always,
};

pub const QDQ_MATMUL: Fused = Fused {
    op: "QLinearMatMul",
    domain: "",
    inputs: &[Value(0), Scale(0), ZeroPoint(0), Value(1), Scale(1), ZeroPoint(1), OutScale, OutZeroPoint],
    attrs: same_attrs,
    optional: &[],
    when: always,
};

/// Gemm with beta = 1 -> com.microsoft QGemm.
pub const QDQ_GEMM: Fused = Fused {
    op: "QGemm",
    domain: "com.microsoft",
    inputs: &[Value(0), Scale(0), ZeroPoint(0), Value(1), Scale(1), ZeroPoint(1), Value(2), OutScale, OutZeroPoint],
    attrs: |_, n| n.attrs.iter().filter(|(k, _)| k.as_str() != "beta").map(|(k, v)| (k.clone(), v.clone())).collect(),
    optional: &[2],
    when: |n| n.float("beta").ok().flatten().is_none_or(|b| b == 1.0),
};

/// Add / Mul -> com.microsoft QLinearAdd / QLinearMul.
pub const QDQ_ADD: Fused = Fused { op: "QLinearAdd", ..QDQ_BINARY };
pub const QDQ_MUL: Fused = Fused { op: "QLinearMul", ..QDQ_BINARY };

const QDQ_BINARY: Fused = Fused {
    op: "",
    domain: "com.microsoft",
    inputs: &[Value(0), Scale(0), ZeroPoint(0), Value(1), Scale(1), ZeroPoint(1), OutScale, OutZeroPoint],
    attrs: |_, _| vec![],
    optional: &[],
    when: always,
};

pub const QDQ_GLOBAL_AVERAGE_POOL: Fused = Fused {
    op: "QLinearGlobalAveragePool",
    domain: "com.microsoft",
    inputs: &[Value(0), Scale(0), ZeroPoint(0), OutScale, OutZeroPoint],
    attrs: |_, _| vec![("channels_last".to_string(), Attr::Int(0))],
    optional: &[],
    when: always,
};

/// Softmax -> com.microsoft QLinearSoftmax, with the graph's opset (its
/// axis rule).
pub const QDQ_SOFTMAX: Fused = Fused {
    op: "QLinearSoftmax",
    domain: "com.microsoft",
    inputs: &[Value(0), Scale(0), ZeroPoint(0), OutScale, OutZeroPoint],
    attrs: |g, n| {
        let opset = g.opsets.get("").copied().unwrap_or(13);
        let axis = n.int("axis").ok().flatten().unwrap_or(super::softmax::default_axis(opset < 13));
        vec![("axis".to_string(), Attr::Int(axis)), ("opset".to_string(), Attr::Int(opset))]
    },
    optional: &[],
    when: always,
};

/// Where a quantized product finds its operands: `x` (A) and `w` (B),
/// their scales and zero points, the output's, and the int32 bias.
/// `None`: the operator has no such input (the integer forms have no
/// scales).
#[derive(Clone, Copy)]
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

/// The constant operands of a QuantizeLinear / DequantizeLinear that
/// folds: x, the scale and the zero point (0 when absent), per tensor or
/// along `axis` (`inner` elements per entry, `dim` entries).
struct ConstQ<'a> {
    x: &'a TensorData,
    scale: Vec<f32>,
    zp: Vec<i64>,
    inner: usize,
    dim: usize,
}

impl ConstQ<'_> {
    /// The scale and zero point entry of element i.
    fn entry(&self, i: usize) -> usize {
        i / self.inner % self.dim
    }
}

/// The node's constant operands, or `None` when one is not a constant
/// or the form is one the fold leaves alone (blocked, a scale that fits
/// no axis).
fn const_q<'a>(ctx: &Ctx<'a>) -> Result<Option<ConstQ<'a>>> {
    let (Some(x), Some(scale)) = (ctx.konst(0), ctx.konst(1).and_then(TensorData::to_f32)) else { return Ok(None) };
    if ctx.node.int("block_size")?.unwrap_or(0) != 0 || scale.is_empty() {
        return Ok(None);
    }
    let zp = match ctx.konst(2).map(TensorData::to_i64) {
        Some(Some(z)) if z.len() == scale.len() => z,
        None if !ctx.has(2) => vec![0; scale.len()],
        _ => return Ok(None),
    };
    let (inner, dim) = if scale.len() == 1 {
        (1, 1)
    } else {
        let rank = x.shape.len() as i64;
        let axis = ctx.node.int("axis")?.unwrap_or(1);
        if !(-rank..rank).contains(&axis) || x.shape[axis.rem_euclid(rank) as usize] != scale.len() {
            return Ok(None);
        }
        (numel(&x.shape[axis.rem_euclid(rank) as usize + 1..]), scale.len())
    };
    Ok(Some(ConstQ { x, scale, zp, inner, dim }))
}

/// A constant QuantizeLinear that only generation reads (see
/// [`FoldWhen::ReadWhenGenerating`]): `saturate(round(x / scale) + zp)`,
/// halves to even, as onnxruntime computes it, to int8 or uint8.
fn fold_quantize(ctx: &Ctx, out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let (lo, hi) = match out[0].dtype {
        DType::I8 => (-128.0f32, 127.0f32),
        DType::U8 => (0.0, 255.0),
        _ => return Ok(None),
    };
    let Some(q) = const_q(ctx)? else { return Ok(None) };
    let Some(xv) = q.x.to_f32() else { return Ok(None) };
    let y: Vec<i64> = xv
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = q.entry(i);
            ((v / q.scale[c]).round_ties_even() + q.zp[c] as f32).clamp(lo, hi) as i64
        })
        .collect();
    Ok(TensorData::from_i64_as(out[0].dtype, q.x.shape.clone(), &y).map(|t| vec![t]))
}

/// A constant DequantizeLinear that only generation reads (see
/// [`FoldWhen::ReadWhenGenerating`]): `(x - zp) * scale` in f32, as
/// onnxruntime computes it; a non-f32 result is left alone.
fn fold_dequantize(ctx: &Ctx, out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    if out[0].dtype != DType::F32 {
        return Ok(None);
    }
    let Some(q) = const_q(ctx)? else { return Ok(None) };
    let Some(xv) = q.x.to_i64() else { return Ok(None) };
    let y: Vec<f32> = xv
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = q.entry(i);
            (v - q.zp[c]) as f32 * q.scale[c]
        })
        .collect();
    Ok(Some(vec![TensorData::from_f32(q.x.shape.clone(), &y)]))
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

/// QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp): a 2-D
/// product, quantized like y_zp when y_scale is given, else f32.
fn qgemm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    scale_matches_zero_point(ctx, 1, 2)?;
    scale_matches_zero_point(ctx, 4, 5)?;
    let dtype = match (ctx.has(7), ctx.has(8)) {
        (true, true) => ctx.dtype(8)?,
        (true, false) => DType::U8,
        (false, _) => DType::F32,
    };
    let (Some(a), Some(b)) = (ctx.shape(0)?, ctx.shape(3)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let (ta, tb) = (ctx.node.flag("transA", false)?, ctx.node.flag("transB", false)?);
    if a.len() != 2 || b.len() != 2 {
        return Err(ctx.err(format!("QGemm takes 2-D operands, found A {a:?} and B {b:?}")));
    }
    let (m, ka) = if ta { (a[1], a[0]) } else { (a[0], a[1]) };
    let (kb, n) = if tb { (b[1], b[0]) } else { (b[0], b[1]) };
    if ka != kb {
        return Err(ctx.err(format!("inner dimensions differ: A {a:?} (transA={ta}) and B {b:?} (transB={tb})")));
    }
    Ok(vec![TensorType::new(dtype, &[m, n])])
}

/// QLinearGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp): N, C and
/// spatial dims of 1.
fn qlinear_gap(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    if ctx.node.flag("channels_last", false)? {
        return Err(ctx.err("channels_last = 1 is not supported (NCHW only)"));
    }
    Ok(vec![match ctx.shape(0)? {
        Some(x) if x.len() >= 3 => TensorType::new(dtype, &[&x[..2], &vec![1; x.len() - 2][..]].concat()),
        Some(x) => return Err(ctx.err(format!("input {x:?} has no spatial dims"))),
        None => TensorType::unknown(dtype),
    }])
}

/// QLinearAdd / QLinearMul(A, a_scale, a_zp, B, b_scale, b_zp, y_scale,
/// y_zp): numpy broadcasting, A's type.
fn qlinear_binary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let (Some(a), Some(b)) = (ctx.shape(0)?, ctx.shape(3)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    Ok(vec![TensorType::new(dtype, &super::broadcast(ctx, &a, &b)?)])
}

fn qlinear_softmax(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![with_shape_of(ctx, 0, ctx.dtype(0)?)?])
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
    let y_dtype = match yd {
        DType::I32 => Arg::Enum("DG_DT_I32"),
        DType::F32 if s.y_scale.is_none() => Arg::Enum("DG_DT_F32"),
        other => dtype_enum(ctx, "the output", other)?,
    };
    fields.push(("y_dtype", y_dtype));
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
    let group = to_u32(ctx, "group", ctx.attr_int("group", super::conv::GROUP)?)?;
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
    fields.push(("scratch", ctx.scratch.clone().map_or(Arg::Null, Arg::Ptr)));
    one(call("dg_qlinear_conv", "dg_qconv_args_t", fields))
}

/// Cores with a scratch slot, and output columns gathered at once
/// (runtime/kernels/dg_k_quant.h, dg_qconv_args_t).
const QCONV_SLOTS: u64 = 8;
const QCONV_PIX: u64 = 4;

/// The packed-dot path's scratch: four words per output channel (sum
/// offset, W's zero point, multiplier, bound) and, where K = in_c/group *
/// k_h * k_w is not a multiple of 4, W with its rows padded to KP (K
/// rounded up to 4), shared by the cores; then per core QCONV_PIX gathered
/// windows of KP bytes.
fn qconv_scratch(g: &Graph, n: &Node, s: &Slots) -> u64 {
    let Some(w) = n.input(s.w).and_then(|w| g.tensor(w).ty.shape()) else { return 0 };
    let k = w.iter().skip(1).product::<usize>() as u64;
    if w.len() < 3 || k == 0 {
        return 0;
    }
    let (kp, out_c) = (k.div_ceil(4) * 4, w[0] as u64);
    let copy = if kp == k { 0 } else { out_c * kp };
    16 * out_c + copy + QCONV_SLOTS * QCONV_PIX * kp
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
    fields.push(("scratch", ctx.scratch.clone().map_or(Arg::Null, Arg::Ptr)));
    one(call("dg_qlinear_matmul", "dg_qmatmul_args_t", fields))
}

/// The packed product's scratch: B as [n, k] rows and four words per
/// column, for a 2-D B (one for every batch) whose k is a multiple of 4;
/// other products take the direct loop and no scratch.
fn qmatmul_scratch(g: &Graph, n: &Node, b: usize, trans_b: bool) -> u64 {
    let Some(shape) = n.input(b).and_then(|b| g.tensor(b).ty.shape()) else { return 0 };
    let [rows, cols] = shape[..] else { return 0 };
    let (k, cols) = if trans_b { (cols, rows) } else { (rows, cols) };
    if k == 0 || k % 4 != 0 {
        return 0;
    }
    (cols * k + 16 * cols) as u64
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

fn bind_qgemm(ctx: &KernelCtx) -> Result<KernelCall> {
    if ctx.attr_int("transA", 0)? != 0 {
        return Err(ctx.err("transA = 1 is not supported"));
    }
    let alpha = ctx.attr_float("alpha", 1.0)?;
    if !alpha.is_finite() || alpha == 0.0 {
        return Err(ctx.err(format!("alpha = {alpha} must be a finite, non-zero number")));
    }
    let trans_b = ctx.attr_int("transB", 0)? != 0;
    // Without y_scale the product is f32 (and y_zp unread).
    let slots =
        if ctx.node.input(7).is_some() { QGEMM_SLOTS } else { Slots { y_scale: None, y_zp: None, ..QGEMM_SLOTS } };
    let (a, b) = (ctx.in_shape(0)?, ctx.in_shape(3)?);
    let geometry = product_fields(ctx, a, b, false, trans_b)?;
    let (quant, per) = quant_fields(ctx, &slots, geometry.n, 0)?;
    if let Some(c) = ctx.node.input(6) {
        let shape = ctx.graph.tensor(c).ty.shape().unwrap_or_default();
        if ctx.in_dtype(6)? != DType::I32
            || numel(&shape) != geometry.n
            || shape.len() > 2
            || (shape.len() == 2 && shape[0] != 1)
        {
            return Err(ctx.err(format!(
                "C (input 6) is {} {shape:?}; the kernel adds an int32 bias of one value per column ({})",
                ctx.in_dtype(6)?,
                geometry.n
            )));
        }
    }
    let mut fields = vec![("a", ctx.inp(0)?), ("b", ctx.inp(3)?), ("y", ctx.out(0)?)];
    fields.extend(quant.into_iter().map(|(k, v)| (rename(k), v)));
    fields.extend(geometry.fields);
    fields.push(("b_per_col", u(usize::from(per.channel))));
    fields.push(("trans_b", u(usize::from(trans_b))));
    fields.push(("bias", ctx.opt_in(6)));
    if alpha != 1.0 {
        fields.push(("alpha", Arg::F(alpha)));
    }
    fields.push(("scratch", ctx.scratch.clone().map_or(Arg::Null, Arg::Ptr)));
    one(call("dg_qlinear_matmul", "dg_qmatmul_args_t", fields))
}

/// QGemm's output slots (its inputs are QLinearMatMul's but for C at 6).
const QGEMM_SLOTS: Slots = Slots {
    x: 0,
    w: 3,
    x_scale: Some(1),
    x_zp: 2,
    w_scale: Some(4),
    w_zp: 5,
    y_scale: Some(7),
    y_zp: Some(8),
    bias: Some(6),
};

fn bind_qlinear_gap(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let dtype = ctx.in_dtype(0)?;
    for (scale, zp) in [(1, 2), (3, 4)] {
        require_f32_scale(ctx, scale)?;
        require_zp_type(ctx, zp, dtype)?;
        per_tensor(ctx, scale)?;
        per_tensor(ctx, zp)?;
    }
    one(call(
        "dg_qlinear_global_average_pool",
        "dg_qgap_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("x_scale", ctx.inp(1)?),
            ("y_scale", ctx.inp(3)?),
            ("x_zero_point", ctx.opt_in(2)),
            ("y_zero_point", ctx.opt_in(4)),
            ("planes", u(x[0] * x[1])),
            ("image", u(numel(&x[2..]))),
            ("dtype", dtype_enum(ctx, "the input", dtype)?),
        ],
    ))
}

/// Entries of QLinearSoftmax's exp table (one per 8-bit step).
const SOFTMAX_TABLE: usize = 256;

/// onnxruntime's QLinearSoftmax table for input scale `x_scale` and rows
/// of `d` values: exp of each step below the top, raised by a shift that
/// keeps a row's sum far from f32's maximum (it cancels in the ratio),
/// in f64 rounded to f32; int8 inputs index it by their byte.
fn softmax_table(x_scale: f32, d: usize, signed: bool) -> Vec<f32> {
    let shift = f64::from(f32::MAX / d as f32).ln();
    let shift = (shift - 5.0).max(0.0) / f64::from(x_scale);
    let mut table = vec![0f32; SOFTMAX_TABLE];
    for i in 0..SOFTMAX_TABLE {
        let e = ((i as f64 - 255.0 + shift) * f64::from(x_scale)).exp();
        let at = if signed { (i as i32 - 128) as u8 } else { i as u8 };
        table[at as usize] = e as f32;
    }
    table
}

fn bind_qlinear_softmax(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let dtype = ctx.in_dtype(0)?;
    for (scale, zp) in [(1, 2), (3, 4)] {
        require_f32_scale(ctx, scale)?;
        require_zp_type(ctx, zp, dtype)?;
        per_tensor(ctx, scale)?;
    }
    let opset = ctx.attr_int("opset", 13)?;
    let axis = ctx.axis(ctx.attr_int("axis", super::softmax::default_axis(opset < 13))?, x.len())?;
    // From opset 13 the row is the axis alone; it must be the last
    // (the kernel reads contiguous rows).
    if opset >= 13 && numel(&x[axis + 1..]) != 1 {
        return Err(
            ctx.err(format!("axis {axis} of {x:?} is not the last: the kernel takes rows of contiguous values"))
        );
    }
    let d = if opset >= 13 { x[axis] } else { numel(&x[axis..]) };
    let constant = |slot: usize| super::kernel::scalar_const(ctx, slot);
    let (Some(xs), Some(ys)) = (constant(1)?, constant(3)?) else {
        return Err(ctx.err("x_scale and y_scale must be constants (the exp table is built when generating code)"));
    };
    let table = softmax_table(xs, d.max(1), dtype == DType::I8);
    let mut inv = call(
        "dg_qlinear_softmax",
        "dg_qsoftmax_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("table", Arg::Local("table")),
            ("y_zero_point", ctx.opt_in(4)),
            ("y_scale_floor", Arg::F((1.0f32 / ys).floor())),
            ("rows", u(numel(&x) / d.max(1))),
            ("d", u(d)),
            ("dtype", dtype_enum(ctx, "the input", dtype)?),
        ],
    );
    inv.locals =
        vec![Local { ctype: "static const float", name: "table", values: table.into_iter().map(Arg::F).collect() }];
    one(inv)
}

fn bind_qlinear_binary(ctx: &KernelCtx, func: &str) -> Result<KernelCall> {
    let dtype = ctx.in_dtype(0)?;
    if ctx.in_dtype(3)? != dtype || ctx.out_dtype(0)? != dtype {
        return Err(ctx.err(format!("A is {dtype}, B {}: the kernel takes operands of one type", ctx.in_dtype(3)?)));
    }
    for (scale, zp) in [(1, 2), (4, 5), (6, 7)] {
        require_f32_scale(ctx, scale)?;
        require_zp_type(ctx, zp, dtype)?;
        per_tensor(ctx, scale)?;
        per_tensor(ctx, zp)?;
    }
    let (a, b, y) = (ctx.in_shape(0)?, ctx.in_shape(3)?, ctx.out_shape(0)?);
    let mut fields = vec![
        ("a", ctx.inp(0)?),
        ("b", ctx.inp(3)?),
        ("y", ctx.out(0)?),
        ("a_scale", ctx.inp(1)?),
        ("b_scale", ctx.inp(4)?),
        ("y_scale", ctx.inp(6)?),
        ("a_zero_point", ctx.opt_in(2)),
        ("b_zero_point", ctx.opt_in(5)),
        ("y_zero_point", ctx.opt_in(7)),
        ("n", u(numel(&y))),
    ];
    if a == y && b == y {
        fields.push(("ndim", u(0)));
    } else {
        super::kernel::max_dims(ctx, y.len())?;
        fields.push(("ndim", u(y.len())));
        fields.push(("shape", super::kernel::dims_list(&y)));
        fields.push(("a_strides", super::kernel::dims_list(&super::kernel::broadcast_strides(ctx, &a, &y)?)));
        fields.push(("b_strides", super::kernel::dims_list(&super::kernel::broadcast_strides(ctx, &b, &y)?)));
    }
    fields.push(("dtype", dtype_enum(ctx, "A", dtype)?));
    one(call(func, "dg_qbinary_args_t", fields))
}
