//! Forms of the ONNX backend test cases (tests/it/onnx_conformance.rs), each
//! on a small model built here: exact comparison of integer outputs,
//! constant graph outputs, NaN references, the ceil-mode pool shape, the
//! attributes of an older opset's schema, SAME padding, run-time Gather
//! indices, the forms of SoftmaxCrossEntropyLoss, and the operators added
//! with the conformance cases (ConstantOfShape, Range, Tile, Mod, Not,
//! ArgMax, LogSoftmax, Resize, int32 arithmetic, Pad's wrap mode), and
//! zero-size tensors.

use crate::common;

use std::path::Path;
use std::process::Command;

use crate::common::{attr_float, attr_int, attr_ints, attr_str, ModelBuilder, BOOL, F32, I64};
use deploygen::bind::npz;
use deploygen::ir::{DType, TensorData};
use deploygen::verify::{generate_case, run_case, Case, Kind, Outcome, Stage};

fn have_gcc() -> bool {
    Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn write_npz(path: &Path, arrays: &[(&str, TensorData)]) {
    let refs: Vec<(&str, &TensorData)> = arrays.iter().map(|(k, v)| (*k, v)).collect();
    std::fs::write(path, npz::write_npz(&refs).unwrap()).unwrap();
}

fn run(dir: &Path) -> Outcome {
    let mut c = Case::new(dir, "onnx_forms", "host", "L2", Kind::detect(dir));
    c.tolerance = Some(1e-5);
    c.cache = Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache"));
    run_case(&c, &generate_case)
}

fn folder(b: &ModelBuilder, inputs: &[(&str, TensorData)], outputs: &[(&str, TensorData)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    write_npz(&dir.path().join("inputs.npz"), inputs);
    write_npz(&dir.path().join("outputs.npz"), outputs);
    dir
}

fn f32s(shape: &[usize], v: &[f32]) -> TensorData {
    TensorData::from_f32(shape.to_vec(), v)
}

fn i64s(shape: &[usize], v: &[i64]) -> TensorData {
    TensorData::from_i64(shape.to_vec(), v)
}

/// MaxPool's i64 Indices output is compared exactly: right indices
/// pass, one wrong index is one error.
#[test]
fn integer_outputs_are_compared_exactly() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, 2, 2])
        .node("MaxPool", &["x"], &["y", "i"], vec![attr_ints("kernel_shape", &[2, 2])])
        .output("y", F32, &[1, 1, 1, 1])
        .output("i", I64, &[1, 1, 1, 1]);
    let x = f32s(&[1, 1, 2, 2], &[1.0, 4.0, 2.0, 3.0]);
    let y = f32s(&[1, 1, 1, 1], &[4.0]);
    let dir = folder(&b, &[("x", x.clone())], &[("y", y.clone()), ("i", i64s(&[1, 1, 1, 1], &[1]))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(2), "{}", o.output);
    assert!(!o.output.contains("[not compared]"), "{}", o.output);
    let dir = folder(&b, &[("x", x)], &[("y", y), ("i", i64s(&[1, 1, 1, 1], &[2]))]);
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(1), "{}", o.output);
    assert!(o.output.contains("computed=1 ref=2"), "{}", o.output);
}

/// A graph output that folds away (Shape of a static input) gets a
/// buffer filled from its value, and is compared.
#[test]
fn folded_graph_outputs_have_a_buffer() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 3]).node("Shape", &["x"], &["s"], vec![]).output("s", I64, &[2]);
    let dir = folder(&b, &[("x", f32s(&[2, 3], &[0.0; 6]))], &[("s", i64s(&[2], &[2, 3]))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(2));
}

/// sqrt(-1) is NaN: a NaN reference matches it; a number does not.
#[test]
fn nan_matches_a_nan_reference_only() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2]).node("Sqrt", &["x"], &["y"], vec![]).output("y", F32, &[2]);
    let x = f32s(&[2], &[-1.0, 4.0]);
    let dir = folder(&b, &[("x", x.clone())], &[("y", f32s(&[2], &[f32::NAN, 2.0]))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    let dir = folder(&b, &[("x", x)], &[("y", f32s(&[2], &[0.0, 2.0]))]);
    let o = run(dir.path());
    assert_eq!(o.errors, Some(1), "{}", o.output);
}

/// ceil_mode: the last window would start in the trailing padding, so it
/// is dropped: [1, 1, 1, 1], as ONNX and onnxruntime compute.
#[test]
fn ceil_mode_drops_a_window_that_starts_in_the_padding() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, 2, 2])
        .node(
            "MaxPool",
            &["x"],
            &["y"],
            vec![
                attr_ints("kernel_shape", &[2, 2]),
                attr_ints("strides", &[2, 2]),
                attr_ints("pads", &[0, 0, 1, 1]),
                attr_int("ceil_mode", 1),
            ],
        )
        .output("y", F32, &[1, 1, 1, 1]);
    let dir = tempfile::tempdir().unwrap();
    let p = b.write(dir.path(), "network.onnx");
    let g = common::read_typed(&p).unwrap();
    let y = g.id("y").unwrap();
    assert_eq!(g.tensor(y).ty.shape(), Some(vec![1, 1, 1, 1]));
}

fn legacy_gemm(opset: i64, broadcast_axis: bool) -> ModelBuilder {
    let mut b = ModelBuilder::new();
    b.opsets = vec![("".into(), opset)];
    let mut attrs = vec![attr_int("broadcast", 1)];
    if broadcast_axis {
        attrs.push(attr_int("axis", 1));
    }
    b.input("x", F32, &[1, 2])
        .init("w", &[2, 2], &[1.0, 0.0, 0.0, 1.0])
        .init("c", &[2], &[1.0, 2.0])
        .node("Gemm", &["x", "w", "c"], &["g"], vec![attr_int("broadcast", 1)])
        .node("Add", &["g", "c"], &["y"], attrs)
        .output("y", F32, &[1, 2]);
    b
}

fn imported(b: &ModelBuilder) -> deploygen::Result<()> {
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let mut m = deploygen::import::load(&dir.path().join("network.onnx"))?;
    deploygen::import::check_attributes(&mut m, deploygen::import::UnknownAttrs::Refuse)
}

/// Attributes are checked against the schema of the model's opset:
/// opset 6's `broadcast` is accepted (numpy broadcasting computes its
/// trailing-aligned form), its axis-aligned `axis` is refused by name,
/// and at opset 7 `broadcast` is not defined.
#[test]
fn attributes_of_the_models_opset_are_accepted() {
    imported(&legacy_gemm(6, false)).unwrap();
    let e = imported(&legacy_gemm(6, true)).unwrap_err().to_string();
    assert!(e.contains("'axis' = 1 aligns the second operand"), "{e}");
    let e = imported(&legacy_gemm(7, false)).unwrap_err().to_string();
    assert!(e.contains("attribute 'broadcast' is not defined by the schema of Gemm"), "{e}");
}

