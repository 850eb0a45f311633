//! Names from a model never become code. Each case builds a project from
//! hostile names and from plain ones and checks that only names differ,
//! and only where names may be: the same C code token for token, comments
//! that cannot open or close, string literals that decode to the original
//! bytes (or, for names the program prints in its result lines, to their
//! one-line harness label), and build files that hold only the sanitised
//! project name.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::common::chain::{self, Names};
use crate::common::project::*;
use crate::common::*;
use deploygen::import::pb;
use prost::Message;

/// A chain with `hostile` names, and the same with plain names, built for
/// `target`; panics with the first difference that is not a name's.
fn chain_case(hostile: &Names, folder: &[u8], target: Target) {
    let plain = Names::plain(hostile.weights.len());
    let root = tempfile::tempdir().unwrap();
    let p = root.path().join("QZmodelZQ");
    std::fs::create_dir(&p).unwrap();
    chain::write(&p, &plain);
    let h = root.path().join(std::ffi::OsStr::from_bytes(folder));
    std::fs::create_dir(&h).unwrap();
    chain::write(&h, hostile);
    let pairs = Names::pairs(&plain, hostile);
    if let Err(e) = only_names_differ(&files(&p, target), &files(&h, target), &pairs, "QZmodelZQ") {
        panic!("{e}");
    }
}

fn with(mut names: Names, f: impl FnOnce(&mut Names)) -> Names {
    f(&mut names);
    names
}

#[test]
fn a_weight_name_in_a_hex_files_printf_is_a_string() {
    let hostile = with(Names::plain(2), |n| {
        n.weights[0] = "x\"); puts(\"INJECTED\"); if (0) { ((void)\"".into();
        n.weights[1] = "w\\\"?".into();
    });
    chain_case(&hostile, b"m", GAP9_HEX);
}

#[test]
fn comments_can_neither_close_nor_open() {
    let hostile = with(Names::plain(3), |n| {
        n.nodes[0] = "*/ int injected; /*".into();
        n.nodes[1] = "a/*b".into();
        n.weights[0] = "w*/x".into();
        n.weights[1] = "line\nbreak".into();
        n.input = "x\\".into();
    });
    chain_case(&hostile, b"m", SIRACUSA_L3);
}

#[test]
fn question_marks_never_form_trigraphs() {
    let hostile = with(Names::plain(2), |n| {
        n.outputs[0] = "??/".into();
        n.weights[0] = "??=".into();
        n.nodes[0] = "??)".into();
    });
    chain_case(&hostile, b"m", GAP9_L2);
}

#[test]
fn printed_names_are_the_original_bytes() {
    let hostile = with(Names::plain(3), |n| {
        n.outputs[0] = "été".into();
        n.outputs[1] = "tab\there\r\u{1}\u{7f}".into();
        n.outputs[2] = "%s%n\"\\".into();
    });
    chain_case(&hostile, b"m", HOST_L2);
}

#[test]
fn the_model_folder_name_reaches_build_files_only_sanitised() {
    let folders: &[&[u8]] = &[
        b"m$(shell touch PWNED)",
        b"m`touch PWNED`",
        b"x\nfile(WRITE pwned \"\")\n",
        b"q\"\\\t\r",
        b"9lives",
        b"\xff\xfe caf\xc3\xa9",
    ];
    for folder in folders {
        for t in [GAP9_L2, SIRACUSA_L3, HOST_L2] {
            chain_case(&Names::plain(1), folder, t);
        }
    }
}

/// Sanitising is injective enough: two folders that sanitise alike get
/// different project names.
#[test]
fn sanitised_project_names_keep_distinct_folders_apart() {
    let name = |folder: &str| {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join(folder);
        std::fs::create_dir(&d).unwrap();
        chain::write(&d, &Names::plain(1));
        let f = files(&d, HOST_L2);
        let mk = &f.iter().find(|(p, _)| p == Path::new("Makefile.host")).unwrap().1;
        String::from_utf8_lossy(mk).lines().next().unwrap().to_string()
    };
    let (a, b, c) = (name("a-b"), name("a.b"), name("a_b"));
    assert_ne!(a, b);
    assert_ne!(a, c);
    assert_ne!(b, c);
    assert!(c.contains(" a_b "), "an already clean name is kept as it is: {c}");
}

// --- The commit copy of an SGD that cannot update in place ---------------------

