//! Convolution (regular, depthwise/grouped, pointwise) and ConvGrad.

use super::grad::{self, GradCtx};
use super::kernel::{call, one, to_u32, u, Arg, Kernel, KernelCall, KernelCtx};
use super::tile::{self, Part, Space, TileMap, TileRefusal, TileRule, Tileable};
use super::{ChannelWeights, Ctx, OpDef};
use crate::error::Result;
use crate::ir::{Attr, Graph, TensorId, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Conv",
        explicit_pads: Some(conv_same_pads),
        attrs: &["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"],
        infer: conv,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_conv)),
        grad: Some(conv_grad_rule),
        tile: Some(CONV_TILES),
        // dg_conv_f32 (and dg_conv3d_f32) apply `act` in every path; its tiles split output
        // channels, never the input channels it sums over.
        fuses_act: Some(|_, _| true),
        // Output channel m is W[m] convolved with its group's inputs, plus B[m].
        channel_weights: Some(ChannelWeights { weight: 1, bias: 2 }),
        // A forward Conv is pure: the planner may run it again when the
        // bytes it saves are worth its multiply-adds.
        recompute: Some(super::recompute_copy),
        macs: Some(|g, n| conv_macs(g, n.output(0)?, n.input(1)?)),
        qdq: Some(super::quant::Qdq::Fuse(&super::quant::QDQ_CONV)),
        ..OpDef::BASE
    },
    // ConvGrad(dY, X, W) -> (dX, dW, dB): shapes of X, W and [M].
    OpDef {
        name: "ConvGrad",
        attrs: &["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"],
        infer: conv_grad,
        gradient: true,
        required: &[0, 1, 2],
        kernel: Some(Kernel::Bind(bind_conv_grad)),
        tile: Some(CONV_GRAD_TILES),
        // dX and dW each cost the forward's multiply-adds, when wanted.
        macs: Some(|g, n| {
            let one = conv_macs(g, n.input(0)?, n.input(2)?)?;
            Some(one * n.outputs.iter().take(2).flatten().count() as u64)
        }),
        ..OpDef::BASE
    },
];

/// Multiply-adds of a convolution with output (or output gradient) `y`
/// and weight `w`: every element of `y` sums `w`'s `C/group x kernel`.
pub(super) fn conv_macs(g: &Graph, y: TensorId, w: TensorId) -> Option<u64> {
    let per: usize = g.tensor(w).ty.shape()?.get(1..)?.iter().product();
    Some(g.tensor(y).ty.numel()? as u64 * per as u64)
}

/// Spatial geometry shared by Conv and the pooling operators.
pub struct Window {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    /// Begin pads then end pads, as in ONNX.
    pub pads: Vec<usize>,
}

/// Largest stride, dilation, pad or kernel extent deploygen accepts: far
/// above any map a microcontroller holds, low enough that window arithmetic
/// never overflows.
pub const MAX_EXTENT: i64 = 1 << 20;

