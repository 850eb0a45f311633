//! The runtime compiled once. Every generated project carries the same
//! `runtime/` (kernels, memory layer, harness helpers, host emulation), so
//! `deploygen test` builds it once per set of flags into a static archive
//! and each case compiles only its own sources and links
//! (`make -f Makefile.host RUNTIME_LIB=…`).
//!
//! An archive is keyed by the SHA-256 of the project's runtime files (a
//! project whose runtime was patched gets its own), the compile command its
//! `Makefile.host` prints (`make runtime-flags`: compiler, platform, core
//! count, sanitizer flags) and the compiler's `--version`. It is built in a
//! scratch folder inside the cache and renamed into place when complete,
//! under an exclusive lock per key, so concurrent cases and concurrent
//! `deploygen test` processes build it once and never see half of one.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::exec;

/// The environment variable naming the cache folder (`--cache-dir` wins).
pub const ENV: &str = "DEPLOYGEN_CACHE_DIR";

/// The runtime folders that go into the archive.
const RUNTIME_DIRS: &[&str] = &["kernels", "mem", "harness", "pmsis-host"];

/// Compiled once per project with the plan's capacities; never archived.
const PER_PROJECT: &str = "pmsis-host/pmsis_sizes.c";

/// The cache folder: `DEPLOYGEN_CACHE_DIR`, else `$XDG_CACHE_HOME/deploygen`,
/// else `$HOME/.cache/deploygen`; `None` when none of them is set.
pub fn default_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var(ENV)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("deploygen")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("deploygen")))
}

/// How a case's `make` is called: the compiler and extra flags.
#[derive(Clone, Debug, Default)]
pub struct MakeVars {
    pub cc: Option<String>,
    pub extra_cflags: Option<String>,
}

impl MakeVars {
    pub fn apply(&self, cmd: &mut Command) {
        if let Some(cc) = &self.cc {
            cmd.arg(format!("CC={cc}"));
        }
        if let Some(f) = &self.extra_cflags {
            cmd.arg(format!("EXTRA_CFLAGS={f}"));
        }
    }
}

/// Why no archive could be had.
#[derive(Debug)]
pub enum Miss {
    /// The project's `Makefile.host` cannot build one (no `runtime-flags`
    /// target): build it the plain way.
    Unsupported,
    /// The cache folder cannot be used (a file, a dangling link, not
    /// writable, someone else's): build the runtime in the project; the
    /// message says why.
    Unusable(String),
    /// Building the runtime failed: the message and the build log.
    Failed(String, String),
}

/// Why a cached archive is not the one built here (said after its path).
#[derive(Debug, thiserror::Error)]
enum Unverified {
    #[error("is not an ar archive (truncated or replaced)")]
    NotAr,
    #[error("has no recorded SHA-256 ({})", .0.display())]
    NoDigest(PathBuf),
    #[error("cannot be read: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error("does not match the SHA-256 recorded when it was built")]
    Changed,
}

/// Why the cache folder cannot be used (said after its path).
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("cannot resolve the relative path: {0}")]
    Relative(#[source] std::io::Error),
    /// It cannot be made or looked at.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("is not a folder")]
    NotAFolder,
    #[error("belongs to another user or others can write it")]
    NotPrivate,
    #[error("{0}")]
    Nul(#[from] std::ffi::NulError),
    #[error("is not writable")]
    NotWritable,
}

/// The SHA-256 of an archive, recorded beside it when built.
fn digest_path(archive: &Path) -> PathBuf {
    let mut s = archive.as_os_str().to_owned();
    s.push(".sha256");
    PathBuf::from(s)
}

fn sha256_hex(path: &Path) -> std::io::Result<String> {
    let h = Sha256::digest(std::fs::read(path)?);
    Ok(h.iter().map(|b| format!("{b:02x}")).collect())
}

/// Is `archive` the one built here: an `ar` archive whose SHA-256 is the
/// one recorded beside it? `Err`: why not.
fn verified(archive: &Path) -> Result<(), Unverified> {
    let mut magic = [0u8; 8];
    let read = File::open(archive).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic));
    if read.is_err() || &magic != b"!<arch>\n" {
        return Err(Unverified::NotAr);
    }
    let recorded =
        std::fs::read_to_string(digest_path(archive)).map_err(|_| Unverified::NoDigest(digest_path(archive)))?;
    let actual = sha256_hex(archive).map_err(Unverified::Unreadable)?;
    if recorded.trim() != actual {
        return Err(Unverified::Changed);
    }
    Ok(())
}

