//! Import never panics: random bytes and random mutations of a valid model
//! either import or fail with an error.

use crate::common::*;
use proptest::prelude::*;

/// A model touching many shape rules, so mutations reach them.
fn rich_model() -> Vec<u8> {
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 3, 8, 8])
        .init("w", &[4, 3, 3, 3], &[0.1; 108])
        .init_i64("shape", &[1, -1])
        .init_i64("axes", &[0])
        .init_i64("two", &[2])
        .init("fc", &[5, 64], &[0.0; 320])
        .node("Conv", &["x", "w"], &["c"], vec![attr_ints("pads", &[1, 1, 1, 1])])
        .node("MaxPool", &["c"], &["p", "i"], vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("strides", &[2, 2])])
        .node("Shape", &["p"], &["s"], vec![])
        .node("Slice", &["s", "axes", "two"], &["s2"], vec![])
        .node("Reshape", &["p", "shape"], &["f"], vec![])
        .node("Gemm", &["f", "fc"], &["g"], vec![attr_int("transB", 1)])
        .node("Softmax", &["g"], &["y"], vec![attr_int("axis", -1)])
        .node("ReduceSum", &["y", "axes"], &["r"], vec![attr_int("keepdims", 0)])
        .node("Transpose", &["c"], &["t"], vec![attr_ints("perm", &[0, 2, 3, 1])])
        .node("Unsqueeze", &["r", "axes"], &["u"], vec![])
        .output("y", F32, &[1, 5])
        .output("u", F32, &[1, 5]);
    b.bytes()
}

fn try_import(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.onnx");
    std::fs::write(&p, bytes).unwrap();
    let _ = read_typed(&p);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        try_import(&bytes);
    }

    #[test]
    fn mutated_models_never_panic(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let mut bytes = rich_model();
        for (at, v) in edits {
            let i = at.index(bytes.len());
            bytes[i] = v;
        }
        try_import(&bytes);
    }
}

#[test]
fn the_rich_model_itself_imports() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.onnx");
    std::fs::write(&p, rich_model()).unwrap();
    let g = read_typed(&p).unwrap();
    assert_eq!(g.onnx_nodes, 10);
}

