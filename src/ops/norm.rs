//! BatchNormalization (inference and training mode), onnxruntime's
//! BatchNormInternal, LayerNormalization, and their gradients.

use super::grad::{self, GradCtx};
use super::kernel::{call, f, numel, one, u, Arg, Kernel, KernelCall, KernelCtx};
use super::linear::finite;
use super::tile::{self, Part, Space, TileMap, TileRefusal, TileRule, Tileable};
use super::{ChannelAffine, Ctx, LegacyAttr, OpDef, Recompute};
use crate::error::Result;
use crate::ir::{Attr, DType, Graph, Node, TensorType};

pub const OPS: &[OpDef] = &[
    // (X, scale, B, mean, var) -> Y [, running_mean, running_var] (opset 14+).
    OpDef {
        name: "BatchNormalization",
        attrs: &["epsilon", "momentum", "training_mode"],
        legacy: &[
            LegacyAttr { name: "is_test", before: 7, unsupported: legacy_training },
            LegacyAttr { name: "spatial", before: 9, unsupported: legacy_per_element },
            LegacyAttr { name: "consumed_inputs", before: 6, unsupported: super::ignorable },
        ],
        infer: batch_norm,
        required: &[0, 1, 2, 3, 4],
        batch_stats: Some(onnx_training_mode),
        eval_form: Some(eval_form),
        running_stats: &[3, 4],
        kernel: Some(Kernel::Bind(|c| bind_batchnorm(c, false))),
        grad: Some(batch_norm_grad_rule),
        tile: Some(BATCHNORM_TILES),
        channel_affine: Some(batch_norm_affine),
        recompute: Some(batch_norm_recompute),
        ..OpDef::BASE
    },
    // com.microsoft: -> Y, running_mean, running_var, saved_mean, saved_inv_std.
    OpDef {
        name: "BatchNormInternal",
        attrs: &["epsilon", "momentum", "training_mode"],
        infer: batch_norm,
        required: &[0, 1, 2, 3, 4],
        batch_stats: Some(ort_training_mode),
        eval_form: Some(eval_form),
        running_stats: &[3, 4],
        kernel: Some(Kernel::Bind(|c| bind_batchnorm(c, true))),
        tile: Some(BATCHNORM_INTERNAL_TILES),
        recompute: Some(batch_norm_internal_recompute),
        ..OpDef::BASE
    },
    // (dY, X, scale, saved_mean, saved_inv_std) -> dX, dScale, dBias.
    OpDef {
        name: "BatchNormalizationGrad",
        attrs: &["epsilon"],
        infer: batch_norm_grad,
        gradient: true,
        required: &[0, 1, 2],
        kernel: Some(Kernel::Bind(bind_batchnorm_grad)),
        tile: Some(BATCHNORM_GRAD_TILES),
        ..OpDef::BASE
    },
    // (X, scale[, B]) -> Y, Mean, InvStdDev.
    OpDef {
        name: "LayerNormalization",
        attrs: &["axis", "epsilon", "stash_type"],
        infer: layer_norm,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_layernorm)),
        grad: Some(layer_norm_grad_rule),
        tile: Some(LAYERNORM_TILES),
        ..OpDef::BASE
    },
    // com.microsoft (dY, X, scale, mean, inv_std_var) -> dX, dScale, dBias.
    OpDef {
        name: "LayerNormalizationGrad",
        attrs: &["axis", "epsilon", "stash_type"],
        infer: layer_norm_grad,
        gradient: true,
        required: &[0, 1, 2],
        scratch: Some(layer_norm_grad_scratch),
        kernel: Some(Kernel::Bind(bind_layernorm_grad)),
        tile: Some(LAYERNORM_GRAD_TILES),
        ..OpDef::BASE
    },
];

/// The normalizations' attribute defaults (ONNX's): `epsilon` of every
/// normalization (batch, layer, group, instance, RMS), the normalised
/// `axis` of LayerNormalization and RMSNormalization, BatchNormalization's
/// `momentum` and `training_mode` (onnxruntime's BatchNormInternal
/// trains unless told otherwise, see [`ort_training_mode`]).
pub(super) const EPSILON: f32 = 1e-5;
pub(super) const AXIS: i64 = -1;
const MOMENTUM: f32 = 0.9;
const TRAINING_MODE: bool = false;

