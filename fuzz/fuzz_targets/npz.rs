//! The npz reader on arbitrary bytes: an archive or an error, never a
//! panic, a hang or an unbounded allocation, when opened (headers) and
//! when every member is decompressed.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(npz) = deploygen::bind::npz::parse(std::path::Path::new("fuzz.npz"), data) {
        let _ = npz.arrays();
    }
});