/// `is_test = 1` of opset 6 BatchNormalization is inference; 0 is refused.
#[test]
fn batch_norm_is_test_of_opset_6() {
    let bn = |is_test: i64| {
        let mut b = ModelBuilder::new();
        b.opsets = vec![("".into(), 6)];
        b.input("x", F32, &[1, 2, 1, 1])
            .init("s", &[2], &[1.0, 1.0])
            .init("b", &[2], &[0.0, 0.0])
            .init("m", &[2], &[0.0, 0.0])
            .init("v", &[2], &[1.0, 1.0])
            .node("BatchNormalization", &["x", "s", "b", "m", "v"], &["y"], vec![attr_int("is_test", is_test)])
            .output("y", F32, &[1, 2, 1, 1]);
        b
    };
    imported(&bn(1)).unwrap();
    let e = imported(&bn(0)).unwrap_err().to_string();
    assert!(e.contains("'is_test' other than 1"), "{e}");
}

/// auto_pad SAME_UPPER becomes explicit pads: a 3x3 average over a 2x2
/// input without counting the padding is the mean of each window's part.
#[test]
fn same_upper_padding_runs() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, 2, 2])
        .node(
            "AveragePool",
            &["x"],
            &["y"],
            vec![attr_ints("kernel_shape", &[2, 2]), attr_str("auto_pad", "SAME_UPPER")],
        )
        .output("y", F32, &[1, 1, 2, 2]);
    let x = f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let y = f32s(&[1, 1, 2, 2], &[2.5, 3.0, 3.5, 4.0]);
    let dir = folder(&b, &[("x", x)], &[("y", y)]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
}

/// Gather with indices fed at run time (token ids), a negative one
/// counting from the end.
#[test]
fn gather_reads_runtime_indices() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("ids", I64, &[3])
        .init("table", &[3, 2], &[0.0, 1.0, 10.0, 11.0, 20.0, 21.0])
        .node("Gather", &["table", "ids"], &["y"], vec![])
        .output("y", F32, &[3, 2]);
    let y = f32s(&[3, 2], &[20.0, 21.0, 0.0, 1.0, 20.0, 21.0]);
    let dir = folder(&b, &[("ids", i64s(&[3], &[2, 0, -1]))], &[("y", y)]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
}

/// SoftmaxCrossEntropyLoss with class weights, reduction 'none', and no
/// log_prob output: the per-sample weighted losses.
#[test]
fn softmax_cross_entropy_weights_none_without_log_prob() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 2])
        .input("l", I64, &[2])
        .init("w", &[2], &[1.0, 3.0])
        .node("SoftmaxCrossEntropyLoss", &["x", "l", "w"], &["y"], vec![attr_str("reduction", "none")])
        .output("y", F32, &[2]);
    let x = [0.0f32, 0.0, 1.0, 2.0];
    let ln2 = 2f32.ln();
    let lse = (1f32.exp() + 2f32.exp()).ln();
    let loss = f32s(&[2], &[ln2 * 3.0, lse - 1.0]);
    let dir = folder(&b, &[("x", f32s(&[2, 2], &x)), ("l", i64s(&[2], &[1, 0]))], &[("y", loss)]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(2));
}

/// Deeploy's RMSNorm spells `epsilon` as `eps`; its value is used.
#[test]
fn rmsnorm_eps_is_epsilon() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 2])
        .init("s", &[2], &[1.0, 1.0])
        .node("RMSNorm", &["x", "s"], &["y"], vec![attr_float("eps", 2.0), attr_int("axis", -1)])
        .output("y", F32, &[1, 2]);
    let r = 1.0 / (2.5f32 + 2.0).sqrt();
    let dir = folder(&b, &[("x", f32s(&[1, 2], &[1.0, 2.0]))], &[("y", f32s(&[1, 2], &[r, 2.0 * r]))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
}

/// The graph inputs of a lowered model folder, and what was pinned.
fn lowered(dir: &Path) -> deploygen::Result<deploygen::ir::Model> {
    deploygen::pipeline::lowered(
        &dir.join("network.onnx"),
        &Default::default(),
        deploygen::import::UnknownAttrs::Refuse,
    )
}

/// A Slice whose `starts` is a graph input (as ONNX's backend cases give
/// it) is generated for the value inputs.npz holds: starts = 1 keeps the
/// last two of three rows. With starts = 0 the output has three rows,
/// which the two-row reference does not bind to.
#[test]
fn shape_operands_fed_as_graph_inputs_take_the_test_datas_value() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[3, 2])
        .input("starts", I64, &[1])
        .init_i64("ends", &[3])
        .node("Slice", &["x", "starts", "ends"], &["y"], vec![])
        .output("y", F32, &[2, 2]);
    let x = f32s(&[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let y = f32s(&[2, 2], &[2.0, 3.0, 4.0, 5.0]);
    let dir = folder(&b, &[("x", x.clone()), ("starts", i64s(&[1], &[1]))], &[("y", y.clone())]);
    let m = lowered(dir.path()).unwrap();
    assert_eq!(m.pinned.len(), 1);
    assert!(m.graph.inputs.iter().all(|&t| m.graph.name_of(t) != "starts"));
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(4));
    let dir = folder(&b, &[("x", x), ("starts", i64s(&[1], &[0]))], &[("y", y)]);
    let o = run(dir.path());
    assert!(!o.passed(), "starts = 0 must not compute the starts = 1 rows:\n{}", o.output);
}

/// Without the value, the refusal says which graph input the operand
/// comes from (through foldable arithmetic: Max is folded) and what to do.
#[test]
fn an_unknown_shape_operand_names_the_graph_input_it_comes_from() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 3])
        .input("want", I64, &[2])
        .init_i64("one", &[1, 1])
        .node("Max", &["want", "one"], &["shape"], vec![])
        .node("Reshape", &["x", "shape"], &["y"], vec![])
        .output("y", F32, &[3, 2]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let e = lowered(dir.path()).unwrap_err().to_string();
    assert!(e.contains("node 'Reshape_1' (Reshape): input 1 ('shape', shape) must be a constant"), "{e}");
    assert!(e.contains("computed from graph input(s) 'want' fed at run time"), "{e}");
    write_npz(&dir.path().join("inputs.npz"), &[("want", i64s(&[2], &[3, 2]))]);
    let m = lowered(dir.path()).unwrap();
    let y = m.graph.id("y").unwrap();
    assert_eq!(m.graph.tensor(y).ty.shape(), Some(vec![3, 2]), "Max(want, 1) folded to [3, 2]");
}

