//! Elementwise operators (numpy broadcasting) and their gradients.

use super::grad::GradCtx;
use super::kernel::{
    broadcast_strides, call, dims_list, f, max_dims, numel, one, u, Arg, Kernel, KernelCall, KernelCtx, Local,
};
use super::tile;
use super::{broadcast_inputs, Ctx, OpDef, FOLD_LIMIT};
use crate::error::Result;
use crate::ir::{DType, TensorData, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Add",
        fold: Some(|c, o| fold_arith(c, o, |x, y| Some(x.wrapping_add(y)))),
        kernel: Some(Kernel::Named(bind_arith, "dg_add")),
        grad: Some(add_grad),
        recompute: Some(super::recompute_copy),
        qdq: Some(super::quant::Qdq::Fuse(&super::quant::QDQ_ADD)),
        ..BINARY
    },
    OpDef {
        name: "Sub",
        fold: Some(|c, o| fold_arith(c, o, |x, y| Some(x.wrapping_sub(y)))),
        kernel: Some(Kernel::Named(bind_arith, "dg_sub")),
        grad: Some(sub_grad),
        recompute: Some(super::recompute_copy),
        ..BINARY
    },
    OpDef {
        name: "Mul",
        fold: Some(|c, o| fold_arith(c, o, |x, y| Some(x.wrapping_mul(y)))),
        kernel: Some(Kernel::Named(bind_arith, "dg_mul")),
        grad: Some(mul_grad),
        recompute: Some(super::recompute_copy),
        qdq: Some(super::quant::Qdq::Fuse(&super::quant::QDQ_MUL)),
        ..BINARY
    },
    OpDef {
        name: "Div",
        fold: Some(|c, o| fold_arith(c, o, |x, y| (y != 0).then(|| x.wrapping_div(y)))),
        kernel: Some(Kernel::Named(bind_arith, "dg_div")),
        grad: Some(div_grad),
        ..BINARY
    },
    OpDef { name: "Pow", infer: pow, kernel: Some(Kernel::Bind(bind_pow)), grad: Some(pow_grad), ..BINARY },
    // Same-shaped inputs only (the kernel's): tiles are flat ranges.
    OpDef { name: "Sum", infer: binary, kernel: Some(Kernel::Bind(bind_sum)), tile: Some(tile::FLAT), ..OpDef::BASE },
    OpDef {
        name: "Cast",
        attrs: &["saturate", "to"],
        infer: cast,
        fold: Some(fold_cast),
        fold_when: super::FoldWhen::ConstantValues,
        kernel: Some(Kernel::Bind(bind_cast)),
        tile: Some(tile::FLAT),
        ..OpDef::BASE
    },
    // CastLike(x, like): Cast to `like`'s element type (only its type is read).
    OpDef {
        name: "CastLike",
        attrs: &["saturate"],
        infer: cast_like,
        required: &[0, 1],
        fold: Some(fold_cast_like),
        fold_when: super::FoldWhen::ConstantValues,
        type_only: &[1],
        kernel: Some(Kernel::Bind(bind_cast)),
        ..OpDef::BASE
    },
    // Mod{fmod}: fmod = 0 takes the divisor's sign (numpy's mod), fmod = 1
    // the dividend's (C's fmod).
    OpDef {
        name: "Mod",
        attrs: &["fmod"],
        infer: modulo,
        required: &[0, 1],
        fold: Some(fold_mod),
        kernel: Some(Kernel::Bind(bind_mod)),
        tile: Some(tile::BROADCAST),
        ..OpDef::BASE
    },
    // com.microsoft Scale(X, scale) = X * scale (or / with scale_down).
    OpDef {
        name: "Scale",
        attrs: &["scale_down"],
        infer: scale,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_scale)),
        tile: Some(tile::FLAT),
        ..OpDef::BASE
    },
];

/// Mod's `fmod` and com.microsoft Scale's `scale_down` defaults.
const FMOD: bool = false;
const SCALE_DOWN: bool = false;

/// Two operands broadcast numpy-style (opset < 7 attributes too), tiled
/// as such.
const BINARY: OpDef = OpDef {
    legacy: super::LEGACY_BROADCAST,
    infer: binary,
    required: &[0, 1],
    tile: Some(tile::BROADCAST),
    ..OpDef::BASE
};

fn unary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![ctx.same_as(0)?])
}

/// com.microsoft Scale: `scale_down` is 0/1.
fn scale(ctx: &Ctx) -> Result<Vec<TensorType>> {
    ctx.node.flag("scale_down", SCALE_DOWN)?;
    unary(ctx)
}

