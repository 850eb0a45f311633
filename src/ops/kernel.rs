//! Kernel bindings: for each operator, how its node becomes a call of a
//! `runtime/kernels` function (`dg_<op>_f32(void *args)` on a filled-in
//! args struct, forked on the cluster team).
//!
//! One function per kernel family with the common signature [`KernelFn`];
//! each operator's registry entry names its binding (`OpDef::kernel`), so
//! the emitter never knows operators. A binding reads everything it needs from
//! the [`KernelCtx`] — the node, its graph (shapes, dtypes, attributes,
//! compile-time constants) and the C expression of each operand's pointer
//! where the plan has the kernel compute on it — and returns the call(s)
//! as data; the templates write the C.

use crate::error::{Error, Result};
use crate::ir::{Attr, DType, Graph, Model, Node};
use crate::ops;

/// One member of a sequence operand (SGDOptimizerV2's `params` /
/// `gradients`), as the kernel sees it.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub param: String,
    pub grad: String,
    pub numel: usize,
    /// Buffers whose per-node copy serves this member (filled before, and
    /// written back after, this member's call).
    pub stage: Vec<usize>,
}

/// What a kernel binding sees.
pub struct KernelCtx<'a> {
    pub model: &'a Model,
    pub graph: &'a Graph,
    pub node: &'a Node,
    /// C pointer expression of each input slot, where the kernel computes
    /// on it; `None` for an omitted input or one read only at compile time.
    pub inputs: Vec<Option<String>>,
    pub outputs: Vec<Option<String>>,
    /// The node's scratch buffer, when the plan gave it one.
    pub scratch: Option<String>,
    /// Sequence members (SGDOptimizerV2), in parameter order.
    pub members: Vec<Member>,
}

/// A local array a call needs (pointer lists, sizes).
#[derive(Clone, Debug)]
pub struct Local {
    pub ctype: String,
    pub name: String,
    pub values: Vec<String>,
}

/// One kernel call.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// C function, `void f(void *args)`.
    pub func: String,
    /// Its args struct type.
    pub args_type: String,
    /// Designated initialisers: field name, C expression.
    pub fields: Vec<(String, String)>,
    /// Run on the cluster team (`pi_cl_team_fork`); otherwise called
    /// directly on the controller.
    pub forked: bool,
    pub locals: Vec<Local>,
    /// Buffers to stage around this call only (see [`Member::stage`]);
    /// everything else is staged around the whole node.
    pub stage: Vec<usize>,
    pub comment: Option<String>,
}

/// The code of one node.
#[derive(Clone, Debug, Default)]
pub struct KernelCall {
    pub calls: Vec<Invocation>,
    /// State a node updates through an output that training must carry
    /// over to the next run (BatchNorm running statistics): (input slot,
    /// output slot); the output's value is copied into the input's buffer
    /// after the node.
    pub state_updates: Vec<(usize, usize)>,
}

pub type KernelFn = fn(&KernelCtx) -> Result<KernelCall>;

// ---- context helpers ------------------------------------------------------

impl KernelCtx<'_> {
    pub fn err(&self, detail: impl Into<String>) -> Error {
        Error::node(self.node, detail)
    }

    fn ops(&self) -> ops::Ctx<'_> {
        ops::Ctx { graph: self.graph, node: self.node }
    }

    /// Pointer of a required input.
    pub fn inp(&self, i: usize) -> Result<String> {
        self.inputs.get(i).cloned().flatten().ok_or_else(|| self.err(format!("input {i} has no buffer to compute on")))
    }

    /// Pointer of an optional input, `NULL` when absent.
    pub fn opt_in(&self, i: usize) -> String {
        self.inputs.get(i).cloned().flatten().unwrap_or_else(|| "NULL".into())
    }

    pub fn out(&self, i: usize) -> Result<String> {
        self.outputs.get(i).cloned().flatten().ok_or_else(|| self.err(format!("output {i} has no buffer")))
    }

    pub fn opt_out(&self, i: usize) -> String {
        self.outputs.get(i).cloned().flatten().unwrap_or_else(|| "NULL".into())
    }

    pub fn has_out(&self, i: usize) -> bool {
        self.outputs.get(i).is_some_and(Option::is_some)
    }

    pub fn in_shape(&self, i: usize) -> Result<Vec<usize>> {
        let t = self.node.input(i).ok_or_else(|| self.err(format!("input {i} is missing")))?;
        self.graph.tensor(t).ty.shape().ok_or_else(|| self.err(format!("input {i} has no static shape")))
    }

    pub fn out_shape(&self, i: usize) -> Result<Vec<usize>> {
        let t = self.node.output(i).ok_or_else(|| self.err(format!("output {i} is missing")))?;
        self.graph.tensor(t).ty.shape().ok_or_else(|| self.err(format!("output {i} has no static shape")))
    }

    pub fn in_dtype(&self, i: usize) -> Result<DType> {
        let t = self.node.input(i).ok_or_else(|| self.err(format!("input {i} is missing")))?;
        Ok(self.graph.tensor(t).ty.dtype)
    }

    pub fn out_dtype(&self, i: usize) -> Result<DType> {
        let t = self.node.output(i).ok_or_else(|| self.err(format!("output {i} is missing")))?;
        Ok(self.graph.tensor(t).ty.dtype)
    }

    /// The fp32 kernels take fp32 operands only.
    fn require_f32(&self, slots: &[usize]) -> Result<()> {
        for &i in slots {
            if self.node.input(i).is_some() && self.in_dtype(i)? != DType::F32 {
                return Err(
                    self.err(format!("input {i} is {}; the kernel binding computes in f32 only", self.in_dtype(i)?))
                );
            }
        }
        Ok(())
    }

    pub fn attr_int(&self, name: &str, default: i64) -> Result<i64> {
        match self.node.attrs.get(name) {
            None => Ok(default),
            Some(Attr::Int(v)) => Ok(*v),
            Some(other) => Err(self.err(format!("attribute '{name}' must be an int, found {other:?}"))),
        }
    }

    pub fn attr_float(&self, name: &str, default: f32) -> Result<f32> {
        match self.node.attrs.get(name) {
            None => Ok(default),
            Some(Attr::Float(v)) => Ok(*v),
            Some(Attr::Int(v)) => Ok(*v as f32),
            Some(other) => Err(self.err(format!("attribute '{name}' must be a float, found {other:?}"))),
        }
    }

    pub fn attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.node.attrs.get(name) {
            None => Ok(None),
            Some(Attr::Ints(v)) => Ok(Some(v.clone())),
            Some(other) => Err(self.err(format!("attribute '{name}' must be a list of ints, found {other:?}"))),
        }
    }

    pub fn attr_str(&self, name: &str) -> Result<Option<String>> {
        match self.node.attrs.get(name) {
            None => Ok(None),
            Some(Attr::String(v)) => Ok(Some(v.clone())),
            Some(other) => Err(self.err(format!("attribute '{name}' must be a string, found {other:?}"))),
        }
    }

    fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        self.ops().axis(axis, rank)
    }

    /// The default-domain opset the graph imports.
    fn opset(&self) -> i64 {
        self.graph.opsets.get("").copied().unwrap_or(13)
    }
}

fn u(v: usize) -> String {
    format!("{v}u")
}

fn f(v: f32) -> String {
    crate::c::f32_lit(v)
}

fn to_u32(ctx: &KernelCtx, what: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| ctx.err(format!("{what} is {v}; it must not be negative")))
}

fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// A call of `func(&args)` on the team.
fn call(func: &str, args_type: &str, fields: Vec<(&str, String)>) -> Invocation {
    Invocation {
        func: func.into(),
        args_type: args_type.into(),
        fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        forked: true,
        locals: vec![],
        stage: vec![],
        comment: None,
    }
}

fn one(inv: Invocation) -> Result<KernelCall> {
    Ok(KernelCall { calls: vec![inv], ..Default::default() })
}

fn dims_list(v: &[usize]) -> String {
    if v.is_empty() {
        "{0}".into()
    } else {
        format!("{{{}}}", v.iter().map(|x| u(*x)).collect::<Vec<_>>().join(", "))
    }
}

fn ints_list(v: &[i64]) -> String {
    if v.is_empty() {
        "{0}".into()
    } else {
        format!("{{{}}}", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
    }
}

/// Row-major element strides of a shape.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Strides of `inp` broadcast to `out` (right-aligned; 0 on broadcast dims).
fn broadcast_strides(ctx: &KernelCtx, inp: &[usize], out: &[usize]) -> Result<Vec<usize>> {
    if inp.len() > out.len() {
        return Err(ctx.err(format!("shape {inp:?} does not broadcast to {out:?}")));
    }
    let st = strides(inp);
    let off = out.len() - inp.len();
    let mut r = vec![0; out.len()];
    for d in 0..out.len() {
        if d < off {
            continue;
        }
        let k = d - off;
        if inp[k] == out[d] {
            r[d] = if inp[k] == 1 { 0 } else { st[k] };
        } else if inp[k] == 1 {
            r[d] = 0;
        } else {
            return Err(ctx.err(format!("shape {inp:?} does not broadcast to {out:?}")));
        }
    }
    Ok(r)
}

fn max_dims(ctx: &KernelCtx, n: usize) -> Result<()> {
    if n > 6 {
        return Err(ctx.err(format!("rank {n} is above the kernels' limit of 6 dimensions")));
    }
    Ok(())
}

fn elem_size(ctx: &KernelCtx, d: DType) -> Result<usize> {
    d.size().ok_or_else(|| ctx.err(format!("dtype {d} has no element size")))
}

// ---- elementwise ------------------------------------------------------------

pub fn binary(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let func = match ctx.node.op.as_str() {
        "Add" => "dg_add_f32",
        "Sub" => "dg_sub_f32",
        "Mul" => "dg_mul_f32",
        "Div" => "dg_div_f32",
        _ => "dg_pow_f32",
    };
    let (a, b, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let n = numel(&y);
    let mut fields = vec![("a", ctx.inp(0)?), ("b", ctx.inp(1)?), ("y", ctx.out(0)?), ("n", u(n))];
    if !(numel(&a) == n && numel(&b) == n) {
        max_dims(ctx, y.len())?;
        fields.push(("ndim", u(y.len())));
        fields.push(("shape", dims_list(&y)));
        fields.push(("a_strides", dims_list(&broadcast_strides(ctx, &a, &y)?)));
        fields.push(("b_strides", dims_list(&broadcast_strides(ctx, &b, &y)?)));
    } else {
        fields.push(("ndim", u(0)));
    }
    one(call(func, "dg_binary_args_t", fields))
}

pub fn unary(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let func = match ctx.node.op.as_str() {
        "Relu" => "dg_relu_f32",
        "Gelu" => "dg_gelu_f32",
        "Ceil" => "dg_ceil_f32",
        "Floor" => "dg_floor_f32",
        "Exp" => "dg_exp_f32",
        "Log" => "dg_log_f32",
        "Sqrt" => "dg_sqrt_f32",
        "Neg" => "dg_neg_f32",
        "Abs" => "dg_abs_f32",
        "Tanh" => "dg_tanh_f32",
        "Sigmoid" => "dg_sigmoid_f32",
        "Erf" => "dg_erf_f32",
        "HardSwish" => "dg_hard_swish_f32",
        _ => "dg_sign_f32",
    };
    if ctx.node.op == "Gelu" && ctx.attr_str("approximate")?.is_some_and(|a| a != "none") {
        return Err(ctx.err("Gelu with approximate='tanh': the kernel computes the erf form only"));
    }
    let n = numel(&ctx.out_shape(0)?);
    one(call(func, "dg_unary_args_t", vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n))]))
}

pub fn scale(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let n = numel(&ctx.out_shape(0)?);
    let down = ctx.attr_int("scale_down", 0)?;
    // A non-float scale (ORT casts it) is a constant: pass it as a float.
    let mut locals = vec![];
    let sc = if ctx.in_dtype(1)? == DType::F32 {
        ctx.inp(1)?
    } else {
        let k = ctx.ops().konst(1).ok_or_else(|| ctx.err("a non-float scale must be a constant"))?;
        let v = match (k.to_i64(), k.to_f32()) {
            (Some(v), _) => v.first().copied().unwrap_or(0) as f32,
            (None, Some(v)) => v.first().copied().unwrap_or(0.0),
            (None, None) => return Err(ctx.err("the scale constant has no numeric value")),
        };
        locals.push(Local { ctype: "const float".into(), name: "scale_value".into(), values: vec![f(v)] });
        "scale_value".into()
    };
    let mut inv = call(
        "dg_scale_f32",
        "dg_scale_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", sc),
            ("y", ctx.out(0)?),
            ("n", u(n)),
            ("scale_down", u(usize::from(down != 0))),
        ],
    );
    inv.locals = locals;
    one(inv)
}

pub fn sum(ctx: &KernelCtx) -> Result<KernelCall> {
    let y = ctx.out_shape(0)?;
    let mut xs = vec![];
    for i in 0..ctx.node.inputs.len() {
        ctx.require_f32(&[i])?;
        if numel(&ctx.in_shape(i)?) != numel(&y) {
            return Err(ctx.err("Sum with broadcasting: the kernel adds same-shaped inputs only"));
        }
        xs.push(ctx.inp(i)?);
    }
    let mut inv = call(
        "dg_sum_f32",
        "dg_sum_args_t",
        vec![("x", "xs".into()), ("nin", u(xs.len())), ("y", ctx.out(0)?), ("n", u(numel(&y)))],
    );
    inv.locals.push(Local { ctype: "const float *const".into(), name: "xs".into(), values: xs });
    one(inv)
}

pub fn act_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let func = if ctx.node.op == "ReluGrad" { "dg_relu_grad_f32" } else { "dg_gelu_grad_f32" };
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        func,
        "dg_act_grad_args_t",
        vec![("dy", ctx.inp(0)?), ("x", ctx.inp(1)?), ("dx", ctx.out(0)?), ("n", u(n))],
    ))
}

/// A float attribute read through the typed accessor (an INT where a
/// FLOAT belongs is an error, not a silent default).
fn float_attr(ctx: &KernelCtx, name: &str, default: f32) -> Result<f32> {
    Ok(ctx.node.float(name)?.unwrap_or(default))
}

pub fn unary_param(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let (func, alpha, beta) = match ctx.node.op.as_str() {
        "HardSigmoid" => ("dg_hard_sigmoid_f32", float_attr(ctx, "alpha", 0.2)?, float_attr(ctx, "beta", 0.5)?),
        "QuickGelu" => ("dg_swish_f32", float_attr(ctx, "alpha", 1.702)?, 0.0),
        _ => ("dg_swish_f32", float_attr(ctx, "alpha", 1.0)?, 0.0),
    };
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        func,
        "dg_unary_param_args_t",
        vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n)), ("alpha", f(alpha)), ("beta", f(beta))],
    ))
}

