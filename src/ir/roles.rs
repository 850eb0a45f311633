//! Training roles, found from the graph alone: which inputs are data and
//! labels, which are trainable parameters, frozen parameters, gradient
//! buffers and the reset flag; which value is the loss; which outputs are
//! updated parameters. Pairings are by name and by the accumulator/optimizer
//! nodes' slots — never by position arithmetic.

use indexmap::IndexMap;
use serde::Serialize;

use super::graph::{Graph, Origin, TensorId};
use super::Model;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flavor {
    /// Weights as initializers, no backward pass.
    Inference,
    /// One graph: forward, backward and inline `SGD` nodes.
    TrainingStep,
    /// onnxruntime-training artifacts: training graph with gradient
    /// accumulation, plus an optimizer graph.
    TrainingArtifacts,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Changes per mini-batch (image, features…).
    Data,
    /// Changes per mini-batch and is the loss's target.
    Labels,
    /// Trainable parameter.
    Param,
    /// Parameter no optimizer updates (e.g. BatchNorm running statistics).
    Frozen,
    /// Gradient accumulation buffer of a parameter.
    GradBuffer,
    /// `lazy_reset_grad`: overwrite rather than add on the next accumulation.
    LazyReset,
    Loss,
    /// A parameter after the optimizer step.
    UpdatedParam,
    /// InPlaceAccumulatorV2's completion flag (`<p>_grad.accumulation.out`).
    GradFlag,
    /// An inference output.
    Output,
    /// Optimizer inputs.
    LearningRate,
    Step,
    ParamSequence,
    GradSequence,
    OptimizerState,
    /// Any other optimizer or graph value (e.g. `update_completed`).
    Other,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Data => "data",
            Role::Labels => "labels",
            Role::Param => "param",
            Role::Frozen => "frozen",
            Role::GradBuffer => "grad_buffer",
            Role::LazyReset => "lazy_reset_grad",
            Role::Loss => "loss",
            Role::UpdatedParam => "updated_param",
            Role::GradFlag => "grad_flag",
            Role::Output => "output",
            Role::LearningRate => "learning_rate",
            Role::Step => "step",
            Role::ParamSequence => "param_sequence",
            Role::GradSequence => "grad_sequence",
            Role::OptimizerState => "optimizer_state",
            Role::Other => "other",
        }
    }
}

/// One trainable parameter and where its gradient and update live.
#[derive(Clone, Debug, Serialize)]
pub struct ParamRoles {
    pub name: String,
    /// Gradient accumulation buffer (artifacts flavor).
    pub grad_buffer: Option<String>,
    /// The gradient value fed to the accumulator or the SGD node.
    pub gradient: Option<String>,
    /// Updated-parameter output (inline SGD or per-parameter optimizer SGD).
    pub updated: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Roles {
    pub flavor: Flavor,
    /// Role of each main-graph tensor that has one, by name.
    pub main: IndexMap<String, Role>,
    /// Role of each optimizer-graph tensor that has one, by name.
    pub optimizer: IndexMap<String, Role>,
    /// Trainable parameters in graph order.
    pub params: Vec<ParamRoles>,
    pub loss: Option<String>,
    pub lazy_reset: Option<String>,
}

impl Roles {
    pub fn role(&self, name: &str) -> Option<Role> {
        self.main.get(name).copied()
    }

    pub fn is_training(&self) -> bool {
        self.flavor != Flavor::Inference
    }