fn binary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![broadcast_inputs(ctx)?])
}

/// Pow's result has the base's type; the exponent only broadcasts.
fn pow(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let mut t = broadcast_inputs(ctx)?;
    t.dtype = ctx.dtype(0)?;
    Ok(vec![t])
}

fn cast(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let to = cast_to(ctx)?;
    let mut t = ctx.same_as(0)?;
    t.dtype = to;
    Ok(vec![t])
}

/// Cast's required `to`: an ONNX element type deploygen knows.
fn cast_to(ctx: &Ctx) -> Result<DType> {
    let to = ctx.node.int("to")?.ok_or_else(|| ctx.err("attribute 'to' is required"))?;
    match i32::try_from(to).map(DType::from_onnx) {
        Ok(DType::Other(_)) | Err(_) => {
            Err(ctx.err(format!("attribute 'to' = {to} is not an ONNX element type deploygen supports")))
        }
        Ok(d) => Ok(d),
    }
}

fn cast_like(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let to = ctx.dtype(1)?;
    if let DType::Other(code) = to {
        return Err(
            ctx.err(format!("input 1 has ONNX element type {code}, which deploygen does not support as a cast target"))
        );
    }
    let mut t = ctx.same_as(0)?;
    t.dtype = to;
    Ok(vec![t])
}

fn fold_cast_like(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let to = ctx.dtype(1)?;
    Ok(ctx.konst(0).and_then(|d| cast_values(d, to)).map(|t| vec![t]))
}

/// A constant's values as element type `to`: integers and bools convert
/// as C converts them (bool: nonzero), floats to floats round to nearest.
/// Floats to integers are left to the kernel (`None`), whose conversion
/// decides the values out of range.
fn cast_values(d: &TensorData, to: DType) -> Option<TensorData> {
    if let Some(v) = d.to_i64() {
        return TensorData::from_i64_as(to, d.shape.clone(), &v);
    }
    match (d.dtype, to) {
        (DType::F32 | DType::F64, DType::F32) => Some(TensorData::from_f32(d.shape.clone(), &d.to_f32()?)),
        (DType::F64, DType::F64) => Some(TensorData { dtype: to, ..d.clone() }),
        (DType::F32, DType::F64) => {
            let bytes = d.to_f32()?.iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect();
            Some(TensorData { dtype: to, shape: d.shape.clone(), bytes })
        }
        _ => None,
    }
}

/// Mod: both inputs of one type; `fmod` is 0 or 1, on integers and floats
/// alike (ONNX's current Mod defines fmod = 0 on floats as numpy's mod).
fn modulo(ctx: &Ctx) -> Result<Vec<TensorType>> {
    ctx.node.flag("fmod", FMOD)?;
    let (a, b) = (ctx.dtype(0)?, ctx.dtype(1)?);
    if a != b {
        return Err(ctx.err(format!("inputs must have one element type, got {a} and {b}")));
    }
    binary(ctx)
}

/// Mod of constant integers (shape arithmetic).
fn fold_mod(ctx: &Ctx, out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let fmod = ctx.node.flag("fmod", FMOD)?;
    fold_int_pair(ctx, out, |x, y| {
        if y == 0 {
            return Err(ctx.err("integer Mod by zero in a constant expression"));
        }
        let r = x.wrapping_rem(y);
        Ok(Some(if !fmod && r != 0 && ((r < 0) != (y < 0)) { r + y } else { r }))
    })
}

fn fold_cast(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let to = cast_to(ctx)?;
    Ok(ctx.konst(0).and_then(|d| cast_values(d, to)).map(|t| vec![t]))
}

/// Integer arithmetic `f` on shape values (e.g. `Shape → Div → Concat`);
/// `f` gives `None` only for a division by zero.
fn fold_arith(ctx: &Ctx, out: &[TensorType], f: fn(i64, i64) -> Option<i64>) -> Result<Option<Vec<TensorData>>> {
    fold_int_pair(ctx, out, |x, y| match f(x, y) {
        Some(v) => Ok(Some(v)),
        None => Err(ctx.err("integer division by zero in a constant shape expression")),
    })
}

