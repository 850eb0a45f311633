//! ConvTranspose (1-D, 2-D and 3-D, groups, output_padding, output_shape,
//! auto_pad), fp32.

use super::grad::{self, GradCtx};
use super::kernel::{call, one, to_u32, u, Kernel, KernelCall, KernelCtx};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{Attr, TensorType};

pub const OPS: &[OpDef] = &[
    // (X [N, C, …], W [C, M / group, k…] [, B [M]]).
    OpDef {
        name: "ConvTranspose",
        attrs: &["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "output_padding", "output_shape"],
        infer: conv_transpose,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_conv_transpose)),
        grad: Some(conv_transpose_grad),
        ..OpDef::BASE
    },
];

/// A per-spatial-dim INTS attribute with every value at least `min`.
fn per_dim(ctx: &Ctx, name: &str, n: usize, default: i64, min: i64) -> Result<Vec<i64>> {
    match ctx.node.ints(name)? {
        None => Ok(vec![default; n]),
        Some(v) if v.len() == n && v.iter().all(|&x| x >= min) => Ok(v.to_vec()),
        Some(v) => Err(ctx.err(format!("attribute {name}={v:?} is invalid for {} spatial dims", n))),
    }
}

/// The (begin, end) pads of an output_shape (or SAME_*) ConvTranspose
/// whose inputs reach `total` more than the output: split as the ONNX
/// reference splits it, with floor division (so a negative total, an
/// output past the reach, puts its -1 at the end when auto_pad is not
/// SAME_UPPER).
fn split_total(total: i128, auto: &str) -> (i128, i128) {
    let half = total.div_euclid(2);
    if auto == "SAME_UPPER" {
        (half, total - half)
    } else {
        (total - half, half)
    }
}

/// Spatial output dims and the resolved (begin, end) pads.
pub fn output_spatial(ctx: &Ctx, input: &[usize], kernel: &[usize]) -> Result<(Vec<usize>, Vec<i64>)> {
    let sp = kernel.len();
    let strides = per_dim(ctx, "strides", sp, 1, 1)?;
    let dilations = per_dim(ctx, "dilations", sp, 1, 1)?;
    let out_pad = per_dim(ctx, "output_padding", sp, 0, 0)?;
    let mut pads = match ctx.node.ints("pads")? {
        None => vec![0; 2 * sp],
        Some(v) if v.len() == 2 * sp && v.iter().all(|&x| x >= 0) => v.to_vec(),
        Some(v) => return Err(ctx.err(format!("attribute pads={v:?} is invalid for {sp} spatial dims"))),
    };
    for d in 0..sp {
        if out_pad[d] >= strides[d].max(dilations[d]) {
            return Err(ctx.err(format!(
                "output_padding {} in spatial dim {d} must be smaller than the stride or dilation",
                out_pad[d]
            )));
        }
    }
    let auto = ctx.node.string("auto_pad")?.unwrap_or(super::conv::AUTO_PAD);
    let output_shape = ctx.node.ints("output_shape")?.map(<[i64]>::to_vec);
    if let Some(os) = &output_shape {
        // Either the spatial dims or the whole shape.
        if os.len() != sp && os.len() != sp + 2 {
            return Err(ctx.err(format!("output_shape {os:?} does not give {sp} spatial dims")));
        }
    }
    let mut out = Vec::with_capacity(sp);
    for d in 0..sp {
        let (i, k, s, dl, op) =
            (input[d] as i128, kernel[d] as i128, strides[d] as i128, dilations[d] as i128, out_pad[d] as i128);
        let full = s * (i - 1) + op + (k - 1) * dl + 1;
        let o = match (&output_shape, auto) {
            (Some(os), _) => {
                let o = os[os.len() - sp + d] as i128;
                let (lo, hi) = split_total(full - o, auto);
                // An output past the reach (total < 0) has a negative end
                // pad: the rows no input reaches are zeros (plus the bias),
                // as in the ONNX reference. A negative begin pad would
                // shift the output, which the kernel's unsigned begin pads
                // cannot say.
                if o < 1 || lo < 0 {
                    return Err(ctx.err(format!(
                        "output_shape {os:?}: spatial dim {d} = {o} would need a negative begin pad ({lo}; the \
                         inputs reach {full}), which the kernel does not take"
                    )));
                }
                pads[d] = lo as i64;
                pads[d + sp] = hi as i64;
                o
            }
            (None, "SAME_UPPER" | "SAME_LOWER") => {
                let o = i * s;
                let total = (full - o).max(0);
                let (lo, hi) =
                    if auto == "SAME_UPPER" { (total / 2, total - total / 2) } else { (total - total / 2, total / 2) };
                pads[d] = lo as i64;
                pads[d + sp] = hi as i64;
                o
            }
            (None, "VALID") => {
                pads[d] = 0;
                pads[d + sp] = 0;
                full
            }
            (None, "NOTSET" | "") => full - pads[d] as i128 - pads[d + sp] as i128,
            (None, other) => return Err(ctx.err(format!("auto_pad '{other}' is not a valid value"))),
        };
        if o < 1 || o > u32::MAX as i128 {
            return Err(ctx.err(format!("spatial dim {d} of the output would be {o}")));
        }
        out.push(o as usize);
    }
    Ok((out, pads))
}

