//! ReduceSum / ReduceMean / ReduceMax (axes as attribute before opset 13/18, as an
//! input after), and ArgMax / ArgMin (one axis, int64 indices).

use super::grad::GradCtx;
use super::kernel::{call, dims_list, max_dims, one, strides, u, Arg, Kernel, KernelCall, KernelCtx};
use super::tile::{self, Part, Space, TileMap, TileRefusal, TileRule, Tileable};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{Attr, DType, Graph, Node, TensorData, TensorId, TensorType};

/// The reductions' attribute defaults (ONNX's): `keepdims`,
/// `noop_with_empty_axes`, and ArgMax / ArgMin's `axis` and
/// `select_last_index`.
const KEEPDIMS: bool = true;
const NOOP_WITH_EMPTY_AXES: bool = false;
const ARG_AXIS: i64 = 0;
const SELECT_LAST_INDEX: bool = false;

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "ArgMax",
        attrs: &["axis", "keepdims", "select_last_index"],
        infer: arg_reduce,
        kernel: Some(Kernel::Bind(bind_argmax)),
        ..OpDef::BASE
    },
    OpDef {
        name: "ArgMin",
        attrs: &["axis", "keepdims", "select_last_index"],
        infer: arg_reduce,
        kernel: Some(Kernel::Bind(bind_argmin)),
        ..OpDef::BASE
    },
    OpDef {
        name: "ReduceSum",
        attrs: &["axes", "keepdims", "noop_with_empty_axes"],
        infer: reduce,
        compile_time: &[1],
        fixed_1x1: Some(over_spatial),
        kernel: Some(Kernel::Bind(bind_reduce_sum)),
        tile: Some(REDUCE_TILES),
        grad: Some(reduce_sum_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "ReduceMean",
        attrs: &["axes", "keepdims", "noop_with_empty_axes"],
        infer: reduce,
        compile_time: &[1],
        fixed_1x1: Some(over_spatial),
        kernel: Some(Kernel::Bind(bind_reduce_mean)),
        tile: Some(REDUCE_TILES),
        grad: Some(reduce_mean_grad),
        ..OpDef::BASE
    },
    // quantlib's integer mean over `axes` (Deeploy's rounding; the values
    // are integers held as f32 or i32).
    OpDef {
        name: "IntegerMean",
        attrs: &["axes", "keepdims"],
        infer: integer_mean,
        kernel: Some(Kernel::Bind(bind_integer_mean)),
        ..OpDef::BASE
    },
    OpDef {
        name: "ReduceMax",
        attrs: &["axes", "keepdims", "noop_with_empty_axes"],
        infer: reduce,
        compile_time: &[1],
        fixed_1x1: Some(over_spatial),
        kernel: Some(Kernel::Bind(bind_reduce_max)),
        tile: Some(REDUCE_TILES),
        grad: Some(reduce_max_grad),
        ..OpDef::BASE
    },
];

/// A reduction over exactly the spatial axes (2..rank) with keepdims: a
/// fixed 1×1 map whatever the input resolution. Asked of typed nodes,
/// whose attributes the shape rule validated.
fn over_spatial(g: &Graph, n: &Node) -> bool {
    let Some(rank) = n.input(0).and_then(|t| g.tensor(t).ty.dims.as_ref().map(Vec::len)) else {
        return false;
    };
    let axes: Vec<i64> = match n.attr_ints("axes") {
        Some(a) => a.to_vec(),
        None => match n.input(1).and_then(|t| g.tensor(t).data.as_ref()).and_then(|d| d.to_i64()) {
            Some(a) => a,
            None => return false,
        },
    };
    let mut axes: Vec<i64> = axes.iter().map(|&a| if a < 0 { a + rank as i64 } else { a }).collect();
    axes.sort_unstable();
    n.attr_int("keepdims").map_or(KEEPDIMS, |k| k != 0) && axes == (2..rank as i64).collect::<Vec<_>>()
}

/// Normalised, sorted, deduplicated reduction axes; `None` = no reduction
/// (noop_with_empty_axes with empty axes).
pub fn reduce_axes(ctx: &Ctx, rank: usize) -> Result<Option<Vec<usize>>> {
    let axes = ctx.ints_attr_or_input("axes", 1)?.unwrap_or_default();
    let noop = ctx.node.flag("noop_with_empty_axes", NOOP_WITH_EMPTY_AXES)?;
    if axes.is_empty() {
        if noop {
            return Ok(None);
        }
        return Ok(Some((0..rank).collect()));
    }
    let mut v = axes.iter().map(|&a| ctx.axis(a, rank)).collect::<Result<Vec<_>>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(Some(v))
}

