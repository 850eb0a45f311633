//! Loss functions and their gradients.

use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::TensorType;

pub const OPS: &[OpDef] = &[
    // (scores [N, C, ...], labels [N, ...] [, weights]) -> loss, log_prob.
    // Deeploy's exporters write a log-prob-only form, see `log_prob_only`.
    OpDef { name: "SoftmaxCrossEntropyLoss", infer: sce, fold: None },
    // com.microsoft (dY, log_prob, labels [, weights]) -> dScores, or the
    // 2-input form (log_prob, labels) with dY = 1.
    OpDef { name: "SoftmaxCrossEntropyLossGrad", infer: sce_grad, fold: None },
    // (X, target) -> scalar mean of squared differences.
    OpDef { name: "MSELoss", infer: mse, fold: None },
    // (dY, X, target) -> dX.
    OpDef { name: "MSELossGrad", infer: mse_grad, fold: None },
];

fn reduction<'a>(ctx: &Ctx<'a>) -> Result<&'a str> {
    match ctx.node.attr_str("reduction").unwrap_or("mean") {
        r @ ("mean" | "sum" | "none") => Ok(r),
        other => Err(ctx.err(format!("reduction '{other}' is not one of mean, sum, none"))),
    }
}

/// Deeploy's training exporter keeps only SoftmaxCrossEntropyLoss's
/// log_prob output (as output 0) and feeds it to a 2-input
/// SoftmaxCrossEntropyLossGrad(log_prob, labels); the loss value itself is
/// never computed. Recognised by that consumer, not by names.
pub fn log_prob_only(graph: &crate::ir::Graph, node: &crate::ir::Node) -> bool {
    if node.outputs.len() != 1 {
        return false;
    }
    let Some(out) = node.output(0) else { return false };
    graph
        .dag
        .node_weights()
        .any(|n| n.op == "SoftmaxCrossEntropyLossGrad" && n.inputs.len() == 2 && n.input(0) == Some(out))
}

/// Slot of the labels input of a SoftmaxCrossEntropyLossGrad node.
pub fn sce_grad_labels_slot(node: &crate::ir::Node) -> usize {
    if node.inputs.len() == 2 {
        1
    } else {
        2
    }
}

fn sce(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let scores = ctx.same_as(0)?;
    let label_dtype = ctx.dtype(1)?;
    if !label_dtype.is_int() {
        return Err(ctx.err(format!("labels must be integer class indices, got {label_dtype}")));
    }
    let loss = match (reduction(ctx)?, scores.shape()) {
        ("none", Some(s)) if s.len() >= 2 => {
            let mut l = vec![s[0]];
            l.extend_from_slice(&s[2..]);
            TensorType::new(scores.dtype, &l)
        }
        ("none", _) => TensorType::unknown(scores.dtype),
        _ => TensorType::new(scores.dtype, &[]),
    };
    if let (Some(s), Some(l)) = (scores.shape(), ctx.shape(1)?) {
        let mut want = vec![s.first().copied().unwrap_or(0)];
        want.extend(s.iter().skip(2));
        if l != want {
            return Err(ctx.err(format!("labels shape {l:?} does not match scores {s:?} (expected {want:?})")));
        }
    }
    if log_prob_only(ctx.graph, ctx.node) {
        return Ok(vec![scores]);
    }
    Ok(vec![loss, scores])
}

fn sce_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    reduction(ctx)?;
    let log_prob = sce_grad_labels_slot(ctx.node) - 1;
    Ok(vec![ctx.same_as(log_prob)?])
}

fn mse(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let x = ctx.same_as(0)?;
    if let (Some(a), Some(b)) = (x.shape(), ctx.shape(1)?) {
        if a != b {
            return Err(ctx.err(format!("prediction {a:?} and target {b:?} differ in shape")));
        }
    }
    Ok(vec![TensorType::new(x.dtype, &[])])
}

fn mse_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    Ok(vec![ctx.same_as(1)?])
}