fn conv_transpose(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let (Some(x), Some(w)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    if w.len() != x.len() || w.len() < 3 {
        return Err(ctx.err(format!("weight shape {w:?} does not match input shape {x:?}")));
    }
    let group = ctx.node.int("group")?.unwrap_or(super::conv::GROUP);
    if group < 1 || w[0] != x[1] || x[1] % group as usize != 0 {
        return Err(ctx.err(format!(
            "input channels {} do not match weight {w:?} (ConvTranspose weights are [C, M / group, k…]) with \
             group {group}",
            x[1]
        )));
    }
    let m = w[1].checked_mul(group as usize).ok_or_else(|| ctx.err("output channels overflow"))?;
    let kernel = match ctx.node.ints("kernel_shape")? {
        Some(k) => k.iter().map(|&v| v.max(0) as usize).collect(),
        None => w[2..].to_vec(),
    };
    if kernel != w[2..] {
        return Err(ctx.err(format!("kernel_shape {kernel:?} disagrees with weight shape {w:?}")));
    }
    if ctx.has(2) {
        if let Some(b) = ctx.shape(2)? {
            if b != [m] {
                return Err(ctx.err(format!("bias shape {b:?} should be [{m}]")));
            }
        }
    }
    let (spatial, _) = output_spatial(ctx, &x[2..], &kernel)?;
    let mut out = vec![x[0], m];
    out.extend(spatial);
    Ok(vec![TensorType::new(dtype, &out)])
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bind_conv_transpose(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let (x, w, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let sp = x.len().saturating_sub(2);
    if !(1..=3).contains(&sp) || y.len() != x.len() || w.len() != x.len() {
        return Err(ctx.err(format!("only 1-D, 2-D and 3-D ConvTranspose is supported (input {x:?}, output {y:?})")));
    }
    let get = |name: &str, n: usize, default: i64| -> Result<Vec<usize>> {
        let v = ctx.node.ints(name)?.map_or_else(|| vec![default; n], <[i64]>::to_vec);
        if v.len() != n {
            return Err(ctx.err(format!("attribute '{name}' has {} values, expected {n}", v.len())));
        }
        v.iter().map(|&x| to_u32(ctx, name, x)).collect()
    };
    let strides = get("strides", sp, 1)?;
    let dil = get("dilations", sp, 1)?;
    let out_pad = get("output_padding", sp, 0)?;
    let pads = get("pads", 2 * sp, 0)?;
    let auto = ctx.node.string("auto_pad")?.unwrap_or(super::conv::AUTO_PAD);
    let derived = ctx.node.ints("output_shape")?.is_some() || matches!(auto, "SAME_UPPER" | "SAME_LOWER");
    // The begin pads; the end pads and output_padding are implied by the
    // output size the shape rule computed.
    let mut begin = vec![0usize; sp];
    for d in 0..sp {
        let (i, k, o) = (x[2 + d], w[2 + d], y[2 + d]);
        let full = strides[d] * (i - 1) + out_pad[d] + dil[d] * (k - 1) + 1;
        begin[d] = if derived {
            let (lo, _) = split_total(full as i128 - o as i128, auto);
            usize::try_from(lo).map_err(|_| ctx.err(format!("output dim {o} needs a negative begin pad ({lo})")))?
        } else if auto == "VALID" {
            0
        } else {
            pads[d]
        };
    }
    let group = to_u32(ctx, "group", ctx.node.int("group")?.unwrap_or(super::conv::GROUP))?;
    if sp == 3 {
        let mut fields = vec![("x", ctx.inp(0)?), ("w", ctx.inp(1)?), ("b", ctx.opt_in(2)), ("y", ctx.out(0)?)];
        let names = [
            ["in_d", "in_h", "in_w"],
            ["out_d", "out_h", "out_w"],
            ["k_d", "k_h", "k_w"],
            ["stride_d", "stride_h", "stride_w"],
            ["dil_d", "dil_h", "dil_w"],
            ["pad_front", "pad_top", "pad_left"],
        ];
        fields.extend([("batch", u(x[0])), ("in_c", u(x[1])), ("out_c", u(y[1])), ("group", u(group))]);
        for (names, v) in names.iter().zip([&x[2..], &y[2..], &w[2..], &strides[..], &dil[..], &begin[..]]) {
            fields.extend(names.iter().zip(v).map(|(&n, &v)| (n, u(v))));
        }
        return one(call("dg_conv_transpose3d_f32", "dg_window3d_args_t", fields));
    }
    let last = |v: &[usize], d: usize, one: usize| if sp == 1 { [one, v[0]][d] } else { v[d] };
    let mut fields = vec![("x", ctx.inp(0)?), ("w", ctx.inp(1)?), ("b", ctx.opt_in(2)), ("y", ctx.out(0)?)];
    fields.extend([
        ("batch", u(x[0])),
        ("in_c", u(x[1])),
        ("in_h", u(last(&x[2..], 0, 1))),
        ("in_w", u(last(&x[2..], 1, 1))),
        ("out_c", u(y[1])),
        ("out_h", u(last(&y[2..], 0, 1))),
        ("out_w", u(last(&y[2..], 1, 1))),
        ("k_h", u(last(&w[2..], 0, 1))),
        ("k_w", u(last(&w[2..], 1, 1))),
        ("stride_h", u(last(&strides, 0, 1))),
        ("stride_w", u(last(&strides, 1, 1))),
        ("dil_h", u(last(&dil, 0, 1))),
        ("dil_w", u(last(&dil, 1, 1))),
        ("pad_top", u(last(&begin, 0, 0))),
        ("pad_left", u(last(&begin, 1, 0))),
        ("group", u(group)),
    ]);
    one(call("dg_conv_transpose_f32", "dg_conv_args_t", fields))
}

// ---- gradient rules ------------------------------------------------------------------------

/// ConvTranspose is the input gradient of a Conv with the same weights, so
/// dX = Conv(dY, W) and dW = ConvGrad with the roles of X and dY swapped
/// (the weight gradient of that Conv); dB sums dY over batch and space.
fn conv_transpose_grad(ctx: &mut GradCtx) -> Result<()> {
    let (dy, x, w) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    super::conv::refuse_3d_grad(ctx, x, "ConvTranspose")?;
    let (xs, ws) = (ctx.shape(x)?, ctx.shape(w)?);
    let kernel = ws[2..].to_vec();
    let pads = {
        let c = Ctx { graph: ctx.b.graph, node: &ctx.node };
        let (_, pads) = output_spatial(&c, &xs[2..], &kernel)?;
        let sp = kernel.len();
        let strides = per_dim(&c, "strides", sp, 1, 1)?;
        let out_pad = per_dim(&c, "output_padding", sp, 0, 0)?;
        if out_pad.iter().zip(&strides).any(|(&o, &s)| o >= s) {
            return Err(c.err("output_padding at least the stride has no gradient rule"));
        }
        if pads.iter().any(|&p| p < 0) {
            return Err(c.err("an output_shape past the inputs' reach (a negative end pad) has no gradient rule"));
        }
        pads
    };
    let mut attrs = vec![("kernel_shape".to_string(), Attr::Ints(kernel.iter().map(|&k| k as i64).collect()))];
    attrs.push(("pads".into(), Attr::Ints(pads)));
    for a in ["strides", "dilations", "group"] {
        attrs.extend(ctx.attr(a));
    }
    if ctx.needs(0) {
        let out = ctx.dx_name(0);
        let dx = ctx.emit1("Conv", "", &[dy, w], &out, attrs.clone())?;
        ctx.set(0, dx);
    }
    if ctx.needs(1) {
        let outs = [String::new(), ctx.dx_name(1), String::new()];
        let g = ctx.emit("ConvGrad", grad::MS, &[Some(x), Some(dy), Some(w)], &outs, attrs)?;
        if let Some(t) = g[1] {
            ctx.set(1, t);
        }
    }
    if ctx.has_x(2) && ctx.needs(2) {
        let rank = ctx.shape(dy)?.len() as i64;
        let axes: Vec<i64> = std::iter::once(0).chain(2..rank).collect();
        let a = ctx.b.ints(&ctx.name("bias_axes"), &axes);
        let out = ctx.dx_name(2);
        let db = ctx.emit1("ReduceSum", "", &[dy, a], &out, vec![("keepdims".into(), Attr::Int(0))])?;
        ctx.set(2, db);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{attr_int, attr_ints, attr_str, infer, infer_one, Fixture};
    use crate::ir::DType;

    fn ct(x: &[usize], w: &[usize]) -> Fixture {
        let mut f = Fixture::new("ConvTranspose");
        f.input("x", DType::F32, x);
        f.input("w", DType::F32, w);
        f
    }

    #[test]
    fn output_size_from_strides_pads_and_output_padding() {
        let mut f = ct(&[1, 16, 8], &[16, 8, 4]);
        attr_ints(&mut f, "strides", &[2]);
        attr_ints(&mut f, "pads", &[1, 1]);
        // 2 * 7 + 4 - 2 = 16.
        assert_eq!(infer_one(&f).unwrap(), vec![1, 8, 16]);
        attr_ints(&mut f, "output_padding", &[1]);
        assert_eq!(infer_one(&f).unwrap(), vec![1, 8, 17]);
        attr_ints(&mut f, "output_padding", &[2]);
        assert!(infer(&f).unwrap_err().to_string().contains("output_padding"));
        let mut f = ct(&[1, 4, 5, 5], &[4, 3, 3, 3]);
        attr_ints(&mut f, "strides", &[3, 2]);
        attr_ints(&mut f, "dilations", &[1, 2]);
        // h: 3 * 4 + 3 = 15; w: 2 * 4 + 2 * 2 + 1 = 13.
        assert_eq!(infer_one(&f).unwrap(), vec![1, 3, 15, 13]);
    }

    #[test]
    fn output_shape_and_auto_pad_and_groups() {
        let mut f = ct(&[1, 4, 5, 5], &[4, 2, 3, 3]);
        attr_ints(&mut f, "strides", &[2, 2]);
        attr_ints(&mut f, "output_shape", &[10, 10]);
        attr_int(&mut f, "group", 2);
        assert_eq!(infer_one(&f).unwrap(), vec![1, 4, 10, 10]);
        // The inputs reach 11: one more row is zeros at the end...
        attr_ints(&mut f, "output_shape", &[1, 4, 12, 11]);
        assert_eq!(infer_one(&f).unwrap(), vec![1, 4, 12, 11]);
        // ...two more would shift the output by a negative begin pad.
        attr_ints(&mut f, "output_shape", &[1, 4, 13, 11]);
        assert!(infer(&f).unwrap_err().to_string().contains("negative begin pad"));
        let mut f = ct(&[1, 4, 5, 5], &[4, 2, 3, 3]);
        attr_ints(&mut f, "strides", &[2, 2]);
        attr_str(&mut f, "auto_pad", "SAME_UPPER");
        assert_eq!(infer_one(&f).unwrap(), vec![1, 2, 10, 10]);
        attr_int(&mut f, "group", 3);
        assert!(infer(&f).is_err());
    }
}
