//! The rough edges a new user hits: messages that name the right thing,
//! `inspect` taking every planning flag of `build`, and what `inspect`
//! says about files a build writes.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn deploygen(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deploygen")).args(args).current_dir(cwd).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn mlp() -> String {
    common::zoo("simple_mlp").display().to_string()
}

/// A folder that cannot be written: the message says "cannot write" and
/// names the user's path, not a scratch folder.
#[test]
fn a_write_failure_says_write_and_names_the_users_path() {
    // Below a file (as root, permissions would not stop a write).
    let tmp = tempfile::tempdir().unwrap();
    let o = deploygen(&["build", &mlp(), "--platform", "GAP9", "--out", "/proc/version/x"], tmp.path());
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("cannot write /proc/version"), "{t}");
    assert!(!t.contains("cannot read") && !t.contains("deploygen-tmp"), "{t}");
}

/// `--out .` (or a folder above the working directory) is refused with a
/// reason, before anything is written.
#[test]
fn the_working_directory_is_not_an_output_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let inner = tmp.path().join("work");
    std::fs::create_dir(&inner).unwrap();
    for out in [".", ".."] {
        let o = deploygen(&["build", &mlp(), "--platform", "GAP9", "--out", out, "--force"], &inner);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains("holds the working directory"), "--out {out}: {t}");
        assert!(!t.contains("Device or resource busy"), "{t}");
    }
    assert_eq!(std::fs::read_dir(&inner).unwrap().count(), 0, "nothing written");
}

/// A file that is not ONNX at all is called that; a cut-off one, likely
/// truncated.
#[test]
fn a_file_that_is_not_onnx_is_called_that() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("notes.onnx");
    std::fs::write(&p, "hello, this is a text file\n").unwrap();
    let t = text(&deploygen(&["inspect", p.to_str().unwrap()], tmp.path()));
    assert!(t.contains("this is not an ONNX (protobuf) file: it starts with bytes 68 65 6c 6c"), "{t}");
    assert!(!t.contains("is the file complete"), "{t}");
    let whole = std::fs::read(common::zoo("simple_mlp").join("network.onnx")).unwrap();
    std::fs::write(&p, &whole[..whole.len() / 2]).unwrap();
    let t = text(&deploygen(&["inspect", p.to_str().unwrap()], tmp.path()));
    assert!(t.contains("may be truncated"), "{t}");
}

/// `inspect` accepts every planning flag `build` accepts (the flags that
/// only concern writing the project aside).
#[test]
fn inspect_takes_every_planning_flag_of_build() {
    let longs = |cmd: &str| -> BTreeSet<String> {
        let help = text(&deploygen(&[cmd, "--help"], common::root()));
        help.split_whitespace()
            .filter_map(|w| w.strip_prefix("--"))
            .map(|w| w.trim_end_matches([',', '.', ')']).to_string())
            .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .collect()
    };
    let inspect = longs("inspect");
    let writing = ["out", "force", "check", "hex-files", "timings", "tolerance", "rtol", "help"];
    let missing: Vec<String> =
        longs("build").into_iter().filter(|f| !writing.contains(&f.as_str()) && !inspect.contains(f)).collect();
    assert!(missing.is_empty(), "build flags inspect refuses: {missing:?}");
    let o = deploygen(&["inspect", &mlp(), "--platform", "GAP9", "--l2-image", "1000"], common::root());
    assert!(o.status.success(), "{}", text(&o));
}

