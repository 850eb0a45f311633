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

/// `tools/make_refs.py` of the repository root, else of deploygen's own
/// source tree.
pub fn script(root: &Path) -> Option<PathBuf> {
    [root.join("tools/make_refs.py"), Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/make_refs.py")]
        .into_iter()
        .find(|p| p.is_file())
}
