//! Malformed and hostile models: every class of input that used to be
//! accepted silently (a wrong-typed attribute, a backward operator with
//! impossible geometry, an external-data path outside the model folder, …)
//! is refused with exit code 2 and a message naming what is wrong. Each
//! test starts from a zoo model and mutates one thing.

use std::path::Path;

use crate::common::*;
use assert_cmd::Command;
use deploygen::import::pb;
use deploygen::ir::{DType, TensorData};
use prost::Message;

type Attr = pb::AttributeProto;

fn decode(path: &Path) -> pb::ModelProto {
    pb::ModelProto::decode(std::fs::read(path).unwrap().as_slice()).unwrap()
}

/// A copy of zoo model `name` whose `file` went through `edit`.
fn mutated(name: &str, file: &str, edit: impl FnOnce(&mut pb::ModelProto)) -> tempfile::TempDir {
    let dir = copy_model(&zoo(name));
    let path = dir.path().join(file);
    let mut m = decode(&path);
    edit(&mut m);
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    dir
}

fn graph(m: &mut pb::ModelProto) -> &mut pb::GraphProto {
    m.graph.as_mut().unwrap()
}

/// The first node of type `op`.
fn node<'a>(m: &'a mut pb::ModelProto, op: &str) -> &'a mut pb::NodeProto {
    graph(m).node.iter_mut().find(|n| n.op_type() == op).unwrap_or_else(|| panic!("no {op} node"))
}

/// Replace (or add) attribute `attr.name` on the first `op` node.
fn set_attr(m: &mut pb::ModelProto, op: &str, attr: Attr) {
    let n = node(m, op);
    n.attribute.retain(|a| a.name() != attr.name());
    n.attribute.push(attr);
}

fn attr_floats(name: &str, v: &[f32]) -> Attr {
    Attr {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::Floats as i32),
        floats: v.to_vec(),
        ..Default::default()
    }
}

/// `deploygen inspect DIR` exits 2, without a panic, and says every needle.
fn refused(dir: &Path, needles: &[&str]) {
    let out = Command::cargo_bin("deploygen").unwrap().arg("inspect").arg(dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "expected exit 2, got {:?}; stderr:\n{err}", out.status.code());
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
    }
}

