//! What kernel bindings share: how a node becomes a call of a
//! `runtime/kernels` function (`dg_<op>_f32(void *args)` on a filled-in
//! args struct, forked on the cluster team).
//!
//! Each operator's registry entry names its binding (`OpDef::kernel`, a
//! [`Kernel`]: a [`KernelFn`] written in the operator's family file beside
//! its shape rule, or a family's shared binding with the operator's C
//! function), so neither the emitter nor a binding asks which operator it
//! binds. A binding reads everything
//! it needs from the [`KernelCtx`] — the node, its graph (shapes, dtypes,
//! attributes, compile-time constants) and the C expression of each
//! operand's pointer where the plan has the kernel compute on it — and
//! returns the call(s) as data; the templates write the C. This file holds
//! the types and the small helpers the family files' bindings use.

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
    /// written back after, this member's call), by their index in the
    /// plan's buffer list.
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
    /// One tile's shapes and attributes, overriding the graph's: the
    /// binding then describes the call on that tile (see [`super::tile`]).
    pub tile: Option<super::tile::TileView>,
    /// The network's run-time learning rate, when it has one: an optimizer
    /// step whose compiled-in rate is its value reads the rate through
    /// this pointer, so that `dg_model_set_learning_rate` changes it.
    pub rate: Option<Rate>,
}

/// The network's one run-time learning rate: its initial value and the C
/// pointer expression of the float that holds it (the emitter's).
#[derive(Clone, Debug)]
pub struct Rate {
    pub value: f32,
    pub ptr: String,
}

