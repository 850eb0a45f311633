//! ONNX import and typing on arbitrary bytes: any input must give a
//! model or an error, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("deploygen-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("network.onnx");
    if std::fs::write(&path, data).is_ok() {
        let _ = deploygen::load(&path);
    }
});
