//! `deploygen triage` (docs/triage.md, "`deploygen triage`"): the
//! missing-input workflow end to end, on
//! copies of the fixtures in a temporary repository root (never on
//! `tests/fixtures/` or `models/` themselves).
//!
//! The tests call the command line, which runs every case on the host
//! (`triage::runner::default_runner`): passes are real comparisons.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::*;
use deploygen::bind::npz;
use deploygen::triage::runner::{self, CaseOutcome};
use deploygen::triage::{self, Options, STALE_REFS_REASON};
use deploygen::verify::status::{Entry, Status, StatusTable};
use deploygen::verify::Stage;
use predicates::prelude::*;

/// A repository root holding copies of `fixtures` under `tests/fixtures/`
/// and a status table.
fn repo(fixtures: &[&str], status: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for f in fixtures {
        copy_into(&fixture(f), &root.path().join("tests/fixtures").join(f));
    }
    std::fs::write(root.path().join("status.toml"), status).unwrap();
    root
}

fn copy_into(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
    }
}

fn triage_cmd(root: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("deploygen").unwrap().arg("triage").args(args).arg("--root").arg(root).assert()
}

fn entry(root: &Path, key: &str) -> Entry {
    StatusTable::read(&root.join("status.toml")).unwrap().get(key).cloned().unwrap_or_else(|| panic!("no {key}"))
}

fn xfail(key: &str, reason: &str) -> String {
    format!("# triage tests\n[\"{key}\"]\nstatus = \"KNOWN_FAILURE_XFAIL\"\nstage = \"FAILED_BIND\"\nreason = \"{reason}\"\nevidence = \"seen\"\n")
}

const ML_KEY: &str = "missing_labels/host-L2-training";
const TARGETS: &str = "Model expects targets to be passed while in training mode";

fn read_keys(p: &Path) -> Vec<(String, deploygen::ir::TensorData)> {
    npz::read_all(p).unwrap().arrays.into_iter().collect()
}

#[test]
fn missing_labels_fix_adds_targets_and_the_entry_names_the_fixed_file() {
    let root = repo(&["missing_labels"], &xfail(ML_KEY, TARGETS));
    let dir = root.path().join("tests/fixtures/missing_labels");
    let original = std::fs::read(dir.join("inputs.npz")).unwrap();
    let out = triage_cmd(root.path(), &[ML_KEY, "--fix"])
        .code(0)
        .stdout(predicate::str::contains("flavor    missing_targets"))
        .stdout(predicate::str::contains(TARGETS))
        .stdout(predicate::str::contains("labels                   i64 [2]              MISSING"))
        .stdout(predicate::str::contains("added targets 'labels' (i64 [2]) for 4 mini-batch(es)"))
        .stdout(predicate::str::contains("inputs.triage.npz"))
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    // Written next to the original, never over it.
    assert_eq!(std::fs::read(dir.join("inputs.npz")).unwrap(), original);
    let fixed = read_keys(&dir.join("inputs.triage.npz"));
    for k in ["labels", "mb1_labels", "mb2_labels", "mb3_labels"] {
        let (_, v) = fixed.iter().find(|(n, _)| n == k).unwrap_or_else(|| panic!("no {k}"));
        assert_eq!(v.to_i64().unwrap(), vec![1, 1], "{k}: one label per sample in [1, 4)");
    }
    // The case still reads inputs.npz: it passes once the fixed file
    // replaces it, and the entry says so (it is not EXPECTED_PASSING yet).
    let e = entry(root.path(), ML_KEY);
    assert_eq!((e.status, e.reason.as_str()), (Status::KnownFailure, TARGETS), "{out}");
    assert!(e.evidence.contains("inputs.triage.npz"), "{e:?}");
    assert!(std::fs::read_to_string(root.path().join("status.toml")).unwrap().starts_with("# triage tests\n"));
    assert!(out.contains(&format!("status    wrote {}", root.path().join("status.toml").display())), "{out}");
    // No inference model beside a fixture: one is derived (see
    // missing_labels_fix_reports_its_derived_inference_variant_honestly).
    assert!(out.contains("inference missing_labels/host-L2-inference (derived"), "{out}");
    assert!(!out.contains("nothing was compared"), "{out}");
}

