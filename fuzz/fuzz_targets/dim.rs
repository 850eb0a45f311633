//! `--dim NAME=VALUE` on arbitrary text: a named dim from 1 to 2^32-1
//! (train.toml's cap), or an error quoting the argument; never a value
//! that would wrap in a shape, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    match deploygen::cli::train::parse_dim(&s) {
        Ok((name, v)) => {
            assert!(!name.is_empty() && name == name.trim(), "{s:?}");
            assert!((1..=u32::MAX as usize).contains(&v), "{s:?} -> {v}");
        }
        Err(e) => assert!(e.to_string().contains(s.as_ref()), "{e}"),
    }
});
