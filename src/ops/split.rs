//! Split (sizes as input, as the opset-2/11 attribute `split`, or
//! `num_outputs`), onnxruntime-training's com.microsoft SplitTraining and
//! ConcatTraining, and GatherGrad with the constant-index checks Gather
//! shares.

use super::grad::GradCtx;
use super::kernel::{call, elem_size, numel, one, u, Arg, Kernel, KernelCall, KernelCtx, Local};
use super::shape::const_indices;
use super::{checked_numel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::{Attr, DType, TensorData, TensorType};

/// The `axis` default of Split, SplitTraining, ConcatTraining and
/// GatherGrad.
const AXIS: i64 = 0;

pub const OPS: &[OpDef] = &[
    // Split(input [, split]){axis, num_outputs | split}.
    OpDef {
        name: "Split",
        attrs: &["axis", "num_outputs", "split"],
        infer: split,
        compile_time: &[1],
        kernel: Some(Kernel::Bind(bind_split)),
        grad: Some(split_grad),
        ..OpDef::BASE
    },
    // com.microsoft SplitTraining(input, split){axis, num_outputs}.
    OpDef {
        name: "SplitTraining",
        attrs: &["axis", "num_outputs"],
        infer: split,
        compile_time: &[1],
        kernel: Some(Kernel::Bind(bind_split)),
        ..OpDef::BASE
    },
    // com.microsoft ConcatTraining(inputs…){axis} -> (concat_result,
    // per_input_length: i64 [number of inputs]).
    OpDef {
        name: "ConcatTraining",
        attrs: &["axis"],
        infer: concat_training,
        kernel: Some(Kernel::Bind(|c| super::shape::bind_concat(c, true))),
        ..OpDef::BASE
    },
    // com.microsoft GatherGrad(shape, indices, dY){axis} -> dX of `shape`.
    OpDef {
        name: "GatherGrad",
        attrs: &["axis"],
        infer: gather_grad,
        required: &[0, 1, 2],
        compile_time: &[0, 1],
        gradient: true,
        kernel: Some(Kernel::Bind(bind_gather_grad)),
        ..OpDef::BASE
    },
];

/// Sizes of every output of a split of `dim` into `n` parts.
pub fn split_sizes(ctx: &Ctx, dim: usize, n: usize) -> Result<Vec<usize>> {
    if n == 0 {
        return Err(ctx.err("has no outputs"));
    }
    let given = match concat_lengths(ctx, 1)? {
        Some(v) => Some(v),
        None => ctx.ints_attr_or_input("split", 1)?,
    };
    if let Some(s) = given {
        if s.len() != n || s.iter().any(|&v| v < 0) {
            return Err(ctx.err(format!("split sizes {s:?} do not give {n} non-negative sizes")));
        }
        let sizes: Vec<usize> = s.iter().map(|&v| v as usize).collect();
        let total = sizes.iter().try_fold(0usize, |a, &b| a.checked_add(b));
        if total != Some(dim) {
            return Err(ctx.err(format!("split sizes {s:?} do not add up to the split dim {dim}")));
        }
        return Ok(sizes);
    }
    match ctx.node.int("num_outputs")? {
        Some(k) if k != n as i64 => Err(ctx.err(format!("num_outputs = {k} but the node has {n} outputs"))),
        // Opset 18: ceil(dim / n) each, the last one smaller.
        Some(_) => {
            let chunk = dim.div_ceil(n);
            if chunk * (n - 1) >= dim && n > 1 {
                return Err(ctx.err(format!("cannot split {dim} into {n} non-empty parts")));
            }
            let mut v = vec![chunk; n - 1];
            v.push(dim - chunk * (n - 1));
            Ok(v)
        }
        None if dim.is_multiple_of(n) => Ok(vec![dim / n; n]),
        None => Err(ctx.err(format!("cannot split dim {dim} into {n} equal parts (no split sizes given)"))),
    }
}

/// onnxruntime-training's Concat gradient splits by ConcatTraining's
/// `per_input_length` output: not a constant, but fixed by the shapes of
/// the concatenated inputs, so known when generating code.
fn concat_lengths(ctx: &Ctx, slot: usize) -> Result<Option<Vec<i64>>> {
    let Some(t) = ctx.node.input(slot) else { return Ok(None) };
    if ctx.konst(slot).is_some() {
        return Ok(None);
    }
    let Some(p) = ctx.graph.producer(t).map(|n| ctx.graph.node(n)) else { return Ok(None) };
    if p.op != "ConcatTraining" || p.output(1) != Some(t) {
        return Ok(None);
    }
    let mut v = Vec::with_capacity(p.inputs.len());
    for i in p.inputs.iter() {
        let Some(s) = i.and_then(|i| ctx.graph.tensor(i).ty.shape()) else { return Ok(None) };
        let a = ctx.axis(p.int("axis")?.unwrap_or(AXIS), s.len())?;
        v.push(s[a] as i64);
    }
    Ok(Some(v))
}

fn split(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let n = ctx.node.outputs.len();
    let Some(x) = ctx.shape(0)? else {
        return Ok(vec![TensorType::unknown(dtype); n]);
    };
    if x.is_empty() {
        return Err(ctx.err("cannot split a scalar"));
    }
    let a = ctx.axis(ctx.node.int("axis")?.unwrap_or(AXIS), x.len())?;
    Ok(split_sizes(ctx, x[a], n)?
        .into_iter()
        .map(|s| {
            let mut o = x.clone();
            o[a] = s;
            TensorType::new(dtype, &o)
        })
        .collect())
}

fn concat_training(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let n = ctx.node.inputs.len();
    let lengths = TensorType::new(DType::I64, &[n]);
    let axis = ctx.node.int("axis")?.ok_or_else(|| ctx.err("attribute axis is required"))?;
    let mut out: Option<Vec<usize>> = None;
    let mut ax = 0;
    for i in 0..n {
        if ctx.dtype(i)? != dtype {
            return Err(ctx.err(format!("input {i} is {} but input 0 is {dtype}", ctx.dtype(i)?)));
        }
        let Some(s) = ctx.shape(i)? else { return Ok(vec![TensorType::unknown(dtype), lengths]) };
        match &mut out {
            None => {
                ax = ctx.axis(axis, s.len())?;
                out = Some(s);
            }
            Some(o) => {
                if o.len() != s.len() || (0..s.len()).any(|d| d != ax && o[d] != s[d]) {
                    return Err(ctx.err(format!("input {i} {s:?} does not concatenate with {o:?} on axis {axis}")));
                }
                o[ax] = o[ax].checked_add(s[ax]).ok_or_else(|| ctx.err("concatenated dim overflows"))?;
            }
        }
    }
    let out = out.ok_or_else(|| ctx.err("needs at least one input"))?;
    Ok(vec![TensorType::new(dtype, &out), lengths])
}

/// Constant indices must lie in `[-dim, dim)` of the gathered axis.
pub fn check_indices(ctx: &Ctx, slot: usize, dim: usize) -> Result<()> {
    let Some(d) = ctx.konst(slot) else { return Ok(()) };
    if !matches!(d.dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("indices must be int64 or int32, got {}", d.dtype)));
    }
    let Some(idx) = d.to_i64() else { return Ok(()) };
    let n = dim as i64;
    if let Some(&bad) = idx.iter().find(|&&k| k < -n || k >= n) {
        return Err(ctx.err(format!("index {bad} is out of range for an axis of {dim}")));
    }
    Ok(())
}

