//! Import: real protobuf files in, a scheduled and typed IR out; every kind
//! of bad input is a clear error with exit code 2.

use crate::common;

use crate::common::*;
use assert_cmd::Command;
use deploygen::import::pb;
use deploygen::ir::{DType, Flavor, Role};
use predicates::prelude::*;

fn shape_of(g: &deploygen::ir::Graph, name: &str) -> Vec<usize> {
    g.tensor(g.id(name).unwrap_or_else(|| panic!("no tensor {name}")))
        .ty
        .shape()
        .unwrap_or_else(|| panic!("shape of {name} unknown"))
}

#[test]
fn mlp_imports_with_shapes_and_roles() {
    let dir = tempfile::tempdir().unwrap();
    let path = mlp().write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    assert_eq!(m.path, path);
    assert_eq!(m.graph.onnx_nodes, 2);
    assert_eq!(shape_of(&m.graph, "h"), [2, 3]);
    assert_eq!(m.roles.flavor, Flavor::Inference);
    assert_eq!(m.roles.role("x"), Some(Role::Data));
    assert_eq!(m.roles.role("y"), Some(Role::Output));
    assert_eq!(m.graph.initializer_bytes(), 15 * 4);
}

/// The ops and fused-activation codes of a loaded graph's nodes, in schedule order.
fn ops_and_acts(g: &deploygen::ir::Graph) -> Vec<(String, Option<i64>)> {
    g.nodes().map(|(_, n)| (n.op.clone(), n.marks.fused_act)).collect()
}

/// Gemm -> Relu in an inference graph: the Gemm writes the Relu's output
/// and applies it (`act` 1); the Relu node goes. Not when the Gemm's own
/// output is needed too: a graph output, or a second reader.
#[test]
fn an_activation_fuses_into_its_only_producer() {
    let dir = tempfile::tempdir().unwrap();
    mlp().write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    assert_eq!(ops_and_acts(&m.graph), [("Gemm".to_string(), Some(1))]);
    let gemm = m.graph.nodes().next().unwrap().1;
    assert_eq!(gemm.output(0).map(|t| m.graph.name_of(t)), Some("y"));

    let kept = |b: &mut common::ModelBuilder, dir: &std::path::Path| {
        b.write(dir, "network.onnx");
        let m = deploygen::load(dir).unwrap();
        let got = ops_and_acts(&m.graph);
        assert_eq!(got[..2], [("Gemm".to_string(), None), ("Relu".to_string(), None)], "{got:?}");
    };
    let d = tempfile::tempdir().unwrap();
    kept(mlp().output("h", F32, &[2, 3]), d.path());
    let d = tempfile::tempdir().unwrap();
    kept(mlp().node("Neg", &["h"], &["n"], vec![]).output("n", F32, &[2, 3]), d.path());
}

/// Conv -> BatchNormalization -> Relu, inference: x [1, 2, 3, 3], W [2, 2, 1, 1], no bias.
fn conv_bn_relu() -> ModelBuilder {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 2, 3, 3])
        .init("w", &[2, 2, 1, 1], &[1.0, 2.0, 3.0, 4.0])
        .init("gamma", &[2], &[2.0, 3.0])
        .init("beta", &[2], &[0.5, -1.0])
        .init("mean", &[2], &[1.0, 2.0])
        .init("var", &[2], &[4.0, 1.0])
        .node("Conv", &["x", "w"], &["c"], vec![])
        .node("BatchNormalization", &["c", "gamma", "beta", "mean", "var"], &["n"], vec![attr_float("epsilon", 0.0)])
        .node("Relu", &["n"], &["y"], vec![])
        .output("y", F32, &[1, 2, 3, 3]);
    b
}

fn f32_values(g: &deploygen::ir::Graph, t: deploygen::ir::TensorId) -> Vec<f32> {
    g.tensor(t).data.as_ref().and_then(|d| d.to_f32()).expect("a constant")
}