#[test]
fn without_fix_the_failure_is_recorded_with_its_canonical_reason() {
    let root = repo(&["missing_labels"], "");
    triage_cmd(root.path(), &[ML_KEY]).code(0).stdout(predicate::str::contains("no --fix"));
    let e = entry(root.path(), ML_KEY);
    assert_eq!((e.status, e.reason.as_str()), (Status::KnownFailure, TARGETS));
    assert_eq!(e.stage, Some(Stage::Bind));
    assert!(e.evidence.contains("inputs.npz has no key 'labels'"));
    assert!(!root.path().join("tests/fixtures/missing_labels/inputs.triage.npz").exists());
}

/// missing_labels with references computed for other labels (those of
/// tiny_classifier: same model, weights and inputs).
fn stale_refs_repo() -> tempfile::TempDir {
    let root = repo(&["missing_labels"], &xfail(ML_KEY, TARGETS));
    std::fs::copy(
        fixture("tiny_classifier").join("outputs.npz"),
        root.path().join("tests/fixtures/missing_labels/outputs.npz"),
    )
    .unwrap();
    root
}

/// The stages-only runner, plus the one thing it cannot do: notice that
/// the references are not those of missing_labels' data with labels 1
/// (they are tiny_classifier's).
fn simulated_host(dir: &Path, platform: &str, level: &str) -> CaseOutcome {
    let o = runner::stages_only(dir, platform, level);
    let stale = std::fs::read(dir.join("outputs.npz")).unwrap()
        == std::fs::read(fixture("tiny_classifier").join("outputs.npz")).unwrap();
    if o.passed() && stale {
        return CaseOutcome::fail("INCORRECT_RESULT", "Errors: 9 out of 172 (loss[0]: 1.5608 vs 1.4453)");
    }
    o
}

#[test]
fn a_fixed_run_against_stale_references_is_an_xfail_never_a_pass() {
    let root = stale_refs_repo();
    let opts = Options {
        root: root.path().to_path_buf(),
        name: ML_KEY.into(),
        fix: true,
        in_place: false,
        refs: false,
        status: None,
    };
    let r = triage::run(&opts, &simulated_host).unwrap();
    assert_eq!(r.exit_code, 1, "{}", triage::text(&r));
    let e = entry(root.path(), ML_KEY);
    assert_eq!(e.status, Status::KnownFailure);
    assert_eq!(e.stage, Some(Stage::Result));
    assert_eq!(e.reason, STALE_REFS_REASON);
    assert!(e.evidence.contains("Errors: 9 out of 172"));
    assert!(triage::text(&r).contains("references: not regenerated (no --refs)"));

    // The same through the command line, where the real host run decides.
    let root = stale_refs_repo();
    triage_cmd(root.path(), &[ML_KEY, "--fix"]).code(1);
    assert_eq!(entry(root.path(), ML_KEY).reason, STALE_REFS_REASON);
}

/// A Python with onnxruntime for tools/make_refs.py, if there is one.
fn python_with_onnxruntime() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("DEPLOYGEN_PYTHON").map(PathBuf::from),
        Some(PathBuf::from("/root/.venvs/deploygen-tools/bin/python")),
    ];
    candidates.into_iter().flatten().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import onnxruntime, onnx"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn with_refs_and_onnxruntime_the_references_are_regenerated_and_it_passes() {
    let Some(py) = python_with_onnxruntime() else {
        common::skip(
            "with_refs_and_onnxruntime",
            "no Python with onnxruntime (set DEPLOYGEN_PYTHON); --refs not exercised",
        );
        return;
    };
    common::ran("with_refs_and_onnxruntime");
    let root = stale_refs_repo();
    // The root has no tools/: tools/make_refs.py of deploygen's own tree is used.
    let opts = Options {
        root: root.path().to_path_buf(),
        name: ML_KEY.into(),
        fix: true,
        in_place: false,
        refs: true,
        status: None,
    };
    std::env::set_var("DEPLOYGEN_PYTHON", &py);
    let r = triage::run(&opts, &simulated_host).unwrap();
    let report = triage::text(&r);
    assert_eq!(r.exit_code, 0, "{report}");
    assert!(report.contains("references: regenerated outputs.npz"), "{report}");
    assert!(entry(root.path(), ML_KEY).evidence.contains("outputs.triage.npz"));
    // onnxruntime with the synthetic labels (1 everywhere) gives the
    // references the fixture was made with.
    let dir = root.path().join("tests/fixtures/missing_labels");
    let regenerated = npz::read_all(&dir.join("outputs.triage.npz")).unwrap();
    let original = npz::read_all(&fixture("missing_labels").join("outputs.npz")).unwrap();
    let (a, b) = (regenerated.get("loss").unwrap().to_f32().unwrap(), original.get("loss").unwrap().to_f32().unwrap());
    assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-5), "{a:?} vs {b:?}");
}

