//! The training spec of an inference model (`train.toml`, docs/training.md):
//! which loss reads which output against which labels, the optimizer and
//! its hyperparameters, which weights train, and gradient accumulation.
//! Plain data: `import` reads it, `lower` derives the training step from it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Loss {
    #[serde(rename = "cross-entropy")]
    CrossEntropy,
    #[serde(rename = "mse")]
    Mse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    Sgd,
    Momentum,
    Adamw,
}

impl Loss {
    pub fn name(self) -> &'static str {
        match self {
            Loss::CrossEntropy => "cross-entropy",
            Loss::Mse => "mse",
        }
    }
}

impl Optimizer {
    pub fn name(self) -> &'static str {
        match self {
            Optimizer::Sgd => "sgd",
            Optimizer::Momentum => "momentum",
            Optimizer::Adamw => "adamw",
        }
    }
}

/// Every key of `train.toml`, each optional: the file, then the command
/// line's flags over it (the same keys, as flags of `build`, `test` and
/// `inspect`), then the defaults of [`TrainSpec::resolve`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "Training (train.toml keys)")]
pub struct TrainKeys {
    /// Loss read from the logits against the labels.
    #[arg(long, value_enum)]
    pub loss: Option<Loss>,
    /// The graph output the loss reads (default: the only float output).
    #[arg(long, value_name = "OUTPUT")]
    pub logits: Option<String>,
    /// npz key and graph input of the targets (default: labels).
    #[arg(long, value_name = "NAME")]
    pub labels: Option<String>,
    /// Optimizer applied after each accumulation of gradients.
    #[arg(long, value_enum)]
    pub optimizer: Option<Optimizer>,
    /// Learning rate.
    #[arg(long = "lr", value_name = "RATE")]
    pub learning_rate: Option<f32>,
    /// Momentum factor (momentum; default 0.9).
    #[arg(long, value_name = "M")]
    pub momentum: Option<f32>,
    /// Weight decay (default 0).
    #[arg(long, value_name = "W")]
    pub weight_decay: Option<f32>,
    /// First-moment decay (adamw; default 0.9).
    #[arg(long, value_name = "B")]
    pub beta1: Option<f32>,
    /// Second-moment decay (adamw; default 0.999).
    #[arg(long, value_name = "B")]
    pub beta2: Option<f32>,
    /// Term added to the denominator (adamw; default 1e-6).
    #[arg(long, value_name = "E")]
    pub epsilon: Option<f32>,
    /// Initializers that train (glob; repeat); the others are frozen.
    #[arg(long, value_name = "GLOB", num_args = 1)]
    pub trainable: Option<Vec<String>>,
    /// Initializers that stay frozen (glob; repeat); the others train.
    #[arg(long, value_name = "GLOB", num_args = 1)]
    pub frozen: Option<Vec<String>>,
    /// Forward passes whose gradients are summed before each optimizer step.
    #[arg(long, value_name = "N")]
    pub accumulation_steps: Option<u32>,
    /// Values of symbolic dims (`dims = { batch = 8 }`); on the command
    /// line `--dim NAME=VALUE`, which inference takes too.
    #[arg(skip)]
    pub dims: Option<std::collections::BTreeMap<String, u64>>,
}

impl TrainKeys {
    /// `over`'s keys where it has them, else these. The selection is one
    /// key: `trainable` or `frozen` given over the file replaces the
    /// file's, whichever of the two that was.
    pub fn overlay(self, over: &TrainKeys) -> TrainKeys {
        // Key by key through the serialized form, so that a key added to
        // the struct needs no line here.
        let value = |k: &TrainKeys| match serde_json::to_value(k) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => unreachable!("TrainKeys serializes to an object"),
        };
        let (mut merged, over) = (value(&self), value(over));
        let selects = |m: &serde_json::Map<String, serde_json::Value>| {
            ["trainable", "frozen"].iter().any(|k| m.get(*k).is_some_and(|v| !v.is_null()))
        };
        if selects(&over) {
            merged.remove("trainable");
            merged.remove("frozen");
        }
        merged.extend(over.into_iter().filter(|(_, v)| !v.is_null()));
        serde_json::from_value(serde_json::Value::Object(merged)).expect("merged keys of one struct")
    }

    pub fn is_empty(&self) -> bool {
        *self == TrainKeys::default()
    }
}

/// Which initializers train: globs over their names.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Select {
    /// Every float initializer.
    All,
    Trainable(Vec<String>),
    Frozen(Vec<String>),
}

