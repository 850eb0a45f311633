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
        // Fresh folders (unpredictable names, created exclusively): what is
        // removed below is only ever what this process made.
        let fresh = |what: &str| {
            tempfile::Builder::new()
                .prefix(&format!(".{base}.deploygen-{what}-"))
                .tempdir_in(parent)
                .map(tempfile::TempDir::keep)
                .map_err(|e| Error::write(out, without_temp_path(e)))
        };
        let cleanup = |p: &Path| {
            let _ = std::fs::remove_dir_all(p);
        };
        let tmp = fresh("tmp")?;
        // A project folder as `mkdir` makes one, not the private mode of a
        // temporary folder.
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755));
        }
        if let Err(e) = self.write_files(&tmp, out) {
            cleanup(&tmp);
            return Err(e);
        }
        // `out` is renamed over an empty folder of this process's.
        let old = if replace {
            match fresh("old") {
                Ok(o) => Some(o),
                Err(e) => {
                    cleanup(&tmp);
                    return Err(e);
                }
            }
        } else {
            None
        };
        if let Some(old) = &old {
            if let Err(e) = std::fs::rename(out, old) {
                cleanup(&tmp);
                cleanup(old);
                return Err(Error::write(out, e));
            }
        }
        if let Err(e) = std::fs::rename(&tmp, out) {
            if let Some(old) = &old {
                let _ = std::fs::rename(old, out);
            }
            cleanup(&tmp);
            return Err(Error::write(out, e));
        }
        if let Some(old) = &old {
            cleanup(old);
        }
        Ok(())
    }

    /// Every file under `tmp`; a failure names the file's place in `out`.
    fn write_files(&self, tmp: &Path, out: &Path) -> Result<()> {
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
    /// What the project's make rules build there is not a difference.
    pub fn check(&self, dir: &Path) -> Result<String> {
        let mut out = String::new();
        let mut expected: BTreeMap<PathBuf, &[u8]> = BTreeMap::new();
        for (p, d) in &self.files {
            expected.insert(p.clone(), d);
        }
        let listed: std::collections::BTreeSet<PathBuf> = expected.keys().cloned().collect();
        let mut found: Vec<PathBuf> = vec![];
        list_files(dir, Path::new(""), &mut found)?;
        for rel in &found {
            if !expected.contains_key(rel) && !made_by_make(rel, &listed) {
                out.push_str(&format!("only in {}: {}\n", dir.display(), rel.display()));
            }
        }
        for (rel, want) in &expected {
            let p = dir.join(rel);
            if std::fs::metadata(&p).is_err() {
                out.push_str(&format!("missing in {}: {}\n", dir.display(), rel.display()));
                continue;
            }
            // A FIFO or device in its place is refused, never read.
            let have = read_regular(&p, "a file of the project to compare")?;
            if have.as_slice() != *want {
                out.push_str(&unified_diff(rel, &have, want));
            }
        }
        Ok(out)
    }
}

/// The OS error under `tempfile`'s, which names the temporary path: a
/// failed write names the user's path only.
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    let os = e
        .get_ref()
        .and_then(|inner| std::error::Error::source(inner))
        .and_then(|src| src.downcast_ref::<std::io::Error>())
        .and_then(std::io::Error::raw_os_error);
    match os {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::from(e.kind()),
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
        "it is a symbolic link".to_string()
    } else if !meta.is_dir() {
        "it is not a folder".to_string()
    } else if is_empty(out)? {
        return Ok(true);
    } else {
        match only_what_deploygen_wrote(out) {
            Ok(()) => return Ok(true),
            Err(why) => why.to_string(),
        }
    };
    Err(Error::Usage(format!(
        "--force does not replace {}: {why}. --force replaces only a folder deploygen made (the files its \
         deploygen.json lists, unchanged, and what the project's make rules build) or an empty folder; move it \
         away yourself or choose another --out",
        out.display()
    )))
}

