//! Missing-input triage (docs/triage.md, "The training check"): training runs that cannot work with
//! their data are classified before any C is written, each with its
//! canonical reason.

use std::path::Path;

use crate::common::*;
use assert_cmd::Command;
use deploygen::bind::{self, npz, BindOptions};
use deploygen::check::{self, Finding, TriageFlavor, MISSING_TARGETS_REASON};
use deploygen::ir::{Role, TensorData};
use deploygen::Error;
use predicates::prelude::*;

fn findings(dir: &Path) -> Vec<Finding> {
    let m = deploygen::load(dir).unwrap();
    let b = bind::bind(&m, &BindOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    check::findings(&m, &b)
}

#[test]
fn missing_labels_is_missing_targets() {
    let f = findings(&fixture("missing_labels"));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].flavor, TriageFlavor::MissingTargets);
    assert_eq!(f[0].reason, "Model expects targets to be passed while in training mode");
    assert_eq!(f[0].input.as_deref(), Some("labels"));
    assert!(f[0].detail.contains("inputs.npz has no key 'labels'"), "{}", f[0].detail);
    assert!(f[0].detail.contains("SoftmaxCrossEntropyLoss"), "{}", f[0].detail);

    let m = deploygen::load(&fixture("missing_labels")).unwrap();
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    let e = check::training(&m, &b).unwrap_err();
    assert!(matches!(&e, Error::Triage(f) if f[0].flavor == TriageFlavor::MissingTargets));

    Command::cargo_bin("deploygen")
        .unwrap()
        .arg("inspect")
        .arg(fixture("missing_labels"))
        .assert()
        .code(2)
        .stdout(predicate::str::contains("MISSING"))
        .stderr(predicate::str::contains(format!("(missing_targets): {MISSING_TARGETS_REASON}")));
}

#[test]
fn missing_targets_in_the_positional_layout_is_seen_through_the_shift() {
    // A positional file written without the labels: arr_0001 holds the first
    // weight, and so on. The labels are missing, not fc1.weight misbound.
    let dir = copy_model(&fixture("tiny_classifier"));
    edit_inputs(dir.path(), |a| {
        a.retain(|(k, _)| !k.ends_with("arr_0001"));
        for (k, _) in a.iter_mut() {
            if let Some(n) = k.strip_prefix("arr_").and_then(|n| n.parse::<usize>().ok()) {
                *k = format!("arr_{:04}", if n > 1 { n - 1 } else { n });
            }
        }
    });
    let f = findings(dir.path());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].flavor, f[0].reason.as_str()), (TriageFlavor::MissingTargets, MISSING_TARGETS_REASON));
    assert!(f[0].detail.contains("'arr_0001' holds 'fc1.weight' instead"), "{}", f[0].detail);
}

#[test]
fn a_missing_data_input_is_decoder_inputs() {
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| a.retain(|(k, _)| k != "input" && !k.ends_with("_input")));
    let f = findings(dir.path());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].flavor, TriageFlavor::DecoderInputs);
    assert_eq!(f[0].reason, "graph input 'input' (data) has no value in the test data");
    assert_eq!(f[0].input.as_deref(), Some("input"));
}

#[test]
fn a_weight_skipped_in_positional_data_is_decoder_inputs() {
    // The HF pattern: a positional list that leaves a slot out binds every
    // later value to the input before it. Here fc1.bias (arr_0003) is left
    // out; its array position now holds fc2.weight.
    let dir = copy_model(&fixture("tiny_classifier"));
    edit_inputs(dir.path(), |a| {
        a.retain(|(k, _)| k != "arr_0003");
        for (k, _) in a.iter_mut() {
            if let Some(n) = k.strip_prefix("arr_").and_then(|n| n.parse::<usize>().ok()) {
                *k = format!("arr_{:04}", if n > 3 { n - 1 } else { n });
            }
        }
    });
    let f = findings(dir.path());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].flavor, TriageFlavor::DecoderInputs);
    assert_eq!(
        f[0].reason,
        "graph input 'fc1.bias' is present only under a position that binds it to a different input"
    );
    Command::cargo_bin("deploygen")
        .unwrap()
        .arg("inspect")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("(decoder_inputs)"));
}