/// ArgMax / ArgMin: int64 indices along `axis` (default 0), which stays
/// as a size-1 dim unless `keepdims` = 0.
fn arg_reduce(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let keep = ctx.node.flag("keepdims", KEEPDIMS)?;
    ctx.node.flag("select_last_index", SELECT_LAST_INDEX)?;
    let Some(x) = ctx.shape(0)? else {
        ctx.node.int("axis")?;
        return Ok(vec![TensorType::unknown(DType::I64)]);
    };
    let axis = ctx.axis_attr("axis", ARG_AXIS, x.len())?;
    if x[axis] == 0 {
        return Err(ctx.err(format!("axis {axis} of input shape {x:?} is empty: there is no index to select")));
    }
    let mut out = x.clone();
    if keep {
        out[axis] = 1;
    } else {
        out.remove(axis);
    }
    Ok(vec![TensorType::new(DType::I64, &out)])
}

fn reduce(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let keep = ctx.node.flag("keepdims", KEEPDIMS)?;
    let Some(x) = ctx.shape(0)? else {
        ctx.ints_attr_or_input("axes", 1)?;
        ctx.node.flag("noop_with_empty_axes", NOOP_WITH_EMPTY_AXES)?;
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let Some(axes) = reduce_axes(ctx, x.len())? else {
        return Ok(vec![TensorType::new(dtype, &x)]);
    };
    let mut out = Vec::new();
    for (i, &d) in x.iter().enumerate() {
        if axes.contains(&i) {
            if keep {
                out.push(1);
            }
        } else {
            out.push(d);
        }
    }
    Ok(vec![TensorType::new(dtype, &out)])
}

/// IntegerMean: as ReduceMean, on f32 or i32.
fn integer_mean(ctx: &Ctx) -> Result<Vec<TensorType>> {
    match ctx.dtype(0)? {
        DType::F32 | DType::I32 => reduce(ctx),
        other => Err(ctx.err(format!("input 0 is {other}; IntegerMean takes f32 or i32"))),
    }
}

// ---- kernel bindings --------------------------------------------------------

/// The element types a reduction kernel is built for: the input's (the
/// output's too), the kernel and its args struct.
type ReduceForms = &'static [(DType, &'static str, &'static str)];

fn bind_reduce_sum(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_reduce(ctx, &[(DType::F32, "dg_reduce_sum_f32", "dg_reduce_args_t")])
}

fn bind_reduce_mean(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_reduce(ctx, &[(DType::F32, "dg_reduce_mean_f32", "dg_reduce_args_t")])
}

fn bind_integer_mean(ctx: &KernelCtx) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    let forms = &[
        (DType::F32, "dg_integer_mean", "dg_reduce_int_args_t"),
        (DType::I32, "dg_integer_mean", "dg_reduce_int_args_t"),
    ];
    let mut k = bind_reduce(ctx, forms)?;
    let code = |d: DType| Arg::Enum(if d == DType::I32 { "DG_DT_I32" } else { "DG_DT_F32" });
    for c in &mut k.calls {
        c.fields.push(("x_dtype", code(d)));
        c.fields.push(("y_dtype", code(ctx.out_dtype(0)?)));
    }
    Ok(k)
}

fn bind_reduce_max(ctx: &KernelCtx) -> Result<KernelCall> {
    // The maximum of an empty set is the type's lowest value (onnx's
    // reference: -inf, the least int64, false); the kernel needs elements.
    if reduces_nothing(ctx)? {
        let d = ctx.in_dtype(0)?;
        let lowest = match d {
            DType::F32 => TensorData::from_f32(vec![], &[f32::NEG_INFINITY]),
            _ => {
                TensorData::from_i64_as(d, vec![], &[if d == DType::Bool { 0 } else { i64::MIN }]).ok_or_else(|| {
                    ctx.err(format!(
                        "input 0 is {d}; the maximum of an empty set is written for f32, i64 and bool only"
                    ))
                })?
            }
        };
        return super::constant::fill(ctx, &lowest);
    }
    bind_reduce(
        ctx,
        &[
            (DType::F32, "dg_reduce_max_f32", "dg_reduce_args_t"),
            (DType::I64, "dg_reduce_max_i64", "dg_reduce_typed_args_t"),
            (DType::Bool, "dg_reduce_max_bool", "dg_reduce_typed_args_t"),
        ],
    )
}