/// A positive INTS attribute with one value per spatial dim.
fn per_dim(ctx: &Ctx, name: &str, sp: usize, n: usize, lo: i64, default: usize) -> Result<Vec<usize>> {
    let Some(v) = ctx.node.ints(name)? else { return Ok(vec![default; n]) };
    if v.len() != n {
        return Err(ctx.err(format!(
            "attribute '{name}' = {v:?} must have {n} values ({} for {sp} spatial dims), found {}",
            if n == sp { "one each" } else { "begin and end" },
            v.len()
        )));
    }
    if let Some(bad) = v.iter().find(|&&x| x < lo || x > MAX_EXTENT) {
        return Err(ctx.err(format!("attribute '{name}' = {v:?}: {bad} is out of range {lo}..={MAX_EXTENT}")));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

/// The `kernel_shape` attribute for `sp` spatial dims (`None` when absent).
pub fn kernel_attr(ctx: &Ctx, sp: Option<usize>) -> Result<Option<Vec<usize>>> {
    let Some(k) = ctx.node.ints("kernel_shape")? else { return Ok(None) };
    if k.is_empty() || sp.is_some_and(|sp| k.len() != sp) {
        let want = sp.map_or("at least one value".to_string(), |sp| format!("{sp} values (one per spatial dim)"));
        return Err(ctx.err(format!("attribute 'kernel_shape' = {k:?} must have {want}, found {}", k.len())));
    }
    if let Some(bad) = k.iter().find(|&&x| !(1..=MAX_EXTENT).contains(&x)) {
        return Err(ctx.err(format!("attribute 'kernel_shape' = {k:?}: {bad} is out of range 1..={MAX_EXTENT}")));
    }
    Ok(Some(k.iter().map(|&x| x as usize).collect()))
}

/// Read kernel/stride/dilation/pad attributes for `spatial` dims,
/// resolving `auto_pad`.
pub fn window(ctx: &Ctx, input: &[usize], kernel: Vec<usize>, ceil: bool) -> Result<(Window, Vec<usize>)> {
    let sp = kernel.len();
    if input.len() != sp + 2 {
        return Err(ctx
            .err(format!("input has shape {input:?}, expected N, C and {sp} spatial dims (kernel_shape {kernel:?})")));
    }
    let strides = per_dim(ctx, "strides", sp, sp, 1, 1)?;
    let dilations = per_dim(ctx, "dilations", sp, sp, 1, 1)?;
    let mut pads = per_dim(ctx, "pads", sp, 2 * sp, 0, 0)?;
    let auto = ctx.node.string("auto_pad")?.unwrap_or(AUTO_PAD);
    let mut out = Vec::with_capacity(sp);
    for d in 0..sp {
        let inp = input[d + 2];
        let k = kernel[d];
        let too_large = || ctx.err(format!("spatial dim {d} overflows: input {inp}, kernel {k}"));
        let eff_k = dilations[d]
            .checked_mul(kernel[d].saturating_sub(1))
            .and_then(|x| x.checked_add(1))
            .ok_or_else(too_large)?;
        let o = match auto {
            "SAME_UPPER" | "SAME_LOWER" => {
                let o = inp.div_ceil(strides[d]);
                let total = o
                    .saturating_sub(1)
                    .checked_mul(strides[d])
                    .and_then(|x| x.checked_add(eff_k))
                    .ok_or_else(too_large)?
                    .saturating_sub(inp);
                let (lo, hi) =
                    if auto == "SAME_UPPER" { (total / 2, total - total / 2) } else { (total - total / 2, total / 2) };
                pads[d] = lo;
                pads[d + sp] = hi;
                o
            }
            "VALID" | "NOTSET" | "" => {
                if auto == "VALID" {
                    pads[d] = 0;
                    pads[d + sp] = 0;
                }
                let padded =
                    inp.checked_add(pads[d]).and_then(|x| x.checked_add(pads[d + sp])).ok_or_else(too_large)?;
                if padded < eff_k {
                    return Err(ctx.err(format!(
                        "kernel extent {eff_k} is larger than the padded input {padded} in spatial dim {d}"
                    )));
                }
                let span = padded - eff_k;
                if ceil {
                    // The last window must start inside the input or its
                    // leading padding (ONNX, PyTorch): one starting in the
                    // trailing padding is dropped.
                    let o = span.div_ceil(strides[d]) + 1;
                    if o > 1 && (o - 1) * strides[d] >= inp + pads[d] {
                        o - 1
                    } else {
                        o
                    }
                } else {
                    span / strides[d] + 1
                }
            }
            other => return Err(ctx.err(format!("auto_pad '{other}' is not a valid value"))),
        };
        out.push(o);
    }
    Ok((Window { kernel, strides, dilations, pads }, out))
}

fn conv(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    Ok(vec![match conv_shape(ctx, 0, 1, Some(2))? {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    }])
}

/// The output shape of a convolution of input slot `xi` with weight slot
/// `wi` (and bias `bi`) under the node's attributes; `None` when a shape
/// is unknown. Shared by Conv and ConvGrad, whose dY mirrors it.
/// Whether the node's `auto_pad` is SAME_UPPER or SAME_LOWER.
pub(super) fn auto_same(ctx: &Ctx) -> Result<bool> {
    Ok(matches!(ctx.node.string("auto_pad")?, Some("SAME_UPPER" | "SAME_LOWER")))
}

/// `pads` of a window under `auto_pad = SAME_*` for input `x`.
pub(super) fn same_pads(ctx: &Ctx, x: &[usize], kernel: Vec<usize>) -> Result<Option<Vec<i64>>> {
    let (w, _) = window(ctx, x, kernel, false)?;
    Ok(Some(w.pads.iter().map(|&p| p as i64).collect()))
}

/// Conv's SAME padding as explicit pads (kernel from the weight).
fn conv_same_pads(ctx: &Ctx) -> Result<Option<Vec<i64>>> {
    if !auto_same(ctx)? {
        return Ok(None);
    }
    let (Some(x), Some(w)) = (ctx.shape(0)?, ctx.shape(1)?) else { return Ok(None) };
    if w.len() < 3 {
        return Ok(None);
    }
    let kernel = kernel_attr(ctx, Some(w.len() - 2))?.unwrap_or_else(|| w[2..].to_vec());
    same_pads(ctx, &x, kernel)
}

pub(super) fn conv_shape(ctx: &Ctx, xi: usize, wi: usize, bi: Option<usize>) -> Result<Option<Vec<usize>>> {
    let (Some(x), Some(w)) = (ctx.shape(xi)?, ctx.shape(wi)?) else {
        kernel_attr(ctx, None)?;
        ctx.node.int_in("group", GROUP, 1, MAX_EXTENT)?;
        return Ok(None);
    };
    if w.len() != x.len() || w.len() < 3 {
        return Err(ctx.err(format!("weight shape {w:?} does not match input shape {x:?}")));
    }
    let group = ctx.node.int_in("group", GROUP, 1, MAX_EXTENT)?;
    let group_ok = (w[1] as u128) * (group as u128) == x[1] as u128 && (w[0] as u128).is_multiple_of(group as u128);
    if !group_ok {
        return Err(ctx.err(format!(
            "attribute 'group' = {group} does not fit: input channels {} must be group x weight {w:?}[1] and \
             the {} filters must divide into {group} groups",
            x[1], w[0]
        )));
    }
    let kernel = kernel_attr(ctx, Some(w.len() - 2))?.unwrap_or_else(|| w[2..].to_vec());
    if kernel != w[2..] {
        return Err(ctx.err(format!("kernel_shape {kernel:?} disagrees with weight shape {w:?}")));
    }
    if let Some(bi) = bi.filter(|&b| ctx.has(b)) {
        if let Some(b) = ctx.shape(bi)? {
            if b != [w[0]] {
                return Err(ctx.err(format!("bias shape {b:?} should be [{}]", w[0])));
            }
        }
    }
    let (_, spatial) = window(ctx, &x, kernel, false)?;
    let mut out = vec![x[0], w[0]];
    out.extend(spatial);
    Ok(Some(out))
}

/// ConvGrad carries the forward Conv's attributes: they obey the forward
/// rules, and dY must have the shape the forward convolution of X with W
/// gives.
fn conv_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if let (Some(y), Some(dy)) = (conv_shape(ctx, 1, 2, None)?, ctx.shape(0)?) {
        if y != dy {
            return Err(ctx.err(format!(
                "dY (input 0) has shape {dy:?} but the forward convolution of X (input 1) with W (input 2) under \
                 these attributes gives {y:?}"
            )));
        }
    }
    let dx = ctx.same_as(1)?;
    let dw = ctx.same_as(2)?;
    let db = match ctx.shape(2)? {
        Some(w) if !w.is_empty() => TensorType::new(dw.dtype, &[w[0]]),
        _ => TensorType::unknown(dw.dtype),
    };
    Ok(vec![dx, dw, db])
}

/// The window operators' attribute defaults (ONNX's): convolutions'
/// `group`, and `auto_pad` of convolutions and pools.
pub(super) const GROUP: i64 = 1;
pub(super) const AUTO_PAD: &str = "NOTSET";

// ---- kernel bindings --------------------------------------------------------

/// The geometry of a 1-D or 2-D convolution or pool, NCHW.
pub(super) struct Geom {
    pub(super) batch: usize,
    pub(super) in_c: usize,
    pub(super) in_h: usize,
    pub(super) in_w: usize,
    pub(super) out_c: usize,
    pub(super) out_h: usize,
    pub(super) out_w: usize,
    pub(super) k_h: usize,
    pub(super) k_w: usize,
    pub(super) stride: [usize; 2],
    pub(super) dil: [usize; 2],
    /// top, left, bottom, right
    pub(super) pads: [usize; 4],
}

/// The strides, dilations and pads (begin then end, as in ONNX) of a
/// window over `sp` spatial dims, from the node's attributes.
fn window_params(ctx: &KernelCtx, sp: usize) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    if let Some(p) = ctx.attr_str("auto_pad")? {
        if p != "NOTSET" && p != "VALID" {
            return Err(ctx.err(format!("auto_pad '{p}' is not supported: give explicit pads")));
        }
    }
    let get = |name: &str, n: usize, default: i64| -> Result<Vec<usize>> {
        let v = ctx.attr_ints(name)?.unwrap_or_else(|| vec![default; n]);
        if v.len() != n {
            return Err(ctx.err(format!("attribute '{name}' has {} values, expected {n}", v.len())));
        }
        v.iter().map(|&x| to_u32(ctx, name, x)).collect()
    };
    Ok((get("strides", sp, 1)?, get("dilations", sp, 1)?, get("pads", 2 * sp, 0)?))
}

