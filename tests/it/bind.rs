//! Binding test data to graphs: both npz layouts, the mini-batch schedule,
//! `num_data_inputs` detection and the `--num-data-inputs` guard, positional
//! slot checks, the weight ↔ gradient buffer ↔ update pairing, and what
//! `deploygen inspect` shows. Every test runs on the committed zoo
//! (`models/`, `tests/fixtures/`); the conformance models are used when the
//! checkout sits next to `shared/`.

use crate::common;

use crate::common::{copy_model, edit_inputs, fixture, root, zoo};

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use deploygen::bind::{self, npz, BindOptions, Binding, DetectedFrom, Layout, Source, UpdateKind};
use deploygen::ir::{DType, Flavor, Role, TensorData};
use deploygen::{check, Error};
use predicates::prelude::*;

/// Every model folder of the zoo.
fn zoo_models() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("models"))
        .expect("models/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("network.onnx").is_file())
        .collect();
    v.sort();
    assert!(v.len() >= 8, "the zoo has {} models", v.len());
    v
}

fn bind_dir(dir: &Path, n: Option<usize>) -> Result<Binding, Error> {
    let m = deploygen::load(dir).unwrap();
    bind::bind(&m, &BindOptions { num_data_inputs: n })
}

fn deploygen() -> Command {
    Command::cargo_bin("deploygen").unwrap()
}

/// The invariants every good binding keeps: slot order by role, data first;
/// every weight paired by name with its own buffer and one update.
fn assert_well_formed(b: &Binding, model: &deploygen::ir::Model) {
    let rank = |r: Role| match r {
        Role::Data | Role::Labels => 0,
        Role::Param => 1,
        Role::Frozen => 2,
        Role::GradBuffer => 3,
        Role::LazyReset => 4,
        _ => 5,
    };
    for (i, s) in b.slots.iter().enumerate() {
        assert_eq!(s.index, i);
        assert_eq!(i < b.num_data_inputs, rank(s.role) == 0, "slot {i} ({}) vs D = {}", s.input, b.num_data_inputs);
    }
    assert!(b.slots.windows(2).all(|w| rank(w[0].role) <= rank(w[1].role)), "slots out of role order");
    let buffers: Vec<&str> = b.slots_with(Role::GradBuffer).map(|s| s.input.as_str()).collect();
    if model.roles.flavor == Flavor::TrainingArtifacts {
        assert_eq!(b.params.len(), buffers.len(), "W != NG");
    }
    assert_eq!(b.params.len(), model.roles.params.len(), "W != number of updates");
    for (w, p) in b.params.iter().enumerate() {
        if let Some(buf) = &p.grad_buffer {
            assert_eq!(*buf, format!("{}_grad.accumulation.buffer", p.name));
            assert_eq!(buffers[w], buf, "buffer {w} is not weight {w}'s");
            assert_eq!(b.slots[p.grad_buffer_slot.unwrap()].input, *buf);
        }
        if let Some(slot) = p.slot {
            assert_eq!(b.slots[slot].input, p.name);
            assert_eq!(b.slots[slot].role, Role::Param);
        }
        match p.update.kind {
            UpdateKind::Sgd => assert_eq!(Some(&p.update.grad_input), p.grad_buffer.as_ref()),
            UpdateKind::SgdOptimizerV2 { index } => assert_eq!(index, w),
            UpdateKind::InlineSgd => assert_eq!(Some(&p.update.grad_input), p.gradient.as_ref()),
        }
    }
}

