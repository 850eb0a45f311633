//! Builds small ONNX files for tests, straight from the protobuf types.
#![allow(dead_code)]

pub mod c_text;
pub mod chain;
pub mod project;

use std::path::{Path, PathBuf};

use deploygen::import::pb;
use prost::Message;

pub const F32: i32 = 1;
pub const I64: i32 = 7;
pub const I32: i32 = 6;
pub const BOOL: i32 = 9;

#[derive(Default)]
pub struct ModelBuilder {
    pub graph: pb::GraphProto,
    pub opsets: Vec<(String, i64)>,
}

pub fn value(name: &str, dtype: i32, shape: &[i64]) -> pb::ValueInfoProto {
    let dims = shape
        .iter()
        .map(|&d| pb::tensor_shape_proto::Dimension {
            value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(d)),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: Some(dtype),
                shape: Some(pb::TensorShapeProto { dim: dims }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn attr_int(name: &str, v: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

pub fn attr_ints(name: &str, v: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::Ints as i32),
        ints: v.to_vec(),
        ..Default::default()
    }
}

pub fn attr_float(name: &str, v: f32) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::Float as i32),
        f: Some(v),
        ..Default::default()
    }
}

pub fn attr_str(name: &str, v: &str) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::String as i32),
        s: Some(v.as_bytes().to_vec()),
        ..Default::default()
    }
}

impl ModelBuilder {
    pub fn new() -> Self {
        ModelBuilder { opsets: vec![("".into(), 17), ("com.microsoft".into(), 1)], ..Default::default() }
    }

    pub fn input(&mut self, name: &str, dtype: i32, shape: &[i64]) -> &mut Self {
        self.graph.input.push(value(name, dtype, shape));
        self
    }

    pub fn output(&mut self, name: &str, dtype: i32, shape: &[i64]) -> &mut Self {
        self.graph.output.push(value(name, dtype, shape));
        self
    }

    /// An f32 initializer in raw_data.
    pub fn init(&mut self, name: &str, shape: &[i64], values: &[f32]) -> &mut Self {
        self.graph.initializer.push(pb::TensorProto {
            name: Some(name.into()),
            dims: shape.to_vec(),
            data_type: Some(F32),
            raw_data: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
            ..Default::default()
        });
        self
    }

    /// An i64 initializer in the typed field.
    pub fn init_i64(&mut self, name: &str, values: &[i64]) -> &mut Self {
        self.graph.initializer.push(pb::TensorProto {
            name: Some(name.into()),
            dims: vec![values.len() as i64],
            data_type: Some(I64),
            int64_data: values.to_vec(),
            ..Default::default()
        });
        self
    }

    pub fn node(&mut self, op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<pb::AttributeProto>) -> &mut Self {
        self.node_in(op, "", inputs, outputs, attrs)
    }

    pub fn node_in(
        &mut self,
        op: &str,
        domain: &str,
        inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<pb::AttributeProto>,
    ) -> &mut Self {
        let i = self.graph.node.len();
        self.graph.node.push(pb::NodeProto {
            name: Some(format!("{op}_{i}")),
            op_type: Some(op.into()),
            domain: Some(domain.into()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            attribute: attrs,
            ..Default::default()
        });
        self
    }

    pub fn bytes(&self) -> Vec<u8> {
        let model = pb::ModelProto {
            ir_version: Some(8),
            opset_import: self
                .opsets
                .iter()
                .map(|(d, v)| pb::OperatorSetIdProto { domain: Some(d.clone()), version: Some(*v) })
                .collect(),
            graph: Some(pb::GraphProto { name: Some("test".into()), ..self.graph.clone() }),
            ..Default::default()
        };
        model.encode_to_vec()
    }

    pub fn write(&self, dir: &Path, file: &str) -> PathBuf {
        let p = dir.join(file);
        std::fs::write(&p, self.bytes()).unwrap();
        p
    }
}

/// The small MLP graph most tests start from: x[2,4] -> Gemm -> Relu -> y[2,3].
pub fn mlp() -> ModelBuilder {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 4])
        .init("w", &[3, 4], &[0.5; 12])
        .init("b", &[3], &[0.1; 3])
        .node("Gemm", &["x", "w", "b"], &["h"], vec![attr_int("transB", 1)])
        .node("Relu", &["h"], &["y"], vec![])
        .output("y", F32, &[2, 3]);
    b
}

/// The crate root: `models/`, `tests/fixtures/` live here.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A zoo model folder; the zoo is committed, so a missing one is a broken
/// checkout.
pub fn zoo(name: &str) -> PathBuf {
    let p = root().join("models").join(name);
    assert!(p.join("network.onnx").is_file(), "zoo model {name} missing: run tools/make_models.py");
    p
}

/// A bad-input fixture folder under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    let p = root().join("tests/fixtures").join(name);
    assert!(p.is_dir(), "fixture {name} missing: run tools/make_models.py");
    p
}

/// A copy of a model folder in a temp dir, to rewrite its test data.
pub fn copy_model(src: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    dir
}