/// Whether `x` is an N, C, D, H, W input: a 3-D window, bound to the
/// kernels of `dg_window3d_args_t` (runtime/kernels/window3d.c).
pub(super) fn is_3d(x: &[usize]) -> bool {
    x.len() == 5
}

/// The shape fields of `dg_window3d_args_t` for input `x`, output `y`
/// (NCDHW) and the spatial `kernel`.
pub(super) fn window3d_fields(
    ctx: &KernelCtx,
    x: &[usize],
    y: &[usize],
    kernel: &[usize],
) -> Result<Vec<(&'static str, Arg)>> {
    if x.len() != 5 || y.len() != 5 || kernel.len() != 3 {
        return Err(ctx.err(format!("a 3-D window needs N, C, D, H, W (input {x:?}, output {y:?}, kernel {kernel:?})")));
    }
    let (s, d, p) = window_params(ctx, 3)?;
    Ok(vec![
        ("batch", u(x[0])),
        ("in_c", u(x[1])),
        ("in_d", u(x[2])),
        ("in_h", u(x[3])),
        ("in_w", u(x[4])),
        ("out_c", u(y[1])),
        ("out_d", u(y[2])),
        ("out_h", u(y[3])),
        ("out_w", u(y[4])),
        ("k_d", u(kernel[0])),
        ("k_h", u(kernel[1])),
        ("k_w", u(kernel[2])),
        ("stride_d", u(s[0])),
        ("stride_h", u(s[1])),
        ("stride_w", u(s[2])),
        ("dil_d", u(d[0])),
        ("dil_h", u(d[1])),
        ("dil_w", u(d[2])),
        ("pad_front", u(p[0])),
        ("pad_top", u(p[1])),
        ("pad_left", u(p[2])),
        ("pad_back", u(p[3])),
        ("pad_bottom", u(p[4])),
        ("pad_right", u(p[5])),
    ])
}