/// Inference form: the same node again. ONNX training form saves no batch
/// statistics, so it is never recomputed.
fn batch_norm_recompute(g: &Graph, n: &Node) -> Option<Recompute> {
    if onnx_training_mode(n) {
        return None;
    }
    super::recompute_copy(g, n)
}

/// Training form: output 0 again from the saved batch statistics, when
/// the node writes them; inference form: the same node.
fn batch_norm_internal_recompute(g: &Graph, n: &Node) -> Option<Recompute> {
    if !ort_training_mode(n) {
        return super::recompute_copy(g, n);
    }
    (n.output(3).is_some() && n.output(4).is_some()).then_some(Recompute::SavedStats { mean: 3, inv_std: 4 })
}

/// A copy of a training BatchNorm rewritten to run again from its saved
/// batch statistics ([`Recompute::SavedStats`]): BatchNormalization in
/// inference form whose mean and variance inputs are the saved mean and
/// `1 / sqrt(var + eps)` (`marks.saved_stats`).
pub fn saved_stats_form(copy: &mut Node) {
    copy.op = "BatchNormalization".into();
    copy.op_id = super::resolve("BatchNormalization").expect("this module registers BatchNormalization");
    copy.domain = String::new();
    copy.attrs.shift_remove("momentum");
    copy.attrs.insert("training_mode".into(), Attr::Int(0));
    copy.marks.saved_stats = true;
}

/// A BatchNorm in eval mode, as PyTorch's `eval()` runs it: inference
/// BatchNormalization of X by the running mean and variance (inputs 3
/// and 4 in both forms), output Y only.
fn eval_form(n: &mut Node) {
    n.op = "BatchNormalization".into();
    n.op_id = super::resolve("BatchNormalization").expect("this module registers BatchNormalization");
    n.domain = String::new();
    n.attrs.shift_remove("momentum");
    n.attrs.insert("training_mode".into(), Attr::Int(0));
    n.outputs.truncate(1);
}

/// onnxruntime's training BatchNorm: training_mode defaults to 1. Read on
/// typed nodes only: the shape rule validated the attribute.
fn ort_training_mode(n: &Node) -> bool {
    n.attr_int("training_mode").unwrap_or(1) != 0
}

/// ONNX opset 14+: the training_mode attribute; before, the running
/// statistics outputs only exist in training mode.
fn onnx_training_mode(n: &Node) -> bool {
    n.attr_int("training_mode").map_or(n.outputs.iter().flatten().count() > 1, |m| m != 0)
}

/// Inference BatchNormalization with constant statistics as the channel
/// affine `x * s + (B - mean * s)`, `s = scale / sqrt(var + epsilon)`
/// (computed in f64, as the kernel's result is within rounding of it).
fn batch_norm_affine(g: &Graph, n: &Node) -> Option<ChannelAffine> {
    if onnx_training_mode(n) || n.outputs.iter().flatten().count() != 1 {
        return None;
    }
    let eps = f64::from(n.attr_float("epsilon").unwrap_or(EPSILON));
    let param = |slot: usize| -> Option<Vec<f32>> {
        let d = g.tensor(n.input(slot)?).data.as_ref()?;
        (d.dtype == DType::F32 && d.shape.len() == 1).then(|| d.to_f32()).flatten()
    };
    let (scale, bias, mean, var) = (param(1)?, param(2)?, param(3)?, param(4)?);
    let c = scale.len();
    if [bias.len(), mean.len(), var.len()].iter().any(|&l| l != c) {
        return None;
    }
    let s: Vec<f64> = (0..c).map(|i| f64::from(scale[i]) / (f64::from(var[i]) + eps).sqrt()).collect();
    let shift = (0..c).map(|i| (f64::from(bias[i]) - f64::from(mean[i]) * s[i]) as f32).collect();
    Some(ChannelAffine { scale: s.iter().map(|&v| v as f32).collect(), shift })
}

/// (dY, X, scale, bias) without saved statistics: the kernel recomputes
/// mean and inv_std into 2 * rows floats.
fn layer_norm_grad_scratch(g: &Graph, node: &Node) -> u64 {
    if node.input(3).is_some() && node.input(4).is_some() {
        return 0;
    }
    let Some(shape) = node.input(1).and_then(|x| g.tensor(x).ty.shape()) else { return 0 };
    let rank = shape.len() as i64;
    let axis = node.attr_int("axis").unwrap_or(AXIS);
    let axis = if axis < 0 { axis + rank } else { axis }.clamp(0, rank) as usize;
    let rows: usize = shape[..axis].iter().product();
    (2 * rows * 4) as u64
}

