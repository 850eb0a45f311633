//! Loss functions and their gradients.

use super::grad::{self, GradCtx};
use super::kernel::{call, f, numel, one, u, Arg, Kernel, KernelCall, KernelCtx, Local};
use super::{ClassLabels, Ctx, OpDef, Train};
use crate::error::Result;
use crate::ir::{Attr, DType, Graph, Node, Origin, TensorId, TensorType};

pub const OPS: &[OpDef] = &[
    // (scores [N, C, ...], labels [N, ...] [, weights]) -> loss, log_prob.
    // Deeploy's exporters write a log-prob-only form, see `log_prob_only`.
    OpDef {
        name: "SoftmaxCrossEntropyLoss",
        attrs: &["ignore_index", "reduction"],
        infer: sce,
        required: &[0, 1],
        train: Train::Loss,
        labels: Some(slot_1),
        class_labels: Some(sce_classes),
        scratch: Some(sce_scratch),
        kernel: Some(Kernel::Bind(bind_sce_loss)),
        grad: Some(sce_grad_rule),
        ..OpDef::BASE
    },
    // com.microsoft (dY, log_prob, labels [, weights]) -> dScores, or
    // Deeploy's 2-input form (log_prob, labels), see `two_input_grad`.
    OpDef {
        name: "SoftmaxCrossEntropyLossGrad",
        attrs: &["ignore_index", "reduction"],
        infer: sce_grad,
        gradient: true,
        required: &[0, 1],
        labels: Some(sce_grad_labels),
        kernel: Some(Kernel::Bind(bind_sce_loss_grad)),
        ..OpDef::BASE
    },
    // (X, target) -> scalar mean of squared differences.
    OpDef {
        name: "MSELoss",
        attrs: &["reduction"],
        infer: mse,
        required: &[0, 1],
        train: Train::Loss,
        labels: Some(slot_1),
        kernel: Some(Kernel::Bind(bind_mse_loss)),
        ..OpDef::BASE
    },
    // (dY, X, target) -> dX.
    OpDef {
        name: "MSELossGrad",
        attrs: &["reduction"],
        infer: mse_grad,
        required: &[0, 1, 2],
        gradient: true,
        labels: Some(slot_2),
        kernel: Some(Kernel::Bind(bind_mse_loss_grad)),
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
/// never computed. Recognised by that consumer, or by the single output's
/// declared (or inferred) type: the scores' shape, rank 2 or more, where
/// the loss would be a scalar (or [N, ...] without the class axis).
pub fn log_prob_only(graph: &Graph, node: &Node) -> bool {
    if node.op != "SoftmaxCrossEntropyLoss" || node.outputs.len() != 1 {
        return false;
    }
    let Some(out) = node.output(0) else { return false };
    let scores = node.input(0).and_then(|t| graph.tensor(t).ty.shape());
    let declared = graph.tensor(out).ty.shape();
    let shaped_like_scores = matches!((&scores, &declared), (Some(s), Some(d)) if s.len() >= 2 && s == d);
    shaped_like_scores
        || graph
            .dag
            .node_weights()
            .any(|n| n.op == "SoftmaxCrossEntropyLossGrad" && n.inputs.len() == 2 && n.input(0) == Some(out))
}

/// Without its log_prob output the kernel still computes the
/// log-probabilities first: into scratch the size of the scores.
fn sce_scratch(g: &Graph, node: &Node) -> u64 {
    if node.output(1).is_some() || log_prob_only(g, node) {
        return 0;
    }
    node.input(0).and_then(|x| g.tensor(x).ty.bytes()).unwrap_or(0) as u64
}

fn slot_1(_: &Node) -> Option<usize> {
    Some(1)
}

/// Scores [N, C, ...]: labels index axis 1; `ignore_index` is skipped.
fn sce_classes(g: &Graph, node: &Node) -> Option<ClassLabels> {
    let scores = g.tensor(node.input(0)?).ty.shape()?;
    Some(ClassLabels { classes: *scores.get(1)?, ignore: node.attr_int("ignore_index") })
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
    if ctx.node.inputs.len() == 2 {
        two_input_grad(ctx)?;
    } else if !ctx.has(2) {
        return Err(ctx.err(
            "input 2 (labels) is required: the schema's inputs are (dY, log_prob, labels [, weights]); only \
             Deeploy's two-input (log_prob, labels) form omits dY",
        ));
    }
    let log_prob = sce_grad_labels_slot(ctx.node) - 1;
    Ok(vec![ctx.same_as(log_prob)?])
}

/// Deeploy's 2-input SoftmaxCrossEntropyLossGrad(log_prob, labels): dY is
/// implied, and the gradient is scaled by 1/N twice ("one for the loss
/// norm, one for the gradient norm" in Deeploy's kernel): dScores =
/// (exp(log_prob) - onehot(labels)) / N² for log_prob [N, C]. Implemented
/// exactly for that shape with the default reduction; anything else in
/// this form is refused rather than computed on a guess.
fn two_input_grad(ctx: &Ctx) -> Result<()> {
    let bad = |why: &str| {
        ctx.err(format!(
            "two inputs (log_prob, labels) is Deeploy's convention for this operator (dY implied, scaled by 1/N²); \
             {why}, which that convention does not define"
        ))
    };
    if ctx.node.attrs.contains_key("ignore_index") {
        return Err(bad("the node sets ignore_index"));
    }
    if ctx.node.string("reduction")?.is_some_and(|r| r != "mean") {
        return Err(bad("the node sets a reduction other than mean"));
    }
    match ctx.shape(0)? {
        Some(s) if s.len() == 2 => Ok(()),
        Some(s) => Err(bad(&format!("log_prob has shape {s:?}, not [N, C]"))),
        None => Err(bad("log_prob has no static shape")),
    }
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

// ---- kernel bindings --------------------------------------------------------

pub(super) fn reduction_code(ctx: &KernelCtx) -> Result<&'static str> {
    match ctx.attr_str("reduction")?.as_deref().unwrap_or("mean") {
        "mean" => Ok("DG_REDUCTION_MEAN"),
        "sum" => Ok("DG_REDUCTION_SUM"),
        other => Err(ctx.err(format!("reduction '{other}' is not supported (mean and sum are)"))),
    }
}

pub(super) fn labels_i32(ctx: &KernelCtx, slot: usize) -> Result<Arg> {
    match ctx.in_dtype(slot)? {
        DType::I64 => Ok(u(0)),
        DType::I32 => Ok(u(1)),
        d => Err(ctx.err(format!("labels must be int64 or int32, found {d}"))),
    }
}

pub(super) fn sce_dims(ctx: &KernelCtx, scores: &[usize]) -> Result<[usize; 3]> {
    if scores.len() < 2 {
        return Err(ctx.err(format!("scores must be [N, C, ...], found {scores:?}")));
    }
    Ok([scores[0], scores[1], numel(&scores[2..])])
}

pub(super) fn ignore(ctx: &KernelCtx) -> Result<(Arg, Arg)> {
    Ok(match ctx.node.attrs.get("ignore_index") {
        Some(_) => (Arg::I(ctx.attr_int("ignore_index", 0)?), u(1)),
        None => (Arg::I(0), u(0)),
    })
}

pub(super) fn bind_sce_loss(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0])?;
    let weights = match ctx.node.input(2) {
        Some(_) => {
            ctx.require_f32(&[2])?;
            Some(ctx.inp(2)?)
        }
        None => None,
    };
    let [b, c, i] = sce_dims(ctx, &ctx.in_shape(0)?)?;
    let scores = ctx.in_shape(0)?;
    // Some exporters give the node a single output of the scores' shape:
    // log_prob only, no loss value.
    let single_log_prob = ctx.node.outputs.len() == 1 && ctx.has_out(0) && ctx.out_shape(0)? == scores;
    let (loss, log_prob) = if single_log_prob {
        (Arg::Null, ctx.out(0)?)
    } else {
        let lp = match ctx.outputs.get(1).cloned().flatten().or_else(|| ctx.scratch.clone()) {
            Some(p) => Arg::Ptr(p),
            None => return Err(ctx.err("needs its log_prob output (or a scratch buffer)")),
        };
        (ctx.opt_out(0), lp)
    };
    let (ig, has) = ignore(ctx)?;
    let mut fields = vec![
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
        ("reduction", Arg::Enum(loss_reduction_code(ctx)?)),
    ];
    fields.extend(weights.map(|w| ("weights", w)));
    one(call("dg_sce_loss_f32", "dg_sce_args_t", fields))
}

