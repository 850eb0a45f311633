//! `train.toml`: the training spec beside an inference model (SPEC §2.5),
//! with the command line's keys over it.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ir::train::{TrainKeys, TrainSpec};

pub const TRAIN_FILE: &str = "train.toml";

/// What the command line says about training: another spec file, and keys
/// over the file's.
#[derive(Clone, Debug, Default)]
pub struct TrainRequest {
    pub file: Option<PathBuf>,
    pub keys: TrainKeys,
}

/// The model's training spec: `--train FILE`, else `train.toml` in the
/// model folder (when the model is a folder), with the flags' keys over
/// it; `None` when there is neither file nor flag.
pub fn spec(dir: &Path, is_folder: bool, req: &TrainRequest) -> Result<Option<TrainSpec>> {
    let file = match &req.file {
        Some(f) => Some(f.clone()),
        None => Some(dir.join(TRAIN_FILE)).filter(|p| is_folder && super::regular_file(p).unwrap_or(false)),
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
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    toml::from_str(&text).map_err(|e| Error::Decode {
        path: path.to_path_buf(),
        detail: format!("not a training spec: {}", e.to_string().trim_end()),
    })
}