/// The BatchNorm folds into the Conv's weight and a new bias (scale
/// gamma / sqrt(var) = [1, 3], shift beta - mean * scale = [-0.5, -7]),
/// then the Relu fuses: one Conv is left. Not when the Conv's output is
/// needed too, nor when its weight is another node's as well.
#[test]
fn a_batchnorm_folds_into_the_conv_before_it() {
    let dir = tempfile::tempdir().unwrap();
    conv_bn_relu().write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    let g = &m.graph;
    assert_eq!(ops_and_acts(g), [("Conv".to_string(), Some(1))]);
    let conv = g.nodes().next().unwrap().1;
    assert_eq!(conv.output(0).map(|t| g.name_of(t)), Some("y"));
    assert_eq!(f32_values(g, conv.input(1).unwrap()), [1.0, 2.0, 9.0, 12.0]);
    assert_eq!(f32_values(g, conv.input(2).expect("a folded bias")), [-0.5, -7.0]);

    let kept = |b: &mut ModelBuilder| {
        let d = tempfile::tempdir().unwrap();
        b.write(d.path(), "network.onnx");
        let m = deploygen::load(d.path()).unwrap();
        let ops: Vec<String> = m.graph.nodes().map(|(_, n)| n.op.clone()).collect();
        assert!(ops.contains(&"BatchNormalization".to_string()), "{ops:?}");
        let w = m.graph.id("w").unwrap();
        assert_eq!(f32_values(&m.graph, w), [1.0, 2.0, 3.0, 4.0], "the weight changed");
    };
    kept(conv_bn_relu().output("c", F32, &[1, 2, 3, 3]));
    kept(conv_bn_relu().node("Conv", &["x", "w"], &["c2"], vec![]).output("c2", F32, &[1, 2, 3, 3]));
}

#[test]
fn schedule_is_topological_with_file_order_ties() {
    // Nodes written out of order: the consumer first.
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[4])
        .node("Relu", &["a"], &["y"], vec![])
        .node("Relu", &["x"], &["a"], vec![])
        .node("Relu", &["x"], &["z"], vec![])
        .output("y", F32, &[4])
        .output("z", F32, &[4]);
    let dir = tempfile::tempdir().unwrap();
    let g = read_typed(&b.write(dir.path(), "m.onnx")).unwrap();
    let order: Vec<&str> = g.nodes().map(|(_, n)| n.name.as_str()).collect();
    // Relu_1 must precede Relu_0; Relu_2 is free but comes after Relu_1's
    // dependant only if file order says so: 0 < 2, so 1, 0, 2.
    assert_eq!(order, ["Relu_1", "Relu_0", "Relu_2"]);
}

#[test]
fn shape_rules_cover_conv_pool_gemm_reshape() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 3, 16, 16])
        .init("w", &[8, 3, 3, 3], &[0.0; 216])
        .init("dw", &[8, 1, 3, 3], &[0.0; 72])
        .init_i64("shape", &[1, -1])
        .init("fc", &[10, 128], &vec![0.0; 1280])
        .node("Conv", &["x", "w"], &["c"], vec![attr_ints("pads", &[1, 1, 1, 1]), attr_ints("strides", &[2, 2])])
        .node("Conv", &["c", "dw"], &["d"], vec![attr_int("group", 8), attr_str("auto_pad", "SAME_UPPER")])
        .node("MaxPool", &["d"], &["p", "idx"], vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("strides", &[2, 2])])
        .node("Reshape", &["p", "shape"], &["f"], vec![])
        .node("Gemm", &["f", "fc"], &["y"], vec![attr_int("transB", 1)])
        .output("y", F32, &[1, 10]);
    let dir = tempfile::tempdir().unwrap();
    let g = read_typed(&b.write(dir.path(), "m.onnx")).unwrap();
    assert_eq!(shape_of(&g, "c"), [1, 8, 8, 8]);
    assert_eq!(shape_of(&g, "d"), [1, 8, 8, 8]);
    assert_eq!(shape_of(&g, "p"), [1, 8, 4, 4]);
    assert_eq!(g.tensor(g.id("idx").unwrap()).ty.dtype, DType::I64);
    assert_eq!(shape_of(&g, "f"), [1, 8 * 4 * 4]);
    assert_eq!(shape_of(&g, "y"), [1, 10]);
}

