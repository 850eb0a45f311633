//! The status table (`status.toml` at the repository root): one table per
//! key `"<model>/<platform>-<level>-<training|inference>"` with `status`
//! and, for entries that do not pass, `stage`, `reason` and `evidence`.
//! Edited with `toml_edit`, so comments and order survive.

use std::path::{Path, PathBuf};

use serde::Serialize;
use toml_edit::{value, DocumentMut, Item, Table};

use crate::error::{Error, Result};

pub const FILE: &str = "status.toml";
pub const EXPECTED_PASSING: &str = "EXPECTED_PASSING";
pub const KNOWN_FAILURE_XFAIL: &str = "KNOWN_FAILURE_XFAIL";
pub const NOT_SUPPORTED_SKIP: &str = "NOT_SUPPORTED_SKIP";
const STATUSES: &[&str] = &[EXPECTED_PASSING, KNOWN_FAILURE_XFAIL, NOT_SUPPORTED_SKIP];
const FIELDS: &[&str] = &["status", "stage", "reason", "evidence"];

/// One entry as read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl Entry {
    pub fn passing() -> Entry {
        Entry { status: EXPECTED_PASSING.into(), ..Entry::default() }
    }

    pub fn xfail(stage: &str, reason: &str, evidence: &str) -> Entry {
        Entry {
            status: KNOWN_FAILURE_XFAIL.into(),
            stage: Some(stage.into()),
            reason: Some(reason.into()),
            evidence: Some(evidence.into()),
        }
    }

    pub fn summary(&self) -> String {
        match (&self.stage, &self.reason) {
            (Some(s), Some(r)) => format!("{} ({s}): {r}", self.status),
            (None, Some(r)) => format!("{}: {r}", self.status),
            _ => self.status.clone(),
        }
    }
}

/// A status table, parsed, with the text it came from.
pub struct StatusTable {
    pub path: PathBuf,
    doc: DocumentMut,
}

impl StatusTable {
    /// Read `path`; a file that does not exist is an empty table (written
    /// on the first update).
    pub fn read(path: &Path) -> Result<StatusTable> {
        let text = match crate::limits::read_text(path, crate::limits::STATUS_TOML, "a status table") {
            Ok(t) => t,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let doc: DocumentMut =
            text.parse().map_err(|e| Error::Usage(format!("{}: not a valid TOML file: {e}", path.display())))?;
        let t = StatusTable { path: path.to_path_buf(), doc };
        for key in t.keys() {
            t.entry(&key)?;
        }
        Ok(t)
    }

    pub fn keys(&self) -> Vec<String> {
        self.doc.iter().map(|(k, _)| k.to_string()).collect()
    }

    /// The entry under `key`; unknown fields and statuses are errors.
    pub fn entry(&self, key: &str) -> Result<Option<Entry>> {
        let Some(item) = self.doc.get(key) else { return Ok(None) };
        let bad = |what: String| Error::Usage(format!("{}: entry \"{key}\": {what}", self.path.display()));
        let Some(t) = item.as_table_like() else { return Err(bad("is not a table".into())) };
        for (k, _) in t.iter() {
            if !FIELDS.contains(&k) {
                return Err(bad(format!("unknown field '{k}' (fields: {})", FIELDS.join(", "))));
            }
        }
        let field = |name: &str| -> Result<Option<String>> {
            match t.get(name) {
                None => Ok(None),
                Some(v) => {
                    v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| bad(format!("'{name}' is not a string")))
                }
            }
        };
        let status = field("status")?.ok_or_else(|| bad("has no 'status'".into()))?;
        if !STATUSES.contains(&status.as_str()) {
            return Err(bad(format!("status '{status}' is not one of {}", STATUSES.join(", "))));
        }
        Ok(Some(Entry { status, stage: field("stage")?, reason: field("reason")?, evidence: field("evidence")? }))
    }

