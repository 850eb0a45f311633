//! Properties of what deploygen computes when generating code, over
//! random graphs: chains of folding operators (ConstantOfShape, Concat,
//! Add, Mul, Identity, Reshape, Slice, Gather, Cast) on constants of random
//! sizes, and Resize with random sizes and modes. Each lowers and plans,
//! or is refused with an error; never a panic, and what folding holds in
//! memory stays within the limit (values shared, not copied).

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::common::*;
use deploygen::lower::FoldLimit;
use deploygen::pipeline::{self, Options};
use deploygen::plan::PlanOptions;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Concat(usize),
    Add,
    Mul,
    Identity,
    Reshape,
    Slice(i64),
    Gather(i64),
    Cast,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..2000).prop_map(Step::Concat),
        Just(Step::Add),
        Just(Step::Mul),
        Just(Step::Identity),
        Just(Step::Reshape),
        (-3i64..70_000).prop_map(Step::Slice),
        (-70_000i64..70_000).prop_map(Step::Gather),
        Just(Step::Cast),
    ]
}

fn value_i64(v: i64) -> deploygen::import::pb::AttributeProto {
    use deploygen::import::pb;
    pb::AttributeProto {
        name: Some("value".into()),
        r#type: Some(pb::attribute_proto::AttributeType::Tensor as i32),
        t: Some(pb::TensorProto { dims: vec![1], data_type: Some(I64), int64_data: vec![v], ..Default::default() }),
        ..Default::default()
    }
}

/// `ConstantOfShape([n])` then `steps`, every value a graph output.
fn folding_model(n: i64, steps: &[Step]) -> ModelBuilder {
    let mut b = ModelBuilder::new();
    b.init_i64("shape", &[n]).init_i64("flat", &[-1]).node("ConstantOfShape", &["shape"], &["v0"], vec![value_i64(3)]);
    for (i, s) in steps.iter().enumerate() {
        let (x, y) = (format!("v{i}"), format!("v{}", i + 1));
        match s {
            Step::Concat(k) => {
                let ins = vec![x.as_str(); *k];
                b.node("Concat", &ins, &[&y], vec![attr_int("axis", 0)]);
            }
            Step::Add => {
                b.node("Add", &[&x, &x], &[&y], vec![]);
            }
            Step::Mul => {
                b.node("Mul", &[&x, &x], &[&y], vec![]);
            }
            Step::Identity => {
                b.node("Identity", &[&x], &[&y], vec![]);
            }
            Step::Reshape => {
                b.node("Reshape", &[&x, "flat"], &[&y], vec![]);
            }
            Step::Slice(e) => {
                let (st, en) = (format!("st{i}"), format!("en{i}"));
                b.init_i64(&st, &[0]).init_i64(&en, &[*e]);
                b.node("Slice", &[&x, &st, &en], &[&y], vec![]);
            }
            Step::Gather(k) => {
                let idx = format!("idx{i}");
                b.init_i64(&idx, &[*k, 0, *k / 2]);
                b.node("Gather", &[&x, &idx], &[&y], vec![attr_int("axis", 0)]);
            }
            Step::Cast => {
                b.node("Cast", &[&x], &[&y], vec![attr_int("to", 6)]);
            }
        }
    }
    use deploygen::import::pb;
    let last = format!("v{}", steps.len());
    let dtype = if steps.iter().any(|s| matches!(s, Step::Cast)) { 6 } else { I64 };
    let ty = pb::type_proto::Tensor { elem_type: Some(dtype), shape: None };
    b.graph.output.push(pb::ValueInfoProto {
        name: Some(last),
        r#type: Some(pb::TypeProto { value: Some(pb::type_proto::Value::TensorType(ty)), ..Default::default() }),
        ..Default::default()
    });
    b
}

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig { cases: n, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(cases(64))]

    /// Lowering a folding chain never panics; when it succeeds, the
    /// distinct folded values it holds total at most the limit; when it
    /// fails, the error names a node.
    #[test]
    fn folding_chains_stay_within_the_limit(n in 1i64..200_000, steps in prop::collection::vec(step(), 1..12)) {
        let dir = tempfile::tempdir().unwrap();
        folding_model(n, &steps).write(dir.path(), "network.onnx");
        let r = catch_unwind(AssertUnwindSafe(|| deploygen::load(dir.path())));
        let r = r.map_err(|_| format!("panic on {n} {steps:?}")).unwrap();
        match r {
            Ok(m) => {
                let mut seen = HashSet::new();
                let held: u64 = m.graph.tensors.ids()
                    .filter_map(|t| m.graph.tensor(t).data.as_ref())
                    .filter(|d| seen.insert(Arc::as_ptr(d)))
                    .map(|d| d.bytes.len() as u64)
                    .sum();
                let limit = FoldLimit::default().bytes;
                // Initializers of the file besides what folding made: a few bytes.
                prop_assert!(held <= limit + 4096, "{held} B held for {n} {steps:?}");
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("node '"), "{msg}");
            }
        }
    }

    /// Resize with random sizes and modes, planned and emitted for GAP9:
    /// an error (never a panic), or a project whose tap tables the plan
    /// counted within its bound.
    #[test]
    fn resize_plans_or_refuses(
        h in 1i64..8, w in 1i64..8,
        oh in prop_oneof![1i64..600, 1i64..100_000_000], ow in prop_oneof![1i64..600, 1i64..100_000_000],
        mode in prop_oneof![Just("nearest"), Just("linear"), Just("cubic")],
        antialias in any::<bool>(),
    ) {
        let mut b = ModelBuilder::new();
        let mut attrs = vec![attr_str("mode", mode)];
        if antialias && mode != "nearest" {
            attrs.push(attr_int("antialias", 1));
        }
        b.input("x", F32, &[1, 1, h, w]).init_i64("sizes", &[1, 1, oh, ow])
            .node("Resize", &["x", "", "", "sizes"], &["y"], attrs)
            .output("y", F32, &[1, 1, oh, ow]);
        let dir = tempfile::tempdir().unwrap();
        b.write(dir.path(), "network.onnx");
        let o = Options::new(PlanOptions::named("GAP9", "L2", [None, Some(200_000_000), Some(200_000_000)]).unwrap());
        let r = catch_unwind(AssertUnwindSafe(|| pipeline::generate(dir.path(), &o).map(|g| g.plan)));
        let r = r.map_err(|_| format!("panic on {h}x{w} -> {oh}x{ow} {mode}")).unwrap();
        if let Ok(plan) = r {
            let tables: u64 = plan.buffers.iter()
                .filter(|b| b.name == deploygen::plan::KERNEL_TABLES).map(|b| b.bytes).sum();
            prop_assert!(tables <= deploygen::plan::TABLES_CEILING, "{tables} B of tables");
            prop_assert!(tables > 0, "no tables counted for {h}x{w} -> {oh}x{ow} {mode}");
        }
    }
}

/// The generator makes models that fold: a small chain lowers, its last
/// value a constant of the expected size.
#[test]
fn a_small_chain_folds() {
    let dir = tempfile::tempdir().unwrap();
    let steps = [Step::Add, Step::Concat(3), Step::Identity, Step::Reshape, Step::Slice(7), Step::Cast];
    folding_model(10, &steps).write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    let v = m.graph.tensor(m.graph.id("v6").unwrap()).data.clone().expect("folded");
    assert_eq!((v.shape.clone(), v.bytes.len()), (vec![7], 28));
}
