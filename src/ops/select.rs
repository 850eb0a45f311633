//! Selection and comparison: variadic Max/Min, Where, the comparisons
//! (bool results) and And. All broadcast numpy-style; onnxruntime-training
//! builds the gradients of Max, Min, Clip and Abs from them.

use super::{broadcast, kernel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef { name: "Max", infer: same_type, kernel: Some(kernel::variadic), ..OpDef::BASE },
    OpDef { name: "Min", infer: same_type, kernel: Some(kernel::variadic), ..OpDef::BASE },
    // Where(condition: bool, X, Y): X where the condition holds, else Y.
    OpDef { name: "Where", infer: where_, kernel: Some(kernel::where_), ..OpDef::BASE },
    OpDef { name: "Equal", infer: compare, kernel: Some(kernel::compare), ..OpDef::BASE },
    OpDef { name: "Less", infer: compare, kernel: Some(kernel::compare), ..OpDef::BASE },
    OpDef { name: "LessOrEqual", infer: compare, kernel: Some(kernel::compare), ..OpDef::BASE },
    OpDef { name: "Greater", infer: compare, kernel: Some(kernel::compare), ..OpDef::BASE },
    OpDef { name: "GreaterOrEqual", infer: compare, kernel: Some(kernel::compare), ..OpDef::BASE },
    OpDef { name: "And", infer: and, kernel: Some(kernel::compare), ..OpDef::BASE },
];

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

fn and(ctx: &Ctx) -> Result<Vec<TensorType>> {
    binary_slots(ctx)?;
    same_dtype(ctx, 0..2, DType::Bool)?;
    Ok(vec![typed(DType::Bool, broadcast_slots(ctx, 0..2)?)])
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