#[test]
fn batched_matmul_and_gemm_broadcast() {
    let mut b = ModelBuilder::new();
    b.input("a", F32, &[2, 1, 5, 4])
        .input("b", F32, &[3, 4, 6])
        .init("w", &[6, 7], &[0.0; 42])
        .node("MatMul", &["a", "b"], &["m"], vec![])
        .node("Gemm", &["m", "w"], &["y"], vec![])
        .output("y", F32, &[2, 3, 5, 7]);
    let dir = tempfile::tempdir().unwrap();
    let g = read_typed(&b.write(dir.path(), "m.onnx")).unwrap();
    assert_eq!(shape_of(&g, "m"), [2, 3, 5, 6]);
    assert_eq!(shape_of(&g, "y"), [2, 3, 5, 7]);
}

#[test]
fn static_shape_subgraph_folds_away() {
    // Reshape(x, Concat(Gather(Shape(x), 0), [-1])) == Flatten
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 3, 4])
        .init_i64("zero", &[0])
        .init_i64("minus1", &[-1])
        .node("Shape", &["x"], &["s"], vec![])
        .node("Gather", &["s", "zero"], &["n"], vec![attr_int("axis", 0)])
        .node("Concat", &["n", "minus1"], &["target"], vec![attr_int("axis", 0)])
        .node("Reshape", &["x", "target"], &["y"], vec![])
        .output("y", F32, &[2, 12]);
    let dir = tempfile::tempdir().unwrap();
    let g = read_typed(&b.write(dir.path(), "m.onnx")).unwrap();
    assert_eq!(g.onnx_nodes, 4);
    assert_eq!(g.node_count(), 1, "Shape, Gather and Concat fold; Reshape of a runtime input stays");
    let target = g.tensor(g.id("target").unwrap()).data.as_ref().unwrap();
    assert_eq!(target.to_i64().unwrap(), [2, -1]);
    assert_eq!(shape_of(&g, "y"), [2, 12]);
}

#[test]
fn declared_shape_that_contradicts_the_rule_is_an_error() {
    let mut b = mlp();
    b.graph.output[0] = value("y", F32, &[2, 5]);
    let dir = tempfile::tempdir().unwrap();
    let err = read_typed(&b.write(dir.path(), "m.onnx")).unwrap_err().to_string();
    assert!(err.contains("Relu_1") && err.contains("[2, 5]") && err.contains("[2, 3]"), "{err}");
}

