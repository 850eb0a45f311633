//! `train.toml` on arbitrary bytes: a training request or an error, never
//! a panic or an unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.toml"), data).unwrap();
    let _ = deploygen::import::train::spec(dir.path(), true, &Default::default());
});
