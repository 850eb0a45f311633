//! The status table (docs/testing.md): one checked-in TOML file, `status.toml` at
//! the repository root, that gives each (model, platform, level) a status.
//! A case without an entry is expected to pass.
//!
//! ```toml
//! ["resnet8/GAP9-L3-training"]
//! status   = "KNOWN_FAILURE_XFAIL"        # or NOT_SUPPORTED_SKIP, EXPECTED_PASSING
//! stage    = "INCORRECT_RESULT"           # where it fails: FAILED_IMPORT … INCORRECT_RESULT
//! reason   = "promotion to L2 shifts the fp32 accumulation order"
//! evidence = "step-0 loss off by 8.7e-4 against 1e-3; 3 of 4 wrong, 3 runs of 3"
//! ```
//!
//! Keys are `<model>/<platform>-<level>-training` (or `-inference`).
//! Every non-passing entry carries `stage`, `reason` and `evidence`; an
//! `EXPECTED_PASSING` entry carries nothing else. Unknown fields, statuses,
//! stages, platforms, levels or kinds are errors that name the entry.
//! `KNOWN_FAILURE_XFAIL` is strict: a case that passes fails the run and is
//! named for promotion; a case that fails at another stage than recorded is
//! a failure too (the known failure has changed).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Kind, Stage};
use crate::error::{Error, Result};

/// The table's place in the repository.
pub const DEFAULT_PATH: &str = "status.toml";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Status {
    #[serde(rename = "EXPECTED_PASSING")]
    ExpectedPassing,
    #[serde(rename = "KNOWN_FAILURE_XFAIL")]
    KnownFailure,
    #[serde(rename = "NOT_SUPPORTED_SKIP")]
    NotSupported,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::ExpectedPassing => "EXPECTED_PASSING",
            Status::KnownFailure => "KNOWN_FAILURE_XFAIL",
            Status::NotSupported => "NOT_SUPPORTED_SKIP",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    status: Status,
    stage: Option<Stage>,
    reason: Option<String>,
    evidence: Option<String>,
}

/// The parts of a key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub model: String,
    pub platform: String,
    pub level: String,
    pub kind: Kind,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}-{}-{}", self.model, self.platform, self.level, self.kind)
    }
}

impl Key {
    /// `<model>/<platform>-<level>-training|inference`; the platform must
    /// be a known one, spelled as its canonical name.
    pub fn parse(s: &str) -> std::result::Result<Key, String> {
        let form = "expected <model>/<platform>-<level>-training (or -inference), e.g. resnet8/GAP9-L3-training";
        let (model, rest) = s.rsplit_once('/').ok_or_else(|| form.to_string())?;
        let parts: Vec<&str> = rest.split('-').collect();
        let [platform, level, kind] = parts.as_slice() else { return Err(form.to_string()) };
        if model.is_empty() {
            return Err(form.to_string());
        }
        let p = crate::plan::Platform::by_name(platform).map_err(|e| e.to_string())?;
        if p.name != *platform {
            return Err(format!("platform '{platform}' is spelled '{}' in keys", p.name));
        }
        if !matches!(*level, "L2" | "L3") {
            return Err(format!("level '{level}': the default memory level is L2 or L3"));
        }
        let kind = match *kind {
            "training" => Kind::Training,
            "inference" => Kind::Inference,
            k => return Err(format!("'{k}': the last part is training or inference")),
        };
        Ok(Key { model: model.to_string(), platform: platform.to_string(), level: level.to_string(), kind })
    }
}

/// One checked entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: String,
    pub status: Status,
    /// Where it fails (non-passing entries).
    pub stage: Option<Stage>,
    pub reason: String,
    pub evidence: String,
}

#[derive(Clone, Debug, Default)]
pub struct StatusTable {
    /// Where it was read from; `None` for the empty table.
    pub path: Option<PathBuf>,
    pub entries: BTreeMap<String, Entry>,
    parsed: BTreeMap<String, Key>,
}

impl StatusTable {
    pub fn empty() -> StatusTable {
        StatusTable::default()
    }

    pub fn read(path: &Path) -> Result<StatusTable> {
        let text = crate::limits::read_text(path, crate::limits::STATUS_TOML, "a status table")?;
        let mut t = StatusTable::parse(&text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// Parse the table; the error names the entry at fault.
    pub fn parse(text: &str) -> std::result::Result<StatusTable, String> {
        let raw: BTreeMap<String, toml::Value> = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut t = StatusTable::default();
        for (key, value) in raw {
            let bad = |msg: String| format!("entry \"{key}\": {msg}");
            let k = Key::parse(&key).map_err(bad)?;
            let e: RawEntry = value.try_into().map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
            let text = |field: &str, v: Option<String>| -> std::result::Result<String, String> {
                match v {
                    Some(s) if !s.trim().is_empty() => Ok(s),
                    _ => Err(bad(format!("a {} entry needs a non-empty `{field}`", e.status))),
                }
            };
            let entry = match e.status {
                Status::ExpectedPassing => {
                    if e.stage.is_some() || e.reason.is_some() || e.evidence.is_some() {
                        return Err(bad(
                            "an EXPECTED_PASSING entry has no stage, reason or evidence (those describe a failure)"
                                .into(),
                        ));
                    }
                    Entry {
                        key: key.clone(),
                        status: e.status,
                        stage: None,
                        reason: String::new(),
                        evidence: String::new(),
                    }
                }
                Status::KnownFailure | Status::NotSupported => {
                    let Some(stage) = e.stage else {
                        return Err(bad(format!(
                            "a {} entry needs `stage`, one of {}",
                            e.status,
                            Stage::ALL.map(Stage::name).join(", ")
                        )));
                    };
                    Entry {
                        key: key.clone(),
                        status: e.status,
                        stage: Some(stage),
                        reason: text("reason", e.reason.clone())?,
                        evidence: text("evidence", e.evidence.clone())?,
                    }
                }
            };
            t.parsed.insert(key.clone(), k);
            t.entries.insert(key, entry);
        }
        Ok(t)
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Entries for this model, platform and level but the other kind: they
    /// can never match a case and have rotted.
    pub fn other_kind(&self, model: &str, platform: &str, level: &str, kind: Kind) -> Vec<&Entry> {
        self.parsed
            .iter()
            .filter(|(_, k)| k.model == model && k.platform == platform && k.level == level && k.kind != kind)
            .filter_map(|(s, _)| self.entries.get(s))
            .collect()
    }

    /// The parsed key of an entry.
    pub fn key(&self, key: &str) -> Option<&Key> {
        self.parsed.get(key)
    }
}
