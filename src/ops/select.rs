//! Selection and comparison: variadic Max/Min, Where, the comparisons
//! (bool results), And, Or and Xor. All broadcast numpy-style; onnxruntime-training
//! builds the gradients of Max, Min, Clip and Abs from them.

use super::elementwise::fold_int_pair;
use super::grad::GradCtx;
use super::kernel::{
    broadcast_strides, call, dims_list, elem_size, max_dims, numel, one, u, Arg, Kernel, KernelCall, KernelCtx, Local,
};
use super::{broadcast, Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorData, TensorId, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Max",
        infer: same_type,
        fold: Some(|c, o| fold_min_max(c, o, i64::max)),
        kernel: Some(Kernel::Named(bind_variadic, "dg_max")),
        grad: Some(max_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "Min",
        infer: same_type,
        fold: Some(|c, o| fold_min_max(c, o, i64::min)),
        kernel: Some(Kernel::Named(bind_variadic, "dg_min")),
        grad: Some(min_grad),
        ..OpDef::BASE
    },
    // Where(condition: bool, X, Y): X where the condition holds, else Y.
    OpDef {
        name: "Where",
        infer: where_,
        required: &[0, 1, 2],
        fold: Some(fold_where),
        kernel: Some(Kernel::Bind(bind_where)),
        grad: Some(where_grad),
        ..OpDef::BASE
    },
    OpDef {
        name: "Equal",
        fold: Some(|c, o| fold_compare(c, o, |a, b| a == b)),
        kernel: Some(Kernel::Named(bind_compare, "dg_equal")),
        ..COMPARE
    },
    OpDef {
        name: "Less",
        fold: Some(|c, o| fold_compare(c, o, |a, b| a < b)),
        kernel: Some(Kernel::Named(bind_compare, "dg_less")),
        ..COMPARE
    },
    OpDef {
        name: "LessOrEqual",
        fold: Some(|c, o| fold_compare(c, o, |a, b| a <= b)),
        kernel: Some(Kernel::Named(bind_compare, "dg_less_equal")),
        ..COMPARE
    },
    OpDef {
        name: "Greater",
        fold: Some(|c, o| fold_compare(c, o, |a, b| a > b)),
        kernel: Some(Kernel::Named(bind_compare, "dg_greater")),
        ..COMPARE
    },
    OpDef {
        name: "GreaterOrEqual",
        fold: Some(|c, o| fold_compare(c, o, |a, b| a >= b)),
        kernel: Some(Kernel::Named(bind_compare, "dg_greater_equal")),
        ..COMPARE
    },
    OpDef {
        name: "And",
        fold: Some(|c, o| fold_compare(c, o, |a, b| a != 0 && b != 0)),
        kernel: Some(Kernel::Named(bind_logical, "dg_and")),
        ..LOGICAL
    },
    OpDef {
        name: "Or",
        fold: Some(|c, o| fold_compare(c, o, |a, b| a != 0 || b != 0)),
        kernel: Some(Kernel::Named(bind_logical, "dg_or")),
        ..LOGICAL
    },
    OpDef {
        name: "Xor",
        fold: Some(|c, o| fold_compare(c, o, |a, b| (a != 0) != (b != 0))),
        kernel: Some(Kernel::Named(bind_logical, "dg_xor")),
        ..LOGICAL
    },
];

/// Two operands broadcast to a bool result, folded when both are constant
/// integers or bools (mask and shape arithmetic).
const COMPARE: OpDef = OpDef { infer: compare, required: &[0, 1], ..OpDef::BASE };

/// A [`COMPARE`] of two bools (And, Or, Xor).
const LOGICAL: OpDef = OpDef { infer: logical, ..COMPARE };

/// What a comparison computes on two integer (or 0/1) operands.
type CompareFn = fn(i64, i64) -> bool;

