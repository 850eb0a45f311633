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

/// A JSON document on standard output ([`write_json_stdout_with`]).
pub fn write_json_stdout(json: &str) -> Result<()> {
    write_json_stdout_with(|out| out.write_all(json.as_bytes()).map_err(serde_json::Error::io))
}

/// A JSON document on standard output, written by `write` as it is
/// serialized: escaped by JSON's rules only ([`crate::escape::json_for_terminal`]),
/// never with the terminal's `\u{..}`, which is not JSON.
pub fn write_json_stdout_with(write: impl FnOnce(&mut dyn std::io::Write) -> serde_json::Result<()>) -> Result<()> {
    use std::io::Write;
    let mut out = JsonTerminal { inner: std::io::BufWriter::new(std::io::stdout().lock()), partial: vec![] };
    let done = write(&mut out).map_err(std::io::Error::from).and_then(|()| out.flush());
    match done {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Error::io("<stdout>", e)),
    }
}

/// Passes JSON through [`crate::escape::json_for_terminal`]; a character
/// split between two writes waits for its last bytes.
struct JsonTerminal<W: std::io::Write> {
    inner: W,
    partial: Vec<u8>,
}

impl<W: std::io::Write> std::io::Write for JsonTerminal<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        let whole = match std::str::from_utf8(&self.partial) {
            Ok(_) => self.partial.len(),
            // An incomplete character at the end: keep it for the next write.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        };
        let text = std::str::from_utf8(&self.partial[..whole]).expect("checked above");
        self.inner.write_all(crate::escape::json_for_terminal(text).as_bytes())?;
        self.partial.drain(..whole);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.partial.is_empty() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "JSON output ends inside a character"));
        }
        self.inner.flush()
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::JsonTerminal;

    /// A character split between writes is escaped (or kept) whole, as the
    /// whole document would be.
    #[test]
    fn json_split_between_writes_is_escaped_as_a_whole() {
        let doc = "{\"a\u{85}\u{e9}\u{202e}\": 1}\n";
        let mut t = JsonTerminal { inner: vec![], partial: vec![] };
        for byte in doc.as_bytes() {
            t.write_all(std::slice::from_ref(byte)).unwrap();
        }
        t.flush().unwrap();
        assert_eq!(String::from_utf8(t.inner).unwrap(), crate::escape::json_for_terminal(doc));
        assert!(doc != crate::escape::json_for_terminal(doc), "the document holds characters to escape");
        let mut cut = JsonTerminal { inner: vec![], partial: vec![] };
        cut.write_all(&"\u{e9}".as_bytes()[..1]).unwrap();
        assert!(cut.flush().is_err(), "output ending inside a character is an error");
    }
}
