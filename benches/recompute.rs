//! `cargo bench --bench recompute`: the time `--recompute auto` takes to
//! choose on a training step of N (MatMul + Relu) blocks, 2N candidates
//! (docs/performance.md, "Recompute's choice against the step's length"). The
//! whole plan is timed, as `deploygen build` runs it; `off` beside it is
//! what the choice adds to.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use deploygen::plan::recompute::Mode;
use deploygen::plan::{Level, PlanOptions, Platform};

#[path = "../tests/common/mod.rs"]
mod common;

use common::matmul_relu_chain;

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("recompute");
    for n in [100, 400, 1000] {
        let dir = tempfile::tempdir().unwrap();
        matmul_relu_chain(dir.path(), n);
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
