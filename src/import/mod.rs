//! Front end: finds the model's files, decodes the ONNX protobuf and builds
//! the IR. The generated protobuf types (`pb`) stop here: nothing past
//! import sees them.

mod onnx;
mod tensor;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ir::{Model, Roles};

/// The raw protobuf types generated from `proto/onnx.proto`. Only this
/// module converts them; they are public so tests can build models.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
}

pub use onnx::read_graph;

/// Main-graph file names, in the order they are looked for.
const MAIN_NAMES: &[&str] = &["network.onnx", "training_model.onnx"];
const OPTIMIZER_NAMES: &[&str] = &["optimizer.onnx", "optimizer_model.onnx"];

/// The files that make up a model, resolved from a MODEL argument: a folder
/// or a path to one `.onnx` file.
#[derive(Clone, Debug)]
pub struct ModelFiles {
    pub dir: PathBuf,
    pub main: PathBuf,
    pub optimizer: Option<PathBuf>,
}

pub fn locate(arg: &Path) -> Result<ModelFiles> {
    let meta = std::fs::metadata(arg).map_err(|e| Error::io(arg, e))?;
    if meta.is_dir() {
        let main = MAIN_NAMES.iter().map(|n| arg.join(n)).find(|p| p.is_file()).ok_or_else(|| Error::NoModel {
            path: arg.to_path_buf(),
            detail: format!("holds no model: expected {}", MAIN_NAMES.join(" or ")),
        })?;
        let optimizer = OPTIMIZER_NAMES.iter().map(|n| arg.join(n)).find(|p| p.is_file());
        Ok(ModelFiles { dir: arg.to_path_buf(), main, optimizer })
    } else {
        let dir = match arg.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // A main-graph file named as in a model folder keeps its optimizer
        // graph beside it.
        let is_main = arg.file_name().and_then(|n| n.to_str()).is_some_and(|n| MAIN_NAMES.contains(&n));
        let optimizer = if is_main { OPTIMIZER_NAMES.iter().map(|n| dir.join(n)).find(|p| p.is_file()) } else { None };
        Ok(ModelFiles { dir, main: arg.to_path_buf(), optimizer })
    }
}

/// Import a model: main graph and optional optimizer graph, decoded and
/// scheduled. `lower::lower` types them and finds the training roles.
pub fn load(arg: &Path) -> Result<Model> {
    let files = locate(arg)?;
    let graph = read_graph(&files.main)?;
    let optimizer = files.optimizer.as_deref().map(read_graph).transpose()?;
    Ok(Model {
        dir: files.dir,
        path: files.main,
        graph,
        optimizer,
        optimizer_path: files.optimizer,
        roles: Roles::none(),
    })
}
