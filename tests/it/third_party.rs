//! Conventions of third-party test folders (issue 22): each test builds a
//! small model folder the way such a folder is written and checks that
//! deploygen honours the convention exactly or refuses it by name.

use crate::common;

use std::path::Path;
use std::process::Command;

use crate::common::{ModelBuilder, F32};
use deploygen::bind::npz;
use deploygen::ir::TensorData;
use deploygen::verify::{generate_case, run_case, Case, Kind, Outcome, Stage};

fn have_gcc() -> bool {
    Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn write_npz(path: &Path, arrays: &[(&str, TensorData)]) {
    let refs: Vec<(&str, &TensorData)> = arrays.iter().map(|(k, v)| (*k, v)).collect();
    std::fs::write(path, npz::write_npz(&refs).unwrap()).unwrap();
}

/// Run a model folder as `deploygen test` would (its kind detected),
/// comparing within 1e-5.
fn run(dir: &Path) -> Outcome {
    let mut c = Case::new(dir, "third_party", "host", "L2", Kind::detect(dir));
    c.tolerance = Some(1e-5);
    c.cache = Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache"));
    run_case(&c, &generate_case)
}

/// A Pad with `value = -inf` (a max-pool's padding written out): every
/// border element is -inf on both sides, which is equal; the harness
/// compares them equal (|-inf - -inf| is NaN, which alone would fail).
#[test]
fn equal_infinities_compare_equal_and_nan_still_fails() {
    if !have_gcc() {
        return;
    }
    let x = [1.0f32, -2.0, 3.5, 4.0];
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, 2, 2])
        .init_i64("pads", &[0, 0, 1, 1, 0, 0, 1, 1])
        .init("cv", &[], &[f32::NEG_INFINITY])
        .node("Pad", &["x", "pads", "cv"], &["y"], vec![])
        .output("y", F32, &[1, 1, 4, 4]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let mut y = vec![f32::NEG_INFINITY; 16];
    for (i, v) in x.iter().enumerate() {
        y[(1 + i / 2) * 4 + 1 + i % 2] = *v;
    }
    write_npz(&dir.path().join("inputs.npz"), &[("x", TensorData::from_f32(vec![1, 1, 2, 2], &x))]);
    write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_f32(vec![1, 1, 4, 4], &y))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(16));

    // The other infinity, and a NaN reference, are still wrong.
    y[0] = f32::INFINITY;
    y[15] = f32::NAN;
    write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_f32(vec![1, 1, 4, 4], &y))]);
    let o = run(dir.path());
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(2), "{}", o.output);
}

fn refs(name: &str) -> deploygen::bind::npz::Npz {
    npz::read(&common::root().join("runtime/tests/refs/gelu_tanh").join(format!("{name}.npz"))).unwrap()
}

/// Gelu with approximate = "tanh" (a vision-transformer folder's form) and
/// its gradient, against onnxruntime's values (Gelu-20 and FastGeluGrad,
/// runtime/tests/refs/gelu_tanh/ from tools/make_kernel_refs.py).
#[test]
fn gelu_tanh_and_its_gradient_match_onnxruntime() {
    if !have_gcc() {
        return;
    }
    let r = refs("gelu_tanh");
    let mut b = ModelBuilder::new();
    b.opsets = vec![("".into(), 20), ("com.microsoft".into(), 1)];
    b.input("x", F32, &[4, 9]).node("Gelu", &["x"], &["y"], vec![common::attr_str("approximate", "tanh")]).output(
        "y",
        F32,
        &[4, 9],
    );
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    write_npz(&dir.path().join("inputs.npz"), &[("x", r.get("in_x").unwrap().unwrap().clone())]);
    write_npz(&dir.path().join("outputs.npz"), &[("y", r.get("out_y").unwrap().unwrap().clone())]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(36));

    let r = refs("gelu_tanh_grad");
    let mut b = ModelBuilder::new();
    b.input("dy", F32, &[4, 9])
        .input("x", F32, &[4, 9])
        .node_in("GeluGrad", "com.microsoft", &["dy", "x"], &["dx"], vec![common::attr_str("approximate", "tanh")])
        .output("dx", F32, &[4, 9]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let (dy, x) = (r.get("in_dy").unwrap().unwrap().clone(), r.get("in_x").unwrap().unwrap().clone());
    write_npz(&dir.path().join("inputs.npz"), &[("dy", dy), ("x", x)]);
    write_npz(&dir.path().join("outputs.npz"), &[("dx", r.get("out_dx").unwrap().unwrap().clone())]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(36));
}

/// log_softmax of each row.
fn log_softmax(x: &[f32], c: usize) -> Vec<f32> {
    x.chunks(c)
        .flat_map(|row| {
            let m = row.iter().cloned().fold(f32::MIN, f32::max);
            let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f32>().ln();
            row.iter().map(move |v| v - lse).collect::<Vec<_>>()
        })
        .collect()
}

const N: usize = 4;
const C: usize = 10;

fn scores() -> Vec<f32> {
    (0..N * C).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.3).collect()
}

