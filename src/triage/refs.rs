//! Regenerating references with `tools/make_refs.py` (the pinned
//! onnxruntime recipe). deploygen never computes references itself.

use std::path::Path;
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
pub fn make_refs(root: &Path, dir: &Path) -> Refs {
    let Some(py) = python() else {
        return Refs::Unavailable(
            "no Python: neither DEPLOYGEN_PYTHON is set nor python3 on PATH; references not regenerated".into(),
        );
    };
    let Some(script) = script(root) else {
        return Refs::Unavailable(format!(
            "no tools/make_refs.py under {}; references not regenerated",
            root.display()
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
