//! The status table (docs/testing.md): one checked-in TOML file, `status.toml` at
//! the repository root, that gives each (model, platform, level) a status.
//! A case without an entry is expected to pass. `deploygen test` reads it;
//! `deploygen triage` edits it with `toml_edit`, so comments and the order
//! of the entries survive.
//!
//! ```toml
//! ["resnet8/GAP9-L3-training"]
//! status   = "KNOWN_FAILURE_XFAIL"        # or NOT_SUPPORTED_SKIP, EXPECTED_PASSING
//! stage    = "INCORRECT_RESULT"           # where it fails: FAILED_IMPORT … INCORRECT_RESULT
//! reason   = "promotion to L2 shifts the fp32 accumulation order"
//! evidence = "step-0 loss off by 8.7e-4 against 1e-3; 3 of 4 wrong, 3 runs of 3"
//! ```
//!
//! Keys are `<model>/<platform>-<level>-training` (or `-inference`), with
//! the platform spelled as its canonical name and the level L2 or L3.
//! Every non-passing entry carries `stage`, `reason` and `evidence`; an
//! `EXPECTED_PASSING` entry carries nothing else. Unknown fields, statuses,
//! stages, platforms, levels or kinds are errors that name the entry (and
//! the nearest known names). The same rules hold for what is read and for
//! what is written.
//! `KNOWN_FAILURE_XFAIL` is strict: a case that passes fails the run and is
//! named for promotion; a case that fails at another stage than recorded is
//! a failure too (the known failure has changed).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize, Serializer};
use toml_edit::{value, DocumentMut, Item, Table};

use super::{Kind, Stage};
use crate::error::{Error, Result};
use crate::plan::{Level, Platform};

/// The table's file name, at the repository root.
pub const FILE: &str = "status.toml";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// The known names nearest to `word` (a misspelling, another case), at
/// most three, nearest first; none when no name is near.
pub fn nearest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let w = word.to_lowercase();
    let mut near: Vec<(usize, &str)> = known
        .into_iter()
        .filter_map(|k| {
            let l = k.to_lowercase();
            let d = strsim::damerau_levenshtein(&w, &l);
            let bound = (w.chars().count().max(l.chars().count()) / 3).max(1);
            let prefix = w.chars().count() >= 3 && (l.starts_with(&w) || w.starts_with(&l));
            (d <= bound || prefix).then_some((d, k))
        })
        .collect();
    near.sort();
    near.dedup();
    near.into_iter().take(3).map(|(_, k)| k).collect()
}

/// `; did you mean 'a' or 'b'?` for the near names, or nothing.
pub fn did_you_mean(near: &[impl AsRef<str>]) -> String {
    if near.is_empty() {
        return String::new();
    }
    let names: Vec<String> = near.iter().map(|n| format!("'{}'", n.as_ref())).collect();
    format!("; did you mean {}?", names.join(" or "))
}

/// What is wrong with a status key, naming the part at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("expected <model>/<platform>-<level>-training (or -inference), e.g. resnet8/GAP9-L3-training")]
    Form,
    /// No known platform: why, and the nearest known names.
    #[error("{why}{}", did_you_mean(near))]
    Platform { why: String, near: Vec<String> },
    /// A known platform, spelled other than its canonical name.
    #[error("platform '{given}' is spelled '{canonical}' in keys")]
    Spelling { given: String, canonical: String },
    #[error("level '{0}': the default memory level is L2 or L3")]
    Level(String),
    #[error("'{given}': the last part is training or inference{}", did_you_mean(near))]
    Kind { given: String, near: Vec<&'static str> },
}

/// An entry that breaks the rules of the table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("an EXPECTED_PASSING entry has no stage, reason or evidence (those describe a failure)")]
    PassingWithFailure,
    #[error("a {status} entry needs `stage`, one of {}", Stage::ALL.map(Stage::name).join(", "))]
    NoStage { status: Status },
    #[error("a {status} entry needs a non-empty `{field}`")]
    Empty { status: Status, field: &'static str },
}

/// A status table that cannot be read: not TOML (the parser's message), or
/// an entry at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    #[error("{0}")]
    Document(#[from] toml_edit::TomlError),
    #[error("entry \"{key}\": {fault}")]
    Entry { key: String, fault: EntryFault },
}

/// What is wrong with one entry of a table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryFault {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("is not a table")]
    NotATable,
    /// A field the entry cannot have, or a value of the wrong kind (the
    /// TOML reader's message).
    #[error("{0}")]
    Fields(String),
    #[error(transparent)]
    Rules(#[from] EntryError),
}

