//! The gradient rules of the unary operators: each writes the nodes
//! onnxruntime-training emits for the operator's backward pass (a
//! com.microsoft *Grad kernel where it has one, else a small subgraph).

use super::super::grad::{self, GradCtx};
use super::super::Ctx;
use super::{scalar_attr_or_input, AlphaBeta, ELU, HARD_SIGMOID, LEAKY_RELU};
use crate::error::Result;
use crate::ir::{Attr, TensorId};

pub(super) fn relu_grad(ctx: &mut GradCtx) -> Result<()> {
    grad::act_grad(ctx, "ReluGrad", grad::MS)
}

pub(super) fn gelu_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    grad::act_grad(ctx, "GeluGrad", grad::MS)
}

pub(super) fn sigmoid_grad(ctx: &mut GradCtx) -> Result<()> {
    grad::act_grad_y(ctx, "SigmoidGrad")
}

pub(super) fn tanh_grad(ctx: &mut GradCtx) -> Result<()> {
    grad::act_grad_y(ctx, "TanhGrad")
}

/// Swish{alpha} and QuickGelu{alpha}: QuickGeluGrad(dY, X){alpha}.
pub(super) fn swish_grad(ctx: &mut GradCtx, defaults: AlphaBeta) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let alpha = defaults.alpha(&ctx.node)?;
    let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
    let out = ctx.dx_name(0);
    let dx = ctx.emit1("QuickGeluGrad", grad::MS, &[dy, x], &out, vec![("alpha".into(), Attr::Float(alpha))])?;
    ctx.set(0, dx);
    Ok(())
}

/// dX = -dY.
pub(super) fn neg_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let dy = ctx.dy(0)?;
        let out = ctx.dx_name(0);
        let dx = ctx.emit1("Neg", "", &[dy], &out, vec![])?;
        ctx.set(0, dx);
    }
    Ok(())
}

/// dX = dY * Y.
pub(super) fn exp_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let (dy, y) = (ctx.dy(0)?, ctx.y(0)?);
        ctx.set_product(0, dy, y)?;
    }
    Ok(())
}

/// dX = dY / X.
pub(super) fn log_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
        let out = ctx.dx_name(0);
        let dx = ctx.emit1("Div", "", &[dy, x], &out, vec![])?;
        ctx.set(0, dx);
    }
    Ok(())
}

/// dX = dY * 0.5 / Y.
pub(super) fn sqrt_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let (dy, y) = (ctx.dy(0)?, ctx.y(0)?);
        let half = ctx.scalar("half", 0.5);
        let h = ctx.op("Mul", &[dy, half], "half_dy")?;
        let out = ctx.dx_name(0);
        let dx = ctx.emit1("Div", "", &[h, y], &out, vec![])?;
        ctx.set(0, dx);
    }
    Ok(())
}

/// dX = dY * Sign(X).
pub(super) fn abs_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
        let sign = ctx.op("Sign", &[x], "sign")?;
        ctx.set_product(0, dy, sign)?;
    }
    Ok(())
}

/// dX = dY * 2/sqrt(pi) * exp(-X^2).
pub(super) fn erf_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
        let sq = ctx.op("Mul", &[x, x], "x_sq")?;
        let neg = ctx.op("Neg", &[sq], "neg_x_sq")?;
        let e = ctx.op("Exp", &[neg], "exp")?;
        let k = ctx.scalar("two_over_sqrt_pi", std::f32::consts::FRAC_2_SQRT_PI);
        let d = ctx.op("Mul", &[e, k], "derivative")?;
        ctx.set_product(0, dy, d)?;
    }
    Ok(())
}

/// HardSigmoid{alpha, beta}: dX = dY * alpha where 0 < Y < 1, else 0.
pub(super) fn hard_sigmoid_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let alpha = HARD_SIGMOID.alpha(&ctx.node)?;
        let (dy, y) = (ctx.dy(0)?, ctx.y(0)?);
        let inside = inside_unit(ctx, y)?;
        let a = ctx.scalar("alpha", alpha);
        let d = ctx.op("Mul", &[inside, a], "derivative")?;
        ctx.set_product(0, dy, d)?;
    }
    Ok(())
}

/// LeakyRelu{alpha}: dX = dY * (X > 0 ? 1 : alpha).
pub(super) fn leaky_relu_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let alpha = LEAKY_RELU.alpha(&ctx.node)?;
        let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
        let (zero, one) = (ctx.scalar("zero", 0.0), ctx.scalar("one", 1.0));
        let a = ctx.scalar("alpha", alpha);
        let positive = ctx.op("Greater", &[x, zero], "positive")?;
        let d = ctx.op("Where", &[positive, one, a], "derivative")?;
        ctx.set_product(0, dy, d)?;
    }
    Ok(())
}

