//! Elementwise unary operators (fp32): activations, rounding,
//! transcendental functions, Clip, and the gradients onnxruntime-training
//! emits for them (SigmoidGrad, TanhGrad, QuickGeluGrad; Sign as part of
//! Abs's gradient). The gradient rules are in `rules.rs`.

mod rules;
use rules::*;

use super::grad;
use super::kernel::{call, f, numel, one, scalar_const, u, Arg, Kernel, KernelCall, KernelCtx};
use super::tile;
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, Node, TensorData, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Relu",
        infer: unary,
        kernel: Some(Kernel::Bind(bind_relu)),
        grad: Some(relu_grad),
        act: Some(1),
        ..ACTIVATION
    },
    OpDef {
        name: "Gelu",
        attrs: &["approximate"],
        infer: gelu,
        kernel: Some(Kernel::Bind(bind_gelu)),
        grad: Some(gelu_grad_rule),
        ..ACTIVATION
    },
    OpDef { name: "Ceil", kernel: Some(Kernel::Named(bind_unary, "dg_ceil_f32")), grad: Some(grad::zero), ..POINTWISE },
    OpDef {
        name: "Floor",
        kernel: Some(Kernel::Named(bind_unary, "dg_floor_f32")),
        grad: Some(grad::zero),
        ..POINTWISE
    },
    // Round: halves to even (runtime/kernels/requant.c).
    OpDef {
        name: "Round",
        kernel: Some(Kernel::Named(bind_unary, "dg_round_f32")),
        grad: Some(grad::zero),
        ..POINTWISE
    },
    OpDef { name: "Exp", kernel: Some(Kernel::Named(bind_unary, "dg_exp_f32")), grad: Some(exp_grad), ..POINTWISE },
    OpDef { name: "Log", kernel: Some(Kernel::Named(bind_unary, "dg_log_f32")), grad: Some(log_grad), ..POINTWISE },
    OpDef { name: "Sqrt", kernel: Some(Kernel::Named(bind_unary, "dg_sqrt_f32")), grad: Some(sqrt_grad), ..POINTWISE },
    // Folds on integers: Pad's gradient negates the constant pads.
    OpDef {
        name: "Neg",
        infer: unary,
        fold: Some(fold_neg),
        kernel: Some(Kernel::Named(bind_unary, "dg_neg_f32")),
        grad: Some(neg_grad),
        ..ACTIVATION
    },
    OpDef {
        name: "Abs",
        infer: unary,
        kernel: Some(Kernel::Named(bind_unary, "dg_abs_f32")),
        grad: Some(abs_grad),
        ..ACTIVATION
    },
    OpDef {
        name: "Not",
        infer: logical_not,
        fold: Some(super::select::fold_not),
        kernel: Some(Kernel::Bind(bind_not)),
        ..POINTWISE
    },
    OpDef { name: "Sign", infer: unary, kernel: Some(Kernel::Named(bind_unary, "dg_sign_f32")), ..POINTWISE },
    OpDef { name: "Tanh", kernel: Some(Kernel::Named(bind_unary, "dg_tanh_f32")), grad: Some(tanh_grad), ..ACTIVATION },
    OpDef {
        name: "Sigmoid",
        kernel: Some(Kernel::Named(bind_unary, "dg_sigmoid_f32")),
        grad: Some(sigmoid_grad),
        ..ACTIVATION
    },
    OpDef { name: "Erf", kernel: Some(Kernel::Named(bind_unary, "dg_erf_f32")), grad: Some(erf_grad), ..ACTIVATION },
    // HardSigmoid{alpha, beta}, HardSwish = x * HardSigmoid(x){1/6, 0.5}.
    OpDef {
        name: "HardSigmoid",
        attrs: &["alpha", "beta"],
        infer: alpha_beta,
        kernel: Some(Kernel::Bind(|c| bind_unary_param(c, "dg_hard_sigmoid_f32", HARD_SIGMOID))),
        grad: Some(hard_sigmoid_grad),
        ..ACTIVATION
    },
    OpDef {
        name: "HardSwish",
        kernel: Some(Kernel::Named(bind_unary, "dg_hard_swish_f32")),
        grad: Some(hard_swish_grad),
        ..ACTIVATION
    },
    // LeakyRelu{alpha}, Elu{alpha}, Softplus = ln(1 + exp(x)).
    OpDef {
        name: "LeakyRelu",
        attrs: &["alpha"],
        infer: alpha_beta,
        kernel: Some(Kernel::Bind(|c| bind_unary_param(c, "dg_leaky_relu_f32", LEAKY_RELU))),
        grad: Some(leaky_relu_grad),
        ..ACTIVATION
    },
    OpDef {
        name: "Elu",
        attrs: &["alpha"],
        infer: alpha_beta,
        kernel: Some(Kernel::Bind(|c| bind_unary_param(c, "dg_elu_f32", ELU))),
        grad: Some(elu_grad),
        ..ACTIVATION
    },
    OpDef {
        name: "Softplus",
        kernel: Some(Kernel::Named(bind_unary, "dg_softplus_f32")),
        grad: Some(softplus_grad),
        ..ACTIVATION
    },
    // PRelu(X, slope): the slope broadcasts to X (one way); the kernel is
    // the broadcasting binary one's.
    OpDef {
        name: "PRelu",
        infer: prelu,
        legacy_input: Some(prelu_channel_slope),
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_prelu)),
        tile: Some(tile::BROADCAST),
        grad: Some(prelu_grad),
        ..ACTIVATION
    },
    // Swish{alpha} = x * Sigmoid(alpha * x) (opset 24); com.microsoft
    // QuickGelu{alpha} is the same function with another default.
    OpDef {
        name: "Swish",
        attrs: &["alpha"],
        infer: alpha_beta,
        kernel: Some(Kernel::Bind(|c| bind_unary_param(c, "dg_swish_f32", SWISH))),
        grad: Some(|c| swish_grad(c, SWISH)),
        ..ACTIVATION
    },
    OpDef {
        name: "QuickGelu",
        attrs: &["alpha"],
        infer: alpha_beta,
        kernel: Some(Kernel::Bind(|c| bind_unary_param(c, "dg_swish_f32", QUICK_GELU))),
        grad: Some(|c| swish_grad(c, QUICK_GELU)),
        ..ACTIVATION
    },
    // Clip(X [, min] [, max]), or opset-6 attributes min/max: the bounds are
    // read when generating code.
    OpDef {
        name: "Clip",
        attrs: &["max", "min"],
        infer: clip,
        compile_time: &[1, 2],
        // The kernel reads run-time bounds from their buffers.
        data_when_not_constant: &[1, 2],
        kernel: Some(Kernel::Bind(bind_clip)),
        grad: Some(clip_grad),
        ..ACTIVATION
    },
    // com.microsoft (dY, Y) -> dX, and QuickGeluGrad(dY, X){alpha}.
    OpDef { name: "SigmoidGrad", kernel: Some(Kernel::Named(bind_act_grad_y, "dg_sigmoid_grad_f32")), ..ACT_GRAD },
    OpDef { name: "TanhGrad", kernel: Some(Kernel::Named(bind_act_grad_y, "dg_tanh_grad_f32")), ..ACT_GRAD },
    OpDef { name: "QuickGeluGrad", attrs: &["alpha"], kernel: Some(Kernel::Bind(bind_swish_grad)), ..ACT_GRAD },
    // ReluGrad(dY, X), GeluGrad(dY, X): dX has dY's shape.
    OpDef {
        name: "ReluGrad",
        infer: unary,
        kernel: Some(Kernel::Named(bind_act_grad, "dg_relu_grad_f32")),
        ..ACT_GRAD
    },
    OpDef {
        name: "GeluGrad",
        attrs: &["approximate"],
        infer: gelu_grad,
        kernel: Some(Kernel::Bind(bind_gelu_grad)),
        ..ACT_GRAD
    },
];