#[test]
fn every_zoo_model_binds_without_warning() {
    for dir in zoo_models() {
        let m = deploygen::load(&dir).unwrap();
        let b = bind::bind(&m, &BindOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(b.warnings.is_empty(), "{}: {:?}", dir.display(), b.warnings);
        // Import/lowering warnings live on the graph, not the binding. The
        // one model written with size-1 declared shapes has exactly its five
        // (tests/it/conventions.rs); its outputs.npz binds with notes only.
        // Its derived training steps (conv_size1_dims_derived_*) keep those
        // five and add two: 'features.out' and 'score', no longer graph
        // outputs there, take their computed shapes.
        let name = dir.file_name().unwrap().to_string_lossy();
        let size1 = match () {
            _ if name == "conv_size1_dims" => 5,
            _ if name.starts_with("conv_size1_dims_derived") => 7,
            _ => 0,
        };
        assert_eq!(m.graph.warnings.len(), size1, "{}: {:?}", dir.display(), m.graph.warnings);
        assert!(m.graph.warnings.iter().all(|w| w.contains("differ only by size-1 dims")));
        assert!(b.missing.is_empty(), "{}: {:?}", dir.display(), b.missing);
        check::training(&m, &b).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_well_formed(&b, &m);
        if m.roles.flavor == Flavor::Inference {
            assert_eq!(b.num_data_inputs, 1, "{}", dir.display());
            assert!(!b.references.is_empty());
        } else {
            // Classifiers: image + labels; the autoencoder: input + target.
            assert_eq!(b.num_data_inputs, 2, "{}", dir.display());
            assert_eq!(b.detected_from, DetectedFrom::MiniBatchKeys);
            assert!(b.schedule.data_size >= 4);
            assert_eq!(b.loss.as_ref().unwrap().data.numel(), b.schedule.n_batches);
            assert!(b.params.iter().all(|p| p.reference.is_some()), "{}", dir.display());
            assert!(b.learning_rate.is_some());
        }
    }
}

#[test]
fn both_layouts_bind_by_name() {
    let named = bind_dir(&zoo("simple_mlp"), None).unwrap();
    assert_eq!(named.layout, Layout::Named);
    let positional = bind_dir(&zoo("resnet8"), None).unwrap();
    assert_eq!(positional.layout, Layout::Positional);
    // Named: keys are the input names; positional: arr_NNNN of the
    // non-gradient inputs in graph order; mini-batch i as mb<i>_<key>.
    let s = named.slot("labels").unwrap();
    assert_eq!((s.index, s.role, s.source), (1, Role::Labels, Source::PerMiniBatch));
    assert_eq!(s.keys, ["labels", "mb1_labels", "mb2_labels", "mb3_labels"]);
    let s = positional.slot("labels").unwrap();
    assert_eq!(s.keys[..2], ["arr_0001", "mb1_arr_0001"]);
    assert_eq!((s.dtype, s.shape.as_slice()), (DType::I64, &[1usize][..]));
    let w = positional.slot("conv1.weight").unwrap();
    assert_eq!((w.role, w.key(), w.index), (Role::Param, Some("arr_0002"), 2));
    let lazy = positional.slot("lazy_reset_grad").unwrap();
    assert_eq!((lazy.index, lazy.source, lazy.dtype), (positional.slots.len() - 1, Source::Harness, DType::Bool));
    // Frozen parameters (BatchNorm running statistics) sit between the
    // weights and the gradient buffers.
    let frozen: Vec<&str> = positional.slots_with(Role::Frozen).map(|s| s.input.as_str()).collect();
    assert!(frozen.contains(&"bn1.running_mean") && frozen.iter().all(|f| f.contains("running_")), "{frozen:?}");
    assert!(positional.slots_with(Role::GradBuffer).all(|s| s.source == Source::Zeros));
}

#[test]
fn bound_values_are_the_npz_arrays() {
    let dir = zoo("resnet8");
    let b = bind_dir(&dir, None).unwrap();
    let data = npz::read_all(&dir.join("inputs.npz")).unwrap();
    for s in &b.slots {
        assert_eq!(s.keys.len(), s.values.len());
        for (k, v) in s.keys.iter().zip(&s.values) {
            assert_eq!(data.get(k), Some(v), "slot {} key {k}", s.index);
            assert_eq!(v.bytes.len(), s.shape.iter().product::<usize>() * s.dtype.size().unwrap());
        }
    }
    // Different samples really differ.
    let x = b.slot("input").unwrap();
    assert_ne!(x.values[0], x.values[1]);
}

#[test]
fn stored_and_compressed_npz_read_alike() {
    // cct and kws_cnn ship deflated members; simple_mlp stored ones.
    for (name, deflated) in [("cct", true), ("kws_cnn", true), ("simple_mlp", false)] {
        let bytes = std::fs::read(zoo(name).join("inputs.npz")).unwrap();
        let zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).unwrap();
        let methods: Vec<_> = (0..zip.len()).map(|i| zip.clone().by_index(i).unwrap().compression()).collect();
        assert_eq!(methods.iter().all(|m| *m == zip::CompressionMethod::Deflated), deflated, "{name}");
        let npz = npz::parse(Path::new(name), &bytes).unwrap();
        assert!(!npz.is_empty());
    }
    // The same arrays written stored read back bit for bit.
    let src = npz::read_all(&zoo("cct").join("inputs.npz")).unwrap();
    let refs: Vec<(&str, &TensorData)> = src.arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let again = npz::parse(Path::new("x"), &npz::write_npz(&refs).unwrap()).unwrap();
    assert_eq!(src.arrays, again.arrays().unwrap());
}

