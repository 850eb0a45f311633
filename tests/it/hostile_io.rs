//! Hostile input to what deploygen reads and writes by path: report files
//! pointed at a device, a FIFO, a folder or a symbolic link; FIFOs given
//! where a file is read; an `.npz` of many members; names that would
//! forge report lines or break XML; values past what they can mean.
//! Each is exit 2 naming the thing (or a correct result), and nothing
//! outside what was asked for changes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use deploygen::ir::TensorData;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_deploygen"))
}

/// `deploygen ARGS` in `dir`, killed after `limit` (then `None`): a run
/// that blocks on a FIFO fails the test instead of hanging it. Output goes
/// through files, so a long report never blocks on a full pipe.
fn run_for(dir: &Path, args: &[&str], limit: Duration) -> Option<Output> {
    let out = tempfile::tempdir().unwrap();
    let (o, e) = (out.path().join("stdout"), out.path().join("stderr"));
    let mut child = Command::new(exe())
        .args(args)
        .current_dir(dir)
        .env("DEPLOYGEN_CACHE_DIR", out.path().join("cache"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(Output { status, stdout: std::fs::read(&o).unwrap(), stderr: std::fs::read(&e).unwrap() });
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run(dir: &Path, args: &[&str]) -> Output {
    run_for(dir, args, Duration::from_secs(120)).unwrap_or_else(|| panic!("deploygen {args:?} did not finish"))
}

fn exit2(o: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stdout:\n{}\nstderr:\n{err}", String::from_utf8_lossy(&o.stdout));
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
    }
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success(), "mkfifo {}", p.display());
}

const XML: &str = "<?xml version=\"1.0\"?><testsuites name=\"x\"><testsuite name=\"s\" tests=\"1\">\
                   <testcase name=\"a\"/></testsuite></testsuites>";
const RUN: &str = "BENCH node 0 Relu r cycles=5\nBENCH node 1 Relu s cycles=7\n";

/// A scratch folder holding what the writers read: a JUnit part, a run
/// output, and a status table that skips simple_mlp's host case (so
/// `test --junit` writes its report without building anything).
fn scratch() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.xml"), XML).unwrap();
    std::fs::write(tmp.path().join("run.txt"), RUN).unwrap();
    std::fs::write(
        tmp.path().join("skip.toml"),
        "[\"simple_mlp/host-L2-training\"]\nstatus = \"NOT_SUPPORTED_SKIP\"\nstage = \"FAILED_IMPORT\"\n\
         reason = \"not run here\"\nevidence = \"hostile_io\"\n",
    )
    .unwrap();
    tmp
}

/// Every report writer, writing to `target`.
fn writers(target: &str) -> Vec<Vec<String>> {
    let mlp = zoo("simple_mlp").display().to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    vec![
        s(&["inspect", &mlp, "--dot", target]),
        s(&["inspect", &mlp, "--platform", "host", "--svg", target]),
        s(&["report", "--profile", "run.txt", "--svg", target]),
        s(&["merge-junit", "a.xml", "--out", target]),
        s(&["test", &mlp, "--platform", "host", "--status", "skip.toml", "--junit", target]),
    ]
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Nothing but `keep` (and what the test made) is in `dir`: no temporary
/// file left behind.
fn no_leftovers(dir: &Path, keep: &[&str]) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            keep.contains(&name.as_str()) || ["a.xml", "run.txt", "skip.toml"].contains(&name.as_str()),
            "{name} left in {}",
            dir.display()
        );
    }
}

/// Each writer writes a new name, and over a regular file.
#[cfg(unix)]
fn writers_write_new_names_and_over_regular_files() {
    let tmp = scratch();
    for w in writers("out.file") {
        let _ = std::fs::remove_file(tmp.path().join("out.file"));
        ok(&run(tmp.path(), &args(&w)));
        assert!(std::fs::metadata(tmp.path().join("out.file")).unwrap().len() > 0, "{w:?}");
        // Over the regular file it wrote: replaced.
        std::fs::write(tmp.path().join("out.file"), "old").unwrap();
        ok(&run(tmp.path(), &args(&w)));
        assert_ne!(std::fs::read_to_string(tmp.path().join("out.file")).unwrap(), "old", "{w:?}");
        no_leftovers(tmp.path(), &["out.file"]);
    }
}