/// Gather's indices are data (token ids): a graph input there stays an
/// input of the generated code, never built into it.
#[test]
fn gather_indices_are_never_pinned() {
    let mut b = ModelBuilder::new();
    b.input("ids", I64, &[3])
        .init("table", &[3, 2], &[0.0; 6])
        .node("Gather", &["table", "ids"], &["y"], vec![])
        .output("y", F32, &[3, 2]);
    let dir = folder(&b, &[("ids", i64s(&[3], &[2, 0, 1]))], &[]);
    let m = lowered(dir.path()).unwrap();
    assert!(m.pinned.is_empty());
    assert!(m.graph.inputs.iter().any(|&t| m.graph.name_of(t) == "ids"));
}

/// An empty `axes` input (declared [0]) is accepted as a pinned value —
/// ReduceSum then reduces every axis — and an empty data input is a
/// zero-size tensor like any other.
#[test]
fn an_empty_axes_input_is_a_value_and_empty_data_is_data() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 2])
        .input("axes", I64, &[0])
        .node("ReduceSum", &["x", "axes"], &["y"], vec![attr_int("keepdims", 0)])
        .output("y", F32, &[]);
    let x = f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let dir = folder(&b, &[("x", x), ("axes", i64s(&[0], &[]))], &[("y", f32s(&[], &[10.0]))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    let mut b = ModelBuilder::new();
    b.input("x", I64, &[0]).node("Shape", &["x"], &["y"], vec![]).output("y", I64, &[1]);
    let dir = folder(&b, &[("x", i64s(&[0], &[]))], &[("y", i64s(&[1], &[0]))]);
    let m = lowered(dir.path()).unwrap();
    assert!(m.graph.inputs.iter().any(|&t| m.graph.name_of(t) == "x"));
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
}

/// Zero-size tensors are legal ONNX. A graph input with a zero dim
/// imports; a reduction over an empty axis gives its identity (ReduceSum
/// 0, ReduceMax the type's lowest: -inf, the least int64, false), and a
/// node whose outputs are all empty runs no kernel (a broadcast Add, whose
/// kernel would divide by the zero dim).
#[test]
fn reductions_over_an_empty_axis_give_their_identity() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 0, 3])
        .input("k", I64, &[2, 0])
        .input("m", BOOL, &[0, 2])
        .init("bias", &[3], &[1.0, 2.0, 3.0])
        .init_i64("axes", &[1])
        .node("ReduceSum", &["x", "axes"], &["sum"], vec![])
        .node("ReduceMax", &["x"], &["max"], vec![attr_ints("axes", &[1]), attr_int("keepdims", 0)])
        .node("ReduceMax", &["k"], &["kmax"], vec![attr_ints("axes", &[1]), attr_int("keepdims", 0)])
        .node("ReduceMax", &["m"], &["any"], vec![attr_ints("axes", &[0]), attr_int("keepdims", 0)])
        .node("Add", &["x", "bias"], &["plus"], vec![])
        .output("sum", F32, &[2, 1, 3])
        .output("max", F32, &[2, 3])
        .output("kmax", I64, &[2])
        .output("any", BOOL, &[2])
        .output("plus", F32, &[2, 0, 3]);
    let bools = |shape: &[usize], v: &[i64]| TensorData::from_i64_as(DType::Bool, shape.to_vec(), v).unwrap();
    let inputs = [("x", f32s(&[2, 0, 3], &[])), ("k", i64s(&[2, 0], &[])), ("m", bools(&[0, 2], &[]))];
    let outputs = [
        ("sum", f32s(&[2, 1, 3], &[0.0; 6])),
        ("max", f32s(&[2, 3], &[f32::NEG_INFINITY; 6])),
        ("kmax", i64s(&[2], &[i64::MIN; 2])),
        ("any", bools(&[2], &[0, 0])),
        ("plus", f32s(&[2, 0, 3], &[])),
    ];
    let dir = folder(&b, &inputs, &outputs);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(6 + 6 + 2 + 2), "{}", o.output);
}

/// A model whose every output is a zero-size tensor (a Split into empty
/// parts, a Reshape with `allowzero`) compares 0 values: it passes on each
/// output's check line, its buffers have a place of their own in a real
/// arena (the kernels and the harness get no NULL).
#[test]
fn a_model_of_empty_outputs_passes_on_its_check_lines() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("e", F32, &[0])
        .init_i64("split", &[0, 0, 0])
        .init_i64("shape", &[3, 0])
        .node("Split", &["e", "split"], &["p", "q", "r"], vec![])
        .node("Reshape", &["e", "shape"], &["s"], vec![attr_int("allowzero", 1)])
        .output("p", F32, &[0])
        .output("q", F32, &[0])
        .output("r", F32, &[0])
        .output("s", F32, &[3, 0]);
    let empty = |shape: &[usize]| f32s(shape, &[]);
    let outputs = [("p", empty(&[0])), ("q", empty(&[0])), ("r", empty(&[0])), ("s", empty(&[3, 0]))];
    let dir = folder(&b, &[("e", empty(&[0]))], &outputs);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(0), "{}", o.output);
    assert_eq!(o.output.matches("] errors 0 out of 0").count(), 4, "{}", o.output);
    // C forbids an empty initialiser (gcc takes one as an extension): an
    // empty reference is written with one element.
    let out = tempfile::tempdir().unwrap();
    generate_case(&Case::new(dir.path(), "onnx_forms", "host", "L2", Kind::Inference), out.path()).unwrap();
    let refs = std::fs::read_to_string(out.path().join("testoutputs.h")).unwrap();
    assert!(refs.contains("testRef_0[] = {") && !refs.contains("= {\n};"), "{refs}");
}

/// The code is generated for one value: mini-batches that give a shape
/// operand different values are refused naming both keys.
#[test]
fn a_shape_operand_must_be_the_same_in_every_mini_batch() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[3, 2])
        .input("starts", I64, &[1])
        .init_i64("ends", &[3])
        .node("Slice", &["x", "starts", "ends"], &["y"], vec![])
        .output("y", F32, &[2, 2]);
    let x = f32s(&[3, 2], &[0.0; 6]);
    let inputs = [("x", x.clone()), ("mb1_x", x), ("starts", i64s(&[1], &[1])), ("mb1_starts", i64s(&[1], &[0]))];
    let dir = folder(&b, &inputs, &[]);
    let e = lowered(dir.path()).unwrap_err().to_string();
    assert!(e.contains("graph input 'starts' decides shapes"), "{e}");
    assert!(e.contains("'starts' and 'mb1_starts' differ"), "{e}");
}