fn accepted(dir: &Path) -> String {
    let out = Command::cargo_bin("deploygen").unwrap().arg("inspect").arg(dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{err}");
    String::from_utf8_lossy(&out.stdout).into_owned() + &err
}

// --- Attributes of the wrong type or out of range ---------------------------

#[test]
fn wrong_typed_attributes_are_refused() {
    let cases: Vec<(&str, &str, Attr, &[&str])> = vec![
        ("cnn_inline_sgd", "MaxPool", attr_float("strides", 1.5), &["MaxPool", "'strides'", "INTS", "FLOAT"]),
        ("cnn_inline_sgd", "Conv", attr_str("group", "two"), &["Conv", "'group'", "INT", "STRING"]),
        ("cnn_inline_sgd", "Gemm", attr_float("transA", 1.5), &["Gemm", "'transA'", "INT", "FLOAT"]),
        ("cnn_inline_sgd", "Gemm", attr_int("transA", 1 << 40), &["Gemm", "'transA'", "1099511627776", "0..=1"]),
        ("cnn_inline_sgd", "Gemm", attr_str("alpha", "one"), &["Gemm", "'alpha'", "FLOAT", "STRING"]),
        ("tiny_transformer", "Softmax", attr_str("axis", "last"), &["Softmax", "'axis'", "INT", "STRING"]),
        ("tiny_transformer", "LayerNormalization", attr_float("axis", 1.5), &["'axis'", "INT", "FLOAT"]),
        ("kws_cnn", "BatchNormalization", attr_floats("epsilon", &[1e-5]), &["'epsilon'", "FLOAT", "FLOATS"]),
    ];
    for (model, op, attr, needles) in cases {
        let dir = mutated(model, "network.onnx", |m| set_attr(m, op, attr));
        refused(dir.path(), needles);
    }
}

// --- Backward operators' spatial attributes ---------------------------------

#[test]
fn backward_spatial_attributes_follow_the_forward_rules() {
    let cases: Vec<(&str, &str, Attr, &[&str])> = vec![
        ("cnn_inline_sgd", "ConvGrad", attr_ints("strides", &[0, 0]), &["ConvGrad", "strides"]),
        ("cnn_inline_sgd", "ConvGrad", attr_int("group", 0), &["ConvGrad", "group"]),
        ("cnn_inline_sgd", "ConvGrad", attr_int("group", 3), &["ConvGrad", "group"]),
        ("cnn_inline_sgd", "ConvGrad", attr_ints("pads", &[-1, -1, -1, -1]), &["ConvGrad", "pads"]),
        ("cnn_inline_sgd", "ConvGrad", attr_ints("pads", &[1 << 40; 4]), &["ConvGrad"]),
        ("cnn_inline_sgd", "ConvGrad", attr_ints("kernel_shape", &[0, 0]), &["ConvGrad", "kernel_shape"]),
        ("cnn_inline_sgd", "ConvGrad", attr_ints("kernel_shape", &[3]), &["ConvGrad", "kernel_shape"]),
        ("cnn_inline_sgd", "ConvGrad", attr_ints("dilations", &[1 << 40, 1 << 40]), &["ConvGrad"]),
        ("cnn_inline_sgd", "MaxPoolGrad", attr_ints("strides", &[0, 0]), &["MaxPoolGrad", "strides"]),
        ("cnn_inline_sgd", "MaxPoolGrad", attr_ints("kernel_shape", &[0, 0]), &["MaxPoolGrad", "kernel_shape"]),
        ("cnn_inline_sgd", "MaxPoolGrad", attr_ints("kernel_shape", &[3]), &["MaxPoolGrad", "kernel_shape"]),
        ("cnn_inline_sgd", "MaxPoolGrad", attr_ints("kernel_shape", &[99, 99]), &["MaxPoolGrad", "larger"]),
        ("cnn_inline_sgd", "MaxPoolGrad", attr_ints("pads", &[-2, 0, 0, 0]), &["MaxPoolGrad", "pads"]),
        ("ds_cnn", "AveragePoolGrad", attr_ints("strides", &[0, 0]), &["AveragePoolGrad", "strides"]),
        ("ds_cnn", "AveragePoolGrad", attr_ints("kernel_shape", &[0, 0]), &["AveragePoolGrad", "kernel_shape"]),
        ("ds_cnn", "AveragePoolGrad", attr_ints("kernel_shape", &[3]), &["AveragePoolGrad", "kernel_shape"]),
        ("ds_cnn", "AveragePoolGrad", attr_ints("pads", &[-1, -1, -1, -1]), &["AveragePoolGrad", "pads"]),
        ("ds_cnn", "AveragePoolGrad", attr_ints("pads", &[1 << 40; 4]), &["AveragePoolGrad"]),
    ];
    for (model, op, attr, needles) in cases {
        let dir = mutated(model, "network.onnx", |m| set_attr(m, op, attr));
        refused(dir.path(), needles);
    }
}

#[test]
fn conv_grad_shapes_must_mirror_the_forward_tensors() {
    // Stride 2 on the gradient only: dY no longer has the shape the
    // forward convolution of X with W would give.
    let dir = mutated("cnn_inline_sgd", "network.onnx", |m| set_attr(m, "ConvGrad", attr_ints("strides", &[2, 2])));
    refused(dir.path(), &["ConvGrad", "dY", "forward"]);
}

// --- Required inputs ---------------------------------------------------------

#[test]
fn required_inputs_may_not_be_empty() {
    let cases: &[(&str, &str, usize)] = &[
        ("cnn_inline_sgd", "ConvGrad", 0),
        ("cnn_inline_sgd", "MaxPoolGrad", 1),
        ("cnn_inline_sgd", "Gemm", 1),
        ("simple_mlp", "InPlaceAccumulatorV2", 1),
        ("kws_cnn", "BatchNormalization", 3),
    ];
    for &(model, op, slot) in cases {
        let dir = mutated(model, "network.onnx", |m| node(m, op).input[slot] = String::new());
        refused(dir.path(), &[op, &format!("input {slot}"), "required"]);
    }
}

// --- External data -------------------------------------------------------------

/// Move the first float initializer of `simple_mlp`'s training graph to
/// external data with these key/values (an extra file `weights.bin` holding
/// its bytes sits in the folder).
fn external(entries: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = copy_model(&zoo("tiny_transformer"));
    let path = dir.path().join("network.onnx");
    let mut m = decode(&path);
    let t = graph(&mut m).initializer.iter_mut().find(|t| t.raw_data.as_ref().is_some_and(|r| r.len() >= 16)).unwrap();
    std::fs::write(dir.path().join("weights.bin"), t.raw_data.take().unwrap()).unwrap();
    t.data_location = Some(pb::tensor_proto::DataLocation::External as i32);
    t.external_data = entries
        .iter()
        .map(|(k, v)| pb::StringStringEntryProto { key: Some(k.to_string()), value: Some(v.to_string()) })
        .collect();
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    dir
}

#[test]
fn external_data_inside_the_folder_is_read() {
    let dir = external(&[("location", "weights.bin")]);
    accepted(dir.path());
}

#[test]
fn external_data_outside_the_folder_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.bin"), vec![0u8; 1 << 16]).unwrap();
    let abs = outside.path().join("secret.bin");
    let dir = external(&[("location", abs.to_str().unwrap())]);
    refused(dir.path(), &["absolute"]);
    let dir = external(&[("location", "/etc/passwd")]);
    refused(dir.path(), &["absolute", "/etc/passwd"]);
    let dir = external(&[("location", "../../../etc/passwd")]);
    refused(dir.path(), &["outside the model folder", "../../../etc/passwd"]);
    let dir = external(&[("location", "sub/../../x.bin")]);
    refused(dir.path(), &["outside the model folder"]);
    #[cfg(unix)]
    {
        let dir = external(&[("location", "link.bin")]);
        std::os::unix::fs::symlink(&abs, dir.path().join("link.bin")).unwrap();
        refused(dir.path(), &["link.bin", "outside the model folder"]);
    }
}