/// A status key, parsed: `<model>/<platform>-<level>-training|inference`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub model: String,
    /// A known platform's canonical name (`GAP9`, `Siracusa`, `host`).
    pub platform: String,
    /// The default memory level: L2 or L3.
    pub level: Level,
    pub kind: Kind,
}

impl Key {
    /// The text of a key: the one place its form is written.
    pub fn text(model: &str, platform: &str, level: &str, kind: Kind) -> String {
        format!("{model}/{platform}-{level}-{kind}")
    }

    /// `<model>/<platform>-<level>-training|inference`; the platform must
    /// be a known one, spelled as its canonical name, and the level L2 or
    /// L3. The error names the part at fault and the nearest known names.
    pub fn parse(s: &str) -> std::result::Result<Key, KeyError> {
        let (model, rest) = s.rsplit_once('/').ok_or(KeyError::Form)?;
        let parts: Vec<&str> = rest.split('-').collect();
        let [platform, level, kind] = parts.as_slice() else { return Err(KeyError::Form) };
        if model.is_empty() {
            return Err(KeyError::Form);
        }
        let p = Platform::by_name(platform).map_err(|e| {
            let all = Platform::all();
            let near = nearest(platform, all.iter().map(|p| p.name.as_str()));
            KeyError::Platform { why: e.to_string(), near: near.into_iter().map(str::to_string).collect() }
        })?;
        if p.name != *platform {
            return Err(KeyError::Spelling { given: platform.to_string(), canonical: p.name });
        }
        let level = match Level::parse(level) {
            Some(l @ (Level::L2 | Level::L3)) if l.name() == *level => l,
            _ => return Err(KeyError::Level(level.to_string())),
        };
        let kind = match *kind {
            "training" => Kind::Training,
            "inference" => Kind::Inference,
            k => {
                let near = nearest(k, [Kind::Training, Kind::Inference].map(Kind::name));
                return Err(KeyError::Kind { given: k.to_string(), near });
            }
        };
        Ok(Key { model: model.to_string(), platform: p.name, level, kind })
    }

    /// The same case for another model and kind.
    pub fn with(&self, model: &str, kind: Kind) -> Key {
        Key { model: model.into(), kind, ..self.clone() }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&Key::text(&self.model, &self.platform, self.level.name(), self.kind))
    }
}

/// A key serialises as its text.
impl Serialize for Key {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    pub status: Status,
    /// Where it fails (non-passing entries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// Empty for a passing entry.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub evidence: String,
}

/// An entry as written in the file, before the rules are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    status: Status,
    stage: Option<Stage>,
    reason: Option<String>,
    evidence: Option<String>,
}

