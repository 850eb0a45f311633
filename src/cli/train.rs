//! The training flags shared by `build`, `test` and `inspect`: the keys of
//! `train.toml` (docs/training.md), each over the file's value.

use std::path::PathBuf;

use crate::import::TrainRequest;
use crate::ir::train::{Loss, Optimizer, TrainKeys};

#[derive(clap::Args, Clone, Debug, Default)]
pub struct TrainArgs {
    /// Training spec to use instead of the model folder's train.toml.
    #[arg(long = "train", value_name = "FILE", help_heading = "Training (train.toml keys)")]
    pub file: Option<PathBuf>,
    /// Loss read from the logits against the labels.
    #[arg(long, value_enum, help_heading = "Training (train.toml keys)")]
    pub loss: Option<Loss>,
    /// The graph output the loss reads (default: the only float output).
    #[arg(long, value_name = "OUTPUT", help_heading = "Training (train.toml keys)")]
    pub logits: Option<String>,
    /// npz key and graph input of the targets (default: labels).
    #[arg(long, value_name = "NAME", help_heading = "Training (train.toml keys)")]
    pub labels: Option<String>,
    /// Optimizer applied after each accumulation of gradients.
    #[arg(long, value_enum, help_heading = "Training (train.toml keys)")]
    pub optimizer: Option<Optimizer>,
    /// Learning rate.
    #[arg(long = "lr", value_name = "RATE", help_heading = "Training (train.toml keys)")]
    pub learning_rate: Option<f32>,
    /// Momentum factor (momentum; default 0.9).
    #[arg(long, value_name = "M", help_heading = "Training (train.toml keys)")]
    pub momentum: Option<f32>,
    /// Weight decay (default 0).
    #[arg(long, value_name = "W", help_heading = "Training (train.toml keys)")]
    pub weight_decay: Option<f32>,
    /// First-moment decay (adamw; default 0.9).
    #[arg(long, value_name = "B", help_heading = "Training (train.toml keys)")]
    pub beta1: Option<f32>,
    /// Second-moment decay (adamw; default 0.999).
    #[arg(long, value_name = "B", help_heading = "Training (train.toml keys)")]
    pub beta2: Option<f32>,
    /// Term added to the denominator (adamw; default 1e-6).
    #[arg(long, value_name = "E", help_heading = "Training (train.toml keys)")]
    pub epsilon: Option<f32>,
    /// Initializers that train (glob; repeat); the others are frozen.
    #[arg(long, value_name = "GLOB", help_heading = "Training (train.toml keys)")]
    pub trainable: Vec<String>,
    /// Initializers that stay frozen (glob; repeat); the others train.
    #[arg(long, value_name = "GLOB", help_heading = "Training (train.toml keys)")]
    pub frozen: Vec<String>,
    /// Forward passes whose gradients are summed before each optimizer step.
    #[arg(long, value_name = "N", help_heading = "Training (train.toml keys)")]
    pub accumulation_steps: Option<u32>,
    /// Value of a symbolic dim, e.g. batch=8 (repeat); inference too.
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim, help_heading = "Shapes")]
    pub dims: Vec<(String, usize)>,
}

impl TrainArgs {
    pub fn request(&self) -> TrainRequest {
        let some = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
        TrainRequest {
            file: self.file.clone(),
            keys: TrainKeys {
                loss: self.loss,
                logits: self.logits.clone(),
                labels: self.labels.clone(),
                optimizer: self.optimizer,
                learning_rate: self.learning_rate,
                momentum: self.momentum,
                weight_decay: self.weight_decay,
                beta1: self.beta1,
                beta2: self.beta2,
                epsilon: self.epsilon,
                trainable: some(&self.trainable),
                frozen: some(&self.frozen),
                accumulation_steps: self.accumulation_steps,
                dims: None,
            },
            dims: self.dims.clone(),
        }
    }
}

fn parse_dim(s: &str) -> Result<(String, usize), String> {
    let bad = || format!("'{s}' is not NAME=VALUE with a whole number above 0 (e.g. batch=8)");
    let (name, value) = s.split_once('=').ok_or_else(bad)?;
    match value.trim().parse::<usize>() {
        Ok(v) if v > 0 && !name.trim().is_empty() => Ok((name.trim().to_string(), v)),
        _ => Err(bad()),
    }
}
