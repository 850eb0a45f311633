//! The quantized kernels against onnxruntime: every folder of
//! `tests/fixtures/quant` (one operator each, made by
//! `tools/make_quant_cases.py` with onnxruntime's outputs) passes
//! `deploygen test` on the host and on the chips' emulation at L2 and L3,
//! its integer outputs equal to the reference.

use crate::common;
use crate::common::{ModelBuilder, F32};

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

/// A DequantizeLinear of a constant that only Pad's constant value reads
/// (onnxruntime's quantizer writes one for a Pad with a value), alone or
/// after a QuantizeLinear of a float constant (its `DedicatedQDQPair`
/// form), folds when the model is typed: the value is known when
/// generating code. A DequantizeLinear whose output is data stays a node.
#[test]
fn a_dequantized_constant_read_when_generating_is_folded() {
    for pair in [false, true] {
        let mut b = ModelBuilder::new();
        b.input("x", F32, &[1, 2]).init_i64("pads", &[0, 1, 0, 1]).init("s", &[], &[0.5]).init_i8("zp", &[], &[1]);
        if pair {
            // round(3.2 / 0.5) + 1 = 7
            b.init("v", &[], &[3.2]).node("QuantizeLinear", &["v", "s", "zp"], &["q"], vec![]);
        } else {
            b.init_i8("q", &[], &[7]);
        }
        b.node("DequantizeLinear", &["q", "s", "zp"], &["value"], vec![])
            .node("Pad", &["x", "pads", "value"], &["y"], vec![])
            .node("DequantizeLinear", &["q", "s", "zp"], &["data"], vec![])
            .output("y", F32, &[1, 4])
            .output("data", F32, &[]);
        let dir = tempfile::tempdir().unwrap();
        let g = common::read_typed(&b.write(dir.path(), "network.onnx")).unwrap();
        let ops: Vec<&str> = g.nodes().map(|(_, n)| n.op.as_str()).collect();
        assert_eq!(ops.iter().filter(|&&o| o == "DequantizeLinear").count(), 1, "pair {pair}: {ops:?}");
        assert!(!ops.contains(&"QuantizeLinear"), "pair {pair}: {ops:?}");
        let value = g.tensor(g.id("value").unwrap()).data.as_ref().and_then(|d| d.to_f32());
        assert_eq!(value, Some(vec![3.0]), "pair {pair}: (7 - 1) * 0.5");
    }
}
