//! The pinned Python tools under `tools/` (onnxruntime references):
//! where the interpreter and the scripts are. deploygen never computes
//! references itself; `triage --refs` and `test --bisect` run these.

use std::path::{Path, PathBuf};

/// `DEPLOYGEN_PYTHON`, else `python3` on `PATH`.
pub fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DEPLOYGEN_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("python3")).find(|p| p.is_file())
}

/// The environment variable naming the tools folder (`--tools` wins).
pub const ENV: &str = "DEPLOYGEN_TOOLS";

static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Use `dir` as the tools folder for the rest of the process (`--tools`).
pub fn set_dir(dir: PathBuf) {
    let _ = DIR.set(dir);
}

/// The tools folder: `--tools`, else `DEPLOYGEN_TOOLS`, else deploygen's
/// own (`tools/` of the source tree it was built from). Never the working
/// directory or a model's repository: a downloaded folder's scripts are
/// never run.
pub fn dir() -> PathBuf {
    if let Some(d) = DIR.get() {
        return d.clone();
    }
    if let Some(d) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools")
}

/// `make_refs.py` of the tools folder, when it is there.
pub fn script() -> Option<PathBuf> {
    Some(dir().join("make_refs.py")).filter(|p| p.is_file())
}
