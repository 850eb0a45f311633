//! Conventions of third-party test folders (issue 22): each test builds a
//! small model folder the way such a folder is written and checks that
//! deploygen honours the convention exactly or refuses it by name.

mod common;

use std::path::Path;
use std::process::Command;

use common::{ModelBuilder, F32};
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

fn run(dir: &Path, kind: Kind) -> Outcome {
    let mut c = Case::new(dir, "third_party", "host", "L2", kind);
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
    let o = run(dir.path(), Kind::Inference);
    assert!(o.passed(), "{}: {:?}\n{}", o.message, o.details, o.output);
    assert_eq!(o.compared, Some(16));

    // The other infinity, and a NaN reference, are still wrong.
    y[0] = f32::INFINITY;
    y[15] = f32::NAN;
    write_npz(&dir.path().join("outputs.npz"), &[("y", TensorData::from_f32(vec![1, 1, 4, 4], &y))]);
    let o = run(dir.path(), Kind::Inference);
    assert_eq!(o.stage, Some(Stage::Result), "{}\n{}", o.message, o.output);
    assert_eq!(o.errors, Some(2), "{}", o.output);
}