    /// Set `key` to `entry`, in place: an existing table keeps its position
    /// and its comments; fields the entry does not have are removed.
    pub fn set(&mut self, key: &str, entry: &Entry) {
        if self.doc.get(key).and_then(Item::as_table).is_none() {
            // A table without entries keeps its header comment as trailing
            // text, which would follow the new entry: it goes before it.
            let header = (self.doc.is_empty()).then(|| self.doc.trailing().as_str().unwrap_or("").to_string());
            let mut t = Table::new();
            if let Some(h) = header.filter(|h| !h.trim().is_empty()) {
                let h = if h.ends_with("\n\n") { h } else { format!("{}\n\n", h.trim_end_matches('\n')) };
                t.decor_mut().set_prefix(h);
                self.doc.set_trailing("");
            }
            self.doc.insert(key, Item::Table(t));
        }
        let t = self.doc[key].as_table_mut().expect("just made a table");
        t["status"] = value(entry.status.as_str());
        for (name, v) in [("stage", &entry.stage), ("reason", &entry.reason), ("evidence", &entry.evidence)] {
            match v {
                Some(s) => t[name] = value(s.as_str()),
                None => {
                    t.remove(name);
                }
            }
        }
    }

    pub fn to_text(&self) -> String {
        self.doc.to_string()
    }

    /// Write the table back (next to it, then renamed).
    pub fn write(&self) -> Result<()> {
        let tmp = self.path.with_extension("toml.deploygen-tmp");
        std::fs::write(&tmp, self.to_text()).map_err(|e| Error::write(&self.path, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::write(&self.path, e))
    }
}

/// A status key, split.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Key {
    pub model: String,
    pub platform: String,
    pub level: String,
    /// `training` or `inference`.
    pub mode: String,
}

impl Key {
    /// `<model>/<platform>-<level>-<training|inference>`.
    pub fn parse(s: &str) -> Option<Key> {
        let (model, rest) = s.rsplit_once('/')?;
        let mut parts = rest.rsplitn(3, '-');
        let mode = parts.next()?;
        let level = parts.next()?;
        let platform = parts.next()?;
        let ok = !model.is_empty()
            && !platform.is_empty()
            && matches!(mode, "training" | "inference")
            && matches!(level, "L1" | "L2" | "L3");
        ok.then(|| Key { model: model.into(), platform: platform.into(), level: level.into(), mode: mode.into() })
    }

    pub fn with(&self, model: &str, mode: &str) -> Key {
        Key { model: model.into(), mode: mode.into(), ..self.clone() }
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}-{}-{}", self.model, self.platform, self.level, self.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_entries_edit_in_place() {
        let k = Key::parse("missing_labels/host-L2-training").unwrap();
        assert_eq!((k.model.as_str(), k.platform.as_str(), k.level.as_str()), ("missing_labels", "host", "L2"));
        assert_eq!(k.to_string(), "missing_labels/host-L2-training");
        assert!(Key::parse("missing_labels").is_none());
        assert!(Key::parse("m/host-L9-training").is_none());

        let dir = std::env::temp_dir().join(format!("deploygen-status-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE);
        std::fs::write(
            &path,
            "# the table\n[\"a/host-L2-training\"] # first\nstatus = \"KNOWN_FAILURE_XFAIL\"\nstage = \"FAILED_BIND\"\n\
             reason = \"r\"\nevidence = \"e\"\n\n[\"b/host-L2-training\"]\nstatus = \"EXPECTED_PASSING\"\n",
        )
        .unwrap();
        let mut t = StatusTable::read(&path).unwrap();
        t.set("a/host-L2-training", &Entry::passing());
        t.set("c/GAP9-L3-inference", &Entry::xfail("INCORRECT_RESULT", "why", "how"));
        let text = t.to_text();
        assert!(
            text.starts_with("# the table\n[\"a/host-L2-training\"] # first\nstatus = \"EXPECTED_PASSING\"\n"),
            "{text}"
        );
        assert!(!text.contains("FAILED_BIND"), "{text}");
        assert!(text.find("b/host").unwrap() < text.find("c/GAP9").unwrap(), "{text}");
        // A table of comments only: the first entry goes below them.
        std::fs::write(&path, "# the table\n#   [\"<model>/...\"]\n").unwrap();
        let mut t = StatusTable::read(&path).unwrap();
        t.set("a/host-L2-training", &Entry::passing());
        let text = t.to_text();
        assert!(text.starts_with("# the table\n#   [\"<model>/...\"]\n\n[\"a/host-L2-training\"]\n"), "{text}");
        std::fs::write(&path, "[\"a/host-L2-training\"]\nstatus = \"EXPECTED_PASSING\"\nbringup = 1\n").unwrap();
        assert!(StatusTable::read(&path).err().unwrap().to_string().contains("unknown field 'bringup'"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