/// A function of one floating-point tensor, element by element: tiled
/// as such.
const POINTWISE: OpDef = OpDef { infer: float_unary, tile: Some(tile::POINTWISE), ..OpDef::BASE };

/// A [`POINTWISE`] activation: pure, so recomputed rather than kept for
/// the backward pass when the plan asks.
const ACTIVATION: OpDef = OpDef { recompute: Some(super::recompute_copy), ..POINTWISE };

/// An activation's gradient (dY, Y or X) -> dX, element by element.
const ACT_GRAD: OpDef =
    OpDef { infer: grad, required: &[0, 1], gradient: true, tile: Some(tile::POINTWISE), ..OpDef::BASE };

/// A parametric activation's attribute defaults: `alpha`, and `beta`
/// where the operator defines it. The shape rule, kernel binding and
/// gradient rule of the operator read its attributes through these.
#[derive(Clone, Copy)]
pub(super) struct AlphaBeta {
    alpha: f32,
    beta: Option<f32>,
}

/// HardSigmoid{alpha = 0.2, beta = 0.5}.
const HARD_SIGMOID: AlphaBeta = AlphaBeta { alpha: 0.2, beta: Some(0.5) };
/// LeakyRelu{alpha = 0.01}.
const LEAKY_RELU: AlphaBeta = AlphaBeta { alpha: 0.01, beta: None };
/// Elu{alpha = 1}.
const ELU: AlphaBeta = AlphaBeta { alpha: 1.0, beta: None };
/// Swish{alpha = 1}.
const SWISH: AlphaBeta = AlphaBeta { alpha: 1.0, beta: None };
/// com.microsoft QuickGelu{alpha = 1.702}, and QuickGeluGrad's alpha.
const QUICK_GELU: AlphaBeta = AlphaBeta { alpha: 1.702, beta: None };