#[test]
fn external_data_offsets_must_be_integers_within_the_file() {
    for (k, v, needle) in [
        ("offset", "abc", "'offset'"),
        ("offset", "-4", "'offset'"),
        ("length", "1.5", "'length'"),
        ("length", "", "'length'"),
        ("offset", "1000000", "file has"),
    ] {
        let dir = external(&[("location", "weights.bin"), (k, v)]);
        refused(dir.path(), &[needle]);
    }
}

// --- Declared types and dims of graph inputs and outputs -----------------------

fn set_elem_type(vi: &mut pb::ValueInfoProto, dtype: i32) {
    if let Some(pb::type_proto::Value::TensorType(t)) = vi.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.elem_type = Some(dtype);
    }
}

fn set_dim(vi: &mut pb::ValueInfoProto, i: usize, d: i64) {
    if let Some(pb::type_proto::Value::TensorType(t)) = vi.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.shape.as_mut().unwrap().dim[i].value = Some(pb::tensor_shape_proto::dimension::Value::DimValue(d));
    }
}

#[test]
fn gradient_buffers_must_have_their_weights_type() {
    // bool, i32, f16, i64
    for dtype in [9, 6, 10, 7] {
        let dir = mutated("simple_mlp", "network.onnx", |m| {
            let vi = graph(m).input.iter_mut().find(|v| v.name().ends_with("_grad.accumulation.buffer")).unwrap();
            set_elem_type(vi, dtype);
        });
        refused(dir.path(), &["_grad.accumulation.buffer", "f32"]);
    }
}