fn gather_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(2)?;
    let Some(shape) = ctx.konst_i64(0) else {
        return Err(ctx.err("input 0 (the gathered tensor's shape) must be a constant"));
    };
    if shape.is_empty() || shape.iter().any(|&d| d < 0) {
        return Err(ctx.err(format!("shape {shape:?} is invalid")));
    }
    let x: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    checked_numel(ctx, &x)?;
    let a = ctx.axis(ctx.node.int("axis")?.unwrap_or(AXIS), x.len())?;
    check_indices(ctx, 1, x[a])?;
    if let (Some(idx), Some(dy)) = (ctx.shape(1)?, ctx.shape(2)?) {
        let mut want = x[..a].to_vec();
        want.extend(idx);
        want.extend_from_slice(&x[a + 1..]);
        if dy != want {
            return Err(ctx.err(format!("dY {dy:?} does not match the gather of {x:?} (expected {want:?})")));
        }
    }
    Ok(vec![TensorType::new(dtype, &x)])
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bind_split(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(AXIS), x.len())?;
    let es = elem_size(ctx, ctx.in_dtype(0)?)?;
    // The sizes are the outputs' extents, which the shape rule computed
    // from the split input or attribute (or ConcatTraining's lengths).
    let (mut ys, mut sizes) = (vec![], vec![]);
    for i in 0..ctx.node.outputs.len() {
        let s = ctx.out_shape(i)?;
        ys.push(ctx.out(i)?);
        sizes.push(u(s[axis]));
    }
    ctx.list_fits("outputs", ys.len())?;
    let mut inv = call(
        "dg_split_kernel",
        "dg_split_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", Arg::Local("ys")),
            ("sizes", Arg::Local("sizes")),
            ("nout", u(ys.len())),
            ("elem_size", u(es)),
            ("outer", u(numel(&x[..axis]))),
            ("inner", u(numel(&x[axis + 1..]))),
        ],
    );
    inv.locals.push(Local { ctype: "void *const", name: "ys", values: ys });
    inv.locals.push(Local { ctype: "const uint32_t", name: "sizes", values: sizes });
    one(inv)
}