/// The operand types a comparison's kernels take, with their suffixes.
type Forms = &'static [(DType, &'static str)];
const NUMBERS: Forms =
    &[(DType::F32, "f32"), (DType::I64, "i64"), (DType::I32, "i32"), (DType::I8, "i8"), (DType::U8, "u8")];
const BOOLS: Forms = &[(DType::Bool, "bool")];

/// A comparison or logical operator `f` of constant integers or bools.
fn fold_compare(ctx: &Ctx, out: &[TensorType], f: CompareFn) -> Result<Option<Vec<TensorData>>> {
    fold_int_pair(ctx, out, |a, b| Ok(Some(f(a, b) as i64)))
}

/// Not of a constant bool.
pub(super) fn fold_not(ctx: &Ctx, _out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let Some(x) = ctx.konst(0).filter(|d| d.dtype == DType::Bool) else { return Ok(None) };
    let bytes = x.bytes.iter().map(|&b| (b == 0) as u8).collect();
    Ok(Some(vec![TensorData { dtype: DType::Bool, shape: x.shape.clone(), bytes }]))
}

/// Where of a constant condition and constant integer operands (the
/// shape arithmetic of expanded attention masks).
fn fold_where(ctx: &Ctx, out: &[TensorType]) -> Result<Option<Vec<TensorData>>> {
    let (Some(c), Some(x), Some(y)) = (ctx.konst(0), ctx.konst(1), ctx.konst(2)) else { return Ok(None) };
    let Some(out_t) = out.first() else { return Ok(None) };
    let (Some(shape), true) = (out_t.shape(), x.dtype.is_int() && x.dtype == y.dtype) else { return Ok(None) };
    let n: usize = shape.iter().product();
    if n > super::FOLD_LIMIT {
        return Ok(None);
    }
    let (Some(vc), Some(vx), Some(vy)) = (c.to_i64(), x.to_i64(), y.to_i64()) else { return Ok(None) };
    let at = |s: &[usize], flat: usize| super::elementwise::broadcast_index(&shape, s, flat);
    let res: Vec<i64> =
        (0..n).map(|i| if vc[at(&c.shape, i)] != 0 { vx[at(&x.shape, i)] } else { vy[at(&y.shape, i)] }).collect();
    Ok(TensorData::from_i64_as(x.dtype, shape, &res).map(|t| vec![t]))
}

/// Broadcast of inputs `slots` (every one required), `None` when a shape
/// is unknown.
fn broadcast_slots(ctx: &Ctx, slots: impl Iterator<Item = usize>) -> Result<Option<Vec<usize>>> {
    let mut shape = Some(vec![]);
    for i in slots {
        shape = match (shape, ctx.shape(i)?) {
            (Some(s), Some(t)) => Some(broadcast(ctx, &s, &t)?),
            _ => None,
        };
    }
    Ok(shape)
}

fn typed(dtype: DType, shape: Option<Vec<usize>>) -> TensorType {
    match shape {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    }
}

/// Every input has input 0's element type.
fn same_dtype(ctx: &Ctx, slots: impl Iterator<Item = usize>, dtype: DType) -> Result<()> {
    for i in slots {
        let d = ctx.dtype(i)?;
        if d != dtype {
            return Err(ctx.err(format!("input {i} is {d} but the operator needs {dtype} like the others")));
        }
    }
    Ok(())
}

/// Max / Min: one or more inputs of one type.
fn same_type(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let n = ctx.node.inputs.len();
    if n == 0 {
        return Err(ctx.err("needs at least one input"));
    }
    let dtype = ctx.dtype(0)?;
    same_dtype(ctx, 0..n, dtype)?;
    Ok(vec![typed(dtype, broadcast_slots(ctx, 0..n)?)])
}

/// Max or Min (`pick`) of two constant integer inputs (shape arithmetic
/// such as `Max(Shape(x), target)`); one input is itself.
fn fold_min_max(ctx: &Ctx, out: &[TensorType], pick: fn(i64, i64) -> i64) -> Result<Option<Vec<TensorData>>> {
    match ctx.node.inputs.len() {
        1 => Ok(ctx.konst(0).filter(|d| d.dtype.is_int()).map(|d| vec![d.clone()])),
        2 => fold_int_pair(ctx, out, |x, y| Ok(Some(pick(x, y)))),
        _ => Ok(None),
    }
}