fn labels() -> TensorData {
    TensorData::from_i64(vec![N], &[3, 0, 9, 5])
}

/// A third-party suite's SoftmaxCrossEntropyLoss with one output declared
/// with the scores' shape: that output is the log-probabilities, honoured
/// (it was a shape error blaming the file).
#[test]
fn a_single_sce_output_declared_like_the_scores_is_the_log_probabilities() {
    if !have_gcc() {
        return;
    }
    let (n, c) = (N as i64, C as i64);
    let mut b = ModelBuilder::new();
    b.input("scores", F32, &[n, c])
        .input("labels", common::I64, &[n])
        .node("SoftmaxCrossEntropyLoss", &["scores", "labels"], &["log_prob"], vec![])
        .output("log_prob", F32, &[n, c]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let x = scores();
    write_npz(
        &dir.path().join("inputs.npz"),
        &[("scores", TensorData::from_f32(vec![N, C], &x)), ("labels", labels())],
    );
    let lp = log_softmax(&x, C);
    write_npz(&dir.path().join("outputs.npz"), &[("log_prob", TensorData::from_f32(vec![N, C], &lp))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(40));
}

/// The same suite's SoftmaxCrossEntropyLossGrad(log_prob, labels): dY is
/// implied and the gradient is scaled by 1/N² (Deeploy's convention), so
/// all 40 values of a batch of 4 were wrong with 1/N.
#[test]
fn the_two_input_sce_gradient_is_deeploys_convention_exactly() {
    if !have_gcc() {
        return;
    }
    let (n, c) = (N as i64, C as i64);
    let mut b = ModelBuilder::new();
    b.input("scores", F32, &[n, c])
        .input("labels", common::I64, &[n])
        .node("SoftmaxCrossEntropyLoss", &["scores", "labels"], &["log_prob"], vec![])
        .node_in("SoftmaxCrossEntropyLossGrad", "com.microsoft", &["log_prob", "labels"], &["dscores"], vec![])
        .output("dscores", F32, &[n, c]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let x = scores();
    let l = [3usize, 0, 9, 5];
    let lp = log_softmax(&x, C);
    let scale = 1.0 / (N * N) as f32;
    let d: Vec<f32> =
        lp.iter().enumerate().map(|(i, v)| (v.exp() - if l[i / C] == i % C { 1.0 } else { 0.0 }) * scale).collect();
    write_npz(
        &dir.path().join("inputs.npz"),
        &[("scores", TensorData::from_f32(vec![N, C], &x)), ("labels", labels())],
    );
    write_npz(&dir.path().join("outputs.npz"), &[("dscores", TensorData::from_f32(vec![N, C], &d))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(40));
}

fn load_err(b: &ModelBuilder) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = b.write(dir.path(), "network.onnx");
    deploygen::load(&p).err().map(|e| e.to_string()).unwrap_or_else(|| "loaded".into())
}

/// Inputs that do not match the schema are refused by name, never read
/// as something else: the 3-input gradient without its labels, and the
/// 2-input form where the convention says nothing (ignore_index, [N, C, D]).
#[test]
fn sce_gradients_whose_inputs_do_not_fit_are_refused_by_name() {
    let grad = |inputs: &[&str], attrs: Vec<deploygen::import::pb::AttributeProto>, shape: &[i64]| {
        let mut b = ModelBuilder::new();
        b.input("dy", F32, &[]).input("lp", F32, shape).input("labels", common::I64, &[shape[0]]);
        b.node_in("SoftmaxCrossEntropyLossGrad", "com.microsoft", inputs, &["dx"], attrs).output("dx", F32, shape);
        load_err(&b)
    };
    let e = grad(&["dy", "lp", ""], vec![], &[4, 10]);
    assert!(e.contains("SoftmaxCrossEntropyLossGrad") && e.contains("input 2 (labels) is required"), "{e}");
    let e = grad(&["lp", "labels"], vec![common::attr_int("ignore_index", 0)], &[4, 10]);
    assert!(e.contains("Deeploy's convention") && e.contains("ignore_index"), "{e}");
    let e = grad(&["lp", "labels"], vec![], &[4, 10, 2]);
    assert!(e.contains("not [N, C]"), "{e}");
}

/// An exporter's Squeeze with `axes` as a single INT (opset 18): read as a
/// one-element list, with a warning naming node and attribute; a FLOAT
/// there is still refused.
#[test]
fn a_single_int_where_ints_are_expected_is_a_one_element_list() {
    let squeeze = |axes: deploygen::import::pb::AttributeProto| {
        let mut b = ModelBuilder::new();
        b.opsets = vec![("".into(), 18)];
        b.input("x", F32, &[1, 3]).node("Squeeze", &["x"], &["y"], vec![axes]).output("y", F32, &[3]);
        b
    };
    let dir = tempfile::tempdir().unwrap();
    let p = squeeze(common::attr_int("axes", 0)).write(dir.path(), "network.onnx");
    let m = deploygen::load(&p).unwrap();
    let y = m.graph.tensor(m.graph.id("y").unwrap());
    assert_eq!(y.ty.shape(), Some(vec![3]));
    assert!(
        m.graph.warnings.iter().any(|w| w.contains("node 'Squeeze_0' (Squeeze): attribute 'axes' is a single INT")),
        "{:?}",
        m.graph.warnings
    );
    let e = load_err(&squeeze(common::attr_float("axes", 0.0)));
    assert!(e.contains("attribute 'axes' must be INTS, found FLOAT"), "{e}");
}

/// An attribute the operator's schema does not define (an integer-emulation
/// convention's `Delta` on Div) is refused naming node, operator and
/// attribute; --allow-unknown-attributes reads the node without it.
#[test]
fn an_attribute_the_schema_does_not_define_is_refused_by_name() {
    let mut b = ModelBuilder::new();
    b.input("a", F32, &[2])
        .input("b", F32, &[2])
        .node("Div", &["a", "b"], &["y"], vec![common::attr_float("Delta", 0.5)])
        .output("y", F32, &[2]);
    let e = load_err(&b);
    assert!(e.contains("node 'Div_0' (Div): attribute 'Delta' is not defined by the schema of Div"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let p = b.write(dir.path(), "network.onnx");
    let cli = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_deploygen")).arg("inspect").arg(&p).args(extra).output().unwrap()
    };
    assert_eq!(cli(&[]).status.code(), Some(2));
    let o = cli(&["--allow-unknown-attributes"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("attribute 'Delta' is not defined by the schema of Div") && out.contains("ignored"), "{out}");
}

/// A training step is a `-training` case whatever its folder is called,
/// also when it fails before its roles are known.
#[test]
fn a_training_step_is_a_training_case_whatever_the_folder_says() {
    use prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("resnet_inference");
    std::fs::create_dir(&model).unwrap();
    let src = common::zoo("cnn_inline_sgd");
    for f in ["inputs.npz", "outputs.npz"] {
        std::fs::copy(src.join(f), model.join(f)).unwrap();
    }
    // A declared output shape the graph contradicts: it decodes, but does
    // not lower (so its training roles are never found).
    let mut m = deploygen::import::pb::ModelProto::decode(&*std::fs::read(src.join("network.onnx")).unwrap()).unwrap();
    let g = m.graph.as_mut().unwrap();
    let out = g.output[0].name().to_string();
    g.output[0] = common::value(&out, F32, &[7, 7, 7]);
    std::fs::write(model.join("network.onnx"), m.encode_to_vec()).unwrap();
    assert!(deploygen::load(&model).is_err());
    assert_eq!(Kind::detect(&model), Kind::Training);
}

/// Every operator refuses a node without the inputs its schema requires,
/// before its shape rule reads anything (ONNX and onnxruntime contrib
/// schemas: the inputs that are not optional).
#[test]
fn every_operator_requires_its_schemas_inputs() {
    const SCHEMA: &[(&str, usize)] = &[
        ("Add", 2),
        ("Sub", 2),
        ("Mul", 2),
        ("Div", 2),
        ("Pow", 2),
        ("MatMul", 2),
        ("Gemm", 2),
        ("Conv", 2),
        ("ConvTranspose", 2),
        ("ConvGrad", 3),
        ("FusedMatMul", 2),
        ("BatchNormalization", 5),
        ("LayerNormalization", 2),
        ("LayerNormalizationGrad", 3),
        ("GroupNormalization", 3),
        ("InstanceNormalization", 3),
        ("RMSNormalization", 2),
        ("Where", 3),
        ("Equal", 2),
        ("Less", 2),
        ("LessOrEqual", 2),
        ("Greater", 2),
        ("GreaterOrEqual", 2),
        ("And", 2),
        ("Reshape", 2),
        ("Expand", 2),
        ("Gather", 2),
        ("GatherGrad", 3),
        ("SoftmaxGrad", 2),
        ("SoftmaxGrad_13", 2),
        ("ReluGrad", 2),
        ("GeluGrad", 2),
        ("SigmoidGrad", 2),
        ("TanhGrad", 2),
        ("QuickGeluGrad", 2),
        ("MaxPoolGrad", 2),
        ("SoftmaxCrossEntropyLoss", 2),
        ("MSELoss", 2),
        ("MSELossGrad", 3),
        ("InPlaceAccumulatorV2", 2),
        ("SGD", 2),
        ("Relu", 1),
        ("Softmax", 1),
        ("Transpose", 1),
    ];
    let mut wrong = vec![];
    for (op, n) in SCHEMA {
        let def = deploygen::ops::lookup(op).unwrap_or_else(|| panic!("{op} is not in the registry"));
        let want: Vec<usize> = (0..*n).collect();
        if def.required != want.as_slice() {
            wrong.push(format!("{op}: requires {:?}, its schema {want:?}", def.required));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // And the check names node, operator and slot.
    let mut b = ModelBuilder::new();
    b.input("c", common::BOOL, &[2]).input("a", F32, &[2]);
    b.node("Where", &["c", "a"], &["y"], vec![]).output("y", F32, &[2]);
    let e = load_err(&b);
    assert!(e.contains("node 'Where_0' (Where): input 2 is required but missing"), "{e}");
}

/// Deeploy's test folders hold float64 inputs for float32 graph inputs
/// (its runner casts them): binding converts them, with a note, and the
/// values computed are those of the f32 inputs.
#[test]
fn float64_inputs_of_a_float32_graph_are_converted() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("a", F32, &[2, 3]).input("b", F32, &[2, 3]).node("Add", &["a", "b"], &["y"], vec![]).output(
        "y",
        F32,
        &[2, 3],
    );
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let (a, c) = ([0.1f64, 0.2, 0.3, -1.5, 2.25, 1e-3], [1.0f64, -0.7, 0.05, 0.5, 3.0, 7.0]);
    let f64s = |v: &[f64]| TensorData {
        dtype: deploygen::ir::DType::F64,
        shape: vec![2, 3],
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    write_npz(&dir.path().join("inputs.npz"), &[("a", f64s(&a)), ("b", f64s(&c))]);
    let y: Vec<f32> = a.iter().zip(&c).map(|(x, z)| *x as f32 + *z as f32).collect();
    write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_f32(vec![2, 3], &y))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(6));
    let m = deploygen::load(dir.path()).unwrap();
    let bd = deploygen::bind::bind(&m, &deploygen::bind::BindOptions::default()).unwrap();
    let notes = bd.notes.join("\n");
    assert!(notes.contains("inputs.npz key 'a' is f64; converted to f32"), "{notes}");
}

/// Deeploy writes integer arrays (int64, int8, …) for graph inputs and
/// references declared float32, and its runner casts them. Binding does
/// too, with a note, when every value is exact in f32.
#[test]
fn integer_data_of_a_float32_graph_is_converted_when_exact() {
    if !have_gcc() {
        return;
    }
    let mut b = ModelBuilder::new();
    b.input("a", F32, &[2, 3]).input("b", F32, &[2, 3]).node("Add", &["a", "b"], &["y"], vec![]).output(
        "y",
        F32,
        &[2, 3],
    );
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let (a, c) = ([-128i64, 0, 127, 1 << 24, -(1 << 24), 5], [1i64, -7, 3, 0, 0, -5]);
    let i8s: Vec<u8> = c.iter().map(|&v| v as i8 as u8).collect();
    let c8 = TensorData { dtype: deploygen::ir::DType::I8, shape: vec![2, 3], bytes: i8s };
    write_npz(&dir.path().join("inputs.npz"), &[("a", TensorData::from_i64(vec![2, 3], &a)), ("b", c8)]);
    let y: Vec<i64> = a.iter().zip(&c).map(|(x, z)| x + z).collect();
    write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_i64(vec![2, 3], &y))]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(6));
    let m = deploygen::load(dir.path()).unwrap();
    let bd = deploygen::bind::bind(&m, &deploygen::bind::BindOptions::default()).unwrap();
    let notes = bd.notes.join("\n");
    assert!(notes.contains("inputs.npz key 'a' is i64; converted to f32 for graph input 'a' (f32)"), "{notes}");
    assert!(notes.contains("inputs.npz key 'b' is i8; converted to f32 for graph input 'b' (f32)"), "{notes}");
    assert!(notes.contains("key 'y' is i64; converted to f32 for graph output 'y'"), "{notes}");
}

/// An integer value f32 cannot hold exactly (|v| > 2^24) is refused, and
/// the error names the key, the input and the value.
#[test]
fn integer_data_not_exact_in_float32_is_refused_naming_the_value() {
    let mut b = ModelBuilder::new();
    b.input("a", F32, &[3]).node("Relu", &["a"], &["y"], vec![]).output("y", F32, &[3]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let a = [1i64, (1 << 24) + 1, 2];
    write_npz(&dir.path().join("inputs.npz"), &[("a", TensorData::from_i64(vec![3], &a))]);
    write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_f32(vec![3], &[1.0, 0.0, 2.0]))]);
    let m = deploygen::load(dir.path()).unwrap();
    let err = deploygen::bind::bind(&m, &deploygen::bind::BindOptions::default()).unwrap_err().to_string();
    assert!(err.contains("key 'a' binds graph input 'a'"), "{err}");
    assert!(err.contains("i64 value 16777217 at flat index 1 is not exact in f32"), "{err}");
    // The same value in a reference is refused too.
    write_npz(&dir.path().join("inputs.npz"), &[("a", TensorData::from_i64(vec![3], &[1, 2, 3]))]);
    write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_i64(vec![3], &a))]);
    let err = deploygen::bind::bind(&m, &deploygen::bind::BindOptions::default()).unwrap_err().to_string();
    assert!(err.contains("key 'y' is the reference for graph output 'y'"), "{err}");
    assert!(err.contains("i64 value 16777217 at flat index 1 is not exact in f32"), "{err}");
}

