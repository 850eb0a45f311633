//! Property: arbitrary text as tensor, weight, node and output names and
//! arbitrary bytes as the model folder's name. `build` either refuses
//! (exit 2, with a message) or writes a project in which only the names
//! changed, and only where names may be (`common::project::only_names_differ`:
//! the same C code token for token, comments that neither open nor close,
//! no trigraph, string literals that hold the original bytes, build files
//! with only the sanitised project name). Thousands of cases run in
//! memory; a few projects holding many hostile names at once are compiled
//! with `-Wall -Wextra -Werror` and run, and must print every name back.
//!
//! ONNX names are protobuf strings: bytes that are not UTF-8 do not decode
//! and the model is refused before any name is used, so names here are
//! arbitrary Unicode text, the folder name arbitrary bytes.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::chain::{self, Names};
use crate::common::project::*;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Pieces that break C, Make, CMake or printf when pasted raw, and
/// arbitrary characters between them.
fn name() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => prop::sample::select(vec![
            "*/", "/*", "//", "??/", "??=", "?", "\"", "\\", "'", "\n", "\r", "\t", "%s", "%n", "$(shell id)",
            "`id`", "${x}", "#", ";", "é", "\u{2028}", "\u{feff}", "\u{7f}", "\u{1b}[2J", "arr_0000", "mb1_",
        ])
        .prop_map(str::to_string),
        3 => any::<char>().prop_map(String::from),
        3 => "[a-z0-9_.:]{1,4}",
    ];
    prop::collection::vec(piece, 1..6).prop_map(|v| v.concat())
}

/// Names for a chain of `links`. Tensor names are distinct (a weight named
/// like the input would be a different model) and no output's name holds
/// `loss` (its reference would bind as the loss): names that change what
/// the model means are not the subject here.
fn names(links: usize) -> impl Strategy<Value = Names> {
    prop::collection::vec(name(), 1 + 3 * links)
        .prop_map(move |v| Names {
            input: v[0].clone(),
            weights: v[1..1 + links].to_vec(),
            nodes: v[1 + links..1 + 2 * links].to_vec(),
            outputs: v[1 + 2 * links..].to_vec(),
        })
        .prop_filter("tensor names are distinct and no output reads as a loss", distinct_tensors)
}

fn distinct_tensors(n: &Names) -> bool {
    let mut t: Vec<&String> = [&n.input].into_iter().chain(&n.weights).chain(&n.outputs).collect();
    let all = t.len();
    t.sort();
    t.dedup();
    t.len() == all && !n.outputs.iter().any(|o| o.contains("loss"))
}

/// Any bytes a folder name can hold.
fn folder() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>().prop_filter("no / or NUL", |b| *b != b'/' && *b != 0), 1..12)
        .prop_filter("not . or ..", |f| f != b"." && f != b"..")
}

const TARGETS: [Target; 4] = [GAP9_L2, GAP9_HEX, SIRACUSA_L3, HOST_L2];
const LINKS: usize = 2;
const PLAIN: &str = "QZmodelZQ";

/// The plain chain's project for each target, built once.
fn plain(t: usize) -> &'static [(PathBuf, Vec<u8>)] {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static PROJECTS: OnceLock<Vec<Files>> = OnceLock::new();
    PROJECTS.get_or_init(|| {
        let root = DIR.get_or_init(|| tempfile::tempdir().unwrap());
        let dir = root.path().join(PLAIN);
        std::fs::create_dir_all(&dir).unwrap();
        chain::write(&dir, &Names::plain(LINKS));
        TARGETS.iter().map(|&t| files(&dir, t)).collect()
    })[t]
        .as_slice()
}