/// A single-value constant input as f32 (float or integer constants).
fn scalar_const(ctx: &KernelCtx, slot: usize) -> Result<Option<f32>> {
    let Some(k) = ctx.ops().konst(slot) else { return Ok(None) };
    let v = match (k.to_f32(), k.to_i64()) {
        (Some(v), _) => v,
        (None, Some(v)) => v.iter().map(|&x| x as f32).collect(),
        (None, None) => {
            return Err(ctx.err(format!("input {slot} is a constant of type {} with no numeric value", k.dtype)))
        }
    };
    match v.as_slice() {
        [x] => Ok(Some(*x)),
        _ => Err(ctx.err(format!("input {slot} must be a single value, found {} values", v.len()))),
    }
}

/// One Clip bound: (pointer, value, has): a compile-time constant input,
/// a runtime input (pointer), the opset-6 attribute, or none.
fn clip_bound(ctx: &KernelCtx, slot: usize, attr: &str) -> Result<(String, f32, bool)> {
    if ctx.node.input(slot).is_some() {
        if let Some(v) = scalar_const(ctx, slot)? {
            return Ok(("NULL".into(), v, true));
        }
        return Ok((ctx.inp(slot)?, 0.0, false));
    }
    Ok(match ctx.node.float(attr)? {
        Some(v) => ("NULL".into(), v, true),
        None => ("NULL".into(), 0.0, false),
    })
}

pub fn clip(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let n = numel(&ctx.out_shape(0)?);
    let (min_ptr, min, has_min) = clip_bound(ctx, 1, "min")?;
    let (max_ptr, max, has_max) = clip_bound(ctx, 2, "max")?;
    one(call(
        "dg_clip_f32",
        "dg_clip_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("n", u(n)),
            ("min_ptr", min_ptr),
            ("max_ptr", max_ptr),
            ("min", f(min)),
            ("max", f(max)),
            ("has_min", u(usize::from(has_min))),
            ("has_max", u(usize::from(has_max))),
        ],
    ))
}

pub fn act_grad_y(ctx: &KernelCtx) -> Result<KernelCall> {
    // (dY, Y) -> dX
    ctx.require_f32(&[0, 1])?;
    let func = if ctx.node.op == "SigmoidGrad" { "dg_sigmoid_grad_f32" } else { "dg_tanh_grad_f32" };
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        func,
        "dg_act_grad_y_args_t",
        vec![("dy", ctx.inp(0)?), ("y", ctx.inp(1)?), ("dx", ctx.out(0)?), ("n", u(n))],
    ))
}

pub fn swish_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    // QuickGeluGrad(dY, X){alpha}
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        "dg_swish_grad_f32",
        "dg_swish_grad_args_t",
        vec![
            ("dy", ctx.inp(0)?),
            ("x", ctx.inp(1)?),
            ("dx", ctx.out(0)?),
            ("n", u(n)),
            ("alpha", f(float_attr(ctx, "alpha", 1.702)?)),
        ],
    ))
}

/// Output shape and, unless every input is the output's size, the
/// broadcast strides of each listed input (`None`: all contiguous).
/// Output shape, and per input its element strides (`None`: contiguous).
type Layout = (Vec<usize>, Option<Vec<Vec<usize>>>);

fn broadcast_layout(ctx: &KernelCtx, slots: &[usize]) -> Result<Layout> {
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

pub fn variadic(ctx: &KernelCtx) -> Result<KernelCall> {
    let slots: Vec<usize> = (0..ctx.node.inputs.len()).filter(|&i| ctx.node.input(i).is_some()).collect();
    if slots.is_empty() || slots.len() > 8 {
        return Err(ctx.err(format!("{} inputs; the kernel takes 1 to 8", slots.len())));
    }
    ctx.require_f32(&slots)?;
    let xs = slots.iter().map(|&i| ctx.inp(i)).collect::<Result<Vec<_>>>()?;
    let (y, st) = broadcast_layout(ctx, &slots)?;
    let func = if ctx.node.op == "Max" { "dg_max_f32" } else { "dg_min_f32" };
    let mut fields = vec![("x", "xs".to_string()), ("nin", u(xs.len())), ("y", ctx.out(0)?), ("n", u(numel(&y)))];
    match st {
        None => fields.push(("ndim", u(0))),
        Some(st) => {
            fields.push(("ndim", u(y.len())));
            fields.push(("shape", dims_list(&y)));
            fields.push(("strides", format!("{{{}}}", st.iter().map(|s| dims_list(s)).collect::<Vec<_>>().join(", "))));
        }
    }
    let mut inv = call(func, "dg_variadic_args_t", fields);
    inv.locals.push(Local { ctype: "const float *const".into(), name: "xs".into(), values: xs });
    one(inv)
}

pub fn where_(ctx: &KernelCtx) -> Result<KernelCall> {
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

pub fn compare(ctx: &KernelCtx) -> Result<KernelCall> {
    let want = if ctx.node.op == "And" { DType::Bool } else { DType::F32 };
    for i in [0, 1] {
        let d = ctx.in_dtype(i)?;
        if d != want {
            return Err(ctx.err(format!("input {i} is {d}; the kernel compares {want} operands only")));
        }
    }
    let func = match ctx.node.op.as_str() {
        "Equal" => "dg_equal_f32",
        "Less" => "dg_less_f32",
        "LessOrEqual" => "dg_less_equal_f32",
        "Greater" => "dg_greater_f32",
        "GreaterOrEqual" => "dg_greater_equal_f32",
        _ => "dg_and_bool",
    };
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
    one(call(func, "dg_compare_args_t", fields))
}

fn cast_code(ctx: &KernelCtx, d: DType) -> Result<&'static str> {
    Ok(match d {
        DType::F32 => "DG_DT_F32",
        DType::I64 => "DG_DT_I64",
        DType::I32 => "DG_DT_I32",
        DType::U8 => "DG_DT_U8",
        DType::Bool => "DG_DT_BOOL",
        other => return Err(ctx.err(format!("cast of {other}: the kernel casts f32, i64, i32, u8 and bool"))),
    })
}

pub fn cast(ctx: &KernelCtx) -> Result<KernelCall> {
    let (from, to) = (cast_code(ctx, ctx.in_dtype(0)?)?, cast_code(ctx, ctx.out_dtype(0)?)?);
    let n = numel(&ctx.out_shape(0)?);
    one(call(
        "dg_cast",
        "dg_cast_args_t",
        vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("n", u(n)), ("from", from.into()), ("to", to.into())],
    ))
}

// ---- linear algebra -------------------------------------------------------------