/// A device, a FIFO, a folder, a symbolic link (to a regular file, or to
/// nowhere): each writer refuses it naming the path, and it stays what it
/// was (a FIFO is never opened: the run does not block). A new name or a
/// regular file is written as before.
#[cfg(unix)]
#[test]
fn report_writers_refuse_what_is_not_a_regular_file() {
    use std::os::unix::fs::FileTypeExt;
    writers_write_new_names_and_over_regular_files();
    let tmp = scratch();
    let d = tmp.path();
    mkfifo(&d.join("fifo"));
    std::fs::create_dir(d.join("folder")).unwrap();
    std::fs::write(d.join("victim.txt"), "precious").unwrap();
    std::os::unix::fs::symlink(d.join("victim.txt"), d.join("link")).unwrap();
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    // A device node of its own (never the machine's /dev/full, which an
    // old build would replace): where mknod is not allowed, /dev/null is
    // only checked, not offered.
    let device = Command::new("mknod").arg(d.join("device")).args(["c", "1", "7"]).status().is_ok_and(|s| s.success());
    let mut keep = vec!["fifo", "folder", "victim.txt", "link", "dangling"];
    let mut targets = vec!["fifo", "folder", "link", "dangling"];
    if device {
        keep.push("device");
        targets.push("device");
    }
    for target in targets {
        for w in writers(target) {
            let o =
                run_for(d, &args(&w), Duration::from_secs(60)).unwrap_or_else(|| panic!("{w:?} blocked on {target}"));
            exit2(&o, &[target, "not a regular file"]);
        }
    }
    if device {
        assert!(std::fs::symlink_metadata(d.join("device")).unwrap().file_type().is_char_device());
    }
    assert!(std::fs::symlink_metadata(d.join("fifo")).unwrap().file_type().is_fifo());
    assert!(std::fs::symlink_metadata(d.join("folder")).unwrap().is_dir());
    assert!(std::fs::symlink_metadata(d.join("link")).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(d.join("dangling")).unwrap().file_type().is_symlink());
    assert!(!d.join("nowhere").exists());
    assert_eq!(std::fs::read_to_string(d.join("victim.txt")).unwrap(), "precious");
    assert_eq!(std::fs::read_dir(d.join("folder")).unwrap().count(), 0);
    no_leftovers(d, &keep);
}

/// A FIFO where a file is read by path is refused by name, never opened
/// to block: status tables (`test`, `triage`), `report --profile` input,
/// `merge-junit` parts, `--train`, `report --ort`, and the project files
/// `build --check` compares and `build --force` checks.
#[cfg(unix)]
#[test]
fn fifos_are_refused_never_read() {
    let tmp = scratch();
    let d = tmp.path();
    mkfifo(&d.join("fifo"));
    let mlp = zoo("simple_mlp").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["test", &mlp, "--platform", "host", "--status", "fifo"],
        vec!["triage", "simple_mlp/host-L2-training", "--status", "fifo"],
        vec!["report", "--profile", "fifo"],
        vec!["merge-junit", "a.xml", "fifo", "--out", "m.xml"],
        vec!["inspect", &mlp, "--train", "fifo"],
        vec!["report", &mlp, "--platform", "host", "--no-run", "--ort", "fifo"],
    ];
    for c in cases {
        let o = run_for(d, &c, Duration::from_secs(60)).unwrap_or_else(|| panic!("{c:?} blocked on the FIFO"));
        exit2(&o, &["fifo", "FIFO"]);
    }
    assert!(!d.join("m.xml").exists());

    // A project whose generated file is a FIFO: --check and --force refuse
    // or leave it, never block.
    let p = d.join("proj");
    ok(&run(d, &["build", &mlp, "--platform", "host", "--out", "proj"]));
    std::fs::remove_file(p.join("main.c")).unwrap();
    mkfifo(&p.join("main.c"));
    let o = run_for(d, &["build", &mlp, "--platform", "host", "--check", "proj"], Duration::from_secs(60))
        .expect("build --check blocked on a FIFO");
    exit2(&o, &["main.c", "FIFO"]);
    let o = run_for(d, &["build", &mlp, "--platform", "host", "--out", "proj", "--force"], Duration::from_secs(60))
        .expect("build --force blocked on a FIFO");
    exit2(&o, &["main.c", "FIFO"]);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(p.join("main.c")).unwrap().file_type().is_fifo());
}

