//! A fine-tuning run that learns, on real data (docs/training.md,
//! "Fine-tuning on real data"): models/digits_finetune, a BatchNorm CNN
//! pre-trained on digits 0-4 of scikit-learn's 8x8 digits, is fine-tuned
//! on digits 5-9 through the generated `dg_model.h` on the host emulation
//! (tests/finetune/finetune.c in place of the project's demo.c), 500
//! steps in the data order of finetune.npz, then predicts the held-out
//! split one sample at a time in eval mode. Its loss at every step must
//! agree with onnxruntime-training's (tools/make_finetune.py, committed in
//! finetune.npz) within [`LOSS_ATOL`] + [`LOSS_RTOL`] x |ref|, and its
//! held-out accuracy with onnxruntime's within one point. Two broken runs
//! (labels shifted by one sample, the data order shifted by one
//! mini-batch) must fail that comparison, and docs/performance.md's
//! figures of the run must be the ones measured.
//!
//! `DG_FINETUNE_CURVE=FILE` writes the device's losses and accuracy as
//! JSON, for tools/plot_finetune.py (docs/finetune-loss.svg).

use crate::common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use deploygen::bind::npz;
use deploygen::ir::TensorData;

/// Loss tolerance at every step: |device - onnxruntime| <= atol + rtol x |onnxruntime|.
const LOSS_ATOL: f64 = 1e-4;
const LOSS_RTOL: f64 = 1e-3;
/// Held-out accuracy tolerance, in percentage points.
const ACC_POINTS: f64 = 1.0;
const BATCH: usize = 8;
const STEPS: usize = 500;

fn folder() -> PathBuf {
    common::root().join("models/digits_finetune")
}

struct Reference {
    train_x: Vec<u8>,
    train_y: Vec<i64>,
    test_x: Vec<u8>,
    test_y: Vec<i64>,
    loss: Vec<f32>,
    predicted: Vec<i64>,
    accuracy: f64,
}