/// The forward loss also writes the unreduced per-sample losses.
fn loss_reduction_code(ctx: &KernelCtx) -> Result<&'static str> {
    match ctx.attr_str("reduction")?.as_deref() {
        Some("none") => Ok("DG_REDUCTION_NONE"),
        _ => reduction_code(ctx),
    }
}

pub(super) fn bind_sce_loss_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    // (dY, log_prob, labels[, weight]) or the two-input (log_prob, labels),
    // whose implied dY is 1/N (the kernel's mean divides by N again).
    let two = ctx.node.inputs.len() == 2;
    let (dy, lp, lb) = if two { (Arg::Local("deeploy_dy"), 0, 1) } else { (ctx.inp(0)?, 1, 2) };
    if !two && ctx.node.input(3).is_some() {
        return Err(ctx.err("class weights are not supported by the kernel"));
    }
    ctx.require_f32(&[lp])?;
    let [b, c, i] = sce_dims(ctx, &ctx.in_shape(lp)?)?;
    let (ig, has) = ignore(ctx)?;
    let mut inv = call(
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
            ("reduction", Arg::Enum(reduction_code(ctx)?)),
        ],
    );
    if two {
        let v = vec![f(1.0 / b as f32)];
        inv.locals.push(Local { ctype: "const float", name: "deeploy_dy", values: v });
    }
    one(inv)
}