/// An npz of `members` deflated, each `(key, header dtype, shape)` of zeros
/// (a huge member is a few KB on disk).
fn deflated_zeros(members: &[(&str, &str, &[usize])]) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(9));
    for &(key, descr, shape) in members {
        zip.start_file(format!("{key}.npy"), opts).unwrap();
        let size = if descr.ends_with('8') { 8 } else { 4 };
        let dims: String = shape.iter().map(|d| format!("{d}, ")).collect();
        let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}), }}", dims.trim_end());
        let numel: usize = shape.iter().product();
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        let pad = 64 - (10 + header.len() + 1) % 64;
        npy.extend_from_slice(&((header.len() + pad + 1) as u16).to_le_bytes());
        npy.extend_from_slice(header.as_bytes());
        npy.extend(std::iter::repeat_n(b' ', pad));
        npy.push(b'\n');
        zip.write_all(&npy).unwrap();
        let chunk = vec![0u8; 1 << 20];
        let mut left = numel * size;
        while left > 0 {
            let n = left.min(chunk.len());
            zip.write_all(&chunk[..n]).unwrap();
            left -= n;
        }
    }
    zip.finish().unwrap().into_inner()
}

/// Members the binding does not use are never decompressed: an
/// inputs.npz of big unused members costs their headers, not their size.
#[test]
fn unused_members_are_never_decompressed() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::mlp();
    b.write(dir.path(), "network.onnx");
    let unused: Vec<String> = (0..8).map(|i| format!("unused_{i}")).collect();
    let mut members: Vec<(&str, &str, &[usize])> = vec![("x", "<f4", &[2, 4])];
    members.extend(unused.iter().map(|k| (k.as_str(), "<f4", [4 << 20].as_slice())));
    let path = dir.path().join("inputs.npz");
    std::fs::write(&path, deflated_zeros(&members)).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len < 1 << 20, "the file stays small: {len} B");
    let m = deploygen::load(dir.path()).unwrap();
    let data = npz::read(&path).unwrap();
    let b = bind::bind_data(&m, &data, None, &BindOptions::default()).unwrap();
    assert_eq!(b.slots[0].key(), Some("x"));
    assert!(data.inflated_bytes() < 1024, "{} B decompressed for 32 B of data", data.inflated_bytes());
    // A meta value is read only when its header says it is one value.
    std::fs::write(&path, deflated_zeros(&[("x", "<f4", &[2, 4]), ("meta_n_batches", "<i8", &[4 << 20])])).unwrap();
    let data = npz::read(&path).unwrap();
    let e = bind::bind_data(&m, &data, None, &BindOptions::default()).unwrap_err().to_string();
    assert!(e.contains("meta_n_batches") && e.contains("must be a scalar"), "{e}");
    assert!(data.inflated_bytes() < 1024, "{} B decompressed", data.inflated_bytes());
}

#[test]
fn schedule_reads_meta_keys() {
    // ds_cnn accumulates 2 passes per optimizer step.
    let s = bind_dir(&zoo("ds_cnn"), None).unwrap().schedule;
    assert_eq!((s.n_batches, s.n_accum, s.n_steps, s.data_size), (4, 2, 2, 4));
    assert!(s.resets(2) && !s.resets(3));
    // mobilenet_v1 runs 6 passes over 4 samples, cycling.
    let b = bind_dir(&zoo("mobilenet_v1"), None).unwrap();
    assert_eq!((b.schedule.n_batches, b.schedule.data_size), (6, 4));
    assert_eq!((b.schedule.sample(4), b.schedule.sample(5)), (0, 1));
    assert_eq!(b.loss.unwrap().data.numel(), 6);
    // Without meta keys the stored mini-batches decide; a gap is an error
    // naming the missing key.
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| a.retain(|(k, _)| !k.starts_with("meta_") || k == "meta_learning_rate"));
    let s = bind_dir(dir.path(), None).unwrap().schedule;
    assert_eq!((s.n_batches, s.n_accum, s.data_size), (4, 1, 4));
    edit_inputs(dir.path(), |a| a.retain(|(k, _)| k != "mb2_labels"));
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("no 'mb2_labels' for mini-batch 2 of graph input 'labels'"), "{e}");
    // meta_n_batches must be a multiple of meta_n_accum.
    edit_inputs(dir.path(), |a| a.push(("meta_n_accum".into(), TensorData::from_i64(vec![], &[3]))));
    assert!(bind_dir(dir.path(), None).unwrap_err().to_string().contains("not a multiple"));
}

