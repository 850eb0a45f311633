//! Property: the files deploygen reads besides models — `train.toml`,
//! `report --profile` run output, `merge-junit` reports — and the keys
//! `triage` resolves give a result or an error, never a panic; a triage
//! key never resolves outside the root; profile totals never wrap.
//! 3,000 cases each (about ten seconds); `PROPTEST_CASES` sets another count.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use deploygen::import::train::{spec, TrainRequest};
use deploygen::triage::resolve::{self, is_plain_name};
use deploygen::verify::status::StatusTable;
use deploygen::verify::{junit, profile};
use proptest::prelude::*;

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(n),
        ..ProptestConfig::default()
    }
}

/// TOML-ish text: keys deploygen knows, odd values, broken syntax.
fn train_toml() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("loss"),
        Just("optimizer"),
        Just("learning_rate"),
        Just("momentum"),
        Just("weight_decay"),
        Just("accumulation_steps"),
        Just("trainable"),
        Just("frozen"),
        Just("logits"),
        Just("labels"),
        Just("[dims]\nbatch"),
        Just("beta1"),
        Just("epsilon"),
        Just("bogus"),
    ];
    let value = prop_oneof![
        Just("\"sgd\"".to_string()),
        Just("\"cross-entropy\"".to_string()),
        Just("-1".to_string()),
        Just("1e400".to_string()),
        Just("nan".to_string()),
        Just("[\"*\"]".to_string()),
        Just("18446744073709551616".to_string()),
        Just("{ a = 1 }".to_string()),
        Just("\"\\u0000\"".to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        "[ -~]{0,12}".prop_map(|s| s),
    ];
    prop::collection::vec((key, value), 0..8)
        .prop_map(|kv| kv.into_iter().map(|(k, v)| format!("{k} = {v}\n")).collect::<String>())
}

proptest! {
    #![proptest_config(cases(3000))]

    #[test]
    fn train_toml_is_read_or_refused_never_a_panic(text in train_toml()) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("train.toml"), &text).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| spec(dir.path(), true, &TrainRequest::default())));
        prop_assert!(r.is_ok(), "panicked on:\n{text}");
    }

    #[test]
    fn profile_input_is_parsed_or_refused_and_totals_never_wrap(
        lines in prop::collection::vec(
            (0u32..6, prop_oneof![Just("Relu"), Just("Conv"), Just("")], "[ -~]{0,10}",
             prop_oneof![any::<u64>(), (u64::MAX - 4)..=u64::MAX, 0u64..1000], any::<bool>()),
            0..12)
    ) {
        let text: String = lines
            .iter()
            .map(|(s, op, name, c, ok)| if *ok { format!("BENCH node {s} {op} {name} cycles={c}\n") } else { format!("BENCH node {s}{name}\n") })
            .collect();
        let r = catch_unwind(|| profile::parse(&text));
        prop_assert!(r.is_ok(), "panicked on:\n{text}");
        if let Ok(Ok(layers)) = r {
            let total = layers.iter().try_fold(0u64, |t, l| t.checked_add(l.cycles));
            prop_assert!(total.is_some(), "accepted totals that wrap:\n{text}");
            let md = profile::markdown(&layers);
            prop_assert!(md.contains("all nodes"));
            let _ = profile::svg(&layers, "t");
        }
    }

    #[test]
    fn merge_junit_input_is_merged_or_refused_never_a_panic(
        parts in prop::collection::vec(prop_oneof![
            "[ -~]{0,40}".prop_map(|s| s),
            "[a-z]{1,6}".prop_map(|n| format!("<testsuites><testsuite name=\"s\" tests=\"1\"><testcase name=\"{n}\"/></testsuite></testsuites>")),
            Just("<?xml version=\"1.0\"?><testsuites><testsuite".to_string()),
            Just("<testsuites><testsuite name=\"s\"><testcase name=\"a\"><failure message=\"&#0;\"/></testcase></testsuite></testsuites>".to_string()),
        ], 1..4)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let inputs: Vec<PathBuf> = parts.iter().enumerate().map(|(i, p)| {
            let f = dir.path().join(format!("{i}.xml"));
            std::fs::write(&f, p).unwrap();
            f
        }).collect();
        let out = dir.path().join("merged.xml");
        let r = catch_unwind(|| junit::merge(&inputs, &out));
        prop_assert!(r.is_ok(), "panicked on {parts:?}");
        for (i, p) in parts.iter().enumerate() {
            prop_assert_eq!(&std::fs::read_to_string(&inputs[i]).unwrap(), p, "an input changed");
        }
    }

    #[test]
    fn triage_keys_never_resolve_outside_the_root(
        parts in prop::collection::vec(prop_oneof![
            Just("..".to_string()), Just(".".to_string()), Just("".to_string()), Just("models".to_string()), Just("victim".to_string()), Just("/".to_string()), Just("\\".to_string()), "[a-z._]{1,5}"
        ], 1..5),
        tail in prop_oneof![Just("host-L2-training"), Just("GAP9-L3-training"), Just("host-L2-inference")]
    ) {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("repo");
        for d in ["models", "tests/fixtures"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        // A model folder outside the root, named by the strategy's words.
        let outside = base.path().join("victim");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("training_model.onnx"), b"").unwrap();
        let key = format!("{}/{tail}", parts.join("/"));
        let table = StatusTable::open(&root.join("status.toml")).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| resolve::resolve(&root, &key, &table)));
        prop_assert!(r.is_ok(), "panicked on {key:?}");
        if let Ok(Ok(found)) = r {
            let dir = found.dir.canonicalize().unwrap();
            prop_assert!(dir.starts_with(root.canonicalize().unwrap()), "{key:?} resolved to {}", dir.display());
            prop_assert!(is_plain_name(&found.key.model), "{key:?}");
        }
    }
}