/// Opset 6 PRelu's per-channel slope [C] applies along axis 1: a
/// constant one computes so (channel 0 scaled by 0.1, channel 1 by 0.5);
/// one fed at run time is refused by name; at opset 7 the same shapes do
/// not broadcast.
#[test]
fn opset_6_prelu_slope_is_per_channel() {
    if !have_gcc() {
        return;
    }
    let prelu = |opset: i64, constant: bool| {
        let mut b = ModelBuilder::new();
        b.opsets = vec![("".into(), opset)];
        b.input("x", F32, &[1, 2, 3]);
        if constant {
            b.init("s", &[2], &[0.1, 0.5]);
        } else {
            b.input("s", F32, &[2]);
        }
        b.node("PRelu", &["x", "s"], &["y"], vec![]).output("y", F32, &[1, 2, 3]);
        b
    };
    let x = f32s(&[1, 2, 3], &[-1.0, -2.0, 3.0, -1.0, -2.0, 3.0]);
    let y = f32s(&[1, 2, 3], &[-0.1, -0.2, 3.0, -0.5, -1.0, 3.0]);
    let dir = folder(&prelu(6, true), &[("x", x.clone())], &[("y", y.clone())]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    let dir = folder(&prelu(6, false), &[("x", x.clone()), ("s", f32s(&[2], &[0.1, 0.5]))], &[("y", y.clone())]);
    let e = lowered(dir.path()).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("the opset < 7 form of PRelu, a per-channel slope [2]"), "{e}");
    assert!(e.contains("fed at run time"), "{e}");
    let dir = folder(&prelu(7, true), &[("x", x)], &[("y", y)]);
    let e = lowered(dir.path()).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("do not broadcast"), "{e}");
}

/// The integer forms: i64 Add / Sub / Mul wrap around, Div truncates
/// toward zero, Pow is exact (a negative exponent of a base other than
/// ±1 gives 0), Pow mixes an f32 base with an i64 exponent and the other
/// way round with the base's type as the output's, Max / Min compare
/// integers, ReduceMax of bool is "any"; one wrong integer is one error.
#[test]
fn integer_forms_compute_exactly() {
    if !have_gcc() {
        return;
    }
    const MAX: i64 = i64::MAX;
    let mut b = ModelBuilder::new();
    b.input("a", I64, &[2, 3]).input("b", I64, &[3]).input("f", F32, &[3]).input("m", BOOL, &[2, 3]);
    let outs: [(&str, &str, &str, &str); 9] = [
        ("Add", "a", "b", "add"),
        ("Sub", "a", "b", "sub"),
        ("Mul", "a", "b", "mul"),
        ("Div", "a", "b", "div"),
        ("Pow", "a", "b", "pow"),
        ("Pow", "a", "f", "pow_if"),
        ("Pow", "f", "b", "pow_fi"),
        ("Max", "a", "b", "max"),
        ("Min", "a", "b", "min"),
    ];
    for (op, x, y, z) in outs {
        b.node(op, &[x, y], &[z], vec![]);
        if z == "pow_fi" {
            b.output(z, F32, &[3]);
        } else {
            b.output(z, I64, &[2, 3]);
        }
    }
    b.node("ReduceMax", &["m"], &["any"], vec![attr_ints("axes", &[1]), attr_int("keepdims", 0)]);
    b.output("any", BOOL, &[2]);
    let bools = |shape: &[usize], v: &[i64]| TensorData::from_i64_as(DType::Bool, shape.to_vec(), v).unwrap();
    let inputs = [
        ("a", i64s(&[2, 3], &[7, -7, MAX, -9, 5, 3])),
        ("b", i64s(&[3], &[2, -3, 1])),
        ("f", f32s(&[3], &[2.0, 1.0, 0.5])),
        ("m", bools(&[2, 3], &[0, 1, 0, 0, 0, 0])),
    ];
    let expected = |add_first: i64| {
        vec![
            ("add", i64s(&[2, 3], &[add_first, -10, i64::MIN, -7, 2, 4])),
            ("sub", i64s(&[2, 3], &[5, -4, MAX - 1, -11, 8, 2])),
            ("mul", i64s(&[2, 3], &[14, 21, MAX, -18, -15, 3])),
            ("div", i64s(&[2, 3], &[3, 2, MAX, -4, -1, 3])),
            ("pow", i64s(&[2, 3], &[49, 0, MAX, 81, 0, 3])),
            ("pow_if", i64s(&[2, 3], &[49, -7, 3037000499, 81, 5, 1])),
            ("pow_fi", f32s(&[3], &[4.0, 1.0, 0.5])),
            ("max", i64s(&[2, 3], &[7, -3, MAX, 2, 5, 3])),
            ("min", i64s(&[2, 3], &[2, -7, 1, -9, -3, 1])),
            ("any", bools(&[2], &[1, 0])),
        ]
    };
    let dir = folder(&b, &inputs, &expected(9));
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(6 * 8 + 3 + 2), "{}", o.output);
    let dir = folder(&b, &inputs, &expected(10));
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(1), "{}", o.output);
}

/// ConstantOfShape and Range of constant inputs fold when generating code
/// (no node of theirs is left); Tile, Mod (both forms), Not, ArgMax with
/// `select_last_index` and LogSoftmax run on the host emulation against
/// hand-computed values, and one wrong index is one error.
#[test]
fn added_operators_compute_and_fold() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 3])
        .input("a", I64, &[2, 3])
        .input("d", I64, &[3])
        .input("m", BOOL, &[2, 3])
        .init_i64("shape", &[2, 2])
        .init_i64("start", &[1])
        .init_i64("limit", &[10])
        .init_i64("delta", &[3])
        .init_i64("reps", &[2, 1])
        .node("ConstantOfShape", &["shape"], &["zeros"], vec![])
        .node("Range", &["start", "limit", "delta"], &["range"], vec![])
        .node("Tile", &["x", "reps"], &["tiled"], vec![])
        .node("Mod", &["a", "d"], &["mod"], vec![])
        .node("Mod", &["a", "d"], &["fmod"], vec![attr_int("fmod", 1)])
        .node("Not", &["m"], &["not"], vec![])
        .node(
            "ArgMax",
            &["x"],
            &["argmax"],
            vec![attr_int("axis", 1), attr_int("keepdims", 0), attr_int("select_last_index", 1)],
        )
        .node("LogSoftmax", &["x"], &["logsm"], vec![])
        .output("zeros", F32, &[2, 2])
        .output("range", I64, &[3])
        .output("tiled", F32, &[4, 3])
        .output("mod", I64, &[2, 3])
        .output("fmod", I64, &[2, 3])
        .output("not", BOOL, &[2, 3])
        .output("argmax", I64, &[2])
        .output("logsm", F32, &[2, 3]);
    let bools = |v: &[i64]| TensorData::from_i64_as(DType::Bool, vec![2, 3], v).unwrap();
    let x = [3.0, 1.0, 3.0, 0.5, -1.0, 2.0];
    let inputs = [
        ("x", f32s(&[2, 3], &x)),
        ("a", i64s(&[2, 3], &[7, -7, 9, -9, 5, 0])),
        ("d", i64s(&[3], &[3, -3, 4])),
        ("m", bools(&[1, 0, 0, 0, 1, 1])),
    ];
    let expected = |last: i64| {
        vec![
            ("zeros", f32s(&[2, 2], &[0.0; 4])),
            ("range", i64s(&[3], &[1, 4, 7])),
            ("tiled", f32s(&[4, 3], &[x, x].concat())),
            ("mod", i64s(&[2, 3], &[1, -1, 1, 0, -1, 0])),
            ("fmod", i64s(&[2, 3], &[1, -1, 1, 0, 2, 0])),
            ("not", bools(&[0, 1, 1, 1, 0, 0])),
            ("argmax", i64s(&[2], &[last, 2])),
            ("logsm", f32s(&[2, 3], &[-0.75862366, -2.7586236, -0.75862366, -1.7413113, -3.2413113, -0.2413113])),
        ]
    };
    let dir = folder(&b, &inputs, &expected(2));
    let m = lowered(dir.path()).unwrap();
    let left: Vec<&str> = m.graph.nodes().map(|(_, n)| n.op.as_str()).collect();
    assert!(!left.contains(&"ConstantOfShape") && !left.contains(&"Range"), "{left:?}");
    if !have_gcc() {
        return;
    }
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(4 + 3 + 12 + 6 * 3 + 2 + 6), "{}", o.output);
    let dir = folder(&b, &inputs, &expected(0));
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(1), "{}", o.output);
}