impl AlphaBeta {
    /// The node's `alpha`, or the default.
    pub(super) fn alpha(self, node: &Node) -> Result<f32> {
        Ok(node.float("alpha")?.unwrap_or(self.alpha))
    }

    /// The node's `beta`, or the default; 0 for an operator without one.
    pub(super) fn beta(self, node: &Node) -> Result<f32> {
        match self.beta {
            Some(default) => Ok(node.float("beta")?.unwrap_or(default)),
            None => Ok(0.0),
        }
    }
}

fn unary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![ctx.same_as(0)?])
}

/// Not: bool in, bool out.
fn logical_not(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let t = ctx.same_as(0)?;
    if t.dtype != DType::Bool {
        return Err(ctx.err(format!("input must be bool, got {}", t.dtype)));
    }
    Ok(vec![t])
}

/// Functions only defined on floating-point inputs.
fn float_unary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let t = ctx.same_as(0)?;
    if !t.dtype.is_float() {
        return Err(ctx.err(format!("input must be floating point, got {}", t.dtype)));
    }
    Ok(vec![t])
}

/// Activations with optional FLOAT attributes alpha and beta.
fn alpha_beta(ctx: &Ctx) -> Result<Vec<TensorType>> {
    for a in ["alpha", "beta"] {
        if let Some(v) = ctx.node.float(a)? {
            if !v.is_finite() {
                return Err(ctx.err(format!("attribute '{a}' = {v} is not finite")));
            }
        }
    }
    float_unary(ctx)
}

/// A scalar given either as a FLOAT attribute (opset-6/11 forms: Clip's
/// min/max, Pad's value) or as input `slot`; both present and disagreeing
/// is an error naming the node. `Ok(None)`: neither given, or an input
/// whose value is only known at run time (allowed unless `constant`).
pub fn scalar_attr_or_input(ctx: &Ctx, attr: &str, slot: usize, constant: bool) -> Result<Option<f32>> {
    let from_attr = ctx.node.float(attr)?;
    let from_input = match ctx.node.input(slot) {
        None => None,
        Some(t) => {
            let name = ctx.graph.name_of(t);
            match ctx.konst(slot) {
                None if constant || from_attr.is_some() => return Err(ctx.not_constant(slot, attr)),
                None => None,
                Some(d) => match d.to_f32().or_else(|| d.to_i64().map(|v| v.iter().map(|&x| x as f32).collect())) {
                    Some(v) if v.len() == 1 => Some(v[0]),
                    _ => {
                        return Err(ctx.err(format!(
                            "input {slot} ('{name}', {attr}) must be a single value, got shape {:?}",
                            d.shape
                        )))
                    }
                },
            }
        }
    };
    match (from_attr, from_input) {
        (Some(a), Some(i)) if a != i => {
            Err(ctx
                .err(format!("{attr} is given both as attribute ({a}) and as input {slot} ({i}), and they disagree")))
        }
        (a, i) => Ok(a.or(i)),
    }
}