/// The cache folder, made usable: an absolute path (a relative one is
/// taken from the working directory), created `0700`, a folder of this
/// user that no one else can write.
fn usable(cache: &Path) -> Result<PathBuf, Unusable> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let cache = if cache.is_absolute() {
        cache.to_path_buf()
    } else {
        std::env::current_dir().map_err(Unusable::Relative)?.join(cache)
    };
    if !cache.is_dir() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&cache)?;
    }
    let m = std::fs::metadata(&cache)?;
    if !m.is_dir() {
        return Err(Unusable::NotAFolder);
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(Unusable::NotPrivate);
    }
    // SAFETY: a NUL-terminated path this function owns.
    let c = std::ffi::CString::new(cache.as_os_str().as_encoded_bytes())?;
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(Unusable::NotWritable);
    }
    Ok(cache)
}

/// The runtime sources of a project (paths under the project), sorted,
/// and every runtime file hashed into the key.
fn runtime_files(project: &Path) -> std::io::Result<Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                walk(&p, out)?;
            } else {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = vec![];
    for d in RUNTIME_DIRS {
        let dir = project.join("runtime").join(d);
        if dir.is_dir() {
            walk(&dir, &mut out)?;
        }
    }
    let mut rel: Vec<PathBuf> =
        out.iter().filter_map(|p| p.strip_prefix(project).ok().map(Path::to_path_buf)).collect();
    rel.sort();
    Ok(rel)
}

/// `$(CC) --version` of the compile command, once per command per process.
fn compiler_version(compile: &str) -> String {
    static SEEN: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(v) = seen.lock().unwrap_or_else(|e| e.into_inner()).get(compile) {
        return v.clone();
    }
    // The compiler is the command's words before its first flag.
    let words: Vec<&str> = compile.split_whitespace().take_while(|w| !w.starts_with('-')).collect();
    let version = words.split_first().map_or(String::new(), |(cmd, rest)| {
        Command::new(cmd)
            .args(rest)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    });
    seen.lock().unwrap_or_else(|e| e.into_inner()).insert(compile.to_string(), version.clone());
    version
}

/// The compile command the project's `Makefile.host` uses for the runtime.
fn runtime_flags(project: &Path, vars: &MakeVars, timeout: Duration) -> Option<String> {
    let mut make = Command::new("make");
    make.args(["-s", "-f", super::manifest::MAKEFILE, "runtime-flags"]).current_dir(project);
    vars.apply(&mut make);
    let ran = exec::run(&mut make, timeout).ok()?;
    let line = ran.stdout.trim();
    (ran.success() && !line.is_empty() && !line.contains('\n')).then(|| line.to_string())
}

