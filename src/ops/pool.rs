//! Pooling and its gradients.

use super::conv::{
    geom, is_3d, kernel_attr, refuse_3d_grad, window, window3d_fields, window3d_fields_of, Geom, MAX_EXTENT,
};
use super::grad::{self, GradCtx};
use super::kernel::{call, numel, one, to_u32, u, Arg, Kernel, KernelCall, KernelCtx};
use super::tile::{self, TileMap, TileRefusal, TileRule, Tileable};
use super::{Ctx, OpDef, Recompute};
use crate::error::Result;
use crate::ir::{DType, Graph, Node, TensorType};

pub const OPS: &[OpDef] = &[
    // MaxPool -> (Y, Indices); training graphs need Indices for MaxPoolGrad.
    OpDef {
        name: "MaxPool",
        explicit_pads: Some(pool_same_pads),
        attrs: &["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"],
        infer: max_pool,
        kernel: Some(Kernel::Bind(bind_maxpool)),
        grad: Some(max_pool_grad_rule),
        tile: Some(POOL_TILES),
        recompute: Some(max_pool_recompute),
        qdq: Some(super::quant::Qdq::Passthrough),
        ..OpDef::BASE
    },
    // MaxPoolGrad(dY, Indices) -> dX with the pooled input's shape.
    OpDef {
        name: "MaxPoolGrad",
        attrs: &["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"],
        infer: max_pool_grad,
        gradient: true,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_maxpool_grad)),
        ..OpDef::BASE
    },
    OpDef {
        name: "AveragePool",
        explicit_pads: Some(pool_same_pads),
        attrs: &["auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"],
        infer: avg_pool,
        kernel: Some(Kernel::Bind(bind_avgpool)),
        grad: Some(avg_pool_grad_rule),
        tile: Some(POOL_TILES),
        ..OpDef::BASE
    },
    // AveragePoolGrad(dY) -> dX; the input shape is not local, see below.
    OpDef {
        name: "AveragePoolGrad",
        attrs: &["auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"],
        infer: avg_pool_grad,
        gradient: true,
        kernel: Some(Kernel::Bind(bind_avgpool_grad)),
        ..OpDef::BASE
    },
    OpDef {
        name: "GlobalAveragePool",
        infer: global_pool,
        fixed_1x1: Some(always_1x1),
        kernel: Some(Kernel::Named(bind_global_pool, "dg_global_avgpool_f32")),
        tile: Some(GLOBAL_POOL_TILES),
        grad: Some(global_avg_pool_grad_rule),
        qdq: Some(super::quant::Qdq::Fuse(&super::quant::QDQ_GLOBAL_AVERAGE_POOL)),
        ..OpDef::BASE
    },
    OpDef {
        name: "GlobalMaxPool",
        infer: global_pool,
        fixed_1x1: Some(always_1x1),
        kernel: Some(Kernel::Named(bind_global_pool, "dg_global_maxpool_f32")),
        tile: Some(GLOBAL_POOL_TILES),
        grad: Some(global_max_pool_grad),
        ..OpDef::BASE
    },
    // GlobalAveragePoolGrad(dY, X) -> dX (shape of X).
    OpDef {
        name: "GlobalAveragePoolGrad",
        infer: global_pool_grad,
        gradient: true,
        kernel: Some(Kernel::Named(bind_global_pool_grad, "dg_global_avgpool_grad_f32")),
        tile: Some(GLOBAL_POOL_GRAD_TILES),
        ..OpDef::BASE
    },
];

/// The pools' attribute defaults (ONNX's), for shape rules and bindings.
const CEIL_MODE: bool = false;
const COUNT_INCLUDE_PAD: bool = false;
const STORAGE_ORDER: i64 = 0;

/// Global pools tile over batch and channels: each (sample, channel) map
/// pools alone, its whole map in the tile (X is input 0 forward, input 1
/// of the gradient).
const GLOBAL_POOL_TILES: TileRule =
    TileRule { space: |c| tile::rows_space(c, 0, 2), map: |c, s, l| tile::rows_map(c, 0, 2, s, l), in_place: false };
const GLOBAL_POOL_GRAD_TILES: TileRule =
    TileRule { space: |c| tile::rows_space(c, 1, 2), map: |c, s, l| tile::rows_map(c, 1, 2, s, l), in_place: false };

/// Global pools make a 1×1 map whatever the input resolution.
fn always_1x1(_: &Graph, _: &Node) -> bool {
    true
}

