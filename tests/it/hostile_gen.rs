//! Hostile models against what deploygen computes when it generates code:
//! constant folding, Resize's tap tables, the recompute choice. A tiny
//! file must not make a run take gigabytes or minutes: each case is
//! refused with exit 2 and a message naming the node, the bytes and the
//! limit, or gives a correct project quickly. `DG_BIN=<deploygen>` runs
//! the command-line cases against another build (an older tree's).

use crate::common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::*;
use assert_cmd::Command;
use deploygen::import::pb;

/// A scalar tensor attribute `value` holding one int64.
fn value_i64(v: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some("value".into()),
        r#type: Some(pb::attribute_proto::AttributeType::Tensor as i32),
        t: Some(pb::TensorProto { dims: vec![1], data_type: Some(I64), int64_data: vec![v], ..Default::default() }),
        ..Default::default()
    }
}

/// `deploygen ARGS` with a CPU and memory bound: a run that would take
/// gigabytes fails to allocate instead of taking the machine.
fn run(args: &[&str], model: &Path, out: &Path) -> Output {
    let mut c = match std::env::var_os("DG_BIN") {
        Some(b) => Command::new(b),
        None => Command::cargo_bin("deploygen").unwrap(),
    };
    c.args(args).arg(model);
    if args.first() == Some(&"build") {
        c.arg("--out").arg(out);
    }
    c.timeout(Duration::from_secs(60));
    let t = Instant::now();
    let o = c.output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(30), "{args:?} took {:?}", t.elapsed());
    o
}

/// Exit 2, no panic, no abort, every needle in the message, no output folder.
fn refused(args: &[&str], model: &Path, needles: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("gen");
    let o = run(args, model, &out);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: expected exit 2, got {:?}:\n{err}", o.status.code());
    assert!(!err.contains("panicked") && !err.contains("memory allocation"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: stderr lacks {n:?}:\n{err}");
    }
    assert!(!out.exists(), "a refused build left {}", out.display());
    err
}

fn write(b: &ModelBuilder) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    dir
}

/// `ConstantOfShape([n])` of int64 ones named `a`, with a graph input `x`
/// so that the model has something to run.
fn constant_source(n: i64) -> ModelBuilder {
    let mut b = ModelBuilder::new();
    b.init_i64("shape", &[n]).node("ConstantOfShape", &["shape"], &["a"], vec![value_i64(1)]);
    b
}

// --- Folding -----------------------------------------------------------------

/// 24 doublings of a 512 KiB constant (a 1 KB file) would fold to 8 TiB:
/// refused at the first Concat past the target's largest level, before the
/// value is made.
#[test]
fn doubling_concats_are_refused_before_they_are_made() {
    let mut b = constant_source(65536);
    let mut prev = "a".to_string();
    for i in 0..24 {
        let next = format!("c{i}");
        b.node("Concat", &[&prev, &prev], &[&next], vec![attr_int("axis", 0)]);
        prev = next;
    }
    b.output(&prev, I64, &[65536 << 24]);
    let dir = write(&b);
    assert!(std::fs::metadata(dir.path().join("network.onnx")).unwrap().len() < 2048);
    let err = refused(&["inspect"], dir.path(), &["Concat", "8,388,608 B", "largest memory level"]);
    assert!(err.contains("'Concat_"), "{err}");
    refused(
        &["build", "--platform", "GAP9"],
        dir.path(),
        &["Concat", "8,388,608 B", "GAP9's largest memory level (L3)"],
    );
}

/// One Concat of 20,000 copies of a 512 KiB constant: 10 GB, refused from
/// the shape rule's size before anything is allocated.
#[test]
fn a_concat_of_many_copies_is_refused_from_its_size() {
    let mut b = constant_source(65536);
    let many: Vec<&str> = vec!["a"; 20_000];
    b.node("Concat", &many, &["y"], vec![attr_int("axis", 0)]).output("y", I64, &[65536 * 20_000]);
    let dir = write(&b);
    refused(&["inspect"], dir.path(), &["Concat_1", "10,485,760,000 B", "8,388,608 B"]);
}

/// 20,000 Identity nodes after one 512 KiB constant share its value (they
/// used to hold a copy each, 10 GB): the model lowers, quickly.
#[test]
fn identity_chains_share_the_folded_value() {
    let mut b = constant_source(65536);
    let mut prev = "a".to_string();
    for i in 0..20_000 {
        let next = format!("i{i}");
        b.node("Identity", &[&prev], &[&next], vec![]);
        prev = next;
    }
    b.output(&prev, I64, &[65536]);
    let dir = write(&b);
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&["inspect"], dir.path(), &tmp.path().join("x"));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let m = deploygen::load(dir.path()).unwrap();
    let g = &m.graph;
    let last = g.tensor(g.id(&prev).unwrap()).data.clone().unwrap();
    let first = g.tensor(g.id("a").unwrap()).data.clone().unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &last), "the Identity chain copied its value");
}

/// Folded values add up: many distinct constants that each fit, but not
/// together, are refused at the node that passes the bound, naming the
/// total and the limit.
#[test]
fn the_folded_total_is_bounded() {
    // 40 Adds of a 512 KiB constant with itself: 20 MiB of new values.
    let mut b = constant_source(65536);
    for i in 0..40 {
        b.node("Add", &["a", "a"], &[&format!("s{i}")], vec![]);
        b.output(&format!("s{i}"), I64, &[65536]);
    }
    let dir = write(&b);
    let err = refused(&["inspect"], dir.path(), &["Add", "constants deploygen computes to", "8,388,608 B"]);
    assert!(err.contains("'Add_"), "{err}");
}

