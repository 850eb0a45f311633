//! `deploygen.json`: what a generated project says about itself — which
//! model, platform and level it is for, and how many values its harness
//! must compare.

use std::path::Path;

use serde::Deserialize;

use super::{Case, Kind};

pub const FILE: &str = "deploygen.json";
pub const MAKEFILE: &str = "Makefile.host";
pub const APP: &str = "app";

/// `loss_refs`: the reference losses, or how many there are.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum LossRefs {
    Count(u64),
    Values(Vec<Option<f64>>),
}

impl LossRefs {
    pub fn count(&self) -> u64 {
        match self {
            LossRefs::Count(n) => *n,
            LossRefs::Values(v) => v.len() as u64,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct Manifest {
    pub model: String,
    pub platform: String,
    pub default_mem: String,
    pub kind: Kind,
    /// Values the harness must compare: the N of `Errors: E out of N`.
    pub expected_compared: u64,
    #[serde(default)]
    pub loss_refs: Option<LossRefs>,
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Outputs the harness does not compare, with why.
    #[serde(default)]
    pub not_compared: Vec<serde_json::Value>,
    #[serde(default)]
    pub steps: Option<u64>,
    #[serde(default)]
    pub accum: Option<u64>,
}

impl Manifest {
    /// Read and check a project's manifest; the error is the verdict's
    /// message.
    pub fn read(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join(FILE);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("the generated project has no readable {FILE}: {e}"))?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| format!("{FILE} of the generated project: {e}"))?;
        if m.expected_compared == 0 {
            return Err(format!(
                "{FILE}: expected_compared is 0 — the project has no reference to compare, so its test would pass by comparing nothing"
            ));
        }
        if let Some(t) = m.tolerance {
            if !(t.is_finite() && t >= 0.0) {
                return Err(format!("{FILE}: tolerance {t} is not a finite, non-negative number"));
            }
        }
        if let Some(l) = &m.loss_refs {
            if l.count() > m.expected_compared {
                return Err(format!(
                    "{FILE}: {} loss references but expected_compared is {}",
                    l.count(),
                    m.expected_compared
                ));
            }
        }
        Ok(m)
    }

    /// The project must be the one the case asked for.
    pub fn agrees_with(&self, case: &Case) -> Result<(), String> {
        let mut diffs = vec![];
        if !self.platform.eq_ignore_ascii_case(&case.platform) {
            diffs.push(format!("platform {} (asked: {})", self.platform, case.platform));
        }
        if !self.default_mem.eq_ignore_ascii_case(&case.default_mem) {
            diffs.push(format!("default_mem {} (asked: {})", self.default_mem, case.default_mem));
        }
        if self.kind != case.kind {
            diffs.push(format!("kind {} (the model is a {} graph)", self.kind, case.kind));
        }
        if diffs.is_empty() {
            Ok(())
        } else {
            Err(format!("{FILE} describes another project: {}", diffs.join(", ")))
        }
    }
}