#[test]
fn typed_fields_and_every_attribute_kind_import() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[3]);
    b.graph.initializer.push(pb::TensorProto {
        name: Some("k".into()),
        dims: vec![3],
        data_type: Some(F32),
        float_data: vec![1.0, 2.0, 3.0],
        ..Default::default()
    });
    b.graph.initializer.push(pb::TensorProto {
        name: Some("flags".into()),
        dims: vec![2],
        data_type: Some(BOOL),
        int32_data: vec![1, 0],
        ..Default::default()
    });
    let attrs = vec![
        attr_float("f", 1.5),
        attr_int("i", 3),
        attr_str("s", "hello"),
        pb::AttributeProto { name: Some("fs".into()), r#type: Some(6), floats: vec![1.0, 2.0], ..Default::default() },
        pb::AttributeProto {
            name: Some("ss".into()),
            r#type: Some(8),
            strings: vec![b"a".to_vec()],
            ..Default::default()
        },
        pb::AttributeProto {
            name: Some("t".into()),
            r#type: Some(4),
            t: Some(pb::TensorProto { dims: vec![1], data_type: Some(I64), int64_data: vec![7], ..Default::default() }),
            ..Default::default()
        },
        pb::AttributeProto {
            name: Some("g".into()),
            r#type: Some(5),
            g: Some(pb::GraphProto { name: Some("body".into()), ..Default::default() }),
            ..Default::default()
        },
        // Old files leave the type UNDEFINED: inferred from the field.
        pb::AttributeProto { name: Some("legacy".into()), ints: vec![4, 5], ..Default::default() },
    ];
    b.node("Add", &["x", "k"], &["y"], attrs).output("y", F32, &[3]);
    let dir = tempfile::tempdir().unwrap();
    let g = read_typed(&b.write(dir.path(), "m.onnx")).unwrap();
    let k = g.tensor(g.id("k").unwrap()).data.as_ref().unwrap();
    assert_eq!(k.to_f32().unwrap(), [1.0, 2.0, 3.0]);
    let flags = g.tensor(g.id("flags").unwrap()).data.as_ref().unwrap();
    assert_eq!(flags.to_i64().unwrap(), [1, 0]);
    let (_, node) = g.nodes().next().unwrap();
    use deploygen::ir::Attr;
    assert_eq!(node.attrs["f"], Attr::Float(1.5));
    assert_eq!(node.attrs["s"], Attr::String("hello".into()));
    assert_eq!(node.attrs["legacy"], Attr::Ints(vec![4, 5]));
    assert!(matches!(&node.attrs["t"], Attr::Tensor(t) if t.to_i64().unwrap() == [7]));
    assert!(matches!(&node.attrs["g"], Attr::Graph { name, .. } if name == "body"));
}

fn external(location: &str) -> pb::TensorProto {
    let kv = |k: &str, v: &str| pb::StringStringEntryProto { key: Some(k.into()), value: Some(v.into()) };
    pb::TensorProto {
        name: Some("w".into()),
        dims: vec![2],
        data_type: Some(F32),
        data_location: Some(1),
        external_data: vec![kv("location", location), kv("offset", "4"), kv("length", "8")],
        ..Default::default()
    }
}

#[test]
fn external_data_is_read_relative_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = vec![0xAA; 4];
    bytes.extend(1.0f32.to_le_bytes());
    bytes.extend(2.0f32.to_le_bytes());
    std::fs::write(dir.path().join("weights.bin"), bytes).unwrap();
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2]).node("Add", &["x", "w"], &["y"], vec![]).output("y", F32, &[2]);
    b.graph.initializer.push(external("weights.bin"));
    // Load from another working directory: the path must be relative to the model.
    let g = read_typed(&b.write(dir.path(), "m.onnx")).unwrap();
    let w = g.tensor(g.id("w").unwrap()).data.as_ref().unwrap();
    assert_eq!(w.to_f32().unwrap(), [1.0, 2.0]);
}

#[test]
fn sequence_inputs_are_tolerated() {
    let mut b = ModelBuilder::new();
    let seq = pb::ValueInfoProto {
        name: Some("params".into()),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::SequenceType(Box::new(pb::type_proto::Sequence {
                elem_type: Some(Box::new(pb::TypeProto {
                    value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                        elem_type: Some(F32),
                        shape: None,
                    })),
                    ..Default::default()
                })),
            }))),
            ..Default::default()
        }),
        ..Default::default()
    };
    b.input("learning_rate", F32, &[1]);
    b.graph.input.push(seq.clone());
    let mut grads = seq;
    grads.name = Some("gradients".into());
    b.graph.input.push(grads);
    b.node_in("SGDOptimizerV2", "com.microsoft", &["learning_rate", "params", "gradients"], &["done"], vec![]).output(
        "done",
        BOOL,
        &[1],
    );
    let dir = tempfile::tempdir().unwrap();
    let g = read_typed(&b.write(dir.path(), "optimizer.onnx")).unwrap();
    assert!(g.tensor(g.id("params").unwrap()).sequence);
}