/// `kernel_shape`, required, with one value per spatial dim of `x` when
/// its rank is known.
fn kernel_shape(ctx: &Ctx, x: Option<&[usize]>) -> Result<Vec<usize>> {
    let sp = x.map(|x| x.len().saturating_sub(2));
    kernel_attr(ctx, sp)?.ok_or_else(|| ctx.err("attribute 'kernel_shape' is required"))
}

/// The pooling attributes deploygen does not compute with, type-checked.
fn pool_flags(ctx: &Ctx) -> Result<bool> {
    ctx.node.flag("count_include_pad", COUNT_INCLUDE_PAD)?;
    ctx.node.int_in("storage_order", STORAGE_ORDER, 0, 1)?;
    ctx.node.flag("ceil_mode", CEIL_MODE)
}

/// The pooled shape of `x` under the node's attributes.
fn pooled_shape(ctx: &Ctx, x: &[usize]) -> Result<Vec<usize>> {
    let ceil = pool_flags(ctx)?;
    let kernel = kernel_shape(ctx, Some(x))?;
    // As onnxruntime: a window of padding only has no value to pool.
    let sp = kernel.len();
    let pads = per_dim(ctx, "pads", 2 * sp, 0)?;
    if let Some(d) = (0..sp).find(|&d| pads[d] >= kernel[d] || pads[d + sp] >= kernel[d]) {
        return Err(ctx.err(format!(
            "attribute 'pads' {pads:?}: a pad must be smaller than the kernel ({kernel:?}; spatial axis {d}); \
             onnxruntime refuses it too (\"Pad should be smaller than kernel\")"
        )));
    }
    let (_, spatial) = window(ctx, x, kernel, ceil)?;
    let mut out = x[..2].to_vec();
    out.extend(spatial);
    Ok(out)
}

/// A pool's SAME padding as explicit pads.
fn pool_same_pads(ctx: &Ctx) -> Result<Option<Vec<i64>>> {
    if !super::conv::auto_same(ctx)? {
        return Ok(None);
    }
    let Some(x) = ctx.shape(0)? else { return Ok(None) };
    super::conv::same_pads(ctx, &x, kernel_shape(ctx, Some(&x))?)
}

fn pooled(ctx: &Ctx) -> Result<Option<Vec<usize>>> {
    let Some(x) = ctx.shape(0)? else {
        kernel_shape(ctx, None)?;
        pool_flags(ctx)?;
        return Ok(None);
    };
    pooled_shape(ctx, &x).map(Some)
}

/// A pooling gradient's dY must have the shape the forward pool of its
/// input `x` gives under the same attributes.
fn check_mirror(ctx: &Ctx, x: &[usize], dy: Option<&[usize]>) -> Result<()> {
    let y = pooled_shape(ctx, x)?;
    match dy {
        Some(dy) if dy != y => Err(ctx.err(format!(
            "dY (input 0) has shape {dy:?} but the forward pool of its input {x:?} under these attributes gives {y:?}"
        ))),
        _ => Ok(()),
    }
}

fn max_pool(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    Ok(match pooled(ctx)? {
        Some(s) => vec![TensorType::new(dtype, &s), TensorType::new(DType::I64, &s)],
        None => vec![TensorType::unknown(dtype), TensorType::unknown(DType::I64)],
    })
}

fn avg_pool(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    Ok(vec![match pooled(ctx)? {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    }])
}

/// The pooled input's shape is found through the forward MaxPool that
/// produced the Indices.
fn max_pool_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let fwd =
        ctx.node.input(1).and_then(|t| ctx.graph.producer(t)).map(|n| ctx.graph.node(n)).filter(|n| n.op == "MaxPool");
    if let Some(x) = fwd.and_then(|n| n.input(0)) {
        let mut t = ctx.graph.tensor(x).ty.clone();
        if let Some(xs) = t.shape() {
            check_mirror(ctx, &xs, ctx.shape(0)?.as_deref())?;
        }
        t.dtype = dtype;
        return Ok(vec![t]);
    }
    kernel_shape(ctx, None)?;
    pool_flags(ctx)?;
    Ok(vec![TensorType::unknown(dtype)])
}

