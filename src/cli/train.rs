//! The training flags shared by `build`, `test` and `inspect`: the keys of
//! `train.toml` (docs/training.md), each over the file's value.

use std::path::PathBuf;

use crate::import::TrainRequest;
use crate::ir::train::TrainKeys;

#[derive(clap::Args, Clone, Debug, Default)]
pub struct TrainArgs {
    /// Training spec to use instead of the model folder's train.toml.
    #[arg(long = "train", value_name = "FILE", help_heading = "Training (train.toml keys)")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub keys: TrainKeys,
    /// Value of a symbolic dim, e.g. batch=8 (repeat); inference too.
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim, help_heading = "Shapes")]
    pub dims: Vec<(String, usize)>,
    /// Batch of dg_model_predict in a training project (default 1).
    #[arg(long = "predict-batch", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536), help_heading = "Shapes")]
    pub predict_batch: Option<u32>,
}

impl TrainArgs {
    pub fn request(&self) -> TrainRequest {
        TrainRequest {
            file: self.file.clone(),
            keys: self.keys.clone(),
            dims: self.dims.clone(),
            predict_batch: self.predict_batch.map(|n| n as usize),
        }
    }
}

/// A `--dim` value that is not `NAME=VALUE` (as given).
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is not NAME=VALUE with a whole number above 0 (e.g. batch=8)")]
struct BadDim(String);

fn parse_dim(s: &str) -> Result<(String, usize), BadDim> {
    let bad = || BadDim(s.to_string());
    let (name, value) = s.split_once('=').ok_or_else(bad)?;
    match value.trim().parse::<usize>() {
        Ok(v) if v > 0 && !name.trim().is_empty() => Ok((name.trim().to_string(), v)),
        _ => Err(bad()),
    }
}
