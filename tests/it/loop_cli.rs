//! The everyday loop from the command line: progress lines of `deploygen
//! test`, `--partition K/N` slices and `deploygen merge-junit`.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MODELS: &[&str] = &["models/simple_mlp", "models/kws_cnn", "models/autoencoder"];
const KINDS: &[&str] = &["training", "inference", "training"];

fn deploygen() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_deploygen"));
    c.current_dir(common::root());
    c
}

/// A runtime cache shared by the tests of this binary, kept between runs.
fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache")
}

/// A status table marking every case of MODELS × host × {L2, L3} as not
/// supported: `deploygen test` lists them without running them.
fn skip_all(dir: &Path) -> PathBuf {
    let mut t = String::new();
    for (m, kind) in MODELS.iter().zip(KINDS) {
        let name = Path::new(m).file_name().unwrap().to_string_lossy();
        for l in ["L2", "L3"] {
            t.push_str(&format!(
                "[\"{name}/host-{l}-{kind}\"]\nstatus = \"NOT_SUPPORTED_SKIP\"\nstage = \"FAILED_PLAN\"\n\
                 reason = \"a test of slicing\"\nevidence = \"none\"\n\n"
            ));
        }
    }
    let p = dir.join("status.toml");
    std::fs::write(&p, t).unwrap();
    p
}

fn test_cmd(status: &Path, extra: &[&str]) -> Output {
    deploygen()
        .arg("test")
        .args(MODELS)
        .args(["--platform", "host", "--default-mem", "L2", "--default-mem", "L3", "--status"])
        .arg(status)
        .args(extra)
        .output()
        .unwrap()
}

/// The case keys of a run's verdict lines (printed as cases finish), sorted.
fn keys(o: &Output) -> Vec<String> {
    let out = String::from_utf8_lossy(&o.stdout);
    let mut k: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("SKIPPED ").or_else(|| l.strip_prefix("PASSED  ")))
        .map(|r| r.trim_start().split("  ").next().unwrap().to_string())
        .collect();
    k.sort();
    k
}

fn junit_names(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.split("<testcase name=\"").skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect()
}

/// Each case says on stderr when it starts and when it ends, also when
/// stderr is not a terminal (here: a pipe).
#[test]
fn every_case_says_when_it_starts_and_ends() {
    let o = deploygen()
        .args(["test", "models/simple_mlp", "models/kws_cnn", "--platform", "host", "--default-mem", "L2"])
        .arg("--cache-dir")
        .arg(cache())
        .arg("--status")
        .arg(common::root().join("status.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}{}", String::from_utf8_lossy(&o.stdout));
    for key in ["simple_mlp/host-L2-training", "kws_cnn/host-L2-inference"] {
        let start = err.lines().filter(|l| l.starts_with("deploygen test: [") && l.ends_with(&format!("start  {key}")));
        assert_eq!(start.count(), 1, "one start line for {key}:\n{err}");
        let end = err.lines().filter(|l| l.contains(&format!("end    {key}  PASSED (")));
        assert_eq!(end.count(), 1, "one end line for {key}:\n{err}");
    }
}

/// `--partition K/N` (and `count:K/N`, `hash:K/N`): the slices are
/// disjoint, together they are the whole matrix, the same call gives the
/// same slice, and the merged JUnit holds every case once.
#[test]
fn partitions_cover_the_matrix_once_and_merge_into_one_report() {
    let tmp = tempfile::tempdir().unwrap();
    let status = skip_all(tmp.path());
    let whole_junit = tmp.path().join("whole.xml");
    let whole = test_cmd(&status, &["--junit", whole_junit.to_str().unwrap()]);
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    assert!(!String::from_utf8_lossy(&whole.stdout).contains("PASSED"), "every case is skipped");
    let all: BTreeSet<String> = keys(&whole).into_iter().collect();
    assert_eq!(all.len(), MODELS.len() * 2);
    for how in ["", "count:", "hash:"] {
        let mut seen = BTreeSet::new();
        let mut parts = vec![];
        for k in 1..=4 {
            let junit = tmp.path().join(format!("part{k}.xml"));
            let spec = format!("{how}{k}/4");
            let o = test_cmd(&status, &["--partition", &spec, "--junit", junit.to_str().unwrap()]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let again = test_cmd(&status, &["--partition", &spec]);
            assert_eq!(keys(&o), keys(&again), "{spec}: the same slice every time");
            for key in keys(&o) {
                assert!(seen.insert(key.clone()), "{spec}: {key} is in two slices");
            }
            parts.push(junit);
        }
        assert_eq!(seen, all, "{how}K/4: the slices together are the matrix");
        let merged = tmp.path().join("merged.xml");
        let o = deploygen().arg("merge-junit").args(&parts).arg("--out").arg(&merged).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let names: BTreeSet<String> = junit_names(&merged).into_iter().collect();
        assert_eq!(names, all);
        assert_eq!(junit_names(&merged).len(), all.len());
    }
    // Count slices deal in order: slice 1 of 4 has cases 0 and 4.
    let first = keys(&test_cmd(&status, &["--partition", "1/4"]));
    let order = junit_names(&whole_junit);
    let mut expected = vec![order[0].clone(), order[4].clone()];
    expected.sort();
    assert_eq!(first, expected);
}

#[test]
fn overlapping_reports_and_bad_partitions_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let status = skip_all(tmp.path());
    let a = tmp.path().join("a.xml");
    assert!(test_cmd(&status, &["--junit", a.to_str().unwrap()]).status.success());
    let o = deploygen().arg("merge-junit").arg(&a).arg(&a).arg("--out").arg(tmp.path().join("m.xml")).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is in both") && err.contains("overlapping"), "{err}");
    assert!(!tmp.path().join("m.xml").exists());
    for bad in ["0/3", "4/3", "1/0", "x/3", "3", "slice:1/3"] {
        let o = test_cmd(&status, &["--partition", bad]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--partition {bad}: {err}");
        assert!(err.contains(&format!("--partition {bad}")), "{err}");
    }
}