/// One value of a kernel's args struct, as data: the emitter prints it to
/// C in one place and checks it against the struct's field in
/// `runtime/kernels/dg_kernels.h`.
#[derive(Clone, Debug)]
pub enum Arg {
    /// An unsigned integer (`uint32_t` and the like).
    U(u64),
    /// A signed integer.
    I(i64),
    F(f32),
    /// A pointer the emitter chose: an operand's buffer where the kernel
    /// computes on it (a C expression of the emitter's, never model text).
    Ptr(String),
    Null,
    /// A local array of the call (its name), see [`Local`].
    Local(&'static str),
    /// An enumerator `runtime/kernels/dg_kernels.h` defines (`DG_DT_F32`).
    Enum(&'static str),
    /// An array field's elements.
    List(Vec<Arg>),
}

impl Arg {
    /// Same value, floats compared by their bits.
    pub fn same(&self, other: &Arg) -> bool {
        match (self, other) {
            (Arg::F(a), Arg::F(b)) => a.to_bits() == b.to_bits(),
            (Arg::List(a), Arg::List(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y)),
            (Arg::U(a), Arg::U(b)) => a == b,
            (Arg::I(a), Arg::I(b)) => a == b,
            (Arg::Ptr(a), Arg::Ptr(b)) => a == b,
            (Arg::Local(a), Arg::Local(b)) | (Arg::Enum(a), Arg::Enum(b)) => a == b,
            (Arg::Null, Arg::Null) => true,
            _ => false,
        }
    }
}

/// Most entries of a call's operand list ([`Local`]): the lists are
/// locals of the function that runs the network, whose frame the stack
/// of the core running it is sized for (`target::CONTROLLER_CODE_BYTES`,
/// checked on RV32 by `tests/it/stack_rv32.rs`); 64 pointers and 64 sizes
/// are 512 B there.
pub const LIST_MAX: usize = 64;

/// A local array a call needs (pointer lists, sizes); `ctype` is its
/// element type as C declares it.
#[derive(Clone, Debug)]
pub struct Local {
    pub ctype: &'static str,
    pub name: &'static str,
    pub values: Vec<Arg>,
}

/// One kernel call.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// C function, `void f(void *args)`.
    pub func: String,
    /// Its args struct type.
    pub args_type: String,
    /// Designated initialisers: field name and value.
    pub fields: Vec<(&'static str, Arg)>,
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

/// A binding several operators of a family share, given the one
/// operator's C function (`runtime/kernels/dg_kernels.h`), or the stem
/// of its functions where the binding picks one by the operands' dtype
/// (`dg_add` of `dg_add_f32`, `dg_add_i64`, ...).
pub type NamedFn = fn(&KernelCtx, &'static str) -> Result<KernelCall>;

/// An operator's kernel binding ([`super::OpDef::kernel`]), a value of
/// its registry entry: the binding never asks which operator it binds.
#[derive(Clone, Copy)]
pub enum Kernel {
    /// A binding of the operator's own, which names its kernel(s) itself
    /// (one per dtype or attribute form).
    Bind(KernelFn),
    /// A family's shared binding and this operator's C function (or stem).
    Named(NamedFn, &'static str),
}

impl Kernel {
    /// The C function (or stem) the registry entry names, when it names one.
    pub fn func(&self) -> Option<&'static str> {
        match self {
            Kernel::Bind(_) => None,
            Kernel::Named(_, func) => Some(func),
        }
    }

    /// The node's kernel call(s) ([`bind`] skips a node with nothing to write).
    pub fn call(&self, ctx: &KernelCtx) -> Result<KernelCall> {
        match *self {
            Kernel::Bind(f) => f(ctx),
            Kernel::Named(f, func) => f(ctx, func),
        }
    }
}

/// The node's kernel call(s) by its binding `k`: none when every output is
/// a zero-size tensor, since there is nothing to write (and a kernel's
/// index arithmetic may divide by the zero dim).
pub fn bind(k: Kernel, ctx: &KernelCtx) -> Result<KernelCall> {
    let sizes: Vec<Option<usize>> = ctx
        .node
        .outputs
        .iter()
        .flatten()
        .map(|&t| ctx.graph.tensor(t).ty.shape().map(|s| s.iter().product()))
        .collect();
    if !sizes.is_empty() && sizes.iter().all(|&n| n == Some(0)) {
        return Ok(KernelCall::default());
    }
    k.call(ctx)
}

// ---- context helpers ------------------------------------------------------

impl KernelCtx<'_> {
    pub fn err(&self, detail: impl Into<String>) -> Error {
        Error::node(self.node, detail)
    }

    /// A call's list of `n` operands (`what`: "inputs", "outputs") within
    /// [`LIST_MAX`], or the error naming the node.
    pub fn list_fits(&self, what: &str, n: usize) -> Result<()> {
        if n > LIST_MAX {
            return Err(self.err(format!(
                "{n} {what}; one kernel call takes at most {LIST_MAX} (its operand list is a local of the \
                 function that runs the network, on a core's stack of a few KiB): split the node"
            )));
        }
        Ok(())
    }

    pub(super) fn ops(&self) -> ops::Ctx<'_> {
        ops::Ctx { graph: self.graph, node: self.node }
    }

    /// Pointer of a required input.
    pub fn inp(&self, i: usize) -> Result<Arg> {
        let p = self.inputs.get(i).cloned().flatten();
        p.map(Arg::Ptr).ok_or_else(|| self.err(format!("input {i} has no buffer to compute on")))
    }

    /// Pointer of an optional input, `NULL` when absent.
    pub fn opt_in(&self, i: usize) -> Arg {
        self.inputs.get(i).cloned().flatten().map_or(Arg::Null, Arg::Ptr)
    }

    pub fn out(&self, i: usize) -> Result<Arg> {
        let p = self.outputs.get(i).cloned().flatten();
        p.map(Arg::Ptr).ok_or_else(|| self.err(format!("output {i} has no buffer")))
    }

    pub fn opt_out(&self, i: usize) -> Arg {
        self.outputs.get(i).cloned().flatten().map_or(Arg::Null, Arg::Ptr)
    }

    pub fn has_out(&self, i: usize) -> bool {
        self.outputs.get(i).is_some_and(Option::is_some)
    }

    pub fn in_shape(&self, i: usize) -> Result<Vec<usize>> {
        if let Some(s) = self.tile.as_ref().and_then(|v| v.in_shapes.get(i).cloned().flatten()) {
            return Ok(s);
        }
        self.graph_in_shape(i)
    }

    pub fn out_shape(&self, i: usize) -> Result<Vec<usize>> {
        if let Some(s) = self.tile.as_ref().and_then(|v| v.out_shapes.get(i).cloned().flatten()) {
            return Ok(s);
        }
        self.graph_out_shape(i)
    }

    /// Input `i`'s whole shape in the graph, whatever the tile.
    pub fn graph_in_shape(&self, i: usize) -> Result<Vec<usize>> {
        let t = self.node.input(i).ok_or_else(|| self.err(format!("input {i} is missing")))?;
        self.graph.tensor(t).ty.shape().ok_or_else(|| self.err(format!("input {i} has no static shape")))
    }

    pub fn graph_out_shape(&self, i: usize) -> Result<Vec<usize>> {
        let t = self.node.output(i).ok_or_else(|| self.err(format!("output {i} is missing")))?;
        self.graph.tensor(t).ty.shape().ok_or_else(|| self.err(format!("output {i} has no static shape")))
    }

    /// An attribute, the tile's value first.
    fn attr(&self, name: &str) -> Option<&Attr> {
        let tiled = self.tile.as_ref().and_then(|v| v.attrs.iter().find(|(k, _)| k == name)).map(|(_, a)| a);
        tiled.or_else(|| self.node.attrs.get(name))
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
    pub(super) fn require_f32(&self, slots: &[usize]) -> Result<()> {
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
        match self.attr(name) {
            None => Ok(default),
            Some(Attr::Int(v)) => Ok(*v),
            Some(other) => Err(self.err(format!("attribute '{name}' must be an int, found {other:?}"))),
        }
    }

    /// A 0/1 INT attribute, `default` when absent.
    pub fn attr_flag(&self, name: &str, default: bool) -> Result<bool> {
        Ok(self.attr_int(name, i64::from(default))? != 0)
    }

    /// The `lr_ptr` of an optimizer step whose compiled-in rate is `lr`:
    /// the run-time rate's pointer when its value is `lr` (same bits),
    /// else NULL (the kernel reads the constant).
    pub fn rate_ptr(&self, lr: f32) -> Arg {
        match &self.rate {
            Some(r) if r.value.to_bits() == lr.to_bits() => Arg::Ptr(r.ptr.clone()),
            _ => Arg::Null,
        }
    }

    pub fn attr_float(&self, name: &str, default: f32) -> Result<f32> {
        match self.attr(name) {
            None => Ok(default),
            Some(Attr::Float(v)) => Ok(*v),
            Some(Attr::Int(v)) => Ok(*v as f32),
            Some(other) => Err(self.err(format!("attribute '{name}' must be a float, found {other:?}"))),
        }
    }

    pub fn attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.attr(name) {
            None => Ok(None),
            Some(Attr::Ints(v)) => Ok(Some(v.clone())),
            Some(other) => Err(self.err(format!("attribute '{name}' must be a list of ints, found {other:?}"))),
        }
    }

    pub fn attr_str(&self, name: &str) -> Result<Option<String>> {
        match self.attr(name) {
            None => Ok(None),
            Some(Attr::String(v)) => Ok(Some(v.clone())),
            Some(other) => Err(self.err(format!("attribute '{name}' must be a string, found {other:?}"))),
        }
    }

    pub(super) fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        self.ops().axis(axis, rank)
    }

    /// The default-domain opset the graph imports.
    pub(super) fn opset(&self) -> i64 {
        self.graph.opsets.get("").copied().unwrap_or(13)
    }
}

pub(super) fn u(v: usize) -> Arg {
    Arg::U(v as u64)
}

pub(super) fn f(v: f32) -> Arg {
    Arg::F(v)
}

pub(super) fn to_u32(ctx: &KernelCtx, what: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| ctx.err(format!("{what} is {v}; it must not be negative")))
}