/// `f` of inputs 0 and 1, both constant integers (or bools) of one dtype,
/// broadcast numpy-style, as the output's dtype (a comparison's is bool);
/// `None` (not folded) when they are not, when the output is too big to
/// fold, or when `f` gives `None`.
pub(super) fn fold_int_pair(
    ctx: &Ctx,
    out: &[TensorType],
    f: impl Fn(i64, i64) -> Result<Option<i64>>,
) -> Result<Option<Vec<TensorData>>> {
    let (Some(a), Some(b)) = (ctx.konst(0), ctx.konst(1)) else {
        return Ok(None);
    };
    if !(a.dtype.is_int() || a.dtype == DType::Bool) || a.dtype != b.dtype {
        return Ok(None);
    }
    let Some(dtype) = out.first().map(|t| t.dtype) else { return Ok(None) };
    let Some(out) = out.first().and_then(|t| t.shape()) else { return Ok(None) };
    let n: usize = out.iter().product();
    if n > FOLD_LIMIT {
        return Ok(None);
    }
    let (Some(va), Some(vb)) = (a.to_i64(), b.to_i64()) else {
        return Ok(None);
    };
    let mut res = Vec::with_capacity(n);
    for flat in 0..n {
        let x = va[broadcast_index(&out, &a.shape, flat)];
        let y = vb[broadcast_index(&out, &b.shape, flat)];
        let Some(v) = f(x, y)? else { return Ok(None) };
        res.push(v);
    }
    Ok(TensorData::from_i64_as(dtype, out, &res).map(|t| vec![t]))
}

/// The element of an input of shape `s` that output element `flat` (of
/// shape `out`) reads under numpy broadcasting.
pub(super) fn broadcast_index(out: &[usize], s: &[usize], flat: usize) -> usize {
    let mut pos = vec![0usize; out.len()];
    let mut rem = flat;
    for k in (0..out.len()).rev() {
        pos[k] = rem % out[k];
        rem /= out[k];
    }
    let (mut idx, mut stride) = (0usize, 1usize);
    for k in (0..s.len()).rev() {
        let p = if s[k] == 1 { 0 } else { pos[out.len() - s.len() + k] };
        idx += p * stride;
        stride *= s[k];
    }
    idx
}

// ---- kernel bindings --------------------------------------------------------

/// The element types a binary kernel is built for: input 0's, input 1's,
/// the kernel name's suffix and its args struct; the output has input 0's
/// type (runtime/kernels/dg_kernels.h).
type BinaryForms = &'static [(DType, DType, &'static str, &'static str)];

const F32_FORM: (DType, DType, &str, &str) = (DType::F32, DType::F32, "f32", "dg_binary_args_t");
const I64_FORM: (DType, DType, &str, &str) = (DType::I64, DType::I64, "i64", "dg_binary_typed_args_t");
const I32_FORM: (DType, DType, &str, &str) = (DType::I32, DType::I32, "i32", "dg_binary_typed_args_t");
const I8_FORM: (DType, DType, &str, &str) = (DType::I8, DType::I8, "i8", "dg_binary_typed_args_t");
const U8_FORM: (DType, DType, &str, &str) = (DType::U8, DType::U8, "u8", "dg_binary_typed_args_t");

/// f32 only (PRelu).
pub(super) const F32_ONLY: BinaryForms = &[F32_FORM];
/// Add, Sub, Mul, Div, Mod: f32, i64, i32, i8 and u8.
const ARITH: BinaryForms = &[F32_FORM, I64_FORM, I32_FORM, I8_FORM, U8_FORM];
/// Pow: also a base and an exponent of different types (ONNX's T and T1).
const POW_FORMS: BinaryForms = &[
    F32_FORM,
    I64_FORM,
    (DType::F32, DType::I64, "f32_i64", "dg_binary_typed_args_t"),
    (DType::I64, DType::F32, "i64_f32", "dg_binary_typed_args_t"),
    I32_FORM,
    (DType::F32, DType::I32, "f32_i32", "dg_binary_typed_args_t"),
    (DType::I32, DType::F32, "i32_f32", "dg_binary_typed_args_t"),
];

/// Add, Sub, Mul, Div: `<stem>_<suffix>` of [`ARITH`].
fn bind_arith(ctx: &KernelCtx, stem: &'static str) -> Result<KernelCall> {
    bind_binary(ctx, stem, ARITH)
}

fn bind_pow(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_binary(ctx, "dg_pow", POW_FORMS)
}

/// Mod: `dg_mod_<suffix>` (fmod = 0), `dg_fmod_<suffix>` (fmod = 1), the
/// suffixes of [`ARITH`].
fn bind_mod(ctx: &KernelCtx) -> Result<KernelCall> {
    let stem = if ctx.attr_flag("fmod", FMOD)? { "dg_fmod" } else { "dg_mod" };
    bind_binary(ctx, stem, ARITH)
}