fn i64s(t: &TensorData) -> Vec<i64> {
    t.bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn f32s(t: &TensorData) -> Vec<f32> {
    t.bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn reference() -> Reference {
    let z = npz::read_all(&folder().join("finetune.npz")).expect("models/digits_finetune/finetune.npz");
    let get = |k: &str| z.get(k).unwrap_or_else(|| panic!("finetune.npz has no '{k}'"));
    Reference {
        train_x: get("train_x").bytes.clone(),
        train_y: i64s(get("train_y")),
        test_x: get("test_x").bytes.clone(),
        test_y: i64s(get("test_y")),
        loss: f32s(get("loss")),
        predicted: i64s(get("predicted")),
        accuracy: f32s(get("accuracy"))[0] as f64,
    }
}

/// finetune_data.h: the two splits as the program reads them.
fn data_header(r: &Reference) -> String {
    let mut s = String::from("/* models/digits_finetune/finetune.npz, written by tests/it/finetune.rs */\n");
    writeln!(s, "#define FT_STEPS {STEPS}u\n#define FT_BATCH {BATCH}u").unwrap();
    writeln!(s, "#define FT_TRAIN {}u\n#define FT_TEST {}u", r.train_y.len(), r.test_y.len()).unwrap();
    let mut array = |ty: &str, name: &str, v: Vec<String>| {
        writeln!(s, "static const {ty} {name}[{}] = {{{}}};", v.len(), v.join(",")).unwrap();
    };
    array("uint8_t", "ft_train_x", r.train_x.iter().map(u8::to_string).collect());
    array("int64_t", "ft_train_y", r.train_y.iter().map(i64::to_string).collect());
    array("uint8_t", "ft_test_x", r.test_x.iter().map(u8::to_string).collect());
    array("int64_t", "ft_test_y", r.test_y.iter().map(i64::to_string).collect());
    s
}

/// The project for `level`, with the fine-tuning program as its demo, built.
fn build(work: &Path, level: &str, r: &Reference) -> PathBuf {
    let out = work.join(format!("host-{level}"));
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(folder())
        .args(["--platform", "host", "--default-mem", level, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "deploygen build: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::copy(common::root().join("tests/finetune/finetune.c"), out.join("demo.c")).unwrap();
    std::fs::write(out.join("finetune_data.h"), data_header(r)).unwrap();
    let o = common::make_host(&out, None, &["demo"]);
    assert!(o.status.success(), "tests/finetune/finetune.c does not build:\n{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// What one run printed.
struct Run {
    loss: Vec<f64>,
    predicted: Vec<i64>,
    correct: usize,
    seconds: f64,
}

impl Run {
    fn accuracy(&self) -> f64 {
        100.0 * self.correct as f64 / self.predicted.len() as f64
    }
}

fn run(project: &Path, fault: Option<&str>) -> Run {
    let t = Instant::now();
    let o = Command::new("./demo").args(fault).current_dir(project).output().unwrap();
    let seconds = t.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "the fine-tuning program failed:\n{}", text.lines().last().unwrap_or(""));
    let (mut loss, mut predicted, mut correct) = (vec![], vec![], None);
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["loss", k, v] => {
                assert_eq!(k.parse::<usize>().unwrap(), loss.len() + 1, "{line}");
                loss.push(v.parse::<f64>().unwrap());
            }
            ["predicted", i, c] => {
                assert_eq!(i.parse::<usize>().unwrap(), predicted.len(), "{line}");
                predicted.push(c.parse::<i64>().unwrap());
            }
            ["correct", c, "of", _] => correct = Some(c.parse().unwrap()),
            _ => {}
        }
    }
    Run { loss, predicted, correct: correct.expect("no 'correct C of N' line"), seconds }
}

/// Every way `run` differs from the reference: steps whose loss is out of
/// tolerance, an accuracy more than a point away. Empty when they agree.
fn differences(run: &Run, r: &Reference) -> Vec<String> {
    let mut out = vec![];
    if run.loss.len() != r.loss.len() || run.predicted.len() != r.predicted.len() {
        return vec![format!(
            "{} losses and {} predictions, the reference has {} and {}",
            run.loss.len(),
            run.predicted.len(),
            r.loss.len(),
            r.predicted.len()
        )];
    }
    for (k, (&d, &o)) in run.loss.iter().zip(&r.loss).enumerate() {
        let o = o as f64;
        let tol = LOSS_ATOL + LOSS_RTOL * o.abs();
        if d.is_nan() || (d - o).abs() > tol {
            out.push(format!("step {}: loss {d} (onnxruntime {o}, diff {:.3e}, tol {tol:.3e})", k + 1, (d - o).abs()));
        }
    }
    if (run.accuracy() - r.accuracy).abs() > ACC_POINTS {
        out.push(format!("held-out accuracy {:.2} % (onnxruntime {:.2} %)", run.accuracy(), r.accuracy));
    }
    out
}

/// The loss every 50 steps, both sides, as the test prints it.
fn curve(run: &Run, r: &Reference) -> String {
    let mut s = String::new();
    for k in std::iter::once(1).chain((50..=STEPS).step_by(50)) {
        let (d, o) = (run.loss[k - 1], r.loss[k - 1] as f64);
        writeln!(s, "  step {k:3}: device {d:.6}  onnxruntime {o:.6}  diff {:.2e}", (d - o).abs()).unwrap();
    }
    s
}

/// docs/performance.md's row `| <label> | <device> | <onnxruntime> |` of
/// the fine-tuning table: its two numbers.
fn doc_row(doc: &str, label: &str) -> (f64, f64) {
    let line = doc
        .lines()
        .find(|l| l.starts_with(&format!("| {label} |")))
        .unwrap_or_else(|| panic!("docs/performance.md has no row '| {label} |'"));
    let num = |c: &str| c.trim().trim_end_matches('%').trim().parse::<f64>().unwrap_or_else(|_| panic!("{line}"));
    let cells: Vec<&str> = line.split('|').collect();
    (num(cells[2]), num(cells[3]))
}

/// A figure printed to 4 significant digits agrees with the value.
fn printed(doc: f64, value: f64) -> bool {
    (doc - value).abs() <= 5e-4 * value.abs().max(1e-12) + 1e-12
}

/// Fine-tunes at `level` and checks the run against onnxruntime's: the
/// reference, the project and the run.
fn learns(level: &str) -> Option<(Reference, tempfile::TempDir, PathBuf, Run)> {
    if !common::have_gcc(module_path!()) {
        return None;
    }
    let r = reference();
    assert_eq!(r.loss.len(), STEPS, "finetune.npz holds {} losses", r.loss.len());
    let work = tempfile::tempdir().unwrap();
    let project = build(work.path(), level, &r);
    let good = run(&project, None);
    let bad = differences(&good, &r);
    println!(
        "host {level}: {STEPS} steps and {} predictions in {:.2} s; held-out accuracy {:.2} % (onnxruntime {:.2} %), \
         {} of {} predictions as onnxruntime's\n{}",
        good.predicted.len(),
        good.seconds,
        good.accuracy(),
        r.accuracy,
        good.predicted.iter().zip(&r.predicted).filter(|(a, b)| a == b).count(),
        r.predicted.len(),
        curve(&good, &r)
    );
    assert!(
        bad.is_empty(),
        "host {level}: the fine-tuning differs from onnxruntime's in {} place(s), the first:\n{}",
        bad.len(),
        bad[..bad.len().min(10)].join("\n")
    );
    // It learns: from 0 % on digits it never saw to most of them.
    assert!(good.accuracy() >= 90.0 && good.loss[STEPS - 1] < good.loss[0] / 10.0);
    Some((r, work, project, good))
}

/// The project built with `--default-mem L3` learns the same (a test of
/// its own, so that it runs beside the L2 one).
#[test]
fn fine_tuning_on_digits_from_l3_learns_as_onnxruntime_does() {
    learns("L3");
}

#[test]
fn fine_tuning_on_digits_learns_as_onnxruntime_does() {
    let Some((r, _work, project, good)) = learns("L2") else { return };
    // A run with a fault is told apart.
    for fault in ["shuffle", "order"] {
        let broken = run(&project, Some(fault));
        let found = differences(&broken, &r);
        println!(
            "fault '{fault}': {} difference(s) from onnxruntime's run, accuracy {:.2} %",
            found.len(),
            broken.accuracy()
        );
        assert!(!found.is_empty(), "the fault '{fault}' went unnoticed");
    }
    if let Some(path) = std::env::var_os("DG_FINETUNE_CURVE") {
        let json = serde_json::json!({
            "platform": "host", "level": "L2", "steps": STEPS, "batch": BATCH,
            "loss": good.loss, "held_out": good.predicted.len(), "correct": good.correct,
            "accuracy": good.accuracy(), "wall_seconds": good.seconds,
        });
        std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap() + "\n").unwrap();
    }
    // docs/performance.md states the run's figures.
    let doc = std::fs::read_to_string(common::root().join("docs/performance.md")).unwrap();
    for k in [1, 250, 500] {
        let (d, o) = doc_row(&doc, &format!("loss at step {k}"));
        assert!(
            printed(d, good.loss[k - 1]) && printed(o, r.loss[k - 1] as f64),
            "docs/performance.md: loss at step {k} is {d} / {o}, the run's {} / {}",
            good.loss[k - 1],
            r.loss[k - 1]
        );
    }
    let (d, o) = doc_row(&doc, "held-out accuracy");
    assert!(
        (d - good.accuracy()).abs() < 0.006 && (o - r.accuracy).abs() < 0.006,
        "docs/performance.md: accuracy {d} % / {o} %, the run's {:.2} % / {:.2} %",
        good.accuracy(),
        r.accuracy
    );
}
