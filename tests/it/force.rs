//! `build --force` replaces only a folder deploygen made (its
//! `deploygen.json`) or an empty one, never the model's folder or one
//! around or inside it; anything else is exit 2 naming the folder and why,
//! with nothing changed and nothing left behind. A write that fails names
//! the user's path, not the temporary folder.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;

fn build(model: &Path, out: &Path, force: bool) -> Output {
    let mut c = Command::cargo_bin("deploygen").unwrap();
    c.arg("build").arg(model).args(["--platform", "host", "--default-mem", "L2", "--out"]).arg(out);
    if force {
        c.arg("--force");
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2 and a message holding every needle.
fn refused(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
    }
}

/// Every entry under `dir`, sorted, as relative paths.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    out.sort();
    out
}

#[test]
fn a_folder_with_the_users_files_is_not_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("thesis.tex"), "years of work").unwrap();
    let o = build(&common::zoo("simple_mlp"), &out, true);
    refused(&o, &[&out.display().to_string(), "deploygen.json"]);
    assert_eq!(std::fs::read_to_string(out.join("thesis.tex")).unwrap(), "years of work");
    assert_eq!(tree(tmp.path()), [PathBuf::from("mine"), PathBuf::from("mine/thesis.tex")], "nothing left behind");
}

#[test]
fn an_empty_folder_or_deploygens_own_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    std::fs::create_dir(&out).unwrap();
    let o = build(&common::zoo("simple_mlp"), &out, true);
    assert!(o.status.success(), "{}", stderr(&o));
    // Its own folder, with what `make` left in it, is replaced.
    std::fs::write(out.join("app"), "built").unwrap();
    let o = build(&common::zoo("simple_mlp"), &out, true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!out.join("app").exists());
    assert!(out.join("deploygen.json").is_file());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "nothing left behind");
    // A deploygen.json that is not a manifest does not make a folder ours.
    std::fs::write(out.join("deploygen.json"), "{}").unwrap();
    refused(&build(&common::zoo("simple_mlp"), &out, true), &["deploygen.json"]);
}

#[test]
fn the_model_folder_and_folders_around_or_inside_it_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("zoo").join("m");
    std::fs::create_dir_all(&model).unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz"] {
        std::fs::copy(common::zoo("kws_cnn").join(f), model.join(f)).unwrap();
    }
    let before = tree(tmp.path());
    let model_dir = model.display().to_string();
    for (out, force) in [
        (model.clone(), true),
        (model.join("."), true),
        (tmp.path().join("zoo"), true),
        (tmp.path().join("zoo/../zoo"), true),
        (model.join("build"), false),
    ] {
        refused(&build(&model, &out, force), &[&out.display().to_string(), &model_dir, "model"]);
        assert_eq!(tree(tmp.path()), before, "--out {} changed something", out.display());
    }
    // The same for a model given as its .onnx file.
    refused(&build(&model.join("network.onnx"), &model, true), &[&model_dir, "model"]);
    assert_eq!(tree(tmp.path()), before);
}

#[test]
fn a_file_is_not_replaced_and_nothing_is_left_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("notes.txt");
    std::fs::write(&out, "keep me").unwrap();
    refused(&build(&common::zoo("simple_mlp"), &out, true), &[&out.display().to_string(), "not a folder"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
    assert_eq!(tree(tmp.path()), [PathBuf::from("notes.txt")]);
}

#[test]
fn a_symbolic_link_is_not_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    assert!(build(&common::zoo("simple_mlp"), &real, false).status.success());
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    refused(&build(&common::zoo("simple_mlp"), &link, true), &[&link.display().to_string(), "symbolic link"]);
    assert!(link.read_link().is_ok());
}

#[test]
fn a_failed_write_names_the_users_path() {
    // /proc refuses new entries even to root.
    let out = PathBuf::from(format!("/proc/deploygen-force-test-{}", std::process::id()));
    let o = build(&common::zoo("simple_mlp"), &out, false);
    refused(&o, &["cannot write", &out.display().to_string()]);
    assert!(!stderr(&o).contains("deploygen-tmp"), "{}", stderr(&o));
}

/// --force deletes only what deploygen wrote (the files its deploygen.json
/// lists, unchanged) and what the project's make rules build: a file a
/// person added, a changed generated file, or a folder that merely holds
/// a copied deploygen.json is exit 2 naming the file, and nothing changes.
#[test]
fn force_deletes_only_the_files_deploygen_wrote_and_what_make_builds() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    assert!(build(&common::zoo("simple_mlp"), &out, false).status.success());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("deploygen.json")).unwrap()).unwrap();
    let listed = manifest["files"].as_array().expect("the manifest lists the files");
    assert!(listed.iter().any(|f| f["path"] == "main.c" && f["sha256"].as_str().is_some_and(|s| s.len() == 64)));

    // What make builds is fine.
    for f in ["app", "main.o", "runtime/kernels/linear.o", "runtime.a", "BUILD/GAP9/x.o"] {
        std::fs::create_dir_all(out.join(f).parent().unwrap()).unwrap();
        std::fs::write(out.join(f), "built").unwrap();
    }
    let o = build(&common::zoo("simple_mlp"), &out, true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!out.join("main.o").exists());

    // A person's file, at the top or deep inside.
    for rel in ["notes.txt", "runtime/kernels/my_kernel.c", "stray.o"] {
        let f = out.join(rel);
        std::fs::write(&f, "mine").unwrap();
        refused(&build(&common::zoo("simple_mlp"), &out, true), &[&f.display().to_string()]);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "mine");
        std::fs::remove_file(&f).unwrap();
    }
    // A generated file the person changed.
    let main = out.join("main.c");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, format!("{text}// my change\n")).unwrap();
    refused(&build(&common::zoo("simple_mlp"), &out, true), &[&main.display().to_string(), "changed"]);
    assert!(std::fs::read_to_string(&main).unwrap().ends_with("// my change\n"));
    std::fs::write(&main, text).unwrap();

    // A folder of the person's that holds a copy of a real deploygen.json.
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::copy(out.join("deploygen.json"), mine.join("deploygen.json")).unwrap();
    std::fs::write(mine.join("thesis.tex"), "years of work").unwrap();
    refused(&build(&common::zoo("simple_mlp"), &mine, true), &[&mine.display().to_string()]);
    std::fs::remove_file(mine.join("thesis.tex")).unwrap();
    refused(&build(&common::zoo("simple_mlp"), &mine, true), &["does not match"]);
    assert!(mine.join("deploygen.json").is_file());
}

/// The temporary folders of a write are fresh: a folder of a person's
/// that has the old predictable name is not removed.
#[test]
fn a_folder_with_a_guessable_temporary_name_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    // Names of the pattern `.p.deploygen-{tmp,old}-<pid>` for the pids the
    // next processes are likely to get.
    let guess: Vec<PathBuf> = (0..2000u32)
        .flat_map(|d| {
            let pid = std::process::id() + d;
            [format!(".p.deploygen-tmp-{pid}"), format!(".p.deploygen-old-{pid}")]
        })
        .map(|n| tmp.path().join(n))
        .collect();
    for g in &guess {
        std::fs::create_dir(g).unwrap();
        std::fs::write(g.join("mine.txt"), "mine").unwrap();
    }
    assert!(build(&common::zoo("simple_mlp"), &out, false).status.success());
    assert!(build(&common::zoo("simple_mlp"), &out, true).status.success());
    assert!(guess.iter().all(|g| g.join("mine.txt").is_file()), "a person's folder was removed");
}