/// PRelu: X's type; the slope must broadcast to X's shape (ONNX's
/// unidirectional broadcasting).
fn prelu(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let x = float_unary(ctx)?;
    if ctx.dtype(1)? != x[0].dtype {
        return Err(ctx.err(format!("slope must be {} as X is, got {}", x[0].dtype, ctx.dtype(1)?)));
    }
    legacy_channel_slope(ctx, &x[0])?;
    let both = super::broadcast_inputs(ctx)?;
    if let (Some(xs), Some(s), Some(b)) = (x[0].shape(), ctx.shape(1)?, both.shape()) {
        if b != xs {
            return Err(ctx.err(format!("slope {s:?} does not broadcast to X {xs:?}")));
        }
    }
    Ok(x)
}

/// Before opset 7 a 1-D slope of X's channel count applies along axis 1,
/// not along numpy's last axis: X's shape and the slope, when the node
/// has that form.
fn channel_slope(ctx: &Ctx) -> Result<Option<(Vec<usize>, Vec<usize>)>> {
    let old = ctx.graph.opsets.get("").is_some_and(|&v| v < 7);
    match (old, ctx.shape(0)?, ctx.shape(1)?) {
        (true, Some(xs), Some(s)) if xs.len() > 2 && s.len() == 1 && s[0] == xs[1] => Ok(Some((xs, s))),
        _ => Ok(None),
    }
}

/// The opset < 7 per-channel slope `[C]` of a constant, as the `[C, 1,
/// ..]` slope that broadcasts along axis 1 in the current form.
fn prelu_channel_slope(ctx: &Ctx) -> Result<Option<(usize, TensorData)>> {
    let Some((xs, s)) = channel_slope(ctx)? else { return Ok(None) };
    let Some(k) = ctx.konst(1) else { return Ok(None) };
    let mut shape = vec![s[0]];
    shape.resize(xs.len() - 1, 1);
    Ok(Some((1, TensorData { shape, ..k.clone() })))
}

/// A per-channel slope of the opset < 7 form that is not a constant (so
/// it could not be given the current form's layout) is refused by name
/// rather than as a broadcast failure.
fn legacy_channel_slope(ctx: &Ctx, _x: &TensorType) -> Result<()> {
    if let Some((xs, s)) = channel_slope(ctx)? {
        return Err(ctx.err(format!(
            "the opset < 7 form of PRelu, a per-channel slope {s:?} applied along axis 1 of X {xs:?}, is \
             supported when the slope is a constant; this one is fed at run time: export at opset 7 or later (a \
             slope of shape [C, 1, ..])"
        )));
    }
    Ok(())
}

fn clip(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let t = ctx.same_as(0)?;
    let lo = scalar_attr_or_input(ctx, "min", 1, false)?;
    let hi = scalar_attr_or_input(ctx, "max", 2, false)?;
    if let (Some(lo), Some(hi)) = (lo, hi) {
        if lo.is_nan() || hi.is_nan() {
            return Err(ctx.err("min and max must not be NaN"));
        }
    }
    Ok(vec![t])
}

/// (dY, Y or X) -> dX with dY's shape; the two must agree.
fn grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dy = ctx.same_as(0)?;
    if let (Some(a), Some(b)) = (dy.shape(), ctx.shape(1)?) {
        if a != b {
            return Err(ctx.err(format!("gradient {a:?} and forward value {b:?} differ in shape")));
        }
    }
    Ok(vec![dy])
}

fn fold_neg(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let Some(d) = ctx.konst(0) else { return Ok(None) };
    if !d.dtype.is_int() || d.numel() > super::FOLD_LIMIT {
        return Ok(None);
    }
    let Some(v) = d.to_i64() else { return Ok(None) };
    let v: Vec<i64> = v.iter().map(|x| x.wrapping_neg()).collect();
    Ok(TensorData::from_i64_as(d.dtype, d.shape.clone(), &v).map(|t| vec![t]))
}

/// Gelu's `approximate`: "none" or "tanh".
fn gelu(ctx: &Ctx) -> Result<Vec<TensorType>> {
    match ctx.node.string("approximate")?.unwrap_or("none") {
        "none" | "tanh" => unary(ctx),
        other => Err(ctx.err(format!("attribute 'approximate' = '{other}' is not one of none, tanh"))),
    }
}