#[test]
fn bn_single_value_reports_the_shape_and_writes_a_rebatched_copy() {
    let key = "bn_single_value/host-L2-training";
    let reason = "Expected more than 1 value per channel when training, got input size [1, 8, 1, 1]";
    let root = repo(&["bn_single_value"], &xfail(key, reason));
    let assert = triage_cmd(root.path(), &[key, "--fix"])
        .stdout(predicate::str::contains("flavor    bn_single_value"))
        .stdout(predicate::str::contains(reason))
        .stdout(predicate::str::contains("batch 2 fixes it: yes"))
        .stdout(predicate::str::contains("global pool"))
        .stdout(predicate::str::contains("graph input 'input': batch dim 1 → 2"));
    let code = assert.get_output().status.code();
    let copy = root.path().join("tests/fixtures/bn_single_value.triage");
    let m = deploygen::load(&copy).unwrap();
    let x = m.graph.tensor(m.graph.id("input").unwrap());
    assert_eq!(x.ty.shape(), Some(vec![2, 3, 8, 8]));
    let b = deploygen::bind::bind(&m, &Default::default()).unwrap();
    assert!(deploygen::check::findings(&m, &b).is_empty());
    assert_eq!(b.slot("input").unwrap().values[0].shape, vec![2, 3, 8, 8]);
    // The original is untouched.
    let orig = deploygen::load(&root.path().join("tests/fixtures/bn_single_value")).unwrap();
    assert_eq!(orig.graph.tensor(orig.graph.id("input").unwrap()).ty.shape(), Some(vec![1, 3, 8, 8]));
    // Passing, or (references for batch 1) the stale-references xfail.
    let e = entry(root.path(), key);
    if code == Some(0) {
        // It passes with the copy; the case named in the table reads the original.
        assert_eq!((e.status, e.reason.as_str()), (Status::KnownFailure, reason));
        assert!(e.evidence.contains("bn_single_value.triage"));
    } else {
        assert_eq!((e.reason.as_str(), code), (STALE_REFS_REASON, Some(1)));
    }
}

#[test]
fn swapped_slots_are_rekeyed_by_name() {
    let key = "swapped_slots/host-L2-training";
    let root = repo(&["swapped_slots"], "");
    triage_cmd(root.path(), &[key, "--fix", "--in-place"])
        .code(0)
        .stdout(predicate::str::contains("flavor    decoder_inputs"))
        .stdout(predicate::str::contains(
            "graph input 'fc1.weight' is present only under a position that binds it to a different input",
        ))
        .stdout(predicate::str::contains("'arr_0002' (f32 [8]) sat at position 2 ('fc1.weight'"));
    let dir = root.path().join("tests/fixtures/swapped_slots");
    let fixed = read_keys(&dir.join("inputs.npz"));
    assert!(fixed.iter().all(|(k, _)| !k.contains("arr_")), "named layout");
    let get = |k: &str| fixed.iter().find(|(n, _)| n == k).map(|(_, v)| v.shape.clone());
    assert_eq!((get("fc1.weight"), get("fc1.bias")), (Some(vec![8, 16]), Some(vec![8])));
    // The values are tiny_classifier's, under their names.
    let good = npz::read_all(&fixture("tiny_classifier").join("inputs.npz")).unwrap();
    let (_, w) = fixed.iter().find(|(n, _)| n == "fc1.weight").unwrap();
    assert_eq!(Some(w), good.get("arr_0002"));
    assert_eq!(entry(root.path(), key).status, Status::ExpectedPassing);
}