pub fn gemm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let (a, b, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let ta = ctx.attr_int("transA", 0)? != 0;
    let tb = ctx.attr_int("transB", 0)? != 0;
    // Exporters feed Gemm [.., M, K] with leading 1s or batch dims (rows
    // of A, unless transposed): the rows flatten into M.
    let lead1 = |s: &[usize]| s.len() >= 2 && s[..s.len() - 2].iter().all(|&d| d == 1);
    let ok = a.len() >= 2 && (!ta || lead1(&a)) && lead1(&b) && !y.is_empty();
    if !ok && a.len() > 2 && b.len() > 2 && ctx.node.input(2).is_none() {
        // A batched Gemm (some exporters write MatMul gradients so): a
        // batched matmul with transposes and a scale.
        return matmul_with(ctx, ta, tb, ctx.attr_float("alpha", 1.0)?, true);
    }
    if !ok {
        return Err(ctx.err(format!("Gemm operands must be 2-D (A {a:?}, B {b:?}, Y {y:?})")));
    }
    let (ar, br) = (a.len(), b.len());
    let (m, k) = if ta { (a[ar - 1], a[ar - 2]) } else { (numel(&a[..ar - 1]), a[ar - 1]) };
    let n = if tb { b[br - 2] } else { b[br - 1] };
    if numel(&y) != m * n {
        return Err(ctx.err(format!("Gemm output {y:?} does not hold {m} x {n} values")));
    }
    let (mut csm, mut csn) = (0, 0);
    if ctx.node.input(2).is_some() {
        let c = ctx.in_shape(2)?;
        let dn = c.last().copied().unwrap_or(1);
        let dm = if c.len() >= 2 { numel(&c[..c.len() - 1]) } else { 1 };
        csn = if dn == 1 { 0 } else { 1 };
        csm = if dm == 1 { 0 } else { dn };
    }
    one(call(
        "dg_gemm_f32",
        "dg_gemm_args_t",
        vec![
            ("a", ctx.inp(0)?),
            ("b", ctx.inp(1)?),
            ("c", ctx.opt_in(2)),
            ("y", ctx.out(0)?),
            ("m", u(m)),
            ("n", u(n)),
            ("k", u(k)),
            ("trans_a", u(usize::from(ta))),
            ("trans_b", u(usize::from(tb))),
            ("alpha", f(ctx.attr_float("alpha", 1.0)?)),
            ("beta", f(ctx.attr_float("beta", 1.0)?)),
            ("c_stride_m", u(csm)),
            ("c_stride_n", u(csn)),
        ],
    ))
}

pub fn matmul(ctx: &KernelCtx) -> Result<KernelCall> {
    let fused = ctx.node.op == "FusedMatMul";
    let (ta, tb, alpha) = if fused {
        if ctx.attr_int("transBatchA", 0)? != 0 || ctx.attr_int("transBatchB", 0)? != 0 {
            return Err(ctx.err("FusedMatMul with transBatchA/transBatchB is not supported by the kernel"));
        }
        (ctx.attr_int("transA", 0)? != 0, ctx.attr_int("transB", 0)? != 0, ctx.attr_float("alpha", 1.0)?)
    } else {
        (false, false, 1.0)
    };
    matmul_with(ctx, ta, tb, alpha, fused)
}

fn matmul_with(ctx: &KernelCtx, ta: bool, tb: bool, alpha: f32, fused: bool) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let (mut a, mut b) = (ctx.in_shape(0)?, ctx.in_shape(1)?);
    if a.len() == 1 {
        a = if ta { vec![a[0], 1] } else { vec![1, a[0]] };
    }
    if b.len() == 1 {
        b = if tb { vec![1, b[0]] } else { vec![b[0], 1] };
    }
    let (ar, br) = (a.len(), b.len());
    let (m, k) = if ta { (a[ar - 1], a[ar - 2]) } else { (a[ar - 2], a[ar - 1]) };
    let n = if tb { b[br - 2] } else { b[br - 1] };
    let (ab, bb) = (&a[..ar - 2], &b[..br - 2]);
    let nb = ab.len().max(bb.len());
    if nb > 4 {
        return Err(ctx.err("more than 4 batch dimensions"));
    }
    let mut batch_shape = vec![1; nb];
    for d in 0..nb {
        let da = if d + ab.len() >= nb { ab[d + ab.len() - nb] } else { 1 };
        let db = if d + bb.len() >= nb { bb[d + bb.len() - nb] } else { 1 };
        if da != db && da != 1 && db != 1 {
            return Err(ctx.err(format!("batch dims {ab:?} and {bb:?} do not broadcast")));
        }
        batch_shape[d] = da.max(db);
    }
    let bstr = |x: &[usize], mat: usize| -> Vec<usize> {
        let mut st = vec![0; nb];
        let mut acc = mat;
        for d in (0..nb).rev() {
            let xd = if d + x.len() >= nb { x[d + x.len() - nb] } else { 1 };
            st[d] = if xd == 1 { 0 } else { acc };
            acc *= xd;
        }
        st
    };
    let a_st = bstr(ab, m * k);
    let b_st = bstr(bb, k * n);
    let batch = numel(&batch_shape);
    let mut fields = vec![
        ("a", ctx.inp(0)?),
        ("b", ctx.inp(1)?),
        ("y", ctx.out(0)?),
        ("m", u(m)),
        ("n", u(n)),
        ("k", u(k)),
        ("batch", u(batch)),
        ("nbatch_dims", u(nb)),
        ("batch_shape", dims_list(&batch_shape)),
        ("a_bstrides", dims_list(&a_st)),
        ("b_bstrides", dims_list(&b_st)),
    ];
    let func = if fused {
        fields.push(("trans_a", u(usize::from(ta))));
        fields.push(("trans_b", u(usize::from(tb))));
        fields.push(("alpha", f(alpha)));
        "dg_fused_matmul_f32"
    } else {
        "dg_matmul_f32"
    };
    one(call(func, "dg_matmul_args_t", fields))
}

// ---- convolution ----------------------------------------------------------------

/// The geometry of a 1-D or 2-D convolution or pool, NCHW.
struct Geom {
    batch: usize,
    in_c: usize,
    in_h: usize,
    in_w: usize,
    out_c: usize,
    out_h: usize,
    out_w: usize,
    k_h: usize,
    k_w: usize,
    stride: [usize; 2],
    dil: [usize; 2],
    /// top, left, bottom, right
    pads: [usize; 4],
}

/// `x` the input, `y` the output (both full NCHW / NCL shapes), `kernel`
/// the spatial kernel size.
fn geom(ctx: &KernelCtx, x: &[usize], y: &[usize], kernel: &[usize]) -> Result<Geom> {
    let sp = x.len().saturating_sub(2);
    if !(1..=2).contains(&sp) || y.len() != x.len() || kernel.len() != sp {
        return Err(ctx.err(format!("only 1-D and 2-D windows are supported (input {x:?}, output {y:?})")));
    }
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
    let strides = get("strides", sp, 1)?;
    let dil = get("dilations", sp, 1)?;
    let pads = get("pads", 2 * sp, 0)?;
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

fn conv_fields(g: &Geom, group: usize) -> Vec<(&'static str, String)> {
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

pub fn conv(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let (x, w, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let g = geom(ctx, &x, &y, &w[2..])?;
    let group = to_u32(ctx, "group", ctx.attr_int("group", 1)?)?;
    let mut fields = vec![("x", ctx.inp(0)?), ("w", ctx.inp(1)?), ("b", ctx.opt_in(2)), ("y", ctx.out(0)?)];
    fields.extend(conv_fields(&g, group));
    one(call("dg_conv_f32", "dg_conv_args_t", fields))
}

pub fn conv_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    // ConvGrad(dY, X, W) -> dX, dW, dB
    let (dy, x, w) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.in_shape(2)?);
    let g = geom(ctx, &x, &dy, &w[2..])?;
    let group = to_u32(ctx, "group", ctx.attr_int("group", 1)?)?;
    let base = |c: &KernelCtx| -> Result<Vec<(&'static str, String)>> {
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
            calls.push(call(func, "dg_conv_args_t", fields));
        }
    }
    Ok(KernelCall { calls, ..Default::default() })
}