#[test]
fn graph_io_declarations_are_checked() {
    let dir = mutated("simple_mlp", "network.onnx", |m| set_elem_type(&mut graph(m).output[0], 0));
    refused(dir.path(), &["graph output", "element type"]);
    let dir = mutated("simple_mlp", "network.onnx", |m| set_dim(&mut graph(m).input[0], 1, -3));
    refused(dir.path(), &["graph input 'input'", "-3"]);
    let dir = mutated("simple_mlp", "optimizer.onnx", |m| {
        let vi = graph(m).input.iter_mut().find(|v| v.name() == "learning_rate").unwrap();
        set_elem_type(vi, 7);
    });
    refused(dir.path(), &["learning_rate", "f32"]);
    let dir = mutated("simple_mlp", "optimizer.onnx", |m| {
        let vi = graph(m).input.iter_mut().find(|v| v.name() == "step").unwrap();
        set_elem_type(vi, 1);
    });
    refused(dir.path(), &["step", "i64"]);
    let dir = mutated("simple_mlp", "optimizer.onnx", |m| {
        let vi = graph(m).input.iter_mut().find(|v| v.name() == "learning_rate").unwrap();
        set_dim(vi, 0, 0);
    });
    // A zero-size dim is legal ONNX; the optimizer's rate must still be one value.
    refused(dir.path(), &["learning_rate", "must be f32 [1], found f32 [0]"]);
}

#[test]
fn a_graph_input_is_listed_once() {
    let dir = mutated("simple_mlp", "network.onnx", |m| {
        let again = graph(m).input[0].clone();
        graph(m).input.push(again);
    });
    refused(dir.path(), &["graph input 'input'", "twice"]);
}

/// A graph output that is a graph input or an initializer passes its value
/// through: its declaration must be the value's type.
#[test]
fn a_pass_through_output_is_declared_as_its_value() {
    let build = |edit: &dyn Fn(&mut ModelBuilder)| {
        let dir = tempfile::tempdir().unwrap();
        let mut b = mlp();
        edit(&mut b);
        b.write(dir.path(), "network.onnx");
        dir
    };
    refused(build(&|b| _ = b.output("w", I64, &[3, 4])).path(), &["graph output 'w'", "i64", "f32"]);
    refused(build(&|b| _ = b.output("b", F32, &[4])).path(), &["graph output 'b'", "[4]", "[3]"]);
    refused(build(&|b| _ = b.output("x", F32, &[2, 5])).path(), &["graph output 'x'", "[2, 5]", "[2, 4]"]);
    accepted(build(&|b| _ = b.output("w", F32, &[3, 4]).output("x", F32, &[2, 4])).path());
}

/// A C string cannot hold a NUL byte, so a tensor name with one could not
/// be printed back as it is. A node's name is only ever in comments.
#[test]
fn tensor_names_with_a_nul_byte_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = mlp();
    b.graph.node[1].output[0] = "y\0".into();
    b.graph.output[0].name = Some("y\0".into());
    b.write(dir.path(), "network.onnx");
    refused(dir.path(), &["node 'Relu_1': tensor 'y\\0'", "NUL"]);
    let mut b = mlp();
    b.graph.node[1].name = Some("relu\0x".into());
    b.write(dir.path(), "network.onnx");
    accepted(dir.path());
    let mut b = mlp();
    b.graph.initializer[1].name = Some("b\0".into());
    b.graph.node[0].input[2] = "b\0".into();
    b.write(dir.path(), "network.onnx");
    refused(dir.path(), &["initializer", "NUL"]);
}

// --- Absurd schedules -------------------------------------------------------------

fn set_meta(a: &mut Vec<(String, TensorData)>, key: &str, t: TensorData) {
    a.retain(|(k, _)| k != key);
    a.push((key.into(), t));
}

#[test]
fn meta_values_are_bounded_by_the_data() {
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| set_meta(a, "meta_n_batches", TensorData::from_i64(vec![], &[i64::MAX])));
    refused(dir.path(), &["meta_n_batches", "9223372036854775807"]);
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| set_meta(a, "meta_n_accum", TensorData::from_i64(vec![], &[1 << 40])));
    refused(dir.path(), &["meta_n_accum", "1099511627776"]);
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| set_meta(a, "meta_learning_rate", TensorData::from_f32(vec![], &[-0.5])));
    refused(dir.path(), &["meta_learning_rate", "-0.5"]);
}

