//! `train.toml`: the training spec beside an inference model (docs/training.md),
//! with the command line's keys over it.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ir::train::{TrainKeys, TrainSpec};
use crate::ir::DimValue;

pub const TRAIN_FILE: &str = "train.toml";

/// What the command line says about training: another spec file, and keys
/// over the file's.
#[derive(Clone, Debug, Default)]
pub struct TrainRequest {
    pub file: Option<PathBuf>,
    pub keys: TrainKeys,
    /// `--dim NAME=VALUE`: symbolic dims, over the spec file's `dims`.
    pub dims: Vec<(String, usize)>,
    /// `--predict-batch N`: the batch of `dg_model_predict` (default 1).
    pub predict_batch: Option<usize>,
}

/// Largest value of a symbolic dim (as `--dim` and train.toml's `dims`
/// cap it) and the largest prediction batch (as `--predict-batch` does).
pub const MAX_DIM: usize = u32::MAX as usize;
pub const MAX_PREDICT_BATCH: usize = 65_536;

/// A request made through the library is held to the command line's
/// bounds: a dim from 1 to [`MAX_DIM`], a prediction batch from 1 to
/// [`MAX_PREDICT_BATCH`].
pub fn check_request(req: &TrainRequest) -> Result<()> {
    for (name, v) in &req.dims {
        if !(1..=MAX_DIM).contains(v) {
            return Err(Error::Usage(format!(
                "--dim {name}={v}: dim '{name}' must be a whole number from 1 to {MAX_DIM}"
            )));
        }
    }
    match req.predict_batch {
        Some(b) if !(1..=MAX_PREDICT_BATCH).contains(&b) => Err(Error::Usage(format!(
            "--predict-batch {b}: the prediction batch must be from 1 to {MAX_PREDICT_BATCH}"
        ))),
        _ => Ok(()),
    }
}

/// The values asked for symbolic dims: the spec file's `dims`, each
/// replaced by a `--dim` of the same name.
pub fn dim_requests(spec: Option<&TrainSpec>, flags: &[(String, usize)]) -> Vec<DimValue> {
    let mut out: Vec<DimValue> = vec![];
    if let Some(s) = spec {
        for (name, &value) in &s.dims {
            let from = format!("dims in {}", s.source);
            out.push(DimValue { name: name.clone(), value: value as usize, from });
        }
    }
    for (name, value) in flags {
        out.retain(|d| &d.name != name);
        out.push(DimValue { name: name.clone(), value: *value, from: format!("--dim {name}={value}") });
    }
    out
}

/// The model's training spec: `--train FILE`, else `train.toml` in the
/// model folder (when the model is a folder), with the flags' keys over
/// it; `None` when there is neither file nor flag.
pub fn spec(dir: &Path, is_folder: bool, req: &TrainRequest) -> Result<Option<TrainSpec>> {
    let file = match &req.file {
        Some(f) => Some(f.clone()),
        // A train.toml that is there but not a file (a folder, a FIFO, a
        // dangling link) is an error, never a model without one.
        None if is_folder && super::regular_file(&dir.join(TRAIN_FILE))? => Some(dir.join(TRAIN_FILE)),
        None => None,
    };
    let from_file = match &file {
        Some(f) => read(f)?,
        None if req.keys.is_empty() => return Ok(None),
        None => TrainKeys::default(),
    };
    let source = match &file {
        Some(f) if req.keys.is_empty() => f.display().to_string(),
        Some(f) => format!("{} and the command line", f.display()),
        None => "the command line".to_string(),
    };
    let keys = from_file.overlay(&req.keys);
    TrainSpec::resolve(keys, &source)
        .map(Some)
        .map_err(|detail| Error::model(format!("training spec ({source}): {detail}")))
}

fn read(path: &Path) -> Result<TrainKeys> {
    if !super::regular_file(path)? {
        return Err(Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound)));
    }
    let text = crate::limits::read_text(path, crate::limits::TRAIN_TOML, "a training spec")?;
    toml::from_str(&text).map_err(|e| {
        Error::model(format!("{}: not a readable training spec: {}", path.display(), e.to_string().trim_end()))
    })
}
