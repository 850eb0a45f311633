//! The ONNX project's own backend test cases (those of a pinned onnx
//! release whose operators deploygen lists), run with `deploygen test
//! --platform host`, one test per release: onnx 1.17.0 (the wheel's cases)
//! and onnx 1.23.2 (its node cases generated from the wheel).
//! `tools/onnx_conformance.py` writes them into `target/onnx-conformance/`
//! and `target/onnx-conformance-1.23/` (CI runs it; see `.ci/run`). Every case must
//! pass or be refused while generating the project with a message that
//! names what is not supported; a wrong value, a crash or an internal error fails
//! the test. The outcome — per operator passed/total, and every refusal
//! with its message — is the release's section of docs/onnx-conformance.md, which must be current
//! (`UPDATE_GOLDEN=1 cargo test --test it onnx_conformance::` rewrites it).
//!
//! Most 1.17 cases are the 1.23 case of the same name byte for byte
//! (model, inputs and references): those run once, in the 1.23 run, and
//! the 1.17 test takes their verdicts from it; the 1.17 test runs only the
//! cases 1.23 lacks or holds otherwise, beside the 1.23 run.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const DOC: &str = "docs/onnx-conformance.md";

/// One pinned onnx release whose cases run.
struct Release {
    /// The test's name in SKIPPED lines.
    test: &'static str,
    onnx: &'static str,
    /// Under target/: what tools/onnx_conformance.py writes.
    dir: &'static str,
    /// How to write the cases.
    how: &'static str,
    /// Where the cases come from, for the doc.
    source: &'static str,
}

const RELEASES: &[Release] = &[
    Release {
        test: "onnx_conformance",
        onnx: "1.17.0",
        dir: "onnx-conformance",
        how: "python3 tools/onnx_conformance.py, with onnx==1.17.0",
        source: "the wheel's `backend/test/data/{node,simple,pytorch-converted,pytorch-operator}`",
    },
    Release {
        test: "onnx_conformance_1_23",
        onnx: "1.23.2",
        dir: "onnx-conformance-1.23",
        how: "tools/onnx_conformance.py --release 1.23 with the python of a venv holding onnx==1.23.2, as .ci/run does",
        source: "the node cases the wheel's `backend/test/case/node` generates (numpy seeded with 0), and the \
                 wheel's `backend/test/data/{simple,pytorch-converted,pytorch-operator}`",
    },
];

/// One writer of the doc at a time.
static DOC_WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Words of a failure message that mark an internal error, never a
/// documented refusal.
const INTERNAL: &[&str] = &["panicked", "internal error", "gives it no buffer", "bug"];

struct Case {
    name: String,
    ops: Vec<String>,
}

#[derive(Clone, Debug)]
struct Verdict {
    stage: String,
    message: String,
}

