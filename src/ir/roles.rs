//! Training roles (found by `lower::roles`): which inputs are data and
//! labels, which are trainable parameters, frozen parameters, gradient
//! buffers and the reset flag; which value is the loss; which outputs are
//! updated parameters.

use indexmap::IndexMap;
use serde::Serialize;

use super::graph::{Graph, TensorId};

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
/// ... and the accumulator's completion flag `<param>_grad.accumulation.out`.
pub const ACCUM_OUT_SUFFIX: &str = "_grad.accumulation.out";

impl Roles {
    /// The roles of a model before detection: no training at all.
    pub fn none() -> Roles {
        Roles {
            flavor: Flavor::Inference,
            main: IndexMap::new(),
            optimizer: IndexMap::new(),
            params: vec![],
            loss: None,
            lazy_reset: None,
        }
    }
}
