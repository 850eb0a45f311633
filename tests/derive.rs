//! Training derived from an inference graph (`train.toml`,
//! docs/training.md, "Training from an inference graph"):
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

/// Conv3d -> MaxPool3d -> AveragePool3d -> GlobalAveragePool -> Flatten -> Gemm.
fn conv3d_pools() -> common::ModelBuilder {
    use common::{attr_int, attr_ints, F32};
    let mut b = common::ModelBuilder::new();
    b.input("x", F32, &[2, 2, 4, 4, 4])
        .init("conv.weight", &[4, 2, 3, 3, 3], &[0.1; 216])
        .init("fc.weight", &[3, 4], &[0.2; 12])
        .init("fc.bias", &[3], &[0.0; 3])
        .node("Conv", &["x", "conv.weight"], &["c"], vec![attr_ints("pads", &[1; 6])])
        .node("MaxPool", &["c"], &["m"], vec![attr_ints("kernel_shape", &[2, 2, 2]), attr_ints("strides", &[2, 2, 2])])
        .node("AveragePool", &["m"], &["a"], vec![attr_ints("kernel_shape", &[2, 2, 2])])
        .node("GlobalAveragePool", &["a"], &["p"], vec![])
        .node("Flatten", &["p"], &["f"], vec![attr_int("axis", 1)])
        .node("Gemm", &["f", "fc.weight", "fc.bias"], &["logits"], vec![attr_int("transB", 1)])
        .output("logits", F32, &[2, 3]);
    b
}

