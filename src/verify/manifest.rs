//! `deploygen.json` as `verify` reads it: the project's own
//! [`Manifest`](crate::emit::Manifest) (which model, platform and level it
//! is for, and how many values its harness must compare), checked before
//! anything is built.

use std::path::Path;

pub use crate::emit::manifest::{Manifest, FILE};

use super::Case;

pub const MAKEFILE: &str = "Makefile.host";
pub const APP: &str = "app";

/// A manifest that `verify` cannot build from; the message is the
/// verdict's.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("the generated project has no readable {FILE}: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error("{FILE} of the generated project: {0}")]
    Malformed(#[source] serde_json::Error),
    #[error(
        "{FILE}: expected_compared is 0 and no tensor is compared — the project has no reference to compare, so its test would pass by comparing nothing"
    )]
    NothingCompared,
    #[error("{FILE}: tolerance {0} is not a finite, non-negative number")]
    Tolerance(f32),
    #[error("{FILE}: rtol {0} is not a finite, non-negative number")]
    Rtol(f32),
    #[error("{FILE}: {loss_refs} loss references but expected_compared is {expected_compared}")]
    LossRefs { loss_refs: u64, expected_compared: u64 },
    /// The project is for another case: what differs, each as
    /// `<field> <project's> (<asked>)`.
    #[error("{FILE} describes another project: {}", .0.join(", "))]
    AnotherProject(Vec<String>),
}

/// Read and check a project's manifest; the error is the verdict's
/// message.
pub fn read(dir: &Path) -> Result<Manifest, ManifestError> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(ManifestError::Unreadable)?;
    let m: Manifest = serde_json::from_str(&text).map_err(ManifestError::Malformed)?;
    if m.compares_nothing() {
        return Err(ManifestError::NothingCompared);
    }
    if !(m.tolerance.is_finite() && m.tolerance >= 0.0) {
        return Err(ManifestError::Tolerance(m.tolerance));
    }
    if !(m.rtol.is_finite() && m.rtol >= 0.0) {
        return Err(ManifestError::Rtol(m.rtol));
    }
    if m.loss_refs > m.expected_compared {
        return Err(ManifestError::LossRefs { loss_refs: m.loss_refs, expected_compared: m.expected_compared });
    }
    Ok(m)
}

/// The project must be the one the case asked for.
pub fn agrees_with(m: &Manifest, case: &Case) -> Result<(), ManifestError> {
    let mut diffs = vec![];
    if !m.platform.eq_ignore_ascii_case(&case.platform) {
        diffs.push(format!("platform {} (asked: {})", m.platform, case.platform));
    }
    if !m.default_mem.eq_ignore_ascii_case(&case.default_mem) {
        diffs.push(format!("default_mem {} (asked: {})", m.default_mem, case.default_mem));
    }
    if m.kind != case.kind.name() {
        diffs.push(format!("kind {} (the model is a {} graph)", m.kind, case.kind));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(ManifestError::AnotherProject(diffs))
    }
}
