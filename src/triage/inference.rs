//! The inference variant triage re-runs after a fix (docs/triage.md, "Re-run"): the
//! inference model `<name>` beside a training model `<name>_train`, or
//! else one derived from the training model by dropping the loss and the
//! backward part (`derive.rs`), before the fix from the original folder
//! and after it from the fixed copy.
//!
//! A derived variant's references, in this order:
//! 1. `tools/make_refs.py` on the derived folder, under `--refs`;
//! 2. the training folder's `outputs.npz`, where it holds the forward
//!    outputs by name (after the fix only while the fix left the variant's
//!    model and data as they were);
//! 3. the `outputs.npz` of the derived folder an earlier run wrote
//!    (`<name>.derived/`), when its `network.onnx` and `inputs.npz` are
//!    exactly this derivation's (someone ran `tools/make_refs.py` on it).
//!
//! Without any, the variant still runs (a failure to generate, build or
//! run is a regression) but nothing is compared, and the report says so.

use std::path::{Path, PathBuf};

use super::derive::{self, Derived};
use super::refs;
use crate::bind::{self, Binding};
use crate::error::{Error, Result};
use crate::ir::{Flavor, Model};

/// The folder a derived inference variant is written to: `<name>.derived`
/// beside the training model folder.
pub fn derived_dir(model_dir: &Path) -> PathBuf {
    let name = model_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    model_dir.with_file_name(format!("{name}.derived"))
}

/// A folder beside a training model, named as its inference model, that
/// is not one.
#[derive(Debug, thiserror::Error)]
pub enum SiblingError {
    #[error("{} is not an inference model", .0.display())]
    Training(PathBuf),
    #[error("{}: {source}", path.display())]
    Unloadable { path: PathBuf, source: Box<Error> },
}

/// The inference model of a zoo training model `<name>_train` is `<name>`
/// beside it. `Ok(None)`: there is none (derive one); `Err`: there is a
/// folder of that name, but it is no inference model.
pub fn sibling(dir: &Path) -> std::result::Result<Option<(String, PathBuf)>, SiblingError> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let Some(base) = name.strip_suffix("_train") else { return Ok(None) };
    let sib = dir.with_file_name(base);
    if !sib.is_dir() {
        return Ok(None);
    }
    match crate::load(&sib) {
        Ok(m) if m.roles.flavor == Flavor::Inference => Ok(Some((base.to_string(), sib))),
        Ok(_) => Err(SiblingError::Training(sib)),
        Err(e) => Err(SiblingError::Unloadable { path: sib, source: Box::new(e) }),
    }
}

/// A derived variant written to a scratch folder, with its references.
pub struct DerivedRun {
    pub scratch: PathBuf,
    pub derived: Derived,
    /// Where its references came from; `None`: it has none.
    pub references: Option<String>,
    /// Sources of references that gave none, and why.
    pub notes: Vec<String>,
}

/// What a derivation needs besides the model.
pub struct Ctx<'a> {
    /// `--refs`: run `tools/make_refs.py` on the derived folder.
    pub make_refs: bool,
    /// Where the variant is written when the fix is kept ([`derived_dir`]).
    pub dest: &'a Path,
}