/// Deeploy's RequantShift: `clip(floor((x * mul + add + div / 2) / div))`
/// to the signed or unsigned range of `n_levels`, mul and add per channel
/// (axis 1; quantlib writes `[C, 1, 1]` for a rank-3 x), the attributes as
/// one-value float tensors or ints, `n_levels_out` the older spelling.
#[test]
fn requant_shift_is_deeploys_rounding_shift_and_clip() {
    if !have_gcc() {
        return;
    }
    let x: Vec<f32> = vec![-300.0, -129.0, -128.0, -1.0, 0.0, 1.0, 127.0, 128.0, 1000.0, 63.0, 64.0, -65.0];
    let (mul, add) = ([2.0f32, -3.0], [0.0f32, 5.0]);
    let want = |signed: bool| -> Vec<f32> {
        let (lo, hi) = if signed { (-128i64, 127) } else { (0, 255) };
        x.iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = i / 6;
                let t = v as i64 * mul[c] as i64 + add[c] as i64 + 4;
                (t.div_euclid(8)).clamp(lo, hi) as f32
            })
            .collect()
    };
    for signed in [1, 0] {
        let mut b = ModelBuilder::new();
        b.input("x", F32, &[1, 2, 6])
            .init("mul", &[2, 1, 1], &mul)
            .init("add", &[2, 1, 1], &add)
            .node(
                "RequantShift",
                &["x", "mul", "add"],
                &["y"],
                vec![
                    common::attr_float("div", 8.0),
                    common::attr_int("n_levels_out", 256),
                    common::attr_int("signed", signed),
                ],
            )
            .output("y", F32, &[1, 2, 6]);
        let dir = tempfile::tempdir().unwrap();
        b.write(dir.path(), "network.onnx");
        write_npz(&dir.path().join("inputs.npz"), &[("x", TensorData::from_f32(vec![1, 2, 6], &x))]);
        let y = want(signed == 1);
        write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_f32(vec![1, 2, 6], &y))]);
        let o = run(dir.path());
        assert!(o.passed(), "signed {signed}: {}: {:?}\n{}", o.message, o.details, o.output);
    }
    // A div that is not a whole number is refused by name.
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 2]).init("m", &[1], &[1.0]).init("a", &[1], &[0.0]).node(
        "RequantShift",
        &["x", "m", "a"],
        &["y"],
        vec![common::attr_float("div", 2.5), common::attr_int("n_levels", 256)],
    );
    b.output("y", F32, &[1, 2]);
    let e = load_err(&b);
    assert!(e.contains("attribute 'div' = 2.5 is not a whole number"), "{e}");
}

