//! Training derived from an inference graph (`train.toml`, SPEC §2.5):
//! what the derived step holds, what it refuses and how. The derived zoo
//! models themselves run in the e2e matrix against onnxruntime-training's
//! references (`models/*_derived*`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::prelude::*;

fn model(name: &str) -> PathBuf {
    common::root().join("models").join(name)
}

fn deploygen() -> Command {
    Command::cargo_bin("deploygen").unwrap()
}

fn inspect_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let out = deploygen().arg("inspect").arg(dir).args(["--format", "json"]).args(extra).output().unwrap();
    assert!(out.status.success(), "inspect failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

/// A copy of a zoo model folder with its train.toml replaced.
fn with_spec(name: &str, spec: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz"] {
        std::fs::copy(model(name).join(f), tmp.path().join(f)).unwrap();
    }
    std::fs::write(tmp.path().join("train.toml"), spec).unwrap();
    tmp
}

#[test]
fn the_derived_step_is_a_training_model_like_imported_artifacts() {
    let r = inspect_json(&model("cnn_derived_sgd"), &[]);
    assert_eq!(r["flavor"], "training_artifacts");
    let d = &r["derived"];
    assert_eq!(names(&d["trainable"]).len(), 8, "{d}");
    // The loss reads the only float output, and inspect names it.
    assert_eq!(d["logits"], "logits", "{d}");
    // BatchNorm's running statistics get no gradient: frozen, updated as state.
    assert_eq!(names(&d["state_inputs"]), ["bn1.running_mean", "bn1.running_var"]);
    let ops = r["ops"].as_object().unwrap();
    for op in ["ConvGrad", "BatchNormInternal", "BatchNormalizationGrad", "MaxPoolGrad", "InPlaceAccumulatorV2"] {
        assert!(ops.contains_key(op), "no {op} in {ops:?}");
    }
    assert!(!ops.contains_key("BatchNormalization"), "the BatchNorm trains with batch statistics");
    // Backward stops at the first layer: the image gets no gradient.
    assert!(!r.to_string().contains("\"input_grad\""), "the data input got a gradient");
}

#[test]
fn frozen_weights_get_no_gradient_and_no_buffer() {
    let r = inspect_json(&model("mlp_derived_frozen"), &[]);
    assert_eq!(names(&r["derived"]["trainable"]), ["fc2.weight", "fc2.bias"]);
    assert_eq!(names(&r["derived"]["frozen"]), ["fc1.weight", "fc1.bias"]);
    let inputs: Vec<String> =
        r["inputs"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().into()).collect();
    assert!(!inputs.iter().any(|n| n.starts_with("fc1")), "a frozen weight became an input: {inputs:?}");
    assert_eq!(r["derived"]["gradient_buffer_bytes"], 4 * (10 * 32 + 10));
    let ops = r["ops"].as_object().unwrap();
    assert!(ops.get("ReluGrad").is_none(), "backward went past the frozen layer: {ops:?}");
}

#[test]
fn optimizer_state_is_counted_per_weight() {
    let sgd = inspect_json(&model("mlp_derived_sgd"), &[]);
    let adamw = inspect_json(&model("mlp_derived_adamw"), &[]);
    let momentum = inspect_json(&model("mlp_derived_sgd"), &["--optimizer", "momentum"]);
    let weights = 4 * (32 * 16 + 32 + 10 * 32 + 10);
    assert_eq!(sgd["derived"]["optimizer_state_bytes"], 0);
    assert_eq!(momentum["derived"]["optimizer_state_bytes"], weights);
    // Two moments per weight and one i64 step count per weight tensor.
    assert_eq!(adamw["derived"]["optimizer_state_bytes"], 2 * weights + 4 * 8);
}

