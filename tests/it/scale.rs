//! Generation time grows near-linearly with the number of nodes. A timing
//! check, so ignored by default; run it in release:
//!
//! ```sh
//! cargo test --release --test it scale:: -- --ignored --nocapture
//! ```
//!
//! It builds Relu chains of 1k, 12.5k, 25k, 50k and 100k nodes (with test data and
//! references; then the same with every other node an `Add` of its own
//! weight and a small L2, so that weights move to L3) through the whole
//! pipeline in memory and prints each stage's time. The 100k Relu chain
//! must take well under 10 s, and 8× the nodes may not cost more than 16×
//! the time.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{ModelBuilder, F32};
use deploygen::bind::npz;
use deploygen::ir::TensorData;
use deploygen::pipeline;
use deploygen::plan::PlanOptions;

/// `x[1, 16] → Relu → … → Relu → y`, `n` nodes, with its test data;
/// with `weights`, every other node is an `Add` of its own zero weight.
fn relu_chain(dir: &Path, n: usize, weights: bool) {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 16]);
    for i in 0..n {
        let from = if i == 0 { "x".to_string() } else { format!("t{}", i - 1) };
        let to = if i + 1 == n { "y".to_string() } else { format!("t{i}") };
        if weights && i % 2 == 1 {
            let w = format!("w{i}");
            b.init(&w, &[1, 16], &[0.0; 16]);
            b.node("Add", &[&from, &w], &[&to], vec![]);
        } else {
            b.node("Relu", &[&from], &[&to], vec![]);
        }
    }
    b.output("y", F32, &[1, 16]);
    b.write(dir, "network.onnx");
    let x: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
    let y: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    let write = |file: &str, key: &str, v: &[f32]| {
        let t = TensorData::from_f32(vec![1, 16], v);
        std::fs::write(dir.join(file), npz::write_npz(&[(key, &t)]).unwrap()).unwrap();
    };
    write("inputs.npz", "x", &x);
    write("outputs.npz", "y", &y);
}

/// The whole pipeline on a chain of `n`, in memory: its total time.
fn generate(n: usize, weights: bool) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    relu_chain(dir.path(), n, weights);
    // With weights, an L2 of 256 KiB overflows at every size: weights move
    // to L3 and are staged, so every size takes the same path.
    let l2 = weights.then_some(256 * 1024);
    let plan = PlanOptions::named("GAP9", "L2", [None, l2, None]).unwrap();
    let t = Instant::now();
    let g = pipeline::generate(dir.path(), &pipeline::Options::new(plan)).unwrap();
    let total = t.elapsed();
    let stages: Vec<String> = g.timings.iter().map(|t| format!("{} {:.2} s", t.stage, t.time.as_secs_f64())).collect();
    let what = if weights { "nodes, half with a weight" } else { "nodes" };
    println!("{n:>7} {what}: {:.2} s ({})", total.as_secs_f64(), stages.join(", "));
    total
}

#[test]
#[ignore = "a timing check: run in release with --ignored"]
fn generation_time_is_near_linear_in_the_node_count() {
    for weights in [false, true] {
        generate(1_000, weights);
        let small = generate(12_500, weights);
        generate(25_000, weights);
        generate(50_000, weights);
        let big = generate(100_000, weights);
        assert!(big < small * 16, "12.5k nodes: {small:?}, 100k nodes: {big:?}: worse than near-linear");
        if !weights {
            assert!(big < Duration::from_secs(10), "a 100k-node Relu chain took {big:?}");
        }
    }
}