fn where_(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let c = ctx.dtype(0)?;
    if c != DType::Bool {
        return Err(ctx.err(format!("condition (input 0) must be bool, got {c}")));
    }
    let dtype = ctx.dtype(1)?;
    same_dtype(ctx, 1..3, dtype)?;
    Ok(vec![typed(dtype, broadcast_slots(ctx, 0..3)?)])
}

fn binary_slots(ctx: &Ctx) -> Result<()> {
    if ctx.node.inputs.len() != 2 {
        return Err(ctx.err(format!("takes 2 inputs, got {}", ctx.node.inputs.len())));
    }
    Ok(())
}

fn compare(ctx: &Ctx) -> Result<Vec<TensorType>> {
    binary_slots(ctx)?;
    let dtype = ctx.dtype(0)?;
    same_dtype(ctx, 0..2, dtype)?;
    Ok(vec![typed(DType::Bool, broadcast_slots(ctx, 0..2)?)])
}

fn logical(ctx: &Ctx) -> Result<Vec<TensorType>> {
    binary_slots(ctx)?;
    same_dtype(ctx, 0..2, DType::Bool)?;
    Ok(vec![typed(DType::Bool, broadcast_slots(ctx, 0..2)?)])
}

// ---- kernel bindings --------------------------------------------------------

/// Output shape and, unless every input is the output's size, the
/// broadcast strides of each listed input (`None`: all contiguous).
/// Output shape, and per input its element strides (`None`: contiguous).
pub(super) type Layout = (Vec<usize>, Option<Vec<Vec<usize>>>);

pub(super) fn broadcast_layout(ctx: &KernelCtx, slots: &[usize]) -> Result<Layout> {
    let y = ctx.out_shape(0)?;
    let n = numel(&y);
    let shapes: Vec<Vec<usize>> = slots.iter().map(|&i| ctx.in_shape(i)).collect::<Result<_>>()?;
    if shapes.iter().all(|s| numel(s) == n) {
        return Ok((y, None));
    }
    max_dims(ctx, y.len())?;
    let st = shapes.iter().map(|s| broadcast_strides(ctx, s, &y)).collect::<Result<_>>()?;
    Ok((y, Some(st)))
}

/// The element types variadic Max / Min kernels are built for: the
/// kernel name's suffix, its args struct and the C type of its input list.
const VARIADIC_FORMS: &[(DType, &str, &str, &str)] = &[
    (DType::F32, "f32", "dg_variadic_args_t", "const float *const"),
    (DType::I64, "i64", "dg_variadic_typed_args_t", "const void *const"),
    (DType::I32, "i32", "dg_variadic_typed_args_t", "const void *const"),
    (DType::I8, "i8", "dg_variadic_typed_args_t", "const void *const"),
    (DType::U8, "u8", "dg_variadic_typed_args_t", "const void *const"),
];