/// Derive the variant of `model` (data bound as `binding`) into the new
/// folder `scratch` and find its references. `before`: the variant
/// derived before the fix, whose references carry over only to the same
/// model and data. On an error `scratch` is removed.
pub fn prepare(
    ctx: &Ctx,
    model: &Model,
    binding: Option<&Binding>,
    before: Option<&Derived>,
    scratch: PathBuf,
) -> Result<DerivedRun> {
    let run = || -> Result<DerivedRun> {
        let mut derived = derive::derive(model, binding)?;
        let mut notes = Vec::new();
        let mut references =
            (!derived.references.is_empty()).then(|| format!("{} of the training folder", bind::OUTPUTS_FILE));
        if let Some(b) = before {
            if !derived.same_as(b) && references.is_some() {
                derived.references.clear();
                references = None;
                notes.push(format!(
                    "the fix changed the variant's model or data: the training folder's {} holds references for \
                     the original",
                    bind::OUTPUTS_FILE
                ));
            }
        }
        std::fs::create_dir_all(&scratch).map_err(|e| Error::write(&scratch, e))?;
        derived.write(&scratch)?;
        if ctx.make_refs {
            match refs::make_refs(&scratch) {
                refs::Refs::Regenerated(_) => {
                    derived.references = read_references(&scratch.join(bind::OUTPUTS_FILE), &derived.outputs)?;
                    references = Some("made by tools/make_refs.py".into());
                }
                refs::Refs::Unavailable(s) | refs::Refs::Failed(s) => notes.push(format!("not made: {s}")),
            }
        }
        if references.is_none() {
            if let Some(found) = earlier_references(ctx.dest, &derived)? {
                derived.references = found;
                write_outputs(&scratch, &derived)?;
                references = Some(format!(
                    "{} of {} (its network.onnx and inputs.npz are this derivation's)",
                    bind::OUTPUTS_FILE,
                    ctx.dest.display()
                ));
            }
        }
        Ok(DerivedRun { scratch: scratch.clone(), derived, references, notes })
    };
    run().inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&scratch);
    })
}

fn write_outputs(dir: &Path, d: &Derived) -> Result<()> {
    let path = dir.join(bind::OUTPUTS_FILE);
    let refs: Vec<(&str, &crate::ir::TensorData)> = d.references.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let bytes =
        bind::npz::write_npz(&refs).map_err(|e| Error::Npz { path: path.clone(), key: None, detail: e.to_string() })?;
    std::fs::write(&path, bytes).map_err(|e| Error::write(&path, e))
}

/// The arrays of `path` named by `outputs`.
fn read_references(path: &Path, outputs: &[String]) -> Result<super::fix::Arrays> {
    let npz = bind::npz::read_all(path)?;
    Ok(outputs.iter().filter_map(|o| npz.get(o).map(|v| (o.clone(), v.clone()))).collect())
}

/// The references an earlier run's derived folder holds, when its model
/// and data are exactly `d`'s.
fn earlier_references(dest: &Path, d: &Derived) -> Result<Option<super::fix::Arrays>> {
    let out = dest.join(bind::OUTPUTS_FILE);
    if !crate::import::regular_file(&out)? {
        return Ok(None);
    }
    let Ok(onnx) = std::fs::read(dest.join("network.onnx")) else { return Ok(None) };
    let Ok(inputs) = bind::npz::read_all(&dest.join(bind::INPUTS_FILE)) else { return Ok(None) };
    let inputs: super::fix::Arrays = inputs.arrays.into_iter().collect();
    if onnx != d.onnx || inputs != d.inputs {
        return Ok(None);
    }
    let found = read_references(&out, &d.outputs)?;
    Ok((!found.is_empty()).then_some(found))
}

/// Copy the scratch folder to `dest`, replacing what is there: into a
/// hidden sibling first, then renamed, so no half-written folder is left.
pub fn persist(scratch: &Path, dest: &Path) -> Result<()> {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}.tmp-"))
        .tempdir_in(parent)
        .map(tempfile::TempDir::keep)
        .map_err(|e| Error::write(dest, e))?;
    let staged = super::copy_dir(scratch, &tmp).and_then(|()| {
        if dest.exists() {
            std::fs::remove_dir_all(dest).map_err(|e| Error::write(dest, e))?;
        }
        std::fs::rename(&tmp, dest).map_err(|e| Error::write(dest, e))
    });
    if staged.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    staged
}

/// What the report says about a variant without (some) references.
pub fn no_references_note(unreferenced: &[String], written: Option<&Path>, dest: &Path) -> String {
    let list = unreferenced.iter().map(|o| format!("'{o}'")).collect::<Vec<_>>().join(", ");
    match written {
        Some(w) => format!(
            "derived inference variant has no references for {list}; run tools/make_refs.py {} and triage again \
             (or triage with --fix --refs)",
            w.display()
        ),
        None => format!(
            "derived inference variant has no references for {list}; run tools/make_refs.py (triage --fix writes \
             the variant to {}; with --refs it runs it)",
            dest.display()
        ),
    }
}