/// What the project's own make rules build from a project holding
/// `listed`: `app`, `demo` (a training project's API client), `runtime.a`,
/// `dumps.bin` (a dump run), one `.o` per listed `.c`, and the SDK's
/// `BUILD/` and CMake's `build/` folders.
fn made_by_make(rel: &Path, listed: &std::collections::BTreeSet<PathBuf>) -> bool {
    if ["app", "demo", "runtime.a", "dumps.bin"].iter().any(|f| rel == Path::new(f)) {
        return true;
    }
    if rel.starts_with("BUILD") || rel.starts_with("build") {
        return true;
    }
    rel.extension().is_some_and(|e| e == "o") && listed.contains(&rel.with_extension("c"))
}

/// Why a folder is not one deploygen made (and so `--force` leaves it),
/// naming the file at fault.
#[derive(Debug, thiserror::Error)]
enum NotMade {
    #[error("it holds files but no readable deploygen.json manifest, so deploygen did not make it")]
    NoManifest,
    #[error("its deploygen.json is not a project manifest ({0})")]
    NotAManifest(#[source] serde_json::Error),
    #[error("its deploygen.json lists no files deploygen wrote")]
    NoFiles,
    #[error("{} is listed in its deploygen.json but not there: the manifest does not match", .0.display())]
    Missing(PathBuf),
    #[error("{} was changed since deploygen wrote it", .0.display())]
    Changed(PathBuf),
    /// The folder cannot be listed.
    #[error("{0}")]
    Unlisted(#[source] Box<Error>),
    /// A listed file that is not a regular file (a FIFO, a device) or
    /// cannot be read.
    #[error("{0}")]
    Unreadable(#[source] Box<Error>),
    #[error("{} is not a file deploygen wrote", .0.display())]
    Extra(PathBuf),
}

/// Is `dir` a project deploygen wrote: a manifest listing files, each of
/// them there and unchanged, and nothing else but what make builds?
/// `Err`: why not, naming the file.
fn only_what_deploygen_wrote(dir: &Path) -> std::result::Result<(), NotMade> {
    let manifest_path = dir.join(super::manifest::FILE);
    let text = crate::limits::read(&manifest_path, crate::limits::MANIFEST, "a project manifest")
        .map_err(|_| NotMade::NoManifest)?;
    let m: Manifest = serde_json::from_slice(&text).map_err(NotMade::NotAManifest)?;
    if m.files.is_empty() {
        return Err(NotMade::NoFiles);
    }
    let listed: std::collections::BTreeSet<PathBuf> = m.files.iter().map(|f| PathBuf::from(&f.path)).collect();
    for f in &m.files {
        let p = dir.join(&f.path);
        if std::fs::metadata(&p).is_err() {
            return Err(NotMade::Missing(p));
        }
        let data = read_regular(&p, "a file deploygen wrote").map_err(|e| NotMade::Unreadable(Box::new(e)))?;
        if super::manifest::WrittenFile::of(Path::new(&f.path), &data).sha256 != f.sha256 {
            return Err(NotMade::Changed(p));
        }
    }
    let mut found = vec![];
    list_entries(dir, Path::new(""), &mut found).map_err(|e| NotMade::Unlisted(Box::new(e)))?;
    for (rel, is_dir) in found {
        let ok = rel == Path::new(super::manifest::FILE)
            || made_by_make(&rel, &listed)
            || (!is_dir && listed.contains(&rel))
            || (is_dir && listed.iter().any(|l| l.starts_with(&rel)));
        if !ok {
            return Err(NotMade::Extra(dir.join(rel)));
        }
    }
    Ok(())
}

/// Every entry under `root` (files, folders, links), relative, with
/// whether it is a real folder; links are never followed.
fn list_entries(root: &Path, rel: &Path, out: &mut Vec<(PathBuf, bool)>) -> Result<()> {
    let dir = root.join(rel);
    let rd = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let r = rel.join(e.file_name());
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
        out.push((r.clone(), is_dir));
        if is_dir {
            list_entries(root, &r, out)?;
        }
    }
    Ok(())
}

/// The whole of the regular file `p` ([`crate::files::open_regular`]: a
/// FIFO or device is refused, never opened to block).
fn read_regular(p: &Path, what: &str) -> Result<Vec<u8>> {
    let mut f = crate::files::open_regular(p, what)?;
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut data).map_err(|e| Error::io(p, e))?;
    Ok(data)
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