/// A broadcasting binary kernel `<stem>_<suffix>`, the form chosen by the
/// input element types.
pub(super) fn bind_binary(ctx: &KernelCtx, stem: &str, forms: BinaryForms) -> Result<KernelCall> {
    let (da, db) = (ctx.in_dtype(0)?, ctx.in_dtype(1)?);
    let Some(&(_, _, suffix, args_type)) = forms.iter().find(|(a, b, ..)| (*a, *b) == (da, db)) else {
        let known: Vec<String> = forms.iter().map(|(a, b, ..)| format!("({a}, {b})")).collect();
        return Err(
            ctx.err(format!("inputs are ({da}, {db}); the kernel binding computes on {} only", known.join(", ")))
        );
    };
    let (a, b, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let n = numel(&y);
    let mut fields = vec![("a", ctx.inp(0)?), ("b", ctx.inp(1)?), ("y", ctx.out(0)?), ("n", u(n))];
    // Whether the node broadcasts is the graph's fact, not a tile's: every
    // tile of a broadcasting node takes the strided form (a one-row tile of
    // `[64, 64] + [64]` has equal sizes), so the tiles' calls agree.
    let (ga, gb, gy) = (ctx.graph_in_shape(0)?, ctx.graph_in_shape(1)?, ctx.graph_out_shape(0)?);
    if !(numel(&ga) == numel(&gy) && numel(&gb) == numel(&gy)) {
        max_dims(ctx, y.len())?;
        fields.push(("ndim", u(y.len())));
        fields.push(("shape", dims_list(&y)));
        fields.push(("a_strides", dims_list(&broadcast_strides(ctx, &a, &y)?)));
        fields.push(("b_strides", dims_list(&broadcast_strides(ctx, &b, &y)?)));
    } else {
        fields.push(("ndim", u(0)));
    }
    one(call(&format!("{stem}_{suffix}"), args_type, fields))
}

pub(super) fn bind_scale(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let n = numel(&ctx.out_shape(0)?);
    let down = ctx.attr_flag("scale_down", SCALE_DOWN)?;
    // A non-float scale (ORT casts it) is a constant: pass it as a float.
    let mut locals = vec![];
    let sc = if ctx.in_dtype(1)? == DType::F32 {
        ctx.inp(1)?
    } else {
        let k = ctx.ops().konst(1).ok_or_else(|| ctx.err("a non-float scale must be a constant"))?;
        let v = match (k.to_i64(), k.to_f32()) {
            (Some(v), _) => v.first().copied().unwrap_or(0) as f32,
            (None, Some(v)) => v.first().copied().unwrap_or(0.0),
            (None, None) => return Err(ctx.err("the scale constant has no numeric value")),
        };
        locals.push(Local { ctype: "const float", name: "scale_value", values: vec![f(v)] });
        Arg::Local("scale_value")
    };
    let mut inv = call(
        "dg_scale_f32",
        "dg_scale_args_t",
        vec![("x", ctx.inp(0)?), ("scale", sc), ("y", ctx.out(0)?), ("n", u(n)), ("scale_down", u(usize::from(down)))],
    );
    inv.locals = locals;
    one(inv)
}

/// Sum: same-shaped inputs; two that broadcast add as Add does.
pub(super) fn bind_sum(ctx: &KernelCtx) -> Result<KernelCall> {
    let y = ctx.out_shape(0)?;
    if ctx.node.inputs.len() == 2 && (0..2).any(|i| ctx.in_shape(i).map(|s| s != y).unwrap_or(false)) {
        return bind_binary(ctx, "dg_add", &[F32_FORM]);
    }
    let mut xs = vec![];
    for i in 0..ctx.node.inputs.len() {
        ctx.require_f32(&[i])?;
        if numel(&ctx.in_shape(i)?) != numel(&y) {
            return Err(
                ctx.err("Sum of more than two inputs with broadcasting: the kernel adds same-shaped inputs only")
            );
        }
        xs.push(ctx.inp(i)?);
    }
    ctx.list_fits("inputs", xs.len())?;
    let mut inv = call(
        "dg_sum_f32",
        "dg_sum_args_t",
        vec![("x", Arg::Local("xs")), ("nin", u(xs.len())), ("y", ctx.out(0)?), ("n", u(numel(&y)))],
    );
    inv.locals.push(Local { ctype: "const float *const", name: "xs", values: xs });
    one(inv)
}

pub(super) fn cast_code(ctx: &KernelCtx, d: DType) -> Result<&'static str> {
    Ok(match d {
        DType::F32 => "DG_DT_F32",
        DType::I64 => "DG_DT_I64",
        DType::I32 => "DG_DT_I32",
        DType::U8 => "DG_DT_U8",
        DType::Bool => "DG_DT_BOOL",
        other => return Err(ctx.err(format!("cast of {other}: the kernel casts f32, i64, i32, u8 and bool"))),
    })
}