/// A training-artifacts pair in the shape onnxruntime writes: parameters as
/// graph inputs, accumulation buffers, lazy_reset_grad, a separate optimizer.
fn artifacts(dir: &std::path::Path) {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 4])
        .input("labels", I64, &[2])
        .input("w", F32, &[3, 4])
        .input("b", F32, &[3])
        .input("w_grad.accumulation.buffer", F32, &[3, 4])
        .input("b_grad.accumulation.buffer", F32, &[3])
        .input("lazy_reset_grad", BOOL, &[1])
        .node("Gemm", &["x", "w", "b"], &["logits"], vec![attr_int("transB", 1)])
        .node(
            "SoftmaxCrossEntropyLoss",
            &["logits", "labels"],
            &["loss", "log_prob"],
            vec![attr_str("reduction", "mean")],
        )
        .init("one", &[], &[1.0])
        .node_in("SoftmaxCrossEntropyLossGrad", "com.microsoft", &["one", "log_prob", "labels"], &["dlogits"], vec![])
        .node("Gemm", &["dlogits", "x"], &["w_grad"], vec![attr_int("transA", 1)])
        .node("ReduceSum", &["dlogits", "axes0"], &["b_grad"], vec![attr_int("keepdims", 0)])
        .init_i64("axes0", &[0])
        .node_in(
            "InPlaceAccumulatorV2",
            "com.microsoft",
            &["w_grad.accumulation.buffer", "w_grad", "lazy_reset_grad"],
            &["w_grad.accumulation.out"],
            vec![],
        )
        .node_in(
            "InPlaceAccumulatorV2",
            "com.microsoft",
            &["b_grad.accumulation.buffer", "b_grad", "lazy_reset_grad"],
            &["b_grad.accumulation.out"],
            vec![],
        )
        .output("loss", F32, &[])
        .output("w_grad.accumulation.out", BOOL, &[1])
        .output("b_grad.accumulation.out", BOOL, &[1]);
    b.write(dir, "training_model.onnx");
    let mut o = ModelBuilder::new();
    o.input("w", F32, &[3, 4])
        .input("w_grad.accumulation.buffer", F32, &[3, 4])
        .input("b", F32, &[3])
        .input("b_grad.accumulation.buffer", F32, &[3])
        .node("SGD", &["w", "w_grad.accumulation.buffer"], &["w_updated"], vec![attr_float("lr", 0.1)])
        .node("SGD", &["b", "b_grad.accumulation.buffer"], &["b_updated"], vec![attr_float("lr", 0.1)])
        .output("w_updated", F32, &[3, 4])
        .output("b_updated", F32, &[3]);
    o.write(dir, "optimizer_model.onnx");
}

#[test]
fn training_artifacts_roles_pair_by_name() {
    let dir = tempfile::tempdir().unwrap();
    artifacts(dir.path());
    let m = deploygen::load(dir.path()).unwrap();
    assert_eq!(m.roles.flavor, Flavor::TrainingArtifacts);
    assert!(m.optimizer.is_some());
    let r = &m.roles;
    assert_eq!(r.role("x"), Some(Role::Data));
    assert_eq!(r.role("labels"), Some(Role::Labels));
    assert_eq!(r.role("w"), Some(Role::Param));
    assert_eq!(r.role("w_grad.accumulation.buffer"), Some(Role::GradBuffer));
    assert_eq!(r.role("lazy_reset_grad"), Some(Role::LazyReset));
    assert_eq!(r.role("w_grad.accumulation.out"), Some(Role::GradFlag));
    assert_eq!(r.loss.as_deref(), Some("loss"));
    let names: Vec<&str> = r.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["w", "b"]);
    assert_eq!(r.params[1].grad_buffer.as_deref(), Some("b_grad.accumulation.buffer"));
    assert_eq!(r.params[1].updated.as_deref(), Some("b_updated"));
}