// --- Special files ---------------------------------------------------------------

#[test]
fn special_files_are_named_for_what_they_are() {
    let dir = copy_model(&zoo("simple_mlp"));
    std::fs::remove_file(dir.path().join("inputs.npz")).unwrap();
    std::fs::create_dir(dir.path().join("inputs.npz")).unwrap();
    refused(dir.path(), &["inputs.npz", "directory"]);

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("network.onnx")).unwrap();
    refused(dir.path(), &["network.onnx", "directory"]);

    #[cfg(unix)]
    {
        let dir = copy_model(&zoo("simple_mlp"));
        std::fs::remove_file(dir.path().join("inputs.npz")).unwrap();
        let st = std::process::Command::new("mkfifo").arg(dir.path().join("inputs.npz")).status().unwrap();
        assert!(st.success());
        refused(dir.path(), &["inputs.npz", "FIFO"]);

        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("network.onnx", dir.path().join("network.onnx")).unwrap();
        refused(dir.path(), &["network.onnx", "symbolic link"]);
    }

    let dir = copy_model(&zoo("simple_mlp"));
    std::fs::copy(dir.path().join("network.onnx"), dir.path().join("training_model.onnx")).unwrap();
    refused(dir.path(), &["network.onnx", "training_model.onnx", "path"]);
}

// --- References that do not fit ------------------------------------------------

fn edit_outputs(dir: &Path, edit: impl FnOnce(&mut Vec<(String, TensorData)>)) {
    use deploygen::bind::npz;
    let path = dir.join("outputs.npz");
    let mut arrays: Vec<(String, TensorData)> = npz::read_all(&path).unwrap().arrays.into_iter().collect();
    edit(&mut arrays);
    let refs: Vec<(&str, &TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&path, npz::write_npz(&refs).unwrap()).unwrap();
}

fn f64_of(t: &TensorData) -> TensorData {
    let v = t.to_f32().unwrap();
    TensorData {
        dtype: DType::F64,
        shape: t.shape.clone(),
        bytes: v.iter().flat_map(|&x| (x as f64).to_le_bytes()).collect(),
    }
}

#[test]
fn references_must_fit() {
    // A loss per forward pass, no fewer.
    let dir = copy_model(&zoo("simple_mlp"));
    edit_outputs(dir.path(), |a| {
        let (_, t) = a.iter_mut().find(|(k, _)| k.contains("loss")).unwrap();
        let v = t.to_f32().unwrap();
        *t = TensorData::from_f32(vec![v.len() + 1], &[v.clone(), vec![0.0]].concat());
    });
    refused(dir.path(), &["loss", "forward passes"]);

    // An updated weight of another element count.
    let dir = copy_model(&zoo("simple_mlp"));
    edit_outputs(dir.path(), |a| {
        let (_, t) = a.iter_mut().find(|(k, _)| k == "fc1.bias_updated").unwrap();
        *t = TensorData::from_f32(vec![3], &[0.0; 3]);
    });
    refused(dir.path(), &["fc1.bias_updated", "f32 [32]", "f32 [3]"]);

    // An updated weight of another dtype: integer data converts only when
    // every value is exact in f32, so one value past 2^24 is refused.
    let dir = copy_model(&zoo("simple_mlp"));
    edit_outputs(dir.path(), |a| {
        let (_, t) = a.iter_mut().find(|(k, _)| k == "fc1.bias_updated").unwrap();
        let mut v = vec![0i64; 32];
        v[5] = (1 << 24) + 1;
        *t = TensorData::from_i64(vec![32], &v);
    });
    refused(dir.path(), &["fc1.bias_updated", "i64", "16777217", "not exact in f32"]);

    // Same count, other shape: accepted with a note; float64: converted.
    let dir = copy_model(&zoo("simple_mlp"));
    edit_outputs(dir.path(), |a| {
        let (_, t) = a.iter_mut().find(|(k, _)| k == "fc1.bias_updated").unwrap();
        t.shape = vec![4, 8];
        let (_, t) = a.iter_mut().find(|(k, _)| k == "fc2.bias_updated").unwrap();
        *t = f64_of(t);
    });
    let out = accepted(dir.path());
    assert!(out.contains("fc1.bias_updated") && out.contains("[4, 8]"), "{out}");
    assert!(out.contains("fc2.bias_updated") && out.contains("f64"), "{out}");
}