/// Rewrite `inputs.npz` of a model folder through `edit`.
pub fn edit_inputs(dir: &Path, edit: impl FnOnce(&mut Vec<(String, deploygen::ir::TensorData)>)) {
    use deploygen::bind::npz;
    let path = dir.join("inputs.npz");
    let mut arrays: Vec<(String, deploygen::ir::TensorData)> =
        npz::read_all(&path).unwrap().arrays.into_iter().collect();
    edit(&mut arrays);
    let refs: Vec<(&str, &deploygen::ir::TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&path, npz::write_npz(&refs).unwrap()).unwrap();
}

/// Path of a conformance model from `../shared/conformance`, next to this
/// checkout. A test never passes by finding nothing: when `CI` is set, a
/// missing model is a failure (this panics); elsewhere the test says on
/// stdout that it skipped — written past the test harness's capture, so
/// `cargo test` shows the line — and gets `None`.
pub fn conformance(test: &str, name: &str) -> Option<PathBuf> {
    let p = root().join("../shared/conformance").join(name);
    let record = skip_record(test, name);
    if p.join("network.onnx").is_file() {
        let _ = std::fs::remove_file(&record);
        return Some(p);
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: CI is set, but the conformance model {} is missing", p.display());
    }
    use std::io::Write;
    // Not println!: libtest captures that and shows it only for failures.
    let line = format!("SKIPPED: {test}: {} is not next to this checkout (with CI set this fails)\n", p.display());
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    // Counted at the end of the run (tests/zz_skipped.rs).
    if let Some(dir) = record.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&record, &line);
    None
}

/// A test that cannot run here because `what` is missing: under CI a
/// failure (this panics), elsewhere a SKIPPED line on stdout, counted at
/// the end of the run like [`conformance`]'s.
pub fn skip_unless_ci(test: &str, what: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{test}: CI is set, but {what}");
    }
    skip(test, &format!("{what} (with CI set this fails)"));
}

/// A test that needs what CI does not install either (Python with
/// onnxruntime): a SKIPPED line, counted at the end of the run.
#[allow(dead_code)]
pub fn skip(test: &str, what: &str) {
    use std::io::Write;
    let line = format!("SKIPPED: {test}: {what}\n");
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    let record = skip_record(test, "tools");
    if let Some(dir) = record.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&record, &line);
}

/// Whether gcc runs here. Without it the caller returns early: under CI
/// that is a failure, elsewhere a SKIPPED line counted at the end of the run.
#[allow(dead_code)]
pub fn have_gcc(test: &str) -> bool {
    let ok = std::process::Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success());
    if ok {
        ran(test);
    } else {
        skip_unless_ci(test, "no gcc on this machine");
    }
    ok
}

/// The test that called [`skip_unless_ci`] or [`skip`] ran for real: its
/// record goes.
pub fn ran(test: &str) {
    let _ = std::fs::remove_file(skip_record(test, "tools"));
}

/// Where a skipped test leaves its SKIPPED line for the end-of-run count:
/// one file per (test, model), removed when the test runs for real.
pub fn skip_record(test: &str, name: &str) -> PathBuf {
    let file: String = format!("{test}--{name}").chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect();
    skip_dir().join(file)
}

pub fn skip_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests")
}

/// One `.onnx` file imported and typed (import, then lowering's typing pass).
#[allow(dead_code)]
pub fn read_typed(p: &std::path::Path) -> deploygen::Result<deploygen::ir::Graph> {
    let mut g = deploygen::import::read_graph(p)?;
    deploygen::lower::infer(&mut g)?;
    Ok(g)
}

/// An L1 capacity for `platform` whose budget above the reserved stacks
/// is `budget` bytes: small-L1 tests state the room left for tiles, which
/// does not move when the stacks grow or shrink.
#[allow(dead_code)]
pub fn l1_with_budget(platform: &str, budget: u64) -> u64 {
    let p = deploygen::target::Platform::by_name(platform).unwrap();
    p.level(deploygen::target::Level::L1).reserved_bytes() + budget
}

/// A training step of `n` (MatMul + Relu) blocks, x [4, 8] -> logits
/// [4, 8]: an inference chain with a train.toml (mse, sgd), written to
/// `dir`. Its step has 2n recompute candidates.
pub fn matmul_relu_chain(dir: &Path, n: usize) {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[4, 8]);
    let mut prev = "x".to_string();
    for i in 0..n {
        let w = format!("w{i}");
        let vals: Vec<f32> = (0..64).map(|k| ((k * 7 + i) % 13) as f32 * 0.01 - 0.06).collect();
        b.init(&w, &[8, 8], &vals);
        let (m, r) = (format!("m{i}"), format!("r{i}"));
        b.node("MatMul", &[&prev, &w], &[&m], vec![]).node("Relu", &[&m], &[&r], vec![]);
        prev = r;
    }
    b.node("Identity", &[&prev], &["logits"], vec![]).output("logits", F32, &[4, 8]);
    b.write(dir, "network.onnx");
    std::fs::write(dir.join("train.toml"), "loss = \"mse\"\noptimizer = \"sgd\"\nlearning_rate = 0.1\n").unwrap();
}