#[test]
fn single_graph_training_step_roles() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 4])
        .input("labels", I64, &[2])
        .init("w", &[3, 4], &[0.1; 12])
        .node("Gemm", &["x", "w"], &["logits"], vec![attr_int("transB", 1)])
        .node("SoftmaxCrossEntropyLoss", &["logits", "labels"], &["log_prob"], vec![])
        .node_in("SoftmaxCrossEntropyLossGrad", "com.microsoft", &["log_prob", "labels"], &["dlogits"], vec![])
        .node("Gemm", &["dlogits", "x"], &["w_grad"], vec![attr_int("transA", 1)])
        .node("SGD", &["w", "w_grad"], &["w_updated"], vec![attr_float("lr", 0.01)])
        .output("w_updated", F32, &[3, 4]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    assert_eq!(m.roles.flavor, Flavor::TrainingStep);
    assert_eq!(m.roles.role("labels"), Some(Role::Labels));
    assert_eq!(m.roles.role("w_updated"), Some(Role::UpdatedParam));
    // Deeploy's log-prob-only loss: no loss value in this graph.
    assert_eq!(m.roles.loss, None);
    assert_eq!(shape_of(&m.graph, "log_prob"), [2, 3]);
}

// ---- the command line and bad input -------------------------------------

fn deploygen() -> Command {
    Command::cargo_bin("deploygen").unwrap()
}

/// Runs `inspect` on `path` and checks exit code 2, no panic, and that
/// stderr contains every needle.
fn rejects(path: &std::path::Path, needles: &[&str]) {
    let out = deploygen().arg("inspect").arg(path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "missing {n:?} in: {stderr}");
    }
}

#[test]
fn missing_file() {
    rejects(std::path::Path::new("/nonexistent/model.onnx"), &["cannot read", "/nonexistent/model.onnx"]);
}

#[test]
fn folder_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    rejects(dir.path(), &["holds no model", "network.onnx"]);
}

#[test]
fn not_protobuf() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("model.onnx");
    std::fs::write(&p, "this is a text file, not a model\n").unwrap();
    rejects(&p, &["model.onnx", "not a readable ONNX model"]);
    std::fs::write(&p, b"").unwrap();
    rejects(&p, &["model.onnx", "no graph"]);
}

#[test]
fn truncated_files_are_rejected_at_every_length() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = {
        let mut b = mlp();
        b.init("big", &[64], &[1.0; 64]);
        b.bytes()
    };
    let p = dir.path().join("cut.onnx");
    // Every prefix either imports or fails cleanly; never a panic.
    for len in 0..bytes.len() {
        std::fs::write(&p, &bytes[..len]).unwrap();
        if let Err(e) = read_typed(&p) {
            assert!(!e.to_string().is_empty());
        }
    }
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    rejects(&p, &["cut.onnx"]);
}

#[test]
fn cycle_names_its_nodes() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[4])
        .node("Add", &["x", "c"], &["a"], vec![])
        .node("Relu", &["a"], &["bb"], vec![])
        .node("Relu", &["bb"], &["c"], vec![])
        .output("c", F32, &[4]);
    let dir = tempfile::tempdir().unwrap();
    rejects(&b.write(dir.path(), "m.onnx"), &["cycle", "'Add_0' (Add)", "'Relu_1' (Relu)", "'Relu_2' (Relu)"]);
}

/// A misspelt operator: the message suggests the supported spelling, and
/// the list of supported operators is wrapped (no line of a hundred names).
#[test]
fn unknown_operator_suggests_a_spelling_and_wraps_the_list() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[4]).node("relu", &["x"], &["y"], vec![]).output("y", F32, &[4]);
    let dir = tempfile::tempdir().unwrap();
    let out = deploygen().arg("inspect").arg(b.write(dir.path(), "m.onnx")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did you mean 'Relu'?"), "{stderr}");
    assert!(stderr.lines().all(|l| l.chars().count() < 120), "a line of 120 or more columns:\n{stderr}");
    assert!(stderr.lines().count() > 3, "{stderr}");
}