fn small() -> impl Strategy<Value = i64> {
    prop_oneof![Just(0i64), Just(1), Just(-1), Just(2), Just(-3), 0i64..40, Just(i64::MAX), Just(i64::MIN)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// Hostile attribute and shape values reach every rule without a panic.
    #[test]
    fn hostile_attributes_never_panic(
        dims in proptest::collection::vec(small(), 0..6),
        wdims in proptest::collection::vec(small(), 0..6),
        pads in proptest::collection::vec(small(), 0..6),
        strides in proptest::collection::vec(small(), 0..4),
        kernel in proptest::collection::vec(small(), 0..4),
        axes in proptest::collection::vec(small(), 0..4),
        target in proptest::collection::vec(small(), 0..5),
        perm in proptest::collection::vec(small(), 0..5),
        op in 0usize..12,
    ) {
        let mut b = ModelBuilder::new();
        b.input("x", F32, &dims)
            .input("w", F32, &wdims)
            .init_i64("axes", &axes)
            .init_i64("target", &target);
        let (name, inputs, outputs, attrs): (&str, Vec<&str>, Vec<&str>, Vec<_>) = match op {
            0 => ("Conv", vec!["x", "w"], vec!["y"], vec![attr_ints("pads", &pads), attr_ints("strides", &strides), attr_int("group", kernel.first().copied().unwrap_or(1))]),
            1 => ("MaxPool", vec!["x"], vec!["y", "i"], vec![attr_ints("kernel_shape", &kernel), attr_ints("pads", &pads), attr_ints("strides", &strides), attr_int("ceil_mode", 1)]),
            2 => ("AveragePoolGrad", vec!["x"], vec!["y"], vec![attr_ints("kernel_shape", &kernel), attr_ints("pads", &pads), attr_ints("strides", &strides)]),
            3 => ("Reshape", vec!["x", "target"], vec!["y"], vec![]),
            4 => ("Transpose", vec!["x"], vec!["y"], vec![attr_ints("perm", &perm)]),
            5 => ("Slice", vec!["x", "axes", "target", "axes", "axes"], vec!["y"], vec![]),
            6 => ("Squeeze", vec!["x", "axes"], vec!["y"], vec![]),
            7 => ("Unsqueeze", vec!["x", "axes"], vec!["y"], vec![]),
            8 => ("ReduceMean", vec!["x"], vec!["y"], vec![attr_ints("axes", &axes)]),
            9 => ("Gemm", vec!["x", "w"], vec!["y"], vec![attr_int("transA", 1)]),
            10 => ("Expand", vec!["x", "target"], vec!["y"], vec![]),
            _ => ("LayerNormalization", vec!["x", "w"], vec!["y", "m", "s"], vec![attr_int("axis", axes.first().copied().unwrap_or(0))]),
        };
        b.node(name, &inputs, &outputs, attrs).output("y", F32, &[]);
        // Drop the declared output shape: only the rule decides.
        b.graph.output[0].r#type = None;
        try_import(&b.bytes());
    }
}

/// Extreme values where overflow lurks: each import must fail or succeed
/// without a panic (debug builds panic on integer overflow).
#[test]
fn extreme_values_in_window_and_concat_rules() {
    let big = i64::MAX;
    let cases: Vec<ModelBuilder> = vec![
        {
            let mut b = ModelBuilder::new();
            b.input("x", F32, &[1, 1, big, 4])
                .input("w", F32, &[1, 1, 3, 3])
                .node("Conv", &["x", "w"], &["y"], vec![attr_ints("pads", &[big, big, big, big])])
                .output("y", F32, &[]);
            b
        },
        {
            let mut b = ModelBuilder::new();
            b.input("x", F32, &[1, 1, big, 4])
                .node(
                    "MaxPool",
                    &["x"],
                    &["y", "i"],
                    vec![
                        attr_ints("kernel_shape", &[big, 1]),
                        attr_ints("dilations", &[big, 1]),
                        attr_str("auto_pad", "SAME_UPPER"),
                    ],
                )
                .output("y", F32, &[]);
            b
        },
        {
            let mut b = ModelBuilder::new();
            b.input("x", F32, &[big, 3, 8, 8])
                .input("w", F32, &[3, big, 3, 3])
                .node("Conv", &["x", "w"], &["y"], vec![attr_int("group", big)])
                .output("y", F32, &[]);
            b
        },
        {
            let mut b = ModelBuilder::new();
            b.input("x", F32, &[1, 1, big, big])
                .node(
                    "AveragePoolGrad",
                    &["x"],
                    &["y"],
                    vec![attr_ints("kernel_shape", &[big, big]), attr_ints("strides", &[big, big])],
                )
                .output("y", F32, &[]);
            b
        },
        {
            let mut b = ModelBuilder::new();
            b.input("a", F32, &[big])
                .input("c", F32, &[big])
                .node("Concat", &["a", "c"], &["y"], vec![attr_int("axis", 0)])
                .output("y", F32, &[]);
            b
        },
        {
            let mut b = ModelBuilder::new();
            b.input("x", F32, &[4])
                .init_i64("v", &[1, 2, 3, 4])
                .init_i64("s", &[1])
                .init_i64("e", &[big])
                .init_i64("a", &[0])
                .init_i64("st", &[big])
                .node("Slice", &["v", "s", "e", "a", "st"], &["y"], vec![])
                .output("y", I64, &[]);
            b
        },
    ];
    for (i, b) in cases.iter().enumerate() {
        let mut b2 = ModelBuilder { graph: b.graph.clone(), opsets: b.opsets.clone() };
        b2.graph.output[0].r#type = None;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.onnx");
        std::fs::write(&p, b2.bytes()).unwrap();
        let r = std::panic::catch_unwind(|| read_typed(&p).map(|_| ()).map_err(|e| e.to_string()));
        assert!(r.is_ok(), "case {i} panicked");
    }
}
