//! `cargo bench --bench recompute`: the time `--recompute auto` takes to
//! choose on a training step of N (MatMul + Relu) blocks, 2N candidates
//! (the long-step case of docs/performance.md, "Generation time"). The
//! whole plan is timed, as `deploygen build` runs it; `off` beside it is
//! what the choice adds to.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use deploygen::plan::recompute::Mode;
use deploygen::plan::{Level, PlanOptions, Platform};

#[path = "../tests/common/mod.rs"]
mod common;

use common::{ModelBuilder, F32};

/// A chain of `n` (MatMul + Relu) blocks, x [4, 8] -> logits [4, 8], with
/// a train.toml, in `dir`.
fn chain(dir: &Path, n: usize) {
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

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("recompute");
    for n in [100, 400, 1000] {
        let dir = tempfile::tempdir().unwrap();
        chain(dir.path(), n);
        let model = deploygen::load(dir.path()).expect("the chain loads");
        for mode in [Mode::Off, Mode::Auto] {
            let mut opts = PlanOptions::new(Platform::by_name("GAP9").unwrap(), Level::L2);
            opts.recompute = mode;
            let id = format!("chain-{n}/{}", if mode == Mode::Auto { "auto" } else { "off" });
            g.bench_function(id, |b| b.iter(|| deploygen::plan::plan(black_box(&model), &opts).expect("plans")));
        }
    }
    g.finish();
}

criterion_group! {
    name = recompute_benches;
    // The 1000-block choice takes seconds: the fewest samples criterion
    // takes, without a warm-up worth the name.
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(recompute_benches);
