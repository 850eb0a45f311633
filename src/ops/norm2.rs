//! Group, instance and RMS normalization (fp32, forward).

use super::{kernel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorType};

pub const OPS: &[OpDef] = &[
    // (X [N, C, …], scale, bias){num_groups, epsilon}: scale and bias are
    // per channel (opset 21) or per group (opset 18's form).
    OpDef { name: "GroupNormalization", infer: group_norm, kernel: Some(kernel::groupnorm), ..OpDef::BASE },
    // (X [N, C, …], scale [C], B [C]){epsilon}.
    OpDef { name: "InstanceNormalization", infer: instance_norm, kernel: Some(kernel::groupnorm), ..OpDef::BASE },
    // (X, scale){axis = -1, epsilon} -> Y (opset 23).
    OpDef { name: "RMSNormalization", infer: rms_norm, kernel: Some(kernel::rmsnorm), ..OpDef::BASE },
    // The default-domain single-op form Deeploy-style exporters write (no
    // ONNX schema): (X, scale [, bias]){axis, epsilon} -> Y [, inv_std].
    OpDef { name: "RMSNorm", infer: rms_norm, kernel: Some(kernel::rmsnorm), ..OpDef::BASE },
];

fn epsilon(ctx: &Ctx) -> Result<()> {
    if let Some(e) = ctx.node.float("epsilon")? {
        if !(e >= 0.0 && e.is_finite()) {
            return Err(ctx.err(format!("epsilon {e} must be a finite non-negative number")));
        }
    }
    Ok(())
}

/// X's static shape, which must have a channel dim.
fn channels(ctx: &Ctx) -> Result<Option<Vec<usize>>> {
    let t = ctx.ty(0)?;
    if !t.dtype.is_float() {
        return Err(ctx.err(format!("input must be floating point, got {}", t.dtype)));
    }
    match ctx.shape(0)? {
        Some(x) if x.len() < 3 => Err(ctx.err(format!("input shape {x:?} needs N, C and at least one spatial dim"))),
        s => Ok(s),
    }
}

/// A 1-D parameter input of `n` elements (or of one of `alt`).
fn param(ctx: &Ctx, slot: usize, what: &str, want: &[usize]) -> Result<usize> {
    match ctx.shape(slot)? {
        Some(s) if s.len() == 1 && want.contains(&s[0]) => Ok(s[0]),
        Some(s) => Err(ctx.err(format!("{what} (input {slot}) has shape {s:?}, expected [{}]", want[0]))),
        None => Ok(want[0]),
    }
}

fn group_norm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    epsilon(ctx)?;
    let groups = ctx.node.int("num_groups")?.ok_or_else(|| ctx.err("attribute num_groups is required"))?;
    let y = ctx.same_as(0)?;
    let Some(x) = channels(ctx)? else { return Ok(vec![y]) };
    let c = x[1];
    if groups < 1 || c % groups as usize != 0 {
        return Err(ctx.err(format!("{c} channels do not split into num_groups = {groups} groups")));
    }
    let g = groups as usize;
    let s = param(ctx, 1, "scale", &[c, g])?;
    let b = param(ctx, 2, "bias", &[c, g])?;
    if s != b {
        return Err(ctx.err(format!("scale has {s} elements but bias has {b}")));
    }
    Ok(vec![y])
}

fn instance_norm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    epsilon(ctx)?;
    let y = ctx.same_as(0)?;
    if let Some(x) = channels(ctx)? {
        param(ctx, 1, "scale", &[x[1]])?;
        param(ctx, 2, "B", &[x[1]])?;
    }
    Ok(vec![y])
}

fn rms_norm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    epsilon(ctx)?;
    let y = ctx.same_as(0)?;
    if !y.dtype.is_float() {
        return Err(ctx.err(format!("input must be floating point, got {}", y.dtype)));
    }
    let mut out = vec![y.clone()];
    let Some(x) = y.shape() else {
        out.extend(std::iter::repeat_n(TensorType::unknown(DType::F32), ctx.node.outputs.len().saturating_sub(1)));
        return Ok(out);
    };
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(-1), x.len())?;
    let tail = &x[axis..];
    for slot in [1, 2] {
        if !ctx.has(slot) {
            continue;
        }
        if let Some(s) = ctx.shape(slot)? {
            // Broadcasts against the normalised dims.
            let ok = s.len() <= tail.len() && s.iter().rev().zip(tail.iter().rev()).all(|(&a, &b)| a == b || a == 1);
            if !ok {
                return Err(ctx.err(format!(
                    "input {slot} has shape {s:?}, which does not broadcast to the normalised dims {tail:?}"
                )));
            }
        }
    }
    if ctx.node.outputs.len() > 1 {
        let stats: Vec<usize> = x.iter().enumerate().map(|(i, &d)| if i < axis { d } else { 1 }).collect();
        out.extend(std::iter::repeat_n(TensorType::new(DType::F32, &stats), ctx.node.outputs.len() - 1));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{attr_int, infer, infer_one, Fixture};
    use crate::ir::DType;

    fn gn(c: usize, groups: i64, scale: usize) -> Fixture {
        let mut f = Fixture::new("GroupNormalization");
        f.input("x", DType::F32, &[1, c, 4, 4]);
        f.input("s", DType::F32, &[scale]);
        f.input("b", DType::F32, &[scale]);
        attr_int(&mut f, "num_groups", groups);
        f
    }

    #[test]
    fn group_norm_checks_channels_and_groups() {
        assert_eq!(infer_one(&gn(8, 2, 8)).unwrap(), vec![1, 8, 4, 4]);
        assert_eq!(infer_one(&gn(8, 2, 2)).unwrap(), vec![1, 8, 4, 4]);
        assert!(infer(&gn(8, 3, 8)).unwrap_err().to_string().contains("num_groups = 3"));
        assert!(infer(&gn(8, 0, 8)).is_err());
        assert!(infer(&gn(8, 2, 4)).unwrap_err().to_string().contains("expected [8]"));
        let mut f = gn(8, 2, 8);
        f.node.attrs.shift_remove("num_groups");
        assert!(infer(&f).unwrap_err().to_string().contains("num_groups"));
    }

    #[test]
    fn rms_norm_scale_broadcasts_to_the_normalised_dims() {
        let mut f = Fixture::new("RMSNormalization");
        f.input("x", DType::F32, &[1, 8, 16]);
        f.input("s", DType::F32, &[16]);
        assert_eq!(infer_one(&f).unwrap(), vec![1, 8, 16]);
        let mut f = Fixture::new("RMSNorm");
        f.input("x", DType::F32, &[1, 8, 16]);
        f.input("s", DType::F32, &[8]);
        assert!(infer(&f).is_err());
    }
}
