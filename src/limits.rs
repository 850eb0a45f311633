//! How much deploygen reads of each kind of file. A file over its bound
//! is bad input (exit 2, naming the file and the bound), never an
//! allocation that aborts the process.

use std::path::Path;

use crate::error::{Error, Result};

/// `train.toml`: a few settings.
pub const TRAIN_TOML: u64 = 1 << 20;
/// `status.toml`: one short entry per case.
pub const STATUS_TOML: u64 = 16 << 20;
/// `report --profile` input: the BENCH lines of one run.
pub const PROFILE_INPUT: u64 = 256 << 20;
/// One line of `report --profile` input.
pub const PROFILE_LINE: usize = 64 << 10;
/// `report --ort`: a small JSON of timings.
pub const ORT_JSON: u64 = 16 << 20;
/// `merge-junit` input: one JUnit XML file.
pub const JUNIT_XML: u64 = 256 << 20;
/// `deploygen.json` of a generated project.
pub const MANIFEST: u64 = 64 << 20;

/// The whole of `path`, when it is a regular file holding at most `bound`
/// bytes; `what` names the kind of file in the error
/// ([`crate::files::read`]: a FIFO or device is refused, never opened to
/// block).
pub fn read(path: &Path, bound: u64, what: &str) -> Result<Vec<u8>> {
    crate::files::read(path, bound, what)
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, bound: u64, what: &str) -> Result<String> {
    String::from_utf8(read(path, bound, what)?)
        .map_err(|e| Error::Usage(format!("{}: {what} is not UTF-8 text: {e}", path.display())))
}