/// The files `inspect` names for L3 weights are those a default build
/// writes (the packed image), not per-weight files.
#[test]
fn inspect_names_the_files_a_build_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let o = deploygen(&["inspect", &mlp(), "--platform", "GAP9", "--default-mem", "L3"], common::root());
    let t = text(&o);
    let b = deploygen(
        &["build", &mlp(), "--platform", "GAP9", "--default-mem", "L3", "--out", out.to_str().unwrap()],
        common::root(),
    );
    assert!(b.status.success(), "{}", text(&b));
    let named: BTreeSet<&str> = t
        .split_whitespace()
        .map(|w| w.trim_end_matches([',', ';', ')']))
        .filter(|w| w.starts_with("hex/") && !w.contains('<'))
        .collect();
    assert!(!named.is_empty(), "{t}");
    for f in named {
        assert!(out.join(f).is_file(), "inspect names {f}, which the build did not write:\n{t}");
    }
}

/// A missing L3 image: the FATAL line names the folder it looked in.
#[test]
fn a_missing_l3_image_names_the_folder_looked_in() {
    if Command::new("gcc").arg("--version").output().is_err() {
        return;
    }
    use deploygen::verify::{generate_case, run_case, Case, Kind, StageError};
    let mut c = Case::new(common::zoo("simple_mlp"), "simple_mlp", "host", "L3", Kind::Training);
    c.cache = Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache"));
    let gen = |c: &Case, dir: &Path| -> Result<(), StageError> {
        generate_case(c, dir)?;
        std::fs::remove_file(dir.join("hex/l3.bin")).unwrap();
        Ok(())
    };
    let o = run_case(&c, &gen);
    let all = format!("{}\n{}\n{}", o.message, o.details.join("\n"), o.output);
    assert!(all.contains("FATAL: cannot open l3.bin in /"), "{all}");
    assert!(all.contains("/hex (the readfs folder"), "{all}");
    // The host emulation looks relative to the working directory, not the app.
    assert!(all.contains("default hex/ in the working directory"), "{all}");
}

/// The synopsis of each command in docs/cli.md: (command, long flags named,
/// those outside brackets). `-j` stands for `--jobs`; `[PLAN]` and `[TRAIN]` for the
/// flags their `PLAN = …` and `TRAIN = …` lines list.
fn synopsis() -> Vec<(String, BTreeSet<String>, BTreeSet<String>)> {
    let doc = std::fs::read_to_string(common::root().join("docs/cli.md")).unwrap();
    let block = doc.split("## Synopsis").nth(1).expect("a '## Synopsis' section").split("\n\n").nth(1).unwrap();
    // The `NAME = [...]` lines after the commands: flag groups, `[NAME]` in a command.
    let start = block.find("    PLAN").expect("a PLAN = line").min(block.find("    TRAIN").expect("a TRAIN = line"));
    let (block, groups_text) = block.split_at(start);
    let mut groups: Vec<(String, BTreeSet<String>)> = vec![];
    for line in groups_text.lines() {
        if let Some((name, rest)) =
            line.trim().split_once(" = ").filter(|(n, _)| n.trim().chars().all(|c| c.is_ascii_uppercase()))
        {
            groups.push((format!("[{}]", name.trim()), BTreeSet::new()));
            groups.last_mut().unwrap().1.extend(flags_of(rest));
        } else {
            groups.last_mut().expect("a group line first").1.extend(flags_of(line));
        }
    }
    let mut out: Vec<(String, BTreeSet<String>, BTreeSet<String>)> = vec![];
    // Brackets may span lines of one command.
    let mut depth = 0i32;
    for line in block.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"deploygen") {
            out.push((words[1].to_string(), BTreeSet::new(), BTreeSet::new()));
            depth = 0;
        }
        let (_, all, required) = out.last_mut().expect("the block starts with a command");
        for w in &words {
            if let Some((_, flags)) = groups.iter().find(|(g, _)| g == w) {
                all.extend(flags.iter().cloned());
                continue;
            }
            let flag = w.trim_start_matches('[').trim_end_matches(']');
            let name = if flag == "-j" { Some("jobs") } else { flag.strip_prefix("--") };
            depth += w.matches('[').count() as i32;
            if let Some(n) = name {
                all.insert(n.to_string());
                if depth == 0 {
                    required.insert(n.to_string());
                }
            }
            depth -= w.matches(']').count() as i32;
        }
    }
    out
}