/// Variadic `<stem>_<suffix>`, the form of the inputs' type (every input
/// has one type, the shape rule's check).
fn bind_variadic(ctx: &KernelCtx, stem: &'static str) -> Result<KernelCall> {
    let slots: Vec<usize> = (0..ctx.node.inputs.len()).filter(|&i| ctx.node.input(i).is_some()).collect();
    if slots.is_empty() || slots.len() > 8 {
        return Err(ctx.err(format!("{} inputs; the kernel takes 1 to 8", slots.len())));
    }
    let d = ctx.in_dtype(slots[0])?;
    let Some(&(_, suffix, args_type, ctype)) = VARIADIC_FORMS.iter().find(|f| f.0 == d) else {
        let known: Vec<String> = VARIADIC_FORMS.iter().map(|f| f.0.to_string()).collect();
        return Err(ctx.err(format!("input 0 is {d}; the kernel binding computes in {} only", known.join(", "))));
    };
    let xs = slots.iter().map(|&i| ctx.inp(i)).collect::<Result<Vec<_>>>()?;
    let (y, st) = broadcast_layout(ctx, &slots)?;
    let mut fields = vec![("x", Arg::Local("xs")), ("nin", u(xs.len())), ("y", ctx.out(0)?), ("n", u(numel(&y)))];
    match st {
        None => fields.push(("ndim", u(0))),
        Some(st) => {
            fields.push(("ndim", u(y.len())));
            fields.push(("shape", dims_list(&y)));
            fields.push(("strides", Arg::List(st.iter().map(|s| dims_list(s)).collect())));
        }
    }
    let mut inv = call(&format!("{stem}_{suffix}"), args_type, fields);
    inv.locals.push(Local { ctype, name: "xs", values: xs });
    one(inv)
}

pub(super) fn bind_where(ctx: &KernelCtx) -> Result<KernelCall> {
    if ctx.in_dtype(0)? != DType::Bool {
        return Err(ctx.err(format!("the condition must be bool, found {}", ctx.in_dtype(0)?)));
    }
    let es = elem_size(ctx, ctx.out_dtype(0)?)?;
    if ![1, 2, 4, 8].contains(&es) {
        return Err(ctx.err(format!("elements of {es} bytes; the kernel moves 1, 2, 4 or 8")));
    }
    let (y, st) = broadcast_layout(ctx, &[0, 1, 2])?;
    let mut fields = vec![
        ("cond", ctx.inp(0)?),
        ("x", ctx.inp(1)?),
        ("y", ctx.inp(2)?),
        ("out", ctx.out(0)?),
        ("elem_size", u(es)),
        ("n", u(numel(&y))),
    ];
    match st {
        None => fields.push(("ndim", u(0))),
        Some(st) => {
            fields.push(("ndim", u(y.len())));
            fields.push(("shape", dims_list(&y)));
            fields.push(("c_strides", dims_list(&st[0])));
            fields.push(("x_strides", dims_list(&st[1])));
            fields.push(("y_strides", dims_list(&st[2])));
        }
    }
    one(call("dg_where", "dg_where_args_t", fields))
}

/// A comparison: `<stem>_<suffix>` of [`NUMBERS`].
fn bind_compare(ctx: &KernelCtx, stem: &'static str) -> Result<KernelCall> {
    bind_two(ctx, stem, NUMBERS)
}

/// And, Or, Xor: `<stem>_bool`.
fn bind_logical(ctx: &KernelCtx, stem: &'static str) -> Result<KernelCall> {
    bind_two(ctx, stem, BOOLS)
}

/// `<stem>_<suffix>(a, b) -> y` broadcast, of the operands' form in `forms`.
fn bind_two(ctx: &KernelCtx, stem: &str, forms: Forms) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    let (Some(&(_, suffix)), true) = (forms.iter().find(|(t, _)| *t == d), ctx.in_dtype(1)? == d) else {
        let known: Vec<String> = forms.iter().map(|(t, _)| t.to_string()).collect();
        return Err(ctx.err(format!(
            "inputs are ({d}, {}); the kernel compares two {} operands only",
            ctx.in_dtype(1)?,
            known.join(", two ")
        )));
    };
    let func = format!("{stem}_{suffix}");
    let (y, st) = broadcast_layout(ctx, &[0, 1])?;
    let mut fields = vec![("a", ctx.inp(0)?), ("b", ctx.inp(1)?), ("y", ctx.out(0)?), ("n", u(numel(&y)))];
    match st {
        None => fields.push(("ndim", u(0))),
        Some(st) => {
            fields.push(("ndim", u(y.len())));
            fields.push(("shape", dims_list(&y)));
            fields.push(("a_strides", dims_list(&st[0])));
            fields.push(("b_strides", dims_list(&st[1])));
        }
    }
    one(call(&func, "dg_compare_args_t", fields))
}

