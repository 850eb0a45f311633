//! Elementwise operators (numpy broadcasting) and their gradients.

use super::{broadcast_inputs, kernel, Ctx, OpDef, FOLD_LIMIT};
use crate::error::Result;
use crate::ir::{DType, TensorData, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef { name: "Add", infer: binary, fold: Some(fold_arith), kernel: Some(kernel::binary), ..OpDef::BASE },
    OpDef { name: "Sub", infer: binary, fold: Some(fold_arith), kernel: Some(kernel::binary), ..OpDef::BASE },
    OpDef { name: "Mul", infer: binary, fold: Some(fold_arith), kernel: Some(kernel::binary), ..OpDef::BASE },
    OpDef { name: "Div", infer: binary, fold: Some(fold_arith), kernel: Some(kernel::binary), ..OpDef::BASE },
    OpDef { name: "Pow", infer: pow, kernel: Some(kernel::binary), ..OpDef::BASE },
    OpDef { name: "Sum", infer: binary, kernel: Some(kernel::sum), ..OpDef::BASE },
    OpDef { name: "Relu", infer: unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Gelu", infer: unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef {
        name: "Identity",
        infer: unary,
        fold: Some(fold_identity),
        view: true,
        kernel: Some(kernel::copy),
        ..OpDef::BASE
    },
    OpDef { name: "Cast", infer: cast, fold: Some(fold_cast), ..OpDef::BASE },
    // com.microsoft Scale(X, scale) = X * scale (or / with scale_down).
    OpDef { name: "Scale", infer: unary, kernel: Some(kernel::scale), ..OpDef::BASE },
    // ReluGrad(dY, X), GeluGrad(dY, X): dX has dY's shape.
    OpDef { name: "ReluGrad", infer: unary, gradient: true, kernel: Some(kernel::act_grad), ..OpDef::BASE },
    OpDef { name: "GeluGrad", infer: unary, gradient: true, kernel: Some(kernel::act_grad), ..OpDef::BASE },
];

fn unary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![ctx.same_as(0)?])
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
    let to = ctx.node.attr_int("to").ok_or_else(|| ctx.err("attribute 'to' is required"))?;
    let mut t = ctx.same_as(0)?;
    t.dtype = DType::from_onnx(to as i32);
    Ok(vec![t])
}

fn fold_identity(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    Ok(ctx.konst(0).map(|d| vec![d.clone()]))
}

fn fold_cast(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let (Some(d), Some(to)) = (ctx.konst(0), ctx.node.attr_int("to")) else {
        return Ok(None);
    };
    let Some(v) = d.to_i64() else { return Ok(None) };
    Ok(TensorData::from_i64_as(DType::from_onnx(to as i32), d.shape.clone(), &v).map(|t| vec![t]))
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