fn flags_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace()
        .filter_map(|w| w.trim_start_matches('[').strip_prefix("--"))
        .map(|f| f.trim_end_matches(']').to_string())
}

/// The synopsis of docs/cli.md and `--help` agree: every flag in both, and
/// the same ones required.
#[test]
fn the_cli_synopsis_agrees_with_help() {
    let commands = synopsis();
    assert_eq!(commands.len(), 6, "{commands:?}");
    for (cmd, all, required) in commands {
        let help = text(&deploygen(&[&cmd, "--help"], common::root()));
        let usage = help.lines().find(|l| l.starts_with("Usage:")).unwrap().to_string();
        let flags = |s: &str| -> BTreeSet<String> {
            s.split(|c: char| c.is_whitespace() || c == ',')
                .filter_map(|w| w.strip_prefix("--"))
                .filter(|w| !w.is_empty() && !["help", "version"].contains(w))
                .map(str::to_string)
                .collect()
        };
        let listed: BTreeSet<String> = help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
            .flat_map(|l| flags(l.split("  ").next().unwrap_or("")))
            .collect();
        assert_eq!(all, listed, "deploygen {cmd}: docs/cli.md synopsis flags vs --help");
        assert_eq!(required, flags(&usage), "deploygen {cmd}: required flags (docs/cli.md vs {usage})");
    }
}