fn bind_argmax(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_arg_reduce(ctx, "dg_argmax_f32")
}

fn bind_argmin(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_arg_reduce(ctx, "dg_argmin_f32")
}

fn bind_arg_reduce(ctx: &KernelCtx, func: &str) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.attr_int("axis", ARG_AXIS)?, x.len())?;
    one(call(
        func,
        "dg_arg_reduce_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("outer", u(x[..axis].iter().product())),
            ("dim", u(x[axis])),
            ("inner", u(x[axis + 1..].iter().product())),
            ("select_last", u(usize::from(ctx.attr_flag("select_last_index", SELECT_LAST_INDEX)?))),
        ],
    ))
}

/// Whether the node reduces a zero-size axis (each output is the result
/// over no elements).
fn reduces_nothing(ctx: &KernelCtx) -> Result<bool> {
    let x = ctx.graph_in_shape(0)?;
    Ok(reduced(ctx)?.is_some_and(|red| red.iter().zip(&x).any(|(&r, &d)| r && d == 0)))
}

fn bind_reduce(ctx: &KernelCtx, forms: ReduceForms) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    let Some(&(_, func, args_type)) = forms.iter().find(|(t, ..)| *t == d) else {
        let known: Vec<String> = forms.iter().map(|(t, ..)| t.to_string()).collect();
        return Err(ctx.err(format!("input 0 is {d}; the kernel binding computes in {} only", known.join(", "))));
    };
    let x = ctx.in_shape(0)?;
    max_dims(ctx, x.len())?;
    let axes = ctx.ops().ints_attr_or_input("axes", 1)?.unwrap_or_default();
    let noop = ctx.attr_flag("noop_with_empty_axes", NOOP_WITH_EMPTY_AXES)?;
    if axes.is_empty() && noop {
        return super::shape::bind_copy(ctx);
    }
    let mut red: Vec<bool> = vec![axes.is_empty(); x.len()];
    for a in axes {
        red[ctx.axis(a, x.len())?] = true;
    }
    let st = strides(&x);
    let (mut ks, mut kst, mut rs, mut rst) = (vec![], vec![], vec![], vec![]);
    for d in 0..x.len() {
        if red[d] {
            rs.push(x[d]);
            rst.push(st[d]);
        } else {
            ks.push(x[d]);
            kst.push(st[d]);
        }
    }
    one(call(
        func,
        args_type,
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("nkeep", u(ks.len())),
            ("keep_shape", dims_list(&ks)),
            ("keep_strides", dims_list(&kst)),
            ("nred", u(rs.len())),
            ("red_shape", dims_list(&rs)),
            ("red_strides", dims_list(&rst)),
        ],
    ))
}

// ---- tile rules ---------------------------------------------------------------

/// Reductions tile over the axes they keep: a tile holds its part of every
/// reduced axis whole, so each output is one sum (mean, maximum) of one
/// tile, and the tiles give the bits of one call.
const REDUCE_TILES: TileRule = TileRule { space: reduce_tile_space, map: reduce_tile_map, in_place: false };

/// Per axis of input 0: whether the node reduces it; `None` without a
/// reduction (noop_with_empty_axes).
fn reduced(ctx: &KernelCtx) -> Result<Option<Vec<bool>>> {
    let rank = ctx.graph_in_shape(0)?.len();
    let axes = ctx.ops().ints_attr_or_input("axes", 1)?.unwrap_or_default();
    if axes.is_empty() && ctx.attr_flag("noop_with_empty_axes", NOOP_WITH_EMPTY_AXES)? {
        return Ok(None);
    }
    let mut red = vec![axes.is_empty(); rank];
    for a in axes {
        red[ctx.axis(a, rank)?] = true;
    }
    Ok(Some(red))
}

fn reduce_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    let Some(red) = reduced(ctx)? else { return Ok(Err(TileRefusal::ReducesNoAxis)) };
    if red.iter().all(|&r| r) {
        return Ok(Err(TileRefusal::ReducesEveryAxis));
    }
    Ok(Ok(Space { dims: ctx.graph_in_shape(0)?, split: red.iter().map(|&r| !r).collect() }))
}

