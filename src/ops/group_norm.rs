//! Group, instance and RMS normalization (fp32, forward).

use super::grad::{self, GradCtx};
use super::kernel::{
    broadcast_strides, call, f, float_attr, numel, one, strides, to_u32, u, Arg, Kernel, KernelCall, KernelCtx, Local,
};
use super::norm::{bn_dims, AXIS, EPSILON};
use super::tile::{self, TileMap, TileRule, Tileable};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{Attr, DType, TensorData, TensorId, TensorType};

pub const OPS: &[OpDef] = &[
    // (X [N, C, …], scale, bias){num_groups, epsilon}: scale and bias are
    // per channel (opset 21) or per group (opset 18's form).
    OpDef {
        name: "GroupNormalization",
        attrs: &["epsilon", "num_groups", "stash_type"],
        infer: group_norm,
        required: &[0, 1, 2],
        kernel: Some(Kernel::Bind(|c| bind_groupnorm(c, false))),
        grad: Some(group_norm_grad),
        ..OpDef::BASE
    },
    // (X [N, C, …], scale [C], B [C]){epsilon}.
    OpDef {
        name: "InstanceNormalization",
        attrs: &["epsilon"],
        infer: instance_norm,
        required: &[0, 1, 2],
        kernel: Some(Kernel::Bind(|c| bind_groupnorm(c, true))),
        grad: Some(group_norm_grad),
        ..OpDef::BASE
    },
    // (X, scale){axis = -1, epsilon} -> Y (opset 23).
    OpDef {
        name: "RMSNormalization",
        attrs: &["axis", "epsilon", "stash_type"],
        infer: rms_norm,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_rmsnorm)),
        tile: Some(RMSNORM_TILES),
        grad: Some(rms_norm_grad),
        ..OpDef::BASE
    },
    // The default-domain single-op form Deeploy-style exporters write (no
    // ONNX schema): (X, scale [, bias]){axis, epsilon} -> Y [, inv_std].
    OpDef {
        name: "RMSNorm",
        attrs: &["axis", "epsilon", "stash_type"],
        // Deeploy's test folders write `eps`.
        renamed: &[("eps", "epsilon")],
        infer: rms_norm,
        kernel: Some(Kernel::Bind(bind_rmsnorm)),
        tile: Some(RMSNORM_TILES),
        grad: Some(rms_norm_grad),
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
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(AXIS), x.len())?;
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

/// GroupNormalization, or (`instance`) InstanceNormalization: a group per
/// channel.
fn bind_groupnorm(ctx: &KernelCtx, instance: bool) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let [b, c, s] = bn_dims(ctx, &x)?;
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
            ("epsilon", f(float_attr(ctx, "epsilon", EPSILON)?)),
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
    name: &'static str,
) -> Result<(Arg, Option<Local>)> {
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
    Ok((Arg::Local(name), Some(Local { ctype: "static const float", name, values })))
}

pub(super) fn bind_rmsnorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(AXIS), x.len())?;
    let (rows, cols) = (numel(&x[..axis]), numel(&x[axis..]));
    let mut locals = vec![];
    let (scale, l) = full_cols(ctx, 1, &x[axis..], "scale_full")?;
    locals.extend(l);
    let bias = if ctx.node.input(2).is_some() {
        let (b, l) = full_cols(ctx, 2, &x[axis..], "bias_full")?;
        locals.extend(l);
        b
    } else {
        Arg::Null
    };
    let mut inv = call(
        "dg_rmsnorm_f32",
        "dg_layernorm_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", scale),
            ("bias", bias),
            ("y", ctx.out(0)?),
            ("mean", Arg::Null),
            ("inv_std", ctx.opt_out(1)),
            ("rows", u(rows)),
            ("cols", u(cols)),
            ("epsilon", f(float_attr(ctx, "epsilon", EPSILON)?)),
        ],
    );
    inv.locals = locals;
    one(inv)
}

// ---- tile rules ---------------------------------------------------------------

/// RMSNorm tiles over rows; the normalised axes are whole in every tile.
pub(super) const RMSNORM_TILES: TileRule =
    TileRule { space: rmsnorm_tile_space, map: rmsnorm_tile_map, in_place: false };

fn rms_axis(ctx: &KernelCtx) -> Result<usize> {
    let r = ctx.graph_in_shape(0)?.len();
    ctx.axis(ctx.node.int("axis")?.unwrap_or(AXIS), r)
}

fn rmsnorm_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    tile::rows_space(ctx, 0, rms_axis(ctx)?)
}

fn rmsnorm_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    tile::rows_map(ctx, 0, rms_axis(ctx)?, start, len)
}

// ---- gradient rules ------------------------------------------------------------------------

