//! The generated project in memory, and writing it: atomically into
//! `--out`, replacing only what `--force` may replace, or diffing it
//! against a pinned copy (`build --check`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use super::Manifest;

/// Whether `dir` is the working directory or a folder above it (which a
/// project, replacing its output folder, cannot be written into).
fn is_current_or_above(dir: &Path) -> bool {
    match (std::fs::canonicalize(dir), std::env::current_dir().and_then(std::fs::canonicalize)) {
        (Ok(d), Ok(cwd)) => cwd.starts_with(d),
        _ => false,
    }
}

/// A generated project, in memory.
#[derive(Clone, Debug)]
pub struct Project {
    /// Relative path and contents, sorted by path.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    pub manifest: Manifest,
}

impl Project {
    /// Total bytes of all files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, b)| b.len() as u64).sum()
    }

    /// Write the project into `out` atomically: into a temporary folder
    /// next to it, renamed into place at the end. An existing `out` is
    /// replaced only with `force`, and only when it is a folder deploygen
    /// made (its `deploygen.json`) or an empty folder. Errors name `out`.
    pub fn write(&self, out: &Path, force: bool) -> Result<()> {
        if is_current_or_above(out) {
            return Err(Error::Usage(format!(
                "cannot write the project into {}: that folder holds the working directory, and the project \
                 replaces its output folder; name a new folder (e.g. build/<model>)",
                out.display()
            )));
        }
        let replace = replaceable(out, force)?;
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| Error::write(out, e))?;
        let base = out.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| "project".into());
        let tmp = parent.join(format!(".{base}.deploygen-tmp-{}", std::process::id()));
        let old = parent.join(format!(".{base}.deploygen-old-{}", std::process::id()));
        let cleanup = |p: &Path| {
            let _ = std::fs::remove_dir_all(p);
        };
        cleanup(&tmp);
        if let Err(e) = self.write_files(&tmp, out) {
            cleanup(&tmp);
            return Err(e);
        }
        if replace {
            cleanup(&old);
            if let Err(e) = std::fs::rename(out, &old) {
                cleanup(&tmp);
                return Err(Error::write(out, e));
            }
        }
        if let Err(e) = std::fs::rename(&tmp, out) {
            if replace {
                let _ = std::fs::rename(&old, out);
            }
            cleanup(&tmp);
            return Err(Error::write(out, e));
        }
        cleanup(&old);
        Ok(())
    }

    /// Every file under `tmp`; a failure names the file's place in `out`.
    fn write_files(&self, tmp: &Path, out: &Path) -> Result<()> {
        std::fs::create_dir(tmp).map_err(|e| Error::write(out, e))?;
        for (rel, data) in &self.files {
            let p = tmp.join(rel);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d).map_err(|e| Error::write(out.join(rel), e))?;
            }
            std::fs::write(&p, data).map_err(|e| Error::write(out.join(rel), e))?;
        }
        Ok(())
    }

    /// Compare with an existing project folder: a unified diff of every
    /// file that differs, is missing or is extra; empty when identical.
    pub fn check(&self, dir: &Path) -> Result<String> {
        let mut out = String::new();
        let mut expected: BTreeMap<PathBuf, &[u8]> = BTreeMap::new();
        for (p, d) in &self.files {
            expected.insert(p.clone(), d);
        }
        let mut found: Vec<PathBuf> = vec![];
        list_files(dir, Path::new(""), &mut found)?;
        for rel in &found {
            if !expected.contains_key(rel) {
                out.push_str(&format!("only in {}: {}\n", dir.display(), rel.display()));
            }
        }
        for (rel, want) in &expected {
            let p = dir.join(rel);
            match std::fs::read(&p) {
                Err(_) => out.push_str(&format!("missing in {}: {}\n", dir.display(), rel.display())),
                Ok(have) if have.as_slice() == *want => {}
                Ok(have) => out.push_str(&unified_diff(rel, &have, want)),
            }
        }
        Ok(out)
    }
}

/// Whether `out` exists and may be replaced. It may with `force` when it
/// is a folder deploygen made or an empty folder; anything else is an
/// error saying why, before anything is written.
fn replaceable(out: &Path, force: bool) -> Result<bool> {
    let meta = match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        // Looking for `out` is the first step of writing it (a path below a
        // file fails here): a write failure, named as the user gave it.
        Err(e) => return Err(Error::write(out, e)),
        Ok(m) => m,
    };
    if !force {
        return Err(Error::Usage(format!(
            "{} already exists: pass --force to replace it, or choose another --out",
            out.display()
        )));
    }
    let why = if meta.file_type().is_symlink() {
        "it is a symbolic link"
    } else if !meta.is_dir() {
        "it is not a folder"
    } else if made_by_deploygen(out) || is_empty(out)? {
        return Ok(true);
    } else {
        "it holds files but no deploygen.json manifest, so deploygen did not make it"
    };
    Err(Error::Usage(format!(
        "--force does not replace {}: {why}. --force replaces only a folder deploygen made (one with its \
         deploygen.json) or an empty folder; move it away yourself or choose another --out",
        out.display()
    )))
}

/// A folder whose `deploygen.json` is a project manifest.
fn made_by_deploygen(dir: &Path) -> bool {
    let Ok(text) = std::fs::read(dir.join("deploygen.json")) else { return false };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else { return false };
    ["model", "platform", "default_mem", "kind", "expected_compared"].iter().all(|k| v.get(k).is_some())
}

fn is_empty(dir: &Path) -> Result<bool> {
    let mut entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    Ok(entries.next().is_none())
}

fn list_files(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let dir = root.join(rel);
    let rd = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let r = rel.join(e.file_name());
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            list_files(root, &r, out)?;
        } else {
            out.push(r);
        }
    }
    Ok(())
}

/// A unified diff of one file (`have` on disk → `want` generated), 3 lines
/// of context; binary files are reported by size.
pub fn unified_diff(rel: &Path, have: &[u8], want: &[u8]) -> String {
    match (std::str::from_utf8(have), std::str::from_utf8(want)) {
        (Ok(a), Ok(b)) => {
            let (old, new) = (format!("a/{}", rel.display()), format!("b/{}", rel.display()));
            similar::TextDiff::from_lines(a, b).unified_diff().context_radius(3).header(&old, &new).to_string()
        }
        _ => format!("binary file {} differs ({} B on disk, {} B generated)\n", rel.display(), have.len(), want.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_shows_changed_lines_with_context() {
        let a = "1\n2\n3\n4\n5\n6\n7\n";
        let b = "1\n2\n3\nfour\n5\n6\n7\n";
        let d = unified_diff(Path::new("x.c"), a.as_bytes(), b.as_bytes());
        assert!(d.starts_with("--- a/x.c\n+++ b/x.c\n@@ -1,7 +1,7 @@\n"), "{d}");
        assert!(d.contains("\n-4\n+four\n"), "{d}");
        assert!(d.contains(" 3\n") && d.contains(" 5\n"), "{d}");
        let bin = unified_diff(Path::new("l3.bin"), &[0xff, 0], &[0xfe]);
        assert!(bin.contains("binary file l3.bin differs"), "{bin}");
    }
}
