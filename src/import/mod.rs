//! Front end: finds the model's files, decodes the ONNX protobuf and builds
//! the IR. The generated protobuf types (`pb`) stop here: nothing past
//! import sees them.

mod onnx;
mod tensor;
pub mod train;

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
pub use train::{TrainRequest, TRAIN_FILE};

/// Main-graph file names, in the order they are looked for.
const MAIN_NAMES: &[&str] = &["network.onnx", "training_model.onnx"];
const OPTIMIZER_NAMES: &[&str] = &["optimizer.onnx", "optimizer_model.onnx"];

/// A model's name, from a MODEL argument or its main file: the folder's
/// name for a folder or a main file (`network.onnx`,
/// `training_model.onnx`), else the `.onnx` file's stem. `build` names
/// the project with it and `test` the case, so the two agree.
pub fn model_name(path: &Path) -> Option<std::ffi::OsString> {
    let dir_name = |p: &Path| {
        let p = if p.as_os_str().is_empty() { Path::new(".") } else { p };
        p.canonicalize().unwrap_or_else(|_| p.to_path_buf()).file_name().map(|s| s.to_os_string())
    };
    if path.is_dir() {
        return dir_name(path);
    }
    match path.file_name().and_then(|f| f.to_str()) {
        Some(f) if MAIN_NAMES.contains(&f) => path.parent().and_then(dir_name),
        _ => path.file_stem().map(|s| s.to_os_string()),
    }
}

/// Whether `path` is named like a model folder's main graph
/// (`network.onnx`, `training_model.onnx`).
pub fn is_main_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| MAIN_NAMES.contains(&n))
}

/// The files that make up a model, resolved from a MODEL argument: a folder
/// or a path to one `.onnx` file.
#[derive(Clone, Debug)]
pub struct ModelFiles {
    pub dir: PathBuf,
    pub main: PathBuf,
    pub optimizer: Option<PathBuf>,
}

/// Whether `path` is a regular file: `Ok(false)` when it does not exist,
/// `Ok(true)` for a regular file (through symlinks), an
/// error saying what it is otherwise (directory, FIFO, device, socket,
/// dangling or looping symbolic link).
pub fn regular_file(path: &Path) -> Result<bool> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if link.file_type().is_symlink() => {
            return Err(Error::NoModel {
                path: path.to_path_buf(),
                detail: format!("is a symbolic link that leads nowhere (dangling or a loop: {e})"),
            })
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(true);
    }
    let what = if ft.is_dir() {
        "a directory".to_string()
    } else {
        special_kind(&ft).unwrap_or("not a regular file").to_string()
    };
    Err(Error::NoModel { path: path.to_path_buf(), detail: format!("is {what}, not a regular file") })
}

