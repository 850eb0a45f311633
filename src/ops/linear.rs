//! Gemm and MatMul. Their gradients are Gemm/MatMul/ReduceSum nodes in the
//! backward graph; there is no GemmGrad operator.

use super::{broadcast, kernel, Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] = &[
    OpDef { name: "Gemm", infer: gemm, required: &[0, 1], kernel: Some(kernel::gemm), ..OpDef::BASE },
    OpDef { name: "MatMul", infer: matmul, required: &[0, 1], kernel: Some(kernel::matmul), ..OpDef::BASE },
    // com.microsoft FusedMatMul(A, B){alpha, transA, transB} = alpha *
    // op(A) @ op(B) on the last two dims; onnxruntime's MatMul gradients.
    OpDef { name: "FusedMatMul", infer: fused_matmul, required: &[0, 1], kernel: Some(kernel::matmul), ..OpDef::BASE },
];

/// Gemm on the last two dims. ONNX defines 2-D operands only; graphs from
/// Deeploy's exporters also use leading batch dims (`[1, 64, 128] x
/// [128, 128]`), which broadcast as in MatMul.
fn gemm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let ta = ctx.node.flag("transA", false)?;
    let tb = ctx.node.flag("transB", false)?;
    finite(ctx, "alpha")?;
    finite(ctx, "beta")?;
    let dtype = ctx.dtype(0)?;
    let (Some(a), Some(b)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    if a.len() < 2 || b.len() < 2 {
        return Err(ctx.err(format!("Gemm needs operands of rank 2 or more, got {a:?} and {b:?}")));
    }
    let (ra, rb) = (a.len(), b.len());
    let (m, ka) = if ta { (a[ra - 1], a[ra - 2]) } else { (a[ra - 2], a[ra - 1]) };
    let (kb, n) = if tb { (b[rb - 1], b[rb - 2]) } else { (b[rb - 2], b[rb - 1]) };
    if ka != kb {
        return Err(ctx.err(format!("inner dimensions differ: A {a:?} (transA={ta}) and B {b:?} (transB={tb})")));
    }
    let mut out = broadcast(ctx, &a[..ra - 2], &b[..rb - 2])?;
    out.extend([m, n]);
    if ctx.has(2) {
        if let Some(c) = ctx.shape(2)? {
            let bc = broadcast(ctx, &out, &c)?;
            if bc != out {
                return Err(ctx.err(format!("C {c:?} does not broadcast to {out:?}")));
            }
        }
    }
    Ok(vec![TensorType::new(dtype, &out)])
}

fn matmul(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let (Some(a), Some(b)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    matmul_shapes(ctx, a, b).map(|s| vec![TensorType::new(dtype, &s)])
}

/// A FLOAT attribute that, when present, is a finite number.
pub fn finite(ctx: &Ctx, name: &str) -> Result<Option<f32>> {
    match ctx.node.float(name)? {
        Some(v) if !v.is_finite() => Err(ctx.err(format!("attribute '{name}' = {v} must be a finite number"))),
        v => Ok(v),
    }
}

fn fused_matmul(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    for attr in ["transBatchA", "transBatchB"] {
        if ctx.node.flag(attr, false)? {
            return Err(ctx.err(format!("{attr}=1 is not supported")));
        }
    }
    let ta = ctx.node.flag("transA", false)?;
    let tb = ctx.node.flag("transB", false)?;
    finite(ctx, "alpha")?;
    let (Some(mut a), Some(mut b)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let swap_last = |s: &mut Vec<usize>| {
        let n = s.len();
        if n >= 2 {
            s.swap(n - 1, n - 2);
        }
    };
    if ta {
        swap_last(&mut a);
    }
    if tb {
        swap_last(&mut b);
    }
    matmul_shapes(ctx, a, b).map(|s| vec![TensorType::new(dtype, &s)])
}

/// numpy.matmul's shape rule, including 1-D operands.
fn matmul_shapes(ctx: &Ctx, mut a: Vec<usize>, mut b: Vec<usize>) -> Result<Vec<usize>> {
    if a.is_empty() || b.is_empty() {
        return Err(ctx.err("MatMul inputs must have rank >= 1"));
    }
    let va = a.len() == 1;
    let vb = b.len() == 1;
    if va {
        a.insert(0, 1);
    }
    if vb {
        b.push(1);
    }
    let (m, k1) = (a[a.len() - 2], a[a.len() - 1]);
    let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
    if k1 != k2 {
        return Err(ctx.err(format!("inner dimensions differ: {a:?} x {b:?}")));
    }
    let mut out = broadcast(ctx, &a[..a.len() - 2], &b[..b.len() - 2])?;
    if !va {
        out.push(m);
    }
    if !vb {
        out.push(n);
    }
    Ok(out)
}