#[test]
fn batchnorm_at_batch_one_on_a_global_pool_is_bn_single_value() {
    let f = findings(&fixture("bn_single_value"));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].flavor, TriageFlavor::BnSingleValue);
    assert_eq!(f[0].reason, "Expected more than 1 value per channel when training, got input size [1, 8, 1, 1]");
    assert_eq!(f[0].shape.as_deref(), Some(&[1, 8, 1, 1][..]));
    assert_eq!(f[0].batch2_fixes, Some(true));
    assert!(f[0].detail.contains("global pool") && f[0].detail.contains("GlobalAveragePool"), "{}", f[0].detail);
    Command::cargo_bin("deploygen")
        .unwrap()
        .args(["inspect", "--format", "json"])
        .arg(fixture("bn_single_value"))
        .assert()
        .code(2)
        .stdout(predicate::str::contains("\"batch2_fixes\": true"))
        .stderr(predicate::str::contains("(bn_single_value): Expected more than 1 value per channel"));
}

#[test]
fn batchnorm_with_spatial_extent_or_batch_is_fine() {
    // The zoo's BatchNorm models run at batch 1 with spatial maps > 1×1.
    for name in ["resnet8", "ds_cnn", "mobilenet_v1"] {
        assert!(findings(&zoo(name)).is_empty(), "{name}");
    }
}

/// A training-mode BatchNormalization behind `pre`, on data x[batch, 4, 4, 4].
fn bn_model(batch: i64, pre: &str) -> tempfile::TempDir {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[batch, 4, 4, 4])
        .init("w", &[4, 4, 4, 4], &[0.1; 256])
        .init("s", &[4], &[1.0; 4])
        .init("bias", &[4], &[0.0; 4])
        .init("mean", &[4], &[0.0; 4])
        .init("var", &[4], &[1.0; 4]);
    match pre {
        "gap" => b.node("GlobalAveragePool", &["x"], &["p"], vec![]),
        // A 4×4 kernel without padding shrinks the 4×4 map to 1×1.
        _ => b.node("Conv", &["x", "w"], &["p"], vec![]),
    };
    b.node(
        "BatchNormalization",
        &["p", "s", "bias", "mean", "var"],
        &["y", "rm", "rv"],
        vec![attr_int("training_mode", 1)],
    )
    .output("y", F32, &[batch, 4, 1, 1]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let x = TensorData::from_f32(vec![batch as usize, 4, 4, 4], &vec![0.5; batch as usize * 64]);
    std::fs::write(dir.path().join("inputs.npz"), npz::write_npz(&[("x", &x)]).unwrap()).unwrap();
    dir
}

fn bn_findings(dir: &Path) -> Vec<Finding> {
    // The hand-built graph has no backward pass; the BatchNorm check reads
    // only the node's training_mode and shapes.
    let m = deploygen::load(dir).unwrap();
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    check::bn::single_value(&m, &b)
}

#[test]
fn bn_single_value_says_whether_batch_two_helps() {
    let f = bn_findings(bn_model(1, "gap").path());
    assert_eq!((f.len(), f[0].batch2_fixes), (1, Some(true)), "{f:?}");
    // A 1×1 that a strided/unpadded layer made depends on the resolution:
    // repeating the batch is not the fix the spec allows.
    let f = bn_findings(bn_model(1, "conv").path());
    assert_eq!((f.len(), f[0].batch2_fixes), (1, Some(false)), "{f:?}");
    assert!(f[0].detail.contains("larger input"), "{}", f[0].detail);
    assert!(f[0].reason.ends_with("got input size [1, 4, 1, 1]"));
    // Batch 2 already: two values per channel, nothing to report.
    assert!(bn_findings(bn_model(2, "gap").path()).is_empty());
}