#[test]
fn learning_rate_comes_from_meta_or_the_sgd_attribute() {
    // SGDOptimizerV2 takes it as an input: meta_learning_rate.
    let b = bind_dir(&zoo("resnet8"), None).unwrap();
    assert_eq!(b.learning_rate_source.as_deref(), Some("meta_learning_rate"));
    assert!(matches!(b.params[0].update.kind, UpdateKind::SgdOptimizerV2 { .. }));
    let dir = copy_model(&zoo("resnet8"));
    edit_inputs(dir.path(), |a| a.retain(|(k, _)| k != "meta_learning_rate"));
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("SGDOptimizerV2") && e.contains("meta_learning_rate"), "{e}");
    // Per-parameter SGD nodes carry it as attribute lr.
    let b = bind_dir(&zoo("autoencoder"), None).unwrap();
    assert_eq!(b.learning_rate_source.as_deref(), Some("SGD attribute lr"));
    assert!(b.params.iter().all(|p| p.update.kind == UpdateKind::Sgd && p.update.lr == b.learning_rate));
    let b = bind_dir(&zoo("cnn_inline_sgd"), None).unwrap();
    assert!(b.params.iter().all(|p| p.update.kind == UpdateKind::InlineSgd && p.slot.is_none()));
}

#[test]
fn conformance_models_bind_with_two_data_inputs() {
    for name in ["CCT2_LP", "CCT2_FT1"] {
        let Some(dir) = common::conformance("conformance_models_bind_with_two_data_inputs", name) else { continue };
        let m = deploygen::load(&dir).unwrap();
        let b = bind::bind(&m, &BindOptions::default()).unwrap();
        assert!(b.warnings.is_empty(), "{name}: {:?}", b.warnings);
        // One mini-batch: D comes from the graph roles (input + labels).
        assert_eq!((b.num_data_inputs, b.detected_from), (2, DetectedFrom::GraphRoles), "{name}");
        assert!(b.params.iter().all(|p| p.reference.is_some()));
        check::training(&m, &b).unwrap();
        assert_well_formed(&b, &m);
    }
    let Some(lp) = common::conformance("conformance_models_bind_with_two_data_inputs", "CCT2_LP") else { return };
    let out = deploygen().args(["inspect", "--format", "json"]).arg(&lp).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["binding"]["num_data_inputs"], 2);
}