pub fn conv_transpose(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let (x, w, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let sp = x.len().saturating_sub(2);
    if !(1..=2).contains(&sp) || y.len() != x.len() || w.len() != x.len() {
        return Err(ctx.err(format!("only 1-D and 2-D ConvTranspose is supported (input {x:?}, output {y:?})")));
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
    let auto = ctx.node.string("auto_pad")?.unwrap_or("NOTSET");
    let derived = ctx.node.ints("output_shape")?.is_some() || matches!(auto, "SAME_UPPER" | "SAME_LOWER");
    // The begin pads; the end pads and output_padding are implied by the
    // output size the shape rule computed.
    let mut begin = vec![0usize; sp];
    for d in 0..sp {
        let (i, k, o) = (x[2 + d], w[2 + d], y[2 + d]);
        let full = strides[d] * (i - 1) + out_pad[d] + dil[d] * (k - 1) + 1;
        begin[d] = if derived {
            let total = full.checked_sub(o).ok_or_else(|| ctx.err(format!("output dim {o} exceeds {full}")))?;
            if auto == "SAME_UPPER" {
                total / 2
            } else {
                total - total / 2
            }
        } else if auto == "VALID" {
            0
        } else {
            pads[d]
        };
    }
    let group = to_u32(ctx, "group", ctx.node.int("group")?.unwrap_or(1))?;
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

// ---- pooling -------------------------------------------------------------------

fn pool_fields(g: &Geom) -> Vec<(&'static str, String)> {
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

fn kernel_shape(ctx: &KernelCtx) -> Result<Vec<usize>> {
    let k = ctx.attr_ints("kernel_shape")?.ok_or_else(|| ctx.err("attribute 'kernel_shape' is required"))?;
    k.iter().map(|&v| to_u32(ctx, "kernel_shape", v)).collect()
}

pub fn pool(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let (x, y) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let g = geom(ctx, &x, &y, &kernel_shape(ctx)?)?;
    if ctx.node.op == "MaxPool" {
        if ctx.has_out(1) && ctx.out_dtype(1)? != DType::I64 {
            return Err(ctx.err("MaxPool indices must be int64"));
        }
        if ctx.attr_int("storage_order", 0)? != 0 {
            return Err(ctx.err("MaxPool storage_order=1 is not supported"));
        }
        let mut fields = vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("indices", ctx.opt_out(1))];
        fields.extend(pool_fields(&g));
        one(call("dg_maxpool_f32", "dg_pool_args_t", fields))
    } else {
        if g.dil != [1, 1] {
            return Err(ctx.err("AveragePool with dilations is not supported by the kernel"));
        }
        let mut fields = vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?)];
        fields.extend(pool_fields(&g));
        fields.push(("count_include_pad", u(usize::from(ctx.attr_int("count_include_pad", 0)? != 0))));
        one(call("dg_avgpool_f32", "dg_pool_args_t", fields))
    }
}

pub fn maxpool_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    // MaxPoolGrad(dY, Indices) -> dX
    if ctx.in_dtype(1)? != DType::I64 {
        return Err(ctx.err("MaxPoolGrad indices must be int64"));
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

pub fn avgpool_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let (dy, dx) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let g = geom(ctx, &dx, &dy, &kernel_shape(ctx)?)?;
    if g.dil != [1, 1] {
        return Err(ctx.err("AveragePoolGrad with dilations is not supported by the kernel"));
    }
    let mut fields = vec![("dy", ctx.inp(0)?), ("dx", ctx.out(0)?)];
    fields.extend(pool_fields(&g));
    fields.push(("count_include_pad", u(usize::from(ctx.attr_int("count_include_pad", 0)? != 0))));
    one(call("dg_avgpool_grad_f32", "dg_pool_args_t", fields))
}

pub fn global_pool(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let grad = ctx.node.op.ends_with("Grad");
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
    let func = match ctx.node.op.as_str() {
        "GlobalMaxPool" => "dg_global_maxpool_f32",
        _ if grad => "dg_global_avgpool_grad_f32",
        _ => "dg_global_avgpool_f32",
    };
    one(call(func, "dg_pool_args_t", fields))
}

// ---- normalization -----------------------------------------------------------------

fn bn_dims(ctx: &KernelCtx, x: &[usize]) -> Result<[usize; 3]> {
    if x.len() < 2 {
        return Err(ctx.err(format!("BatchNormalization needs [N, C, ...], found {x:?}")));
    }
    Ok([x[0], x[1], numel(&x[2..])])
}

pub fn batchnorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2, 3, 4])?;
    let [b, c, s] = bn_dims(ctx, &ctx.in_shape(0)?)?;
    let train = ctx.node.op == "BatchNormInternal" || ctx.attr_int("training_mode", 0)? != 0;
    let mut fields = vec![
        ("x", ctx.inp(0)?),
        ("scale", ctx.inp(1)?),
        ("bias", ctx.inp(2)?),
        ("mean", ctx.inp(3)?),
        ("var", ctx.inp(4)?),
        ("y", ctx.out(0)?),
    ];
    let mut state_updates = vec![];
    if train {
        fields.push(("running_mean_out", ctx.opt_out(1)));
        fields.push(("running_var_out", ctx.opt_out(2)));
        fields.push(("saved_mean", ctx.opt_out(3)));
        fields.push(("saved_inv_std", ctx.opt_out(4)));
        // The running statistics carry over to the next run.
        for (i, o) in [(3, 1), (4, 2)] {
            if ctx.has_out(o) {
                state_updates.push((i, o));
            }
        }
    }
    fields.extend([
        ("batch", u(b)),
        ("channels", u(c)),
        ("spatial", u(s)),
        ("epsilon", f(ctx.attr_float("epsilon", 1e-5)?)),
        ("momentum", f(ctx.attr_float("momentum", 0.9)?)),
    ]);
    let func = if train { "dg_batchnorm_train_f32" } else { "dg_batchnorm_f32" };
    Ok(KernelCall { calls: vec![call(func, "dg_batchnorm_args_t", fields)], state_updates })
}

pub fn batchnorm_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2, 3, 4])?;
    let [b, c, s] = bn_dims(ctx, &ctx.in_shape(1)?)?;
    one(call(
        "dg_batchnorm_grad_f32",
        "dg_batchnorm_grad_args_t",
        vec![
            ("dy", ctx.inp(0)?),
            ("x", ctx.inp(1)?),
            ("scale", ctx.inp(2)?),
            ("saved_mean", ctx.inp(3)?),
            ("saved_inv_std", ctx.inp(4)?),
            ("dx", ctx.out(0)?),
            ("dscale", ctx.opt_out(1)),
            ("dbias", ctx.opt_out(2)),
            ("batch", u(b)),
            ("channels", u(c)),
            ("spatial", u(s)),
        ],
    ))
}

fn rows_cols(ctx: &KernelCtx, x: &[usize]) -> Result<(usize, usize)> {
    let axis = ctx.axis(ctx.attr_int("axis", -1)?, x.len())?;
    Ok((numel(&x[..axis]), numel(&x[axis..])))
}