// --- Pairing errors name the tensors ---------------------------------------------

#[test]
fn pairing_errors_name_the_tensors() {
    // A gradient buffer renamed away from its weight: W = 6, NG = 5 paired.
    let dir = mutated("simple_mlp", "network.onnx", |m| {
        let g = graph(m);
        let old = "fc2.bias_grad.accumulation.buffer";
        for vi in g.input.iter_mut().filter(|v| v.name() == old) {
            vi.name = Some("stray_grad.accumulation.buffer".into());
        }
        for n in &mut g.node {
            for i in n.input.iter_mut().filter(|i| *i == old) {
                *i = "stray_grad.accumulation.buffer".into();
            }
        }
    });
    refused(dir.path(), &["stray_grad.accumulation.buffer"]);

    // Two buffers swapped in the graph-input list.
    let dir = mutated("simple_mlp", "network.onnx", |m| {
        let g = graph(m);
        let a = g.input.iter().position(|v| v.name() == "fc1.weight_grad.accumulation.buffer").unwrap();
        let b = g.input.iter().position(|v| v.name() == "fc2.weight_grad.accumulation.buffer").unwrap();
        g.input.swap(a, b);
    });
    refused(dir.path(), &["not in the order of their weights", "fc1.weight_grad.accumulation.buffer", "fc2.weight"]);
}

/// Rename tensor `old` to `new` everywhere in a graph: inputs, node inputs.
fn rename(g: &mut pb::GraphProto, old: &str, new: &str) {
    for vi in g.input.iter_mut().filter(|v| v.name() == old) {
        vi.name = Some(new.into());
    }
    for n in &mut g.node {
        for i in n.input.iter_mut().filter(|i| *i == old) {
            *i = new.into();
        }
    }
}

#[test]
fn gradient_buffers_pair_by_wiring() {
    // A per-weight optimizer wires each buffer to its weight: a buffer
    // renamed in both graphs still accumulates enc0.bias's gradient and
    // feeds enc0.bias's SGD, so it pairs.
    let (old, new) = ("enc0.bias_grad.accumulation.buffer", "renamed.buffer");
    let dir = mutated("autoencoder", "network.onnx", |m| rename(graph(m), old, new));
    let path = dir.path().join("optimizer.onnx");
    let mut m = decode(&path);
    rename(graph(&mut m), old, new);
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let out = accepted(dir.path());
    assert!(out.contains("enc0.bias  ->  buffer renamed.buffer"), "{out}");

    // Renamed in the training graph only: the optimizer reads the old name,
    // so nothing ties the buffer to enc0.bias.
    let dir = mutated("autoencoder", "network.onnx", |m| rename(graph(m), old, new));
    refused(dir.path(), &["W = 8 trainable weights, NG = 7", "no gradient buffer for 'enc0.bias'", "'renamed.buffer'"]);

    // Two accumulators of same-shaped weights with their gradients swapped:
    // each buffer's name and the gradient flowing into it disagree.
    let dir = mutated("simple_mlp", "network.onnx", |m| {
        for n in graph(m).node.iter_mut().filter(|n| n.op_type() == "InPlaceAccumulatorV2") {
            let swapped = match n.input[1].as_str() {
                "fc1.bias_grad" => "fc2.bias_grad",
                "fc2.bias_grad" => "fc1.bias_grad",
                _ => continue,
            };
            n.input[1] = swapped.into();
        }
    });
    refused(
        dir.path(),
        &[
            "buffer 'fc1.bias_grad.accumulation.buffer' pairs with no weight",
            "adds 'fc2.bias_grad', the gradient of 'fc2.bias', into it, but its name makes it the buffer of 'fc1.bias'",
            "no gradient buffer for 'fc1.bias', 'fc2.bias'",
        ],
    );
}