/// The cases `tools/onnx_conformance.py` wrote: name and operators.
fn cases(base: &Path) -> Option<Vec<Case>> {
    let text = std::fs::read_to_string(base.join("cases.txt")).ok()?;
    let v: Vec<Case> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            Some(Case { name, ops: w.map(String::from).collect() })
        })
        .collect();
    (!v.is_empty() && base.join("cases").is_dir()).then_some(v)
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"").replace("&apos;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// The value of `name="…"`'s `value` in one `<property …/>` element.
fn attr(elem: &str, key: &str) -> Option<String> {
    let at = elem.find(&format!(" {key}=\""))? + key.len() + 3;
    let end = elem[at..].find('"')?;
    Some(unescape(&elem[at..at + end]))
}

/// Per case key (`<model>/host-L2-inference`): stage class and message,
/// from the JUnit file `deploygen test` wrote.
fn read_junit(path: &Path) -> BTreeMap<String, Verdict> {
    let xml = std::fs::read_to_string(path).expect("deploygen test wrote no JUnit file");
    let mut out = BTreeMap::new();
    for tc in xml.split("<testcase ").skip(1) {
        let head = format!(" {}", &tc[..tc.find('>').unwrap_or(tc.len())]);
        let name = attr(&head, "name").expect("a test case without a name");
        let mut v = Verdict { stage: String::new(), message: String::new() };
        for p in tc.split("<property ").skip(1) {
            let p = format!(" {}", &p[..p.find("/>").unwrap_or(p.len())]);
            match attr(&p, "name").as_deref() {
                Some("stage") => v.stage = attr(&p, "value").unwrap_or_default(),
                Some("error_message") => v.message = attr(&p, "value").unwrap_or_default(),
                _ => {}
            }
        }
        out.insert(name, v);
    }
    out
}

/// A refusal is a failure while generating the project (import, bind,
/// plan, emit: a form deploygen does not support, named) whose message is
/// not an internal error. Wrong values, compile errors and crashes never are.
fn is_refusal(v: &Verdict) -> bool {
    matches!(v.stage.as_str(), "FAILED_IMPORT" | "FAILED_BIND" | "FAILED_PLAN" | "FAILED_EMIT")
        && !INTERNAL.iter().any(|w| v.message.to_ascii_lowercase().contains(w))
}

/// One line of a message, without the model folder's path.
fn clean(message: &str, cases_dir: &Path) -> String {
    let first = message.lines().next().unwrap_or("");
    first.replace(&format!("{}/", cases_dir.display()), "").replace('|', "\\|")
}

/// The doc's text before the first release's section.
const HEADER: &str = "# ONNX backend conformance\n\n\
The ONNX project's own backend test cases whose operators deploygen lists and whose inputs and outputs are\n\
f32, i64, i32, int8, uint8 or bool, run with `deploygen test --platform host` against the release's expected\n\
outputs, one section per pinned onnx release. `tools/onnx_conformance.py` writes the folders,\n\
`tests/it/onnx_conformance.rs` runs them and checks this file (`UPDATE_GOLDEN=1 cargo test --test it onnx_conformance::` rewrites the sections\n\
of the releases it ran). A case either passes or is refused while generating the project with the message\n\
below; a wrong value, a crash or an internal error fails the test. Values compare as\n\
`|computed - ref| <= atol + rtol * |ref|` with rtol 1e-3 (ONNX's own backend check's) and atol 1e-3 times\n\
the largest reference magnitude (at least 1e-3, at most 1); integers and booleans compare exactly. A case\n\
of an older release whose model, inputs and expected outputs are byte for byte those of the newer release's case\n\
of the same name runs once, with the newer release's cases, and counts in both sections.\n\n";

/// The section's title line of a release.
fn title(r: &Release) -> String {
    format!("## onnx {}\n", r.onnx)
}

/// The section of one release in the doc's text, from its title to the next release's.
fn section<'a>(text: &'a str, r: &Release) -> Option<&'a str> {
    let at = text.find(&title(r))?;
    let rest = &text[at + 1..];
    let end = rest.find("\n## onnx ").map(|e| at + 1 + e + 1).unwrap_or(text.len());
    Some(&text[at..end])
}

fn doc(r: &Release, cases: &[Case], verdicts: &Verdicts) -> String {
    let mut per_op: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut passed = 0;
    let mut refusals = vec![];
    for c in cases {
        let (v, cases_dir) = &verdicts[&c.name];
        let ok = v.stage == "PASSED";
        passed += ok as usize;
        for op in &c.ops {
            let e = per_op.entry(op.as_str()).or_default();
            e.0 += ok as usize;
            e.1 += 1;
        }
        if !ok {
            refusals.push(format!("| `{}` | {} | {} |", c.name, v.stage, clean(&v.message, cases_dir)));
        }
    }
    let mut s = title(r);
    s.push_str(&format!("\nThe cases: {}.\n\n", r.source));
    s.push_str(&format!(
        "**{passed} of {} pass ({:.1} %)**; {} refused.\n\n",
        cases.len(),
        100.0 * passed as f64 / cases.len().max(1) as f64,
        refusals.len()
    ));
    s.push_str("### Per operator\n\nA case counts for every operator its graph uses.\n\n");
    s.push_str("| operator | passed | cases |\n|---|---:|---:|\n");
    for (op, (p, t)) in &per_op {
        s.push_str(&format!("| {op} | {p} | {t} |\n"));
    }
    s.push_str("\n### Refusals\n\nEach a documented limit, with deploygen's message.\n\n");
    s.push_str("| case | stage | message |\n|---|---|---|\n");
    for r in refusals {
        s.push_str(&r);
        s.push('\n');
    }
    s
}

