//! The integer-only approximations quantlib exports (iSoftmax, ITAMax,
//! iRMSNorm, iLayerNorm, iHardswish, iGELU, TrueIntegerDiv, IntegerDiv,
//! iNoNorm, IntegerMean): every folder of `tests/fixtures/int_approx`
//! (made by `tools/make_int_approx_cases.py`, whose formulas its `--check`
//! ties to Deeploy's own references) passes `deploygen test` on the host
//! and on GAP9's emulation at L2 and L3, every value equal to the
//! reference; one value off by one fails the run.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{ModelBuilder, F32};

fn deploygen_test(cases: &[std::path::PathBuf], targets: &[&str], cwd: &Path) -> Output {
    let status = cwd.join("status.toml");
    std::fs::write(&status, "").unwrap();
    Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("test")
        .args(cases)
        .args(targets)
        .arg("--status")
        .arg(&status)
        .arg("--cache-dir")
        .arg(common::runtime_cache())
        .args(["-j", "2"])
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn verdicts(out: &Output) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().filter(|l| l.starts_with("PASSED") || l.starts_with("FAILED")).map(str::to_string).collect()
}

#[test]
fn integer_approximations_give_deeploys_values_exactly() {
    if !common::have_gcc("integer_approximations_give_deeploys_values_exactly") {
        return;
    }
    let dir = common::root().join("tests/fixtures/int_approx");
    let mut cases: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    cases.sort();
    assert!(cases.len() >= 12, "the cases of tools/make_int_approx_cases.py are in {}", dir.display());
    let tmp = tempfile::tempdir().unwrap();
    let targets = ["--platform", "host", "--platform", "GAP9", "--default-mem", "L2", "--default-mem", "L3"];
    let out = deploygen_test(&cases, &targets, tmp.path());
    let v = verdicts(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(v.len(), cases.len() * 4, "one verdict per case and target:\n{stdout}");
    // Every value compared, and exactly: the references hold integers.
    let bad: Vec<_> = v.iter().filter(|l| !l.starts_with("PASSED  ") || !l.contains(", compared exactly")).collect();
    assert!(bad.is_empty(), "{bad:#?}\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
}

/// A reference one off at its largest value fails: integer references
/// of an f32 graph are compared with zero tolerance, where the float
/// tolerance (0.0005 + 0.001 x |ref|) would pass anything within 243.
#[test]
fn one_value_off_by_one_fails() {
    if !common::have_gcc("one_value_off_by_one_fails") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("igelu");
    std::fs::create_dir(&case).unwrap();
    let src = common::root().join("tests/fixtures/int_approx/igelu");
    for f in ["network.onnx", "inputs.npz"] {
        std::fs::copy(src.join(f), case.join(f)).unwrap();
    }
    let npz = deploygen::bind::npz::read_all(&src.join("outputs.npz")).unwrap();
    let (key, y) = npz.arrays.into_iter().next().unwrap();
    let mut v = y.to_i64().unwrap();
    let at = (0..v.len()).max_by_key(|&i| v[i].abs()).unwrap();
    assert!(v[at].abs() > 100_000, "the case has large values: {}", v[at]);
    v[at] += 1;
    let y2 = deploygen::ir::TensorData::from_i64(y.shape.clone(), &v);
    std::fs::write(case.join("outputs.npz"), deploygen::bind::npz::write_npz(&[(key.as_str(), &y2)]).unwrap()).unwrap();
    let out = deploygen_test(&[case], &["--platform", "host"], tmp.path());
    let v = verdicts(&out);
    assert_eq!(v.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(v[0].starts_with("FAILED") && v[0].contains("1 of 200 compared values are wrong"), "{v:?}");
}

fn load_err(b: &ModelBuilder) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = b.write(dir.path(), "network.onnx");
    match deploygen::load(&p) {
        Ok(_) => panic!("the model was accepted"),
        Err(e) => e.to_string(),
    }
}

/// What Deeploy's kernels cannot compute is refused by name: a softmax
/// over another axis than the last, a D that is no power of two.
#[test]
fn unsupported_forms_are_refused_by_name() {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 8]).node(
        "ITAMax",
        &["x"],
        &["y"],
        vec![common::attr_float("n_levels", 256.0), common::attr_int("axis", 0)],
    );
    b.output("y", F32, &[2, 8]);
    let e = load_err(&b);
    assert!(e.contains("ITAMax") && e.contains("axis 0 is not the last one"), "{e}");

    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 8]).init("w", &[8], &[1.0; 8]).node(
        "iRMSNorm",
        &["x", "w"],
        &["y"],
        vec![common::attr_int("D", 1000), common::attr_int("n_levels", 256)],
    );
    b.output("y", F32, &[2, 8]);
    let e = load_err(&b);
    assert!(e.contains("attribute 'D' = 1000 must be a power of two"), "{e}");
}

/// Hostile data (±1e30, NaN, ±3e9 where integers are expected) gives
/// defined results: under the sanitizers every case runs to its
/// comparison, which the changed values then fail.
#[test]
fn values_far_outside_the_integers_run_without_undefined_behaviour() {
    if !common::have_gcc("values_far_outside_the_integers_run_without_undefined_behaviour") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = common::root().join("tests/fixtures/int_approx");
    let mut cases = vec![];
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let case = tmp.path().join(e.file_name());
        std::fs::create_dir(&case).unwrap();
        for f in ["network.onnx", "outputs.npz"] {
            std::fs::copy(e.path().join(f), case.join(f)).unwrap();
        }
        let npz = deploygen::bind::npz::read_all(&e.path().join("inputs.npz")).unwrap();
        let (key, x) = npz.arrays.into_iter().next().unwrap();
        let mut v = x.to_f32().or_else(|| x.to_i64().map(|i| i.iter().map(|&a| a as f32).collect())).unwrap();
        let n = v.len();
        for (i, bad) in [(0, 1e30f32), (1, -1e30), (2, f32::NAN), (3, 3e9), (n - 1, -3e9)] {
            v[i] = bad;
        }
        let x2 = deploygen::ir::TensorData::from_f32(x.shape.clone(), &v);
        let bytes = deploygen::bind::npz::write_npz(&[(key.as_str(), &x2)]).unwrap();
        std::fs::write(case.join("inputs.npz"), bytes).unwrap();
        cases.push(case);
    }
    cases.sort();
    // The int32 case cannot take floats: it keeps its own data.
    cases.retain(|c| !c.ends_with("ihardswish_i32"));
    let status = tmp.path().join("status.toml");
    std::fs::write(&status, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("test")
        .args(&cases)
        .args(["--platform", "host", "--sanitize", "--status"])
        .arg(&status)
        .arg("--cache-dir")
        .arg(common::runtime_cache())
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let v = verdicts(&out);
    assert_eq!(v.len(), cases.len(), "{}", String::from_utf8_lossy(&out.stdout));
    let bad: Vec<_> = v.iter().filter(|l| !l.contains("INCORRECT_RESULT")).collect();
    assert!(bad.is_empty(), "{bad:#?}");
}