/// BatchNormalization's attributes: `epsilon` a non-negative finite
/// FLOAT, `momentum` in 0..=1, `training_mode` and `spatial` 0/1.
fn batch_norm_attrs(ctx: &Ctx) -> Result<()> {
    if let Some(e) = finite(ctx, "epsilon")? {
        if e < 0.0 {
            return Err(ctx.err(format!("attribute 'epsilon' = {e} must not be negative")));
        }
    }
    if let Some(m) = finite(ctx, "momentum")? {
        if !(0.0..=1.0).contains(&m) {
            return Err(ctx.err(format!("attribute 'momentum' = {m} is out of range 0..=1")));
        }
    }
    ctx.node.flag("training_mode", TRAINING_MODE)?;
    ctx.node.flag("spatial", true)?;
    Ok(())
}

fn int_attr(n: &Node, name: &str) -> Option<i64> {
    match n.attrs.get(name) {
        Some(Attr::Int(v)) => Some(*v),
        _ => None,
    }
}

/// Opset < 7 `is_test`: 1 is inference (what the node computes anyway);
/// 0 asks for batch statistics in the legacy form.
fn legacy_training(n: &Node) -> Option<String> {
    (int_attr(n, "is_test") != Some(1)).then(|| {
        "'is_test' other than 1 asks for the opset < 7 training form (batch statistics); deploygen reads that form \
         only as 'training_mode' (opset 14)"
            .to_string()
    })
}

/// Opset < 9 `spatial`: 1 (the default) is per-channel statistics.
fn legacy_per_element(n: &Node) -> Option<String> {
    (int_attr(n, "spatial") != Some(1))
        .then(|| "'spatial' = 0 (statistics per element, opset < 9) is not supported: only per channel".to_string())
}

fn batch_norm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    batch_norm_attrs(ctx)?;
    let y = ctx.same_as(0)?;
    let c = match ctx.shape(0)? {
        Some(x) if x.len() >= 2 => TensorType::new(y.dtype, &[x[1]]),
        Some(x) => return Err(ctx.err(format!("input shape {x:?} has no channel dim"))),
        None => TensorType::unknown(y.dtype),
    };
    let n = ctx.node.outputs.len().max(1);
    let mut out = vec![y];
    out.extend(std::iter::repeat_n(c, n - 1));
    Ok(out)
}

/// LayerNormalization's `epsilon` (finite, non-negative) and `axis`
/// (within the rank of input `x`).
fn layer_norm_attrs(ctx: &Ctx, x: Option<&[usize]>) -> Result<Option<usize>> {
    if let Some(e) = finite(ctx, "epsilon")? {
        if e < 0.0 {
            return Err(ctx.err(format!("attribute 'epsilon' = {e} must not be negative")));
        }
    }
    ctx.node.int("stash_type")?;
    match x {
        Some(x) => ctx.axis_attr("axis", AXIS, x.len()).map(Some),
        None => ctx.node.int("axis").map(|_| None),
    }
}

fn layer_norm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let y = ctx.same_as(0)?;
    let shape = ctx.shape(0)?;
    let axis = layer_norm_attrs(ctx, shape.as_deref())?;
    // Mean and InvStdDev are float unless stash_type says otherwise.
    let stats = match (shape, axis) {
        (Some(x), Some(axis)) => {
            let s: Vec<usize> = x.iter().enumerate().map(|(i, &d)| if i < axis { d } else { 1 }).collect();
            TensorType::new(DType::F32, &s)
        }
        _ => TensorType::unknown(DType::F32),
    };
    Ok(vec![y, stats.clone(), stats])
}

fn layer_norm_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    layer_norm_attrs(ctx, ctx.shape(1)?.as_deref())?;
    norm_grad(ctx)
}

fn batch_norm_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    batch_norm_attrs(ctx)?;
    norm_grad(ctx)
}

fn norm_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dx = ctx.same_as(1)?;
    let ds = ctx.same_as(2)?;
    Ok(vec![dx, ds.clone(), ds])
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bn_dims(ctx: &KernelCtx, x: &[usize]) -> Result<[usize; 3]> {
    if x.len() < 2 {
        return Err(ctx.err(format!("BatchNormalization needs [N, C, ...], found {x:?}")));
    }
    Ok([x[0], x[1], numel(&x[2..])])
}