/// The whole doc: the header, then each release's section, `ours` new and
/// the others as the old text has them.
fn whole_doc(old: &str, ours: &Release, new: &str) -> String {
    let mut s = HEADER.to_string();
    for r in RELEASES {
        let part = if std::ptr::eq(r, ours) {
            new.to_string()
        } else {
            section(old, r).map(str::to_string).unwrap_or_else(|| format!("{}\nNot run yet.\n", title(r)))
        };
        s.push_str(&part);
        if !s.ends_with("\n\n") {
            s.push('\n');
        }
    }
    s.truncate(s.trim_end().len());
    s.push('\n');
    s
}

#[test]
fn onnx_1_17_cases_pass_or_are_refused_by_name() {
    run(&RELEASES[0], Some(&RELEASES[1]));
}

#[test]
fn onnx_1_23_cases_pass_or_are_refused_by_name() {
    run(&RELEASES[1], None);
}

/// Verdicts by case name, each with the cases folder its run read (which
/// messages name, and [`clean`] takes out).
type Verdicts = BTreeMap<String, (Verdict, PathBuf)>;

/// A release's cases folder and its cases, when tools/onnx_conformance.py wrote them.
fn written(r: &Release) -> Option<(PathBuf, Vec<Case>)> {
    let base = common::root().join("target").join(r.dir);
    let cases = cases(&base)?;
    Some((base.join("cases"), cases))
}

/// `deploygen test --platform host` on the case folders `names` of
/// `cases_dir` (all of them when `None`), in a scratch folder of its own
/// named `tag`; the verdicts by case name, and the tail of its stderr.
fn deploygen_test(tag: &str, cases_dir: &Path, names: Option<&[&str]>) -> (Verdicts, String) {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(tag);
    std::fs::create_dir_all(&tmp).unwrap();
    let junit = tmp.join("junit.xml");
    let _ = std::fs::remove_file(&junit);
    let status = tmp.join("status.toml");
    std::fs::write(&status, "").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deploygen"));
    cmd.arg("test");
    match names {
        Some(names) => cmd.args(names.iter().map(|n| cases_dir.join(n))),
        None => cmd.arg(cases_dir),
    };
    let started = std::time::Instant::now();
    // The runtime archive other test binaries build and use.
    let out = cmd
        .args(["--platform", "host", "--timeout", "60", "-j", "2"])
        .arg("--cache-dir")
        .arg(common::runtime_cache())
        .arg("--status")
        .arg(&status)
        .arg("--junit")
        .arg(&junit)
        .current_dir(&tmp)
        .output()
        .unwrap();
    let verdicts: Verdicts = read_junit(&junit)
        .into_iter()
        .filter_map(|(key, v)| {
            Some((key.strip_suffix("/host-L2-inference")?.to_string(), (v, cases_dir.to_path_buf())))
        })
        .collect();
    eprintln!("{tag}: deploygen test ran {} cases in {:.0?}", verdicts.len(), started.elapsed());
    let stderr = String::from_utf8_lossy(&out.stderr).lines().rev().take(20).collect::<Vec<_>>().join("\n");
    (verdicts, stderr)
}

/// The run of every case of `r`, once per test binary: the test of `r`
/// and the test of an older release that takes verdicts from it share it
/// (the second to ask waits for the first's run).
fn full_run(r: &Release, cases_dir: &Path) -> &'static (Verdicts, String) {
    static RUNS: [OnceLock<(Verdicts, String)>; 2] = [OnceLock::new(), OnceLock::new()];
    let at = RELEASES.iter().position(|x| std::ptr::eq(x, r)).unwrap();
    RUNS[at].get_or_init(|| deploygen_test(r.dir, cases_dir, None))
}