pub fn layernorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let (rows, cols) = rows_cols(ctx, &x)?;
    if numel(&ctx.in_shape(1)?) != cols {
        return Err(ctx.err("LayerNormalization scale must have one value per normalised element"));
    }
    one(call(
        "dg_layernorm_f32",
        "dg_layernorm_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", ctx.inp(1)?),
            ("bias", ctx.opt_in(2)),
            ("y", ctx.out(0)?),
            ("mean", ctx.opt_out(1)),
            ("inv_std", ctx.opt_out(2)),
            ("rows", u(rows)),
            ("cols", u(cols)),
            ("epsilon", f(ctx.attr_float("epsilon", 1e-5)?)),
        ],
    ))
}

pub fn layernorm_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2, 3, 4])?;
    let x = ctx.in_shape(1)?;
    let (rows, cols) = rows_cols(ctx, &x)?;
    // ORT form (dY, X, scale, mean, inv_std); the (dY, X, scale, bias)
    // form recomputes the statistics into scratch.
    let with_stats = ctx.node.input(3).is_some() && ctx.node.input(4).is_some() && ctx.node.inputs.len() >= 5;
    let (mean, inv_std, scratch) = if with_stats {
        (ctx.inp(3)?, ctx.inp(4)?, "NULL".to_string())
    } else {
        let s = ctx.scratch.clone().ok_or_else(|| ctx.err("needs a scratch buffer the plan did not give it"))?;
        ("NULL".to_string(), "NULL".to_string(), s)
    };
    one(call(
        "dg_layernorm_grad_f32",
        "dg_layernorm_grad_args_t",
        vec![
            ("dy", ctx.inp(0)?),
            ("x", ctx.inp(1)?),
            ("scale", ctx.inp(2)?),
            ("mean", mean),
            ("inv_std", inv_std),
            ("dx", ctx.out(0)?),
            ("dscale", ctx.opt_out(1)),
            ("dbias", ctx.opt_out(2)),
            ("scratch", scratch),
            ("rows", u(rows)),
            ("cols", u(cols)),
            ("epsilon", f(ctx.attr_float("epsilon", 1e-5)?)),
        ],
    ))
}

pub fn groupnorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let [b, c, s] = bn_dims(ctx, &x)?;
    let instance = ctx.node.op == "InstanceNormalization";
    let groups = if instance {
        c
    } else {
        let g = ctx.node.int("num_groups")?.ok_or_else(|| ctx.err("attribute 'num_groups' is required"))?;
        to_u32(ctx, "num_groups", g)?
    };
    if groups == 0 || c % groups != 0 {
        return Err(ctx.err(format!("{c} channels do not split into {groups} groups")));
    }
    // Opset 21 scales per channel; opset 18's form (deprecated) per group.
    let ns = numel(&ctx.in_shape(1)?);
    let per_group = if instance || (ns == c && (ctx.opset() >= 21 || groups == c)) {
        false
    } else if ns == groups {
        true
    } else {
        return Err(ctx.err(format!("scale has {ns} values; {c} channels in {groups} groups need {c} or {groups}")));
    };
    let func = if instance { "dg_instancenorm_f32" } else { "dg_groupnorm_f32" };
    one(call(
        func,
        "dg_groupnorm_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", ctx.inp(1)?),
            ("bias", ctx.inp(2)?),
            ("y", ctx.out(0)?),
            ("batch", u(b)),
            ("channels", u(c)),
            ("spatial", u(s)),
            ("groups", u(groups)),
            ("scale_per_group", u(usize::from(per_group))),
            ("epsilon", f(float_attr(ctx, "epsilon", 1e-5)?)),
        ],
    ))
}

/// A per-column operand of a row normalization: its own pointer when it
/// has `cols` values; a constant that broadcasts to the normalised shape
/// is expanded at generation time into a `static const` array.
fn full_cols(ctx: &KernelCtx, slot: usize, norm_shape: &[usize], name: &str) -> Result<(String, Option<Local>)> {
    let s = ctx.in_shape(slot)?;
    if numel(&s) == numel(norm_shape) {
        return Ok((ctx.inp(slot)?, None));
    }
    let st = broadcast_strides(ctx, &s, norm_shape)?;
    let Some(v) = ctx.ops().konst(slot).and_then(|k| k.to_f32()) else {
        return Err(ctx.err(format!(
            "input {slot} {s:?} broadcasts over the normalised shape {norm_shape:?}; the kernel needs one value per \
             element, which only a constant can be expanded to"
        )));
    };
    let out_st = strides(norm_shape);
    let values = (0..numel(norm_shape))
        .map(|j| {
            let src: usize = (0..norm_shape.len()).map(|d| (j / out_st[d]) % norm_shape[d] * st[d]).sum();
            f(v[src])
        })
        .collect();
    Ok((name.to_string(), Some(Local { ctype: "static const float".into(), name: name.into(), values })))
}

pub fn rmsnorm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(-1), x.len())?;
    let (rows, cols) = (numel(&x[..axis]), numel(&x[axis..]));
    let mut locals = vec![];
    let (scale, l) = full_cols(ctx, 1, &x[axis..], "scale_full")?;
    locals.extend(l);
    let bias = if ctx.node.input(2).is_some() {
        let (b, l) = full_cols(ctx, 2, &x[axis..], "bias_full")?;
        locals.extend(l);
        b
    } else {
        "NULL".into()
    };
    let mut inv = call(
        "dg_rmsnorm_f32",
        "dg_layernorm_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("scale", scale),
            ("bias", bias),
            ("y", ctx.out(0)?),
            ("mean", "NULL".into()),
            ("inv_std", ctx.opt_out(1)),
            ("rows", u(rows)),
            ("cols", u(cols)),
            ("epsilon", f(float_attr(ctx, "epsilon", 1e-5)?)),
        ],
    );
    inv.locals = locals;
    one(inv)
}

/// `[outer, dim, inner]` of a softmax over `axis`; `coerce` is the pre-13
/// "flatten to 2-D at axis" form.
fn softmax_dims(ctx: &KernelCtx, x: &[usize], coerce: bool, default_axis: i64) -> Result<[usize; 3]> {
    let axis = ctx.axis(ctx.attr_int("axis", default_axis)?, x.len())?;
    Ok(if coerce {
        [numel(&x[..axis]), numel(&x[axis..]), 1]
    } else {
        [numel(&x[..axis]), x[axis], numel(&x[axis + 1..])]
    })
}

pub fn softmax(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let old = ctx.opset() < 13;
    let [o, d, i] = softmax_dims(ctx, &ctx.in_shape(0)?, old, if old { 1 } else { -1 })?;
    one(call(
        "dg_softmax_f32",
        "dg_softmax_args_t",
        vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("outer", u(o)), ("dim", u(d)), ("inner", u(i))],
    ))
}

pub fn softmax_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let old = ctx.node.op == "SoftmaxGrad";
    let [o, d, i] = softmax_dims(ctx, &ctx.in_shape(1)?, old, if old { 1 } else { -1 })?;
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

// ---- losses -----------------------------------------------------------------------

fn reduction(ctx: &KernelCtx) -> Result<&'static str> {
    match ctx.attr_str("reduction")?.as_deref().unwrap_or("mean") {
        "mean" => Ok("DG_REDUCTION_MEAN"),
        "sum" => Ok("DG_REDUCTION_SUM"),
        other => Err(ctx.err(format!("reduction '{other}' is not supported (mean and sum are)"))),
    }
}

fn labels_i32(ctx: &KernelCtx, slot: usize) -> Result<String> {
    match ctx.in_dtype(slot)? {
        DType::I64 => Ok(u(0)),
        DType::I32 => Ok(u(1)),
        d => Err(ctx.err(format!("labels must be int64 or int32, found {d}"))),
    }
}