/// Deeploy writes Pad's opset-2 `value` as an INT: read as that float,
/// with a warning naming node and attribute.
#[test]
fn an_int_where_a_float_is_expected_is_read_as_that_float() {
    let mut b = ModelBuilder::new();
    b.opsets = vec![("".into(), 2)];
    b.input("x", F32, &[1, 2]).node(
        "Pad",
        &["x"],
        &["y"],
        vec![common::attr_ints("pads", &[0, 1, 0, 1]), common::attr_int("value", 3)],
    );
    b.output("y", F32, &[1, 4]);
    let dir = tempfile::tempdir().unwrap();
    let p = b.write(dir.path(), "network.onnx");
    let m = deploygen::load(&p).unwrap();
    assert!(
        m.graph.warnings.iter().any(|w| w.contains("attribute 'value' is an INT (3) where a FLOAT is expected")),
        "{:?}",
        m.graph.warnings
    );
    let (_, n) = m.graph.nodes().next().unwrap();
    assert_eq!(n.float("value").unwrap(), Some(3.0));
}

/// Deeploy's integer MatMul folders declare int32 inputs and write int8
/// arrays: they bind (every value fits, a note says so) and the product
/// runs on int32, equal to the integer reference.
#[test]
fn int8_data_binds_int32_inputs_of_an_integer_matmul() {
    if !have_gcc() {
        return;
    }
    let (m, k, n) = (3usize, 5usize, 4usize);
    let a: Vec<i64> = (0..m * k).map(|i| (i as i64 * 37 % 255) - 128).collect();
    let b: Vec<i64> = (0..k * n).map(|i| (i as i64 * 91 % 255) - 127).collect();
    let y: Vec<i64> = (0..m * n).map(|o| (0..k).map(|j| a[o / n * k + j] * b[j * n + o % n]).sum()).collect();
    let mut mb = ModelBuilder::new();
    mb.input("a", common::I32, &[1, m as i64, k as i64])
        .input("b", common::I32, &[1, k as i64, n as i64])
        .node("MatMul", &["a", "b"], &["y"], vec![])
        .output("y", common::I32, &[1, m as i64, n as i64]);
    let dir = tempfile::tempdir().unwrap();
    mb.write(dir.path(), "network.onnx");
    let i8s = |v: &[i64], shape: Vec<usize>| TensorData {
        dtype: deploygen::ir::DType::I8,
        shape,
        bytes: v.iter().map(|&x| x as i8 as u8).collect(),
    };
    write_npz(&dir.path().join("inputs.npz"), &[("a", i8s(&a, vec![1, m, k])), ("b", i8s(&b, vec![1, k, n]))]);
    let y32 = TensorData::from_i64_as(deploygen::ir::DType::I32, vec![1, m, n], &y).unwrap();
    write_npz(&dir.path().join("outputs.npz"), &[("y", y32)]);
    let o = run(dir.path());
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some((m * n) as u64));
    let model = deploygen::load(dir.path()).unwrap();
    let bd = deploygen::bind::bind(&model, &deploygen::bind::BindOptions::default()).unwrap();
    let notes = bd.notes.join("\n");
    assert!(notes.contains("inputs.npz key 'a' is i8; converted to i32 for graph input 'a' (i32)"), "{notes}");
}