/// The `dg_window3d_args_t` shape fields of a 1-D or 2-D window: depth 1
/// (and height 1 in 1-D), from its 2-D geometry.
pub(super) fn window3d_fields_of(g: &Geom) -> Vec<(&'static str, Arg)> {
    vec![
        ("batch", u(g.batch)),
        ("in_c", u(g.in_c)),
        ("in_d", u(1)),
        ("in_h", u(g.in_h)),
        ("in_w", u(g.in_w)),
        ("out_c", u(g.out_c)),
        ("out_d", u(1)),
        ("out_h", u(g.out_h)),
        ("out_w", u(g.out_w)),
        ("k_d", u(1)),
        ("k_h", u(g.k_h)),
        ("k_w", u(g.k_w)),
        ("stride_d", u(1)),
        ("stride_h", u(g.stride[0])),
        ("stride_w", u(g.stride[1])),
        ("dil_d", u(1)),
        ("dil_h", u(g.dil[0])),
        ("dil_w", u(g.dil[1])),
        ("pad_front", u(0)),
        ("pad_top", u(g.pads[0])),
        ("pad_left", u(g.pads[1])),
        ("pad_back", u(0)),
        ("pad_bottom", u(g.pads[2])),
        ("pad_right", u(g.pads[3])),
    ]
}