pub fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// A call of `func(&args)` on the team.
pub(super) fn call(func: &str, args_type: &str, fields: Vec<(&'static str, Arg)>) -> Invocation {
    Invocation {
        func: func.into(),
        args_type: args_type.into(),
        fields,
        forked: true,
        locals: vec![],
        stage: vec![],
        comment: None,
    }
}

pub(super) fn one(inv: Invocation) -> Result<KernelCall> {
    Ok(KernelCall { calls: vec![inv], ..Default::default() })
}

pub(super) fn dims_list(v: &[usize]) -> Arg {
    Arg::List(v.iter().map(|&x| u(x)).collect())
}

pub(super) fn ints_list(v: &[i64]) -> Arg {
    Arg::List(v.iter().map(|&x| Arg::I(x)).collect())
}

/// Row-major element strides of a shape.
pub(super) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Strides of `inp` broadcast to `out` (right-aligned; 0 on broadcast dims).
pub(super) fn broadcast_strides(ctx: &KernelCtx, inp: &[usize], out: &[usize]) -> Result<Vec<usize>> {
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

pub(super) fn max_dims(ctx: &KernelCtx, n: usize) -> Result<()> {
    if n > 6 {
        return Err(ctx.err(format!("rank {n} is above the kernels' limit of 6 dimensions")));
    }
    Ok(())
}

pub(super) fn elem_size(ctx: &KernelCtx, d: DType) -> Result<usize> {
    d.size().ok_or_else(|| ctx.err(format!("dtype {d} has no element size")))
}

/// A float attribute read through the typed accessor (an INT where a
/// FLOAT belongs is an error, not a silent default).
pub(super) fn float_attr(ctx: &KernelCtx, name: &str, default: f32) -> Result<f32> {
    Ok(ctx.node.float(name)?.unwrap_or(default))
}

/// A single-value constant input as f32 (float or integer constants).
pub(super) fn scalar_const(ctx: &KernelCtx, slot: usize) -> Result<Option<f32>> {
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