#[test]
fn inspect_json_shows_the_binding() {
    let out = deploygen().args(["inspect", "--format", "json"]).arg(zoo("ds_cnn")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let b = &v["binding"];
    assert_eq!(b["num_data_inputs"], 2);
    assert_eq!((b["mini_batches"].as_u64(), b["accum_steps"].as_u64()), (Some(4), Some(2)));
    assert_eq!((b["data_size"].as_u64(), b["steps"].as_u64()), (Some(4), Some(2)));
    assert_eq!(b["learning_rate"], 0.02);
    let s1 = &b["slots"][1];
    assert_eq!((s1["index"].as_u64(), s1["role"].as_str()), (Some(1), Some("labels")));
    assert_eq!((s1["input"].as_str(), s1["key"].as_str()), (Some("labels"), Some("arr_0001")));
    assert_eq!((s1["shape"].clone(), s1["dtype"].as_str()), (serde_json::json!([1]), Some("i64")));
    assert!(v.get("binding_error").is_none());
    // The graph part is still there.
    assert_eq!(v["flavor"], "training_artifacts");

    deploygen()
        .arg("inspect")
        .arg(zoo("ds_cnn"))
        .assert()
        .success()
        .stdout(predicate::str::contains("slot  role"))
        .stdout(predicate::str::contains("labels           labels"))
        .stdout(predicate::str::contains("4 forward pass(es) over 4 distinct mini-batch(es), 2 per optimizer step"));
}

#[test]
fn forced_num_data_inputs_on_several_mini_batches_is_refused() {
    let out = deploygen().args(["inspect", "--num-data-inputs", "1"]).arg(zoo("resnet8")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // Names both per-mini-batch inputs, the detected D, and the shift.
    assert!(err.contains("'input' (data, keys arr_0000, mb1_arr_0000"), "{err}");
    assert!(err.contains("'labels' (labels, keys arr_0001, mb1_arr_0001"), "{err}");
    assert!(err.contains("So num_data_inputs is 2"), "{err}");
    assert!(
        err.contains(
            "weight 0 would be 'labels' (labels, slot 1), paired with 'conv1.weight_grad.accumulation.buffer'"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "weight 1 would be 'conv1.weight' (param, slot 2), paired with 'bn1.weight_grad.accumulation.buffer'"
        ),
        "{err}"
    );
    // Too many is refused as well; agreeing is accepted.
    let e = bind_dir(&zoo("simple_mlp"), Some(3)).unwrap_err().to_string();
    assert!(
        e.contains("weight 0 would be 'fc1.bias'") && e.contains("'fc1.weight' (param) would be overwritten"),
        "{e}"
    );
    assert_eq!(bind_dir(&zoo("simple_mlp"), Some(2)).unwrap().num_data_inputs, 2);
    // Single-graph flavor: no gradient buffers, still refused with the reason.
    let e = bind_dir(&zoo("cnn_inline_sgd"), Some(1)).unwrap_err().to_string();
    assert!(e.contains("'labels' (labels) would be copied in once"), "{e}");
}

#[test]
fn forced_num_data_inputs_on_one_mini_batch_is_accepted() {
    // Inference model: one mini-batch, one data input.
    deploygen().args(["inspect", "--num-data-inputs", "1"]).arg(zoo("kws_cnn")).assert().success();
    // A training model whose data has a single mini-batch: the data cannot
    // tell, so the flag decides; the input outside [0, N) becomes a
    // constant, and the weights stay paired by name.
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| {
        a.retain(|(k, _)| !k.starts_with("mb") && (k == "meta_learning_rate" || !k.starts_with("meta_")))
    });
    // One forward pass: one loss reference.
    let outputs = dir.path().join("outputs.npz");
    let mut refs: Vec<(String, TensorData)> = npz::read_all(&outputs).unwrap().arrays.into_iter().collect();
    for (k, v) in refs.iter_mut() {
        if k == "loss" {
            *v = TensorData { dtype: v.dtype, shape: vec![1], bytes: v.bytes[..4].to_vec() };
        }
    }
    let r: Vec<(&str, &TensorData)> = refs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&outputs, npz::write_npz(&r).unwrap()).unwrap();
    let detected = bind_dir(dir.path(), None).unwrap();
    assert_eq!((detected.num_data_inputs, detected.detected_from), (2, DetectedFrom::GraphRoles));
    let forced = bind_dir(dir.path(), Some(1)).unwrap();
    assert_eq!((forced.num_data_inputs, forced.detected_from), (1, DetectedFrom::Flag));
    let labels = forced.slot("labels").unwrap();
    assert_eq!((labels.role, labels.source), (Role::Frozen, Source::Constant));
    assert!(forced.warnings.is_empty(), "{:?}", forced.warnings);
    assert_eq!(
        forced.params.iter().map(|p| &p.name).collect::<Vec<_>>(),
        detected.params.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
    deploygen().args(["inspect", "--num-data-inputs", "1"]).arg(dir.path()).assert().success();
    // The run reads the held input's one value: the pass computes the
    // reference loss, with the labels (1) and with the image too (0) held.
    for n in ["1", "0"] {
        let out = tempfile::tempdir().unwrap();
        let p = out.path().join("p");
        deploygen()
            .args(["build", "--platform", "host", "--num-data-inputs", n, "--out"])
            .arg(&p)
            .arg(dir.path())
            .assert()
            .success();
        let loss = first_loss_line(&p);
        let (computed, reference) = (field(&loss, "computed="), field(&loss, "ref="));
        assert!((computed - reference).abs() <= 1e-3, "--num-data-inputs {n}: {loss}");
    }
    // Making a weight into data is refused even here.
    let e = bind_dir(dir.path(), Some(3)).unwrap_err().to_string();
    assert!(e.contains("would make param 'fc1.weight' a per-mini-batch data input"), "{e}");
}

#[test]
fn swapped_positional_slots_name_both() {
    let e = bind_dir(&fixture("swapped_slots"), None).unwrap_err();
    assert!(matches!(e, Error::Binding { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains(
            "slot 2 ('arr_0002') lands on graph input 'fc1.weight' (param): expected f32 [8, 16], found f32 [8]"
        ),
        "{e}"
    );
    assert!(
        e.contains("slot 3 ('arr_0003') lands on graph input 'fc1.bias' (param): expected f32 [8], found f32 [8, 16]")
    );
    assert!(e.contains("slots 2 and 3 are swapped"), "{e}");
    deploygen()
        .arg("inspect")
        .arg(fixture("swapped_slots"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("slots 2 and 3 are swapped"));
}

#[test]
fn a_mismatch_that_is_no_swap_lists_every_slot() {
    let dir = copy_model(&fixture("tiny_classifier"));
    edit_inputs(dir.path(), |a| {
        for (k, v) in a.iter_mut() {
            if k == "arr_0004" {
                *v = TensorData::from_f32(vec![4, 9], &[0.0; 36]);
            }
        }
    });
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(
        e.contains(
            "slot 4 ('arr_0004') lands on graph input 'fc2.weight' (param): expected f32 [4, 8], found f32 [4, 9]"
        ),
        "{e}"
    );
    assert!(!e.contains("swapped"), "{e}");
}

#[test]
fn named_keys_are_type_checked_too() {
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| {
        for (k, v) in a.iter_mut() {
            if k == "mb2_labels" {
                *v = TensorData::from_f32(vec![2], &[0.0, 1.0]);
            }
        }
    });
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("key 'mb2_labels' binds graph input 'labels' (labels): expected i64 [2], found f32 [2]"), "{e}");
}

#[test]
fn unknown_keys_and_mixed_layouts() {
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| a.push(("extra".into(), TensorData::from_f32(vec![1], &[0.0]))));
    let b = bind_dir(dir.path(), None).unwrap();
    assert_eq!(b.warnings.len(), 1);
    assert!(b.warnings[0].contains("'extra' matches no graph input"), "{:?}", b.warnings);
    edit_inputs(dir.path(), |a| a.push(("arr_0000".into(), TensorData::from_f32(vec![2, 64], &[0.0; 128]))));
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("mixes named keys") && e.contains("'arr_0000'"), "{e}");
}

