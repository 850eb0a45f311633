//! `merge-junit` on arbitrary reports (the input split at NUL bytes into
//! up to four files): a merged report or an error, never a panic, and the
//! inputs are left as they were.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let parts: Vec<&[u8]> = data.split(|&b| b == 0).take(4).collect();
    let inputs: Vec<std::path::PathBuf> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let f = dir.path().join(format!("{i}.xml"));
            std::fs::write(&f, p).unwrap();
            f
        })
        .collect();
    let _ = deploygen::verify::junit::merge(&inputs, &dir.path().join("merged.xml"));
    for (f, p) in inputs.iter().zip(&parts) {
        assert_eq!(&std::fs::read(f).unwrap(), p, "an input changed");
    }
});