/// `x` the input, `y` the output (both full NCHW / NCL shapes), `kernel`
/// the spatial kernel size.
pub(super) fn geom(ctx: &KernelCtx, x: &[usize], y: &[usize], kernel: &[usize]) -> Result<Geom> {
    let sp = x.len().saturating_sub(2);
    if !(1..=2).contains(&sp) || y.len() != x.len() || kernel.len() != sp {
        return Err(ctx.err(format!("only 1-D and 2-D windows are supported (input {x:?}, output {y:?})")));
    }
    let (strides, dil, pads) = window_params(ctx, sp)?;
    let two = |v: &[usize], d: usize| {
        if sp == 1 {
            if d == 0 {
                1
            } else {
                v[0]
            }
        } else {
            v[d]
        }
    };
    let (pt, pl, pb, pr) = if sp == 1 { (0, pads[0], 0, pads[1]) } else { (pads[0], pads[1], pads[2], pads[3]) };
    Ok(Geom {
        batch: x[0],
        in_c: x[1],
        in_h: if sp == 1 { 1 } else { x[2] },
        in_w: x[x.len() - 1],
        out_c: y[1],
        out_h: if sp == 1 { 1 } else { y[2] },
        out_w: y[y.len() - 1],
        k_h: two(kernel, 0),
        k_w: two(kernel, 1),
        stride: [two(&strides, 0), two(&strides, 1)],
        dil: [two(&dil, 0), two(&dil, 1)],
        pads: [pt, pl, pb, pr],
    })
}

pub(super) fn conv_fields(g: &Geom, group: usize) -> Vec<(&'static str, Arg)> {
    vec![
        ("batch", u(g.batch)),
        ("in_c", u(g.in_c)),
        ("in_h", u(g.in_h)),
        ("in_w", u(g.in_w)),
        ("out_c", u(g.out_c)),
        ("out_h", u(g.out_h)),
        ("out_w", u(g.out_w)),
        ("k_h", u(g.k_h)),
        ("k_w", u(g.k_w)),
        ("stride_h", u(g.stride[0])),
        ("stride_w", u(g.stride[1])),
        ("dil_h", u(g.dil[0])),
        ("dil_w", u(g.dil[1])),
        ("pad_top", u(g.pads[0])),
        ("pad_left", u(g.pads[1])),
        ("group", u(group)),
    ]
}

pub(super) fn bind_conv(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let (x, w, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let group = to_u32(ctx, "group", ctx.attr_int("group", GROUP)?)?;
    let mut fields = vec![("x", ctx.inp(0)?), ("w", ctx.inp(1)?), ("b", ctx.opt_in(2)), ("y", ctx.out(0)?)];
    let act = ctx.node.marks.fused_act.unwrap_or(0);
    let (func, args) = if is_3d(&x) {
        fields.extend(window3d_fields(ctx, &x, &y, &w[2..])?);
        fields.push(("group", u(group)));
        ("dg_conv3d_f32", "dg_window3d_args_t")
    } else {
        fields.extend(conv_fields(&geom(ctx, &x, &y, &w[2..])?, group));
        ("dg_conv_f32", "dg_conv_args_t")
    };
    if act != 0 {
        fields.push(("act", u(act as usize)));
    }
    one(call(func, args, fields))
}

pub(super) fn bind_conv_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    // ConvGrad(dY, X, W) -> dX, dW, dB
    let (dy, x, w) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.in_shape(2)?);
    let g = geom(ctx, &x, &dy, &w[2..])?;
    let group = to_u32(ctx, "group", ctx.attr_int("group", GROUP)?)?;
    let base = |c: &KernelCtx| -> Result<Vec<(&'static str, Arg)>> {
        Ok(vec![
            ("x", c.inp(1)?),
            ("w", c.inp(2)?),
            ("dy", c.inp(0)?),
            ("dx", c.opt_out(0)),
            ("dw", c.opt_out(1)),
            ("db", c.opt_out(2)),
        ])
    };
    let mut calls = vec![];
    for (slot, func) in [(0, "dg_conv_grad_dx_f32"), (1, "dg_conv_grad_dw_f32"), (2, "dg_conv_grad_db_f32")] {
        if ctx.has_out(slot) {
            let mut fields = base(ctx)?;
            fields.extend(conv_fields(&g, group));
            if slot > 0 && ctx.tile.is_some() {
                // dW and dB: a later batch tile adds to the earlier ones.
                let accumulate = ctx.tile.as_ref().is_some_and(|t| t.accumulate);
                fields.push(("accumulate", u(usize::from(accumulate))));
            }
            calls.push(call(func, "dg_conv_args_t", fields));
        }
    }
    Ok(KernelCall { calls, ..Default::default() })
}

