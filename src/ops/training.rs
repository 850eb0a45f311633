//! Gradient accumulation and optimizer operators.

use super::kernel::{call, f, numel, one, u, Arg, Kernel, KernelCall, KernelCtx};
use super::tile;
use super::{Ctx, OpDef, Train, Update};
use crate::error::Result;
use crate::ir::{Attr, DType, TensorType};

/// The optimizers' hyper-parameter defaults when a node gives none.
const LR: f32 = 0.0;
const MOMENTUM: f32 = 0.0;
const WEIGHT_DECAY: f32 = 0.0;
const EPSILON: f32 = 0.0;

pub const OPS: &[OpDef] = &[
    // com.microsoft (buffer, gradient, overwrite: bool) -> (updated: bool [1]
    // [, buffer_out]). Writes `buffer` in place: overwrite when the flag is
    // set (lazy_reset_grad), else add.
    OpDef {
        name: "InPlaceAccumulatorV2",
        infer: accumulate,
        required: &[0, 1],
        update: Update::Always { input: 0, output: 1 },
        train: Train::Accumulator,
        kernel: Some(Kernel::Bind(bind_accumulate)),
        tile: Some(tile::FLAT),
        ..OpDef::BASE
    },
    // SGD(w, g){lr} -> w_updated (default domain as written by Deeploy's
    // exporters, though no ONNX opset defines it).
    OpDef {
        name: "SGD",
        attrs: &["lr"],
        infer: sgd,
        required: &[0, 1],
        update: Update::WhenLastReader { input: 0, output: 0 },
        train: Train::Sgd,
        kernel: Some(Kernel::Bind(bind_sgd)),
        tile: Some(tile::FLAT),
        ..OpDef::BASE
    },
    // com.microsoft SGDOptimizerV2(learning_rate, params: seq, gradients: seq
    // [, ...]) -> update_completed: bool [1] [, updated params: seq].
    OpDef {
        name: "SGDOptimizerV2",
        infer: sgd_v2,
        required: &[0, 1, 2],
        update: Update::Sequence,
        train: Train::SgdSequence,
        kernel: Some(Kernel::Bind(bind_sgd_optimizer_v2)),
        ..OpDef::BASE
    },
    // deploygen's own optimizer steps of a derived training step, one per
    // weight (default domain, like SGD): MomentumSGD(w, g, velocity)
    // {lr, momentum, weight_decay} -> w_updated, the velocity updated in
    // place; AdamW(w, g, exp_avg, exp_avg_sq, step){lr, beta1, beta2,
    // epsilon, weight_decay} -> w_updated, onnxruntime's AdamW (adam_mode 1,
    // bias correction), its moments and step count updated in place.
    OpDef {
        name: "MomentumSGD",
        attrs: &["lr", "momentum", "weight_decay"],
        infer: momentum,
        required: &[0, 1, 2],
        update: Update::WhenLastReader { input: 0, output: 0 },
        train: Train::Sgd,
        kernel: Some(Kernel::Bind(bind_momentum_sgd)),
        // Pointwise: the velocity tile is read and written back with the weight's.
        tile: Some(tile::FLAT),
        ..OpDef::BASE
    },
    OpDef {
        name: "AdamW",
        attrs: &["lr", "beta1", "beta2", "epsilon", "weight_decay"],
        infer: adamw,
        required: &[0, 1, 2, 3, 4],
        update: Update::WhenLastReader { input: 0, output: 0 },
        train: Train::Sgd,
        kernel: Some(Kernel::Bind(bind_adamw)),
        tile: Some(ADAMW_TILES),
        ..OpDef::BASE
    },
];

/// The compiled-in learning rate of an optimizer step: `None` for a node
/// that is no per-parameter step, `Some(None)` for one that reads its
/// rate from a tensor (or has none), `Some(Some(lr))` for one whose rate
/// is its attribute `lr` (SGD, MomentumSGD, AdamW), which its kernel can
/// read at run time instead ([`super::kernel::KernelCtx::rate`]).
pub fn fixed_rate(node: &crate::ir::Node) -> Option<Option<f32>> {
    if super::of(node).train != Train::Sgd {
        return None;
    }
    Some(match node.attrs.get("lr") {
        Some(Attr::Float(v)) => Some(*v),
        _ => None,
    })
}

/// A tile attribute (never an ONNX one): 1 on every AdamW tile but the
/// last, whose call alone advances the step count.
pub const HOLD_STEP: &str = "deploygen.hold_step";