#[cfg(unix)]
fn special_kind(ft: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_char_device() || ft.is_block_device() {
        Some("a device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> Option<&'static str> {
    None
}

/// The one file among `names` in `dir`; two present is an error asking for
/// the file path.
fn one_of(dir: &Path, names: &[&str]) -> Result<Option<PathBuf>> {
    let mut found = Vec::new();
    for n in names {
        let p = dir.join(n);
        if regular_file(&p)? {
            found.push(p);
        }
    }
    if found.len() > 1 {
        return Err(Error::NoModel {
            path: dir.to_path_buf(),
            detail: format!(
                "holds both {}: pass the path of the file to use (e.g. {}) instead of the folder",
                names.join(" and "),
                found[0].display()
            ),
        });
    }
    Ok(found.pop())
}

pub fn locate(arg: &Path) -> Result<ModelFiles> {
    let meta = std::fs::metadata(arg).map_err(|e| Error::io(arg, e))?;
    if meta.is_dir() {
        let main = one_of(arg, MAIN_NAMES)?.ok_or_else(|| Error::NoModel {
            path: arg.to_path_buf(),
            detail: format!("holds no model: expected {}", MAIN_NAMES.join(" or ")),
        })?;
        let optimizer = one_of(arg, OPTIMIZER_NAMES)?;
        Ok(ModelFiles { dir: arg.to_path_buf(), main, optimizer })
    } else {
        let dir = match arg.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // A main-graph file named as in a model folder keeps its optimizer
        // graph beside it.
        let is_main = arg.file_name().and_then(|n| n.to_str()).is_some_and(|n| MAIN_NAMES.contains(&n));
        if !regular_file(arg)? {
            return Err(Error::io(arg, std::io::Error::from(std::io::ErrorKind::NotFound)));
        }
        let optimizer = if is_main { one_of(&dir, OPTIMIZER_NAMES)? } else { None };
        Ok(ModelFiles { dir, main: arg.to_path_buf(), optimizer })
    }
}

/// What to do with an attribute the operator's schema does not define.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownAttrs {
    /// Refuse the node, as onnxruntime does: such an attribute changes
    /// what the node computes in some convention deploygen does not know.
    #[default]
    Refuse,
    /// Ignore it, with a warning naming node, operator and attribute.
    Warn,
}

/// Every node's attributes against its operator's schema (the registry's
/// `attrs`): refused or warned about per `policy`.
pub fn check_attributes(m: &mut Model, policy: UnknownAttrs) -> Result<()> {
    for g in std::iter::once(&mut m.graph).chain(m.optimizer.as_mut()) {
        let mut warnings = vec![];
        for node in g.dag.node_weights_mut() {
            for &(theirs, schema) in crate::ops::of(node).renamed {
                let Some(v) = node.attrs.shift_remove(theirs) else { continue };
                if node.attrs.get(schema).is_some_and(|w| *w != v) {
                    return Err(Error::node(
                        node,
                        format!("attributes '{theirs}' and '{schema}' (the same, in another spelling) disagree"),
                    ));
                }
                node.attrs.insert(schema.to_string(), v);
            }
        }
        for (_, node) in g.nodes() {
            let def = crate::ops::of(node);
            let domain = if node.domain == "ai.onnx" { "" } else { node.domain.as_str() };
            let opset = g.opsets.get(domain).copied().unwrap_or(i64::MAX);
            for name in node.attrs.keys().filter(|a| !def.defines_attr(a)) {
                // An attribute of the schema of the model's (older) opset.
                if let Some(l) = def.legacy_attr(name, opset) {
                    if let Some(why) = (l.unsupported)(node) {
                        return Err(Error::node(node, format!("opset {opset} attribute {why}")));
                    }
                    continue;
                }
                let known = if def.attrs.is_empty() { "none".to_string() } else { def.attrs.join(", ") };
                let what =
                    format!("attribute '{name}' is not defined by the schema of {} (its attributes: {known})", node.op);
                match policy {
                    UnknownAttrs::Refuse => {
                        return Err(Error::node(
                            node,
                            format!(
                                "{what}; it would change what the node computes in a convention deploygen does not \
                                 know, so the node is refused (as onnxruntime does); --allow-unknown-attributes \
                                 ignores it"
                            ),
                        ))
                    }
                    UnknownAttrs::Warn => warnings.push(format!("node '{}' ({}): {what}; ignored", node.name, node.op)),
                }
            }
        }
        g.warnings.extend(warnings);
    }
    Ok(())
}

/// Import a model: main graph and optional optimizer graph, decoded and
/// scheduled. `lower::lower` types them and finds the training roles.
pub fn load(arg: &Path) -> Result<Model> {
    load_with(arg, &TrainRequest::default())
}

/// [`load`], with the command line's training request: an inference model
/// with a training spec (`train.toml` or flags) carries it for `lower`.
pub fn load_with(arg: &Path, req: &TrainRequest) -> Result<Model> {
    train::check_request(req)?;
    let files = locate(arg)?;
    let train = train::spec(&files.dir, arg.is_dir(), req)?;
    let graph = read_graph(&files.main)?;
    let optimizer = files.optimizer.as_deref().map(read_graph).transpose()?;
    Ok(Model {
        dir: files.dir,
        path: files.main,
        graph,
        optimizer,
        optimizer_path: files.optimizer,
        roles: Roles::none(),
        dim_requests: train::dim_requests(train.as_ref(), &req.dims),
        train,
        derived: None,
        dims: vec![],
        initial: Default::default(),
        pinned: vec![],
        predict_batch: req.predict_batch.unwrap_or(1),
        predict_batch_given: req.predict_batch.is_some(),
        predict_note: None,
        predict: None,
        no_predict: None,
        forward_nodes: None,
    })
}