/// 10,000 mini-batches (20,000 members): reading the `.npz` is linear in
/// its members (the zip directory is read once), so `inspect` binds it in
/// seconds; it took minutes when the directory was re-read per member.
#[test]
fn an_npz_of_twenty_thousand_members_binds_in_seconds() {
    let dir = copy_model(&zoo("simple_mlp"));
    const N: usize = 10_000;
    edit_inputs(dir.path(), |a| {
        let input = a.iter().find(|(k, _)| k == "input").unwrap().1.clone();
        let labels = a.iter().find(|(k, _)| k == "labels").unwrap().1.clone();
        a.retain(|(k, _)| !k.starts_with("mb") && !k.starts_with("meta_n_batches") && k != "meta_data_size");
        for i in 1..N {
            a.push((format!("mb{i}_input"), input.clone()));
            a.push((format!("mb{i}_labels"), labels.clone()));
        }
        a.push(("meta_data_size".into(), TensorData::from_i64(vec![], &[N as i64])));
        a.push(("meta_n_batches".into(), TensorData::from_i64(vec![], &[N as i64])));
    });
    // The references hold the zoo's schedule; without them every
    // mini-batch still binds.
    std::fs::remove_file(dir.path().join("outputs.npz")).unwrap();
    // The command: inspect binds every mini-batch.
    let t = Instant::now();
    let o = run_for(dir.path(), &["inspect", "."], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("inspect of a {}-member npz took over a minute", 2 * N));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("{N} forward pass(es)")), "{text}\n{err}");
    let inspect = t.elapsed();
    let npz = dir.path().join("inputs.npz");
    // The library: open, then read every member.
    let t = Instant::now();
    let z = deploygen::bind::npz::read(&npz).unwrap();
    assert!(z.len() >= 2 * N);
    let all = z.arrays().unwrap();
    assert_eq!(all.len(), z.len());
    let lib = t.elapsed();
    assert!(lib < Duration::from_secs(20), "reading {} members took {lib:?}", z.len());
    eprintln!("{} members: inspect {inspect:?}, library {lib:?}", z.len());
}

/// SVG is XML: a name holding control characters (not allowed in XML 1.0)
/// or a line break shows them as visible escapes.
#[test]
fn svg_is_well_formed_whatever_the_names_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = ModelBuilder::new();
    b.input("x\u{1}\u{1b}[2J", F32, &[2, 4])
        .node("Relu", &["x\u{1}\u{1b}[2J"], &["h\u{7}\u{8}\nforged"], vec![])
        .node("Relu", &["h\u{7}\u{8}\nforged"], &["y\u{b}\u{c}"], vec![])
        .output("y\u{b}\u{c}", F32, &[2, 4]);
    let m = b.write(tmp.path(), "m.onnx");
    ok(&run(tmp.path(), &["inspect", m.to_str().unwrap(), "--platform", "host", "--svg", "plan.svg"]));
    let svg = std::fs::read_to_string(tmp.path().join("plan.svg")).unwrap();
    let bad: Vec<char> =
        svg.chars().filter(|&c| (c < ' ' && !['\n', '\t', '\r'].contains(&c)) || c == '\u{fffe}').collect();
    assert!(bad.is_empty(), "characters XML 1.0 does not allow: {bad:?}");
    assert!(svg.contains("\\u{7}\\u{8}\\u{a}forged"), "the controls are shown, not dropped:\n{svg}");
}

/// A name's line break cannot forge a line of a text report.
#[test]
fn names_cannot_forge_report_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let forged = "model        forged.onnx";
    let name = format!("y\n{forged}\r\u{1b}[1m");
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 4]).node("Relu", &["x"], &[&name], vec![]).output(&name, F32, &[2, 4]);
    let m = b.write(tmp.path(), "m.onnx");
    for extra in [&[][..], &["--platform", "host"][..]] {
        let mut a = vec!["inspect", m.to_str().unwrap()];
        a.extend(extra);
        let text = ok(&run(tmp.path(), &a));
        assert!(text.lines().all(|l| !l.starts_with(forged)), "a name forged a line:\n{text}");
        assert!(text.contains("y\\u{a}model"), "the line break is shown as an escape:\n{text}");
    }
}

/// `m/network.onnx --out m/gen` is a folder inside the model folder,
/// refused as `m --out m/gen` is; a lone `.onnx` file's folder that is no
/// model folder still takes a project.
#[test]
fn out_inside_the_model_folder_is_refused_for_the_onnx_path_too() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m");
    std::fs::create_dir(&m).unwrap();
    for e in std::fs::read_dir(zoo("simple_mlp")).unwrap() {
        let f = e.unwrap().path();
        std::fs::copy(&f, m.join(f.file_name().unwrap())).unwrap();
    }
    for model in ["m", "m/network.onnx"] {
        let o = run(tmp.path(), &["build", model, "--platform", "host", "--out", "m/gen"]);
        exit2(&o, &["--out m/gen", "inside the model folder"]);
        assert!(!m.join("gen").exists());
    }
    // A lone .onnx in a folder that holds no model: a project beside it.
    let lone = tmp.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    mlp().write(&lone, "mlp.onnx");
    ok(&run(tmp.path(), &["build", "lone/mlp.onnx", "--platform", "host", "--out", "lone/gen"]));
}

/// `--dim` values are capped at 2^32-1, as train.toml's `dims` are: a
/// larger one never wraps into a negative Shape.
#[test]
fn dims_past_two_to_the_32_are_refused_naming_the_dim() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = zoo("simple_mlp").display().to_string();
    for v in ["18446744073709551615", "4294967296", "99999999999999999999999"] {
        let o = run(tmp.path(), &["inspect", &mlp, "--dim", &format!("batch={v}")]);
        exit2(&o, &["--dim", "batch", "4294967295"]);
    }
}