/// Mod of floats with fmod = 0 (the current ONNX defines it as numpy's
/// mod: the divisor's sign) and comparisons of int64 and int32 operands
/// run against numpy's values (onnx's `test_mod_mixed_sign_float32_fmod_0`
/// inputs; int64 operands beyond 2^53 that differ in their last bit); one
/// wrong value is one error.
#[test]
fn float_mod_with_fmod_0_and_integer_comparisons() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[6])
        .input("y", F32, &[6])
        .input("a", I64, &[2, 3])
        .input("b", I64, &[3])
        .input("c", common::I32, &[3])
        .input("d", common::I32, &[3])
        .node("Mod", &["x", "y"], &["mod"], vec![])
        .node("GreaterOrEqual", &["a", "b"], &["ge"], vec![])
        .node("Less", &["a", "b"], &["lt"], vec![])
        .node("Equal", &["a", "b"], &["eq"], vec![])
        .node("Greater", &["c", "d"], &["gt"], vec![])
        .node("LessOrEqual", &["c", "d"], &["le"], vec![])
        .output("mod", F32, &[6])
        .output("ge", BOOL, &[2, 3])
        .output("lt", BOOL, &[2, 3])
        .output("eq", BOOL, &[2, 3])
        .output("gt", BOOL, &[3])
        .output("le", BOOL, &[3]);
    let bools = |shape: &[usize], v: &[i64]| TensorData::from_i64_as(DType::Bool, shape.to_vec(), v).unwrap();
    let i32s = |v: &[i64]| TensorData::from_i64_as(DType::I32, vec![3], v).unwrap();
    let inputs = [
        ("x", f32s(&[6], &[-4.3, 7.2, 5.0, 4.3, -7.2, 8.0])),
        ("y", f32s(&[6], &[2.1, -3.4, 8.0, -2.1, 3.4, 5.0])),
        ("a", i64s(&[2, 3], &[5, -3, (1 << 62) + 1, 0, 7, -1])),
        ("b", i64s(&[3], &[5, -4, 1 << 62])),
        ("c", i32s(&[3, -2, 7])),
        ("d", i32s(&[3, 1, -8])),
    ];
    let expected = |last_mod: f32| {
        vec![
            ("mod", f32s(&[6], &[1.9999995, -3.0000005, 5.0, -1.9999995, 3.0000005, last_mod])),
            ("ge", bools(&[2, 3], &[1, 1, 1, 0, 1, 0])),
            ("lt", bools(&[2, 3], &[0, 0, 0, 1, 0, 1])),
            ("eq", bools(&[2, 3], &[1, 0, 0, 0, 0, 0])),
            ("gt", bools(&[3], &[0, 0, 1])),
            ("le", bools(&[3], &[1, 1, 0])),
        ]
    };
    let dir = folder(&b, &inputs, &expected(3.0));
    lowered(dir.path()).unwrap();
    if !have_gcc() {
        return;
    }
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(6 + 6 * 3 + 3 * 2), "{}", o.output);
    // one changed reference is one error
    let dir = folder(&b, &inputs, &expected(-2.0));
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(1), "{}", o.output);
}

/// The forms deploygen does not compute are refused naming node and
/// input: ConstantOfShape of a run-time shape, Tile of a run-time repeat
/// count.
#[test]
fn added_operators_refuse_what_they_do_not_compute() {
    let refusal = |b: &ModelBuilder| {
        let dir = tempfile::tempdir().unwrap();
        b.write(dir.path(), "network.onnx");
        lowered(dir.path()).unwrap_err().to_string()
    };
    let mut b = ModelBuilder::new();
    b.input("s", I64, &[2]).node("ConstantOfShape", &["s"], &["z"], vec![]).output("z", F32, &[2, 2]);
    let e = refusal(&b);
    assert!(e.contains("(ConstantOfShape): input 0 ('s', the output shape) must be a constant"), "{e}");
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[3]).input("r", I64, &[1]).node("Tile", &["x", "r"], &["z"], vec![]).output("z", F32, &[6]);
    let e = refusal(&b);
    assert!(e.contains("(Tile): input 1 ('r', repeats) must be a constant"), "{e}");
}

/// Resize: a 2x nearest upsample by scales (each input pixel a 2x2 block)
/// and a linear align_corners resize by sizes (the midpoints average
/// their neighbours) run against hand-computed values; one wrong value is
/// one error. A resize of a leading axis is refused by name.
#[test]
fn resize_nearest_and_linear() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, 2, 2])
        .init("scales", &[4], &[1.0, 1.0, 2.0, 2.0])
        .init_i64("sizes", &[1, 1, 3, 3])
        .node("Resize", &["x", "", "scales"], &["near"], vec![attr_str("mode", "nearest")])
        .node(
            "Resize",
            &["x", "", "", "sizes"],
            &["lin"],
            vec![attr_str("mode", "linear"), attr_str("coordinate_transformation_mode", "align_corners")],
        )
        .output("near", F32, &[1, 1, 4, 4])
        .output("lin", F32, &[1, 1, 3, 3]);
    let x = f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let near = [1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 3.0, 3.0, 4.0, 4.0];
    let lin = |c: f32| f32s(&[1, 1, 3, 3], &[1.0, 1.5, 2.0, 2.0, c, 3.0, 3.0, 3.5, 4.0]);
    if have_gcc() {
        let dir = folder(&b, &[("x", x.clone())], &[("near", f32s(&[1, 1, 4, 4], &near)), ("lin", lin(2.5))]);
        let o = run(dir.path());
        assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
        assert_eq!(o.compared, Some(16 + 9), "{}", o.output);
        let dir = folder(&b, &[("x", x)], &[("near", f32s(&[1, 1, 4, 4], &near)), ("lin", lin(2.0))]);
        let o = run(dir.path());
        assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
        assert_eq!(o.errors, Some(1), "{}", o.output);
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 2, 2, 2])
        .init("scales", &[4], &[1.0, 2.0, 1.0, 1.0])
        .node("Resize", &["x", "", "scales"], &["y"], vec![])
        .output("y", F32, &[1, 4, 2, 2]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let e = lowered(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("(Resize): resizing [1, 2, 2, 2] to [1, 4, 2, 2]: deploygen resizes the last two axes only"),
        "{e}"
    );
}