#[test]
fn unknown_operator_names_node_op_domain_opset_and_lists_supported() {
    let mut b = ModelBuilder::new();
    b.opsets.push(("ai.onnx.ml".into(), 3));
    b.input("x", F32, &[4]).node_in("TreeEnsembleRegressor", "ai.onnx.ml", &["x"], &["y"], vec![]).output(
        "y",
        F32,
        &[4],
    );
    let dir = tempfile::tempdir().unwrap();
    rejects(
        &b.write(dir.path(), "m.onnx"),
        &[
            "'TreeEnsembleRegressor_0'",
            "'TreeEnsembleRegressor'",
            "domain 'ai.onnx.ml'",
            "opset 3",
            "supported operators (",
            "Conv",
            "SoftmaxCrossEntropyLossGrad",
        ],
    );
}

#[test]
fn known_operator_in_an_unexpected_domain_is_accepted() {
    // GeluGrad and SGD appear in the default domain in the wild.
    let mut b = ModelBuilder::new();
    b.input("dy", F32, &[4]).input("x", F32, &[4]).node("GeluGrad", &["dy", "x"], &["dx"], vec![]).output(
        "dx",
        F32,
        &[4],
    );
    let dir = tempfile::tempdir().unwrap();
    let g = read_typed(&b.write(dir.path(), "m.onnx")).unwrap();
    assert_eq!(g.nodes().next().unwrap().1.domain, "");
}

#[test]
fn dangling_reference_names_node_and_tensor() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[4]).node("Add", &["x", "ghost"], &["y"], vec![]).output("y", F32, &[4]);
    let dir = tempfile::tempdir().unwrap();
    rejects(&b.write(dir.path(), "m.onnx"), &["'Add_0' (Add)", "'ghost'"]);
}

#[test]
fn missing_external_data_names_tensor_and_file() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2]).node("Add", &["x", "w"], &["y"], vec![]).output("y", F32, &[2]);
    b.graph.initializer.push(external("weights.bin"));
    let dir = tempfile::tempdir().unwrap();
    rejects(&b.write(dir.path(), "m.onnx"), &["'w'", "weights.bin", "cannot open"]);
    // Present but too short.
    std::fs::write(dir.path().join("weights.bin"), [0u8; 6]).unwrap();
    rejects(&dir.path().join("m.onnx"), &["'w'", "weights.bin", "bytes 4..12", "has 6"]);
}

#[test]
fn initializer_with_wrong_byte_count() {
    let mut b = mlp();
    b.graph.initializer[0].raw_data.as_mut().unwrap().truncate(10);
    let dir = tempfile::tempdir().unwrap();
    rejects(&b.write(dir.path(), "m.onnx"), &["initializer 'w'", "10 bytes", "needs 48"]);
}

#[test]
fn inspect_json_and_dot() {
    let dir = tempfile::tempdir().unwrap();
    artifacts(dir.path());
    let dot = dir.path().join("g.dot");
    let out = deploygen().args(["inspect", "--format", "json", "--dot"]).arg(&dot).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["training"], true);
    assert_eq!(j["nodes"], 7);
    assert_eq!(j["ops"]["InPlaceAccumulatorV2"], 2);
    assert_eq!(j["domains"]["com.microsoft"], 3);
    assert_eq!(j["inputs"][1]["name"], "labels");
    assert_eq!(j["inputs"][1]["role"], "labels");
    assert_eq!(j["inputs"][1]["dtype"], "i64");
    assert_eq!(j["inputs"][0]["shape"], serde_json::json!([2, 4]));
    // w and b (graph inputs) plus the two small initializers.
    assert_eq!(j["param_bytes"], 48 + 12 + 4 + 8);
    assert_eq!(j["optimizer"]["ops"]["SGD"], 2);
    let dot = std::fs::read_to_string(dot).unwrap();
    assert!(dot.starts_with("digraph") && dot.contains("InPlaceAccumulatorV2") && dot.trim_end().ends_with('}'));
    // Text mode is a summary a person reads.
    deploygen()
        .arg("inspect")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("training artifacts").and(predicate::str::contains("lazy_reset_grad")));
}

