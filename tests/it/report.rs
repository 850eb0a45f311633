//! `deploygen report`: one row per model × platform × level with figures
//! that hold up against what the pieces measure on their own.

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

fn deploygen() -> Command {
    Command::cargo_bin("deploygen").unwrap()
}

/// `build --timings` reports its own peak memory.
fn build_peak_kb() -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let o = deploygen()
        .args(["build", "models/simple_mlp", "--platform", "GAP9", "--default-mem", "L2", "--timings", "--out"])
        .arg(dir.path().join("p"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let line = text.lines().find(|l| l.trim_start().starts_with("timings:")).expect("a timings line");
    for stage in ["import", "lower", "bind", "check", "plan", "emit", "write", "total"] {
        assert!(line.contains(stage), "{line}");
    }
    line.split("peak RSS ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap().parse().unwrap()
}

fn report(args: &[&str]) -> Vec<serde_json::Value> {
    let o = deploygen().arg("report").args(args).args(["--runs", "1", "--format", "json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap().as_array().unwrap().clone()
}

#[test]
fn the_report_measures_each_case() {
    let rows = report(&["models/simple_mlp", "--platform", "GAP9", "--platform", "host", "--default-mem", "L2"]);
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert!(r["error"].is_null(), "{r}");
        assert!(r["generate_ms"].as_f64().unwrap() > 0.0);
        // Each weight carried once; initializers read at generation time
        // (a Reshape's shape) are not deployed at all.
        let ratio = r["constants_ratio"].as_f64().unwrap();
        assert!(ratio > 0.99 && ratio <= 1.0, "constants ÷ model weights = {ratio}");
        let eff = r["levels"]["L2"][2].as_f64().unwrap();
        assert!(eff > 0.0 && eff <= 1.0, "{r}");
    }
    // The host row ran the generated step and sets it against onnxruntime.
    let host = &rows[1];
    assert_eq!(host["platform"], "host");
    assert!(host["step_ms"].as_f64().unwrap() > 0.0, "{host}");
    assert!(host["ratio_to_ort"].as_f64().is_some(), "{host}");
}

#[test]
fn the_peak_memory_is_the_builds_own() {
    // resnet8 first: the report process then holds more memory than
    // simple_mlp's build needs, and a child's rusage would carry that in
    // (the old figure read 2-4x too high).
    let rows =
        report(&["models/resnet8", "models/simple_mlp", "--platform", "GAP9", "--default-mem", "L2", "--no-run"]);
    let own = build_peak_kb();
    let rss = rows[1]["peak_rss_kb"].as_u64().unwrap();
    assert_eq!(rows[1]["model"], "simple_mlp");
    assert!(rss * 2 > own && rss < own * 3 / 2, "report says {rss} kB, build itself {own} kB");
}

/// Build simple_mlp for GAP9 (host emulation) into `dir`, compile it with
/// `make_args` and run it; the app's stdout.
fn profiled_run(dir: &std::path::Path, make_args: &[&str]) -> String {
    let o = deploygen().args(["build", "models/simple_mlp", "--platform", "GAP9", "--out"]).arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m =
        Command::new("make").args(["-f", "Makefile.host", "-j2"]).args(make_args).current_dir(dir).output().unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let app = Command::new(dir.join("app")).current_dir(dir).output().unwrap();
    assert!(app.status.success(), "{}", String::from_utf8_lossy(&app.stdout));
    String::from_utf8(app.stdout).unwrap()
}

/// The nodes of a generated project, from each node block's comment
/// `/* step N: Op '…' …`: (step, op).
fn generated_nodes(dir: &std::path::Path) -> Vec<(u64, String)> {
    let mut out = vec![];
    for f in ["TrainingNetwork.c", "OptimizerNetwork.c"] {
        for l in std::fs::read_to_string(dir.join(f)).unwrap().lines() {
            if let Some(rest) = l.trim().strip_prefix("/* step ") {
                let (step, rest) = rest.split_once(": ").unwrap();
                out.push((step.parse().unwrap(), rest.split(' ').next().unwrap().to_string()));
            }
        }
    }
    out
}

#[test]
fn a_profiled_run_gives_each_node_its_cycles() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let out = profiled_run(&dir, &["DG_PROFILE=1"]);
    std::fs::write(tmp.path().join("run.txt"), &out).unwrap();
    let svg = tmp.path().join("chart.svg");
    let o = deploygen()
        .args(["report", "--format", "json", "--profile"])
        .arg(tmp.path().join("run.txt"))
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let layers: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    // Every node of both networks, each once per run of its network (the
    // training network runs once per pass, the optimizer once per step).
    let nodes = generated_nodes(&dir);
    assert!(nodes.len() > 10, "{nodes:?}");
    let got: Vec<(u64, String)> =
        layers.iter().map(|l| (l["step"].as_u64().unwrap(), l["op"].as_str().unwrap().to_string())).collect();
    assert_eq!(got, nodes);
    for l in &layers {
        assert!(l["runs"].as_u64().unwrap() >= 1, "{l}");
    }
    let gemm = layers.iter().find(|l| l["op"] == "Gemm").unwrap();
    assert!(gemm["cycles"].as_u64().unwrap() > 0, "a Gemm takes time: {gemm}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(chart.matches("<rect x=").count(), nodes.len(), "one bar per node");
}

#[test]
fn without_dg_profile_nothing_is_printed_and_the_report_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let out = profiled_run(&tmp.path().join("p"), &[]);
    assert!(!out.contains("BENCH node"), "{out}");
    std::fs::write(tmp.path().join("run.txt"), &out).unwrap();
    let o = deploygen().args(["report", "--profile"]).arg(tmp.path().join("run.txt")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("run.txt") && err.contains("no `BENCH node` lines"), "{err}");
}

/// A case the report cannot measure is a row that says why, and the run
/// exits 2 naming it, after writing the whole report.
#[test]
fn a_case_that_cannot_be_measured_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("garbage");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("network.onnx"), b"\x07not onnx at all").unwrap();
    let o = deploygen()
        .arg("report")
        .arg(&bad)
        .args(["models/simple_mlp", "--platform", "host", "--default-mem", "L2", "--no-run", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2, "both rows are written");
    assert!(rows[1]["error"].is_null());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 of 2 case(s) could not be measured; the first, garbage/host-L2:"), "{err}");
}
