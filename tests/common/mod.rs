//! Builds small ONNX files for tests, straight from the protobuf types.
#![allow(dead_code)]

mod builder;
pub mod c_text;
pub mod chain;
pub mod project;

pub use builder::*;

use std::path::{Path, PathBuf};

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

/// The runtime archive folder the test binaries share
/// (`target/tmp/runtime-cache`): each archive is built once per set of
/// flags for the whole suite (docs/testing.md, "The runtime is compiled once").
pub fn runtime_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache")
}

/// `make -s -j2 -f Makefile.host EXTRA_CFLAGS=… ARGS…` in the generated
/// project `dir`, linking the runtime from the shared archive for its
/// flags (built first when missing); without an archive the project
/// compiles its runtime itself, as a plain make does.
#[allow(dead_code)]
pub fn make_host(dir: &Path, extra_cflags: Option<&str>, args: &[&str]) -> std::process::Output {
    use deploygen::verify::cache;
    let vars = cache::MakeVars { cc: None, extra_cflags: extra_cflags.map(str::to_string) };
    let lib = cache::archive(&runtime_cache(), dir, &vars, 2, std::time::Duration::from_secs(900));
    let mut cmd = std::process::Command::new("make");
    cmd.args(["-s", "-j2", "-f", "Makefile.host"]).args(args).current_dir(dir);
    vars.apply(&mut cmd);
    if let Ok(lib) = lib {
        cmd.arg(format!("RUNTIME_LIB={}", lib.display()));
    }
    cmd.output().unwrap()
}