    /// Graph inputs with a given role, in graph order.
    pub fn inputs_with(&self, graph: &Graph, role: Role) -> Vec<TensorId> {
        graph.inputs.iter().copied().filter(|&t| self.role(graph.name_of(t)) == Some(role)).collect()
    }
}

/// onnxruntime names a parameter's gradient accumulation buffer
/// `<param>_grad.accumulation.buffer`.
pub const ACCUM_BUFFER_SUFFIX: &str = "_grad.accumulation.buffer";
const ACCUM_OUT_SUFFIX: &str = "_grad.accumulation.out";

/// Detect every role in a model.
pub fn detect(model: &Model) -> Roles {
    let g = &model.graph;
    let ops = |op: &'static str| g.nodes().filter(move |(_, n)| n.op == op).map(|(_, n)| n);
    let has_grad_ops = g.nodes().any(|(_, n)| n.op.ends_with("Grad") || n.op.starts_with("SoftmaxGrad"));

    let mut params: Vec<ParamRoles> = Vec::new();
    let mut main: IndexMap<String, Role> = IndexMap::new();
    let mut lazy_reset = None;

    // Gradient accumulation (artifacts flavor): the accumulator's slots
    // name the buffer, the gradient and the reset flag; the buffer's name
    // names the parameter.
    for n in ops("InPlaceAccumulatorV2") {
        let (Some(buf), Some(grad)) = (n.input(0), n.input(1)) else { continue };
        let buf_name = g.name_of(buf).to_string();
        main.insert(buf_name.clone(), Role::GradBuffer);
        if let Some(flag) = n.input(2) {
            if g.tensor(flag).origin == Origin::Input {
                main.insert(g.name_of(flag).to_string(), Role::LazyReset);
                lazy_reset = Some(g.name_of(flag).to_string());
            }
        }
        if let Some(out) = n.output(0) {
            main.insert(g.name_of(out).to_string(), Role::GradFlag);
        }
        let param = buf_name.strip_suffix(ACCUM_BUFFER_SUFFIX).filter(|p| g.id(p).is_some()).map(str::to_string);
        if let Some(p) = param {
            params.push(ParamRoles {
                name: p,
                grad_buffer: Some(buf_name),
                gradient: Some(g.name_of(grad).to_string()),
                updated: None,
            });
        }
    }

    // Inline SGD (single-graph flavor): SGD(w, g) -> w_updated.
    for n in ops("SGD") {
        let Some(w) = n.input(0) else { continue };
        let name = g.name_of(w).to_string();
        let gradient = n.input(1).map(|t| g.name_of(t).to_string());
        let updated = n.output(0).map(|t| g.name_of(t).to_string());
        if let Some(u) = &updated {
            main.insert(u.clone(), Role::UpdatedParam);
        }
        match params.iter_mut().find(|p| p.name == name) {
            Some(p) => p.updated = updated,
            None => params.push(ParamRoles { name, grad_buffer: None, gradient, updated }),
        }
    }

    // Per-parameter SGD in a separate optimizer graph pairs by input name.
    let mut optimizer: IndexMap<String, Role> = IndexMap::new();
    if let Some(og) = &model.optimizer {
        for (_, n) in og.nodes() {
            match n.op.as_str() {
                "SGD" => {
                    let (Some(w), Some(gr)) = (n.input(0), n.input(1)) else { continue };
                    let (w, gr) = (og.name_of(w).to_string(), og.name_of(gr).to_string());
                    optimizer.insert(w.clone(), Role::Param);
                    optimizer.insert(gr.clone(), Role::GradBuffer);
                    let updated = n.output(0).map(|t| og.name_of(t).to_string());
                    if let Some(u) = &updated {
                        optimizer.insert(u.clone(), Role::UpdatedParam);
                    }
                    if let Some(p) = params.iter_mut().find(|p| p.name == w) {
                        p.updated = updated;
                    }
                }
                "SGDOptimizerV2" => {
                    let slots = [Role::LearningRate, Role::ParamSequence, Role::GradSequence];
                    for (i, role) in slots.iter().enumerate() {
                        if let Some(t) = n.input(i) {
                            optimizer.insert(og.name_of(t).to_string(), *role);
                        }
                    }
                }
                _ => {}
            }
        }
        for &t in &og.inputs {
            let name = og.name_of(t);
            if !optimizer.contains_key(name) {
                let role = match name {
                    "step" => Role::Step,
                    "learning_rate" | "lr" => Role::LearningRate,
                    _ if og.tensor(t).sequence => Role::OptimizerState,
                    _ => Role::Other,
                };
                optimizer.insert(name.to_string(), role);
            }
        }
        for &t in &og.outputs {
            optimizer.entry(og.name_of(t).to_string()).or_insert(Role::Other);
        }
    }

    // Keep parameters in graph-input (or initializer) order.
    let position = |name: &str| g.id(name).unwrap_or(usize::MAX);
    params.sort_by_key(|p| position(&p.name));
    for p in &params {
        main.insert(p.name.clone(), Role::Param);
    }

    let flavor = if ops("InPlaceAccumulatorV2").count() > 0 || model.optimizer.is_some() {
        Flavor::TrainingArtifacts
    } else if ops("SGD").count() > 0 {
        Flavor::TrainingStep
    } else if has_grad_ops {
        Flavor::TrainingArtifacts
    } else {
        Flavor::Inference
    };

    // The loss: a loss operator's first output, else (ORT's composed MSE)
    // the first scalar graph output that is not an accumulation flag.
    let loss = g
        .nodes()
        .find(|(_, n)| matches!(n.op.as_str(), "SoftmaxCrossEntropyLoss" | "MSELoss"))
        .filter(|(_, n)| !crate::ops::loss::log_prob_only(g, n))
        .and_then(|(_, n)| n.output(0))
        .or_else(|| {
            (flavor != Flavor::Inference)
                .then(|| {
                    g.outputs.iter().copied().find(|&t| {
                        let name = g.name_of(t);
                        !name.ends_with(ACCUM_OUT_SUFFIX)
                            && main.get(name).is_none()
                            && g.tensor(t).ty.dtype.is_float()
                            && g.tensor(t).ty.numel() == Some(1)
                    })
                })
                .flatten()
        })
        .map(|t| g.name_of(t).to_string());
    if let Some(l) = &loss {
        main.insert(l.clone(), Role::Loss);
    }

    // Labels: what the loss compares against.
    let mut labels: Vec<TensorId> = Vec::new();
    for (_, n) in g.nodes() {
        let slot = match n.op.as_str() {
            "SoftmaxCrossEntropyLoss" | "MSELoss" => 1,
            "SoftmaxCrossEntropyLossGrad" => crate::ops::loss::sce_grad_labels_slot(n),
            "MSELossGrad" => 2,
            _ => continue,
        };
        labels.extend(n.input(slot));
    }
    if let Some(l) = loss.as_deref().and_then(|l| g.id(l)) {
        labels.extend(composed_mse_target(g, l));
    }

    // Remaining graph inputs: data before the first parameter, frozen
    // parameters after it (onnxruntime lists user inputs, then labels, then
    // parameters). Single-graph and inference models keep weights as
    // initializers, so all their inputs are data.
    let first_param = g.inputs.iter().position(|&t| main.get(g.name_of(t)) == Some(&Role::Param));
    for (pos, &t) in g.inputs.iter().enumerate() {
        let name = g.name_of(t);
        if main.contains_key(name) || g.tensor(t).sequence {
            continue;
        }
        let role = if labels.contains(&t) {
            Role::Labels
        } else if first_param.is_some_and(|f| pos > f) {
            Role::Frozen
        } else {
            Role::Data
        };
        main.insert(name.to_string(), role);
    }
    for &t in &g.outputs {
        main.entry(g.name_of(t).to_string()).or_insert(Role::Output);
    }

    Roles { flavor, main, optimizer, params, loss, lazy_reset }
}

/// onnxruntime builds MSE as ReduceMean(Pow(Sub(pred, target), 2)): the
/// target is the Sub's second operand when it is a graph input.
fn composed_mse_target(g: &Graph, loss: TensorId) -> Option<TensorId> {
    let step = |t: TensorId, op: &str| -> Option<&crate::ir::Node> {
        let n = g.node(g.producer(t)?);
        (n.op == op).then_some(n)
    };
    let mean = step(loss, "ReduceMean")?;
    let pow = step(mean.input(0)?, "Pow")?;
    let sub = step(pow.input(0)?, "Sub")?;
    let target = sub.input(1)?;
    (g.tensor(target).origin == Origin::Input).then_some(target)
}
