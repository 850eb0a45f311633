//! The harness's test data and references in L3 (docs/cli.md, "The
//! commands", and docs/architecture.md, "Memory planning"): when L2 is
//! short (or with `--test-data L3`) they leave L2 before any of the
//! network's own buffers, the harness loads `hex/testdata.bin` into L3 and
//! streams from it, and the run still compares every value — a changed or
//! missing image makes it fail. A capacity error names the harness's bytes
//! and never hints at more L2 than the chip has.

use crate::common;

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use deploygen::cli::build::{generate, Args as BuildArgs};
use deploygen::plan::{Kind, Level, TEST_DATA};

fn build(model: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::cargo_bin("deploygen")
        .unwrap()
        .arg("build")
        .arg(model)
        .args(["--platform", "GAP9", "--default-mem", "L2", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn have_gcc() -> bool {
    common::have_gcc(module_path!())
}

/// make, then ./app: (exit code, stdout).
fn make_and_run(dir: &Path) -> (i32, String) {
    let o = Command::new("make").args(["-s", "-f", "Makefile.host"]).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "make failed:\n{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("./app").current_dir(dir).env("DG_HOST_QUIET", "1").output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned())
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("deploygen.json")).unwrap()).unwrap()
}

#[test]
fn test_data_in_l3_is_streamed_and_still_compared() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let o = build(&common::zoo("simple_mlp"), &out, &["--test-data", "L3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("in L3 (hex/testdata.bin, streamed by the harness)"), "{stdout}");
    let m = manifest(&out);
    assert_eq!(m["test_data"]["level"], "L3", "{m}");
    let n = m["expected_compared"].as_u64().unwrap();
    // No reference or data array is left in L2.
    let refs = std::fs::read_to_string(out.join("testoutputs.h")).unwrap();
    let data = std::fs::read_to_string(out.join("testinputs.h")).unwrap();
    assert!(!refs.contains("PI_L2 static float") && !data.contains("PI_L2 static"), "{refs}\n{data}");
    let image = out.join("hex/testdata.bin");
    assert_eq!(std::fs::metadata(&image).unwrap().len(), m["test_data"]["bytes"].as_u64().unwrap());

    let (rc, run) = make_and_run(&out);
    assert_eq!(rc, 0, "{run}");
    assert!(run.contains(&format!("Errors: 0 out of {n}\r\n")), "{run}");

    // One reference changed in the image: the run sees it. The last 4 bytes
    // are a reference value (the loss references or the last tensor's).
    let mut bytes = std::fs::read(&image).unwrap();
    let k = bytes.len() - 4;
    let v = f32::from_le_bytes(bytes[k..].try_into().unwrap()) + 1.0;
    bytes[k..].copy_from_slice(&v.to_le_bytes());
    std::fs::write(&image, &bytes).unwrap();
    let o = Command::new("./app").current_dir(&out).env("DG_HOST_QUIET", "1").output().unwrap();
    let run = String::from_utf8_lossy(&o.stdout);
    assert_ne!(o.status.code(), Some(0), "{run}");
    assert!(run.contains(&format!("Errors: 1 out of {n}\r\n")), "{run}");

    // No image: Init fails loudly, nothing is compared.
    std::fs::remove_file(&image).unwrap();
    let o = Command::new("./app").current_dir(&out).env("DG_HOST_QUIET", "1").output().unwrap();
    let run = String::from_utf8_lossy(&o.stdout);
    assert_ne!(o.status.code(), Some(0), "{run}");
    assert!(run.contains("FATAL: cannot load the test data (testdata.bin) into L3"), "{run}");
}

#[test]
fn when_l2_is_short_the_test_data_leaves_it_first() {
    // resnet8 for GAP9 at L2, every activation kept (no recompute), does
    // not fit with its 362,904 B of test data in L2: the test data moves to
    // L3 and every weight stays baked in L2.
    let off = || deploygen::cli::plan_args::PlanArgs { recompute: Some("off".into()), ..Default::default() };
    let args = BuildArgs {
        model: common::zoo("resnet8"),
        platform: "GAP9".into(),
        default_mem: Some("L2".into()),
        plan: off(),
        ..Default::default()
    };
    let b = generate(&args).unwrap();
    let td = b.plan.buffers.iter().find(|x| x.kind == Kind::Static && x.name == TEST_DATA).unwrap();
    assert_eq!(td.level, Level::L3, "{}", td.level_reason);
    assert!(b.plan.decisions.iter().any(|d| d.contains("to L3 first")), "{:?}", b.plan.decisions);
    let l3_weights: Vec<&str> =
        b.plan.buffers.iter().filter(|x| x.kind.is_weight() && x.level == Level::L3).map(|x| x.name.as_str()).collect();
    assert!(l3_weights.is_empty(), "weights moved although the test data could: {l3_weights:?}");

    // Asked to keep it in L2, the network's weights move instead.
    let plan = deploygen::cli::plan_args::PlanArgs { test_data: Some("L2".into()), ..off() };
    let b = generate(&BuildArgs { plan, ..args }).unwrap();
    let td = b.plan.buffers.iter().find(|x| x.kind == Kind::Static && x.name == TEST_DATA).unwrap();
    assert_eq!(td.level, Level::L2);
    assert!(b.plan.buffers.iter().any(|x| x.kind.is_weight() && x.level == Level::L3));
}

#[test]
fn the_capacity_error_names_the_harness_bytes_and_hints_within_the_chip() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    // 1.2 MB of L2 cannot hold resnet8's arena (every activation kept)
    // with its test data kept in L2; what it would need is more than
    // GAP9's 1,638,400 B of L2.
    let o = build(&common::zoo("resnet8"), &out, &["--l2", "1200000", "--test-data", "L2", "--recompute", "off"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("harness data"), "{err}");
    assert!(err.contains("the harness's own"), "{err}");
    assert!(err.contains("--test-data L3"), "{err}");
    for hint in err.split("try:").nth(1).unwrap_or("").split(", or ") {
        if let Some(bytes) = hint.trim().strip_prefix("--l2 ") {
            let n: u64 = bytes.split_whitespace().next().unwrap().parse().unwrap();
            assert!(n <= 1_638_400, "hint asks for {n} B of L2, more than GAP9 has: {err}");
        }
    }
    assert!(!out.exists(), "nothing is written");
}