/// AveragePoolGrad has no link to its forward input. The input extent is
/// `(out-1)*stride + kernel - pads` when the window tiles it exactly; if
/// the file declares the shape (value_info), import checks it against this.
fn avg_pool_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(dy) = ctx.shape(0)? else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let k = kernel_shape(ctx, Some(&dy))?;
    let sp = k.len();
    let auto = ctx.node.string("auto_pad")?.unwrap_or(super::conv::AUTO_PAD);
    if !matches!(auto, "NOTSET" | "VALID" | "") {
        // SAME_*: the input extent is ambiguous; the forward rule still
        // checks the attributes once the file declares it.
        pool_flags(ctx)?;
        return Ok(vec![TensorType::unknown(dtype)]);
    }
    let strides = per_dim(ctx, "strides", sp, 1)?;
    let pads = per_dim(ctx, "pads", 2 * sp, 0)?;
    let mut out = dy[..2].to_vec();
    for d in 0..sp {
        let full = (dy[d + 2].max(1) - 1) as u128 * strides[d] as u128 + k[d] as u128;
        let pad = (pads[d] + pads[d + sp]) as u128;
        if full <= pad || full - pad > usize::MAX as u128 {
            return Err(ctx.err(format!(
                "attributes kernel_shape {k:?}, strides {strides:?}, pads {pads:?} leave no input extent for dY {dy:?} \
                 in spatial dim {d}"
            )));
        }
        out.push((full - pad) as usize);
    }
    check_mirror(ctx, &out, Some(&dy))?;
    Ok(vec![TensorType::new(dtype, &out)])
}

/// A per-dim INTS attribute (range-checked by `window` afterwards), for
/// the input-extent arithmetic of AveragePoolGrad.
fn per_dim(ctx: &Ctx, name: &str, n: usize, default: i64) -> Result<Vec<usize>> {
    let v = ctx.node.ints(name)?.map(<[i64]>::to_vec).unwrap_or_else(|| vec![default; n]);
    if v.len() != n || v.iter().any(|&x| !(default..=MAX_EXTENT).contains(&x)) {
        return Err(ctx.err(format!(
            "attribute '{name}' = {v:?} must have {n} values in {default}..={MAX_EXTENT}, found {}",
            v.len()
        )));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

fn global_pool(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    Ok(vec![match ctx.shape(0)? {
        Some(x) if x.len() >= 3 => {
            let mut s = x[..2].to_vec();
            s.extend(std::iter::repeat_n(1, x.len() - 2));
            TensorType::new(dtype, &s)
        }
        Some(x) => return Err(ctx.err(format!("input shape {x:?} needs N, C and spatial dims"))),
        None => TensorType::unknown(dtype),
    }])
}

fn global_pool_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    if ctx.has(1) {
        return Ok(vec![ctx.same_as(1)?]);
    }
    Ok(vec![TensorType::unknown(ctx.dtype(0)?)])
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn pool_fields(g: &Geom) -> Vec<(&'static str, Arg)> {
    vec![
        ("batch", u(g.batch)),
        ("channels", u(g.in_c)),
        ("in_h", u(g.in_h)),
        ("in_w", u(g.in_w)),
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
        ("pad_bottom", u(g.pads[2])),
        ("pad_right", u(g.pads[3])),
    ]
}

pub(super) fn kernel_dims(ctx: &KernelCtx) -> Result<Vec<usize>> {
    let k = ctx.attr_ints("kernel_shape")?.ok_or_else(|| ctx.err("attribute 'kernel_shape' is required"))?;
    k.iter().map(|&v| to_u32(ctx, "kernel_shape", v)).collect()
}

/// MaxPool's integer forms (1-D and 2-D, in `dg_pool_typed_args_t`):
/// input type and kernel.
const MAXPOOL_INT_FORMS: &[(DType, &str)] = &[(DType::I8, "dg_maxpool_i8"), (DType::U8, "dg_maxpool_u8")];

/// MaxPool -> Y and, when wanted, its int64 Indices (flat positions in the
/// whole input): `dg_maxpool_f32` (1-D, 2-D) or `dg_maxpool3d_f32`; on
/// int8 and uint8 `dg_maxpool_i8` / `dg_maxpool_u8` (1-D, 2-D).
pub(super) fn bind_maxpool(ctx: &KernelCtx) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    let int_form = MAXPOOL_INT_FORMS.iter().find(|f| f.0 == d).map(|f| f.1);
    if int_form.is_none() && d != DType::F32 {
        let known: Vec<String> = MAXPOOL_INT_FORMS.iter().map(|f| f.0.to_string()).collect();
        return Err(ctx.err(format!("input 0 is {d}; the kernel binding computes in f32, {} only", known.join(", "))));
    }
    let (x, y) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    if ctx.has_out(1) && ctx.out_dtype(1)? != DType::I64 {
        return Err(ctx.err("MaxPool indices must be int64"));
    }
    let storage_order = ctx.attr_int("storage_order", STORAGE_ORDER)? != 0;
    let mut fields = vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("indices", ctx.opt_out(1))];
    if let Some(func) = int_form {
        if is_3d(&x) {
            return Err(ctx.err(format!("3-D MaxPool on {d}: {func} pools 1-D and 2-D windows only")));
        }
        fields.extend(pool_fields(&geom(ctx, &x, &y, &kernel_dims(ctx)?)?));
        fields.push(("storage_order", u(usize::from(storage_order && ctx.has_out(1)))));
        return one(call(func, "dg_pool_typed_args_t", fields));
    }
    if is_3d(&x) {
        if storage_order && ctx.has_out(1) {
            return Err(ctx.err("3-D MaxPool storage_order=1: dg_maxpool3d_f32 gives row-major indices only"));
        }
        fields.extend(window3d_fields(ctx, &x, &y, &kernel_dims(ctx)?)?);
        return one(call("dg_maxpool3d_f32", "dg_window3d_args_t", fields));
    }
    fields.extend(pool_fields(&geom(ctx, &x, &y, &kernel_dims(ctx)?)?));
    if storage_order && ctx.has_out(1) {
        fields.push(("storage_order", u(1)));
    }
    one(call("dg_maxpool_f32", "dg_pool_args_t", fields))
}