#[test]
fn an_unsupported_dtype_names_key_and_descriptor() {
    let dir = copy_model(&zoo("simple_mlp"));
    // Build the npz by hand: one complex64 member.
    let mut arrays: Vec<(String, TensorData)> =
        npz::read_all(&dir.path().join("inputs.npz")).unwrap().arrays.into_iter().collect();
    arrays.retain(|(k, _)| k != "fc1.bias");
    let refs: Vec<(&str, &TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let good = npz::write_npz(&refs).unwrap();
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut src = zip::ZipArchive::new(std::io::Cursor::new(good)).unwrap();
    for i in 0..src.len() {
        zip.raw_copy_file(src.by_index(i).unwrap()).unwrap();
    }
    let header = "{'descr': '<c8', 'fortran_order': False, 'shape': (32,), }\n";
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    npy.extend_from_slice(&[0u8; 256]);
    zip.start_file("fc1.bias.npy", zip::write::SimpleFileOptions::default()).unwrap();
    std::io::Write::write_all(&mut zip, &npy).unwrap();
    std::fs::write(dir.path().join("inputs.npz"), zip.finish().unwrap().into_inner()).unwrap();
    let e = bind_dir(dir.path(), None).unwrap_err();
    assert!(matches!(e, Error::Npz { .. }), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("key 'fc1.bias'") && e.contains("'<c8'") && e.contains("inputs.npz"), "{e}");
}

#[test]
fn references_in_outputs_npz_are_matched_and_checked() {
    let b = bind_dir(&zoo("resnet8"), None).unwrap();
    let frozen = b.references.iter().filter(|r| r.kind == bind::RefKind::Frozen).count();
    assert_eq!(frozen, b.slots_with(Role::Frozen).count(), "BatchNorm statistics after the run");
    let b = bind_dir(&zoo("tiny_transformer"), None).unwrap();
    assert_eq!(b.references.len(), 1);
    assert_eq!((b.references[0].kind, b.references[0].target.as_str()), (bind::RefKind::Output, "logits"));
    // A reference whose shape does not fit its parameter is an error.
    let dir = copy_model(&zoo("simple_mlp"));
    let path = dir.path().join("outputs.npz");
    let mut arrays: Vec<(String, TensorData)> = npz::read_all(&path).unwrap().arrays.into_iter().collect();
    for (k, v) in arrays.iter_mut() {
        if k == "fc2.bias_updated" {
            *v = TensorData::from_f32(vec![31], &[0.0; 31]);
        }
    }
    let refs: Vec<(&str, &TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&path, npz::write_npz(&refs).unwrap()).unwrap();
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("'fc2.bias_updated'") && e.contains("expected f32 [32], found f32 [31]"), "{e}");
}

/// Rewrite the optimizer graph of a model folder.
fn edit_optimizer(dir: &Path, edit: impl FnOnce(&mut deploygen::import::pb::ModelProto)) {
    use prost::Message;
    let path = dir.join("optimizer.onnx");
    let mut m = deploygen::import::pb::ModelProto::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
    edit(&mut m);
    std::fs::write(&path, m.encode_to_vec()).unwrap();
}