/// Build the chain with `hostile` names in a folder called `folder`;
/// `Ok(false)` when `build` refused it.
fn build_case(hostile: &Names, folder: &[u8], t: usize) -> Result<bool, String> {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(OsStr::from_bytes(folder));
    std::fs::create_dir(&dir).unwrap();
    chain::write(&dir, hostile);
    let r = catch_unwind(AssertUnwindSafe(|| try_files(&dir, TARGETS[t])))
        .map_err(|_| format!("build panicked on {hostile:?}"))?;
    match r {
        Err(e) if !e.to_string().is_empty() => Ok(false),
        Err(e) => Err(format!("refused without a message: {e:?}")),
        Ok(files) => {
            let pairs = Names::pairs(&Names::plain(LINKS), hostile);
            only_names_differ(plain(t), &files, &pairs, PLAIN).map(|_| true)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn hostile_names_are_refused_or_stay_names(hostile in names(LINKS), folder in folder(), t in 0..TARGETS.len()) {
        if let Err(e) = build_case(&hostile, &folder, t) {
            prop_assert!(false, "{e}\nnames: {hostile:?}\nfolder: {folder:?}");
        }
    }
}

// --- A few projects with many hostile names, compiled and run ----------------------

/// `links` links of hostile names that `build` accepts (no NUL, no name
/// twice, no output that reads as a loss reference), drawn from `seed`.
fn accepted_names(seed: u8, links: usize) -> Names {
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]));
    let mut taken: Vec<String> = vec![];
    let mut draw = |runner: &mut TestRunner| loop {
        let n = name().new_tree(runner).unwrap().current();
        if !n.contains('\0') && !n.contains("loss") && !taken.contains(&n) {
            taken.push(n.clone());
            return n;
        }
    };
    let input = draw(&mut runner);
    let mut v = || (0..links).map(|_| draw(&mut runner)).collect::<Vec<_>>();
    let (weights, nodes, outputs) = (v(), v(), v());
    Names { input, weights, nodes, outputs }
}

/// Build, compile with the project's `-Wall -Wextra -Werror` and run.
fn compile_and_run(dir: &Path, out: &Path, t: Target) -> Vec<u8> {
    let a = deploygen::cli::build::Args {
        model: dir.to_path_buf(),
        platform: t.platform.into(),
        default_mem: Some(t.level.into()),
        hex_files: t.hex_files,
        plan: deploygen::cli::plan_args::PlanArgs { l2_image: t.weights_in_l3.then_some(0), ..Default::default() },
        out: Some(out.to_path_buf()),
        ..Default::default()
    };
    assert!(deploygen::cli::build::run(a).unwrap());
    // -O0: the warnings are the same; the compile is what takes time.
    let make = Command::new("make")
        .args(["-s", "-j2", "-f", "Makefile.host", "EXTRA_CFLAGS=-O0"])
        .current_dir(out)
        .output()
        .unwrap();
    assert!(make.status.success(), "make failed:\n{}", String::from_utf8_lossy(&make.stderr));
    let run = Command::new("./app").env("DG_HOST_QUIET", "1").current_dir(out).output().unwrap();
    let stdout = run.stdout;
    assert!(run.status.success(), "./app failed:\n{}", String::from_utf8_lossy(&stdout));
    stdout
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn projects_full_of_hostile_names_compile_run_and_print_them() {
    let links = 12;
    for (seed, t) in [(1u8, GAP9_HEX), (2, SIRACUSA_L3)] {
        let names = accepted_names(seed, links);
        let root = tempfile::tempdir().unwrap();
        let folder: Vec<u8> = [b"m$(shell id)`id`\"\\\t\r\n\xff ".as_slice(), &[seed]].concat();
        let dir = root.path().join(OsStr::from_bytes(&folder));
        std::fs::create_dir(&dir).unwrap();
        chain::write(&dir, &names);
        let stdout = compile_and_run(&dir, &root.path().join("out"), t);
        let total = format!("Errors: 0 out of {}\r\n", 8 * links);
        assert!(contains(&stdout, total.as_bytes()), "{}", String::from_utf8_lossy(&stdout));
        // Each name printed back as its one-line harness label (controls,
        // `]` and `\` escaped), so no name can break or forge a line.
        for o in &names.outputs {
            let label = deploygen::escape::harness_label(o);
            let line = [b"[check ".as_slice(), label.as_bytes(), b"] errors 0 out of 8\r\n"].concat();
            assert!(contains(&stdout, &line), "{o:?} is not printed back:\n{}", String::from_utf8_lossy(&stdout));
        }
    }
}