/// AveragePool with dilations (once refused) in 2-D and 1-D, with ceil_mode
/// windows that overhang the end pad: with count_include_pad their taps
/// beyond the padded input are not counted, as the ONNX reference computes
/// since onnx 1.18 (these values are onnx 1.23's; onnxruntime 1.19 and onnx
/// 1.17 divide by the whole kernel: -0.1875 for -0.375, 0.4375 for 1.75).
#[test]
fn average_pool_with_dilations_and_ceil_mode_counts_the_padded_input() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, 5, 5])
        .input("z", F32, &[1, 1, 7])
        .node(
            "AveragePool",
            &["x"],
            &["y"],
            vec![
                attr_ints("kernel_shape", &[2, 2]),
                attr_ints("strides", &[2, 2]),
                attr_ints("dilations", &[2, 2]),
                attr_ints("pads", &[1, 0, 0, 1]),
                attr_int("ceil_mode", 1),
                attr_int("count_include_pad", 1),
            ],
        )
        .node(
            "AveragePool",
            &["z"],
            &["w"],
            vec![
                attr_ints("kernel_shape", &[3]),
                attr_ints("strides", &[2]),
                attr_ints("dilations", &[2]),
                attr_ints("pads", &[1, 1]),
                attr_int("ceil_mode", 1),
            ],
        )
        .output("y", F32, &[1, 1, 3, 3])
        .output("w", F32, &[1, 1, 3]);
    let x: Vec<f32> = (0..25).map(|i| (i as f32 - 12.0) / 4.0).collect();
    let z: Vec<f32> = (0..7).map(|i| (i as f32 - 3.0) / 2.0).collect();
    let inputs = [("x", f32s(&[1, 1, 5, 5], &x)), ("z", f32s(&[1, 1, 7], &z))];
    let expected = |corner: f32| {
        vec![
            ("y", f32s(&[1, 1, 3, 3], &[-0.75, -0.5, -0.375, -0.25, 0.25, 0.5, 1.0, 1.5, corner])),
            ("w", f32s(&[1, 1, 3], &[-0.5, 0.0, 0.5])),
        ]
    };
    if !have_gcc() {
        return;
    }
    let dir = folder(&b, &inputs, &expected(1.75));
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(12), "{}", o.output);
    // the corner as the whole kernel's divisor gives it: one wrong value
    let dir = folder(&b, &inputs, &expected(0.4375));
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(1), "{}", o.output);
}

/// Expanded Attention computes Expand's shape from static shapes through
/// comparisons, Not, And, Where and a CastLike that reads only the *type*
/// of a run-time input: every step folds, so Expand gets a constant shape.
#[test]
fn mask_arithmetic_on_static_shapes_folds() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 3])
        .input("like", I64, &[1])
        .init_i64("two", &[2])
        .init_i64("one", &[1])
        .node("Shape", &["x"], &["s"], vec![])
        .node("Equal", &["s", "two"], &["is_two"], vec![])
        .node("Not", &["is_two"], &["not_two"], vec![])
        .node("Greater", &["s", "one"], &["big"], vec![])
        .node("And", &["not_two", "big"], &["keep"], vec![])
        .node("Or", &["keep", "is_two"], &["any"], vec![])
        .node("Xor", &["any", "keep"], &["only_two"], vec![])
        .node("Where", &["keep", "s", "one"], &["picked"], vec![])
        .node("CastLike", &["picked", "like"], &["shape"], vec![])
        .node("Concat", &["one", "shape"], &["full"], vec![attr_int("axis", 0)])
        .node("Expand", &["x", "full"], &["y"], vec![])
        .node("Cast", &["only_two"], &["flags"], vec![attr_int("to", 7)])
        .output("y", F32, &[1, 2, 3])
        .output("flags", I64, &[2]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let m = lowered(dir.path()).unwrap();
    let t = |n: &str| m.graph.tensor(m.graph.id(n).unwrap()).clone();
    // s = [2, 3]: keep = [false, true], picked = [1, 3]; x [2, 3] expands to [1, 2, 3]
    assert_eq!(t("y").ty.shape(), Some(vec![1, 2, 3]));
    assert_eq!(t("full").data.as_ref().unwrap().to_i64(), Some(vec![1, 1, 3]));
    assert_eq!(t("only_two").data.as_ref().unwrap().to_i64(), Some(vec![1, 0]), "Xor(Or(keep, is_two), keep)");
}

