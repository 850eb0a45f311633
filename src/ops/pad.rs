//! Pad (constant, reflect, edge, wrap), with pads and value as inputs (opset 11+)
//! or as the opset-2 attributes, and negative pads (crop) as
//! onnxruntime-training writes for Pad's gradient.

use super::grad::GradCtx;
use super::kernel::{
    call, dims_list, f, float_attr, ints_list, max_dims, one, scalar_const, u, Arg, Kernel, KernelCall, KernelCtx,
};
use super::unary::scalar_attr_or_input;
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorType};

/// Pad's `mode` default (ONNX's).
const MODE: &str = "constant";

pub const OPS: &[OpDef] = &[
    // Pad(data, pads [, constant_value] [, axes]){mode}.
    OpDef {
        name: "Pad",
        attrs: &["mode", "pads", "value"],
        infer: pad,
        compile_time: &[1, 2, 3],
        kernel: Some(Kernel::Bind(bind_pad)),
        grad: Some(pad_grad),
        recompute: Some(super::recompute_copy),
        ..OpDef::BASE
    },
];

/// The padding mode (`wrap` is opset 19's).
pub fn mode<'a>(ctx: &Ctx<'a>) -> Result<&'a str> {
    match ctx.node.string("mode")?.unwrap_or(MODE) {
        m @ ("constant" | "reflect" | "edge" | "wrap") => Ok(m),
        other => Err(ctx.err(format!("mode '{other}' is not supported (constant, reflect, edge, wrap)"))),
    }
}

/// Begin and end pads per dim of a rank-`rank` input (zero on the axes
/// the `axes` input leaves out).
pub fn pads(ctx: &Ctx, rank: usize) -> Result<(Vec<i64>, Vec<i64>)> {
    let Some(p) = ctx.ints_attr_or_input("pads", 1)? else {
        return Err(ctx.err("pads are required (input 1, or attribute pads)"));
    };
    let axes: Vec<usize> = match ctx.node.input(3) {
        None => (0..rank).collect(),
        Some(_) => {
            let a = ctx.konst_i64(3).ok_or_else(|| ctx.err("input 3 (axes) must be a constant"))?;
            let mut v = a.iter().map(|&x| ctx.axis(x, rank)).collect::<Result<Vec<_>>>()?;
            let n = v.len();
            v.sort_unstable();
            v.dedup();
            if v.len() != n {
                return Err(ctx.err(format!("axes {a:?} repeat an axis")));
            }
            a.iter().map(|&x| ctx.axis(x, rank)).collect::<Result<Vec<_>>>()?
        }
    };
    if p.len() != 2 * axes.len() {
        return Err(ctx.err(format!("pads {p:?} has {} values; {} axes need {}", p.len(), axes.len(), 2 * axes.len())));
    }
    let (mut begin, mut end) = (vec![0; rank], vec![0; rank]);
    for (k, &a) in axes.iter().enumerate() {
        begin[a] = p[k];
        end[a] = p[k + axes.len()];
    }
    Ok((begin, end))
}

/// Output dims: `in + begin + end`, each at least 0; reflect pads must
/// be smaller than the (cropped) extent, edge and wrap pads need a
/// non-empty one.
pub fn padded_shape(ctx: &Ctx, x: &[usize], begin: &[i64], end: &[i64], mode: &str) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(x.len());
    for d in 0..x.len() {
        let (b, e) = (begin[d] as i128, end[d] as i128);
        let cropped = x[d] as i128 + b.min(0) + e.min(0);
        let o = x[d] as i128 + b + e;
        if cropped < 0 || o < 0 || o > u32::MAX as i128 {
            return Err(ctx.err(format!("pads {b}, {e} on dim {d} of {x:?} give an invalid extent {o}")));
        }
        let grow = b.max(0).max(e.max(0));
        if mode == "reflect" && grow > 0 && grow >= cropped {
            return Err(
                ctx.err(format!("reflect pads {b}, {e} on dim {d} must be smaller than the extent {cropped} of {x:?}"))
            );
        }
        if (mode == "edge" || mode == "wrap") && grow > 0 && cropped == 0 {
            return Err(ctx.err(format!("{mode} pads on dim {d} of {x:?} have no element to repeat")));
        }
        out.push(o as usize);
    }
    Ok(out)
}

