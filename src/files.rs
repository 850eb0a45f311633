//! Files named by the user, read or written by path: the one reader and
//! the one writer every such path goes through.
//!
//! - A file read is a regular file (through symbolic links). Its metadata
//!   is checked before it is opened, and it is opened without blocking and
//!   checked again, so a FIFO, a device, a socket or a folder is refused
//!   naming the path, never read from (a FIFO would block forever, a
//!   device never end).
//! - A file written goes through a temporary file in the target's folder
//!   (an unpredictable name, created exclusively) renamed into place, and
//!   only over a regular file or to a new name: a device node, a FIFO, a
//!   socket, a folder or a symbolic link (even to a regular file) is
//!   refused naming the path and left as it is. A reader never sees half a
//!   file, and a failed write leaves nothing behind.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// What a file is when it is not a regular file, for messages.
pub fn kind(ft: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        } else if ft.is_char_device() || ft.is_block_device() {
            return "a device";
        } else if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a folder"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

/// The refusal of a path that is not a regular file; `what` names the kind
/// of file the command wanted (`a status table`, `a JUnit XML report`).
fn not_regular(path: &Path, what: &str, ft: &std::fs::FileType) -> Error {
    Error::Usage(format!("{}: {what} is {}, not a regular file", path.display(), kind(ft)))
}

/// Open `path` for reading when it is a regular file (following symbolic
/// links), without ever blocking on it: its metadata first, then the file
/// opened non-blocking and its metadata checked again (it may have been
/// swapped in between).
pub fn open_regular(path: &Path, what: &str) -> Result<std::fs::File> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular(path, what, &meta.file_type()));
    }
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let f = o.open(path).map_err(|e| Error::io(path, e))?;
    let meta = f.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular(path, what, &meta.file_type()));
    }
    Ok(f)
}

/// The whole of the regular file `path`, when it holds at most `bound`
/// bytes; `what` names the kind of file in errors.
pub fn read(path: &Path, bound: u64, what: &str) -> Result<Vec<u8>> {
    let f = open_regular(path, what)?;
    let mut out = Vec::new();
    f.take(bound + 1).read_to_end(&mut out).map_err(|e| Error::io(path, e))?;
    if out.len() as u64 > bound {
        return Err(Error::Usage(format!("{}: {what} larger than the bound of {bound} bytes", path.display())));
    }
    Ok(out)
}

/// Write `contents` to `path` through a temporary file in its folder,
/// renamed into place: only over a regular file (which keeps its
/// permissions) or to a new name (readable by all, as a report is). A
/// folder that does not exist is named as the user gave it; anything
/// else at `path` (a device, FIFO, socket, folder or symbolic link) is
/// refused naming it, and left as it is.
pub fn write(path: &Path, contents: &[u8]) -> Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::Usage(format!(
            "cannot write {}: folder {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    let mode = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => Some(m.permissions()),
        Ok(m) => {
            return Err(Error::Usage(format!(
                "cannot write {}: it is {}, not a regular file; deploygen writes a file only to a new name or \
                 over a regular file",
                path.display(),
                kind(&m.file_type())
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::write(path, e)),
    };
    let cannot = |e: std::io::Error| Error::write(path, e);
    let mut tmp = tempfile::Builder::new().prefix(".deploygen-").tempfile_in(parent).map_err(cannot)?;
    std::io::Write::write_all(&mut tmp, contents).map_err(cannot)?;
    let mode = mode.unwrap_or_else(|| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o644)
        }
        #[cfg(not(unix))]
        {
            tmp.as_file().metadata().map(|m| m.permissions()).expect("a temporary file has metadata")
        }
    });
    tmp.as_file().set_permissions(mode).map_err(cannot)?;
    tmp.persist(path).map_err(|e| cannot(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_new_name_and_over_a_regular_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.svg");
        write(&p, b"one").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        // A folder, a symbolic link (to a regular file): refused, unchanged.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let e = write(&sub, b"x").unwrap_err().to_string();
        assert!(e.contains("sub") && e.contains("a folder"), "{e}");
        #[cfg(unix)]
        {
            let link = dir.path().join("link.svg");
            std::os::unix::fs::symlink(&p, &link).unwrap();
            let e = write(&link, b"x").unwrap_err().to_string();
            assert!(e.contains("link.svg") && e.contains("symbolic link"), "{e}");
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
            assert_eq!(std::fs::read(&p).unwrap(), b"two");
        }
        // Nothing else was left in the folder.
        let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert!(names.len() <= 3, "{names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn reads_refuse_what_is_not_a_regular_file_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let e = read(&fifo, 10, "a status table").unwrap_err().to_string();
        assert!(e.contains("FIFO") && e.contains("a status table") && e.contains(&fifo.display().to_string()), "{e}");
        let e = read(dir.path(), 10, "a run output").unwrap_err().to_string();
        assert!(e.contains("a folder"), "{e}");
        let e = read(Path::new("/dev/zero"), 10, "a run output").unwrap_err().to_string();
        assert!(e.contains("/dev/zero") && e.contains("a device"), "{e}");
    }
}