/// ConvGrad tiles over the batch: a tile's samples give their dX alone and
/// add their share to dW and dB, which stay whole in L1 across the tiles
/// (the kernels' `accumulate`; taken in order, the bits of one call). With
/// a batch of 1 it tiles over input channels instead (the space is dX's
/// shape): dY stays whole, a tile takes those channels of X, W's columns
/// and gives those of dX and dW, each a sum over every output channel, so
/// no tile needs partial sums; dB (every tile's, the same) stays whole.
/// Depthwise, a tile's channels are its output channels too (dY, W and dB
/// take them; the group is the tile's channel count).
pub(super) const CONV_GRAD_TILES: TileRule =
    TileRule { space: conv_grad_tile_space, map: conv_grad_tile_map, in_place: false };

/// The batch splits (`Batch`), or with a batch of 1 the input channels.
#[derive(PartialEq)]
enum GradSplit {
    Batch,
    Channels { depthwise: bool },
}

fn conv_grad_split(ctx: &KernelCtx) -> Result<Tileable<GradSplit>> {
    let dy = ctx.graph_in_shape(0)?;
    if !(3..=4).contains(&dy.len()) {
        return Ok(Err(TileRefusal::NotAMap { operand: "dY", shape: dy }));
    }
    if dy[0] >= 2 {
        return Ok(Ok(GradSplit::Batch));
    }
    let x = ctx.graph_in_shape(1)?;
    let group = ctx.attr_int("group", GROUP)?;
    let depthwise = group > 1 && x.get(1) == Some(&(group as usize)) && dy.get(1) == Some(&(group as usize));
    if group != 1 && !depthwise {
        return Ok(Err(TileRefusal::GroupedBatchOfOne(group)));
    }
    Ok(Ok(GradSplit::Channels { depthwise }))
}

fn conv_grad_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    Ok(match conv_grad_split(ctx)? {
        Err(why) => Err(why),
        Ok(GradSplit::Batch) => {
            let dy = ctx.graph_in_shape(0)?;
            Ok(Space { split: (0..dy.len()).map(|d| d == 0).collect(), dims: dy })
        }
        Ok(GradSplit::Channels { .. }) => {
            let x = ctx.graph_in_shape(1)?;
            Ok(Space { split: (0..x.len()).map(|d| d == 1).collect(), dims: x })
        }
    })
}

/// The box of `shape` taking `[start, start + len)` on `axis` (whole when
/// that is the whole axis).
fn axis_part(shape: Vec<usize>, axis: usize, start: usize, len: usize) -> Part {
    if len == shape[axis] {
        return Part::Whole;
    }
    let mut s = vec![0; shape.len()];
    s[axis] = start;
    let mut l = shape;
    l[axis] = len;
    Part::Box { start: s, len: l }
}