pub(super) fn bind_gather_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    // GatherGrad(shape, indices, dY){axis} -> dX of `shape`.
    ctx.require_f32(&[2])?;
    let x = ctx.out_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(AXIS), x.len())?;
    let n_idx = numel(&ctx.in_shape(1)?);
    let idx = const_indices(ctx, 1, x[axis])?;
    let mut inv = call(
        "dg_gather_grad_f32",
        "dg_gather_grad_args_t",
        vec![
            ("dy", ctx.inp(2)?),
            ("indices", Arg::Local("indices")),
            ("indices_i32", u(0)),
            ("dx", ctx.out(0)?),
            ("outer", u(numel(&x[..axis]))),
            ("axis_dim", u(x[axis])),
            ("inner", u(numel(&x[axis + 1..]))),
            ("n_idx", u(n_idx)),
        ],
    );
    inv.locals.push(idx);
    one(inv)
}

// ---- gradient rules ------------------------------------------------------------------------

/// Split: dX is the outputs' gradients concatenated on the axis (zeros for
/// an output nothing read).
fn split_grad(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    let rank = ctx.shape(ctx.x(0)?)?.len();
    let axis = Ctx { graph: ctx.b.graph, node: &ctx.node }.axis_attr("axis", AXIS, rank)?;
    let mut parts = vec![];
    for i in 0..ctx.node.outputs.len() {
        let part = match ctx.dy(i) {
            Ok(t) => t,
            Err(_) => {
                let y = ctx.y(i)?;
                let shape = ctx.shape(y)?;
                let zeros = TensorData::from_f32(shape.clone(), &vec![0.0; shape.iter().product()]);
                let name = ctx.name(&format!("zeros{i}"));
                ctx.b.constant(&name, zeros)
            }
        };
        parts.push(part);
    }
    let out = ctx.dx_name(0);
    let dx = ctx.emit1("Concat", "", &parts, &out, vec![("axis".into(), Attr::Int(axis as i64))])?;
    ctx.set(0, dx);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{attr_int, attr_ints, infer, infer_one, Fixture};
    use crate::ir::DType;

    fn shapes(f: &Fixture) -> Vec<Vec<usize>> {
        infer(f).unwrap().iter().map(|t| t.shape().unwrap()).collect()
    }

    #[test]
    fn split_sizes_from_input_attribute_or_equal_parts() {
        let mut f = Fixture::with_outputs("Split", 2);
        f.input("x", DType::F32, &[1, 8, 4]);
        attr_int(&mut f, "axis", 1);
        assert_eq!(shapes(&f), vec![vec![1, 4, 4], vec![1, 4, 4]]);
        attr_ints(&mut f, "split", &[3, 5]);
        assert_eq!(shapes(&f), vec![vec![1, 3, 4], vec![1, 5, 4]]);
        f.konst_i64("s", &[2], &[3, 5]);
        assert_eq!(shapes(&f), vec![vec![1, 3, 4], vec![1, 5, 4]]);
        attr_ints(&mut f, "split", &[2, 6]);
        assert!(infer(&f).unwrap_err().to_string().contains("disagree"));
    }

    #[test]
    fn split_sizes_must_add_up() {
        let mut f = Fixture::with_outputs("Split", 2);
        f.input("x", DType::F32, &[6]);
        f.konst_i64("s", &[2], &[2, 3]);
        assert!(infer(&f).unwrap_err().to_string().contains("add up"));
        let mut f = Fixture::with_outputs("Split", 4);
        f.input("x", DType::F32, &[7]);
        assert!(infer(&f).unwrap_err().to_string().contains("equal parts"));
        attr_int(&mut f, "num_outputs", 4);
        assert_eq!(shapes(&f), vec![vec![2], vec![2], vec![2], vec![1]]);
        attr_int(&mut f, "num_outputs", 3);
        assert!(infer(&f).unwrap_err().to_string().contains("num_outputs = 3"));
    }

    #[test]
    fn gather_axis_and_negative_constant_indices() {
        let mut f = Fixture::new("Gather");
        f.input("x", DType::F32, &[2, 5, 3]);
        f.konst_i64("i", &[2], &[-1, 0]);
        attr_int(&mut f, "axis", -2);
        assert_eq!(infer_one(&f).unwrap(), vec![2, 2, 3]);
        let mut f = Fixture::new("Gather");
        f.input("x", DType::F32, &[2, 5, 3]);
        f.konst_i64("i", &[1], &[-6]);
        attr_int(&mut f, "axis", 1);
        assert!(infer_one(&f).unwrap_err().to_string().contains("out of range"));
    }

    #[test]
    fn gather_grad_has_the_constant_shape() {
        let mut f = Fixture::new("GatherGrad");
        f.konst_i64("shape", &[4], &[2, 4, 8, 8]);
        f.konst_i64("i", &[4], &[3, 0, 2, 1]);
        f.input("dy", DType::F32, &[2, 4, 8, 8]);
        attr_int(&mut f, "axis", 1);
        assert_eq!(infer_one(&f).unwrap(), vec![2, 4, 8, 8]);
    }

    #[test]
    fn concat_training_reports_lengths() {
        let mut f = Fixture::with_outputs("ConcatTraining", 2);
        f.input("a", DType::F32, &[2, 2, 8]);
        f.input("b", DType::F32, &[2, 3, 8]);
        attr_int(&mut f, "axis", 1);
        assert_eq!(shapes(&f), vec![vec![2, 5, 8], vec![2]]);
    }
}