pub(super) fn bind_cast(ctx: &KernelCtx) -> Result<KernelCall> {
    let (from, to) = (cast_code(ctx, ctx.in_dtype(0)?)?, cast_code(ctx, ctx.out_dtype(0)?)?);
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        "dg_cast",
        "dg_cast_args_t",
        vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n)), ("from", Arg::Enum(from)), ("to", Arg::Enum(to))],
    ))
}

// ---- gradient rules ------------------------------------------------------------------------

/// Add / Sub: dA = dY, dB = ±dY, each summed back over what broadcast.
fn add_grad(ctx: &mut GradCtx) -> Result<()> {
    add_sub_grad(ctx, false)
}

fn sub_grad(ctx: &mut GradCtx) -> Result<()> {
    add_sub_grad(ctx, true)
}

fn add_sub_grad(ctx: &mut GradCtx, negate_b: bool) -> Result<()> {
    let dy = ctx.dy(0)?;
    for i in 0..2 {
        if !ctx.needs(i) {
            continue;
        }
        let shape = ctx.shape(ctx.x(i)?)?;
        let name = ctx.dx_name(i);
        let mut g = dy;
        if i == 1 && negate_b {
            g = ctx.emit1("Neg", "", &[dy], &ctx.name("neg"), vec![])?;
        }
        let g = ctx.b.unbroadcast(g, &shape, &name)?;
        ctx.set(i, g);
    }
    Ok(())
}

/// Mul: dA = dY * B, dB = dY * A, each summed back over what broadcast.
fn mul_grad(ctx: &mut GradCtx) -> Result<()> {
    let dy = ctx.dy(0)?;
    for i in 0..2 {
        if !ctx.needs(i) {
            continue;
        }
        let (x, other) = (ctx.x(i)?, ctx.x(1 - i)?);
        let shape = ctx.shape(x)?;
        let name = ctx.dx_name(i);
        let prod = ctx.emit1("Mul", "", &[dy, other], &ctx.name(&format!("mul{i}")), vec![])?;
        let g = ctx.b.unbroadcast(prod, &shape, &name)?;
        ctx.set(i, g);
    }
    Ok(())
}

/// Div: dA = dY / B, dB = -(dY / B) * Y, each summed back over what
/// broadcast.
fn div_grad(ctx: &mut GradCtx) -> Result<()> {
    let (dy, b) = (ctx.dy(0)?, ctx.x(1)?);
    let q = ctx.emit1("Div", "", &[dy, b], &ctx.name("dy_over_b"), vec![])?;
    if ctx.needs(0) {
        let shape = ctx.shape(ctx.x(0)?)?;
        let name = ctx.dx_name(0);
        let g = ctx.b.unbroadcast(q, &shape, &name)?;
        ctx.set(0, g);
    }
    if ctx.needs(1) {
        let y = ctx.y(0)?;
        let shape = ctx.shape(b)?;
        let name = ctx.dx_name(1);
        let p = ctx.emit1("Mul", "", &[q, y], &ctx.name("q_times_y"), vec![])?;
        let n = ctx.emit1("Neg", "", &[p], &ctx.name("neg"), vec![])?;
        let g = ctx.b.unbroadcast(n, &shape, &name)?;
        ctx.set(1, g);
    }
    Ok(())
}

/// Pow with a constant exponent p: dA = dY * p * A^(p-1).
fn pow_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(1) {
        return Err(ctx.err("the exponent has no gradient rule: it must be a constant"));
    }
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, a, e) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let p = match ctx.b.graph.tensor(e).data.as_ref().and_then(|d| d.to_f32()) {
        Some(v) if v.len() == 1 => v[0],
        _ => return Err(ctx.err("the exponent must be one constant float value for the gradient")),
    };
    let pm1 = ctx.scalar("exponent_minus_one", p - 1.0);
    let pw = ctx.op("Pow", &[a, pm1], "pow")?;
    let k = ctx.scalar("exponent", p);
    let d = ctx.op("Mul", &[pw, k], "derivative")?;
    ctx.set_product(0, dy, d)
}