fn sce_dims(ctx: &KernelCtx, scores: &[usize]) -> Result<[usize; 3]> {
    if scores.len() < 2 {
        return Err(ctx.err(format!("scores must be [N, C, ...], found {scores:?}")));
    }
    Ok([scores[0], scores[1], numel(&scores[2..])])
}

fn ignore(ctx: &KernelCtx) -> Result<(String, String)> {
    Ok(match ctx.node.attrs.get("ignore_index") {
        Some(_) => (format!("{}LL", ctx.attr_int("ignore_index", 0)?), u(1)),
        None => ("0".into(), u(0)),
    })
}

pub fn sce_loss(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    if ctx.node.input(2).is_some() {
        return Err(ctx.err("class weights are not supported by the kernel"));
    }
    let [b, c, i] = sce_dims(ctx, &ctx.in_shape(0)?)?;
    let scores = ctx.in_shape(0)?;
    // Some exporters give the node a single output of the scores' shape:
    // log_prob only, no loss value.
    let single_log_prob = ctx.node.outputs.len() == 1 && ctx.has_out(0) && ctx.out_shape(0)? == scores;
    let (loss, log_prob) = if single_log_prob {
        ("NULL".to_string(), ctx.out(0)?)
    } else {
        let lp = match ctx.outputs.get(1).cloned().flatten() {
            Some(p) => p,
            None => ctx.scratch.clone().ok_or_else(|| ctx.err("needs its log_prob output (or a scratch buffer)"))?,
        };
        (ctx.opt_out(0), lp)
    };
    let (ig, has) = ignore(ctx)?;
    one(call(
        "dg_sce_loss_f32",
        "dg_sce_args_t",
        vec![
            ("scores", ctx.inp(0)?),
            ("labels", ctx.inp(1)?),
            ("labels_i32", labels_i32(ctx, 1)?),
            ("log_prob", log_prob),
            ("loss", loss),
            ("batch", u(b)),
            ("classes", u(c)),
            ("inner", u(i)),
            ("ignore_index", ig),
            ("has_ignore", has),
            ("reduction", reduction(ctx)?.into()),
        ],
    ))
}

pub fn sce_loss_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    // (dY, log_prob, labels[, weight]) or the two-input (log_prob, labels).
    let two = ctx.node.inputs.len() == 2;
    let (dy, lp, lb) = if two { ("NULL".to_string(), 0, 1) } else { (ctx.inp(0)?, 1, 2) };
    if !two && ctx.node.input(3).is_some() {
        return Err(ctx.err("class weights are not supported by the kernel"));
    }
    ctx.require_f32(&[lp])?;
    let [b, c, i] = sce_dims(ctx, &ctx.in_shape(lp)?)?;
    let (ig, has) = ignore(ctx)?;
    one(call(
        "dg_sce_loss_grad_f32",
        "dg_sce_grad_args_t",
        vec![
            ("dy", dy),
            ("log_prob", ctx.inp(lp)?),
            ("labels", ctx.inp(lb)?),
            ("labels_i32", labels_i32(ctx, lb)?),
            ("dx", ctx.out(0)?),
            ("batch", u(b)),
            ("classes", u(c)),
            ("inner", u(i)),
            ("ignore_index", ig),
            ("has_ignore", has),
            ("reduction", reduction(ctx)?.into()),
        ],
    ))
}

pub fn mse_loss(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.in_shape(0)?);
    one(call(
        "dg_mse_loss_f32",
        "dg_mse_args_t",
        vec![("x", ctx.inp(0)?), ("target", ctx.inp(1)?), ("loss", ctx.out(0)?), ("n", u(n))],
    ))
}

pub fn mse_loss_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let n = numel(&ctx.in_shape(1)?);
    one(call(
        "dg_mse_loss_grad_f32",
        "dg_mse_grad_args_t",
        vec![("dy", ctx.opt_in(0)), ("x", ctx.inp(1)?), ("target", ctx.inp(2)?), ("dx", ctx.out(0)?), ("n", u(n))],
    ))
}

// ---- reductions -----------------------------------------------------------------------