/// Whether case `name` of `ours` holds the same model and data, byte for
/// byte, as the case of that name in `theirs`: then its verdict is the
/// other's (deploygen's output depends on nothing else).
fn same_case(ours: &Path, theirs: &Path, name: &str) -> bool {
    ["network.onnx", "inputs.npz", "outputs.npz"].iter().all(|f| {
        let a = std::fs::read(ours.join(name).join(f));
        a.is_ok() && a.ok() == std::fs::read(theirs.join(name).join(f)).ok()
    })
}

/// The verdicts of release `r`'s cases. A case that `newer` holds with
/// the same model and data is not run twice: its verdict is the one of
/// `newer`'s run (which that release's test checks as well).
fn verdicts(r: &Release, cases_dir: &Path, cases: &[Case], newer: Option<&Release>) -> (Verdicts, String) {
    let Some((newer, theirs_dir)) = newer.and_then(|n| Some((n, written(n)?.0))) else {
        return full_run(r, cases_dir).clone();
    };
    let (shared, own): (Vec<&Case>, Vec<&Case>) =
        cases.iter().partition(|c| same_case(cases_dir, &theirs_dir, &c.name));
    let names: Vec<&str> = own.iter().map(|c| c.name.as_str()).collect();
    let (mut verdicts, stderr) = match names.is_empty() {
        true => Default::default(),
        false => deploygen_test(&format!("{}-own", r.dir), cases_dir, Some(&names)),
    };
    let (theirs, their_stderr) = full_run(newer, &theirs_dir);
    for c in &shared {
        if let Some(v) = theirs.get(&c.name) {
            verdicts.insert(c.name.clone(), v.clone());
        }
    }
    eprintln!(
        "onnx {}: {} cases ran on their own, {} are onnx {}'s (the same model and data)",
        r.onnx,
        own.len(),
        shared.len(),
        newer.onnx
    );
    (verdicts, format!("{stderr}\n{their_stderr}"))
}

/// Runs release `r`'s cases (those `newer` shares through its run) and
/// checks them and its section of the doc.
fn run(r: &Release, newer: Option<&Release>) {
    let Some((cases_dir, cases)) = written(r) else {
        let base = common::root().join("target").join(r.dir);
        common::skip_unless_ci(r.test, &format!("{} holds no cases (run {})", base.display(), r.how));
        return;
    };
    common::ran(r.test);
    let (verdicts, stderr) = verdicts(r, &cases_dir, &cases, newer);
    let mut faults = vec![];
    for c in &cases {
        match verdicts.get(&c.name) {
            None => faults.push(format!("{}: no verdict", c.name)),
            Some((v, _)) if v.stage == "PASSED" || is_refusal(v) => {}
            Some((v, _)) => faults.push(format!("{}: {}: {}", c.name, v.stage, v.message)),
        }
    }
    assert!(
        faults.is_empty(),
        "onnx {}: {} case(s) computed wrong values, crashed or failed internally:\n{}\n\n{stderr}",
        r.onnx,
        faults.len(),
        faults.join("\n"),
    );
    let text = doc(r, &cases, &verdicts);
    let _one = DOC_WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let path = common::root().join(DOC);
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, whole_doc(&old, r, &text)).unwrap();
        return;
    }
    assert!(
        old.starts_with(HEADER),
        "{DOC}'s text before the sections is not current; `UPDATE_GOLDEN=1 cargo test --test it onnx_conformance::` \
         rewrites it"
    );
    let current = section(&old, r).unwrap_or_default();
    if current.trim_end() != text.trim_end() {
        let diff = similar::TextDiff::from_lines(current, &text);
        panic!(
            "{DOC}'s section for onnx {} is not current; `UPDATE_GOLDEN=1 cargo test --test it onnx_conformance::` \
             rewrites it:\n{}",
            r.onnx,
            diff.unified_diff().context_radius(1)
        );
    }
}
