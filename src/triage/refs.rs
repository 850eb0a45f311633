//! Regenerating references with `tools/make_refs.py` (the pinned
//! onnxruntime recipe), or `tools/make_train_refs.py` for a model with a
//! `train.toml` (onnxruntime-training on the same graph and spec).
//! deploygen never computes references itself.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What happened when references were asked for.
pub enum Refs {
    Regenerated(String),
    /// Python or onnxruntime is not there; says which and how to get it.
    Unavailable(String),
    Failed(String),
}

pub use crate::verify::tools::{python, script};

/// Recompute `dir/outputs.npz` from `dir`'s model and inputs.
pub fn make_refs(dir: &Path) -> Refs {
    let Some(py) = python() else {
        return Refs::Unavailable(
            "no Python: neither DEPLOYGEN_PYTHON is set nor python3 on PATH; references not regenerated".into(),
        );
    };
    let train = dir.join(crate::import::TRAIN_FILE).is_file();
    let name = if train { "make_train_refs.py" } else { "make_refs.py" };
    let found = if train { train_script() } else { script() };
    let Some(script) = found else {
        return Refs::Unavailable(format!(
            "no {name} in {} (--tools DIR or {}); references not regenerated",
            crate::verify::tools::dir().display(),
            crate::verify::tools::ENV
        ));
    };
    let out = match Command::new(&py).arg(&script).arg(dir).output() {
        Ok(o) => o,
        Err(e) => return Refs::Unavailable(format!("cannot run {}: {e}; references not regenerated", py.display())),
    };
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.code() {
        Some(0) => Refs::Regenerated(format!(
            "{} {}: {}",
            py.display(),
            script.display(),
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        Some(2) => Refs::Unavailable(format!("{} with {}: {stderr}", script.display(), py.display())),
        _ => Refs::Failed(format!("{} {} failed: {stderr}", py.display(), script.display())),
    }
}

/// `tools/make_train_refs.py`, beside `tools/make_refs.py`.
fn train_script() -> Option<PathBuf> {
    script().map(|p| p.with_file_name("make_train_refs.py")).filter(|p| p.is_file())
}