/// `report --ort` step times that cannot be a measurement: refused naming
/// the file, the model and the field.
#[test]
fn absurd_onnxruntime_step_times_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = zoo("simple_mlp").display().to_string();
    for v in ["1e308", "0", "0.0", "-0.0", "7200"] {
        std::fs::write(tmp.path().join("ort.json"), format!(r#"{{"simple_mlp": {{"seconds": {v}}}}}"#)).unwrap();
        let o =
            run(tmp.path(), &["report", &mlp, "--platform", "host", "--no-run", "--runs", "1", "--ort", "ort.json"]);
        exit2(&o, &["ort.json", "\"simple_mlp\"", "seconds"]);
    }
}

/// `logits` naming an int64 output: the message names the output and its
/// dtype, not a gradient rule of a node behind it.
#[test]
fn int64_logits_are_refused_naming_the_output_and_dtype() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 4])
        .init("w", &[3, 4], &[0.5; 12])
        .node("Gemm", &["x", "w"], &["scores"], vec![attr_int("transB", 1)])
        .node("Cast", &["scores"], &["classes"], vec![attr_int("to", I64 as i64)])
        .output("scores", F32, &[2, 3])
        .output("classes", I64, &[2, 3]);
    b.write(tmp.path(), "network.onnx");
    std::fs::write(
        tmp.path().join("train.toml"),
        "loss = \"mse\"\noptimizer = \"sgd\"\nlearning_rate = 0.1\nlogits = \"classes\"\n",
    )
    .unwrap();
    let o = run(tmp.path(), &["inspect", "."]);
    exit2(&o, &["logits = 'classes'", "i64", "scores"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("gradient rule"));
}

/// int64 Range is counted and computed in integers: operands beyond 2^53
/// (which f64 cannot hold) give numpy's shape and values.
#[test]
fn int64_range_beyond_two_to_the_53_is_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let big = (1i64 << 53) + 1;
    let mut b = ModelBuilder::new();
    b.input("x", I64, &[2])
        .init_i64("start", &[big])
        .init_i64("limit", &[big + 2])
        .init_i64("delta", &[1])
        .node("Range", &["start", "limit", "delta"], &["r"], vec![])
        .node("Add", &["x", "r"], &["y"], vec![])
        .output("y", I64, &[2]);
    let path = b.write(tmp.path(), "range.onnx");
    let text = ok(&run(tmp.path(), &["inspect", "range.onnx"]));
    assert!(text.contains("y  i64 [2]"), "{text}");
    // The folded values, exactly: np.arange(2**53 + 1, 2**53 + 3).
    let m = deploygen::load(&path).unwrap();
    let r = m.graph.id("r").and_then(|t| m.graph.tensor(t).data.clone()).expect("Range folds to a constant");
    assert_eq!(r.to_i64().unwrap(), vec![big, big + 1]);
}

/// A NaN bound is no bound: `Range(0, NaN, 1)` is refused naming the
/// node, never an empty range.
#[test]
fn a_nan_range_operand_is_refused_naming_the_node() {
    let tmp = tempfile::tempdir().unwrap();
    for (start, limit, delta, says) in
        [(0.0, f32::NAN, 1.0, "limit"), (f32::NAN, 1.0, 1.0, "start"), (0.0, 4.0, f32::INFINITY, "delta")]
    {
        let mut b = ModelBuilder::new();
        b.input("x", F32, &[1])
            .init("start", &[1], &[start])
            .init("limit", &[1], &[limit])
            .init("delta", &[1], &[delta])
            .node("Range", &["start", "limit", "delta"], &["r"], vec![])
            .node("Add", &["x", "r"], &["y"], vec![])
            .output("y", F32, &[1]);
        b.write(tmp.path(), "nan.onnx");
        exit2(&run(tmp.path(), &["inspect", "nan.onnx"]), &["Range_0", says]);
    }
}

/// Nor a line of an error message: the node, operator and tensor names in
/// a message show their line breaks as escapes.
#[test]
fn names_cannot_forge_error_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 4]).node("Relu", &["nowhere\nerror: forged tensor"], &["y"], vec![]).output(
        "y",
        F32,
        &[2, 4],
    );
    b.graph.node[0].name = Some("n\nerror: forged node".into());
    b.write(tmp.path(), "m.onnx");
    let o = run(tmp.path(), &["inspect", "m.onnx"]);
    exit2(&o, &["n\\u{a}error: forged node", "nowhere\\u{a}error: forged tensor"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.lines().all(|l| !l.starts_with("error: forged")), "{err}");
}