#[test]
fn a_model_failing_for_another_reason_is_left_alone() {
    let key = "truncated_onnx/host-L2-training";
    let table = xfail(key, "protobuf decoding failed");
    let root = repo(&["truncated_onnx"], &table);
    triage_cmd(root.path(), &[key, "--fix"])
        .code(2)
        .stderr(predicate::str::contains("not a missing-input failure, nothing changed"))
        .stderr(predicate::str::contains("FAILED_IMPORT"))
        .stderr(predicate::str::contains("network.onnx"));
    assert_eq!(std::fs::read_to_string(root.path().join("status.toml")).unwrap(), table);
    let files: Vec<_> = std::fs::read_dir(root.path().join("tests/fixtures/truncated_onnx")).unwrap().collect();
    assert_eq!(files.len(), 4);
}

#[test]
fn a_passing_model_with_an_xfail_entry_is_a_stale_entry() {
    let key = "tiny_classifier/host-L2-training";
    let table = xfail(key, TARGETS);
    let root = repo(&["tiny_classifier"], &table);
    triage_cmd(root.path(), &[key, "--fix"]).code(0).stdout(predicate::str::contains("is stale"));
    assert_eq!(std::fs::read_to_string(root.path().join("status.toml")).unwrap(), table);
}

#[test]
fn names_that_do_not_resolve_are_refused_naming_the_candidates() {
    let root = repo(&["missing_labels"], "");
    triage_cmd(root.path(), &["nosuch/host-L2-training"])
        .code(2)
        .stderr(predicate::str::contains("no model folder 'nosuch'"));
    triage_cmd(root.path(), &["missing_labels"])
        .code(2)
        .stderr(predicate::str::contains("did you mean 'missing_labels/host-L2-training'"));
    copy_into(&fixture("missing_labels"), &root.path().join("models/missing_labels"));
    triage_cmd(root.path(), &[ML_KEY])
        .code(2)
        .stderr(predicate::str::contains("ambiguous"))
        .stderr(predicate::str::contains("models/missing_labels"))
        .stderr(predicate::str::contains("tests/fixtures/missing_labels"));
    assert_eq!(std::fs::read_to_string(root.path().join("status.toml")).unwrap(), "");
}

/// A misspelt key, given or in the table, is refused naming the nearest
/// model folders, platforms and kinds; nothing is written.
#[test]
fn a_misspelt_key_names_the_nearest_candidates() {
    let root = repo(&["missing_labels"], "");
    let refused = |name: &str, needles: &[&str]| {
        let out = triage_cmd(root.path(), &[name]).code(2).get_output().stderr.clone();
        let err = String::from_utf8(out).unwrap();
        for n in needles {
            assert!(err.contains(n), "{name}: expected {n:?} in: {err}");
        }
    };
    refused(
        "missing_lables/host-L2-training",
        &["no model folder 'missing_lables'", "did you mean 'missing_labels/host-L2-training'?"],
    );
    refused("missing_labels/host-L2-trainig", &["'trainig'", "did you mean 'training'?"]);
    refused("missing_labels/GAPP9-L2-training", &["unknown platform 'GAPP9'", "did you mean 'GAP9'?"]);
    refused("missing_labels/host-L4-training", &["level 'L4'", "L2 or L3"]);
    refused("missing_lables", &["did you mean 'missing_labels/host-L2-training'?"]);
    assert_eq!(std::fs::read_to_string(root.path().join("status.toml")).unwrap(), "");
    // The table's own keys follow the same rules.
    let table = xfail("missing_labels/gap9-L2-training", TARGETS);
    std::fs::write(root.path().join("status.toml"), &table).unwrap();
    refused(ML_KEY, &["entry \"missing_labels/gap9-L2-training\"", "spelled 'GAP9'"]);
    assert_eq!(std::fs::read_to_string(root.path().join("status.toml")).unwrap(), table);
}

/// A model folder whose table entry is misspelt: the resolution says
/// which entry of a near name there is.
#[test]
fn a_model_folder_without_an_entry_names_the_entries_of_a_near_name() {
    let root = repo(&["missing_labels"], &xfail("missing_lables/GAP9-L3-training", TARGETS));
    let table = StatusTable::read(&root.path().join("status.toml")).unwrap();
    let dir = root.path().join("tests/fixtures/missing_labels");
    let r = triage::resolve::resolve(root.path(), dir.to_str().unwrap(), &table).unwrap();
    assert_eq!(r.key.to_string(), ML_KEY);
    assert!(r.how.contains("'missing_lables/GAP9-L3-training' of a near name"), "{}", r.how);
}