/// BatchNormalization, or (`internal`) onnxruntime's BatchNormInternal.
fn bind_batchnorm(ctx: &KernelCtx, internal: bool) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2, 3, 4])?;
    let [b, c, s] = bn_dims(ctx, &ctx.in_shape(0)?)?;
    // A copy from saved statistics reads input 4 as 1 / sqrt(var + eps).
    let saved = ctx.node.marks.saved_stats;
    let train = !saved && batch_stats(ctx, internal)?;
    let mut fields = vec![
        ("x", ctx.inp(0)?),
        ("scale", ctx.inp(1)?),
        ("bias", ctx.inp(2)?),
        ("mean", ctx.inp(3)?),
        ("var", ctx.inp(4)?),
        ("y", ctx.out(0)?),
    ];
    let mut state_updates = vec![];
    if train {
        fields.push(("running_mean_out", ctx.opt_out(1)));
        fields.push(("running_var_out", ctx.opt_out(2)));
        fields.push(("saved_mean", ctx.opt_out(3)));
        fields.push(("saved_inv_std", ctx.opt_out(4)));
        // The running statistics carry over to the next run.
        for (i, o) in [(3, 1), (4, 2)] {
            if ctx.has_out(o) {
                state_updates.push((i, o));
            }
        }
    }
    fields.extend([
        ("batch", u(b)),
        ("channels", u(c)),
        ("spatial", u(s)),
        ("epsilon", f(ctx.attr_float("epsilon", EPSILON)?)),
        ("momentum", f(ctx.attr_float("momentum", MOMENTUM)?)),
    ]);
    let func = match (train, saved) {
        (true, _) => "dg_batchnorm_train_f32",
        (false, true) => "dg_batchnorm_saved_f32",
        (false, false) => "dg_batchnorm_f32",
    };
    Ok(KernelCall { calls: vec![call(func, "dg_batchnorm_args_t", fields)], state_updates })
}

pub(super) fn bind_batchnorm_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2, 3, 4])?;
    let [b, c, s] = bn_dims(ctx, &ctx.in_shape(1)?)?;
    one(call(
        "dg_batchnorm_grad_f32",
        "dg_batchnorm_grad_args_t",
        vec![
            ("dy", ctx.inp(0)?),
            ("x", ctx.inp(1)?),
            ("scale", ctx.inp(2)?),
            ("saved_mean", ctx.inp(3)?),
            ("saved_inv_std", ctx.inp(4)?),
            // No dX where nothing before the node trains (a frozen Conv).
            ("dx", ctx.opt_out(0)),
            ("dscale", ctx.opt_out(1)),
            ("dbias", ctx.opt_out(2)),
            ("batch", u(b)),
            ("channels", u(c)),
            ("spatial", u(s)),
        ],
    ))
}

pub(super) fn rows_cols(ctx: &KernelCtx, x: &[usize]) -> Result<(usize, usize)> {
    let axis = ctx.axis(ctx.attr_int("axis", AXIS)?, x.len())?;
    Ok((numel(&x[..axis]), numel(&x[axis..])))
}

pub(super) fn bind_layernorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let (rows, cols) = rows_cols(ctx, &x)?;
    if numel(&ctx.in_shape(1)?) != cols {
        return Err(ctx.err("LayerNormalization scale must have one value per normalised element"));
    }
    one(call(
        "dg_layernorm_f32",
        "dg_layernorm_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", ctx.inp(1)?),
            ("bias", ctx.opt_in(2)),
            ("y", ctx.out(0)?),
            ("mean", ctx.opt_out(1)),
            ("inv_std", ctx.opt_out(2)),
            ("rows", u(rows)),
            ("cols", u(cols)),
            ("epsilon", f(ctx.attr_float("epsilon", EPSILON)?)),
        ],
    ))
}