/// The key: SHA-256 over the runtime files, the compile command and the
/// compiler's version, as 16 hex digits.
fn key(project: &Path, files: &[PathBuf], compile: &str) -> std::io::Result<String> {
    let mut h = Sha256::new();
    for f in files {
        let bytes = std::fs::read(project.join(f))?;
        h.update(f.to_string_lossy().as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    h.update(compile.as_bytes());
    h.update(compiler_version(compile).as_bytes());
    Ok(h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// An exclusive lock on `path`, held until the file is dropped.
fn lock(path: &Path) -> std::io::Result<File> {
    let f = File::options().create(true).truncate(false).write(true).open(path)?;
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(f);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Copy the project's runtime files into `to`.
fn copy_runtime(project: &Path, files: &[PathBuf], to: &Path) -> std::io::Result<()> {
    for f in files {
        let dst = to.join(f);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(project.join(f), dst)?;
    }
    Ok(())
}

/// The runtime archive for the project in `project`, from the cache
/// folder `cache`, built there first when missing.
pub fn archive(cache: &Path, project: &Path, vars: &MakeVars, jobs: usize, timeout: Duration) -> Result<PathBuf, Miss> {
    let Some(compile) = runtime_flags(project, vars, timeout) else { return Err(Miss::Unsupported) };
    let io = |what: &str, e: std::io::Error| Miss::Failed(format!("runtime archive: {what}: {e}"), String::new());
    let files = runtime_files(project).map_err(|e| io("cannot read the project's runtime/", e))?;
    let key = key(project, &files, &compile).map_err(|e| io("cannot read the project's runtime/", e))?;
    let cache = usable(cache).map_err(|why| Miss::Unusable(format!("the cache folder {} {why}", cache.display())))?;
    let cache = cache.as_path();
    let unusable = |what: &str, e: std::io::Error| Miss::Unusable(format!("{what} {}: {e}", cache.display()));
    let archive = cache.join(format!("runtime-{key}.a"));
    if archive.is_file() && verified(&archive).is_ok() {
        return Ok(archive);
    }
    let _held =
        lock(&cache.join(format!("runtime-{key}.lock"))).map_err(|e| unusable("cannot lock in the cache folder", e))?;
    if archive.exists() || std::fs::symlink_metadata(&archive).is_ok() {
        match verified(&archive) {
            Ok(()) => return Ok(archive),
            Err(why) => {
                eprintln!("deploygen: warning: the cached runtime {} {why}: building it again", archive.display());
                std::fs::remove_file(&archive).map_err(|e| unusable("cannot replace a runtime archive in", e))?;
            }
        }
    }
    // Said on stderr: the first case of a run takes this much longer.
    eprintln!("deploygen: compiling the runtime once for these flags into {}", archive.display());
    let t = std::time::Instant::now();
    build(cache, project, &files, vars, jobs, timeout, &archive)?;
    eprintln!("deploygen: runtime compiled in {:.1} s", t.elapsed().as_secs_f64());
    // What the archive was built from, for a person looking at the cache.
    let _ =
        std::fs::write(cache.join(format!("runtime-{key}.txt")), format!("{compile}\n{}", compiler_version(&compile)));
    Ok(archive)
}

/// Compile every runtime source (but the per-project one) with the
/// project's `Makefile.host` into `archive`, via a scratch folder in the
/// cache and an atomic rename.
fn build(
    cache: &Path,
    project: &Path,
    files: &[PathBuf],
    vars: &MakeVars,
    jobs: usize,
    timeout: Duration,
    archive: &Path,
) -> Result<(), Miss> {
    let fail = |m: String| Miss::Failed(m, String::new());
    let scratch = tempfile::Builder::new()
        .prefix("build-")
        .tempdir_in(cache)
        .map_err(|e| Miss::Unusable(format!("cannot create a folder in the cache {}: {e}", cache.display())))?;
    copy_runtime(project, files, scratch.path())
        .map_err(|e| fail(format!("runtime archive: cannot copy runtime/ into {}: {e}", scratch.path().display())))?;
    let sources: Vec<String> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "c") && !f.ends_with(PER_PROJECT))
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    let makefile = project.join(super::manifest::MAKEFILE);
    let mut make = Command::new("make");
    make.arg("-f").arg(&makefile).arg(format!("-j{}", jobs.max(1))).current_dir(scratch.path());
    make.arg(format!("RUNTIME_SRCS={}", sources.join(" "))).arg("runtime.a");
    vars.apply(&mut make);
    let ran =
        exec::run(&mut make, timeout).map_err(|e| fail(format!("cannot run make for the runtime archive: {e}")))?;
    if !ran.success() {
        let what = if ran.timed_out {
            format!("building the runtime archive did not finish within {} s", timeout.as_secs_f64())
        } else {
            format!("building the runtime archive failed ({})", ran.describe_status())
        };
        return Err(Miss::Failed(what, ran.text()));
    }
    // The digest first, then the archive: an archive in place always has
    // its digest beside it.
    let built = scratch.path().join("runtime.a");
    let unusable = |what: &str, e: std::io::Error| Miss::Unusable(format!("runtime archive: {what}: {e}"));
    let digest = sha256_hex(&built).map_err(|e| unusable("cannot read the built archive", e))?;
    let staged = scratch.path().join("runtime.a.sha256");
    std::fs::write(&staged, format!("{digest}\n")).map_err(|e| unusable("cannot write its SHA-256", e))?;
    std::fs::rename(&staged, digest_path(archive))
        .map_err(|e| unusable(&format!("cannot move its SHA-256 beside {}", archive.display()), e))?;
    std::fs::rename(&built, archive).map_err(|e| unusable(&format!("cannot move it to {}", archive.display()), e))
}