fn pad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let mode = mode(ctx)?;
    // The value is read (and so checked) whatever the mode; ONNX ignores
    // it outside constant mode.
    scalar_attr_or_input(ctx, "value", 2, true)?;
    let Some(x) = ctx.shape(0)? else {
        ctx.ints_attr_or_input("pads", 1)?;
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let (begin, end) = pads(ctx, x.len())?;
    Ok(vec![TensorType::new(dtype, &padded_shape(ctx, &x, &begin, &end, mode)?)])
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bind_pad(ctx: &KernelCtx) -> Result<KernelCall> {
    // Reflect, edge and wrap only move values: an i32 tensor moves as
    // the f32 one of the same size does, bit for bit.
    let moves = matches!(ctx.node.string("mode")?, Some("reflect" | "edge" | "wrap"));
    // 8-bit values (a quantized graph's Pad) move as bytes.
    let bytes = matches!(ctx.in_dtype(0)?, DType::I8 | DType::U8);
    if !(bytes || (moves && ctx.in_dtype(0)? == DType::I32)) {
        ctx.require_f32(&[0])?;
    }
    let x = ctx.in_shape(0)?;
    max_dims(ctx, x.len())?;
    let mode = match ctx.node.string("mode")?.unwrap_or(MODE) {
        "constant" => "DG_PAD_CONSTANT",
        "reflect" => "DG_PAD_REFLECT",
        "edge" => "DG_PAD_EDGE",
        "wrap" => "DG_PAD_WRAP",
        other => return Err(ctx.err(format!("mode '{other}' is not supported"))),
    };
    let p = ctx.ops().ints_attr_or_input("pads", 1)?.ok_or_else(|| ctx.err("pads are required"))?;
    let axes: Vec<usize> = match ctx.ops().ints_attr_or_input("axes", 3)? {
        Some(a) => a.iter().map(|&v| ctx.axis(v, x.len())).collect::<Result<_>>()?,
        None => (0..x.len()).collect(),
    };
    if p.len() != 2 * axes.len() {
        return Err(ctx.err(format!("pads {p:?} do not give two values for each of {} axes", axes.len())));
    }
    let (mut begin, mut end) = (vec![0i64; x.len()], vec![0i64; x.len()]);
    for (k, &a) in axes.iter().enumerate() {
        begin[a] = p[k];
        end[a] = p[k + axes.len()];
    }
    if begin.iter().chain(&end).any(|&v| i32::try_from(v).is_err()) {
        return Err(ctx.err("pads do not fit the kernel's 32-bit fields"));
    }
    // The value: input 2 (a compile-time constant), or the legacy attribute.
    let value = if ctx.node.input(2).is_some() {
        scalar_const(ctx, 2)?.ok_or_else(|| ctx.err("the pad value (input 2) must be a constant"))?
    } else {
        float_attr(ctx, "value", 0.0)?
    };
    let (func, args, value) = if bytes {
        // The constant is of the data's type: its byte.
        if value.fract() != 0.0 || !(-128.0..=255.0).contains(&value) {
            return Err(ctx.err(format!("the pad value {value} is not an 8-bit value")));
        }
        ("dg_pad_b8", "dg_pad_b8_args_t", u(usize::from(value as i64 as u8)))
    } else {
        ("dg_pad_f32", "dg_pad_args_t", f(value))
    };
    one(call(
        func,
        args,
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("ndim", u(x.len())),
            ("in_shape", dims_list(&x)),
            ("pads_begin", ints_list(&begin)),
            ("pads_end", ints_list(&end)),
            ("mode", Arg::Enum(mode)),
            ("value", value),
        ],
    ))
}

// ---- gradient rules ------------------------------------------------------------------------

/// Constant-mode Pad: dX is dY cropped back, a Pad with the pads negated
/// (as onnxruntime builds it); the other modes gather dY back.
fn pad_grad(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let xs = ctx.shape(ctx.x(0)?)?;
    let (m, (begin, end)) = {
        let c = Ctx { graph: ctx.b.graph, node: &ctx.node };
        (mode(&c)?.to_string(), pads(&c, xs.len())?)
    };
    if m != "constant" {
        return gather_back(ctx, &m, &xs, &begin, &end);
    }
    let crop: Vec<i64> = begin.iter().chain(&end).map(|&p| -p).collect();
    let dy = ctx.dy(0)?;
    let pname = ctx.name("crop");
    let p = ctx.b.ints(&pname, &crop);
    let out = ctx.dx_name(0);
    let dx = ctx.emit1("Pad", "", &[dy, p], &out, vec![("mode".into(), crate::ir::Attr::String("constant".into()))])?;
    ctx.set(0, dx);
    Ok(())
}