/// Elu{alpha}: dX = dY * (X > 0 ? 1 : Y + alpha), as Y = alpha (e^X - 1)
/// where X <= 0.
pub(super) fn elu_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let alpha = ELU.alpha(&ctx.node)?;
        let (dy, x, y) = (ctx.dy(0)?, ctx.x(0)?, ctx.y(0)?);
        let (zero, one) = (ctx.scalar("zero", 0.0), ctx.scalar("one", 1.0));
        let a = ctx.scalar("alpha", alpha);
        let positive = ctx.op("Greater", &[x, zero], "positive")?;
        let below = ctx.op("Add", &[y, a], "y_plus_alpha")?;
        let d = ctx.op("Where", &[positive, one, below], "derivative")?;
        ctx.set_product(0, dy, d)?;
    }
    Ok(())
}

/// PRelu(X, slope): dX = dY * (X > 0 ? 1 : slope); dSlope = dY * (X > 0 ?
/// 0 : X), summed over the dimensions the slope was broadcast along.
pub(super) fn prelu_grad(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) && !ctx.needs(1) {
        return Ok(());
    }
    let (dy, x, slope) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let (zero, one) = (ctx.scalar("zero", 0.0), ctx.scalar("one", 1.0));
    let positive = ctx.op("Greater", &[x, zero], "positive")?;
    if ctx.needs(0) {
        let d = ctx.op("Where", &[positive, one, slope], "derivative")?;
        ctx.set_product(0, dy, d)?;
    }
    if ctx.needs(1) {
        let d = ctx.op("Where", &[positive, zero, x], "slope_derivative")?;
        ctx.set_product(1, dy, d)?;
    }
    Ok(())
}

/// Softplus: dX = dY * Sigmoid(X).
pub(super) fn softplus_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
        let s = ctx.op("Sigmoid", &[x], "sigmoid")?;
        ctx.set_product(0, dy, s)?;
    }
    Ok(())
}

/// HardSwish = X * HardSigmoid(X){1/6, 0.5}: dX = dY * (h + X/6) where
/// 0 < h < 1, dY * h elsewhere (h is then 0 or 1).
pub(super) fn hard_swish_grad(ctx: &mut GradCtx) -> Result<()> {
    if ctx.needs(0) {
        let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
        let attrs = vec![("alpha".to_string(), Attr::Float(1.0 / 6.0)), ("beta".to_string(), Attr::Float(0.5))];
        let hname = ctx.name("hard_sigmoid");
        let h = ctx.emit1("HardSigmoid", "", &[x], &hname, attrs)?;
        let inside = inside_unit(ctx, h)?;
        let sixth = ctx.scalar("sixth", 1.0 / 6.0);
        let xs = ctx.op("Mul", &[x, sixth], "x_sixth")?;
        let slope = ctx.op("Mul", &[xs, inside], "slope")?;
        let d = ctx.op("Add", &[h, slope], "derivative")?;
        ctx.set_product(0, dy, d)?;
    }
    Ok(())
}

/// 1.0 where 0 < t < 1, else 0.0.
pub(super) fn inside_unit(ctx: &mut GradCtx, t: TensorId) -> Result<TensorId> {
    let (zero, one) = (ctx.scalar("zero", 0.0), ctx.scalar("one", 1.0));
    let above = ctx.op("Greater", &[t, zero], "above")?;
    let below = ctx.op("Less", &[t, one], "below")?;
    let both = ctx.op("And", &[above, below], "inside")?;
    ctx.as_float(both, "inside_f")
}

/// Clip: dX = dY where min <= X <= max (onnxruntime's mask), else 0.
pub(super) fn clip_grad(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (lo, hi) = {
        let c = Ctx { graph: ctx.b.graph, node: &ctx.node };
        (scalar_attr_or_input(&c, "min", 1, true)?, scalar_attr_or_input(&c, "max", 2, true)?)
    };
    let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
    let mut mask = None;
    for (bound, op, what) in [(lo, "GreaterOrEqual", "above_min"), (hi, "LessOrEqual", "below_max")] {
        let Some(v) = bound else { continue };
        let k = ctx.scalar(&format!("{what}_bound"), v);
        let m = ctx.op(op, &[x, k], what)?;
        mask = Some(match mask {
            None => m,
            Some(prev) => ctx.op("And", &[prev, m], "inside")?,
        });
    }
    let Some(mask) = mask else {
        ctx.set(0, dy);
        return Ok(());
    };
    let f = ctx.as_float(mask, "inside_f")?;
    ctx.set_product(0, dy, f)
}
