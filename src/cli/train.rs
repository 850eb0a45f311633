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
    #[arg(long = "predict-batch", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::import::train::MAX_PREDICT_BATCH as i64), help_heading = "Shapes")]
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

/// A `--dim` value that is not `NAME=VALUE` with a value from 1 to
/// 2^32-1 (as given).
#[derive(Debug, thiserror::Error)]
pub enum BadDim {
    #[error("'{0}' is not NAME=VALUE with a whole number above 0 (e.g. batch=8)")]
    Form(String),
    /// The cap `dims` in train.toml has too (docs/training.md).
    #[error("'{0}': dim '{1}' must be a whole number from 1 to {max}", max = u32::MAX)]
    TooLarge(String, String),
}

/// `--dim NAME=VALUE`: a named symbolic dim, 1 ≤ VALUE ≤ 2^32-1.
pub fn parse_dim(s: &str) -> Result<(String, usize), BadDim> {
    let bad = || BadDim::Form(s.to_string());
    let (name, value) = s.split_once('=').ok_or_else(bad)?;
    let name = name.trim();
    if name.is_empty() {
        return Err(bad());
    }
    let digits = value.trim();
    match digits.parse::<u64>() {
        Ok(0) => Err(bad()),
        Ok(v) if v > u64::from(u32::MAX) => Err(BadDim::TooLarge(s.to_string(), name.to_string())),
        Ok(v) => Ok((name.to_string(), v as usize)),
        // More digits than a u64 holds is too large, not malformed.
        Err(_) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            Err(BadDim::TooLarge(s.to_string(), name.to_string()))
        }
        Err(_) => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_capped_at_two_to_the_32_minus_one() {
        assert_eq!(parse_dim("batch=8").unwrap(), ("batch".to_string(), 8));
        assert_eq!(parse_dim("N=4294967295").unwrap().1, 4294967295);
        for v in ["4294967296", "18446744073709551615", "99999999999999999999999"] {
            let e = parse_dim(&format!("N={v}")).unwrap_err().to_string();
            assert!(e.contains("dim 'N'") && e.contains("4294967295"), "{e}");
        }
        for s in ["N=0", "N=-1", "=3", "N", "N=x"] {
            assert!(matches!(parse_dim(s), Err(BadDim::Form(_))), "{s}");
        }
    }
}