fn gelu_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    gelu(ctx)
}

// ---- kernel bindings --------------------------------------------------------

/// PRelu: the broadcasting binary kernel, X as `a` and the slope as `b`.
fn bind_prelu(ctx: &KernelCtx) -> Result<KernelCall> {
    super::elementwise::bind_binary(ctx, "dg_prelu", super::elementwise::F32_ONLY)
}

fn bind_not(ctx: &KernelCtx) -> Result<KernelCall> {
    let n = numel(&ctx.out_shape(0)?);
    one(call("dg_not_bool", "dg_unary_typed_args_t", vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n))]))
}

/// `func(x) -> y` over n f32 elements (`dg_unary_args_t`).
pub(super) fn bind_unary(ctx: &KernelCtx, func: &'static str) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let n = numel(&ctx.out_shape(0)?);
    one(call(func, "dg_unary_args_t", vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n))]))
}

/// Relu: `dg_relu_f32`, or `dg_relu_i8` on int8 (a quantized graph's Relu
/// between integer operators).
fn bind_relu(ctx: &KernelCtx) -> Result<KernelCall> {
    if ctx.in_dtype(0)? != DType::I8 {
        return bind_unary(ctx, "dg_relu_f32");
    }
    let n = numel(&ctx.out_shape(0)?);
    one(call("dg_relu_i8", "dg_unary_typed_args_t", vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n))]))
}

/// Gelu's (and GeluGrad's) `approximate = "tanh"`; the shape rule has
/// refused any value but "none" and "tanh".
fn tanh_form(ctx: &KernelCtx) -> Result<bool> {
    Ok(ctx.attr_str("approximate")?.as_deref() == Some("tanh"))
}

/// Gelu: the erf form, or the tanh approximation.
fn bind_gelu(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_unary(ctx, if tanh_form(ctx)? { "dg_gelu_tanh_f32" } else { "dg_gelu_f32" })
}

/// `func(dy, x) -> dx` (`dg_act_grad_args_t`).
pub(super) fn bind_act_grad(ctx: &KernelCtx, func: &'static str) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        func,
        "dg_act_grad_args_t",
        vec![("dy", ctx.inp(0)?), ("x", ctx.inp(1)?), ("dx", ctx.out(0)?), ("n", u(n))],
    ))
}

/// GeluGrad: of the erf form, or of the tanh approximation.
fn bind_gelu_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_act_grad(ctx, if tanh_form(ctx)? { "dg_gelu_tanh_grad_f32" } else { "dg_gelu_grad_f32" })
}

/// `func(x; alpha, beta) -> y` with the operator's attribute defaults
/// (`dg_unary_param_args_t`).
fn bind_unary_param(ctx: &KernelCtx, func: &'static str, defaults: AlphaBeta) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let (alpha, beta) = (defaults.alpha(ctx.node)?, defaults.beta(ctx.node)?);
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        func,
        "dg_unary_param_args_t",
        vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n)), ("alpha", f(alpha)), ("beta", f(beta))],
    ))
}

/// One Clip bound: (pointer, value, has): a compile-time constant input,
/// a runtime input (pointer), the opset-6 attribute, or none.
pub(super) fn clip_bound(ctx: &KernelCtx, slot: usize, attr: &str) -> Result<(Arg, f32, bool)> {
    if ctx.node.input(slot).is_some() {
        if let Some(v) = scalar_const(ctx, slot)? {
            return Ok((Arg::Null, v, true));
        }
        return Ok((ctx.inp(slot)?, 0.0, false));
    }
    Ok(match ctx.node.float(attr)? {
        Some(v) => (Arg::Null, v, true),
        None => (Arg::Null, 0.0, false),
    })
}

/// Clip's integer forms: input type, kernel, and the type's range (the
/// bounds a value of that type can take).
const CLIP_INT_FORMS: &[(DType, &str, i64, i64)] =
    &[(DType::I8, "dg_clip_i8", i8::MIN as i64, i8::MAX as i64), (DType::U8, "dg_clip_u8", 0, u8::MAX as i64)];

