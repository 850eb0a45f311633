//! The application API of a training project (`dg_model.h`) and its
//! client `demo.c`: trained through the API, a checkpoint exported and
//! imported, the prediction compared with onnxruntime's (`predict.npz`).
//! Each check is also shown failing: without the import the prediction
//! is wrong, and a checkpoint of another model or with one byte changed
//! is refused.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn have_gcc() -> bool {
    common::have_gcc(module_path!())
}

/// `deploygen build` of a zoo model, then `make -f Makefile.host demo`.
fn demo_project(work: &Path, model: &str, platform: &str, level: &str, cflags: &str) -> PathBuf {
    let out = work.join(format!("{model}-{platform}-{level}{}", if cflags.is_empty() { "" } else { "-x" }));
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(root().join("models").join(model))
        .args(["--platform", platform, "--default-mem", level, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "build {model}: {}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("make")
        .args(["-s", "-j2", "-f", "Makefile.host", "demo"])
        .arg(format!("EXTRA_CFLAGS={cflags}"))
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "make demo {model}: {}", String::from_utf8_lossy(&o.stderr));
    out
}

fn run(dir: &Path, env: &[(&str, &Path)]) -> (Output, String) {
    let mut c = Command::new("./demo");
    c.current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    (o, text)
}

/// What the manifest says the demo compares.
fn demo_compared(dir: &Path) -> u64 {
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("deploygen.json")).unwrap()).unwrap();
    m["model_api"]["demo_compared"].as_u64().unwrap()
}

#[test]
fn demo_trains_exports_imports_and_predicts() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for (model, platform, level) in
        [("simple_mlp", "host", "L2"), ("cnn_derived_adamw", "GAP9", "L3"), ("mlp_derived_accum3", "Siracusa", "L2")]
    {
        let dir = demo_project(work.path(), model, platform, level, "");
        let n = demo_compared(&dir);
        assert!(n > 0, "{model}: the demo compares nothing");
        let (o, text) = run(&dir, &[]);
        assert!(o.status.success(), "{model} {platform} {level}: demo failed:\n{text}");
        assert!(text.contains(&format!("Errors: 0 out of {n}\r\n")), "{model}: {text}");
    }
}

#[test]
fn without_the_import_the_prediction_is_wrong() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = demo_project(work.path(), "cnn_derived_adamw", "host", "L2", "-DDG_DEMO_SKIP_IMPORT");
    let (o, text) = run(&dir, &[]);
    assert!(!o.status.success(), "the demo passed without importing its checkpoint:\n{text}");
    assert!(text.contains("Errors: ") && !text.contains("Errors: 0 out of"), "{text}");
}

#[test]
fn a_checkpoint_of_another_model_or_changed_is_refused() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let cnn = demo_project(work.path(), "cnn_derived_adamw", "host", "L2", "");
    let mlp = demo_project(work.path(), "simple_mlp", "host", "L2", "");
    let saved = work.path().join("cnn.ckpt");
    let (o, text) = run(&cnn, &[("DG_DEMO_SAVE", &saved)]);
    assert!(o.status.success(), "{text}");

    // Its own checkpoint, read back from the file, loads and predicts.
    let (o, text) = run(&cnn, &[("DG_DEMO_LOAD", &saved)]);
    assert!(o.status.success() && text.contains("import of DG_DEMO_LOAD: status 0"), "{text}");

    // Another model's is refused, and nothing runs on it.
    let (o, text) = run(&mlp, &[("DG_DEMO_LOAD", &saved)]);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains("import of DG_DEMO_LOAD: status -5"), "{text}");

    // One changed byte, in the header or in the payload, is refused.
    let bytes = std::fs::read(&saved).unwrap();
    for at in [2, 9, 20, bytes.len() / 2, bytes.len() - 1] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x01;
        let f = work.path().join(format!("flipped-{at}.ckpt"));
        std::fs::write(&f, &flipped).unwrap();
        let (o, text) = run(&cnn, &[("DG_DEMO_LOAD", &f)]);
        assert_eq!(o.status.code(), Some(3), "byte {at} changed was loaded:\n{text}");
    }
    // A truncated one too.
    let f = work.path().join("short.ckpt");
    std::fs::write(&f, &bytes[..bytes.len() - 4]).unwrap();
    let (o, text) = run(&cnn, &[("DG_DEMO_LOAD", &f)]);
    assert_eq!(o.status.code(), Some(3), "{text}");
}

#[test]
fn a_model_without_predict_refs_fails_its_demo() {
    if !have_gcc() {
        return;
    }
    // A copy of a zoo model without predict.npz.
    let work = tempfile::tempdir().unwrap();
    let m = work.path().join("models").join("mlp_copy");
    std::fs::create_dir_all(&m).unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz", "train.toml"] {
        std::fs::copy(root().join("models/mlp_derived_sgd").join(f), m.join(f)).unwrap();
    }
    let out = work.path().join("p");
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&m)
        .args(["--platform", "host", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("make").args(["-s", "-j2", "-f", "Makefile.host", "demo"]).current_dir(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (o, text) = run(&out, &[]);
    assert!(!o.status.success(), "{text}");
    assert!(text.contains("FAILED: no references of the trained model's prediction"), "{text}");
}

#[test]
fn a_predict_file_for_another_tensor_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let m = work.path().join("mlp_copy");
    std::fs::create_dir_all(&m).unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz", "train.toml"] {
        std::fs::copy(root().join("models/mlp_derived_sgd").join(f), m.join(f)).unwrap();
    }
    // predict.npz of another model: its key is no forward output here.
    std::fs::copy(root().join("models/simple_mlp/predict.npz"), m.join("predict.npz")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&m)
        .args(["--platform", "host", "--out"])
        .arg(work.path().join("p"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("predict.npz") && err.contains("fc3.out") && err.contains("not a forward output"), "{err}");
    assert!(!work.path().join("p").exists());
}

#[test]
fn inspect_says_what_predict_runs() {
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("inspect")
        .arg(root().join("models/cnn_derived_adamw"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    let line = text.lines().find(|l| l.starts_with("predict ")).unwrap_or_else(|| panic!("no predict line:\n{text}"));
    assert!(line.contains("outputs logits") && line.contains("adds no memory"), "{line}");
    // An inference model has no such line.
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("inspect")
        .arg(root().join("models/kws_cnn"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).lines().any(|l| l.starts_with("predict ")));
}

/// After `make demo` (and `make`), `build --check` finds the folder as
/// generated and `build --force` may replace it: what make builds is not
/// the user's.
#[test]
fn make_outputs_are_no_difference_and_no_obstacle() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = demo_project(work.path(), "simple_mlp", "host", "L2", "");
    let o = Command::new("make").args(["-s", "-j2", "-f", "Makefile.host"]).current_dir(&dir).output().unwrap();
    assert!(o.status.success() && dir.join("app").is_file() && dir.join("demo").is_file());
    let model = root().join("models/simple_mlp");
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&model)
        .args(["--platform", "host", "--check"])
        .arg(&dir)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{said}");
    assert!(!said.contains("only in"), "{said}");
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&model)
        .args(["--platform", "host", "--force", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.join("demo").exists(), "the replaced folder still holds the old demo");
}