#[test]
fn weights_gradients_and_updates_must_pair_by_name() {
    // autoencoder's optimizer graph has one SGD node per weight. Cross two
    // nodes' gradient inputs: each weight would move along the other's
    // gradient, and the binding says so.
    // enc0.bias and dec0.bias are both f32[64], so the graph still types.
    let dir = copy_model(&zoo("autoencoder"));
    edit_optimizer(dir.path(), |m| {
        let nodes = &mut m.graph.as_mut().unwrap().node;
        let at = |w: &str| nodes.iter().position(|n| n.input[0] == w).unwrap();
        let (a, b) = (at("enc0.bias"), at("dec0.bias"));
        let (ga, gb) = (nodes[a].input[1].clone(), nodes[b].input[1].clone());
        nodes[a].input[1] = gb;
        nodes[b].input[1] = ga;
    });
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("updates 'enc0.bias' with 'dec0.bias_grad.accumulation.buffer'"), "{e}");
    assert!(e.contains("the gradient buffer of 'enc0.bias' is 'enc0.bias_grad.accumulation.buffer'"), "{e}");

    // Drop one update: W != number of updates.
    let dir = copy_model(&zoo("autoencoder"));
    edit_optimizer(dir.path(), |m| {
        let g = m.graph.as_mut().unwrap();
        let n = g.node.pop().unwrap();
        g.output.retain(|o| o.name.as_deref() != n.output.first().map(String::as_str));
    });
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("W = 8 trainable weights, NG = 8 gradient buffers, 7 optimizer updates"), "{e}");
    assert!(e.contains("no update for 'dec_out.bias'"), "{e}");

    // No optimizer graph at all next to an accumulating training graph.
    let dir = copy_model(&zoo("simple_mlp"));
    std::fs::remove_file(dir.path().join("optimizer.onnx")).unwrap();
    let e = bind_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("no optimizer graph"), "{e}");
}

#[test]
fn positional_data_without_a_weight_is_classified_not_misbound() {
    // Drop arr_0003 (fc1.bias) from a positional file and renumber: every
    // later array moves up one position. The binding sees the shift instead
    // of binding fc2.weight's array to fc1.bias.
    let dir = copy_model(&fixture("tiny_classifier"));
    edit_inputs(dir.path(), |a| {
        a.retain(|(k, _)| k != "arr_0003");
        for (k, _) in a.iter_mut() {
            if let Some(n) = k.strip_prefix("arr_").and_then(|n| n.parse::<usize>().ok()) {
                if n > 3 {
                    *k = format!("arr_{:04}", n - 1);
                }
            }
        }
    });
    let b = bind_dir(dir.path(), None).unwrap();
    assert_eq!(b.missing.len(), 1, "{:?}", b.missing);
    assert_eq!(b.missing[0].input, "fc1.bias");
    assert!(b.missing[0].misplaced.as_deref().unwrap().contains("'arr_0003' holds 'fc2.weight'"));
    assert_eq!(b.slot("fc2.weight").unwrap().key(), Some("arr_0003"));
}

/// make, run, and the harness's `[loss 0]` line.
fn first_loss_line(project: &Path) -> String {
    let o =
        std::process::Command::new("make").args(["-s", "-f", "Makefile.host"]).current_dir(project).output().unwrap();
    assert!(o.status.success(), "make failed:\n{}", String::from_utf8_lossy(&o.stderr));
    let o = std::process::Command::new("./app").current_dir(project).env("DG_HOST_QUIET", "1").output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(!stdout.contains("FATAL"), "{stdout}");
    stdout.lines().find(|l| l.starts_with("[loss 0]")).unwrap_or_else(|| panic!("no loss line:\n{stdout}")).to_string()
}

fn field(line: &str, key: &str) -> f64 {
    let v = line.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap_or_else(|| panic!("{key} in {line}"));
    v.parse().unwrap()
}

/// A class index outside the scores' classes is refused at bind, naming
/// the key, the element and the value (the loss kernel would read outside
/// its scores); nothing is written.
#[test]
fn labels_outside_the_classes_are_refused() {
    for bad in [50i64, -7] {
        let dir = copy_model(&zoo("simple_mlp"));
        edit_inputs(dir.path(), |a| {
            for (k, v) in a.iter_mut() {
                if k == "mb2_labels" {
                    *v = TensorData::from_i64(vec![2], &[3, bad]);
                }
            }
        });
        let out = tempfile::tempdir().unwrap();
        let o = deploygen()
            .args(["build", "--platform", "host", "--out"])
            .arg(out.path().join("p"))
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("key 'mb2_labels' holds the labels of")
                && err.contains(&format!("element 1 is {bad}, not a class (0 to 9)")),
            "{err}"
        );
        assert!(!out.path().join("p").exists());
    }
}