fn reduce_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let red = reduced(ctx)?.ok_or_else(|| ctx.err("a reduction without axes has no tiles"))?;
    let x = ctx.graph_in_shape(0)?;
    let y = ctx.graph_out_shape(0)?;
    let xpart = tile::broadcast_part(&x, start, len);
    let ypart = if y.len() == x.len() {
        tile::broadcast_part(&y, start, len)
    } else {
        // keepdims 0: the output's axes are the kept ones.
        let kept: Vec<usize> = (0..x.len()).filter(|&d| !red[d]).collect();
        let (s, l): (Vec<usize>, Vec<usize>) = kept.iter().map(|&d| (start[d], len[d])).unzip();
        if l == y {
            Part::Whole
        } else {
            Part::Box { start: s, len: l }
        }
    };
    let mut inputs = vec![Some(xpart)];
    if ctx.node.input(1).is_some() {
        inputs.push(Some(Part::Whole));
    }
    Ok(TileMap { inputs, outputs: vec![Some(ypart)], ..Default::default() })
}

// ---- gradient rules ------------------------------------------------------------------------

fn reduce_sum_grad(ctx: &mut GradCtx) -> Result<()> {
    spread_back(ctx, false)
}

fn reduce_mean_grad(ctx: &mut GradCtx) -> Result<()> {
    spread_back(ctx, true)
}

/// ReduceSum / ReduceMean: dY back to X's shape (reshaped to keep the
/// reduced axes, then Expand), divided by the count for the mean.
fn spread_back(ctx: &mut GradCtx, mean: bool) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x) = (ctx.dy(0)?, ctx.x(0)?);
    let sx = ctx.shape(x)?;
    let axes = reduce_axes(&Ctx { graph: ctx.b.graph, node: &ctx.node }, sx.len())?;
    let Some(axes) = axes else {
        // No axes and noop_with_empty_axes: the identity.
        ctx.set(0, dy);
        return Ok(());
    };
    let kept: Vec<usize> = sx.iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect();
    let r = ctx.b.reshape(dy, &kept, &ctx.name("keepdims"))?;
    let dims: Vec<i64> = sx.iter().map(|&d| d as i64).collect();
    let shape = ctx.b.ints(&ctx.name("shape"), &dims);
    let out = ctx.dx_name(0);
    let spread = if mean { ctx.name("spread") } else { out.clone() };
    let mut dx = ctx.emit1("Expand", "", &[r, shape], &spread, vec![])?;
    if mean {
        let count = sx.iter().product::<usize>() / kept.iter().product::<usize>().max(1);
        let k = ctx.b.scalar(&ctx.name("inv_count"), 1.0 / count.max(1) as f32);
        dx = ctx.emit1("Mul", "", &[dx, k], &out, vec![])?;
    }
    ctx.set(0, dx);
    Ok(())
}

/// ReduceMax: dY goes to the elements equal to the maximum, shared
/// equally among them on a tie.
fn reduce_max_grad(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let (dy, x, y) = (ctx.dy(0)?, ctx.x(0)?, ctx.y(0)?);
    let rank = ctx.shape(x)?.len();
    let axes = reduce_axes(&Ctx { graph: ctx.b.graph, node: &ctx.node }, rank)?;
    let Some(axes) = axes else {
        ctx.set(0, dy);
        return Ok(());
    };
    max_grad(ctx, dy, y, &axes)
}

/// The gradient of a maximum over `axes` of input 0 (ReduceMax,
/// GlobalMaxPool): dY / k to each of the k elements equal to the maximum
/// Y. Sharing keeps a tie's gradient the size of dY, as TensorFlow, JAX
/// and PyTorch's amax do; dY to each of them would count it k times.
pub(super) fn max_grad(ctx: &mut GradCtx, dy: TensorId, y: TensorId, axes: &[usize]) -> Result<()> {
    let x = ctx.x(0)?;
    let sx = ctx.shape(x)?;
    let kept: Vec<usize> = sx.iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect();
    let yk = ctx.b.reshape(y, &kept, &ctx.name("max_keepdims"))?;
    let dyk = ctx.b.reshape(dy, &kept, &ctx.name("keepdims"))?;
    let hit = ctx.op("Equal", &[x, yk], "is_max")?;
    let mask = ctx.as_float(hit, "is_max_f")?;
    let dims: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
    let ax = ctx.b.ints(&ctx.name("axes"), &dims);
    let out = ctx.name("ties");
    let ties = ctx.emit1("ReduceSum", "", &[mask, ax], &out, vec![("keepdims".into(), Attr::Int(1))])?;
    let share = ctx.op("Div", &[dyk, ties], "share")?;
    ctx.set_product(0, share, mask)
}
