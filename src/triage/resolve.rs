//! TEST-NAME → model folder and status key.
//!
//! A status key `<model>/<platform>-<level>-training` names the model by
//! folder name; it is looked up under `models/` and `tests/fixtures/` of
//! the repository root. A path to a model folder works too; its key is the
//! one training key of that model in the status table, or
//! `<model>/host-L2-training` when the table has none. A name that does
//! not resolve is refused with the nearest model folders and keys.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::plan::Level;
use crate::verify::status::{did_you_mean, nearest, Key, StatusTable};
use crate::verify::Kind;

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

/// The names of the model folders under the roots, sorted.
pub fn model_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = MODEL_ROOTS
        .iter()
        .filter_map(|r| std::fs::read_dir(root.join(r)).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| is_model_dir(&e.path()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The model folders under the roots whose names are near `model`.
fn near_models(root: &Path, model: &str) -> Vec<String> {
    let names = model_names(root);
    nearest(model, names.iter().map(String::as_str)).into_iter().map(str::to_string).collect()
}

pub fn resolve(root: &Path, name: &str, table: &StatusTable) -> Result<Resolved> {
    let parsed = Key::parse(name);
    if let Ok(key) = parsed {
        if key.kind != Kind::Training {
            return Err(Error::Usage(format!(
                "{name}: triage works on training cases; the training key of this model is '{}'",
                key.with(&key.model, Kind::Training)
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
            [] => {
                let near: Vec<String> =
                    near_models(root, &key.model).iter().map(|m| key.with(m, Kind::Training).to_string()).collect();
                Err(Error::Usage(format!(
                    "{name}: no model folder '{}' under {} (looked in {}){}",
                    key.model,
                    root.display(),
                    MODEL_ROOTS.join(", "),
                    did_you_mean(&near)
                )))
            }
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
        let keys: Vec<&Key> = table.keys().filter(|k| k.model == model && k.kind == Kind::Training).collect();
        return match keys.as_slice() {
            [k] => Ok(Resolved {
                dir: p.to_path_buf(),
                key: (*k).clone(),
                how: format!("model folder, key from {}", table.path_text()),
            }),
            [] => {
                // An entry of a near name may be this model's, misspelt.
                let models: Vec<&str> = table.keys().map(|k| k.model.as_str()).collect();
                let near: Vec<String> = nearest(&model, models)
                    .into_iter()
                    .flat_map(|m| table.keys().filter(move |k| k.model == m && k.kind == Kind::Training))
                    .map(Key::to_string)
                    .collect();
                Ok(Resolved {
                    dir: p.to_path_buf(),
                    key: Key { model, platform: "host".into(), level: Level::L2, kind: Kind::Training },
                    how: format!(
                        "model folder; {} has no training entry for it, so host-L2{}",
                        table.path_text(),
                        if near.is_empty() {
                            String::new()
                        } else {
                            let near: Vec<String> = near.iter().map(|k| format!("'{k}'")).collect();
                            format!(" (it has {} of a near name: misspelt?)", near.join(", "))
                        }
                    ),
                })
            }
            many => Err(Error::Usage(format!(
                "{name}: {} has several training entries for '{model}': {}; pass one of them",
                table.path_text(),
                many.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ")
            ))),
        };
    }
    if p.exists() {
        return Err(Error::Usage(format!("{name}: not a model folder (no network.onnx or training_model.onnx in it)")));
    }
    // Shaped like a key (`<model>/<platform>-…`) but not one: say which
    // part is wrong (with the nearest known names).
    if let (Err(why), Some((_, rest))) = (&parsed, name.rsplit_once('/')) {
        if rest.contains('-') {
            return Err(Error::Usage(format!(
                "cannot resolve '{name}': no such model folder, and not a status key: {why}"
            )));
        }
    }
    // A bare model name: say which keys would name it.
    let found = candidates(root, name);
    let hint = match found.as_slice() {
        [] => {
            let near: Vec<String> =
                near_models(root, name).into_iter().map(|m| format!("{m}/host-L2-training")).collect();
            format!(
                "no model folder '{name}' under {} ({}){}",
                root.display(),
                MODEL_ROOTS.join(", "),
                did_you_mean(&near)
            )
        }
        [d] => format!("did you mean '{name}/host-L2-training' or the folder {}?", d.display()),
        many => format!("it matches {}", many.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")),
    };
    Err(Error::Usage(format!(
        "cannot resolve '{name}': give a status key <model>/<platform>-<level>-training or a model folder; {hint}"
    )))
}