/// The forms onnx 1.23's cases added: Div (truncating), Mod (the
/// divisor's sign), Max, Min and Pow on int32 and Pow mixing int32 with
/// f32; Pad's wrap mode; a CastLike of a Constant as Pad's value (folded
/// when generating code, though its type comes from a run-time input);
/// and two inputs of one size that broadcast to a larger output
/// (`[2, 1] - [1, 2]`). One wrong value is one error.
#[test]
fn int32_arithmetic_wrap_pad_and_a_cast_constant() {
    let mut b = ModelBuilder::new();
    b.opsets = vec![("".into(), 21)];
    b.input("a", common::I32, &[2, 3])
        .input("d", common::I32, &[3])
        .input("e", common::I32, &[3])
        .input("x", F32, &[2, 3])
        .input("f", F32, &[3])
        .input("w", F32, &[1, 3])
        .input("p", F32, &[2, 1])
        .input("q", F32, &[1, 2])
        .init_i64("pads_wrap", &[0, 1, 0, 2])
        .init_i64("pads_const", &[0, 1, 0, 0])
        .node("Div", &["a", "d"], &["div"], vec![])
        .node("Mod", &["a", "d"], &["mod"], vec![])
        .node("Max", &["a", "d"], &["max"], vec![])
        .node("Min", &["a", "d"], &["min"], vec![])
        .node("Pow", &["a", "e"], &["pow_ii"], vec![])
        .node("Pow", &["x", "e"], &["pow_fi"], vec![])
        .node("Pow", &["a", "f"], &["pow_if"], vec![])
        .node("Pad", &["w", "pads_wrap"], &["wrap"], vec![attr_str("mode", "wrap")])
        .node("Constant", &[], &["k"], vec![attr_float("value_float", 7.5)])
        .node("CastLike", &["k", "w"], &["kw"], vec![])
        .node("Pad", &["w", "pads_const", "kw"], &["padded"], vec![])
        .node("Sub", &["p", "q"], &["sub"], vec![])
        .output("div", common::I32, &[2, 3])
        .output("mod", common::I32, &[2, 3])
        .output("max", common::I32, &[2, 3])
        .output("min", common::I32, &[2, 3])
        .output("pow_ii", common::I32, &[2, 3])
        .output("pow_fi", F32, &[2, 3])
        .output("pow_if", common::I32, &[2, 3])
        .output("wrap", F32, &[1, 6])
        .output("padded", F32, &[1, 4])
        .output("sub", F32, &[2, 2]);
    let i32s = |shape: &[usize], v: &[i64]| TensorData::from_i64_as(DType::I32, shape.to_vec(), v).unwrap();
    let inputs = [
        ("a", i32s(&[2, 3], &[7, -7, 9, -9, 5, 0])),
        ("d", i32s(&[3], &[3, -3, 4])),
        ("e", i32s(&[3], &[2, 3, 0])),
        ("x", f32s(&[2, 3], &[1.5, -2.0, 3.0, 0.5, 1.0, -1.0])),
        ("f", f32s(&[3], &[1.0, 3.0, 0.5])),
        ("w", f32s(&[1, 3], &[1.0, 2.0, 3.0])),
        ("p", f32s(&[2, 1], &[1.0, 2.0])),
        ("q", f32s(&[1, 2], &[10.0, 20.0])),
    ];
    let expected = |max0: i64| {
        vec![
            ("div", i32s(&[2, 3], &[2, 2, 2, -3, -1, 0])),
            ("mod", i32s(&[2, 3], &[1, -1, 1, 0, -1, 0])),
            ("max", i32s(&[2, 3], &[max0, -3, 9, 3, 5, 4])),
            ("min", i32s(&[2, 3], &[3, -7, 4, -9, -3, 0])),
            ("pow_ii", i32s(&[2, 3], &[49, -343, 1, 81, 125, 1])),
            ("pow_fi", f32s(&[2, 3], &[2.25, -8.0, 1.0, 0.25, 1.0, 1.0])),
            ("pow_if", i32s(&[2, 3], &[7, -343, 3, -9, 125, 0])),
            ("wrap", f32s(&[1, 6], &[3.0, 1.0, 2.0, 3.0, 1.0, 2.0])),
            ("padded", f32s(&[1, 4], &[7.5, 1.0, 2.0, 3.0])),
            ("sub", f32s(&[2, 2], &[-9.0, -19.0, -8.0, -18.0])),
        ]
    };
    let dir = folder(&b, &inputs, &expected(7));
    let m = lowered(dir.path()).unwrap();
    let left: Vec<&str> = m.graph.nodes().map(|(_, n)| n.op.as_str()).collect();
    assert!(!left.contains(&"CastLike"), "{left:?}");
    if !have_gcc() {
        return;
    }
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(7 * 6 + 6 + 4 + 4), "{}", o.output);
    let dir = folder(&b, &inputs, &expected(6));
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(1), "{}", o.output);
}

/// A Cast of an f32 initializer stays a node (an initializer may be a
/// trainable weight); one of a Constant folds.
#[test]
fn float_casts_fold_from_constants_only() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1])
        .init("w", &[1], &[2.0])
        .node("Constant", &[], &["k"], vec![attr_float("value_float", 3.0)])
        .node("Cast", &["w"], &["cw"], vec![attr_int("to", 1)])
        .node("Cast", &["k"], &["ck"], vec![attr_int("to", 1)])
        .node("Add", &["x", "cw"], &["s"], vec![])
        .node("Add", &["s", "ck"], &["y"], vec![])
        .output("y", F32, &[1]);
    let dir = folder(&b, &[("x", f32s(&[1], &[1.0]))], &[("y", f32s(&[1], &[6.0]))]);
    let m = lowered(dir.path()).unwrap();
    let casts: Vec<&str> = m.graph.nodes().filter(|(_, n)| n.op == "Cast").map(|(_, n)| n.name.as_str()).collect();
    assert_eq!(casts, ["Cast_1"]);
}

/// ONNX element types of the int8 forms.
const I8: i32 = 3;
const U8: i32 = 2;