pub(super) fn bind_layernorm_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2, 3, 4])?;
    let x = ctx.in_shape(1)?;
    let (rows, cols) = rows_cols(ctx, &x)?;
    // ORT form (dY, X, scale, mean, inv_std); the (dY, X, scale, bias)
    // form recomputes the statistics into scratch.
    let with_stats = ctx.node.input(3).is_some() && ctx.node.input(4).is_some() && ctx.node.inputs.len() >= 5;
    let (mean, inv_std, scratch) = if with_stats {
        (ctx.inp(3)?, ctx.inp(4)?, Arg::Null)
    } else {
        let s = ctx.scratch.clone().ok_or_else(|| ctx.err("needs a scratch buffer the plan did not give it"))?;
        (Arg::Null, Arg::Null, Arg::Ptr(s))
    };
    one(call(
        "dg_layernorm_grad_f32",
        "dg_layernorm_grad_args_t",
        vec![
            ("dy", ctx.inp(0)?),
            ("x", ctx.inp(1)?),
            ("scale", ctx.inp(2)?),
            ("mean", mean),
            ("inv_std", inv_std),
            ("dx", ctx.out(0)?),
            ("dscale", ctx.opt_out(1)),
            ("dbias", ctx.opt_out(2)),
            ("scratch", scratch),
            ("rows", u(rows)),
            ("cols", u(cols)),
            ("epsilon", f(ctx.attr_float("epsilon", EPSILON)?)),
        ],
    ))
}

// ---- gradient rules ------------------------------------------------------------------------

/// BatchNormalization trains as onnxruntime's BatchNormInternal with batch
/// statistics (running mean and variance updated as in training mode);
/// its gradient is BatchNormalizationGrad from the saved statistics. With
/// no gradient asked for (a frozen region) it still switches to training
/// mode, as onnxruntime's training graph does.
fn batch_norm_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    ctx.retarget("BatchNormInternal", grad::MS, vec![("training_mode", Attr::Int(1))])?;
    for slot in 1..=4 {
        ctx.y(slot)?;
    }
    if !(0..3).any(|i| ctx.needs(i)) {
        return Ok(());
    }
    let (dy, x, scale) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let (mean, inv_std) = (ctx.y(3)?, ctx.y(4)?);
    let outs = ctx.dx_names(&[0, 1, 2]);
    let attrs = ctx.attr("epsilon").into_iter().collect();
    let ins = [Some(dy), Some(x), Some(scale), Some(mean), Some(inv_std)];
    let g = ctx.emit("BatchNormalizationGrad", grad::MS, &ins, &outs, attrs)?;
    for (slot, t) in g.into_iter().enumerate() {
        if let Some(t) = t {
            ctx.set(slot, t);
        }
    }
    Ok(())
}

/// LayerNormalizationGrad from the forward pass's mean and inverse
/// standard deviation (outputs 1 and 2, added when the graph left them out).
fn layer_norm_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    let (dy, x, scale) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let (mean, inv_std) = (ctx.y(1)?, ctx.y(2)?);
    let mut outs = ctx.dx_names(&[0, 1, 2]);
    // The kernel always writes dX.
    if outs[0].is_empty() {
        outs[0] = ctx.name("dx");
    }
    let attrs = ["axis", "epsilon"].iter().filter_map(|a| ctx.attr(a)).collect();
    let ins = [Some(dy), Some(x), Some(scale), Some(mean), Some(inv_std)];
    let g = ctx.emit("LayerNormalizationGrad", grad::MS, &ins, &outs, attrs)?;
    for (slot, t) in g.into_iter().enumerate() {
        if let Some(t) = t {
            ctx.set(slot, t);
        }
    }
    Ok(())
}

// ---- tile rules ---------------------------------------------------------------

/// Inference BatchNorm tiles over the batch (per-channel parameters stay
/// whole); with batch statistics (training mode) a channel needs its whole
/// batch and map, so it tiles over channels, each tile taking its channels'
/// parameters and statistics; the running statistics are copied back after
/// the loop.
const BATCHNORM_TILES: TileRule = TileRule {
    space: |c| batchnorm_tile_space(c, false),
    map: |c, s, l| batchnorm_tile_map(c, false, s, l),
    in_place: false,
};
/// [`BATCHNORM_TILES`] of BatchNormInternal.
const BATCHNORM_INTERNAL_TILES: TileRule = TileRule {
    space: |c| batchnorm_tile_space(c, true),
    map: |c, s, l| batchnorm_tile_map(c, true, s, l),
    in_place: false,
};
/// BatchNormalizationGrad tiles over channels: a channel's dScale and
/// dBias sum over its whole batch and map, and its dX needs those sums.
pub(super) const BATCHNORM_GRAD_TILES: TileRule =
    TileRule { space: batchnorm_grad_tile_space, map: batchnorm_grad_tile_map, in_place: false };
/// LayerNorm tiles over rows; the normalised axes are whole in every tile.
pub(super) const LAYERNORM_TILES: TileRule =
    TileRule { space: layernorm_tile_space, map: layernorm_tile_map, in_place: false };