#[test]
fn a_reshape_constant_that_spells_out_the_batch_refuses_the_rebatched_copy() {
    let model = |shape: &[i64]| {
        let mut b = ModelBuilder::new();
        b.input("x", F32, &[1, 4, 2, 2]).init_i64("shape", shape).node("Reshape", &["x", "shape"], &["y"], vec![]);
        b.output("y", F32, &[1, 16]);
        let dir = tempfile::tempdir().unwrap();
        b.write(dir.path(), "network.onnx");
        dir
    };
    let dir = model(&[1, 16]);
    let m = deploygen::load(dir.path()).unwrap();
    let out = dir.path().join("rebatched.onnx");
    let e = deploygen::triage::rebatch::rebatch(&m, &["x".into()], &out).unwrap_err().to_string();
    assert!(e.contains("'shape' = [1, 16], which hard-codes the batch"), "{e}");
    // A shape that leaves the batch to the data re-batches, and the
    // output's shape is re-inferred.
    let dir = model(&[-1, 16]);
    let m = deploygen::load(dir.path()).unwrap();
    let out = dir.path().join("rebatched.onnx");
    let changes = deploygen::triage::rebatch::rebatch(&m, &["x".into()], &out).unwrap();
    assert!(changes[0].contains("graph input 'x': batch dim 1 → 2"), "{changes:?}");
    let r = deploygen::import::read_graph(&out).unwrap();
    let y = r.tensor(r.id("y").unwrap());
    assert_eq!(y.ty.shape(), Some(vec![2, 16]));
}

#[test]
fn the_report_comes_as_json_too() {
    let root = repo(&["missing_labels"], "");
    let out = triage_cmd(root.path(), &[ML_KEY, "--fix", "--format", "json"]).code(0).get_output().stdout.clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["flavor"], "missing_targets");
    assert_eq!(v["key"], ML_KEY);
    assert_eq!(v["inputs"][1]["input"], "labels");
    assert!(v["inputs"][1]["holds"].is_null());
    assert_eq!(v["status_written"][0][1]["status"], "KNOWN_FAILURE_XFAIL");
    assert!(v["status_file"].as_str().unwrap().ends_with("status.toml"));
    assert_eq!(v["exit_code"], 0);
}

#[test]
fn an_inference_regression_reverts_the_fix() {
    // A training model `ml_train` with its inference model `ml` beside it
    // (kws_cnn stands in for it: the runner below decides its outcome).
    let root = tempfile::tempdir().unwrap();
    copy_into(&fixture("missing_labels"), &root.path().join("models/ml_train"));
    copy_into(&zoo("kws_cnn"), &root.path().join("models/ml"));
    std::fs::write(root.path().join("status.toml"), "").unwrap();
    let key = "ml_train/host-L2-training";
    let inference_runs = std::cell::Cell::new(0);
    let run = |dir: &Path, platform: &str, level: &str| {
        if dir.ends_with("models/ml") {
            inference_runs.set(inference_runs.get() + 1);
            return if inference_runs.get() == 1 {
                CaseOutcome::pass("inference passes before the fix", 40)
            } else {
                CaseOutcome::fail("FAILED_RUNTIME", "Segmentation fault in the inference harness")
            };
        }
        runner::stages_only(dir, platform, level)
    };
    let opts = Options {
        root: root.path().to_path_buf(),
        name: key.into(),
        fix: true,
        in_place: false,
        refs: false,
        status: None,
    };
    let r = triage::run(&opts, &run).unwrap();
    let report = triage::text(&r);
    assert_eq!(inference_runs.get(), 2, "{report}");
    assert_eq!(r.exit_code, 1, "{report}");
    assert!(r.fix.reverted.as_deref().unwrap().contains("inference 'ml/host-L2-inference' regressed"), "{report}");
    assert!(r.fix.written.is_empty());
    assert!(!root.path().join("models/ml_train/inputs.triage.npz").exists());
    let e = entry(root.path(), key);
    assert_eq!((e.status, e.reason.as_str()), (Status::KnownFailure, TARGETS));
    // The inference entry is not written by triage.
    assert!(StatusTable::read(&root.path().join("status.toml")).unwrap().get("ml/host-L2-inference").is_none());
}

