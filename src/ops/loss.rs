//! Loss functions and their gradients.

use super::{kernel, Ctx, OpDef, Train};
use crate::error::Result;
use crate::ir::{Graph, Node, Origin, TensorId, TensorType};

pub const OPS: &[OpDef] = &[
    // (scores [N, C, ...], labels [N, ...] [, weights]) -> loss, log_prob.
    // Deeploy's exporters write a log-prob-only form, see `log_prob_only`.
    OpDef {
        name: "SoftmaxCrossEntropyLoss",
        infer: sce,
        required: &[0, 1],
        train: Train::Loss,
        labels: Some(slot_1),
        kernel: Some(kernel::sce_loss),
        ..OpDef::BASE
    },
    // com.microsoft (dY, log_prob, labels [, weights]) -> dScores, or the
    // 2-input form (log_prob, labels) with dY = 1.
    OpDef {
        name: "SoftmaxCrossEntropyLossGrad",
        infer: sce_grad,
        gradient: true,
        required: &[0, 1],
        labels: Some(sce_grad_labels),
        kernel: Some(kernel::sce_loss_grad),
        ..OpDef::BASE
    },
    // (X, target) -> scalar mean of squared differences.
    OpDef {
        name: "MSELoss",
        infer: mse,
        required: &[0, 1],
        train: Train::Loss,
        labels: Some(slot_1),
        kernel: Some(kernel::mse_loss),
        ..OpDef::BASE
    },
    // (dY, X, target) -> dX.
    OpDef {
        name: "MSELossGrad",
        infer: mse_grad,
        required: &[0, 1, 2],
        gradient: true,
        labels: Some(slot_2),
        kernel: Some(kernel::mse_loss_grad),
        ..OpDef::BASE
    },
];

fn reduction<'a>(ctx: &Ctx<'a>) -> Result<&'a str> {
    ctx.node.int("ignore_index")?;
    match ctx.node.string("reduction")?.unwrap_or("mean") {
        r @ ("mean" | "sum" | "none") => Ok(r),
        other => Err(ctx.err(format!("reduction '{other}' is not one of mean, sum, none"))),
    }
}

/// Deeploy's training exporter keeps only SoftmaxCrossEntropyLoss's
/// log_prob output (as output 0) and feeds it to a 2-input
/// SoftmaxCrossEntropyLossGrad(log_prob, labels); the loss value itself is
/// never computed. Recognised by that consumer, not by names.
pub fn log_prob_only(graph: &Graph, node: &Node) -> bool {
    if node.op != "SoftmaxCrossEntropyLoss" || node.outputs.len() != 1 {
        return false;
    }
    let Some(out) = node.output(0) else { return false };
    graph
        .dag
        .node_weights()
        .any(|n| n.op == "SoftmaxCrossEntropyLossGrad" && n.inputs.len() == 2 && n.input(0) == Some(out))
}

fn slot_1(_: &Node) -> Option<usize> {
    Some(1)
}

fn slot_2(_: &Node) -> Option<usize> {
    Some(2)
}

fn sce_grad_labels(node: &Node) -> Option<usize> {
    Some(sce_grad_labels_slot(node))
}

/// onnxruntime builds MSE as ReduceMean(Pow(Sub(pred, target), 2)): the
/// target is the Sub's second operand when it is a graph input.
pub fn composed_mse_target(g: &Graph, loss: TensorId) -> Option<TensorId> {
    let step = |t: TensorId, op: &str| -> Option<&Node> {
        let n = g.node(g.producer(t)?);
        (n.op == op).then_some(n)
    };
    let mean = step(loss, "ReduceMean")?;
    let pow = step(mean.input(0)?, "Pow")?;
    let sub = step(pow.input(0)?, "Sub")?;
    let target = sub.input(1)?;
    (g.tensor(target).origin == Origin::Input).then_some(target)
}

/// Slot of the labels input of a SoftmaxCrossEntropyLossGrad node.
pub fn sce_grad_labels_slot(node: &Node) -> usize {
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
    reduction(ctx)?;
    let x = ctx.same_as(0)?;
    if let (Some(a), Some(b)) = (x.shape(), ctx.shape(1)?) {
        if a != b {
            return Err(ctx.err(format!("prediction {a:?} and target {b:?} differ in shape")));
        }
    }
    Ok(vec![TensorType::new(x.dtype, &[])])
}

fn mse_grad(ctx: &Ctx) -> Result<Vec<TensorType>> {
    reduction(ctx)?;
    Ok(vec![ctx.same_as(1)?])
}
