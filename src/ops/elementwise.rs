//! Elementwise operators (numpy broadcasting) and their gradients.

use super::grad::{self, GradCtx};
use super::{broadcast_inputs, kernel, Ctx, OpDef, FOLD_LIMIT};
use crate::error::Result;
use crate::ir::{DType, TensorData, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Add",
        infer: binary,
        required: &[0, 1],
        fold: Some(fold_arith),
        kernel: Some(kernel::binary),
        grad: Some(add_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "Sub",
        infer: binary,
        required: &[0, 1],
        fold: Some(fold_arith),
        kernel: Some(kernel::binary),
        grad: Some(sub_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "Mul",
        infer: binary,
        required: &[0, 1],
        fold: Some(fold_arith),
        kernel: Some(kernel::binary),
        grad: Some(mul_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "Div",
        infer: binary,
        required: &[0, 1],
        fold: Some(fold_arith),
        kernel: Some(kernel::binary),
        ..OpDef::BASE
    },
    OpDef { name: "Pow", infer: pow, required: &[0, 1], kernel: Some(kernel::binary), ..OpDef::BASE },
    OpDef { name: "Sum", infer: binary, kernel: Some(kernel::sum), ..OpDef::BASE },
    OpDef { name: "Relu", infer: unary, kernel: Some(kernel::unary), grad: Some(relu_grad), ..OpDef::BASE },
    OpDef { name: "Gelu", infer: gelu, kernel: Some(kernel::unary), grad: Some(gelu_grad_rule), ..OpDef::BASE },
    OpDef {
        name: "Identity",
        infer: unary,
        fold: Some(fold_identity),
        view: true,
        kernel: Some(kernel::copy),
        grad: Some(grad::reshape_back),
        ..OpDef::BASE
    },
    OpDef { name: "Cast", infer: cast, fold: Some(fold_cast), kernel: Some(kernel::cast), ..OpDef::BASE },
    // com.microsoft Scale(X, scale) = X * scale (or / with scale_down).
    OpDef { name: "Scale", infer: scale, required: &[0, 1], kernel: Some(kernel::scale), ..OpDef::BASE },
    // ReluGrad(dY, X), GeluGrad(dY, X): dX has dY's shape.
    OpDef {
        name: "ReluGrad",
        infer: unary,
        gradient: true,
        required: &[0, 1],
        kernel: Some(kernel::act_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "GeluGrad",
        infer: gelu_grad,
        gradient: true,
        required: &[0, 1],
        kernel: Some(kernel::act_grad),
        ..OpDef::BASE
    },
];

fn unary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![ctx.same_as(0)?])
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

/// com.microsoft Scale: `scale_down` is 0/1.
fn scale(ctx: &Ctx) -> Result<Vec<TensorType>> {
    ctx.node.flag("scale_down", false)?;
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

fn fold_identity(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    Ok(ctx.konst(0).map(|d| vec![d.clone()]))
}

fn fold_cast(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let to = cast_to(ctx)?;
    let Some(d) = ctx.konst(0) else {
        return Ok(None);
    };
    let Some(v) = d.to_i64() else { return Ok(None) };
    Ok(TensorData::from_i64_as(to, d.shape.clone(), &v).map(|t| vec![t]))
}

/// Integer arithmetic on shape values (e.g. `Shape → Div → Concat`).
fn fold_arith(ctx: &Ctx, out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let (Some(a), Some(b)) = (ctx.konst(0), ctx.konst(1)) else {
        return Ok(None);
    };
    if !a.dtype.is_int() || a.dtype != b.dtype {
        return Ok(None);
    }
    let out = match out.first().and_then(|t| t.shape()) {
        Some(s) => s,
        None => return Ok(None),
    };
    let n: usize = out.iter().product();
    if n > FOLD_LIMIT {
        return Ok(None);
    }
    let (Some(va), Some(vb)) = (a.to_i64(), b.to_i64()) else {
        return Ok(None);
    };
    let at = |v: &[i64], s: &[usize], flat: usize| -> i64 {
        // Map an output flat index to a broadcast input element.
        let mut idx = 0usize;
        let mut stride = 1usize;
        let mut rem = flat;
        let mut pos = vec![0usize; out.len()];
        for k in (0..out.len()).rev() {
            pos[k] = rem % out[k];
            rem /= out[k];
        }
        for k in (0..s.len()).rev() {
            let o = out.len() - s.len() + k;
            let p = if s[k] == 1 { 0 } else { pos[o] };
            idx += p * stride;
            stride *= s[k];
        }
        v[idx]
    };
    let mut res = Vec::with_capacity(n);
    for f in 0..n {
        let x = at(&va, &a.shape, f);
        let y = at(&vb, &b.shape, f);
        res.push(match ctx.node.op.as_str() {
            "Add" => x.wrapping_add(y),
            "Sub" => x.wrapping_sub(y),
            "Mul" => x.wrapping_mul(y),
            "Div" if y != 0 => x.wrapping_div(y),
            "Div" => return Err(ctx.err("integer division by zero in a constant shape expression")),
            _ => return Ok(None),
        });
    }
    Ok(TensorData::from_i64_as(a.dtype, out, &res).map(|t| vec![t]))
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

fn relu_grad(ctx: &mut GradCtx) -> Result<()> {
    grad::act_grad(ctx, "ReluGrad", grad::MS)
}

fn gelu_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    grad::act_grad(ctx, "GeluGrad", grad::MS)
}