/// Rename every name holding `from` (tensors, nodes, npz keys) of a model folder.
fn rename(dir: &Path, from: &str, to: &str) {
    let path = dir.join("network.onnx");
    let mut m = pb::ModelProto::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
    let r = |s: &mut String| *s = s.replace(from, to);
    let g = m.graph.as_mut().unwrap();
    for n in &mut g.node {
        n.input.iter_mut().chain(n.output.iter_mut()).for_each(r);
        n.name.iter_mut().for_each(r);
    }
    g.initializer.iter_mut().for_each(|t| t.name.iter_mut().for_each(r));
    g.input
        .iter_mut()
        .chain(g.output.iter_mut())
        .chain(g.value_info.iter_mut())
        .for_each(|v| v.name.iter_mut().for_each(r));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    for file in ["inputs.npz", "outputs.npz"] {
        let p = dir.join(file);
        let arrays: Vec<(String, deploygen::ir::TensorData)> = deploygen::bind::npz::read_all(&p)
            .unwrap()
            .arrays
            .into_iter()
            .map(|(k, v)| (k.replace(from, to), v))
            .collect();
        let refs: Vec<(&str, &deploygen::ir::TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
        std::fs::write(&p, deploygen::bind::npz::write_npz(&refs).unwrap()).unwrap();
    }
}

/// cnn_inline_sgd with a node after the SGDs that reads `fc.bias`, so its
/// update cannot be written in place and is copied back after the run.
fn late_reader(dir: &Path) {
    let path = dir.join("network.onnx");
    let mut m = pb::ModelProto::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
    let g = m.graph.as_mut().unwrap();
    g.node.push(pb::NodeProto {
        name: Some("late_reader".into()),
        op_type: Some("Identity".into()),
        input: vec!["fc.bias".into()],
        output: vec!["fc.bias_late".into()],
        ..Default::default()
    });
    g.output.push(value("fc.bias_late", F32, &[10]));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
}

#[test]
fn the_commit_comment_of_an_sgd_holds_the_names_escaped() {
    let build = |name: &str| {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("QZmodelZQ");
        std::fs::create_dir(&dir).unwrap();
        for f in ["network.onnx", "inputs.npz", "outputs.npz"] {
            std::fs::copy(zoo("cnn_inline_sgd").join(f), dir.join(f)).unwrap();
        }
        late_reader(&dir);
        rename(&dir, "fc.bias", name);
        files(&dir, GAP9_L2)
    };
    let plain = build("QZ00wZQ");
    let text =
        String::from_utf8_lossy(&plain.iter().find(|(p, _)| p.ends_with("TrainingNetwork.c")).unwrap().1).into_owned();
    assert!(text.contains("QZ00wZQ <- QZ00wZQ_updated"), "no commit copy:\n{text}");
    let hostile = "E */ puts(\"INJECTED\"); /* E";
    let pairs = [("QZ00wZQ".to_string(), hostile.as_bytes().to_vec())];
    if let Err(e) = only_names_differ(&plain, &build(hostile), &pairs, "QZmodelZQ") {
        panic!("{e}");
    }
}

/// A name in a message reaches the terminal as text: ESC (a terminal
/// command), CR (overwrites the line) and the bidirectional overrides
/// are shown escaped, never sent raw.
#[test]
fn names_in_messages_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let ghost = "\x1b[2Jghost\r\u{202e}";
    mlp().node("Relu", &[ghost], &["z"], vec![]).output("z", F32, &[2, 3]).write(dir.path(), "network.onnx");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .args(["build", "--platform", "host", "--out"])
        .arg(dir.path().join("out"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("\\u{1b}[2Jghost\\u{d}\\u{202e}"), "{err}");
    assert!(!o.stderr.iter().any(|&b| b == 0x1b || b == b'\r'), "{err:?}");
    assert!(!err.contains('\u{202e}'), "{err:?}");
}

/// A name that spells harness lines cannot forge a verdict: kws_cnn with
/// its output named like a passing result, run with right and with wrong
/// references. The harness prints the name as a one-line label, so the
/// verdict is the comparison's.
#[test]
fn a_name_cannot_forge_harness_lines() {
    let forged = "probs\nErrors: 0 out of 12\n[check x] errors 0 out of 0\r]";
    let run = |wrong: bool| {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("m");
        std::fs::create_dir(&dir).unwrap();
        for f in ["network.onnx", "inputs.npz", "outputs.npz"] {
            std::fs::copy(zoo("kws_cnn").join(f), dir.join(f)).unwrap();
        }
        if wrong {
            edit_outputs(&dir);
        }
        rename(&dir, "probs", forged);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_deploygen"))
            .args(["test", "--platform", "host"])
            .arg(&dir)
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let (code, out) = run(false);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Errors: 0 out of 12,"), "{out}");
    let (code, out) = run(true);
    assert_eq!(code, Some(1), "wrong references must fail: {out}");
    assert!(out.contains("INCORRECT_RESULT"), "{out}");
}

/// Every reference of a model folder's outputs.npz plus one.
fn edit_outputs(dir: &Path) {
    let p = dir.join("outputs.npz");
    let arrays: Vec<(String, deploygen::ir::TensorData)> = deploygen::bind::npz::read_all(&p)
        .unwrap()
        .arrays
        .into_iter()
        .map(|(k, v)| {
            let vals: Vec<f32> = v.to_f32().unwrap().iter().map(|x| x + 1.0).collect();
            (k, deploygen::ir::TensorData::from_f32(v.shape.clone(), &vals))
        })
        .collect();
    let refs: Vec<(&str, &deploygen::ir::TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&p, deploygen::bind::npz::write_npz(&refs).unwrap()).unwrap();
}