/// AveragePool: `dg_avgpool_f32` (1-D, 2-D without dilations) or
/// `dg_avgpool3d_f32` (3-D, and 1-D / 2-D with dilations as depth 1: a
/// plain walk over each window's taps).
pub(super) fn bind_avgpool(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let (x, y) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let mut fields = vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?)];
    let include_pad = ("count_include_pad", u(usize::from(ctx.attr_flag("count_include_pad", COUNT_INCLUDE_PAD)?)));
    if is_3d(&x) {
        fields.extend(window3d_fields(ctx, &x, &y, &kernel_dims(ctx)?)?);
        fields.push(include_pad);
        return one(call("dg_avgpool3d_f32", "dg_window3d_args_t", fields));
    }
    let g = geom(ctx, &x, &y, &kernel_dims(ctx)?)?;
    if g.dil != [1, 1] {
        fields.extend(window3d_fields_of(&g));
        fields.push(include_pad);
        return one(call("dg_avgpool3d_f32", "dg_window3d_args_t", fields));
    }
    fields.extend(pool_fields(&g));
    fields.push(include_pad);
    one(call("dg_avgpool_f32", "dg_pool_args_t", fields))
}

pub(super) fn bind_maxpool_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    // MaxPoolGrad(dY, Indices) -> dX
    if ctx.in_dtype(1)? != DType::I64 {
        return Err(ctx.err("MaxPoolGrad indices must be int64"));
    }
    if ctx.attr_int("storage_order", STORAGE_ORDER)? != 0 {
        return Err(
            ctx.err("MaxPoolGrad reads row-major indices: a MaxPool with storage_order=1 has no gradient kernel")
        );
    }
    let (dy, dx) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let sp = dx.len().saturating_sub(2);
    let k = ctx
        .attr_ints("kernel_shape")?
        .map_or(Ok(vec![1; sp]), |v| v.iter().map(|&x| to_u32(ctx, "kernel_shape", x)).collect::<Result<Vec<_>>>())?;
    let g = geom(ctx, &dx, &dy, &k)?;
    let mut fields = vec![("dy", ctx.inp(0)?), ("indices_in", ctx.inp(1)?), ("dx", ctx.out(0)?)];
    fields.extend(pool_fields(&g));
    one(call("dg_maxpool_grad_f32", "dg_pool_args_t", fields))
}

pub(super) fn bind_avgpool_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let (dy, dx) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let g = geom(ctx, &dx, &dy, &kernel_dims(ctx)?)?;
    if g.dil != [1, 1] {
        return Err(ctx.err("AveragePoolGrad with dilations is not supported by the kernel"));
    }
    let mut fields = vec![("dy", ctx.inp(0)?), ("dx", ctx.out(0)?)];
    fields.extend(pool_fields(&g));
    fields.push(("count_include_pad", u(usize::from(ctx.attr_flag("count_include_pad", COUNT_INCLUDE_PAD)?))));
    one(call("dg_avgpool_grad_f32", "dg_pool_args_t", fields))
}