// --- Bounded reads, accepted-then-wrong values, machine formats -------------

fn deploygen_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::cargo_bin("deploygen").unwrap().args(args).current_dir(dir).output().unwrap()
}

fn exit2(o: &std::process::Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stdout:\n{}\nstderr:\n{err}", String::from_utf8_lossy(&o.stdout));
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
    }
}

/// A file over the bound of its kind is exit 2 naming the file and the
/// bound, never an allocation that aborts (a sparse file: no disk used).
#[test]
fn files_over_their_bound_are_refused_by_name() {
    let dir = copy_model(&zoo("cnn_derived_adamw"));
    let toml = dir.path().join("train.toml");
    std::fs::File::options().append(true).open(&toml).unwrap().set_len(1 << 30).unwrap();
    refused(dir.path(), &["train.toml", &deploygen::limits::TRAIN_TOML.to_string()]);

    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run.txt");
    std::fs::File::create(&run).unwrap().set_len(deploygen::limits::PROFILE_INPUT + 1).unwrap();
    let o = deploygen_in(tmp.path(), &["report", "--profile", "run.txt"]);
    exit2(&o, &["run.txt", &deploygen::limits::PROFILE_INPUT.to_string()]);
    // One huge BENCH line inside the bound is refused too, naming the line.
    let long = format!("BENCH node 0 Relu {} cycles=5\n", "n".repeat(deploygen::limits::PROFILE_LINE + 1));
    std::fs::write(&run, format!("BENCH node 1 Relu r cycles=5\n{long}")).unwrap();
    exit2(&deploygen_in(tmp.path(), &["report", "--profile", "run.txt"]), &["line 2", "bound"]);
    // Totals that would wrap at 2^64.
    std::fs::write(&run, format!("BENCH node 0 Relu r cycles={}\nBENCH node 1 Relu s cycles=2\n", u64::MAX)).unwrap();
    exit2(&deploygen_in(tmp.path(), &["report", "--profile", "run.txt"]), &["line 2", "2^64"]);
    std::fs::write(&run, format!("BENCH node 0 Relu r cycles={}\nBENCH node 0 Relu r cycles=1\n", u64::MAX)).unwrap();
    exit2(&deploygen_in(tmp.path(), &["report", "--profile", "run.txt"]), &["line 2", "2^64"]);

    let junit = tmp.path().join("a.xml");
    std::fs::File::create(&junit).unwrap().set_len(deploygen::limits::JUNIT_XML + 1).unwrap();
    exit2(&deploygen_in(tmp.path(), &["merge-junit", "a.xml", "--out", "m.xml"]), &["a.xml", "bound"]);
}