pub(super) fn bind_mse_loss(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1])?;
    let n = numel(&ctx.in_shape(0)?);
    one(call(
        "dg_mse_loss_f32",
        "dg_mse_args_t",
        vec![("x", ctx.inp(0)?), ("target", ctx.inp(1)?), ("loss", ctx.out(0)?), ("n", u(n))],
    ))
}

pub(super) fn bind_mse_loss_grad(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let n = numel(&ctx.in_shape(1)?);
    one(call(
        "dg_mse_loss_grad_f32",
        "dg_mse_grad_args_t",
        vec![("dy", ctx.opt_in(0)), ("x", ctx.inp(1)?), ("target", ctx.inp(2)?), ("dx", ctx.out(0)?), ("n", u(n))],
    ))
}

// ---- gradient rules ------------------------------------------------------------------------

/// SoftmaxCrossEntropyLoss inside a forward graph: the scores' gradient
/// from the loss output's (SoftmaxCrossEntropyLossGrad) and from the
/// log_prob output's (the log-softmax gradient over the class axis,
/// dX = dL - exp(L) * sum(dL)), summed.
fn sce_grad_rule(ctx: &mut GradCtx) -> Result<()> {
    if !ctx.needs(0) {
        return Ok(());
    }
    if ctx.node.input(2).is_some() {
        return Err(ctx.err("no gradient rule for class weights (input 2)"));
    }
    if ctx.node.attr_str("reduction") == Some("none") {
        return Err(ctx.err("no gradient rule for reduction 'none'"));
    }
    let mut parts = vec![];
    if let Ok(dloss) = ctx.dy(0) {
        let (lp, labels) = (ctx.y(1)?, ctx.x(1)?);
        let attrs: Vec<(String, Attr)> = ["reduction", "ignore_index"].iter().filter_map(|a| ctx.attr(a)).collect();
        let out = ctx.name("from_loss");
        let ins = [Some(dloss), Some(lp), Some(labels)];
        let g = ctx.emit("SoftmaxCrossEntropyLossGrad", grad::MS, &ins, &[out], attrs)?;
        parts.push(g[0].expect("named"));
    }
    if let Ok(dlp) = ctx.dy(1) {
        let lp = ctx.y(1)?;
        let p = ctx.op("Exp", &[lp], "prob")?;
        let axes = ctx.b.ints(&ctx.name("class_axis"), &[1]);
        let sname = ctx.name("sum_dlog_prob");
        let s = ctx.emit1("ReduceSum", "", &[dlp, axes], &sname, vec![("keepdims".into(), Attr::Int(1))])?;
        let ps = ctx.op("Mul", &[p, s], "prob_sum")?;
        parts.push(ctx.op("Sub", &[dlp, ps], "from_log_prob")?);
    }
    let dx = match parts.as_slice() {
        [one] => *one,
        _ => ctx.op("Sum", &parts, "dx")?,
    };
    ctx.set(0, dx);
    Ok(())
}