/// The report's lines about the inference variant.
fn inference_lines(report: &str) -> Vec<&str> {
    let lines: Vec<&str> = report.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("  inference")).expect("an inference line");
    let end = lines[start..].iter().position(|l| l.starts_with("  status")).map_or(lines.len(), |e| start + e);
    lines[start..end].to_vec()
}

#[test]
fn missing_labels_fix_reports_its_derived_inference_variant_honestly() {
    // No inference model beside the fixture, and its outputs.npz holds the
    // loss and the updated weights only: the variant derived by dropping
    // the loss and the backward part has no reference for its output, so
    // it cannot be compared, and the report says so instead of a pass.
    let root = repo(&["missing_labels"], &xfail(ML_KEY, TARGETS));
    let out = triage_cmd(root.path(), &[ML_KEY, "--fix"]).code(0).get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    let inf = inference_lines(&out);
    let text = inf.join("\n");
    assert!(inf[0].contains("inference missing_labels/host-L2-inference (derived"), "{out}");
    assert!(text.contains("forward output(s) 'fc2.out'"), "{out}");
    assert!(text.contains("'labels' (labels)") && text.contains("'lazy_reset_grad' (reset flag)"), "{out}");
    let before = inf.iter().find(|l| l.trim_start().starts_with("before")).expect("a before line");
    let after = inf.iter().find(|l| l.trim_start().starts_with("after")).expect("an after line");
    for l in [before, after] {
        assert!(l.contains("not run, nothing compared: no references for 'fc2.out'"), "{out}");
        assert!(!l.contains("passed"), "a run that compared nothing is no pass: {l}");
    }
    let dest = root.path().join("tests/fixtures/missing_labels.derived");
    let note =
        format!("derived inference variant has no references for 'fc2.out'; run tools/make_refs.py {}", dest.display());
    assert!(out.contains(&format!("  inference {note}")), "{out}");
    assert!(out.contains(&format!("  look      {note}")), "{out}");
    assert!(out.contains("the derived inference variant was not compared"), "{out}");
    // Written next to the triage output, never over the original, and
    // without references of deploygen's own.
    assert!(out.contains(&format!("wrote {}", dest.display())), "{out}");
    assert!(dest.join("network.onnx").is_file() && dest.join("inputs.npz").is_file());
    assert!(!dest.join("outputs.npz").exists());
    let files: Vec<_> =
        std::fs::read_dir(root.path().join("tests/fixtures")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files.len(), 2, "no half-written or temporary folder left: {files:?}");
    let original = root.path().join("tests/fixtures/missing_labels");
    for f in ["network.onnx", "inputs.npz", "outputs.npz", "optimizer.onnx"] {
        assert_eq!(
            std::fs::read(original.join(f)).unwrap(),
            std::fs::read(fixture("missing_labels").join(f)).unwrap(),
            "{f}"
        );
    }
    // The training entry is the training run's; no inference entry is written.
    assert_eq!(entry(root.path(), ML_KEY).status, Status::KnownFailure);
    let table = StatusTable::read(&root.path().join("status.toml")).unwrap();
    assert!(table.get("missing_labels/host-L2-inference").is_none());
}