/// Values that used to be accepted and then gave a wrong or aborting run.
#[test]
fn values_that_cannot_work_are_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = zoo("simple_mlp").display().to_string();
    for (platform, flag, value, says) in [
        ("host", "--l3", "0", "at least one byte"),
        ("host", "--l1", "0", "at least one byte"),
        ("GAP9", "--l2", "2000000000", "host emulation can back"),
    ] {
        let o = deploygen_in(tmp.path(), &["build", &mlp, "--platform", platform, flag, value, "--out", "p"]);
        exit2(&o, &[flag, says]);
        assert!(!tmp.path().join("p").exists());
    }
    // MaxPool with a pad as large as its kernel: onnxruntime refuses it.
    let dir = mutated("cct", "network.onnx", |m| set_attr(m, "MaxPool", attr_ints("pads", &[9, 9, 9, 9])));
    refused(dir.path(), &["pads", "smaller than the kernel"]);
    // A tolerance under which wrong results pass.
    let dir = copy_model(&zoo("simple_mlp"));
    edit_inputs(dir.path(), |a| set_meta(a, "meta_tolerance", TensorData::from_f32(vec![], &[1e30])));
    refused(dir.path(), &["meta_tolerance", "at most 1"]);
    // report --ort: named and missing, malformed, not a file, negative.
    let ort = tmp.path().join("ort.json");
    let report =
        |ort: &str| deploygen_in(tmp.path(), &["report", &mlp, "--platform", "host", "--no-run", "--ort", ort]);
    exit2(&report("missing.json"), &["missing.json"]);
    std::fs::write(&ort, "{not json").unwrap();
    exit2(&report("ort.json"), &["ort.json", "JSON"]);
    exit2(&report("/dev/zero"), &["/dev/zero", "not a regular file"]);
    std::fs::write(&ort, r#"{"simple_mlp": {"seconds": -1.0}}"#).unwrap();
    exit2(&report("ort.json"), &["ort.json", "simple_mlp", "-1"]);
    exit2(&deploygen_in(tmp.path(), &["report", &mlp, "--platform", "host", "--runs", "0"]), &["--runs"]);
    // merge-junit --out naming one of its inputs.
    let xml = "<?xml version=\"1.0\"?><testsuites name=\"x\"><testsuite name=\"s\" tests=\"1\"><testcase name=\"a\"/></testsuite></testsuites>";
    std::fs::write(tmp.path().join("a.xml"), xml).unwrap();
    std::fs::write(tmp.path().join("b.xml"), xml.replace("\"a\"", "\"b\"")).unwrap();
    let o = deploygen_in(tmp.path(), &["merge-junit", "a.xml", "b.xml", "--out", "./a.xml"]);
    exit2(&o, &["a.xml", "overwritten"]);
    assert_eq!(std::fs::read_to_string(tmp.path().join("a.xml")).unwrap(), xml);
}

/// DG_HOST_DMA names a mode; an unknown one stops the app with a message
/// instead of testing nothing.
#[test]
fn an_unknown_host_dma_mode_is_an_error_of_the_app() {
    if std::process::Command::new("gcc").arg("--version").output().is_err() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let b = deploygen_in(
        tmp.path(),
        &["build", &zoo("simple_mlp").display().to_string(), "--platform", "host", "--out", "p"],
    );
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let m = std::process::Command::new("make")
        .args(["-s", "-f", "Makefile.host", "-j2"])
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    for (k, v) in [("DG_HOST_DMA", "radnom"), ("DG_HOST_DMA_SEED", "x1")] {
        let r = std::process::Command::new(out.join("app")).env(k, v).current_dir(&out).output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{k}={v}: {err}");
        assert!(err.contains(&format!("{k}={v}")), "{err}");
    }
    let r =
        std::process::Command::new(out.join("app")).env("DG_HOST_DMA", "random").current_dir(&out).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

/// `inspect --format json` is JSON whatever the names hold: serde_json's
/// escapes, never the terminal's `\u{..}`; DEL, C1 and bidi controls are
/// JSON escapes, so the terminal is safe too.
#[test]
fn inspect_json_is_valid_json_with_hostile_names() {
    // The model's path is in the report: a folder named with them.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("n\u{7f}\u{9b}31m\u{202e}\u{1b}[2J");
    std::fs::create_dir(&dir).unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz"] {
        std::fs::copy(zoo("kws_cnn").join(f), dir.join(f)).unwrap();
    }
    let o = Command::cargo_bin("deploygen").unwrap().args(["inspect", "--format", "json"]).arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"));
    fn holds(v: &serde_json::Value, s: &str) -> bool {
        match v {
            serde_json::Value::String(x) => x == s,
            serde_json::Value::Array(a) => a.iter().any(|x| holds(x, s)),
            serde_json::Value::Object(o) => o.values().any(|x| holds(x, s)),
            _ => false,
        }
    }
    let name = dir.join("network.onnx").display().to_string();
    assert!(holds(&v, &name), "the name survives the round trip:\n{text}");
    assert!(
        !text.contains('\u{7f}') && !text.contains('\u{9b}') && !text.contains('\u{1b}') && !text.contains('\u{202e}')
    );
    assert!(!text.contains("\\u{"), "a terminal escape in JSON:\n{text}");
}