// ---- gradient rules ------------------------------------------------------------------------

fn max_grad(ctx: &mut GradCtx) -> Result<()> {
    pick_grad(ctx, "GreaterOrEqual")
}

fn min_grad(ctx: &mut GradCtx) -> Result<()> {
    pick_grad(ctx, "LessOrEqual")
}

/// Max / Min of two inputs: dY goes to the one picked (the first on a tie).
fn pick_grad(ctx: &mut GradCtx, compare: &str) -> Result<()> {
    if ctx.node.inputs.len() != 2 {
        return Err(ctx.err(format!("{} inputs: the gradient rule takes two", ctx.node.inputs.len())));
    }
    let (dy, a, b) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let first = ctx.op(compare, &[a, b], "first_picked")?;
    route(ctx, first, dy, [0, 1])
}

/// Where(cond, X, Y): dX = dY where cond, dY = dY elsewhere.
fn where_grad(ctx: &mut GradCtx) -> Result<()> {
    let (cond, dy) = (ctx.x(0)?, ctx.dy(0)?);
    route(ctx, cond, dy, [1, 2])
}

/// dY where `cond` to input `slots[0]`, elsewhere to `slots[1]`.
fn route(ctx: &mut GradCtx, cond: TensorId, dy: TensorId, slots: [usize; 2]) -> Result<()> {
    let zero = ctx.scalar("zero", 0.0);
    for (k, &slot) in slots.iter().enumerate() {
        if !ctx.needs(slot) {
            continue;
        }
        let (a, b) = if k == 0 { (dy, zero) } else { (zero, dy) };
        let picked = ctx.op("Where", &[cond, a, b], &format!("picked{slot}"))?;
        ctx.set_unbroadcast(slot, picked)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{infer, Fixture};
    use crate::ir::{DType, TensorType};

    fn out(f: &Fixture) -> TensorType {
        infer(f).unwrap().remove(0)
    }

    #[test]
    fn max_min_broadcast_every_input() {
        for op in ["Max", "Min"] {
            let mut f = Fixture::new(op);
            f.input("a", DType::F32, &[2, 1, 4]);
            f.input("b", DType::F32, &[3, 1]);
            f.input("c", DType::F32, &[1]);
            assert_eq!(out(&f), TensorType::new(DType::F32, &[2, 3, 4]));
            f.input("d", DType::F32, &[5]);
            assert!(infer(&f).unwrap_err().to_string().contains("do not broadcast"));
        }
        let mut f = Fixture::new("Max");
        f.input("a", DType::F32, &[2]);
        f.input("b", DType::I64, &[2]);
        assert!(infer(&f).is_err());
    }

    #[test]
    fn where_broadcasts_condition_and_branches() {
        let mut f = Fixture::new("Where");
        f.input("c", DType::Bool, &[1, 4, 1, 10]);
        f.input("x", DType::F32, &[1, 4, 10, 10]);
        f.input("y", DType::F32, &[10]);
        assert_eq!(out(&f), TensorType::new(DType::F32, &[1, 4, 10, 10]));
        let mut f = Fixture::new("Where");
        f.input("c", DType::F32, &[1]);
        f.input("x", DType::F32, &[1]);
        f.input("y", DType::F32, &[1]);
        assert!(infer(&f).unwrap_err().to_string().contains("bool"));
    }

    #[test]
    fn comparisons_give_bool() {
        let mut f = Fixture::new("GreaterOrEqual");
        f.input("a", DType::F32, &[2, 3]);
        f.input("b", DType::F32, &[]);
        assert_eq!(out(&f), TensorType::new(DType::Bool, &[2, 3]));
        let mut f = Fixture::new("And");
        f.input("a", DType::Bool, &[2, 3]);
        f.input("b", DType::F32, &[2, 3]);
        assert!(infer(&f).is_err());
    }
}