/// A capacity the generated code cannot hold (sizes and offsets are 32
/// bits) is refused up front, naming the flag, and nothing is written.
#[test]
fn a_capacity_beyond_32_bits_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, value) in [("--l2", "4294967296"), ("--l1", "18446744073709551615")] {
        let o = deploygen(&["build", &mlp(), "--platform", "host", flag, value, "--out", "p"], tmp.path());
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains(&format!("{flag} {value}: a level's capacity is at most 4,294,967,295 B")), "{t}");
        assert!(!tmp.path().join("p").exists(), "{flag}: an output folder was written");
    }
    let o = deploygen(&["inspect", &mlp(), "--platform", "GAP9", "--l3", "4294967295"], tmp.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// A lone `.onnx` file not named like a folder's main file is named by its
/// stem, by `build` and by `test` alike (`lone/mycnn.onnx` is `mycnn`).
#[test]
fn a_lone_onnx_file_has_one_name_in_build_and_test() {
    let tmp = tempfile::tempdir().unwrap();
    let lone = tmp.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    // Its weights are initializers: it builds without test data.
    std::fs::copy(common::zoo("conv_legacy_attrs").join("network.onnx"), lone.join("mycnn.onnx")).unwrap();
    let b = deploygen(&["build", "lone/mycnn.onnx", "--platform", "host", "--out", "out"], tmp.path());
    assert!(text(&b).contains("deploygen build: mycnn ("), "{}", text(&b));
    let t = deploygen(&["test", "lone/mycnn.onnx", "--platform", "host"], tmp.path());
    assert!(text(&t).contains("mycnn/host-L2-inference"), "{}", text(&t));
    assert!(!text(&t).contains("lone/host-L2"), "{}", text(&t));
}

/// A capacity error's breakdown adds up to what the level needs, and its
/// capacity hint names every level to change at once: following it, the
/// plan fits (giving L2 what it asked for used to leave L3 short).
#[test]
fn a_capacity_hint_fixes_every_level_at_once_and_its_breakdown_adds_up() {
    let tmp = tempfile::tempdir().unwrap();
    let cct = common::zoo("cct").display().to_string();
    let cases: [&[&str]; 3] = [&["--l2", "300000"], &["--l2", "135169", "--l3", "100000"], &["--l2", "100000"]];
    for given in cases {
        let mut args = vec!["inspect", &cct, "--platform", "GAP9"];
        args.extend(given);
        let o = deploygen(&args, tmp.path());
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{given:?}: {t}");
        if let Some(needed) = t.split("it needs ").nth(1).map(|s| number(s.split(" B").next().unwrap())) {
            let parts: u64 = t.lines().filter_map(breakdown_part).sum();
            assert_eq!(parts, needed, "{given:?}: the breakdown does not add up: {t}");
        }
        let hint = t.split("try:").nth(1).and_then(|h| h.split(", or ").find(|h| h.trim().starts_with("--l")));
        let hint = hint.unwrap_or_else(|| panic!("{given:?}: no capacity hint: {t}"));
        let flags: Vec<&str> = hint.trim().trim_end_matches("(or more)").split_whitespace().collect();
        // The hint's flags replace the given ones they name.
        let mut again = vec!["inspect", &cct, "--platform", "GAP9"];
        for pair in given.chunks(2) {
            if !flags.contains(&pair[0]) {
                again.extend(pair);
            }
        }
        again.extend(&flags);
        let o = deploygen(&again, tmp.path());
        assert_eq!(o.status.code(), Some(0), "{given:?} then the hint {flags:?}: {}", text(&o));
    }
}

fn number(s: &str) -> u64 {
    s.trim().replace(',', "").parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

/// A breakdown line's bytes: `  arena   432,824 B  (...)`.
fn breakdown_part(line: &str) -> Option<u64> {
    let labels = ["arena", "weights, baked", "harness data", "other static", "stacks/reserved"];
    let rest = labels.iter().find_map(|l| line.strip_prefix("  ")?.strip_prefix(l))?;
    Some(number(rest.trim_start().split(" B").next()?))
}

/// Test data without references: `build`, `test` and `inspect` say the
/// same one thing, naming the command that makes them (make_train_refs.py
/// for a train.toml model, make_refs.py otherwise), not one line per key.
#[test]
fn missing_references_are_one_message_naming_the_command_everywhere() {
    for (model, tool) in [("mlp_derived_sgd", "make_train_refs.py"), ("kws_cnn", "make_refs.py")] {
        let m = common::copy_model(&common::zoo(model));
        std::fs::remove_file(m.path().join("outputs.npz")).unwrap();
        let dir = m.path().display().to_string();
        let want = format!(
            "{dir} has no outputs.npz: nothing is compared; make the references with `python tools/{tool} {dir}`"
        );
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("p").display().to_string();
        let b = deploygen(&["build", &dir, "--platform", "GAP9", "--default-mem", "L2", "--out", &out], tmp.path());
        let bt = text(&b);
        assert_eq!(b.status.code(), Some(0), "{bt}");
        assert!(String::from_utf8_lossy(&b.stderr).contains(&format!("warning: {want}")), "{bt}");
        assert_eq!(bt.matches("not compared").count(), 1, "{bt}");
        let t = deploygen(&["test", &dir, "--platform", "GAP9", "--default-mem", "L2"], tmp.path());
        let tt = text(&t);
        assert!(tt.contains(&format!("FAILED_BIND: {want}")), "{tt}");
        let i = deploygen(&["inspect", &dir, "--platform", "GAP9"], tmp.path());
        assert!(text(&i).contains(&want), "{}", text(&i));
    }
}

/// `--predict-batch` sets the batch of a training project's prediction
/// graph; an inference model predicts at its own inputs' batch, so the flag
/// would do nothing there: it is refused, pointing at `--dim`, and no
/// project is written.
#[test]
fn predict_batch_on_an_inference_model_is_refused() {
    let kws = common::zoo("kws_cnn").display().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("gen");
    let o = deploygen(
        &["build", &kws, "--platform", "GAP9", "--predict-batch", "2", "--out", out.to_str().unwrap()],
        tmp.path(),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--predict-batch 2") && t.contains("--dim"), "{t}");
    assert!(!out.exists(), "a refused build left {}", out.display());
}
