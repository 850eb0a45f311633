//! Resize (opset >= 11: X, roi, scales, sizes) in modes nearest, linear
//! and cubic, antialias included, over the last two axes: each output
//! index of an axis reads a few input indices with fixed weights, computed
//! here as ONNX's reference does (coordinate transformation, neighbours
//! with edge padding, `exclude_outside`, the crop of tf_crop_and_resize)
//! and passed to the kernel as tables.

use super::kernel::{call, one, u, Arg, Kernel, KernelCall, KernelCtx, Local};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{Graph, Node, TensorType};

pub const OPS: &[OpDef] = &[OpDef {
    name: "Resize",
    attrs: &[
        "antialias",
        "axes",
        "coordinate_transformation_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "keep_aspect_ratio_policy",
        "mode",
        "nearest_mode",
    ],
    infer: resize,
    compile_time: &[1, 2, 3],
    kernel: Some(Kernel::Bind(bind_resize)),
    tables: Some(tables),
    ..OpDef::BASE
}];

const MODES: &[&str] = &["nearest", "linear", "cubic"];
const TRANSFORMS: &[&str] =
    &["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"];
const NEAREST_MODES: &[&str] = &["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"];

/// A string attribute that must be one of `known` (the first by default).
fn choice(ctx: &Ctx, name: &str, known: &[&'static str]) -> Result<&'static str> {
    let v = ctx.node.string(name)?.unwrap_or(known[0]);
    known.iter().copied().find(|k| *k == v).ok_or_else(|| {
        ctx.err(format!("attribute '{name}' = \"{v}\" is not supported; deploygen resizes with {}", known.join(", ")))
    })
}

/// The node's resize, one entry per input axis.
struct Plan {
    mode: &'static str,
    transform: &'static str,
    nearest: &'static str,
    cubic_a: f64,
    exclude_outside: bool,
    antialias: bool,
    scales: Vec<f64>,
    out: Vec<usize>,
    /// Per input axis, the normalised crop `[start, end]` (tf_crop_and_resize).
    roi: Vec<(f64, f64)>,
    extrapolation: f32,
}

fn plan(ctx: &Ctx, x: &[usize]) -> Result<Plan> {
    if ctx.node.inputs.len() == 2 {
        return Err(ctx.err("the opset-10 form (scales as input 1) is not supported"));
    }
    let mode = choice(ctx, "mode", MODES)?;
    let transform = choice(ctx, "coordinate_transformation_mode", TRANSFORMS)?;
    let nearest = choice(ctx, "nearest_mode", NEAREST_MODES)?;
    let policy = choice(ctx, "keep_aspect_ratio_policy", &["stretch", "not_larger", "not_smaller"])?;
    let antialias = ctx.node.flag("antialias", false)?;
    if antialias && mode == "nearest" {
        return Err(ctx.err("attribute 'antialias' = 1 is not defined for mode \"nearest\""));
    }
    let exclude_outside = ctx.node.flag("exclude_outside", false)?;
    let cubic_a = f64::from(ctx.node.float("cubic_coeff_a")?.unwrap_or(-0.75));
    let r = x.len();
    let axes: Vec<usize> = match ctx.node.ints("axes")? {
        Some(a) => a.iter().map(|&v| ctx.axis(v, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    let given = |i: usize| ctx.has(i) && ctx.konst(i).is_none_or(|d| d.numel() > 0);
    for i in 1..4 {
        if given(i) && ctx.konst(i).is_none() {
            return Err(ctx.not_constant(i, ["", "roi", "scales", "sizes"][i]));
        }
    }
    let (mut scales, mut out) = (vec![1.0f64; r], x.to_vec());
    if given(2) {
        let s = ctx.konst(2).and_then(|d| d.to_f32()).ok_or_else(|| ctx.err("scales (input 2) must be f32"))?;
        if s.len() != axes.len() || s.iter().any(|&v| !(v > 0.0 && v.is_finite())) {
            return Err(ctx.err(format!("scales {s:?} must hold one positive value per resized axis ({axes:?})")));
        }
        for (&a, &v) in axes.iter().zip(&s) {
            scales[a] = f64::from(v);
            out[a] = (f64::from(v) * x[a] as f64) as usize;
        }
    } else if given(3) {
        let s = ctx.konst_i64(3).ok_or_else(|| ctx.err("sizes (input 3) must be int64"))?;
        if s.len() != axes.len() || s.iter().any(|&v| v <= 0) {
            return Err(ctx.err(format!("sizes {s:?} must hold one positive size per resized axis ({axes:?})")));
        }
        for (&a, &v) in axes.iter().zip(&s) {
            out[a] = v as usize;
            scales[a] = v as f64 / x[a] as f64;
        }
        if policy != "stretch" {
            let it = axes.iter().map(|&a| scales[a]);
            let s = if policy == "not_larger" { it.fold(f64::INFINITY, f64::min) } else { it.fold(0.0, f64::max) };
            for &a in &axes {
                scales[a] = s;
                out[a] = (s * x[a] as f64 + 0.5) as usize;
            }
        }
    } else {
        return Err(ctx.err("neither scales (input 2) nor sizes (input 3) is given"));
    }
    if out.contains(&0) {
        return Err(ctx.err(format!("the output shape {out:?} has an empty dim")));
    }
    let mut roi = vec![(0.0, 1.0); r];
    if transform == "tf_crop_and_resize" {
        let v = ctx.konst(1).and_then(|d| d.to_f32()).ok_or_else(|| {
            ctx.err("coordinate_transformation_mode \"tf_crop_and_resize\" needs a constant f32 roi (input 1)")
        })?;
        if v.len() != 2 * axes.len() {
            return Err(ctx.err(format!("roi {v:?} must hold a start and an end per resized axis ({axes:?})")));
        }
        for (i, &a) in axes.iter().enumerate() {
            roi[a] = (f64::from(v[i]), f64::from(v[axes.len() + i]));
        }
    }
    let extrapolation = ctx.node.float("extrapolation_value")?.unwrap_or(0.0);
    Ok(Plan { mode, transform, nearest, cubic_a, exclude_outside, antialias, scales, out, roi, extrapolation })
}

fn resize(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Some(x) = ctx.shape(0)? else { return Err(ctx.err("input 0 has no static shape")) };
    let p = plan(ctx, &x)?;
    let r = x.len();
    if r < 2 || (0..r - 2).any(|a| p.out[a] != x[a] || p.roi[a] != (0.0, 1.0)) {
        return Err(ctx.err(format!("resizing {x:?} to {:?}: deploygen resizes the last two axes only", p.out)));
    }
    Ok(vec![TensorType::new(dtype, &p.out)])
}

/// One axis's taps: `k` input indices (clamped, as edge padding) and
/// weights per output index; an index of -1 marks an output index outside
/// the crop (tf_crop_and_resize), which takes the extrapolation value.
struct Taps {
    k: usize,
    idx: Vec<i64>,
    w: Vec<f64>,
}

/// How many taps each output index of an axis reads (the length of
/// [`coeffs`]), without computing them: 1 nearest, 2 linear, 4 cubic;
/// antialiased, the filter's footprint widened by 1 / scale.
fn taps_per_index(p: &Plan, scale: f64) -> u64 {
    let wide = |support: f64| {
        let start = (-support / scale.min(1.0)).floor() + 1.0;
        // f64 to u64 saturates: an absurd footprint stays absurd.
        (2.0 - 2.0 * start) as u64
    };
    match (p.mode, p.antialias) {
        ("linear", false) => 2,
        ("linear", true) => wide(1.0),
        ("cubic", false) => 4,
        ("cubic", true) => wide(2.0),
        _ => 1,
    }
}

/// Bytes of the node's tap tables (an index and a weight, 4 B each, per
/// tap per output index of the two resized axes), from the shapes alone.
fn tables(g: &Graph, node: &Node) -> Result<u64> {
    let ctx = Ctx { graph: g, node };
    let Some(x) = ctx.shape(0)? else { return Err(ctx.err("input 0 has no static shape")) };
    let p = plan(&ctx, &x)?;
    let r = x.len();
    if r < 2 {
        return Ok(0);
    }
    let axis = |a: usize| (p.out[a] as u64).saturating_mul(taps_per_index(&p, p.scales[a])).saturating_mul(8);
    Ok(axis(r - 2).saturating_add(axis(r - 1)))
}

fn coeffs(p: &Plan, ratio: f64, scale: f64) -> Vec<f64> {
    let a = p.cubic_a;
    let cubic = |x: f64| {
        let x = x.abs();
        if x <= 1.0 {
            (a + 2.0) * x * x * x - (a + 3.0) * x * x + 1.0
        } else if x < 2.0 {
            a * x * x * x - 5.0 * a * x * x + 8.0 * a * x - 4.0 * a
        } else {
            0.0
        }
    };
    let normalised = |c: Vec<f64>| {
        let s: f64 = c.iter().sum();
        c.into_iter().map(|v| v / s).collect()
    };
    match (p.mode, p.antialias) {
        ("linear", false) => vec![1.0 - ratio, ratio],
        ("linear", true) => {
            let s = scale.min(1.0);
            let start = (-1.0 / s).floor() as i64 + 1;
            let footprint = 2 - 2 * start;
            normalised(
                (start..start + footprint).map(|i| (1.0 - ((i as f64 - ratio) * s).abs()).clamp(0.0, 1.0)).collect(),
            )
        }
        ("cubic", false) => vec![cubic(ratio + 1.0), cubic(ratio), cubic(1.0 - ratio), cubic(2.0 - ratio)],
        ("cubic", true) => {
            let s = scale.min(1.0);
            let start = (-2.0 / s).floor() as i64 + 1;
            normalised((start..2 - start).map(|i| cubic(s * (i as f64 - ratio))).collect())
        }
        _ => {
            let (lo, hi) = match p.nearest {
                "round_prefer_floor" => (ratio <= 0.5, ratio > 0.5),
                "round_prefer_ceil" => (ratio < 0.5, ratio >= 0.5),
                "floor" => (true, false),
                _ => (false, true),
            };
            if ratio == 1.0 {
                vec![0.0, 1.0]
            } else {
                vec![f64::from(u8::from(lo)), f64::from(u8::from(hi))]
            }
        }
    }
}

fn taps(p: &Plan, axis: usize, in_len: usize) -> Taps {
    let (scale, out_len) = (p.scales[axis], p.out[axis]);
    let (inw, outw) = (in_len as f64, scale * in_len as f64);
    let mut t = Taps { k: 0, idx: vec![], w: vec![] };
    let (r0, r1) = p.roi[axis];
    for x in 0..out_len {
        let xf = x as f64;
        let x_ori = match p.transform {
            "tf_crop_and_resize" => {
                let v = if outw == 1.0 {
                    (r1 - r0) * (inw - 1.0) / 2.0
                } else {
                    xf * (r1 - r0) * (inw - 1.0) / (outw - 1.0)
                } + r0 * (inw - 1.0);
                if v < 0.0 || v > inw - 1.0 {
                    let k = if p.mode == "nearest" { 1 } else { coeffs(p, 0.5, scale).len() };
                    t.k = k;
                    t.idx.extend(std::iter::repeat_n(-1, k));
                    t.w.extend(std::iter::repeat_n(0.0, k));
                    continue;
                }
                v
            }
            "align_corners" if outw == 1.0 => 0.0,
            "align_corners" => xf * (inw - 1.0) / (outw - 1.0),
            "asymmetric" => xf / scale,
            "pytorch_half_pixel" if outw == 1.0 => -0.5,
            "half_pixel_symmetric" => {
                let adjustment = out_len as f64 / outw;
                let offset = inw / 2.0 * (1.0 - adjustment);
                offset + (xf + 0.5) / scale - 0.5
            }
            _ => (xf + 0.5) / scale - 0.5,
        };
        let ratio = if x_ori.fract() == 0.0 { 1.0 } else { x_ori - x_ori.floor() };
        let mut c = coeffs(p, ratio, scale);
        let n = c.len();
        // The n nearest indexes of the edge-padded axis, the smaller first
        // among equals.
        let pad = n.div_ceil(2) as i64;
        let xp = x_ori + pad as f64;
        let limit = in_len as i64 + 2 * pad;
        let f = xp.floor() as i64;
        let mut cand: Vec<i64> = (f - n as i64 - 1..=f + n as i64 + 1).filter(|&i| i >= 0 && i < limit).collect();
        cand.sort_by(|&a, &b| {
            ((xp - a as f64).abs(), a).partial_cmp(&((xp - b as f64).abs(), b)).unwrap_or(std::cmp::Ordering::Equal)
        });
        cand.truncate(n);
        cand.sort_unstable();
        let idx: Vec<i64> = cand.iter().map(|i| i - pad).collect();
        if p.exclude_outside {
            for (ci, &i) in c.iter_mut().zip(&idx) {
                if i < 0 || i >= in_len as i64 {
                    *ci = 0.0;
                }
            }
            let s: f64 = c.iter().sum();
            c.iter_mut().for_each(|v| *v /= s);
        }
        let clamp = |i: i64| i.clamp(0, in_len as i64 - 1);
        if p.mode == "nearest" {
            let pick = c.iter().position(|&v| v != 0.0).unwrap_or(0);
            t.idx.push(clamp(idx.get(pick).copied().unwrap_or(0)));
            t.w.push(1.0);
            t.k = 1;
        } else {
            t.k = n;
            t.idx.extend(idx.iter().map(|&i| clamp(i)));
            t.w.extend(c);
        }
    }
    t
}

fn bind_resize(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let (x, y) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let r = x.len();
    let p = plan(&ctx.ops(), &x)?;
    let (th, tw) = (taps(&p, r - 2, x[r - 2]), taps(&p, r - 1, x[r - 1]));
    let ints = |v: &[i64]| v.iter().map(|&i| Arg::I(i)).collect::<Vec<_>>();
    let floats = |v: &[f64]| v.iter().map(|&w| Arg::F(w as f32)).collect::<Vec<_>>();
    let mut inv = call(
        "dg_resize_f32",
        "dg_resize_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("planes", u(x[..r - 2].iter().product())),
            ("in_h", u(x[r - 2])),
            ("in_w", u(x[r - 1])),
            ("out_h", u(y[r - 2])),
            ("out_w", u(y[r - 1])),
            ("kh", u(th.k)),
            ("kw", u(tw.k)),
            ("iy", Arg::Local("iy")),
            ("wy", Arg::Local("wy")),
            ("ix", Arg::Local("ix")),
            ("wx", Arg::Local("wx")),
            ("extrapolation", Arg::F(p.extrapolation)),
        ],
    );
    inv.locals = vec![
        // Static data, counted by the plan (`tables`): on the stack they
        // would take (out_h * kh + out_w * kw) * 8 B of a small stack.
        Local { ctype: "static const int32_t", name: "iy", values: ints(&th.idx) },
        Local { ctype: "static const float", name: "wy", values: floats(&th.w) },
        Local { ctype: "static const int32_t", name: "ix", values: ints(&tw.idx) },
        Local { ctype: "static const float", name: "wx", values: floats(&tw.w) },
    ];
    one(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(mode: &'static str, antialias: bool) -> Plan {
        Plan {
            mode,
            transform: "half_pixel",
            nearest: "round_prefer_floor",
            cubic_a: -0.75,
            exclude_outside: false,
            antialias,
            scales: vec![],
            out: vec![],
            roi: vec![],
            extrapolation: 0.0,
        }
    }

    /// The plan's count of taps (nothing built) is what the tables hold.
    #[test]
    fn taps_per_index_is_the_coefficient_count() {
        for (mode, aa) in [("nearest", false), ("linear", false), ("linear", true), ("cubic", false), ("cubic", true)] {
            let p = plan_of(mode, aa);
            for scale in [0.013, 0.1, 0.25, 0.3, 0.5, 0.77, 1.0, 2.0, 256.0] {
                let k = coeffs(&p, 0.37, scale).len() as u64;
                let want = if mode == "nearest" { 1 } else { k };
                assert_eq!(taps_per_index(&p, scale), want, "{mode} antialias {aa} scale {scale}");
            }
        }
        // An absurd downscale saturates instead of wrapping.
        assert!(taps_per_index(&plan_of("cubic", true), 1e-300) >= 1 << 62);
    }
}