pub(super) fn bind_clip(ctx: &KernelCtx) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    if let Some(&(_, func, lo, hi)) = CLIP_INT_FORMS.iter().find(|f| f.0 == d) {
        return bind_clip_int(ctx, func, lo..=hi);
    }
    ctx.require_f32(&[0])?;
    let n = numel(&ctx.out_shape(0)?);
    let (min_ptr, min, has_min) = clip_bound(ctx, 1, "min")?;
    let (max_ptr, max, has_max) = clip_bound(ctx, 2, "max")?;
    one(call(
        "dg_clip_f32",
        "dg_clip_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("n", u(n)),
            ("min_ptr", min_ptr),
            ("max_ptr", max_ptr),
            ("min", f(min)),
            ("max", f(max)),
            ("has_min", u(usize::from(has_min))),
            ("has_max", u(usize::from(has_max))),
        ],
    ))
}

/// Clip on an integer type: the bounds are values of that type, constants
/// or run-time inputs of X's type.
fn bind_clip_int(ctx: &KernelCtx, func: &'static str, range: std::ops::RangeInclusive<i64>) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    let bound = |slot: usize, attr: &str| -> Result<(Arg, Arg, Arg)> {
        let (ptr, v, has) = clip_bound(ctx, slot, attr)?;
        if !matches!(ptr, Arg::Null) && ctx.in_dtype(slot)? != d {
            return Err(ctx.err(format!("the {attr} bound is {}; X is {d}", ctx.in_dtype(slot)?)));
        }
        if has && !(v.fract() == 0.0 && range.contains(&(v as i64))) {
            return Err(ctx.err(format!("the {attr} bound {v} is not a value of {d}")));
        }
        Ok((ptr, Arg::I(if has { v as i64 } else { 0 }), u(usize::from(has))))
    };
    let (min_ptr, min, has_min) = bound(1, "min")?;
    let (max_ptr, max, has_max) = bound(2, "max")?;
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        func,
        "dg_clip_typed_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("n", u(n)),
            ("min_ptr", min_ptr),
            ("max_ptr", max_ptr),
            ("min", min),
            ("max", max),
            ("has_min", has_min),
            ("has_max", has_max),
        ],
    ))
}

/// `func(dy, y) -> dx` (`dg_act_grad_y_args_t`).
pub(super) fn bind_act_grad_y(ctx: &KernelCtx, func: &'static str) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        func,
        "dg_act_grad_y_args_t",
        vec![("dy", ctx.inp(0)?), ("y", ctx.inp(1)?), ("dx", ctx.out(0)?), ("n", u(n))],
    ))
}

pub(super) fn bind_swish_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    // QuickGeluGrad(dY, X){alpha}
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        "dg_swish_grad_f32",
        "dg_swish_grad_args_t",
        vec![
            ("dy", ctx.inp(0)?),
            ("x", ctx.inp(1)?),
            ("dx", ctx.out(0)?),
            ("n", u(n)),
            ("alpha", f(QUICK_GELU.alpha(ctx.node)?)),
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{infer, infer_one, Fixture};
    use crate::ir::{Attr, DType};

    #[test]
    fn clip_bounds_from_attributes_or_inputs() {
        let mut f = Fixture::new("Clip");
        f.input("x", DType::F32, &[1, 4]);
        f.node.attrs.insert("min".into(), Attr::Float(-0.5));
        f.node.attrs.insert("max".into(), Attr::Float(0.8));
        assert_eq!(infer_one(&f).unwrap(), vec![1, 4]);
        f.skip();
        f.konst_f32("max_in", &[], &[0.8]);
        assert_eq!(infer_one(&f).unwrap(), vec![1, 4]);
        f.node.attrs.insert("max".into(), Attr::Float(0.9));
        let e = infer(&f).unwrap_err().to_string();
        assert!(e.contains("max") && e.contains("disagree"), "{e}");
        f.node.attrs.insert("max".into(), Attr::Int(1));
        assert!(infer(&f).unwrap_err().to_string().contains("FLOAT"));
    }

    #[test]
    fn float_functions_refuse_integers() {
        let mut f = Fixture::new("Sqrt");
        f.input("x", DType::I64, &[3]);
        assert!(infer(&f).is_err());
        let mut f = Fixture::new("Neg");
        f.input("x", DType::I64, &[3]);
        assert_eq!(infer_one(&f).unwrap(), vec![3]);
    }
}