/// A global pool `func(x) -> y`.
pub(super) fn bind_global_pool(ctx: &KernelCtx, func: &'static str) -> Result<KernelCall> {
    bind_global(ctx, func, false)
}

/// A global pool's gradient `func(dy) -> dx`.
pub(super) fn bind_global_pool_grad(ctx: &KernelCtx, func: &'static str) -> Result<KernelCall> {
    bind_global(ctx, func, true)
}

fn bind_global(ctx: &KernelCtx, func: &'static str, grad: bool) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    // Forward: x -> y; gradient: dy -> dx (x's shape is the output's).
    let x = if grad { ctx.out_shape(0)? } else { ctx.in_shape(0)? };
    if x.len() < 3 {
        return Err(ctx.err(format!("a global pool needs [N, C, ...], found {x:?}")));
    }
    let (h, w) = if x.len() == 3 { (1, x[2]) } else { (x[2], numel(&x[3..])) };
    let dims = vec![
        ("batch", u(x[0])),
        ("channels", u(x[1])),
        ("in_h", u(h)),
        ("in_w", u(w)),
        ("out_h", u(1)),
        ("out_w", u(1)),
        ("k_h", u(h)),
        ("k_w", u(w)),
        ("stride_h", u(1)),
        ("stride_w", u(1)),
        ("dil_h", u(1)),
        ("dil_w", u(1)),
    ];
    let mut fields = if grad {
        vec![("dy", ctx.inp(0)?), ("dx", ctx.out(0)?)]
    } else {
        vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?)]
    };
    fields.extend(dims);
    one(call(func, "dg_pool_args_t", fields))
}

// ---- gradient rules ------------------------------------------------------------------------

/// MaxPoolGrad(dY, Indices): the forward pool's indices output is added
/// when the graph left it out.
fn max_pool_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    refuse_3d_grad(ctx, ctx.x(0)?, "MaxPool")?;
    let dy = ctx.dy(0)?;
    let indices = ctx.y(1)?;
    let (out, attrs) = (ctx.dx_name(0), ctx.same_attrs());
    let dx = ctx.emit1("MaxPoolGrad", "", &[dy, indices], &out, attrs)?;
    ctx.set(0, dx);
    Ok(())
}

/// MaxPool is pure, indices too: the same input gives the same maxima at
/// the same places (`dg_maxpool_f32` and `dg_maxpool3d_f32` keep the first
/// maximum of each window in scan order, whatever the tiles), so a copy
/// makes both outputs again and MaxPoolGrad may read the copy's indices
/// (`plan::recompute`; the copy's Y is written and not read).
fn max_pool_recompute(_: &Graph, _: &Node) -> Option<Recompute> {
    Some(Recompute::Copy)
}

/// AveragePoolGrad(dY) with the forward attributes.
fn avg_pool_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    refuse_3d_grad(ctx, ctx.x(0)?, "AveragePool")?;
    let dy = ctx.dy(0)?;
    let (out, attrs) = (ctx.dx_name(0), ctx.same_attrs());
    let dx = ctx.emit1("AveragePoolGrad", "", &[dy], &out, attrs)?;
    ctx.set(0, dx);
    Ok(())
}

/// GlobalAveragePoolGrad(dY, X).
fn global_avg_pool_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
    let out = ctx.dx_name(0);
    let dx = ctx.emit1("GlobalAveragePoolGrad", grad::MS, &[dy, x], &out, vec![])?;
    ctx.set(0, dx);
    Ok(())
}

/// GlobalMaxPool: dY goes to the elements equal to their channel's
/// maximum, shared equally among them on a tie.
fn global_max_pool_grad(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x, y) = (ctx.dy(0)?, ctx.x(0)?, ctx.y(0)?);
    let spatial: Vec<usize> = (2..ctx.shape(x)?.len()).collect();
    super::reduce::max_grad(ctx, dy, y, &spatial)
}

// ---- tile rules ---------------------------------------------------------------

/// Pools tile over batch, channels and output rows, the input rows with
/// their halo. MaxPool's indices are flat positions in the whole input,
/// so a MaxPool that outputs them runs untiled.
pub(super) const POOL_TILES: TileRule = TileRule { space: pool_tile_space, map: pool_tile_map, in_place: false };

fn pool_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    if ctx.has_out(1) || ctx.node.output(1).is_some() {
        return Ok(Err(TileRefusal::PoolIndices));
    }
    tile::window_space(ctx, true)
}

fn pool_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    tile::window_map(ctx, &kernel_dims(ctx)?, true, start, len)
}