#[test]
fn a_derived_inference_regression_reverts_the_fix() {
    // missing_labels whose outputs.npz also holds a reference for the
    // forward output 'fc2.out' (a stand-in: the runner below decides the
    // inference outcome), so the derived variant is compared before and
    // after the fix; after the fix it fails.
    let root = repo(&["missing_labels"], &xfail(ML_KEY, TARGETS));
    let dir = root.path().join("tests/fixtures/missing_labels");
    let outputs = dir.join("outputs.npz");
    let mut arrays = read_keys(&outputs);
    arrays.push(("fc2.out".into(), deploygen::ir::TensorData::from_f32(vec![2, 4], &[0.0; 8])));
    let refs: Vec<(&str, &deploygen::ir::TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&outputs, npz::write_npz(&refs).unwrap()).unwrap();
    let inference_runs = std::cell::Cell::new(0);
    let run = |d: &Path, platform: &str, level: &str| {
        if deploygen::verify::Kind::detect(d) == deploygen::verify::Kind::Inference {
            inference_runs.set(inference_runs.get() + 1);
            return if inference_runs.get() == 1 {
                CaseOutcome::pass("Errors: 0 out of 8", 8)
            } else {
                CaseOutcome::fail("FAILED_RUNTIME", "Segmentation fault in the derived inference")
            };
        }
        runner::stages_only(d, platform, level)
    };
    let opts = Options {
        root: root.path().to_path_buf(),
        name: ML_KEY.into(),
        fix: true,
        in_place: false,
        refs: false,
        status: None,
    };
    let r = triage::run(&opts, &run).unwrap();
    let report = triage::text(&r);
    let inf = r.inference.as_ref().expect("an inference variant");
    let derived = inf.derived.as_ref().expect("derived");
    assert_eq!(derived.outputs, vec!["fc2.out"]);
    assert_eq!(derived.before.as_ref().unwrap().references.as_deref(), Some("outputs.npz of the training folder"));
    assert_eq!(inference_runs.get(), 2, "derived before and after the fix: {report}");
    // The training run passes with the fixed data; the inference regression
    // reverts the fix all the same.
    assert!(r.training[0].after.as_ref().unwrap().passed(), "{report}");
    assert_eq!(r.exit_code, 1, "{report}");
    let why = r.fix.reverted.as_deref().unwrap_or_else(|| panic!("not reverted: {report}"));
    assert!(why.contains("inference 'missing_labels/host-L2-inference' (derived) regressed"), "{report}");
    assert!(why.contains("Segmentation fault in the derived inference"), "{report}");
    assert!(report.contains("fix reverted"), "{report}");
    // Nothing written: no fixed data, no derived folder.
    assert!(r.fix.written.is_empty() && derived.written.is_none());
    assert!(!dir.join("inputs.triage.npz").exists());
    assert!(!root.path().join("tests/fixtures/missing_labels.derived").exists());
    let e = entry(root.path(), ML_KEY);
    assert_eq!((e.status, e.reason.as_str()), (Status::KnownFailure, TARGETS));
}

#[test]
fn with_refs_the_derived_inference_variant_is_compared_and_later_runs_reuse_them() {
    let Some(py) = python_with_onnxruntime() else {
        common::skip(
            "with_refs_the_derived_inference_variant",
            "no Python with onnxruntime (set DEPLOYGEN_PYTHON); derived references not made",
        );
        return;
    };
    common::ran("with_refs_the_derived_inference_variant");
    let root = repo(&["missing_labels"], &xfail(ML_KEY, TARGETS));
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("deploygen")
            .unwrap()
            .env("DEPLOYGEN_PYTHON", &py)
            .arg("triage")
            .args(args)
            .arg("--root")
            .arg(root.path())
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let out = run(&[ML_KEY, "--fix", "--refs"]);
    let inf = inference_lines(&out).join("\n");
    assert!(inf.contains("before passed (8 values compared)"), "{out}");
    assert!(inf.contains("after  passed (8 values compared)"), "{out}");
    assert!(inf.contains("references: made by tools/make_refs.py"), "{out}");
    assert!(!out.contains("has no references"), "{out}");
    let dest = root.path().join("tests/fixtures/missing_labels.derived");
    assert!(npz::read_all(&dest.join("outputs.npz")).unwrap().get("fc2.out").is_some());
    // Without --refs, the references tools/make_refs.py wrote into the
    // derived folder hold for the same model and data.
    let out = run(&[ML_KEY, "--fix"]);
    let inf = inference_lines(&out).join("\n");
    assert!(inf.contains("after  passed (8 values compared)"), "{out}");
    assert!(inf.contains(&format!("references: outputs.npz of {}", dest.display())), "{out}");
}