/// RMS normalization, composed: with r = 1 / sqrt(mean(X^2) + eps) over
/// the normalised dims and n = X * r, Y = n * scale (+ bias), so
/// dScale = sum(dY * n), dBias = sum(dY), and with g = dY * scale,
/// dX = r * (g - n * mean(g * n)).
fn rms_norm_grad(ctx: &mut GradCtx) -> Result<()> {
    let (dy, x, scale) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let rank = ctx.shape(x)?.len();
    let (axis, eps) = {
        let c = Ctx { graph: ctx.b.graph, node: &ctx.node };
        (c.axis(ctx.node.int("axis")?.unwrap_or(AXIS), rank)?, ctx.node.float("epsilon")?.unwrap_or(EPSILON))
    };
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let mean = |ctx: &mut GradCtx, t, what: &str| -> Result<TensorId> {
        let a = ctx.b.ints(&ctx.name(&format!("{what}_axes")), &axes);
        let out = ctx.name(what);
        ctx.emit1("ReduceMean", "", &[t, a], &out, vec![("keepdims".into(), Attr::Int(1))])
    };
    let sq = ctx.op("Mul", &[x, x], "x_sq")?;
    let ms = mean(ctx, sq, "mean_sq")?;
    let e = ctx.scalar("epsilon", eps);
    let var = ctx.op("Add", &[ms, e], "mean_sq_eps")?;
    let rms = ctx.op("Sqrt", &[var], "rms")?;
    let one = ctx.scalar("one", 1.0);
    let r = ctx.op("Div", &[one, rms], "inv_rms")?;
    let n = ctx.op("Mul", &[x, r], "normalized")?;
    if ctx.needs(1) {
        ctx.set_product(1, dy, n)?;
    }
    if ctx.has_x(2) && ctx.needs(2) {
        ctx.set_unbroadcast(2, dy)?;
    }
    if ctx.needs(0) {
        let g = ctx.op("Mul", &[dy, scale], "dy_scale")?;
        let gn = ctx.op("Mul", &[g, n], "dy_scale_n")?;
        let m = mean(ctx, gn, "mean_dy_scale_n")?;
        let nm = ctx.op("Mul", &[n, m], "n_mean")?;
        let d = ctx.op("Sub", &[g, nm], "centered")?;
        ctx.set_product(0, d, r)?;
    }
    Ok(())
}

/// GroupNormalization and InstanceNormalization (one group per channel)
/// with per-channel scale and bias: each group's normalisation is a
/// LayerNormalization of X reshaped to [N, G, C/G * spatial], so dX is
/// LayerNormalizationGrad (unit scale) between Reshapes, from dY * scale;
/// dScale and dBias sum dY * normalised and dY over batch and space.
fn group_norm_grad(ctx: &mut GradCtx) -> Result<()> {
    let (dy, x, scale) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let xs = ctx.shape(x)?;
    let (n, c) = (xs[0], xs[1]);
    let groups = ctx.node.int("num_groups")?.map_or(c, |g| g.max(1) as usize);
    if ctx.shape(scale)? != [c] {
        return Err(ctx.err(format!("the gradient is derived for a per-channel scale [{c}] only")));
    }
    let k = xs.iter().product::<usize>() / (n * groups).max(1);
    let eps = ctx.node.float("epsilon")?.unwrap_or(EPSILON);
    let rows = ctx.b.reshape(x, &[n, groups, k], &ctx.name("grouped"))?;
    let ones = ctx.b.constant(&ctx.name("unit_scale"), TensorData::from_f32(vec![k], &vec![1.0; k]));
    let attrs = vec![("axis".to_string(), Attr::Int(-1)), ("epsilon".to_string(), Attr::Float(eps))];
    let outs = [ctx.name("normalized"), ctx.name("mean"), ctx.name("inv_std")];
    let ln = ctx.emit("LayerNormalization", "", &[Some(rows), Some(ones)], &outs, attrs.clone())?;
    let [Some(normed), Some(mean), Some(inv_std)] = ln[..] else { unreachable!("three named outputs") };
    // Sums over every axis but the channel one.
    let per_channel: Vec<i64> = std::iter::once(0).chain(2..xs.len() as i64).collect();
    let sum = |ctx: &mut GradCtx, t: TensorId, slot: usize| -> Result<()> {
        let axes = ctx.b.ints(&ctx.name(&format!("axes{slot}")), &per_channel);
        let out = ctx.dx_name(slot);
        let g = ctx.emit1("ReduceSum", "", &[t, axes], &out, vec![("keepdims".into(), Attr::Int(0))])?;
        ctx.set(slot, g);
        Ok(())
    };
    if ctx.needs(1) {
        let full = ctx.b.reshape(normed, &xs, &ctx.name("normalized_full"))?;
        let p = ctx.op("Mul", &[dy, full], "dy_normalized")?;
        sum(ctx, p, 1)?;
    }
    if ctx.has_x(2) && ctx.needs(2) {
        sum(ctx, dy, 2)?;
    }
    if ctx.needs(0) {
        let mut cs = vec![c];
        cs.resize(xs.len() - 1, 1);
        let s = ctx.b.reshape(scale, &cs, &ctx.name("scale_per_channel"))?;
        let g = ctx.op("Mul", &[dy, s], "dy_scale")?;
        let gr = ctx.b.reshape(g, &[n, groups, k], &ctx.name("dy_grouped"))?;
        let outs = [ctx.name("dx_grouped"), String::new(), String::new()];
        let ins = [Some(gr), Some(rows), Some(ones), Some(mean), Some(inv_std)];
        let d = ctx.emit("LayerNormalizationGrad", grad::MS, &ins, &outs, attrs)?;
        let name = ctx.dx_name(0);
        let dx = ctx.b.reshape(d[0].expect("named"), &xs, &name)?;
        ctx.set(0, dx);
    }
    Ok(())
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