/// A text field as the file has it: an empty one is not there.
fn given(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// The rules of an entry, for what is read and what is written.
fn check(
    status: Status,
    stage: Option<Stage>,
    reason: Option<&str>,
    evidence: Option<&str>,
) -> std::result::Result<(), EntryError> {
    match status {
        Status::ExpectedPassing => {
            if stage.is_some() || reason.is_some() || evidence.is_some() {
                return Err(EntryError::PassingWithFailure);
            }
        }
        Status::KnownFailure | Status::NotSupported => {
            if stage.is_none() {
                return Err(EntryError::NoStage { status });
            }
            for (field, v) in [("reason", reason), ("evidence", evidence)] {
                if v.is_none_or(|s| s.trim().is_empty()) {
                    return Err(EntryError::Empty { status, field });
                }
            }
        }
    }
    Ok(())
}

impl Entry {
    pub fn passing() -> Entry {
        Entry { status: Status::ExpectedPassing, stage: None, reason: String::new(), evidence: String::new() }
    }

    pub fn xfail(stage: Stage, reason: &str, evidence: &str) -> Entry {
        Entry { status: Status::KnownFailure, stage: Some(stage), reason: reason.into(), evidence: evidence.into() }
    }

    fn from_raw(e: RawEntry) -> std::result::Result<Entry, EntryError> {
        check(e.status, e.stage, e.reason.as_deref(), e.evidence.as_deref())?;
        Ok(Entry {
            status: e.status,
            stage: e.stage,
            reason: e.reason.unwrap_or_default(),
            evidence: e.evidence.unwrap_or_default(),
        })
    }

    fn check(&self) -> std::result::Result<(), EntryError> {
        check(self.status, self.stage, given(&self.reason), given(&self.evidence))
    }

    /// `STATUS (STAGE): reason`.
    pub fn summary(&self) -> String {
        match (self.stage, self.reason.is_empty()) {
            (Some(s), false) => format!("{} ({s}): {}", self.status, self.reason),
            (None, false) => format!("{}: {}", self.status, self.reason),
            _ => self.status.to_string(),
        }
    }
}

/// A status table: its checked entries in file order, and the document
/// they came from (comments and order kept for edits).
#[derive(Clone, Debug, Default)]
pub struct StatusTable {
    /// Where it was read from; `None` for the empty table.
    pub path: Option<PathBuf>,
    /// Entries by key text, in file order.
    pub entries: IndexMap<String, Entry>,
    parsed: HashMap<String, Key>,
    doc: DocumentMut,
}

impl StatusTable {
    pub fn empty() -> StatusTable {
        StatusTable::default()
    }

    /// Read the table at `path`; a file that is not there is an error.
    pub fn read(path: &Path) -> Result<StatusTable> {
        let text = crate::limits::read_text(path, crate::limits::STATUS_TOML, "a status table")?;
        let mut t = StatusTable::parse(&text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// Read the table at `path` to edit it: a file that is not there is
    /// an empty table (made by [`StatusTable::write`]).
    pub fn open(path: &Path) -> Result<StatusTable> {
        match StatusTable::read(path) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(StatusTable { path: Some(path.to_path_buf()), ..StatusTable::default() })
            }
            r => r,
        }
    }

    /// Parse the table; the error names the entry at fault.
    pub fn parse(text: &str) -> std::result::Result<StatusTable, TableError> {
        let mut raw: BTreeMap<String, toml::Value> = toml::from_str(text)?;
        let doc: DocumentMut = text.parse()?;
        let mut t = StatusTable { doc, ..StatusTable::default() };
        let keys: Vec<String> = t.doc.iter().map(|(k, _)| k.to_string()).collect();
        for key in keys {
            let bad = |fault: EntryFault| TableError::Entry { key: key.clone(), fault };
            let k = Key::parse(&key).map_err(|e| bad(e.into()))?;
            let v = raw.remove(&key).ok_or_else(|| bad(EntryFault::NotATable))?;
            let e: RawEntry =
                v.try_into().map_err(|e: toml::de::Error| bad(EntryFault::Fields(e.message().to_string())))?;
            let e = Entry::from_raw(e).map_err(|e| bad(e.into()))?;
            t.parsed.insert(key.clone(), k);
            t.entries.insert(key, e);
        }
        Ok(t)
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The parsed key of an entry.
    pub fn key(&self, key: &str) -> Option<&Key> {
        self.parsed.get(key)
    }

    /// Every key, in file order.
    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.entries.keys().filter_map(|k| self.parsed.get(k))
    }

    /// Keys for this model, platform and level but the other kind: their
    /// entries can never match a case and have rotted.
    pub fn other_kind(&self, model: &str, platform: &str, level: &str, kind: Kind) -> Vec<&Key> {
        self.keys()
            .filter(|k| k.model == model && k.platform == platform && k.level.name() == level && k.kind != kind)
            .collect()
    }

    /// Set `key` to `entry`, in place: an existing table keeps its position
    /// and its comments; fields the entry does not have are removed. An
    /// entry that breaks the rules is refused, naming it.
    pub fn set(&mut self, key: &Key, entry: &Entry) -> Result<()> {
        let name = key.to_string();
        entry.check().map_err(|e| Error::Usage(format!("{}: entry \"{name}\": {e}", self.path_text())))?;
        if self.doc.get(&name).and_then(Item::as_table).is_none() {
            // A table without entries keeps its header comment as trailing
            // text, which would follow the new entry: it goes before it.
            let header = (self.doc.is_empty()).then(|| self.doc.trailing().as_str().unwrap_or("").to_string());
            let mut t = Table::new();
            if let Some(h) = header.filter(|h| !h.trim().is_empty()) {
                let h = if h.ends_with("\n\n") { h } else { format!("{}\n\n", h.trim_end_matches('\n')) };
                t.decor_mut().set_prefix(h);
                self.doc.set_trailing("");
            }
            self.doc.insert(&name, Item::Table(t));
        }
        let t = self.doc[&name].as_table_mut().expect("just made a table");
        t["status"] = value(entry.status.name());
        for (field, v) in [
            ("stage", entry.stage.map(Stage::name)),
            ("reason", given(&entry.reason)),
            ("evidence", given(&entry.evidence)),
        ] {
            match v {
                Some(s) => t[field] = value(s),
                None => {
                    t.remove(field);
                }
            }
        }
        self.parsed.insert(name.clone(), key.clone());
        self.entries.insert(name, entry.clone());
        Ok(())
    }

    pub fn to_text(&self) -> String {
        self.doc.to_string()
    }

    /// Where the table lives, for messages.
    pub fn path_text(&self) -> String {
        self.path.as_ref().map_or_else(|| "the status table".into(), |p| p.display().to_string())
    }

    /// Write the table back ([`crate::files::write`]: through a temporary
    /// file renamed into place, only over a regular file or a new name).
    pub fn write(&self) -> Result<()> {
        let Some(path) = &self.path else {
            return Err(Error::Usage("the status table has no file to be written to".into()));
        };
        crate::files::write(path, self.to_text().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_entries_edit_in_place() {
        let k = Key::parse("missing_labels/host-L2-training").unwrap();
        assert_eq!(
            (k.model.as_str(), k.platform.as_str(), k.level, k.kind),
            ("missing_labels", "host", Level::L2, Kind::Training)
        );
        assert_eq!(k.to_string(), "missing_labels/host-L2-training");
        assert!(Key::parse("missing_labels").is_err());
        assert_eq!(Key::parse("m/host-L9-training"), Err(KeyError::Level("L9".into())));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(
            &path,
            "# the table\n[\"a/host-L2-training\"] # first\nstatus = \"KNOWN_FAILURE_XFAIL\"\nstage = \"FAILED_BIND\"\n\
             reason = \"r\"\nevidence = \"e\"\n\n[\"b/host-L2-training\"]\nstatus = \"EXPECTED_PASSING\"\n",
        )
        .unwrap();
        let mut t = StatusTable::open(&path).unwrap();
        let a = Key::parse("a/host-L2-training").unwrap();
        t.set(&a, &Entry::passing()).unwrap();
        let c = Key::parse("c/GAP9-L3-inference").unwrap();
        t.set(&c, &Entry::xfail(Stage::Result, "why", "how")).unwrap();
        let text = t.to_text();
        assert!(
            text.starts_with("# the table\n[\"a/host-L2-training\"] # first\nstatus = \"EXPECTED_PASSING\"\n"),
            "{text}"
        );
        assert!(!text.contains("FAILED_BIND"), "{text}");
        assert!(text.find("b/host").unwrap() < text.find("c/GAP9").unwrap(), "{text}");
        // What is written reads back as the same entries.
        let back = StatusTable::parse(&text).unwrap();
        assert_eq!(back.entries, t.entries);
        assert_eq!(
            back.keys().map(Key::to_string).collect::<Vec<_>>(),
            ["a/host-L2-training", "b/host-L2-training", "c/GAP9-L3-inference"]
        );
        // An entry that breaks the rules is not written.
        let e = t.set(&a, &Entry::xfail(Stage::Bind, " ", "e")).unwrap_err().to_string();
        assert!(
            e.contains("entry \"a/host-L2-training\": a KNOWN_FAILURE_XFAIL entry needs a non-empty `reason`"),
            "{e}"
        );
        // A table of comments only: the first entry goes below them.
        std::fs::write(&path, "# the table\n#   [\"<model>/...\"]\n").unwrap();
        let mut t = StatusTable::open(&path).unwrap();
        t.set(&a, &Entry::passing()).unwrap();
        let text = t.to_text();
        assert!(text.starts_with("# the table\n#   [\"<model>/...\"]\n\n[\"a/host-L2-training\"]\n"), "{text}");
        std::fs::write(&path, "[\"a/host-L2-training\"]\nstatus = \"EXPECTED_PASSING\"\nbringup = 1\n").unwrap();
        assert!(StatusTable::open(&path).err().unwrap().to_string().contains("unknown field `bringup`"));
        // Read needs the file; open makes an empty table of it.
        std::fs::remove_file(&path).unwrap();
        assert!(StatusTable::read(&path).is_err());
        assert!(StatusTable::open(&path).unwrap().entries.is_empty());
    }

    #[test]
    fn misspelt_parts_of_a_key_name_the_nearest_known_names() {
        let e = Key::parse("m/GAPP9-L3-training").unwrap_err().to_string();
        assert!(e.contains("unknown platform 'GAPP9'") && e.contains("did you mean 'GAP9'?"), "{e}");
        let e = Key::parse("m/GAP9-L3-trainig").unwrap_err().to_string();
        assert!(e.contains("did you mean 'training'?"), "{e}");
        assert_eq!(
            nearest("missing_lables", ["missing_labels", "tiny_classifier", "missing_inputs"]),
            ["missing_labels"]
        );
        assert!(nearest("nosuch", ["missing_labels", "tiny_classifier"]).is_empty());
    }
}
