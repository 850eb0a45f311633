//! Operator facts, one family per file: for each supported operator its
//! shape/dtype rule and, for shape arithmetic, how to fold it. Operators are
//! matched by type; the domain is recorded but never a reason to reject a
//! known type (`GeluGrad` and `SGD` appear in the default domain in the wild).

pub mod conv;
mod elementwise;
mod linear;
pub mod loss;
mod norm;
mod pool;
mod reduce;
mod shape;
mod softmax;
mod training;

use crate::error::{Error, Result};
use crate::ir::{DType, Graph, Node, TensorData, TensorType};

/// Shape and dtype rule: the type of every output slot, in order. Unknown
/// dims are allowed (`TensorType::unknown`); the rule must never panic.
pub type InferFn = fn(&Ctx) -> Result<Vec<TensorType>>;

/// Constant folding: the value of every output, when the inputs allow.
/// Gets the output types the shape rule just computed.
pub type FoldFn = fn(&Ctx, &[TensorType]) -> Result<Option<Vec<TensorData>>>;

pub struct OpDef {
    pub name: &'static str,
    pub infer: InferFn,
    /// Set for the operators that make up static shape subgraphs.
    pub fold: Option<FoldFn>,
}

const FAMILIES: &[&[OpDef]] = &[
    elementwise::OPS,
    conv::OPS,
    linear::OPS,
    pool::OPS,
    norm::OPS,
    softmax::OPS,
    loss::OPS,
    reduce::OPS,
    shape::OPS,
    training::OPS,
];

pub fn lookup(op: &str) -> Option<&'static OpDef> {
    FAMILIES.iter().flat_map(|f| f.iter()).find(|d| d.name == op)
}

/// All supported operator types, sorted, for error messages.
pub fn supported() -> Vec<&'static str> {
    let mut v: Vec<&str> = FAMILIES.iter().flat_map(|f| f.iter()).map(|d| d.name).collect();
    v.sort_unstable();
    v
}

/// What a rule sees: the node and the types/values of its inputs.
pub struct Ctx<'a> {
    pub graph: &'a Graph,
    pub node: &'a Node,
}

impl<'a> Ctx<'a> {
    pub fn err(&self, detail: impl Into<String>) -> Error {
        Error::node(self.node, detail)
    }

    pub fn has(&self, i: usize) -> bool {
        self.node.input(i).is_some()
    }

    /// Type of input `i`; an error if a required input is missing.
    pub fn ty(&self, i: usize) -> Result<&'a TensorType> {
        match self.node.input(i) {
            Some(t) => Ok(&self.graph.tensor(t).ty),
            None => Err(self.err(format!("input {i} is required but missing"))),
        }
    }

    pub fn dtype(&self, i: usize) -> Result<DType> {
        Ok(self.ty(i)?.dtype)
    }

    /// Static shape of input `i`, if known.
    pub fn shape(&self, i: usize) -> Result<Option<Vec<usize>>> {
        Ok(self.ty(i)?.shape())
    }

    /// Constant value of input `i` (initializer or folded), if any.
    pub fn konst(&self, i: usize) -> Option<&'a TensorData> {
        self.graph.tensor(self.node.input(i)?).data.as_ref()
    }

    pub fn konst_i64(&self, i: usize) -> Option<Vec<i64>> {
        self.konst(i)?.to_i64()
    }

    /// An integer-list attribute, or a constant integer input at `i` (ops
    /// moved attributes to inputs across opsets: axes, pads, shape…).
    /// `Ok(None)` when neither is given; an error when the input exists but
    /// is not constant.
    pub fn ints_attr_or_input(&self, attr: &str, i: usize) -> Result<Option<Vec<i64>>> {
        if let Some(v) = self.node.attr_ints(attr) {
            return Ok(Some(v.to_vec()));
        }
        if self.has(i) {
            return match self.konst_i64(i) {
                Some(v) => Ok(Some(v)),
                None => Err(self.err(format!(
                    "input {i} ('{}', {attr}) must be a constant known when generating code",
                    self.graph.name_of(self.node.input(i).unwrap())
                ))),
            };
        }
        Ok(None)
    }

    /// Normalise a possibly negative axis against `rank`.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let r = rank as i64;
        if axis < -r || axis >= r {
            return Err(self.err(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(if axis < 0 { axis + r } else { axis } as usize)
    }

    /// Input `i`'s type, unchanged, for rules where output = input.
    pub fn same_as(&self, i: usize) -> Result<TensorType> {
        Ok(self.ty(i)?.clone())
    }
}

/// Numpy-style broadcast of static shapes.
pub fn broadcast(ctx: &Ctx, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        *o = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(ctx.err(format!("shapes {a:?} and {b:?} do not broadcast (dim {i}: {da} vs {db})")));
        };
    }
    Ok(out)
}

/// Broadcast of every present input's type (elementwise ops).
pub fn broadcast_inputs(ctx: &Ctx) -> Result<TensorType> {
    let dtype = ctx.dtype(0)?;
    let mut shape: Option<Vec<usize>> = Some(vec![]);
    for i in 0..ctx.node.inputs.len() {
        if !ctx.has(i) {
            continue;
        }
        shape = match (shape, ctx.shape(i)?) {
            (Some(s), Some(t)) => Some(broadcast(ctx, &s, &t)?),
            _ => None,
        };
    }
    Ok(match shape {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    })
}

/// Multiply dims with overflow checking (shape rules must not panic on
/// hostile files).
pub fn checked_numel(ctx: &Ctx, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| ctx.err(format!("shape {shape:?} has too many elements")))
}

/// Folded values are kept small: they are shape arithmetic, not data.
pub const FOLD_LIMIT: usize = 1 << 16;