/// x[2,2,4,4] -> Conv -> BatchNormalization -> Cast to float (no gradient
/// rule) -> GlobalAveragePool -> Flatten -> Gemm -> logits[2,3].
fn conv_bn_cast() -> common::ModelBuilder {
    use common::{attr_int, F32};
    let mut b = common::ModelBuilder::new();
    b.input("x", F32, &[2, 2, 4, 4])
        .init("conv.weight", &[4, 2, 3, 3], &[0.1; 72])
        .init("bn.scale", &[4], &[1.0; 4])
        .init("bn.bias", &[4], &[0.0; 4])
        .init("bn.mean", &[4], &[0.0; 4])
        .init("bn.var", &[4], &[1.0; 4])
        .init("fc.weight", &[3, 4], &[0.2; 12])
        .init("fc.bias", &[3], &[0.0; 3])
        .node("Conv", &["x", "conv.weight"], &["c"], vec![common::attr_ints("pads", &[1, 1, 1, 1])])
        .node("BatchNormalization", &["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"], &["n"], vec![])
        .node("Cast", &["n"], &["k"], vec![attr_int("to", 1)])
        .node("GlobalAveragePool", &["k"], &["p"], vec![])
        .node("Flatten", &["p"], &["f"], vec![attr_int("axis", 1)])
        .node("Gemm", &["f", "fc.weight", "fc.bias"], &["logits"], vec![attr_int("transB", 1)])
        .output("logits", F32, &[2, 3]);
    b
}

#[test]
fn an_operator_without_a_gradient_rule_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let onnx = conv_bn_cast().write(tmp.path(), "network.onnx");
    let out =
        deploygen().args(["inspect"]).arg(&onnx).args(["--loss", "cross-entropy", "--lr", "0.1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("node 'Cast_2' (Cast)"), "{err}");
    assert!(err.contains("has no gradient rule"), "{err}");
    // Exactly the weights a gradient would reach: not BatchNorm's running
    // statistics, which are state the step updates.
    assert!(err.contains("('bn.bias', 'bn.scale', 'conv.weight')"), "{err}");
    // Freezing everything behind it makes the same graph train.
    let ok = inspect_json(&onnx, &["--loss", "cross-entropy", "--lr", "0.1", "--trainable", "fc.*"]);
    assert_eq!(names(&ok["derived"]["trainable"]), ["fc.weight", "fc.bias"]);
}

#[test]
fn a_batchnorm_in_a_frozen_region_trains_with_batch_statistics() {
    // As in onnxruntime's training graph (BatchNormInternal, training_mode
    // 1, running statistics updated) for the same frozen selection:
    // tools/zoo/derived.py's cnn_derived_probe checks it against its
    // references.
    let tmp = tempfile::tempdir().unwrap();
    let onnx = conv_bn_cast().write(tmp.path(), "network.onnx");
    let r = inspect_json(&onnx, &["--loss", "cross-entropy", "--lr", "0.1", "--trainable", "fc.*"]);
    let ops = r["ops"].as_object().unwrap();
    assert!(ops.contains_key("BatchNormInternal") && !ops.contains_key("BatchNormalization"), "{ops:?}");
    assert!(!ops.contains_key("BatchNormalizationGrad"), "backward went into the frozen region: {ops:?}");
    assert_eq!(names(&r["derived"]["state_inputs"]), ["bn.mean", "bn.var"]);
}

#[test]
fn a_bad_training_spec_is_an_error_naming_the_key() {
    let cases = [
        ("loss = \"cross-entropy\"\nlearning_rat = 0.1\n", "learning_rat"),
        ("loss = \"hinge\"\nlearning_rate = 0.1\n", "hinge"),
        ("loss = \"cross-entropy\"\nlearning_rate = -1.0\n", "learning_rate"),
        ("loss = \"cross-entropy\"\nlearning_rate = 0.1\ntrainable = [\"nope*\"]\n", "nope*"),
        ("loss = \"cross-entropy\"\nlearning_rate = 0.1\nlogits = \"probs\"\n", "probs"),
        ("loss = \"cross-entropy\"\nlearning_rate = 0.1\noptimizer = \"momentum\"\nmomentum = 0.0\n", "momentum"),
    ];
    for (spec, named) in cases {
        let dir = with_spec("mlp_derived_sgd", spec);
        let out = deploygen().arg("build").arg(dir.path()).args(["--platform", "host"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(named) && err.contains("train.toml"), "{spec}: {err}");
        assert!(!dir.path().join("build").exists());
    }
}

#[test]
fn flags_override_the_spec_file() {
    let r = inspect_json(&model("mlp_derived_sgd"), &["--lr", "0.5", "--optimizer", "adamw"]);
    let spec = &r["derived"]["spec"];
    assert_eq!(spec["optimizer"], "adamw");
    assert_eq!(spec["learning_rate"], 0.5);
    assert_eq!(spec["loss"], "cross-entropy");
}

#[test]
fn a_training_spec_on_a_training_graph_is_refused() {
    let out =
        deploygen().arg("inspect").arg(model("simple_mlp")).args(["--loss", "mse", "--lr", "0.1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("training graph already"), "{err}");
}