/// Reflect, edge and wrap pads read each output element from one input
/// element per axis: the gradient scatters dY back with GatherGrad along
/// each padded axis, last axis first.
fn gather_back(ctx: &mut GradCtx, mode: &str, xs: &[usize], begin: &[i64], end: &[i64]) -> Result<()> {
    let mut dy = ctx.dy(0)?;
    let mut shape = ctx.shape(dy)?;
    let axes: Vec<usize> = (0..xs.len()).filter(|&a| begin[a] != 0 || end[a] != 0).collect();
    for (k, &a) in axes.iter().enumerate().rev() {
        let n = xs[a] as i64;
        let index: Vec<i64> = (0..shape[a] as i64)
            .map(|o| {
                let src = o - begin[a];
                match (src, mode) {
                    (s, "reflect") if s < 0 => -s,
                    (s, "reflect") if s >= n => 2 * (n - 1) - s,
                    (s, "wrap") => s.rem_euclid(n),
                    (s, _) => s.clamp(0, n - 1),
                }
            })
            .collect();
        shape[a] = xs[a];
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let sh = ctx.b.ints(&ctx.name(&format!("shape{a}")), &dims);
        let idx = ctx.b.ints(&ctx.name(&format!("index{a}")), &index);
        let out = if k == 0 { ctx.dx_name(0) } else { ctx.name(&format!("axis{a}")) };
        let attrs = vec![("axis".to_string(), crate::ir::Attr::Int(a as i64))];
        dy = ctx.emit1("GatherGrad", super::grad::MS, &[sh, idx, dy], &out, attrs)?;
    }
    ctx.set(0, dy);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{attr_ints, attr_str, infer_one, Fixture};
    use crate::ir::DType;

    #[test]
    fn negative_pads_crop_and_positive_pads_grow() {
        let mut f = Fixture::new("Pad");
        f.input("x", DType::F32, &[2, 4, 8, 8]);
        f.konst_i64("pads", &[8], &[0, 0, -1, 1, 0, 0, -1, 2]);
        assert_eq!(infer_one(&f).unwrap(), vec![2, 4, 6, 11]);
    }

    #[test]
    fn legacy_attribute_and_disagreeing_input() {
        let mut f = Fixture::new("Pad");
        f.input("x", DType::F32, &[1, 2, 3, 3]);
        attr_ints(&mut f, "pads", &[0, 0, 1, 1, 0, 0, 1, 1]);
        assert_eq!(infer_one(&f).unwrap(), vec![1, 2, 5, 5]);
        f.konst_i64("pads_in", &[8], &[0, 0, 2, 2, 0, 0, 2, 2]);
        let e = infer_one(&f).unwrap_err().to_string();
        assert!(e.contains("disagree") && e.contains("'n'"), "{e}");
    }

    #[test]
    fn reflect_pads_must_be_smaller_than_the_extent() {
        let mut f = Fixture::new("Pad");
        f.input("x", DType::F32, &[1, 1, 2, 2]);
        f.konst_i64("pads", &[8], &[0, 0, 2, 0, 0, 0, 0, 0]);
        attr_str(&mut f, "mode", "reflect");
        assert!(infer_one(&f).unwrap_err().to_string().contains("smaller"));
        attr_str(&mut f, "mode", "edge");
        assert_eq!(infer_one(&f).unwrap(), vec![1, 1, 4, 2]);
        attr_str(&mut f, "mode", "wrap");
        assert_eq!(infer_one(&f).unwrap(), vec![1, 1, 4, 2]);
        attr_str(&mut f, "mode", "mirror");
        assert!(infer_one(&f).unwrap_err().to_string().contains("not supported"));
    }

    #[test]
    fn axes_input_pads_only_those_axes() {
        let mut f = Fixture::new("Pad");
        f.input("x", DType::F32, &[1, 3, 4]);
        f.konst_i64("pads", &[2], &[1, 2]);
        f.konst_f32("value", &[], &[0.5]);
        f.konst_i64("axes", &[1], &[-1]);
        assert_eq!(infer_one(&f).unwrap(), vec![1, 3, 7]);
    }
}