#[test]
fn canonical_reasons_classify_back() {
    for (reason, flavor) in [
        (
            "ValueError: You have to specify either decoder_input_ids or decoder_inputs_embeds.",
            TriageFlavor::DecoderInputs,
        ),
        ("Model expects targets to be passed while in training mode", TriageFlavor::MissingTargets),
        ("AssertionError: targets should not be none when in training mode", TriageFlavor::MissingTargets),
        ("AttributeError: 'NoneType' object has no attribute 'max'", TriageFlavor::MissingTargets),
        (
            "Expected more than 1 value per channel when training, got input size [1, 256, 1, 1]",
            TriageFlavor::BnSingleValue,
        ),
    ] {
        assert_eq!(TriageFlavor::from_reason(reason), Some(flavor), "{reason}");
    }
    assert_eq!(TriageFlavor::from_reason("Segmentation fault"), None);
    // Every finding deploygen writes classifies back to its own flavor.
    for dir in [fixture("missing_labels"), fixture("bn_single_value")] {
        for f in findings(&dir) {
            assert_eq!(TriageFlavor::from_reason(&f.reason), Some(f.flavor));
        }
    }
}

/// Every training model of the zoo and the fixtures whose data binds:
/// `(folder, model, binding)`.
fn training_models() -> Vec<(std::path::PathBuf, deploygen::ir::Model, bind::Binding)> {
    let mut out = Vec::new();
    for root in [root().join("models"), root().join("tests/fixtures")] {
        let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
        dirs.sort();
        for dir in dirs {
            let Ok(m) = deploygen::load(&dir) else { continue };
            if !m.roles.is_training() {
                continue;
            }
            let Ok(b) = bind::bind(&m, &BindOptions::default()) else { continue };
            out.push((dir, m, b));
        }
    }
    out
}