/// 3-D windows run forward only: training through one names the node
/// and says its 3-D form has no gradient rule; behind frozen layers the
/// same graph trains.
#[test]
fn a_3d_window_in_the_trained_region_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let onnx = conv3d_pools().write(tmp.path(), "network.onnx");
    let out =
        deploygen().args(["inspect"]).arg(&onnx).args(["--loss", "cross-entropy", "--lr", "0.1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("(AveragePool)") && err.contains("the 3-D form of AveragePool"), "{err}");
    assert!(err.contains("has no gradient rule"), "{err}");
    let ok = inspect_json(&onnx, &["--loss", "cross-entropy", "--lr", "0.1", "--trainable", "fc.*"]);
    assert_eq!(names(&ok["derived"]["trainable"]), ["fc.weight", "fc.bias"]);
    let ops = ok["ops"].as_object().unwrap();
    assert!(!ops.contains_key("ConvGrad") && !ops.contains_key("MaxPoolGrad"), "{ops:?}");
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

fn run(args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let mut cmd = deploygen();
    cmd.arg(args[0]).arg(dir).args(&args[1..]);
    let o = cmd.output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The folder as a user makes it: exported inference graph with a
/// symbolic batch, train.toml, data and labels only.
const USER: &str = "small_cnn_dynamic_batch_derived_sgd";

#[test]
fn weights_and_statistics_start_from_the_initializers() {
    let r = inspect_json(&model(USER), &[]);
    let slots = r["binding"]["slots"].as_array().unwrap();
    for name in ["conv.weight", "bn.weight", "bn.running_mean", "fc.bias"] {
        let s = slots.iter().find(|s| s["input"] == name).unwrap_or_else(|| panic!("no slot {name}"));
        assert_eq!(s["source"], "initializer", "{s}");
    }
    let keys: Vec<&str> = slots.iter().filter_map(|s| s["key"].as_str()).collect();
    assert_eq!(keys, ["input", "labels"], "the data holds only what changes per mini-batch");
    // An entry of the same name overrides the initializer, and inspect says so.
    let dir = common::copy_model(&model(USER));
    common::edit_inputs(dir.path(), |a| {
        a.push(("fc.bias".into(), deploygen::ir::TensorData::from_f32(vec![6], &[0.5; 6])));
    });
    let (code, out, err) = run(&["inspect"], dir.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("inputs.npz 'fc.bias' overrides the initial value of 'fc.bias'"), "{out}");
    assert!(out.contains("(initializer)"), "{out}");
}

#[test]
fn a_symbolic_batch_takes_its_value_from_the_data() {
    let (code, out, err) = run(&["inspect"], &model(USER));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("dim          batch = 2, from inputs.npz 'input' and 3 more arrays"), "{out}");
    assert!(out.contains("flavor       inference graph with a training spec"), "{out}");
    assert!(!out.contains("training artifacts"), "{out}");
}

#[test]
fn a_symbolic_dim_without_a_value_or_with_two_is_refused_naming_the_flag() {
    let dir = common::copy_model(&model(USER));
    // A value the data contradicts, from the flag and from the file.
    let (code, _, err) = run(&["build", "--platform", "host", "--dim", "batch=3"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("'batch'") && err.contains("--dim batch=3") && err.contains("inputs.npz 'input'"), "{err}");
    let toml = std::fs::read_to_string(dir.path().join("train.toml")).unwrap();
    std::fs::write(dir.path().join("train.toml"), format!("{toml}dims = {{ batch = 3 }}\n")).unwrap();
    let (code, _, err) = run(&["inspect"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("dims in") && err.contains("train.toml"), "{err}");
    // The flag replaces the file's value.
    let (code, _, err) = run(&["inspect", "--dim", "batch=2"], dir.path());
    assert_eq!(code, Some(0), "{err}");
    std::fs::write(dir.path().join("train.toml"), &toml).unwrap();
    // Mini-batches that disagree.
    common::edit_inputs(dir.path(), |a| {
        let i = a.iter().position(|(k, _)| k == "mb1_input").unwrap();
        a[i].1 = deploygen::ir::TensorData::from_f32(vec![3, 1, 8, 8], &[0.0; 192]);
    });
    let (code, _, err) = run(&["inspect"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("2 in 'input'") && err.contains("3 in 'mb1_input'") && err.contains("--dim batch=N"), "{err}");
    // No data: the flag is the way.
    std::fs::remove_file(dir.path().join("inputs.npz")).unwrap();
    let (code, _, err) = run(&["inspect"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("'batch'") && err.contains("has no value") && err.contains("--dim batch=N"), "{err}");
    let (code, out, err) = run(&["inspect", "--dim", "batch=4"], dir.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("batch = 4, from --dim batch=4") && out.contains("input            f32 [4, 1, 8, 8]"),
        "{out}"
    );
    let (code, _, err) = run(&["inspect", "--dim", "seq=4"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no symbolic dim 'seq'") && err.contains("'batch'"), "{err}");
}

#[test]
fn a_symbolic_batch_in_an_inference_model_is_specialised_too() {
    let dir = common::copy_model(&model(USER));
    std::fs::remove_file(dir.path().join("train.toml")).unwrap();
    std::fs::remove_file(dir.path().join("outputs.npz")).unwrap();
    let (code, out, err) = run(&["inspect", "--platform", "GAP9"], dir.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("flavor       inference graph\n") && out.contains("batch = 2, from inputs.npz"), "{out}");
}

#[test]
fn accumulation_steps_drive_the_schedule() {
    let r = inspect_json(&model("mlp_derived_accum3"), &[]);
    assert_eq!(
        (&r["binding"]["accum_steps"], &r["binding"]["mini_batches"]),
        (&3.into(), &6.into()),
        "{}",
        r["binding"]
    );
    let (code, _, err) = run(&["inspect", "--accumulation-steps", "4294967295"], &model("mlp_derived_accum3"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("accumulation_steps is 4294967295"), "{err}");
    let dir = common::copy_model(&model("mlp_derived_accum3"));
    common::edit_inputs(dir.path(), |a| {
        a.push(("meta_n_accum".into(), deploygen::ir::TensorData::from_i64(vec![], &[2])))
    });
    let (code, _, err) = run(&["build", "--platform", "host"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("accumulation_steps is 3") && err.contains("meta_n_accum is 2"), "{err}");
}

#[test]
fn a_selection_flag_replaces_the_files() {
    // mlp_derived_frozen's train.toml says trainable = ["fc2.*"].
    let r = inspect_json(&model("mlp_derived_frozen"), &["--frozen", "fc2.*"]);
    assert_eq!(names(&r["derived"]["trainable"]), ["fc1.weight", "fc1.bias"]);
}

#[test]
fn an_inference_reference_is_not_read_as_losses() {
    let dir = common::copy_model(&model(USER));
    std::fs::copy(model("conv_ordered_npz").join("outputs.npz"), dir.path().join("outputs.npz")).unwrap();
    let (code, _, err) = run(&["build", "--platform", "host"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no loss references") && err.contains("tools/make_train_refs.py"), "{err}");
}

#[test]
fn names_the_step_would_confuse_are_refused() {
    // A forward tensor named like a weight's update.
    let tmp = tempfile::tempdir().unwrap();
    let mut b = common::mlp();
    b.graph.node[0].output[0] = "w_updated".into();
    b.graph.node[1].input[0] = "w_updated".into();
    let onnx = b.write(tmp.path(), "network.onnx");
    let out = deploygen().arg("inspect").arg(&onnx).args(["--loss", "cross-entropy", "--lr", "0.1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("'w_updated'") && err.contains("rename"), "{err}");
    // Labels named like a mini-batch key.
    let (code, _, err) = run(&["build", "--platform", "host", "--labels", "mb1_labels"], &model("mlp_derived_sgd"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("mb1_labels") && err.contains("mini-batch 1 key"), "{err}");
}

#[test]
fn a_train_toml_that_is_not_a_file_or_not_toml_says_so() {
    let dir = common::copy_model(&model("mlp_derived_sgd"));
    let spec = dir.path().join("train.toml");
    std::fs::write(&spec, "loss = \n").unwrap();
    let (code, _, err) = run(&["inspect"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a readable training spec") && !err.contains("ONNX"), "{err}");
    std::fs::remove_file(&spec).unwrap();
    std::fs::create_dir(&spec).unwrap();
    let (code, _, err) = run(&["inspect"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("train.toml") && err.contains("directory"), "{err}");
    std::fs::remove_dir(&spec).unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere.toml"), &spec).unwrap();
    let (code, _, err) = run(&["inspect"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("train.toml") && err.contains("leads nowhere"), "{err}");
}

/// Every weight group of the zoo CNNs frozen in turn (BatchNorm behind a
/// frozen Conv, a frozen classifier, …), each against onnxruntime-training's
/// references for that split (`models/frozen_splits/`), on the host.
#[test]
fn every_frozen_split_of_the_zoo_cnns_trains_like_onnxruntime() {
    if !common::have_gcc(module_path!()) {
        return;
    }
    let root = common::root().join("models/frozen_splits");
    let work = tempfile::tempdir().unwrap();
    let mut dirs = vec![];
    for base in std::fs::read_dir(&root).unwrap() {
        let base = base.unwrap().path();
        let name = base.file_name().unwrap().to_string_lossy().into_owned();
        for split in std::fs::read_dir(&base).unwrap() {
            let split = split.unwrap().path();
            let d = work.path().join(format!("{name}-{}", split.file_name().unwrap().to_string_lossy()));
            std::fs::create_dir(&d).unwrap();
            for f in ["network.onnx", "inputs.npz"] {
                std::fs::copy(model(&name).join(f), d.join(f)).unwrap();
            }
            for f in ["train.toml", "outputs.npz"] {
                std::fs::copy(split.join(f), d.join(f)).unwrap();
            }
            dirs.push(d);
        }
    }
    dirs.sort();
    assert_eq!(dirs.len(), 12, "{dirs:?}");
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get()).to_string();
    let out = deploygen().arg("test").args(&dirs).args(["--platform", "host", "-j", &jobs]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.lines().filter(|l| l.starts_with("PASSED ")).count(), 12, "{stdout}");
}

#[test]
fn an_inference_input_named_like_a_gradient_buffer_is_data() {
    use deploygen::ir::TensorData;
    let tmp = tempfile::tempdir().unwrap();
    let mut b = common::ModelBuilder::new();
    b.input("x_grad.accumulation.buffer", common::F32, &[2])
        .node("Relu", &["x_grad.accumulation.buffer"], &["y"], vec![])
        .output("y", common::F32, &[2]);
    b.write(tmp.path(), "network.onnx");
    let x = TensorData::from_f32(vec![2], &[-1.0, 2.0]);
    let npz = deploygen::bind::npz::write_npz(&[("x_grad.accumulation.buffer", &x)]).unwrap();
    std::fs::write(tmp.path().join("inputs.npz"), npz).unwrap();
    let r = inspect_json(tmp.path(), &[]);
    let slot = &r["binding"]["slots"][0];
    assert_eq!((&slot["role"], &slot["source"]), (&"data".into(), &"per_mini_batch".into()), "{slot}");
}

/// References for a train.toml model come from tools/make_train_refs.py
/// (onnxruntime-training), for any other from tools/make_refs.py.
#[test]
fn triage_makes_training_references_with_make_train_refs() {
    use deploygen::triage::refs::{make_refs, Refs};
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    // A stand-in interpreter that prints the script it was given.
    let py = tmp.path().join("python");
    std::fs::write(&py, "#!/bin/sh\necho \"ran $1\"\n").unwrap();
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::env::set_var("DEPLOYGEN_PYTHON", &py);
    let said = |dir: &Path| match make_refs(dir) {
        Refs::Regenerated(s) => s,
        Refs::Unavailable(s) | Refs::Failed(s) => panic!("{s}"),
    };
    let train = said(&model(USER));
    assert!(train.contains("tools/make_train_refs.py"), "{train}");
    let inference = said(&model("kws_cnn"));
    assert!(inference.contains("tools/make_refs.py") && !inference.contains("make_train_refs"), "{inference}");
}

/// Two LayerNorms reading one weight (what an exporter that merges equal
/// initializers writes): training ties them, and `inspect` says so,
/// naming the weight and both nodes; a weight read once is not named.
#[test]
fn a_trainable_weight_read_by_two_nodes_is_a_warning() {
    use common::{attr_int, F32};
    let mut b = common::ModelBuilder::new();
    b.input("x", F32, &[2, 4])
        .init("ln.weight", &[4], &[1.0; 4])
        .init("ln.bias", &[4], &[0.0; 4])
        .init("ln2.bias", &[4], &[0.0; 4])
        .init("fc.weight", &[3, 4], &[0.2; 12])
        .node("LayerNormalization", &["x", "ln.weight", "ln.bias"], &["a"], vec![attr_int("axis", -1)])
        .node("LayerNormalization", &["a", "ln.weight", "ln2.bias"], &["c"], vec![attr_int("axis", -1)])
        .node("Gemm", &["c", "fc.weight"], &["logits"], vec![attr_int("transB", 1)])
        .output("logits", F32, &[2, 3]);
    let tmp = tempfile::tempdir().unwrap();
    let onnx = b.write(tmp.path(), "network.onnx");
    let out =
        deploygen().args(["inspect"]).arg(&onnx).args(["--loss", "cross-entropy", "--lr", "0.1"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let warned: Vec<&str> = text.lines().filter(|l| l.contains("is read by")).collect();
    assert_eq!(warned.len(), 1, "{text}");
    assert!(
        warned[0].contains(
            "'ln.weight' is read by 2 nodes ('LayerNormalization_0' (LayerNormalization), \
                            'LayerNormalization_1' (LayerNormalization))"
        ),
        "{}",
        warned[0]
    );
    assert!(warned[0].contains("Exporting from PyTorch"), "{}", warned[0]);
}

/// A derived step built without test data: its weights start from the
/// initializers the derivation made graph inputs (there is no inputs.npz
/// to bind them from).
#[test]
fn a_derived_step_without_test_data_builds_from_its_initializers() {
    let (dir, gen) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    common::matmul_relu_chain(dir.path(), 2);
    let out = gen.path().join("gen");
    let o = deploygen().arg("build").arg(dir.path()).args(["--platform", "host", "--out"]).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let weights = std::fs::read_to_string(out.join("Weights.c")).unwrap();
    // w0[k] = (7k mod 13) * 0.01 - 0.06 in f32, k = 0..8: its first row.
    let row = "-0.06f, 0.010000002f, -0.049999997f, 0.02f, -0.04f, 0.029999997f, -0.03f, 0.039999995f,";
    assert!(weights.contains(row), "{weights}");
}