fn conv_grad_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let split = match conv_grad_split(ctx)? {
        Ok(s) => s,
        Err(why) => return Err(ctx.err(why.to_string())),
    };
    let mut m = TileMap::default();
    match split {
        GradSplit::Batch => {
            let batch = |shape: Vec<usize>| axis_part(shape, 0, start[0], len[0]);
            m.inputs =
                vec![Some(batch(ctx.graph_in_shape(0)?)), Some(batch(ctx.graph_in_shape(1)?)), Some(Part::Whole)];
            m.accumulate = start[0] > 0;
        }
        GradSplit::Channels { depthwise } => {
            let (c0, lc) = (start[1], len[1]);
            let chans = |shape: Vec<usize>, axis: usize| axis_part(shape, axis, c0, lc);
            // W is [M, C / group, kH, kW]: depthwise its rows, else its columns.
            let w_axis = if depthwise { 0 } else { 1 };
            let dy = if depthwise { chans(ctx.graph_in_shape(0)?, 1) } else { Part::Whole };
            m.inputs =
                vec![Some(dy), Some(chans(ctx.graph_in_shape(1)?, 1)), Some(chans(ctx.graph_in_shape(2)?, w_axis))];
            if depthwise && lc != ctx.graph_in_shape(1)?[1] {
                m.attrs.push(("group".into(), Attr::Int(lc as i64)));
            }
        }
    }
    for slot in 0..ctx.node.outputs.len() {
        m.outputs.push(match (ctx.node.output(slot), &split) {
            (None, _) => None,
            (Some(_), GradSplit::Batch) if slot == 0 => Some(axis_part(ctx.graph_out_shape(0)?, 0, start[0], len[0])),
            (Some(_), GradSplit::Batch) => Some(Part::Whole),
            (Some(_), GradSplit::Channels { depthwise }) => Some(match slot {
                0 => axis_part(ctx.graph_out_shape(0)?, 1, start[1], len[1]),
                1 => axis_part(ctx.graph_out_shape(1)?, if *depthwise { 0 } else { 1 }, start[1], len[1]),
                _ if *depthwise => axis_part(ctx.graph_out_shape(slot)?, 0, start[1], len[1]),
                _ => Part::Whole,
            }),
        });
    }
    Ok(m)
}

// ---- gradient rules ------------------------------------------------------------------------

/// ConvGrad(dY, X, W) -> dX, dW, dB with the forward attributes; only the
/// outputs needed are computed.
fn conv_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    let (dy, x, w) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    refuse_3d_grad(ctx, x, "Conv")?;
    let outs = ctx.dx_names(&[0, 1, 2]);
    let attrs = ctx.same_attrs();
    let g = ctx.emit("ConvGrad", grad::MS, &[Some(dy), Some(x), Some(w)], &outs, attrs)?;
    for (slot, t) in g.into_iter().enumerate() {
        if let Some(t) = t {
            ctx.set(slot, t);
        }
    }
    Ok(())
}

/// Forward inference only for 3-D windows: their gradient kernels are
/// 1-D and 2-D.
pub(super) fn refuse_3d_grad(ctx: &GradCtx, x: crate::ir::TensorId, op: &str) -> Result<()> {
    let xs = ctx.shape(x)?;
    if is_3d(&xs) {
        return Err(ctx.err(format!(
            "the 3-D form of {op} (input {xs:?}) has no gradient rule: 3-D windows run forward (inference) only"
        )));
    }
    Ok(())
}

// ---- tile rules ---------------------------------------------------------------

/// Conv tiles over batch, output channels and output rows (the first
/// spatial axis, L for 1-D): the input rows carry the halo; a tile of
/// output channels takes those filters and biases (and, depthwise, those
/// input channels); a grouped Conv keeps its channels whole.
pub(super) const CONV_TILES: TileRule = TileRule { space: conv_tile_space, map: conv_tile_map, in_place: false };

/// Whether output channels split: plain Conv, or depthwise (each output
/// channel reads its own input channel).
fn conv_channels(ctx: &KernelCtx) -> Result<(bool, bool)> {
    let group = ctx.attr_int("group", GROUP)?;
    let (x, y) = (ctx.graph_in_shape(0)?, ctx.graph_out_shape(0)?);
    let depthwise = group > 1 && x.get(1) == Some(&(group as usize)) && y.get(1) == Some(&(group as usize));
    Ok((group == 1 || depthwise, depthwise))
}

fn conv_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    tile::window_space(ctx, conv_channels(ctx)?.0)
}

fn conv_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let w = ctx.graph_in_shape(1)?;
    let (_, depthwise) = conv_channels(ctx)?;
    let mut m = tile::window_map(ctx, &w[2..], depthwise, start, len)?;
    if len[1] != w[0] {
        let mut ws = vec![0; w.len()];
        let mut wl = w.clone();
        ws[0] = start[1];
        wl[0] = len[1];
        m.inputs[1] = Some(Part::Box { start: ws, len: wl });
        if let Some(Some(b)) = m.inputs.get_mut(2) {
            *b = Part::Box { start: vec![start[1]], len: vec![len[1]] };
        }
        if depthwise {
            m.attrs.push(("group".into(), Attr::Int(len[1] as i64)));
        }
    }
    Ok(m)
}