/// A resolved training spec: every value known.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainSpec {
    pub loss: Loss,
    /// The graph output the loss reads; `None`: the only float output.
    pub logits: Option<String>,
    /// The npz key (and graph input) of the targets.
    pub labels: String,
    pub optimizer: Optimizer,
    pub learning_rate: f32,
    pub momentum: f32,
    pub weight_decay: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub epsilon: f32,
    pub select: Select,
    pub accumulation_steps: u32,
    /// `dims` of the spec file: symbolic dim → value.
    pub dims: std::collections::BTreeMap<String, u64>,
    /// Where the keys came from (`train.toml`, flags), for messages.
    pub source: String,
}

/// A training spec that cannot be resolved, naming the key at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("give either 'trainable' or 'frozen', not both")]
    BothSelections,
    #[error("'loss' is required (\"cross-entropy\" or \"mse\")")]
    NoLoss,
    #[error("'learning_rate' is required")]
    NoLearningRate,
    #[error("'{key}' = {value} must be a finite number above 0")]
    NotPositive { key: &'static str, value: f32 },
    #[error("'{key}' = {value} must be in [0, 1)")]
    NotFraction { key: &'static str, value: f32 },
    #[error("'weight_decay' = {0} must be a finite number, 0 or more")]
    WeightDecay(f32),
    #[error("optimizer \"momentum\" needs 'momentum' above 0")]
    NoMomentum,
    #[error("'accumulation_steps' must be 1 or more")]
    NoAccumulationSteps,
    /// Targets named like a special key of the npz layouts (`why`: which).
    #[error(
        "labels = '{labels}' reads as {why} in inputs.npz, not as a graph input's name: call the targets \
         something else (e.g. 'labels')"
    )]
    LabelsLikeKey { labels: String, why: String },
    #[error("dims: '{name}' = {value} must be a whole number from 1 to {}", u32::MAX)]
    Dim { name: String, value: u64 },
}

/// onnxruntime's AdamW defaults (`onnxblock.optim.AdamW`).
pub const ADAMW_BETA1: f32 = 0.9;
pub const ADAMW_BETA2: f32 = 0.999;
pub const ADAMW_EPSILON: f32 = 1e-6;

impl TrainSpec {
    /// Fill in the defaults and check the values; an error says which key
    /// is wrong and why.
    pub fn resolve(k: TrainKeys, source: &str) -> Result<TrainSpec, SpecError> {
        let select = match (k.trainable, k.frozen) {
            (Some(_), Some(_)) => return Err(SpecError::BothSelections),
            (Some(t), None) => Select::Trainable(t),
            (None, Some(f)) => Select::Frozen(f),
            (None, None) => Select::All,
        };
        let optimizer = k.optimizer.unwrap_or(Optimizer::Sgd);
        let momentum = k.momentum.unwrap_or(if optimizer == Optimizer::Momentum { 0.9 } else { 0.0 });
        let spec = TrainSpec {
            loss: k.loss.ok_or(SpecError::NoLoss)?,
            logits: k.logits,
            labels: k.labels.unwrap_or_else(|| "labels".into()),
            optimizer,
            learning_rate: k.learning_rate.ok_or(SpecError::NoLearningRate)?,
            momentum,
            weight_decay: k.weight_decay.unwrap_or(0.0),
            beta1: k.beta1.unwrap_or(ADAMW_BETA1),
            beta2: k.beta2.unwrap_or(ADAMW_BETA2),
            epsilon: k.epsilon.unwrap_or(ADAMW_EPSILON),
            select,
            accumulation_steps: k.accumulation_steps.unwrap_or(1),
            dims: k.dims.unwrap_or_default(),
            source: source.to_string(),
        };
        spec.check()?;
        Ok(spec)
    }

    fn check(&self) -> Result<(), SpecError> {
        let positive = |key: &'static str, value: f32| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(SpecError::NotPositive { key, value })
            }
        };
        let fraction = |key: &'static str, value: f32| {
            if (0.0..1.0).contains(&value) {
                Ok(())
            } else {
                Err(SpecError::NotFraction { key, value })
            }
        };
        positive("learning_rate", self.learning_rate)?;
        fraction("momentum", self.momentum)?;
        fraction("beta1", self.beta1)?;
        fraction("beta2", self.beta2)?;
        positive("epsilon", self.epsilon)?;
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(SpecError::WeightDecay(self.weight_decay));
        }
        if self.optimizer == Optimizer::Momentum && self.momentum == 0.0 {
            return Err(SpecError::NoMomentum);
        }
        if self.accumulation_steps == 0 {
            return Err(SpecError::NoAccumulationSteps);
        }
        if let Some(why) = key_like(&self.labels) {
            return Err(SpecError::LabelsLikeKey { labels: self.labels.clone(), why });
        }
        if let Some((name, &value)) = self.dims.iter().find(|(_, &v)| v == 0 || v > u32::MAX as u64) {
            return Err(SpecError::Dim { name: name.clone(), value });
        }
        Ok(())
    }

    /// Whether initializer `name` trains (float initializers only).
    pub fn trains(&self, name: &str) -> bool {
        match &self.select {
            Select::All => true,
            Select::Trainable(globs) => globs.iter().any(|g| glob(g, name)),
            Select::Frozen(globs) => !globs.iter().any(|g| glob(g, name)),
        }
    }

    /// The globs given, for checking that each one matches something.
    pub fn globs(&self) -> &[String] {
        match &self.select {
            Select::All => &[],
            Select::Trainable(g) | Select::Frozen(g) => g,
        }
    }
}