// --- Resize ------------------------------------------------------------------

/// `x [1, 1, h, w]` resized by `sizes` in `mode`.
fn resize(h: i64, w: i64, sizes: [i64; 4], mode: &str) -> ModelBuilder {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, h, w]).init_i64("sizes", &sizes).node(
        "Resize",
        &["x", "", "", "sizes"],
        &["y"],
        vec![attr_str("mode", mode)],
    );
    b.output("y", F32, &sizes);
    b
}

/// Ten or a hundred million output rows: the tap tables alone would take
/// 160 MB or 1.6 GB (and a 663 MB Network.c). Refused before they are
/// built, naming the node, even where the capacities given would hold the
/// output.
#[test]
fn resize_to_absurd_sizes_is_refused_before_its_tables_are_built() {
    for rows in [100_000_000, 10_000_000] {
        let dir = write(&resize(2, 1, [1, 1, rows, 1], "linear"));
        let big = ["--l2", "450000000", "--l3", "450000000"];
        for platform in ["GAP9", "host"] {
            let args: Vec<&str> = ["build", "--platform", platform].iter().chain(&big).copied().collect();
            refused(&args, dir.path(), &["'Resize_0' (Resize)", "tables take", "static data in L2"]);
        }
        refused(&["build", "--platform", "GAP9"], dir.path(), &["Resize"]);
    }
}

/// An ordinary 2x2 -> 512x512 upsample: its tables are static data the
/// plan counts in L2, never locals of RunNetwork (on GAP9's 2,304 B stack
/// they overflowed it silently; `tests/it/stack_rv32.rs` measures the frame).
#[test]
fn resize_tables_are_static_data_the_plan_counts() {
    let dir = write(&resize(2, 2, [1, 1, 512, 512], "linear"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("gen");
    let o = run(&["build", "--platform", "GAP9"], dir.path(), &out);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let net = std::fs::read_to_string(out.join("Network.c")).unwrap();
    for t in ["iy", "wy", "ix", "wx"] {
        let decl = net.lines().find(|l| l.contains(&format!(" {t}[] = {{"))).expect(t);
        assert!(decl.trim_start().starts_with("static const "), "{t} is not static: {}", &decl[..80.min(decl.len())]);
    }
    // 512 rows and 512 columns of 2 taps, 8 B each: 16 KiB of L2.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("static 16,384 B"), "{stdout}");
}

// --- Operand lists -------------------------------------------------------------

/// A Concat of `n` graph inputs [1, 2] along axis 0.
fn wide_concat(n: usize) -> ModelBuilder {
    let mut b = ModelBuilder::new();
    let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    for x in &names {
        b.input(x, F32, &[1, 2]);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    b.node("Concat", &refs, &["y"], vec![common::attr_int("axis", 0)]).output("y", F32, &[n as i64, 2]);
    b
}

/// A kernel call's operand list is a local of the function that runs the
/// network: a Concat of 20,000 inputs once made an 80 KB frame on a stack
/// of a few KiB. Past 64 operands the node is refused, named; 64 build.
#[test]
fn a_concat_of_too_many_inputs_is_refused_by_name() {
    let dir = write(&wide_concat(65));
    refused(&["build", "--platform", "GAP9"], dir.path(), &["Concat", "65 inputs", "at most 64"]);
    let dir = write(&wide_concat(64));
    let out = tempfile::tempdir().unwrap();
    let o = run(&["build", "--platform", "GAP9"], dir.path(), &out.path().join("gen"));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}

// --- Recompute -----------------------------------------------------------------

/// The chain of `n` (MatMul + Relu) training blocks in a new folder.
fn chain(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    matmul_relu_chain(dir.path(), n);
    dir
}

/// `--recompute auto` on a chain of 400 blocks: it took over 300 s (every
/// choice was tried again without, each try planning the rest anew). The
/// run's 60 s bound guards against that; the time itself is a benchmark
/// (`cargo bench --bench recompute`, docs/performance.md).
#[test]
fn recompute_on_a_long_chain_chooses_within_the_run_bound() {
    let dir = chain(400);
    let o = run(&["inspect", "--platform", "GAP9"], dir.path(), dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out.lines().find(|l| l.starts_with("recompute (auto")).expect("a recompute report");
    assert!(line.contains("value(s)") && !line.contains(" 0 value(s)"), "{line}");
}

/// The library holds a request to the command line's bounds: a dim past
/// 2^32-1 or a prediction batch of 0 given through `TrainRequest` is a
/// usage error naming it, as `--dim` and `--predict-batch` are.
#[test]
fn library_requests_are_held_to_the_command_lines_bounds() {
    use deploygen::import::{self, train::TrainRequest};
    let dir = chain(2);
    let big = TrainRequest { dims: vec![("batch".into(), 1usize << 40)], ..Default::default() };
    let e = import::load_with(dir.path(), &big).expect_err("a dim of 2^40 is refused").to_string();
    assert!(e.contains("--dim batch=1099511627776") && e.contains("from 1 to 4294967295"), "{e}");
    let zero = TrainRequest { predict_batch: Some(0), ..Default::default() };
    let e = import::load_with(dir.path(), &zero).expect_err("a prediction batch of 0 is refused").to_string();
    assert!(e.contains("--predict-batch 0"), "{e}");
    assert!(import::load_with(dir.path(), &TrainRequest::default()).is_ok());
}