#[test]
fn the_derived_inference_variant_of_missing_labels_is_its_forward_part() {
    use deploygen::triage::derive;
    let m = deploygen::load(&fixture("missing_labels")).unwrap();
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    let d = derive::derive(&m, Some(&b)).unwrap();
    assert_eq!(d.outputs, vec!["fc2.out"], "the logits the loss reads");
    // outputs.npz holds the loss and the updated weights only.
    assert!(d.references.is_empty());
    assert_eq!(d.unreferenced(), vec!["fc2.out"]);
    let dir = tempfile::tempdir().unwrap();
    d.write(dir.path()).unwrap();
    assert!(!dir.path().join("outputs.npz").exists(), "deploygen writes no references of its own");
    let inf = deploygen::load(dir.path()).unwrap();
    assert_eq!(inf.roles.flavor, deploygen::ir::Flavor::Inference);
    let g = &inf.graph;
    // The file written holds the forward nodes as they were (loading it
    // then fuses the Relu into its Gemm).
    let raw = deploygen::import::load(dir.path()).unwrap();
    let ops: Vec<&str> = raw.graph.nodes().map(|(_, n)| n.op.as_str()).collect();
    assert_eq!(ops, vec!["Gemm", "Relu", "Gemm"]);
    let inputs: Vec<&str> = g.inputs.iter().map(|&t| g.name_of(t)).collect();
    assert_eq!(inputs, vec!["input", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
    let outputs: Vec<&str> = g.outputs.iter().map(|&t| g.name_of(t)).collect();
    assert_eq!(outputs, vec!["fc2.out"]);
    assert_eq!(g.tensor(g.outputs[0]).ty.shape(), Some(vec![2, 4]));
    // The weights stay graph inputs, bound from the training data.
    let data = npz::read_all(&dir.path().join("inputs.npz")).unwrap();
    let train = npz::read_all(&fixture("missing_labels").join("inputs.npz")).unwrap();
    for k in ["input", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"] {
        assert_eq!(data.get(k), train.get(k), "{k}");
    }
    assert_eq!(data.arrays.len(), 5, "no labels, buffers, reset flag, mini-batch or meta keys");
    // The original is untouched.
    let again = deploygen::load(&fixture("missing_labels")).unwrap();
    assert_eq!(again.graph.node_count(), m.graph.node_count());
}

#[test]
fn every_training_model_derives_an_inference_variant_that_imports_binds_and_plans() {
    use deploygen::triage::{derive, runner};
    let models = training_models();
    assert!(models.len() >= 8, "{}", models.len());
    for (dir, m, b) in models {
        let d = derive::derive(&m, Some(&b)).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(!d.outputs.is_empty());
        let loss = m.roles.loss.clone();
        assert!(d.outputs.iter().all(|o| Some(o) != loss.as_ref()), "{}: {:?}", dir.display(), d.outputs);
        let out = tempfile::tempdir().unwrap();
        d.write(out.path()).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let inf = deploygen::load(out.path()).unwrap();
        assert_eq!(inf.roles.flavor, deploygen::ir::Flavor::Inference, "{}", dir.display());
        for &t in &inf.graph.inputs {
            let role = m.roles.role(inf.graph.name_of(t));
            assert!(
                matches!(role, Some(Role::Data | Role::Param | Role::Frozen)),
                "{}: input '{}' ({role:?}) kept",
                dir.display(),
                inf.graph.name_of(t)
            );
        }
        let o = runner::stages_only(out.path(), "host", "L2");
        assert!(o.passed(), "{}: {}", dir.display(), o.message);
    }
}

#[test]
fn a_folded_shape_subgraph_of_the_forward_part_becomes_a_constant_of_the_derived_model() {
    // A single-graph training step whose forward pass reshapes by a shape
    // computed from the data (Shape -> Gather -> Concat, folded at import).
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 4])
        .input("labels", I64, &[2])
        .init("w", &[4, 3], &[0.25; 12])
        .init_i64("first", &[0])
        .init_i64("rest", &[-1])
        .init("dloss", &[], &[1.0])
        .node("Shape", &["x"], &["xs"], vec![])
        .node("Gather", &["xs", "first"], &["n"], vec![attr_int("axis", 0)])
        .node("Concat", &["n", "rest"], &["shp"], vec![attr_int("axis", 0)])
        .node("Reshape", &["x", "shp"], &["xr"], vec![])
        .node("MatMul", &["xr", "w"], &["logits"], vec![])
        .node("SoftmaxCrossEntropyLoss", &["logits", "labels"], &["loss", "log_prob"], vec![])
        .node_in("SoftmaxCrossEntropyLossGrad", "com.microsoft", &["dloss", "log_prob", "labels"], &["dlogits"], vec![])
        .node("Transpose", &["xr"], &["xt"], vec![])
        .node("MatMul", &["xt", "dlogits"], &["dw"], vec![])
        .node_in("SGD", "ai.onnx.preview.training", &["w", "dw"], &["w_updated"], vec![attr_float("lr", 0.1)])
        .output("loss", F32, &[])
        .output("w_updated", F32, &[4, 3]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let x = TensorData::from_f32(vec![2, 4], &[0.5; 8]);
    let labels = TensorData::from_i64(vec![2], &[1, 2]);
    std::fs::write(dir.path().join("inputs.npz"), npz::write_npz(&[("x", &x), ("labels", &labels)]).unwrap()).unwrap();
    let m = deploygen::load(dir.path()).unwrap();
    assert!(m.roles.is_training());
    let shp = m.graph.tensor(m.graph.id("shp").unwrap());
    assert_eq!(shp.origin, deploygen::ir::Origin::Folded, "the premise: the shape is folded");
    let bd = bind::bind(&m, &BindOptions::default()).unwrap();
    let d = deploygen::triage::derive::derive(&m, Some(&bd)).unwrap();
    assert_eq!(d.outputs, vec!["logits"]);
    let out = tempfile::tempdir().unwrap();
    d.write(out.path()).unwrap();
    let inf = deploygen::load(out.path()).unwrap();
    let g = &inf.graph;
    assert_eq!(g.nodes().map(|(_, n)| n.op.as_str()).collect::<Vec<_>>(), vec!["Reshape", "MatMul"]);
    let consts: Vec<&str> = g.initializers.iter().map(|&t| g.name_of(t)).collect();
    assert_eq!(consts, vec!["w", "shp"], "the folded shape is written as a constant");
    assert_eq!(g.tensor(g.id("shp").unwrap()).data.as_ref().unwrap().to_i64(), Some(vec![2, -1]));
    assert_eq!(g.inputs.iter().map(|&t| g.name_of(t)).collect::<Vec<_>>(), vec!["x"]);
}