/// The integer companions of quantized graphs on int8 and uint8 against
/// onnx's reference implementation: Add wrapping (100 + 100 = -56), Sub
/// and Mul modulo 256, Div truncating, Mod with either sign rule, Less of
/// -128 and 127, GreaterOrEqual of 255 and 2, Max, Min, Relu, Clip with a
/// bound pinned from the test data (a value) and one computed (read from
/// its buffer), MaxPool with pads and ceil_mode over a window of -128
/// only, and with dilations and Indices. One wrong value is one error.
#[test]
fn int8_and_uint8_forms_compute_exactly() {
    let mut b = ModelBuilder::new();
    b.opsets = vec![("".into(), 19)];
    b.input("a", I8, &[2, 3])
        .input("b", I8, &[3])
        .input("d", I8, &[3])
        .input("p", U8, &[3])
        .input("q", U8, &[3])
        .input("lo", I8, &[])
        .input("k", I8, &[])
        .input("x", I8, &[1, 1, 4, 5])
        .input("y", U8, &[1, 2, 3, 4])
        .node("Add", &["a", "b"], &["add"], vec![])
        .node("Sub", &["p", "q"], &["sub"], vec![])
        .node("Mul", &["p", "q"], &["mul"], vec![])
        .node("Div", &["a", "d"], &["div"], vec![])
        .node("Mod", &["a", "d"], &["mod"], vec![])
        .node("Mod", &["a", "d"], &["fmod"], vec![attr_int("fmod", 1)])
        .node("Less", &["a", "b"], &["lt"], vec![])
        .node("GreaterOrEqual", &["p", "q"], &["ge"], vec![])
        .node("Max", &["a", "b"], &["max"], vec![])
        .node("Min", &["p", "q"], &["min"], vec![])
        .node("Relu", &["k"], &["hi"], vec![])
        .node("Clip", &["a", "lo", "hi"], &["clip"], vec![])
        .node("Relu", &["a"], &["relu"], vec![])
        .node(
            "MaxPool",
            &["x"],
            &["pool"],
            vec![
                attr_ints("kernel_shape", &[2, 3]),
                attr_ints("strides", &[2, 2]),
                attr_ints("pads", &[1, 1, 1, 1]),
                attr_int("ceil_mode", 1),
            ],
        )
        .node(
            "MaxPool",
            &["y"],
            &["pool_u8", "idx"],
            vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("dilations", &[1, 2])],
        );
    for (name, dtype, shape) in [
        ("add", I8, &[2, 3][..]),
        ("sub", U8, &[3]),
        ("mul", U8, &[3]),
        ("div", I8, &[2, 3]),
        ("mod", I8, &[2, 3]),
        ("fmod", I8, &[2, 3]),
        ("lt", BOOL, &[2, 3]),
        ("ge", BOOL, &[3]),
        ("max", I8, &[2, 3]),
        ("min", U8, &[3]),
        ("clip", I8, &[2, 3]),
        ("relu", I8, &[2, 3]),
        ("pool", I8, &[1, 1, 3, 3]),
        ("pool_u8", U8, &[1, 2, 2, 2]),
        ("idx", I64, &[1, 2, 2, 2]),
    ] {
        b.output(name, dtype, shape);
    }
    let t = |d: DType, shape: &[usize], v: &[i64]| TensorData::from_i64_as(d, shape.to_vec(), v).unwrap();
    let (i8s, u8s) = (|s: &[usize], v: &[i64]| t(DType::I8, s, v), |s: &[usize], v: &[i64]| t(DType::U8, s, v));
    let inputs = [
        ("a", i8s(&[2, 3], &[100, -100, 127, -128, 7, -7])),
        ("b", i8s(&[3], &[100, -100, 2])),
        ("d", i8s(&[3], &[3, -3, 2])),
        ("p", u8s(&[3], &[0, 5, 255])),
        ("q", u8s(&[3], &[1, 10, 2])),
        ("lo", i8s(&[], &[-50])),
        ("k", i8s(&[], &[60])),
        (
            "x",
            i8s(
                &[1, 1, 4, 5],
                &[-128, -100, 5, -128, -128, 3, -128, -7, 9, -1, 0, 1, 2, 3, 127, -128, -128, -128, -128, -128],
            ),
        ),
        (
            "y",
            u8s(
                &[1, 2, 3, 4],
                &[200, 7, 200, 0, 1, 255, 3, 255, 9, 9, 9, 9, 0, 0, 0, 0, 128, 127, 1, 2, 5, 250, 250, 6],
            ),
        ),
    ];
    let expected = |add0: i64| {
        vec![
            ("add", i8s(&[2, 3], &[add0, 56, -127, -28, -93, -5])),
            ("sub", u8s(&[3], &[255, 251, 253])),
            ("mul", u8s(&[3], &[0, 50, 254])),
            ("div", i8s(&[2, 3], &[33, 33, 63, -42, -2, -3])),
            ("mod", i8s(&[2, 3], &[1, -1, 1, 1, -2, 1])),
            ("fmod", i8s(&[2, 3], &[1, -1, 1, -2, 1, -1])),
            ("lt", t(DType::Bool, &[2, 3], &[0, 0, 0, 1, 0, 1])),
            ("ge", t(DType::Bool, &[3], &[0, 0, 1])),
            ("max", i8s(&[2, 3], &[100, -100, 127, 100, 7, 2])),
            ("min", u8s(&[3], &[0, 5, 2])),
            ("clip", i8s(&[2, 3], &[60, -50, 60, -50, 7, -7])),
            ("relu", i8s(&[2, 3], &[100, 0, 127, 0, 7, 0])),
            ("pool", i8s(&[1, 1, 3, 3], &[-100, 5, -128, 3, 9, 127, -128, -128, -128])),
            ("pool_u8", u8s(&[1, 2, 2, 2], &[200, 255, 9, 255, 128, 127, 250, 250])),
            ("idx", i64s(&[1, 2, 2, 2], &[0, 5, 8, 5, 16, 17, 22, 21])),
        ]
    };
    let dir = folder(&b, &inputs, &expected(-56));
    lowered(dir.path()).unwrap();
    if !have_gcc() {
        return;
    }
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(6 * 8 + 3 * 4 + 9 + 8 * 2), "{}", o.output);
    let dir = folder(&b, &inputs, &expected(200 - 256 + 1));
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(1), "{}", o.output);
}

/// What the int8 forms do not compute is refused naming node and reason:
/// a 3-D MaxPool on int8, MaxPool on int32, a Clip bound of another type
/// than X's, a Clip bound that is no value of X's type.
#[test]
fn int8_forms_refuse_what_their_kernels_do_not_compute() {
    if !have_gcc() {
        return;
    }
    let refusal = |b: &ModelBuilder, inputs: &[(&str, TensorData)]| {
        let dir = folder(b, inputs, &[]);
        let o = run(dir.path());
        assert_eq!(o.stage, Some(Stage::Emit), "{}\n{}", o.message, o.output);
        o.message
    };
    let t = |d: DType, shape: &[usize]| {
        TensorData::from_i64_as(d, shape.to_vec(), &vec![1; shape.iter().product()]).unwrap()
    };
    let pool = |dtype: i32, shape: &[i64], k: &[i64]| {
        let mut b = ModelBuilder::new();
        b.input("x", dtype, shape).node("MaxPool", &["x"], &["y"], vec![attr_ints("kernel_shape", k)]).output(
            "y",
            dtype,
            &[],
        );
        b
    };
    let e = refusal(&pool(I8, &[1, 1, 2, 2, 2], &[2, 2, 2]), &[("x", t(DType::I8, &[1, 1, 2, 2, 2]))]);
    assert!(e.contains("(MaxPool): 3-D MaxPool on i8: dg_maxpool_i8 pools 1-D and 2-D windows only"), "{e}");
    let e = refusal(&pool(common::I32, &[1, 1, 2, 2], &[2, 2]), &[("x", t(DType::I32, &[1, 1, 2, 2]))]);
    assert!(e.contains("(MaxPool): input 0 is i32; the kernel binding computes in f32, i8, u8 only"), "{e}");
    let mut b = ModelBuilder::new();
    b.input("x", I8, &[3])
        .input("m", U8, &[])
        .node("Min", &["m", "m"], &["lo"], vec![])
        .node("Clip", &["x", "lo"], &["y"], vec![])
        .output("y", I8, &[3]);
    let e = refusal(&b, &[("x", t(DType::I8, &[3])), ("m", t(DType::U8, &[]))]);
    assert!(e.contains("(Clip): the min bound is u8; X is i8"), "{e}");
    // a constant bound outside int8
    let mut b = ModelBuilder::new();
    b.input("x", I8, &[3])
        .node("Constant", &[], &["lo"], vec![attr_int("value_int", 200)])
        .node("Clip", &["x", "lo"], &["y"], vec![])
        .output("y", I8, &[3]);
    let e = refusal(&b, &[("x", t(DType::I8, &[3]))]);
    assert!(e.contains("(Clip): the min bound 200 is not a value of i8"), "{e}");
}
