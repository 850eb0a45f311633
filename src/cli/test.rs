//! `deploygen test`: generate, build, run and judge every (model,
//! platform, level); the flags and the runner are in `verify::cli`.

use crate::error::Result;
use crate::verify::cli::TestArgs;

/// The exit code: 0 all pass, 1 a wrong result, 2 a case not run.
pub fn run(a: &TestArgs) -> Result<i32> {
    crate::verify::cli::run(a)
}
