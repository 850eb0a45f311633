//! Group, instance and RMS normalization (fp32, forward).

use super::kernel::{
    broadcast_strides, call, f, float_attr, numel, one, strides, to_u32, u, KernelCall, KernelCtx, Local,
};
use super::norm::bn_dims;
use super::tile::{self, Space, TileMap, TileRule};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorType};

pub const OPS: &[OpDef] = &[
    // (X [N, C, …], scale, bias){num_groups, epsilon}: scale and bias are
    // per channel (opset 21) or per group (opset 18's form).
    OpDef {
        name: "GroupNormalization",
        attrs: &["epsilon", "num_groups", "stash_type"],
        infer: group_norm,
        kernel: Some(bind_groupnorm),
        ..OpDef::BASE
    },
    // (X [N, C, …], scale [C], B [C]){epsilon}.
    OpDef {
        name: "InstanceNormalization",
        attrs: &["epsilon"],
        infer: instance_norm,
        kernel: Some(bind_groupnorm),
        ..OpDef::BASE
    },
    // (X, scale){axis = -1, epsilon} -> Y (opset 23).
    OpDef {
        name: "RMSNormalization",
        attrs: &["axis", "epsilon", "stash_type"],
        infer: rms_norm,
        kernel: Some(bind_rmsnorm),
        tile: Some(RMSNORM_TILES),
        ..OpDef::BASE
    },
    // The default-domain single-op form Deeploy-style exporters write (no
    // ONNX schema): (X, scale [, bias]){axis, epsilon} -> Y [, inv_std].
    OpDef {
        name: "RMSNorm",
        attrs: &["axis", "epsilon", "stash_type"],
        infer: rms_norm,
        kernel: Some(bind_rmsnorm),
        tile: Some(RMSNORM_TILES),
        ..OpDef::BASE
    },
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

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bind_groupnorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let [b, c, s] = bn_dims(ctx, &x)?;
    let instance = ctx.node.op == "InstanceNormalization";
    let groups = if instance {
        c
    } else {
        let g = ctx.node.int("num_groups")?.ok_or_else(|| ctx.err("attribute 'num_groups' is required"))?;
        to_u32(ctx, "num_groups", g)?
    };
    if groups == 0 || c % groups != 0 {
        return Err(ctx.err(format!("{c} channels do not split into {groups} groups")));
    }
    // Opset 21 scales per channel; opset 18's form (deprecated) per group.
    let ns = numel(&ctx.in_shape(1)?);
    let per_group = if instance || (ns == c && (ctx.opset() >= 21 || groups == c)) {
        false
    } else if ns == groups {
        true
    } else {
        return Err(ctx.err(format!("scale has {ns} values; {c} channels in {groups} groups need {c} or {groups}")));
    };
    let func = if instance { "dg_instancenorm_f32" } else { "dg_groupnorm_f32" };
    one(call(
        func,
        "dg_groupnorm_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", ctx.inp(1)?),
            ("bias", ctx.inp(2)?),
            ("y", ctx.out(0)?),
            ("batch", u(b)),
            ("channels", u(c)),
            ("spatial", u(s)),
            ("groups", u(groups)),
            ("scale_per_group", u(usize::from(per_group))),
            ("epsilon", f(float_attr(ctx, "epsilon", 1e-5)?)),
        ],
    ))
}

/// A per-column operand of a row normalization: its own pointer when it
/// has `cols` values; a constant that broadcasts to the normalised shape
/// is expanded at generation time into a `static const` array.
pub(super) fn full_cols(
    ctx: &KernelCtx,
    slot: usize,
    norm_shape: &[usize],
    name: &str,
) -> Result<(String, Option<Local>)> {
    let s = ctx.in_shape(slot)?;
    if numel(&s) == numel(norm_shape) {
        return Ok((ctx.inp(slot)?, None));
    }
    let st = broadcast_strides(ctx, &s, norm_shape)?;
    let Some(v) = ctx.ops().konst(slot).and_then(|k| k.to_f32()) else {
        return Err(ctx.err(format!(
            "input {slot} {s:?} broadcasts over the normalised shape {norm_shape:?}; the kernel needs one value per \
             element, which only a constant can be expanded to"
        )));
    };
    let out_st = strides(norm_shape);
    let values = (0..numel(norm_shape))
        .map(|j| {
            let src: usize = (0..norm_shape.len()).map(|d| (j / out_st[d]) % norm_shape[d] * st[d]).sum();
            f(v[src])
        })
        .collect();
    Ok((name.to_string(), Some(Local { ctype: "static const float".into(), name: name.into(), values })))
}

pub(super) fn bind_rmsnorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(-1), x.len())?;
    let (rows, cols) = (numel(&x[..axis]), numel(&x[axis..]));
    let mut locals = vec![];
    let (scale, l) = full_cols(ctx, 1, &x[axis..], "scale_full")?;
    locals.extend(l);
    let bias = if ctx.node.input(2).is_some() {
        let (b, l) = full_cols(ctx, 2, &x[axis..], "bias_full")?;
        locals.extend(l);
        b
    } else {
        "NULL".into()
    };
    let mut inv = call(
        "dg_rmsnorm_f32",
        "dg_layernorm_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", scale),
            ("bias", bias),
            ("y", ctx.out(0)?),
            ("mean", "NULL".into()),
            ("inv_std", ctx.opt_out(1)),
            ("rows", u(rows)),
            ("cols", u(cols)),
            ("epsilon", f(float_attr(ctx, "epsilon", 1e-5)?)),
        ],
    );
    inv.locals = locals;
    one(inv)
}

// ---- tile rules ---------------------------------------------------------------

/// RMSNorm tiles over rows; the normalised axes are whole in every tile.
pub(super) const RMSNORM_TILES: TileRule = TileRule { space: rmsnorm_tile_space, map: rmsnorm_tile_map };

fn rms_axis(ctx: &KernelCtx) -> Result<usize> {
    let r = ctx.graph_in_shape(0)?.len();
    ctx.axis(ctx.node.int("axis")?.unwrap_or(-1), r)
}

fn rmsnorm_tile_space(ctx: &KernelCtx) -> Result<std::result::Result<Space, String>> {
    tile::rows_space(ctx, 0, rms_axis(ctx)?)
}

fn rmsnorm_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    tile::rows_map(ctx, 0, rms_axis(ctx)?, start, len)
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
