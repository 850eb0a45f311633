//! Second-wave elementwise unary operators (fp32): activations, rounding,
//! transcendental functions, Clip, and the gradients onnxruntime-training
//! emits for them (SigmoidGrad, TanhGrad, QuickGeluGrad; Sign as part of
//! Abs's gradient).

use super::{kernel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::{TensorData, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef { name: "Ceil", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Floor", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Exp", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Log", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Sqrt", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    // Folds on integers: Pad's gradient negates the constant pads.
    OpDef { name: "Neg", infer: unary, fold: Some(fold_neg), kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Abs", infer: unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Sign", infer: unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Tanh", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Sigmoid", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    OpDef { name: "Erf", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    // HardSigmoid{alpha=0.2, beta=0.5}, HardSwish = x * HardSigmoid(x){1/6, 0.5}.
    OpDef { name: "HardSigmoid", infer: alpha_beta, kernel: Some(kernel::unary_param), ..OpDef::BASE },
    OpDef { name: "HardSwish", infer: float_unary, kernel: Some(kernel::unary), ..OpDef::BASE },
    // Swish{alpha=1} = x * Sigmoid(alpha * x) (opset 24); com.microsoft
    // QuickGelu{alpha=1.702} is the same function.
    OpDef { name: "Swish", infer: alpha_beta, kernel: Some(kernel::unary_param), ..OpDef::BASE },
    OpDef { name: "QuickGelu", infer: alpha_beta, kernel: Some(kernel::unary_param), ..OpDef::BASE },
    // Clip(X [, min] [, max]), or opset-6 attributes min/max: the bounds are
    // read when generating code.
    OpDef { name: "Clip", infer: clip, compile_time: &[1, 2], kernel: Some(kernel::clip), ..OpDef::BASE },
    // com.microsoft (dY, Y) -> dX, and QuickGeluGrad(dY, X){alpha}.
    OpDef { name: "SigmoidGrad", infer: grad, gradient: true, kernel: Some(kernel::act_grad_y), ..OpDef::BASE },
    OpDef { name: "TanhGrad", infer: grad, gradient: true, kernel: Some(kernel::act_grad_y), ..OpDef::BASE },
    OpDef { name: "QuickGeluGrad", infer: grad, gradient: true, kernel: Some(kernel::swish_grad), ..OpDef::BASE },
];

fn unary(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![ctx.same_as(0)?])
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
                None if constant || from_attr.is_some() => {
                    return Err(ctx
                        .err(format!("input {slot} ('{name}', {attr}) must be a constant known when generating code")))
                }
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