/// AdamW tiles pointwise like SGD (the moments streamed both ways); the
/// step count is one value every tile reads, advanced by the last tile.
const ADAMW_TILES: tile::TileRule = tile::TileRule { space: tile::flat_space, map: adamw_tile_map, in_place: false };

fn adamw_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<tile::TileMap> {
    let mut m = tile::flat_map(ctx, start, len)?;
    let last = start[0] + len[0] >= numel(&ctx.graph_in_shape(0)?);
    m.attrs.push((HOLD_STEP.into(), Attr::Int(i64::from(!last))));
    Ok(m)
}

fn accumulate(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if let (Some(b), Some(g)) = (ctx.shape(0)?, ctx.shape(1)?) {
        if b != g {
            return Err(ctx.err(format!("buffer {b:?} and gradient {g:?} differ in shape")));
        }
    }
    Ok(vec![TensorType::new(DType::Bool, &[1]), ctx.same_as(0)?])
}

fn sgd(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if let (Some(w), Some(g)) = (ctx.shape(0)?, ctx.shape(1)?) {
        if w != g {
            return Err(ctx.err(format!("weight {w:?} and gradient {g:?} differ in shape")));
        }
    }
    match ctx.node.float("lr")? {
        None => return Err(ctx.err("attribute 'lr' (learning rate) is required")),
        Some(lr) if !(lr.is_finite() && lr > 0.0) => {
            return Err(ctx.err(format!("attribute 'lr' = {lr} must be a finite positive learning rate")))
        }
        Some(_) => {}
    }
    Ok(vec![ctx.same_as(0)?])
}

/// The learning rate is one f32 value.
fn sgd_v2(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let lr = ctx.ty(0)?;
    let name = ctx.node.input(0).map_or("", |t| ctx.graph.name_of(t));
    let one = lr.shape().is_none_or(|s| s.iter().product::<usize>() == 1);
    if lr.dtype != DType::F32 || !one {
        return Err(ctx.err(format!("learning rate '{name}' (input 0) must be f32 [1], found {lr}")));
    }
    Ok(vec![TensorType::new(DType::Bool, &[1]), TensorType::unknown(DType::F32)])
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bind_accumulate(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.in_shape(0)?);
    one(call(
        "dg_inplace_accumulate_f32",
        "dg_accumulate_args_t",
        vec![
            ("buffer", ctx.inp(0)?),
            ("grad", ctx.inp(1)?),
            ("lazy_reset", ctx.opt_in(2)),
            ("out", ctx.opt_out(1)),
            ("updated", ctx.opt_out(0)),
            ("n", u(n)),
        ],
    ))
}

pub(super) fn bind_sgd(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.in_shape(0)?);
    // The rate is the attribute `lr`, or a tensor input.
    let (lr, lr_ptr) = match ctx.node.attrs.get("lr") {
        Some(_) => {
            let lr = ctx.attr_float("lr", LR)?;
            (lr, ctx.rate_ptr(lr))
        }
        None => match ctx.inputs.get(2).cloned().flatten() {
            Some(p) => (0.0, Arg::Ptr(p)),
            None => return Err(ctx.err("SGD needs a learning rate: attribute 'lr' or a third input")),
        },
    };
    one(call(
        "dg_sgd_f32",
        "dg_sgd_args_t",
        vec![
            ("w", ctx.inp(0)?),
            ("g", ctx.inp(1)?),
            ("w_out", ctx.out(0)?),
            ("n", u(n)),
            ("lr", f(lr)),
            ("lr_ptr", lr_ptr),
        ],
    ))
}

pub(super) fn bind_sgd_optimizer_v2(ctx: &KernelCtx) -> Result<KernelCall> {
    // (learning_rate, step, params, gradients, ...): one SGD per parameter,
    // updating it in place.
    let lr = ctx.inp(0)?;
    if ctx.members.is_empty() {
        return Err(ctx.err("no parameters to update"));
    }
    let calls = ctx
        .members
        .iter()
        .map(|m| {
            let mut inv = call(
                "dg_sgd_f32",
                "dg_sgd_args_t",
                vec![
                    ("w", Arg::Ptr(m.param.clone())),
                    ("g", Arg::Ptr(m.grad.clone())),
                    ("w_out", Arg::Ptr(m.param.clone())),
                    ("n", u(m.numel)),
                    ("lr", f(0.0)),
                    ("lr_ptr", lr.clone()),
                ],
            );
            inv.stage = m.stage.clone();
            inv.comment = Some(m.name.clone());
            inv
        })
        .collect();
    Ok(KernelCall { calls, ..Default::default() })
}

