//! TEST-NAME → model folder and status key.
//!
//! A status key `<model>/<platform>-<level>-training` names the model by
//! folder name; it is looked up under `models/` and `tests/fixtures/` of
//! the repository root. A path to a model folder works too; its key is the
//! one training key of that model in the status table, or
//! `<model>/host-L2-training` when the table has none.

use std::path::{Path, PathBuf};

use super::status::{Key, StatusTable};
use crate::error::{Error, Result};

/// Folders of the repository root that hold model folders.
pub const MODEL_ROOTS: &[&str] = &["models", "tests/fixtures"];

#[derive(Clone, Debug)]
pub struct Resolved {
    pub dir: PathBuf,
    pub key: Key,
    /// How the name was resolved, for the report.
    pub how: String,
}

fn is_model_dir(p: &Path) -> bool {
    p.is_dir() && ["network.onnx", "training_model.onnx"].iter().any(|n| p.join(n).is_file())
}

/// One normal path component: a key never reaches outside the roots.
pub fn is_plain_name(model: &str) -> bool {
    let mut parts = Path::new(model).components();
    matches!((parts.next(), parts.next()), (Some(std::path::Component::Normal(_)), None))
        && !model.contains(['/', '\\'])
}

/// Model folders named `model` under the roots.
pub fn candidates(root: &Path, model: &str) -> Vec<PathBuf> {
    MODEL_ROOTS.iter().map(|r| root.join(r).join(model)).filter(|p| is_model_dir(p)).collect()
}

pub fn resolve(root: &Path, name: &str, table: &StatusTable) -> Result<Resolved> {
    if let Some(key) = Key::parse(name) {
        if key.mode != "training" {
            return Err(Error::Usage(format!(
                "{name}: triage works on training cases; the training key of this model is '{}'",
                key.with(&key.model, "training")
            )));
        }
        if !is_plain_name(&key.model) {
            return Err(Error::Usage(format!(
                "{name}: the model part '{}' of the key is not a plain folder name (no '/', '.', '..' or \\): \
                 a key names a model folder under {}",
                key.model,
                root.display()
            )));
        }
        let found = candidates(root, &key.model);
        return match found.as_slice() {
            [dir] => {
                let inside = match (dir.canonicalize(), root.canonicalize()) {
                    (Ok(d), Ok(r)) => d.starts_with(r),
                    _ => false,
                };
                if !inside {
                    return Err(Error::Usage(format!(
                        "{name}: the model folder {} leads outside the root {} (a link?)",
                        dir.display(),
                        root.display()
                    )));
                }
                Ok(Resolved { dir: dir.clone(), how: format!("status key, model folder {}", dir.display()), key })
            }
            [] => Err(Error::Usage(format!(
                "{name}: no model folder '{}' under {} (looked in {})",
                key.model,
                root.display(),
                MODEL_ROOTS.join(", ")
            ))),
            many => Err(Error::Usage(format!(
                "{name}: '{}' is ambiguous: {}; pass the model folder instead",
                key.model,
                many.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ))),
        };
    }
    let p = Path::new(name);
    if is_model_dir(p) {
        let model = p
            .canonicalize()
            .ok()
            .and_then(|c| c.file_name().map(|f| f.to_string_lossy().into_owned()))
            .ok_or_else(|| Error::Usage(format!("{name}: cannot name the model folder")))?;
        let keys: Vec<Key> = table
            .keys()
            .iter()
            .filter_map(|k| Key::parse(k))
            .filter(|k| k.model == model && k.mode == "training")
            .collect();
        return match keys.as_slice() {
            [k] => Ok(Resolved {
                dir: p.to_path_buf(),
                key: k.clone(),
                how: format!("model folder, key from {}", table.path.display()),
            }),
            [] => Ok(Resolved {
                dir: p.to_path_buf(),
                key: Key { model, platform: "host".into(), level: "L2".into(), mode: "training".into() },
                how: format!("model folder; {} has no training entry for it, so host-L2", table.path.display()),
            }),
            many => Err(Error::Usage(format!(
                "{name}: {} has several training entries for '{model}': {}; pass one of them",
                table.path.display(),
                many.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ")
            ))),
        };
    }
    if p.exists() {
        return Err(Error::Usage(format!("{name}: not a model folder (no network.onnx or training_model.onnx in it)")));
    }
    // A bare model name: say which keys would name it.
    let found = candidates(root, name);
    let hint = match found.as_slice() {
        [] => format!("no model folder '{name}' under {} ({})", root.display(), MODEL_ROOTS.join(", ")),
        [d] => format!("did you mean '{name}/host-L2-training' or the folder {}?", d.display()),
        many => format!("it matches {}", many.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")),
    };
    Err(Error::Usage(format!(
        "cannot resolve '{name}': give a status key <model>/<platform>-<level>-training or a model folder; {hint}"
    )))
}