/// LayerNormGrad tiles over rows when it computes dX only: dScale and dBias
/// sum over every row.
pub(super) const LAYERNORM_GRAD_TILES: TileRule =
    TileRule { space: layernorm_grad_tile_space, map: layernorm_grad_tile_map, in_place: false };

/// Whether the kernel normalises with batch statistics: BatchNormInternal
/// (`internal`) always, BatchNormalization with `training_mode` set.
fn batch_stats(ctx: &KernelCtx, internal: bool) -> Result<bool> {
    Ok(internal || ctx.attr_flag("training_mode", TRAINING_MODE)?)
}

fn batchnorm_tile_space(ctx: &KernelCtx, internal: bool) -> Result<Tileable> {
    if batch_stats(ctx, internal)? {
        // A channel's statistics need its whole batch and map: split channels.
        let x = ctx.graph_in_shape(0)?;
        if x.len() < 2 {
            return Ok(Err(TileRefusal::NoChannelAxis(x)));
        }
        return Ok(Ok(Space { split: (0..x.len()).map(|d| d == 1).collect(), dims: x }));
    }
    if (1..ctx.node.outputs.len()).any(|i| ctx.node.output(i).is_some()) {
        return Ok(Err(TileRefusal::RunningStats));
    }
    let x = ctx.graph_in_shape(0)?;
    Ok(Ok(Space { split: (0..x.len()).map(|d| d == 0).collect(), dims: x }))
}

fn batchnorm_tile_map(ctx: &KernelCtx, internal: bool, start: &[usize], len: &[usize]) -> Result<TileMap> {
    if !batch_stats(ctx, internal)? {
        return tile::rows_map(ctx, 0, 1, start, len);
    }
    channels_map(ctx, 0, start, len)
}

fn batchnorm_grad_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    let x = ctx.graph_in_shape(1)?;
    if x.len() < 2 {
        return Ok(Err(TileRefusal::NoChannelAxis(x)));
    }
    Ok(Ok(Space { split: (0..x.len()).map(|d| d == 1).collect(), dims: x }))
}

fn batchnorm_grad_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    channels_map(ctx, 1, start, len)
}

/// A tile of channels of input `x_slot`'s `[N, C, ...]`: operands of its
/// shape take the channels' maps, per-channel ones (`[C]`) the channels,
/// anything else stays whole.
fn channels_map(ctx: &KernelCtx, x_slot: usize, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let x = ctx.graph_in_shape(x_slot)?;
    let (c0, lc) = (start[1], len[1]);
    let part = |s: Vec<usize>| -> Part {
        if lc == x[1] {
            Part::Whole
        } else if s == x {
            let mut st = vec![0; s.len()];
            st[1] = c0;
            let mut l = s;
            l[1] = lc;
            Part::Box { start: st, len: l }
        } else if s == [x[1]] {
            Part::Box { start: vec![c0], len: vec![lc] }
        } else {
            Part::Whole
        }
    };
    let mut m = TileMap::default();
    for i in 0..ctx.node.inputs.len() {
        m.inputs.push(match ctx.node.input(i) {
            Some(_) => Some(part(ctx.graph_in_shape(i)?)),
            None => None,
        });
    }
    for i in 0..ctx.node.outputs.len() {
        m.outputs.push(match ctx.node.output(i) {
            Some(_) => Some(part(ctx.graph_out_shape(i)?)),
            None => None,
        });
    }
    Ok(m)
}

fn norm_axis(ctx: &KernelCtx, x_slot: usize) -> Result<usize> {
    let r = ctx.graph_in_shape(x_slot)?.len();
    ctx.axis(ctx.attr_int("axis", AXIS)?, r)
}

fn layernorm_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    tile::rows_space(ctx, 0, norm_axis(ctx, 0)?)
}

fn layernorm_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    tile::rows_map(ctx, 0, norm_axis(ctx, 0)?, start, len)
}

fn layernorm_grad_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    if ctx.has_out(1) || ctx.has_out(2) || ctx.node.output(1).is_some() || ctx.node.output(2).is_some() {
        return Ok(Err(TileRefusal::ParamGradsSumRows));
    }
    tile::rows_space(ctx, 1, norm_axis(ctx, 1)?)
}

fn layernorm_grad_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    tile::rows_map(ctx, 1, norm_axis(ctx, 1)?, start, len)
}