#[test]
fn conformance_models_inspect_as_specified() {
    for (name, nodes, inits, outs) in [("CCT2_LP", 70, 46, 2), ("CCT2_FT1", 127, 62, 10)] {
        let Some(path) = conformance("conformance_models_inspect_as_specified", name) else { continue };
        let out = deploygen().args(["inspect", "--format", "json"]).arg(&path).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["nodes"], nodes, "{name}");
        assert_eq!(j["initializers"], inits, "{name}");
        assert_eq!(j["training"], true);
        assert_eq!(j["inputs"][0]["name"], "input");
        assert_eq!(j["inputs"][0]["shape"], serde_json::json!([1, 3, 32, 32]));
        assert_eq!(j["inputs"][0]["dtype"], "f32");
        assert_eq!(j["inputs"][0]["role"], "data");
        assert_eq!(j["inputs"][1]["name"], "labels");
        assert_eq!(j["inputs"][1]["shape"], serde_json::json!([1]));
        assert_eq!(j["inputs"][1]["dtype"], "i64");
        assert_eq!(j["inputs"][1]["role"], "labels");
        let updated = j["outputs"].as_array().unwrap().iter().filter(|o| o["role"] == "updated_param").count();
        assert_eq!(updated, outs, "{name}");
    }
}

/// Role detection agrees with what the zoo generator says it built.
#[test]
fn zoo_roles_match_the_generator_manifest() {
    let root = root().join("models");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("manifest.json")).unwrap()).unwrap();
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect()).unwrap_or_default()
    };
    let mut checked = 0;
    for (name, facts) in manifest.as_object().unwrap() {
        let m = deploygen::load(&root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let g = &m.graph;
        let r = &m.roles;
        let with = |roles: &[Role]| -> Vec<String> {
            g.inputs
                .iter()
                .map(|&t| g.name_of(t).to_string())
                .filter(|n| r.role(n).is_some_and(|x| roles.contains(&x)))
                .collect()
        };
        if facts["kind"] == "inference" {
            assert_eq!(r.flavor, Flavor::Inference, "{name}");
            continue;
        }
        let flavor = if facts["flavor"] == "artifacts" { Flavor::TrainingArtifacts } else { Flavor::TrainingStep };
        assert_eq!(r.flavor, flavor, "{name}");
        let data = names(&facts["data_inputs"]);
        assert_eq!(with(&[Role::Data, Role::Labels]), data, "{name}: data inputs");
        // Every zoo training model has a target: the last data input.
        assert_eq!(r.role(data.last().unwrap()), Some(Role::Labels), "{name}: labels");
        let params: Vec<String> = r.params.iter().map(|p| p.name.clone()).collect();
        assert_eq!(params, names(&facts["trainable"]), "{name}: trainable");
        if flavor == Flavor::TrainingArtifacts {
            assert_eq!(with(&[Role::Frozen]), names(&facts["frozen"]), "{name}: frozen");
        }
        assert_eq!(r.loss.as_deref(), facts["loss_output"].as_str(), "{name}: loss");
        assert!(
            r.params.iter().all(|p| p.updated.is_some()
                || m.optimizer.as_ref().is_some_and(|o| o.nodes().any(|(_, n)| n.op == "SGDOptimizerV2"))),
            "{name}: every param has an update path"
        );
        checked += 1;
    }
    assert!(checked >= 6, "the zoo has at least six training models");
}

/// `deploygen inspect … | head -1` closes the pipe early: no panic, exit 0.
#[test]
fn a_reader_closing_the_pipe_early_is_not_a_panic() {
    use std::io::Read;
    use std::process::{Command as Std, Stdio};
    let mut child = Std::new(assert_cmd::cargo::cargo_bin("deploygen"))
        // The JSON report with a plan is larger than a pipe buffer, so the
        // write must meet the closed pipe.
        .args(["inspect", "--format", "json", "--platform", "GAP9", "--default-mem", "L2"])
        .arg(zoo("resnet8"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then drop: the pipe closes
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