/// A model folder outside any repository: the status table that governs
/// it is named with --status; without one none is created (neither in the
/// root nor in the working directory), and the report says so.
#[test]
fn the_status_table_is_the_one_that_governs_the_model_and_never_made_unasked() {
    let elsewhere = tempfile::tempdir().unwrap();
    let model = elsewhere.path().join("missing_labels");
    copy_into(&fixture("missing_labels"), &model);
    let cwd = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        Command::cargo_bin("deploygen")
            .unwrap()
            .arg("triage")
            .arg(&model)
            .arg("--root")
            .arg(root.path())
            .args(extra)
            .current_dir(cwd.path())
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone()
    };
    let out = String::from_utf8(run(&[])).unwrap();
    assert!(!root.path().join("status.toml").exists() && !cwd.path().join("status.toml").exists());
    assert!(out.contains("status    not written"), "{out}");
    assert!(out.contains("were not recorded: there is no"), "{out}");
    // Named: written there, and the report says which file.
    let table = elsewhere.path().join("status.toml");
    std::fs::write(&table, "# the team's table\n").unwrap();
    let out = String::from_utf8(run(&["--status", table.to_str().unwrap()])).unwrap();
    assert!(out.contains(&format!("status    wrote {}", table.display())), "{out}");
    let text = std::fs::read_to_string(&table).unwrap();
    assert!(text.starts_with("# the team's table\n\n[\"missing_labels/host-L2-training\"]"), "{text}");
    assert!(!cwd.path().join("status.toml").exists());
}

/// A key whose model part climbs out of the root (`..`, a path, a link)
/// is refused before anything is read or written, naming the key.
#[test]
fn keys_that_leave_the_root_are_refused_and_nothing_is_written_there() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("repo");
    std::fs::create_dir_all(root.join("models")).unwrap();
    std::fs::create_dir_all(root.join("tests/fixtures")).unwrap();
    std::fs::write(root.join("status.toml"), "").unwrap();
    let victim = base.path().join("outside/victim");
    copy_into(&fixture("missing_labels"), &victim);
    let key = "../../outside/victim/host-L2-training";
    triage_cmd(&root, &[key, "--fix"]).code(2).stderr(predicate::str::contains(key));
    assert!(!victim.join("inputs.triage.npz").exists());
    assert!(!base.path().join("outside/victim.derived").exists());
    assert_eq!(std::fs::read_to_string(root.join("status.toml")).unwrap(), "");
    for key in ["./host-L2-training", "../host-L2-training", "a/../b/host-L2-training", "/abs/host-L2-training"] {
        triage_cmd(&root, &[key]).code(2).stderr(predicate::str::contains(key));
    }
    // A model folder under the root that is a link to elsewhere.
    std::os::unix::fs::symlink(&victim, root.join("models/victim")).unwrap();
    triage_cmd(&root, &["victim/host-L2-training", "--fix"])
        .code(2)
        .stderr(predicate::str::contains("victim/host-L2-training").and(predicate::str::contains("outside the root")));
    assert!(!victim.join("inputs.triage.npz").exists());
}

/// Scratch folders are made fresh (unpredictable names, created
/// exclusively): a folder of the old `deploygen-triage-<model>-<pid>-<n>`
/// pattern that someone else made survives a run.
#[test]
fn scratch_folders_are_fresh_and_a_users_folder_of_a_guessable_name_survives() {
    let pid = std::process::id();
    let tmp = std::env::temp_dir();
    let planted: Vec<PathBuf> = (0..64)
        .flat_map(|n| {
            ["missing_labels", "missing_labels-inference"].map(|m| tmp.join(format!("deploygen-triage-{m}-{pid}-{n}")))
        })
        .collect();
    for p in &planted {
        std::fs::create_dir_all(p).unwrap();
        std::fs::write(p.join("mine.txt"), "a user's file").unwrap();
    }
    let root = repo(&["missing_labels"], &xfail(ML_KEY, TARGETS));
    let opts = Options {
        root: root.path().to_path_buf(),
        name: ML_KEY.into(),
        fix: true,
        in_place: false,
        refs: false,
        status: None,
    };
    let r = triage::run(&opts, &|d: &Path, p: &str, l: &str| runner::stages_only(d, p, l)).unwrap();
    let survived = planted.iter().filter(|p| p.join("mine.txt").is_file()).count();
    for p in &planted {
        let _ = std::fs::remove_dir_all(p);
    }
    assert!(r.fix.attempted, "{}", triage::text(&r));
    assert_eq!(survived, planted.len(), "a planted scratch-named folder was removed");
}