pub fn reduce(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let x = ctx.in_shape(0)?;
    max_dims(ctx, x.len())?;
    let axes = ctx.ops().ints_attr_or_input("axes", 1)?.unwrap_or_default();
    let noop = ctx.attr_int("noop_with_empty_axes", 0)? != 0;
    if axes.is_empty() && noop {
        return copy(ctx);
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
    let func = match ctx.node.op.as_str() {
        "ReduceSum" => "dg_reduce_sum_f32",
        "ReduceMax" => "dg_reduce_max_f32",
        _ => "dg_reduce_mean_f32",
    };
    one(call(
        func,
        "dg_reduce_args_t",
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

// ---- data movement ------------------------------------------------------------------------

pub fn copy(ctx: &KernelCtx) -> Result<KernelCall> {
    let d = ctx.in_dtype(0)?;
    let bytes = numel(&ctx.in_shape(0)?) * elem_size(ctx, d)?;
    one(call("dg_copy_kernel", "dg_copy_args_t", vec![("x", ctx.inp(0)?), ("y", ctx.out(0)?), ("bytes", u(bytes))]))
}

fn strided(ctx: &KernelCtx, func: &str, shape: &[usize], strides: &[i64], offset: i64) -> Result<KernelCall> {
    max_dims(ctx, shape.len())?;
    let es = elem_size(ctx, ctx.in_dtype(0)?)?;
    let fits = |v: i64| i32::try_from(v).is_ok();
    if !strides.iter().all(|&s| fits(s)) || !fits(offset) {
        return Err(ctx.err("strides do not fit the kernel's 32-bit fields"));
    }
    one(call(
        func,
        "dg_strided_copy_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("elem_size", u(es)),
            ("ndim", u(shape.len())),
            ("shape", dims_list(shape)),
            ("strides", ints_list(strides)),
            ("offset", offset.to_string()),
        ],
    ))
}

pub fn transpose(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let perm: Vec<usize> = match ctx.attr_ints("perm")? {
        Some(p) => p.iter().map(|&v| ctx.axis(v, x.len())).collect::<Result<_>>()?,
        None => (0..x.len()).rev().collect(),
    };
    let st = strides(&x);
    let shape: Vec<usize> = perm.iter().map(|&p| x[p]).collect();
    let s: Vec<i64> = perm.iter().map(|&p| st[p] as i64).collect();
    strided(ctx, "dg_transpose", &shape, &s, 0)
}

pub fn slice(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let o = ctx.ops();
    let starts = o.ints_attr_or_input("starts", 1)?.ok_or_else(|| ctx.err("starts are required"))?;
    // The ends decide the output shape, which the graph already holds.
    let axes = o.ints_attr_or_input("axes", 3)?.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = o.ints_attr_or_input("steps", 4)?.unwrap_or_else(|| vec![1; starts.len()]);
    let st = strides(&x);
    let mut start = vec![0i64; x.len()];
    let mut step = vec![1i64; x.len()];
    for (k, &a) in axes.iter().enumerate() {
        let d = ctx.axis(a, x.len())?;
        let dim = x[d] as i64;
        let sp = *steps.get(k).unwrap_or(&1);
        if sp == 0 {
            return Err(ctx.err("slice step 0"));
        }
        let mut s = *starts.get(k).ok_or_else(|| ctx.err("starts and axes differ in length"))?;
        if s < 0 {
            s += dim;
        }
        s = if sp > 0 { s.clamp(0, dim) } else { s.clamp(0, dim - 1) };
        start[d] = s;
        step[d] = sp;
    }
    let y = ctx.out_shape(0)?;
    let offset: i64 = (0..x.len()).map(|d| start[d] * st[d] as i64).sum();
    let s: Vec<i64> = (0..x.len()).map(|d| st[d] as i64 * step[d]).collect();
    strided(ctx, "dg_slice", &y, &s, offset)
}

pub fn expand(ctx: &KernelCtx) -> Result<KernelCall> {
    let (x, y) = (ctx.in_shape(0)?, ctx.out_shape(0)?);
    let s: Vec<i64> = broadcast_strides(ctx, &x, &y)?.into_iter().map(|v| v as i64).collect();
    strided(ctx, "dg_expand", &y, &s, 0)
}

pub fn concat(ctx: &KernelCtx) -> Result<KernelCall> {
    let y = ctx.out_shape(0)?;
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, y.len())?;
    let es = elem_size(ctx, ctx.out_dtype(0)?)?;
    let (mut xs, mut sizes) = (vec![], vec![]);
    for i in 0..ctx.node.inputs.len() {
        let s = ctx.in_shape(i)?;
        if numel(&s) == 0 {
            continue;
        }
        xs.push(ctx.inp(i)?);
        sizes.push(u(s[axis]));
    }
    let mut inv = call(
        "dg_concat",
        "dg_concat_args_t",
        vec![
            ("x", "xs".into()),
            ("sizes", "sizes".into()),
            ("nin", u(xs.len())),
            ("y", ctx.out(0)?),
            ("elem_size", u(es)),
            ("outer", u(numel(&y[..axis]))),
            ("inner", u(numel(&y[axis + 1..]))),
        ],
    );
    inv.locals.push(Local { ctype: "const void *const".into(), name: "xs".into(), values: xs });
    inv.locals.push(Local { ctype: "const uint32_t".into(), name: "sizes".into(), values: sizes });
    let mut kc = one(inv)?;
    if ctx.node.op == "ConcatTraining" && ctx.has_out(1) {
        // Output 1, per_input_length (int64): each input's extent on the
        // axis, known when generating code.
        let mut lens = vec![];
        for i in 0..ctx.node.inputs.len() {
            lens.push(format!("{}LL", ctx.in_shape(i)?[axis]));
        }
        let mut inv = call(
            "dg_copy_kernel",
            "dg_copy_args_t",
            vec![("x", "lengths".into()), ("y", ctx.out(1)?), ("bytes", u(8 * lens.len()))],
        );
        inv.locals.push(Local { ctype: "static const int64_t".into(), name: "lengths".into(), values: lens });
        kc.calls.push(inv);
    }
    Ok(kc)
}

pub fn split(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(0), x.len())?;
    let es = elem_size(ctx, ctx.in_dtype(0)?)?;
    // The sizes are the outputs' extents, which the shape rule computed
    // from the split input or attribute (or ConcatTraining's lengths).
    let (mut ys, mut sizes) = (vec![], vec![]);
    for i in 0..ctx.node.outputs.len() {
        let s = ctx.out_shape(i)?;
        ys.push(ctx.out(i)?);
        sizes.push(u(s[axis]));
    }
    let mut inv = call(
        "dg_split_kernel",
        "dg_split_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", "ys".into()),
            ("sizes", "sizes".into()),
            ("nout", u(ys.len())),
            ("elem_size", u(es)),
            ("outer", u(numel(&x[..axis]))),
            ("inner", u(numel(&x[axis + 1..]))),
        ],
    );
    inv.locals.push(Local { ctype: "void *const".into(), name: "ys".into(), values: ys });
    inv.locals.push(Local { ctype: "const uint32_t".into(), name: "sizes".into(), values: sizes });
    one(inv)
}

/// Constant indices, normalised to `[0, dim)` and written as int64.
fn const_indices(ctx: &KernelCtx, slot: usize, dim: usize) -> Result<Local> {
    let k = ctx.ops().konst(slot).ok_or_else(|| ctx.err(format!("indices (input {slot}) must be a constant")))?;
    if !matches!(k.dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("indices must be int64 or int32, found {}", k.dtype)));
    }
    let v = k.to_i64().ok_or_else(|| ctx.err("indices have no integer value"))?;
    let n = dim as i64;
    let values = v
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + n } else { i };
            if !(0..n).contains(&j) {
                return Err(ctx.err(format!("index {i} is out of range for an axis of {dim}")));
            }
            Ok(format!("{j}LL"))
        })
        .collect::<Result<Vec<_>>>()?;
    let values = if values.is_empty() { vec!["0LL".into()] } else { values };
    Ok(Local { ctype: "static const int64_t".into(), name: "indices".into(), values })
}

pub fn gather(ctx: &KernelCtx) -> Result<KernelCall> {
    let x = ctx.in_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(0), x.len())?;
    let n_idx = numel(&ctx.in_shape(1)?);
    let idx = const_indices(ctx, 1, x[axis])?;
    let mut inv = call(
        "dg_gather",
        "dg_gather_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("indices", "indices".into()),
            ("indices_i32", u(0)),
            ("y", ctx.out(0)?),
            ("elem_size", u(elem_size(ctx, ctx.in_dtype(0)?)?)),
            ("outer", u(numel(&x[..axis]))),
            ("axis_dim", u(x[axis])),
            ("inner", u(numel(&x[axis + 1..]))),
            ("n_idx", u(n_idx)),
        ],
    );
    inv.locals.push(idx);
    one(inv)
}

pub fn gather_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    // GatherGrad(shape, indices, dY){axis} -> dX of `shape`.
    ctx.require_f32(&[2])?;
    let x = ctx.out_shape(0)?;
    let axis = ctx.axis(ctx.node.int("axis")?.unwrap_or(0), x.len())?;
    let n_idx = numel(&ctx.in_shape(1)?);
    let idx = const_indices(ctx, 1, x[axis])?;
    let mut inv = call(
        "dg_gather_grad_f32",
        "dg_gather_grad_args_t",
        vec![
            ("dy", ctx.inp(2)?),
            ("indices", "indices".into()),
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

pub fn pad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let x = ctx.in_shape(0)?;
    max_dims(ctx, x.len())?;
    let mode = match ctx.node.string("mode")?.unwrap_or("constant") {
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
    one(call(
        "dg_pad_f32",
        "dg_pad_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("ndim", u(x.len())),
            ("in_shape", dims_list(&x)),
            ("pads_begin", ints_list(&begin)),
            ("pads_end", ints_list(&end)),
            ("mode", mode.into()),
            ("value", f(value)),
        ],
    ))
}

// ---- training ------------------------------------------------------------------------------

pub fn accumulate(ctx: &KernelCtx) -> Result<KernelCall> {
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

pub fn sgd(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.in_shape(0)?);
    // The rate is the attribute `lr`, or a tensor input.
    let (lr, lr_ptr) = match ctx.node.attrs.get("lr") {
        Some(_) => (ctx.attr_float("lr", 0.0)?, "NULL".to_string()),
        None => match ctx.inputs.get(2).cloned().flatten() {
            Some(p) => (0.0, p),
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

pub fn sgd_optimizer_v2(ctx: &KernelCtx) -> Result<KernelCall> {
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
                    ("w", m.param.clone()),
                    ("g", m.grad.clone()),
                    ("w_out", m.param.clone()),
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
