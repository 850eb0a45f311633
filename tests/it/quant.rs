//! The quantized kernels against onnxruntime: every folder of
//! `tests/fixtures/quant` (one operator each, made by
//! `tools/make_quant_cases.py` with onnxruntime's outputs) passes
//! `deploygen test` on the host and on the chips' emulation at L2 and L3,
//! its integer outputs equal to the reference.

use crate::common;

use std::process::Command;

#[test]
fn quantized_operators_give_onnxruntime_s_values() {
    if !common::have_gcc("quantized_operators_give_onnxruntime_s_values") {
        return;
    }
    let dir = common::root().join("tests/fixtures/quant");
    let mut cases: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    cases.sort();
    assert!(cases.len() >= 9, "the cases of tools/make_quant_cases.py are in {}", dir.display());
    let tmp = tempfile::tempdir().unwrap();
    let status = tmp.path().join("status.toml");
    std::fs::write(&status, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("test")
        .args(&cases)
        .args(["--platform", "host", "--platform", "GAP9", "--default-mem", "L2", "--default-mem", "L3"])
        .arg("--status")
        .arg(&status)
        .arg("--cache-dir")
        .arg(common::runtime_cache())
        .args(["-j", "2"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let verdicts: Vec<&str> = stdout.lines().filter(|l| l.starts_with("PASSED") || l.starts_with("FAILED")).collect();
    assert_eq!(verdicts.len(), cases.len() * 4, "one verdict per case and target:\n{stdout}");
    let bad: Vec<_> = verdicts.iter().filter(|l| !l.starts_with("PASSED  ") || l.contains("out of 0,")).collect();
    assert!(bad.is_empty(), "{bad:#?}\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
}
