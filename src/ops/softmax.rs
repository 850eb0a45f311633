//! Softmax, LogSoftmax and Softmax's gradient (`SoftmaxGrad`, or `SoftmaxGrad_13` for the
//! opset-13 axis semantics).

use super::grad::{self, GradCtx};
use super::kernel::{call, numel, one, u, Kernel, KernelCall, KernelCtx};
use super::tile::{self, TileMap, TileRule, Tileable};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Softmax",
        attrs: &["axis"],
        infer: same,
        kernel: Some(Kernel::Bind(bind_softmax)),
        grad: Some(softmax_grad_rule),
        tile: Some(SOFTMAX_TILES),
        qdq: Some(super::quant::Qdq::Fuse(&super::quant::QDQ_SOFTMAX)),
        ..OpDef::BASE
    },
    // log(Softmax(x)), computed as x - max - log(sum(exp(x - max))).
    OpDef {
        name: "LogSoftmax",
        attrs: &["axis"],
        infer: same,
        kernel: Some(Kernel::Bind(bind_log_softmax)),
        tile: Some(SOFTMAX_TILES),
        ..OpDef::BASE
    },
    // (dY, Y) -> dX.
    OpDef {
        name: "SoftmaxGrad",
        attrs: &["axis"],
        infer: same,
        gradient: true,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(|c| bind_softmax_grad(c, true))),
        tile: Some(SOFTMAX_GRAD_TILES),
        ..OpDef::BASE
    },
    OpDef {
        name: "SoftmaxGrad_13",
        attrs: &["axis"],
        infer: same,
        gradient: true,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(|c| bind_softmax_grad(c, false))),
        tile: Some(SOFTMAX_GRAD_13_TILES),
        ..OpDef::BASE
    },
];

/// The softmax axis when the node gives none: 1 in the pre-13 form that
/// flattens to 2-D at the axis (`coerce`), -1 from opset 13 on.
pub(super) fn default_axis(coerce: bool) -> i64 {
    if coerce {
        1
    } else {
        -1
    }
}

fn same(ctx: &Ctx) -> Result<Vec<TensorType>> {
    match ctx.shape(0)? {
        Some(s) => {
            ctx.axis_attr("axis", default_axis(false), s.len())?;
        }
        None => {
            ctx.node.int("axis")?;
        }
    }
    Ok(vec![ctx.same_as(0)?])
}

// ---- kernel bindings --------------------------------------------------------

/// `[outer, dim, inner]` of a softmax over `axis`; `coerce` is the pre-13
/// "flatten to 2-D at axis" form.
pub(super) fn softmax_dims(ctx: &KernelCtx, x: &[usize], coerce: bool) -> Result<[usize; 3]> {
    let axis = ctx.axis(ctx.attr_int("axis", default_axis(coerce))?, x.len())?;
    Ok(if coerce {
        [numel(&x[..axis]), numel(&x[axis..]), 1]
    } else {
        [numel(&x[..axis]), x[axis], numel(&x[axis + 1..])]
    })
}

pub(super) fn bind_softmax(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_softmax_form(ctx, "dg_softmax_f32")
}

fn bind_log_softmax(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_softmax_form(ctx, "dg_log_softmax_f32")
}

/// Softmax or LogSoftmax: one axis (opset >= 13) or the pre-13 2-D form.
fn bind_softmax_form(ctx: &KernelCtx, func: &str) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let old = ctx.opset() < 13;
    let [o, d, i] = softmax_dims(ctx, &ctx.in_shape(0)?, old)?;
    one(call(
        func,
        "dg_softmax_args_t",
        vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("outer", u(o)), ("dim", u(d)), ("inner", u(i))],
    ))
}

/// SoftmaxGrad (`old`: the pre-13 2-D form) or SoftmaxGrad_13.
fn bind_softmax_grad(ctx: &KernelCtx, old: bool) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let [o, d, i] = softmax_dims(ctx, &ctx.in_shape(1)?, old)?;
    one(call(
        "dg_softmax_grad_f32",
        "dg_softmax_grad_args_t",
        vec![
            ("dy", ctx.inp(0)?),
            ("y", ctx.inp(1)?),
            ("dx", ctx.out(0)?),
            ("outer", u(o)),
            ("dim", u(d)),
            ("inner", u(i)),
        ],
    ))
}

// ---- gradient rules ------------------------------------------------------------------------

/// SoftmaxGrad_13(dY, Y) over the forward axis.
fn softmax_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, y) = (ctx.dy(0)?, ctx.y(0)?);
    let (out, attrs) = (ctx.dx_name(0), ctx.attr("axis").into_iter().collect());
    let dx = ctx.emit1("SoftmaxGrad_13", grad::MS, &[dy, y], &out, attrs)?;
    ctx.set(0, dx);
    Ok(())
}

// ---- tile rules ---------------------------------------------------------------

/// Softmax tiles over the axes before its axis; the axis and those after
/// it are whole in every tile.
pub(super) const SOFTMAX_TILES: TileRule =
    TileRule { space: softmax_tile_space, map: softmax_tile_map, in_place: false };
const SOFTMAX_GRAD_TILES: TileRule = TileRule {
    space: |c| softmax_grad_tile_space(c, true),
    map: |c, s, l| softmax_grad_tile_map(c, true, s, l),
    in_place: false,
};
const SOFTMAX_GRAD_13_TILES: TileRule = TileRule {
    space: |c| softmax_grad_tile_space(c, false),
    map: |c, s, l| softmax_grad_tile_map(c, false, s, l),
    in_place: false,
};

fn softmax_axis(ctx: &KernelCtx, x_slot: usize, old: bool) -> Result<usize> {
    let r = ctx.graph_in_shape(x_slot)?.len();
    ctx.axis(ctx.attr_int("axis", default_axis(old))?, r)
}

fn softmax_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    tile::rows_space(ctx, 0, softmax_axis(ctx, 0, ctx.opset() < 13)?)
}

fn softmax_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    tile::rows_map(ctx, 0, softmax_axis(ctx, 0, ctx.opset() < 13)?, start, len)
}

fn softmax_grad_tile_space(ctx: &KernelCtx, old: bool) -> Result<Tileable> {
    tile::rows_space(ctx, 1, softmax_axis(ctx, 1, old)?)
}

fn softmax_grad_tile_map(ctx: &KernelCtx, old: bool, start: &[usize], len: &[usize]) -> Result<TileMap> {
    tile::rows_map(ctx, 1, softmax_axis(ctx, 1, old)?, start, len)
}