/// Weight, gradient and every full-size state input share one shape.
fn same_shapes(ctx: &Ctx, slots: &[usize]) -> Result<()> {
    let w = ctx.shape(0)?;
    for &i in slots {
        if let (Some(w), Some(s)) = (&w, ctx.shape(i)?) {
            if *w != s {
                return Err(ctx.err(format!("input {i} is {s:?} but the weight is {w:?}")));
            }
        }
    }
    Ok(())
}

/// A required float attribute in `lo..hi` (`hi` excluded unless `closed`).
fn hyper(ctx: &Ctx, name: &str, lo: f32, hi: f32) -> Result<f32> {
    let v = ctx.node.float(name)?.ok_or_else(|| ctx.err(format!("attribute '{name}' is required")))?;
    if !(v.is_finite() && v >= lo && v < hi) {
        return Err(ctx.err(format!("attribute '{name}' = {v} is out of range [{lo}, {hi})")));
    }
    Ok(v)
}

fn momentum(ctx: &Ctx) -> Result<Vec<TensorType>> {
    same_shapes(ctx, &[1, 2])?;
    hyper(ctx, "lr", f32::MIN_POSITIVE, f32::INFINITY)?;
    hyper(ctx, "momentum", 0.0, 1.0)?;
    hyper(ctx, "weight_decay", 0.0, f32::INFINITY)?;
    Ok(vec![ctx.same_as(0)?])
}

fn adamw(ctx: &Ctx) -> Result<Vec<TensorType>> {
    same_shapes(ctx, &[1, 2, 3])?;
    hyper(ctx, "lr", f32::MIN_POSITIVE, f32::INFINITY)?;
    hyper(ctx, "beta1", 0.0, 1.0)?;
    hyper(ctx, "beta2", 0.0, 1.0)?;
    hyper(ctx, "epsilon", f32::MIN_POSITIVE, f32::INFINITY)?;
    hyper(ctx, "weight_decay", 0.0, f32::INFINITY)?;
    if ctx.dtype(4)? != DType::I64 || ctx.shape(4)?.is_some_and(|s| s.iter().product::<usize>() != 1) {
        return Err(ctx.err(format!("the step count (input 4) must be one i64, found {}", ctx.ty(4)?)));
    }
    Ok(vec![ctx.same_as(0)?])
}

fn bind_momentum_sgd(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let lr = ctx.attr_float("lr", LR)?;
    one(call(
        "dg_momentum_sgd_f32",
        "dg_momentum_sgd_args_t",
        vec![
            ("w", ctx.inp(0)?),
            ("g", ctx.inp(1)?),
            ("velocity", ctx.inp(2)?),
            ("w_out", ctx.out(0)?),
            ("n", u(numel(&ctx.in_shape(0)?))),
            ("lr", f(lr)),
            ("lr_ptr", ctx.rate_ptr(lr)),
            ("momentum", f(ctx.attr_float("momentum", MOMENTUM)?)),
            ("weight_decay", f(ctx.attr_float("weight_decay", WEIGHT_DECAY)?)),
        ],
    ))
}

fn bind_adamw(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2, 3])?;
    let lr = ctx.attr_float("lr", LR)?;
    let mut fields = vec![
        ("w", ctx.inp(0)?),
        ("g", ctx.inp(1)?),
        ("m", ctx.inp(2)?),
        ("v", ctx.inp(3)?),
        ("step", ctx.inp(4)?),
        ("w_out", ctx.out(0)?),
        ("n", u(numel(&ctx.in_shape(0)?))),
        ("lr", f(lr)),
        ("lr_ptr", ctx.rate_ptr(lr)),
        ("beta1", f(ctx.attr_float("beta1", 0.0)?)),
        ("beta2", f(ctx.attr_float("beta2", 0.0)?)),
        ("epsilon", f(ctx.attr_float("epsilon", EPSILON)?)),
        ("weight_decay", f(ctx.attr_float("weight_decay", WEIGHT_DECAY)?)),
    ];
    if ctx.tile.is_some() {
        fields.push(("hold_step", u(ctx.attr_int(HOLD_STEP, 0)? as usize)));
    }
    one(call("dg_adamw_f32", "dg_adamw_args_t", fields))
}
