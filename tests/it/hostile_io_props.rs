//! Property: the report writer ([`deploygen::files::write`]) writes a new
//! name or over a regular file, and refuses anything else at the path —
//! a folder, a FIFO, a symbolic link (to a file, a folder or nowhere) —
//! leaving it as it was; and `--dim` values give a dim from 1 to 2^32-1
//! or an error naming the dim, never a wrapped shape or a panic.
//! `PROPTEST_CASES` sets another count.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use crate::common::*;
use deploygen::cli::train::parse_dim;
use deploygen::import::{pb, TrainRequest, UnknownAttrs};
use deploygen::ir::Dim;
use proptest::prelude::*;

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(n),
        ..ProptestConfig::default()
    }
}

/// What is at the path before the write.
#[derive(Clone, Copy, Debug)]
enum Target {
    Missing,
    Regular,
    Folder,
    Fifo,
    LinkToFile,
    LinkToFolder,
    Dangling,
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        Just(Target::Missing),
        Just(Target::Regular),
        Just(Target::Folder),
        Just(Target::Fifo),
        Just(Target::LinkToFile),
        Just(Target::LinkToFolder),
        Just(Target::Dangling),
    ]
}

/// The kind of entry at `p` (not following a link) and, for a regular
/// file, its bytes.
fn snapshot(p: &Path) -> (String, Option<Vec<u8>>) {
    match std::fs::symlink_metadata(p) {
        Err(_) => ("missing".into(), None),
        Ok(m) => {
            let bytes = m.file_type().is_file().then(|| std::fs::read(p).unwrap());
            (format!("{:?}", m.file_type()), bytes)
        }
    }
}

#[cfg(unix)]
fn make(dir: &Path, name: &str, t: Target) {
    let p = dir.join(name);
    std::fs::write(dir.join("victim"), b"precious").unwrap();
    match t {
        Target::Missing => {}
        Target::Regular => std::fs::write(&p, b"old").unwrap(),
        Target::Folder => std::fs::create_dir(&p).unwrap(),
        Target::Fifo => assert!(std::process::Command::new("mkfifo").arg(&p).status().unwrap().success()),
        Target::LinkToFile => std::os::unix::fs::symlink(dir.join("victim"), &p).unwrap(),
        Target::LinkToFolder => std::os::unix::fs::symlink(dir, &p).unwrap(),
        Target::Dangling => std::os::unix::fs::symlink(dir.join("nowhere"), &p).unwrap(),
    }
}

/// A symbolic dim `N` in `x[N, 4]`, read by Shape: its value reaches the
/// folded shape.
fn sym_model(dir: &Path) -> std::path::PathBuf {
    let mut b = ModelBuilder::new();
    let mut x = value("x", F32, &[0, 4]);
    if let Some(pb::type_proto::Value::TensorType(t)) = x.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.shape.as_mut().unwrap().dim[0].value = Some(pb::tensor_shape_proto::dimension::Value::DimParam("N".into()));
    }
    b.graph.input.push(x);
    b.node("Relu", &["x"], &["y"], vec![]);
    b.graph.output.push(value("y", F32, &[0, 4]));
    if let Some(pb::type_proto::Value::TensorType(t)) = b.graph.output[0].r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        t.shape.as_mut().unwrap().dim[0].value = Some(pb::tensor_shape_proto::dimension::Value::DimParam("N".into()));
    }
    b.write(dir, "sym.onnx")
}

/// `--dim` text: a name, `=`, and a value around the bounds or garbage.
fn dim_arg() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        any::<u64>().prop_map(|v| v.to_string()),
        any::<u128>().prop_map(|v| v.to_string()),
        (0u64..8).prop_map(|k| (u64::from(u32::MAX) - 3 + k).to_string()),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        "[ -~]{0,8}",
    ];
    let name = prop_oneof![
        Just("N".to_string()),
        Just("batch".to_string()),
        Just(String::new()),
        Just(" N ".to_string()),
        "[a-z=]{0,3}"
    ];
    (name, value).prop_map(|(n, v)| format!("{n}={v}"))
}

proptest! {
    #![proptest_config(cases(200))]

    #[cfg(unix)]
    #[test]
    fn the_writer_replaces_only_regular_files(t in target(), contents in prop::collection::vec(any::<u8>(), 0..64)) {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), "out", t);
        let p = dir.path().join("out");
        let before = snapshot(&p);
        let r = catch_unwind(AssertUnwindSafe(|| deploygen::files::write(&p, &contents)));
        let r = r.unwrap_or_else(|_| panic!("the writer panicked on {t:?}"));
        match t {
            Target::Missing | Target::Regular => {
                prop_assert!(r.is_ok(), "{t:?}: {r:?}");
                prop_assert_eq!(std::fs::read(&p).unwrap(), contents);
            }
            _ => {
                let e = r.expect_err("refused").to_string();
                prop_assert!(e.contains("out") && e.contains("not a regular file"), "{e}");
                prop_assert_eq!(snapshot(&p), before);
            }
        }
        prop_assert_eq!(std::fs::read(dir.path().join("victim")).unwrap(), b"precious".to_vec());
        // Nothing else is left in the folder.
        let n = std::fs::read_dir(dir.path()).unwrap().count();
        prop_assert!(n <= 2, "{n} entries left");
    }

    #[test]
    fn dims_are_whole_numbers_up_to_two_to_the_32(s in dim_arg()) {
        match catch_unwind(|| parse_dim(&s)).unwrap_or_else(|_| panic!("parse_dim panicked on {s:?}")) {
            Ok((name, v)) => {
                prop_assert!(!name.is_empty() && (1..=u32::MAX as usize).contains(&v), "{s:?} -> {name}={v}");
                // Its value is the dim's, in the typed graph.
                let dir = tempfile::tempdir().unwrap();
                let m = sym_model(dir.path());
                let req = TrainRequest { dims: vec![(name.clone(), v)], ..TrainRequest::default() };
                let r = catch_unwind(AssertUnwindSafe(|| deploygen::pipeline::lowered(&m, &req, UnknownAttrs::Refuse)))
                    .unwrap_or_else(|_| panic!("lowering panicked with --dim {s}"));
                if let (Ok(model), "N") = (r, name.as_str()) {
                    let x = model.graph.id("x").unwrap();
                    let dims = model.graph.tensor(x).ty.dims.clone().unwrap();
                    prop_assert_eq!(&dims[0], &Dim::Fixed(v));
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains(s.as_str()), "{msg}");
            }
        }
    }
}