/// A model's own tolerance (`meta_tolerance` in its inputs.npz) replaces
/// the default atol and `--tolerance` replaces it: kws_cnn with every
/// reference 5e-3 off fails by default, passes at its 1e-2, fails again at
/// `--tolerance 1e-3`. A bad value is refused naming the key.
#[test]
fn a_model_carries_its_tolerance() {
    let dir = copy_model(&zoo("kws_cnn"));
    let outputs = dir.path().join("outputs.npz");
    let refs: Vec<(String, TensorData)> = npz::read_all(&outputs)
        .unwrap()
        .arrays
        .into_iter()
        .map(|(k, v)| {
            let off: Vec<f32> = v.to_f32().unwrap().iter().map(|x| x + 5e-3).collect();
            (k, TensorData::from_f32(v.shape.clone(), &off))
        })
        .collect();
    let r: Vec<(&str, &TensorData)> = refs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&outputs, npz::write_npz(&r).unwrap()).unwrap();
    let test = |extra: &[&str]| {
        let o = deploygen().args(["test", "--platform", "host"]).args(extra).arg(dir.path()).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    assert_eq!(test(&[]).0, Some(1));
    edit_inputs(dir.path(), |a| a.push(("meta_tolerance".into(), TensorData::from_f32(vec![], &[1e-2]))));
    let (code, out) = test(&[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Errors: 0 out of 12, tolerance 0.01"), "{out}");
    assert_eq!(test(&["--tolerance", "1e-3"]).0, Some(1));
    edit_inputs(dir.path(), |a| {
        for (k, v) in a.iter_mut() {
            if k == "meta_tolerance" {
                *v = TensorData::from_f32(vec![], &[-1.0]);
            }
        }
    });
    let o = deploygen().arg("inspect").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("inputs.npz key 'meta_tolerance' is -1; expected a finite tolerance above 0"), "{err}");
}

/// A model's own relative tolerance (`meta_rtol`) replaces the default
/// rtol 1e-3: kws_cnn with every reference 0.5 % off (its outputs are below
/// 0.3, so the default atol does not cover it) fails by default, passes at
/// `meta_rtol` 1e-2, which the manifest, the verdict and `inspect` show; a
/// value above 0.1 is refused naming the key.
#[test]
fn a_model_carries_its_relative_tolerance() {
    let dir = copy_model(&zoo("kws_cnn"));
    let outputs = dir.path().join("outputs.npz");
    let refs: Vec<(String, TensorData)> = npz::read_all(&outputs)
        .unwrap()
        .arrays
        .into_iter()
        .map(|(k, v)| {
            let off: Vec<f32> = v.to_f32().unwrap().iter().map(|x| x * 1.005).collect();
            (k, TensorData::from_f32(v.shape.clone(), &off))
        })
        .collect();
    let r: Vec<(&str, &TensorData)> = refs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&outputs, npz::write_npz(&r).unwrap()).unwrap();
    let test = || {
        let o = deploygen().args(["test", "--platform", "host"]).arg(dir.path()).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    assert_eq!(test().0, Some(1));
    edit_inputs(dir.path(), |a| a.push(("meta_rtol".into(), TensorData::from_f32(vec![], &[1e-2]))));
    let (code, out) = test();
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Errors: 0 out of 12, tolerance 0.0005 + 0.01 x |ref|"), "{out}");
    let o = deploygen().arg("inspect").arg(dir.path()).output().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("rtol 0.01 (meta_rtol)"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let out_dir = tempfile::tempdir().unwrap();
    let p = out_dir.path().join("p");
    let o = deploygen().args(["build", "--platform", "host", "--out"]).arg(&p).arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(p.join("deploygen.json")).unwrap()).unwrap();
    assert_eq!(m["rtol"].as_f64().map(|v| v as f32), Some(1e-2), "{m}");
    edit_inputs(dir.path(), |a| {
        for (k, v) in a.iter_mut() {
            if k == "meta_rtol" {
                *v = TensorData::from_f32(vec![], &[0.5]);
            }
        }
    });
    let o = deploygen().arg("inspect").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("inputs.npz key 'meta_rtol' is 0.5; a relative tolerance is at most 0.1"), "{err}");
}