/// Whether a name reads as one of the npz layouts' special keys (a
/// mini-batch key, a position, a meta value), and as which.
fn key_like(name: &str) -> Option<String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = name.strip_prefix("mb") {
        let end = rest.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len());
        if let Some(tail) = rest[end..].strip_prefix('_').filter(|t| end > 0 && !t.is_empty()) {
            return Some(format!("the mini-batch {} key of '{tail}'", &rest[..end]));
        }
    }
    if name.strip_prefix("arr_").is_some_and(digits) {
        return Some("a positional key".into());
    }
    name.starts_with("meta_").then(|| "a meta key".into())
}

/// What deriving the training step added (`lower::derive`), for `inspect`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Derived {
    pub spec: Option<TrainSpec>,
    /// The graph output the loss reads (the spec's, or the only float one).
    pub logits: String,
    pub forward_nodes: usize,
    /// Loss and backward nodes, accumulators included.
    pub nodes_added: usize,
    pub optimizer_nodes: usize,
    pub trainable: Vec<String>,
    pub frozen: Vec<String>,
    /// Initializers the step updates as state (BatchNorm running mean and
    /// variance), made graph inputs.
    pub state_inputs: Vec<String>,
    pub optimizer_state_bytes: u64,
    pub gradient_buffer_bytes: u64,
}

/// Shell-style glob: `*` any run of characters, `?` one character.
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Classic two-pointer match with backtracking to the last `*`.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob("fc*", "fc.weight"));
        assert!(glob("*.bias", "conv1.bias"));
        assert!(!glob("*.bias", "conv1.weight"));
        assert!(glob("conv?.weight", "conv1.weight"));
        assert!(!glob("conv?.weight", "conv12.weight"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
    }

    #[test]
    fn resolve_fills_defaults_and_refuses_bad_values() {
        let k = TrainKeys { loss: Some(Loss::Mse), learning_rate: Some(0.1), ..Default::default() };
        let s = TrainSpec::resolve(k.clone(), "t").unwrap();
        assert_eq!((s.optimizer, s.accumulation_steps, s.labels.as_str()), (Optimizer::Sgd, 1, "labels"));
        let bad = TrainKeys { learning_rate: Some(-1.0), ..k.clone() };
        assert_eq!(TrainSpec::resolve(bad, "t"), Err(SpecError::NotPositive { key: "learning_rate", value: -1.0 }));
        let both = TrainKeys { trainable: Some(vec![]), frozen: Some(vec![]), ..k };
        assert_eq!(TrainSpec::resolve(both, "t"), Err(SpecError::BothSelections));
    }

    #[test]
    fn labels_named_like_a_layout_key_are_refused() {
        let k = TrainKeys { loss: Some(Loss::CrossEntropy), learning_rate: Some(0.1), ..Default::default() };
        for bad in ["mb1_labels", "arr_0002", "meta_labels"] {
            let e =
                TrainSpec::resolve(TrainKeys { labels: Some(bad.into()), ..k.clone() }, "t").unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        assert!(TrainSpec::resolve(TrainKeys { labels: Some("mb_labels".into()), ..k }, "t").is_ok());
    }

    #[test]
    fn a_selection_given_over_the_file_replaces_it() {
        let file = TrainKeys { trainable: Some(vec!["fc.*".into()]), ..Default::default() };
        let flags = TrainKeys { frozen: Some(vec!["conv.*".into()]), ..Default::default() };
        let k = file.clone().overlay(&flags);
        assert_eq!((k.trainable, k.frozen), (None, Some(vec!["conv.*".to_string()])));
        let k = file.overlay(&TrainKeys { learning_rate: Some(0.1), ..Default::default() });
        assert_eq!((k.trainable, k.frozen), (Some(vec!["fc.*".to_string()]), None));
    }
}
