//! Writing what a command produced: files atomically, reports to stdout.

use std::path::Path;

use crate::error::{Error, Result};

/// Write a report file the user named ([`crate::files::write`]): through a
/// temporary file renamed into place, only to a new name or over a
/// regular file.
pub fn write_file(path: &Path, contents: &str) -> Result<()> {
    crate::files::write(path, contents.as_bytes())
}

/// Print a report. A reader that stops early (`deploygen inspect … | head`)
/// closes the pipe; that is the end of the output, not an error.
pub fn write_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(crate::escape::terminal(text).as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Error::io("<stdout>", e)),
    }
}

/// A JSON document on standard output: escaped by JSON's rules only
/// ([`crate::escape::json_for_terminal`]), never with the terminal's
/// `\u{..}`, which is not JSON.
pub fn write_json_stdout(json: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(crate::escape::json_for_terminal(json).as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Error::io("<stdout>", e)),
    }
}

/// Standard output for a command that writes as it goes (`test`): what
/// passes through is [`crate::escape::terminal`]ed, as [`write_stdout`]
/// does for a whole report.
pub struct Terminal<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(crate::escape::terminal(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
