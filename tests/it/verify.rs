//! `deploygen test` (docs/testing.md, "Verifying a deployment"): every way a case can end, shown with
//! hand-written fake projects (a `Makefile.host`, a `main.c` that prints
//! what a harness would, and a `deploygen.json`) generated into the case's
//! temp folder by a fake generation step; then the status table, the exit
//! code, the JUnit report and the command line.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use assert_cmd::Command;
use deploygen::verify::runner::{self, RunOptions, Summary, Verdict};
use deploygen::verify::status::StatusTable;
use deploygen::verify::{junit, run_case, Case, Kind, Outcome, Stage, StageError};
use deploygen::Error;
use predicates::prelude::*;

const MAKEFILE: &str = "\
CC ?= gcc
app: main.c
\t$(CC) -std=c99 -Wall -Werror -D_POSIX_C_SOURCE=200809L $(EXTRA_CFLAGS) main.c -o app
";

/// A C program that prints `lines` (stdout) and returns `exit`.
fn prints(lines: &[&str], exit: i32) -> String {
    let mut s = String::from("#include <stdio.h>\nint main(void) {\n");
    for l in lines {
        s.push_str(&format!("    puts(\"{}\");\n", l.replace('"', "\\\"")));
    }
    s.push_str(&format!("    return {exit};\n}}\n"));
    s
}

/// The tensors a fake `main.c` checks: one per `[check NAME] … out of N` line it prints.
fn checked(main_c: &str) -> Vec<serde_json::Value> {
    main_c
        .split("[check ")
        .skip(1)
        .filter_map(|rest| {
            let (name, tail) = rest.split_once(']')?;
            let n: u64 = tail.split(" out of ").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
            Some(serde_json::json!({ "name": name, "values": n }))
        })
        .collect()
}

fn manifest(case: &Case, expected: u64, loss_refs: u64, compared: Vec<serde_json::Value>) -> String {
    serde_json::json!({
        "model": case.name,
        "platform": case.platform,
        "default_mem": case.default_mem,
        "kind": case.kind,
        "expected_compared": expected,
        "loss_refs": loss_refs,
        "tolerance": 0.001,
        "compared": compared,
        "not_compared": [],
        "steps": 2,
        "accum": 2,
    })
    .to_string()
}

/// A generation step that writes a fake project: `main.c` as given, a
/// manifest promising `expected` values of which `loss_refs` are losses.
fn fake(main_c: String, expected: u64, loss_refs: u64) -> impl Fn(&Case, &Path) -> Result<(), Error> + Sync {
    move |case, dir| {
        std::fs::write(dir.join("Makefile.host"), MAKEFILE).unwrap();
        std::fs::write(dir.join("main.c"), &main_c).unwrap();
        std::fs::write(dir.join("deploygen.json"), manifest(case, expected, loss_refs, checked(&main_c))).unwrap();
        Ok(())
    }
}

fn case(name: &str) -> Case {
    let mut c = Case::new(format!("/models/{name}"), name, "GAP9", "L3", Kind::Training);
    c.timeout = Duration::from_secs(60);
    c
}

const LOSSES_OK: [&str; 2] = [
    "[loss 0] computed=1.884626 ref=1.884626 diff=0.000000 tol=0.001000",
    "[loss 1] computed=2.120301 ref=2.120300 diff=0.000001 tol=0.001000",
];

fn run_fake(lines: &[&str], exit: i32, expected: u64) -> Outcome {
    run_case(&case("m"), &fake(prints(lines, exit), expected, 2))
}

fn assert_stage(o: &Outcome, stage: Stage, needle: &str) {
    assert_eq!(o.stage, Some(stage), "{o:#?}");
    let all = format!("{}\n{}", o.message, o.details.join("\n"));
    assert!(all.contains(needle), "expected {needle:?} in: {all}");
}

// ---------------------------------------------------------------- outcomes

#[test]
fn a_clean_run_passes_with_what_it_compared() {
    let lines =
        [LOSSES_OK[0], LOSSES_OK[1], "[check w_updated] errors 0 out of 2", "Errors: 0 out of 4", "BENCH cycles=42"];
    let o = run_fake(&lines, 0, 4);
    assert!(o.passed(), "{o:#?}");
    assert_eq!((o.errors, o.compared, o.expected), (Some(0), Some(4), Some(4)));
    assert_eq!(o.tolerance, Some(0.001));
    assert_eq!(o.losses.len(), 2);
    assert_eq!(o.bench.as_deref(), Some("cycles=42"));
    assert_eq!(o.class(), "PASSED");
}

/// A passing training case shows its losses against their references, and
/// the summary's stage column is empty for it (it failed at no stage).
#[test]
fn a_passing_case_shows_its_losses_and_no_stage() {
    let lines = [LOSSES_OK[0], LOSSES_OK[1], "Errors: 0 out of 4"];
    let gen = fake(prints(&lines, 0), 4, 2);
    let mut out = Vec::new();
    let s = runner::run(&[case("m")], &StatusTable::empty(), &gen, &quiet(), &mut out);
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("losses: 1.884626 (ref 1.884626), 2.120301 (ref 2.120300)"), "{out}");
    let table = s.table();
    let row = table.lines().find(|l| l.contains("m/GAP9-L3-training")).unwrap();
    assert_eq!(row.matches("PASSED").count(), 1, "the verdict says PASSED, the stage nothing: {row}");
    assert!(row.contains("| -"), "{row}");
}

#[test]
fn wrong_values_are_an_incorrect_result_and_exit_1() {
    let lines =
        ["[loss 0] computed=2.302585 ref=1.884626 diff=0.417959 tol=0.001000", LOSSES_OK[1], "Errors: 1 out of 4"];
    let c = case("m");
    let gen = fake(prints(&lines, 1), 4, 2);
    let o = run_case(&c, &gen);
    assert_stage(&o, Stage::Result, "1 of 4 compared values are wrong");
    assert_stage(&o, Stage::Result, "loss 0: computed 2.302585 ref 1.884626");
    let s = runner::run(&[c], &StatusTable::empty(), &gen, &quiet(), &mut Vec::new());
    assert_eq!(s.results[0].verdict, Verdict::Failed);
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn zero_compared_values_is_a_failure_not_a_pass() {
    // The harness of the GAP9 seed: the comparison never ran.
    let o = run_fake(&["Errors: 0 out of 0"], 0, 4);
    assert_stage(&o, Stage::Result, "vacuous check: the harness compared 0 values, the project has 4 references");
    // A project that promises nothing to compare cannot pass either.
    let o = run_case(&case("m"), &fake(prints(&["Errors: 0 out of 0"], 0), 0, 0));
    assert_stage(&o, Stage::Emit, "expected_compared is 0");
}

/// A project whose every reference is a zero-size tensor compares 0
/// values: it passes when its harness printed each tensor's check line,
/// and fails when it printed none (a run that never reached the checks).
#[test]
fn zero_size_references_pass_only_with_their_check_lines() {
    let c = case("m");
    let o = run_case(&c, &fake(prints(&["[check y] errors 0 out of 0", "Errors: 0 out of 0"], 0), 0, 0));
    assert!(o.passed(), "{o:#?}");
    let gen = |case: &Case, dir: &Path| -> Result<(), Error> {
        fake(prints(&["Errors: 0 out of 0"], 0), 0, 0)(case, dir)?;
        let empty = vec![serde_json::json!({ "name": "y", "values": 0 })];
        std::fs::write(dir.join("deploygen.json"), manifest(case, 0, 0, empty)).unwrap();
        Ok(())
    };
    let o = run_case(&c, &gen);
    assert_stage(&o, Stage::Result, "the harness printed 0 `[check]` line(s) for 1 compared tensor(s)");
}

#[test]
fn comparing_fewer_values_than_the_references_fails() {
    let o = run_fake(&[LOSSES_OK[0], LOSSES_OK[1], "Errors: 0 out of 3"], 0, 4);
    assert_stage(&o, Stage::Result, "the harness compared 3 values, the project has 4 references");
    // Losses that were not printed were not compared.
    let o = run_fake(&[LOSSES_OK[0], "Errors: 0 out of 4"], 0, 4);
    assert_stage(&o, Stage::Result, "printed 1 `[loss i]` line(s) for 2 reference losses");
}

#[test]
fn a_nan_loss_is_judged_by_the_errors_line_and_cannot_hide_behind_it() {
    let nan = "[loss 1] computed=-nan ref=2.120300 diff=nan tol=0.001000";
    // Counted: a wrong result, and the line shows up as evidence.
    let o = run_fake(&[LOSSES_OK[0], nan, "Errors: 1 out of 4"], 1, 4);
    assert_stage(&o, Stage::Result, "1 of 4 compared values are wrong");
    assert_stage(&o, Stage::Result, "loss 1: computed NaN");
    assert!(o.losses[1].computed.is_nan());
    // Not counted (a harness without rule 3): still not a pass.
    let o = run_fake(&[LOSSES_OK[0], nan, "Errors: 0 out of 4"], 0, 4);
    assert_stage(&o, Stage::Result, "its own lines show 1 loss(es) out of tolerance");
}

#[test]
fn a_missing_or_malformed_errors_line_is_a_runtime_failure() {
    let o = run_fake(&LOSSES_OK, 0, 4);
    assert_stage(&o, Stage::Runtime, "no `Errors: E out of N` line");
    let o = run_fake(&[LOSSES_OK[0], LOSSES_OK[1], "Errors: none out of 4"], 0, 4);
    assert_stage(&o, Stage::Runtime, "malformed verdict line `Errors: none out of 4`");
    let o = run_fake(&[LOSSES_OK[0], LOSSES_OK[1], "Errors: 0 out of 2", "Errors: 0 out of 4"], 0, 4);
    assert_stage(&o, Stage::Runtime, "2 `Errors:` lines");
    let o = run_fake(&["[loss 0] computed=1.0 ref=", LOSSES_OK[1], "Errors: 0 out of 4"], 0, 4);
    assert_stage(&o, Stage::Runtime, "malformed harness line `[loss 0] computed=1.0 ref=`");
}

#[test]
fn a_clean_verdict_with_a_failing_exit_status_fails() {
    let o = run_fake(&[LOSSES_OK[0], LOSSES_OK[1], "Errors: 0 out of 4"], 3, 4);
    assert_stage(&o, Stage::Runtime, "reported `Errors: 0 out of 4` but ended with exit status 3");
}

#[test]
fn a_crash_is_a_runtime_failure() {
    let main = "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { puts(\"Errors: 0 out of 4\"); fflush(stdout); abort(); }\n";
    let o = run_case(&case("m"), &fake(main.into(), 4, 0));
    assert_stage(&o, Stage::Runtime, "crashed: killed by signal 6 (SIGABRT)");
}

#[test]
fn a_compile_error_is_failed_c_compile_with_the_compiler_message() {
    let o = run_case(&case("m"), &fake("int main(void) { return undeclared_thing; }\n".into(), 4, 0));
    assert_stage(&o, Stage::CCompile, "make -f Makefile.host failed");
    assert_stage(&o, Stage::CCompile, "undeclared_thing");
}

#[test]
fn a_time_out_kills_the_whole_process_group() {
    // The app forks a helper that would outlive it, records its pid, and hangs.
    let main = r#"#include <stdio.h>
#include <unistd.h>
int main(void) {
    pid_t p = fork();
    if (p == 0) { for (;;) sleep(1); }
    FILE *f = fopen("helper.pid", "w"); fprintf(f, "%d\n", (int)p); fclose(f);
    for (;;) sleep(1);
}
"#;
    let mut c = case("m");
    c.timeout = Duration::from_millis(1500);
    c.keep = true;
    let o = run_case(&c, &fake(main.into(), 4, 0));
    assert_stage(&o, Stage::Runtime, "timed out: still running after 1.5 s, killed");
    let dir = o.project.clone().unwrap();
    let pid: i32 = std::fs::read_to_string(dir.join("helper.pid")).unwrap().trim().parse().unwrap();
    // Reparented and reaped, or at worst a zombie: not running.
    let gone = (0..100).any(|_| {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let dead = state.is_none_or(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
        if !dead {
            std::thread::sleep(Duration::from_millis(20));
        }
        dead
    });
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(gone, "the forked helper {pid} survived the time-out");
}

#[test]
fn a_fatal_allocation_line_is_a_runtime_failure() {
    let lines = ["FATAL: L1 allocation of 131072 B failed (conv1_scratch)", "Errors: 0 out of 4"];
    let o = run_fake(&lines, 1, 4);
    assert_stage(&o, Stage::Runtime, "FATAL: L1 allocation of 131072 B failed (conv1_scratch)");
}

#[test]
fn a_sanitizer_report_is_a_runtime_failure() {
    let main = r#"#include <stdio.h>
#include <stdlib.h>
int main(void) {
    volatile int *a = malloc(4 * sizeof(int));
    int i = 4;
    a[i] = 1;
    printf("[loss 0] computed=1.000000 ref=1.000000 diff=0.000000 tol=0.001000\n");
    printf("Errors: 0 out of 1\n");
    free((void *)a);
    return 0;
}
"#;
    let gen = fake(main.into(), 1, 1);
    // Without sanitizers the overflow goes unnoticed...
    assert!(run_case(&case("m"), &gen).passed());
    // ...with them it is reported.
    let mut c = case("m");
    c.sanitize = true;
    let o = run_case(&c, &gen);
    assert_stage(&o, Stage::Runtime, "sanitizer report");
    assert_stage(&o, Stage::Runtime, "heap-buffer-overflow");
}

#[test]
fn pipeline_errors_are_classified_by_stage() {
    let at = |e: Error| run_case(&case("m"), &move |_: &Case, _: &Path| Err::<(), Error>(clone_err(&e)));
    let unknown = Error::UnknownOp {
        node: "n".into(),
        op: "Foo".into(),
        domain: "".into(),
        opset: "17".into(),
        supported: "".into(),
    };
    assert_stage(&at(unknown), Stage::Import, "operator 'Foo'");
    assert_stage(&at(Error::binding("slot 2 expects [3, 4]")), Stage::Bind, "slot 2");
    let capacity = Error::Capacity {
        platform: "GAP9".into(),
        level: "L2".into(),
        needed: 2,
        available: 1,
        message: "L2 needs 2 B, has 1 B".into(),
        hints: vec![],
    };
    assert_stage(&at(capacity), Stage::Plan, "L2 needs 2 B");
    // A step that knows its stage says so.
    let o = run_case(&case("m"), &|_: &Case, _: &Path| {
        Err(StageError::at(Stage::Emit)(Error::Usage("emission not available".into())))
    });
    assert_stage(&o, Stage::Emit, "emission not available");
}

fn clone_err(e: &Error) -> Error {
    match e {
        Error::UnknownOp { node, op, domain, opset, supported } => Error::UnknownOp {
            node: node.clone(),
            op: op.clone(),
            domain: domain.clone(),
            opset: opset.clone(),
            supported: supported.clone(),
        },
        Error::Binding { detail, .. } => Error::binding(detail.clone()),
        Error::Capacity { platform, level, needed, available, message, hints } => Error::Capacity {
            platform: platform.clone(),
            level: level.clone(),
            needed: *needed,
            available: *available,
            message: message.clone(),
            hints: hints.clone(),
        },
        _ => unreachable!(),
    }
}

#[test]
fn a_manifest_for_another_project_is_refused() {
    let gen = |case: &Case, dir: &Path| -> Result<(), Error> {
        fake(prints(&["Errors: 0 out of 1"], 0), 1, 0)(case, dir)?;
        let m = manifest(case, 1, 0, vec![]).replace("\"L3\"", "\"L2\"");
        std::fs::write(dir.join("deploygen.json"), m).unwrap();
        Ok(())
    };
    assert_stage(&run_case(&case("m"), &gen), Stage::Emit, "default_mem L2 (asked: L3)");
    let none = |_: &Case, _: &Path| -> Result<(), Error> { Ok(()) };
    assert_stage(&run_case(&case("m"), &none), Stage::Emit, "no readable deploygen.json");
}

// ------------------------------------------------------- status table, runs

fn quiet() -> RunOptions {
    RunOptions { jobs: 2, force_run: false, runxfail: false, progress: false }
}

const PASS: [&str; 3] = [LOSSES_OK[0], LOSSES_OK[1], "Errors: 0 out of 4"];
const WRONG: [&str; 3] = [LOSSES_OK[0], "[loss 1] computed=9.0 ref=2.1203 diff=6.8797 tol=0.001", "Errors: 1 out of 4"];

/// Cases named `pass*` pass, `wrong*` compute wrong values, `crash*` abort,
/// `badc*` do not compile. Counts how often it generated.
fn by_name(calls: &AtomicUsize) -> impl Fn(&Case, &Path) -> Result<(), Error> + Sync + '_ {
    move |case, dir| {
        calls.fetch_add(1, Ordering::SeqCst);
        let main = if case.name.starts_with("pass") {
            prints(&PASS, 0)
        } else if case.name.starts_with("wrong") {
            prints(&WRONG, 1)
        } else if case.name.starts_with("crash") {
            "#include <stdlib.h>\nint main(void) { abort(); }\n".into()
        } else {
            "syntax error".into()
        };
        fake(main, 4, 2)(case, dir)
    }
}

fn table(text: &str) -> StatusTable {
    StatusTable::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn xfail(key: &str, stage: &str) -> String {
    format!(
        "[\"{key}\"]\nstatus = \"KNOWN_FAILURE_XFAIL\"\nstage = \"{stage}\"\nreason = \"the fixture is wrong\"\nevidence = \"3 of 4 losses off, 3 runs of 3\"\n"
    )
}

fn run_all(names: &[&str], t: &StatusTable, opts: &RunOptions, calls: &AtomicUsize) -> (Summary, String) {
    let cases: Vec<Case> = names.iter().map(|n| case(n)).collect();
    let mut out = Vec::new();
    let s = runner::run(&cases, t, &by_name(calls), opts, &mut out);
    (s, String::from_utf8(out).unwrap())
}

#[test]
fn a_strict_xfail_that_passes_fails_the_run_and_names_the_entry() {
    let calls = AtomicUsize::new(0);
    let t = table(&xfail("pass1/GAP9-L3-training", "INCORRECT_RESULT"));
    let (s, out) = run_all(&["pass1"], &t, &quiet(), &calls);
    assert_eq!(s.results[0].verdict, Verdict::XPassed);
    assert!(out.contains("unexpected pass of strict xfail \"pass1/GAP9-L3-training\""), "{out}");
    assert!(out.contains("promote it"), "{out}");
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn an_xfail_passes_the_run_only_when_it_fails_where_recorded() {
    let calls = AtomicUsize::new(0);
    let t = table(&format!(
        "{}{}",
        xfail("wrong1/GAP9-L3-training", "INCORRECT_RESULT"),
        xfail("badc1/GAP9-L3-training", "FAILED_RUNTIME")
    ));
    let (s, out) = run_all(&["wrong1"], &t, &quiet(), &calls);
    assert_eq!(s.results[0].verdict, Verdict::XFailed, "{out}");
    assert!(out.contains("evidence: 3 of 4 losses off"), "{out}");
    assert_eq!(s.exit_code(), 0);
    // Recorded as a runtime failure, but now it does not even compile.
    let (s, out) = run_all(&["badc1"], &t, &quiet(), &calls);
    assert_eq!(s.results[0].verdict, Verdict::Failed);
    assert!(
        out.contains("records a known failure at FAILED_RUNTIME") && out.contains("now fails at FAILED_C_COMPILE"),
        "{out}"
    );
    assert_eq!(s.exit_code(), 2);
}

#[test]
fn runxfail_reports_the_real_outcome() {
    let calls = AtomicUsize::new(0);
    let t = table(&format!(
        "{}{}",
        xfail("wrong1/GAP9-L3-training", "INCORRECT_RESULT"),
        xfail("pass1/GAP9-L3-training", "INCORRECT_RESULT")
    ));
    let opts = RunOptions { runxfail: true, ..quiet() };
    let (s, _) = run_all(&["wrong1", "pass1"], &t, &opts, &calls);
    assert_eq!((s.results[0].verdict, s.results[1].verdict), (Verdict::Failed, Verdict::Passed));
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn skipped_entries_do_not_run_unless_forced() {
    let calls = AtomicUsize::new(0);
    let t = table(
        "[\"crash1/GAP9-L3-training\"]\nstatus = \"NOT_SUPPORTED_SKIP\"\nstage = \"FAILED_RUNTIME\"\nreason = \"needs DMA tiling\"\nevidence = \"L1 allocation of 200000 B fails\"\n",
    );
    let (s, out) = run_all(&["crash1", "pass1"], &t, &quiet(), &calls);
    assert_eq!((s.results[0].verdict, s.results[1].verdict), (Verdict::Skipped, Verdict::Passed));
    assert!(
        s.results[0].outcome.is_none() && out.contains("not supported (FAILED_RUNTIME: needs DMA tiling)"),
        "{out}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a skipped case is not even generated");
    assert_eq!(s.exit_code(), 0);
    let (s, _) = run_all(&["crash1"], &t, &RunOptions { force_run: true, ..quiet() }, &calls);
    assert_eq!(s.results[0].verdict, Verdict::Failed);
    assert_eq!(s.results[0].class(), "FAILED_RUNTIME");
    assert_eq!(s.exit_code(), 2);
}

#[test]
fn many_cases_run_in_parallel_and_report_in_order() {
    let calls = AtomicUsize::new(0);
    let names = ["pass1", "wrong1", "pass2", "crash1", "badc1", "pass3"];
    let (s, out) = run_all(&names, &StatusTable::empty(), &RunOptions { jobs: 3, ..quiet() }, &calls);
    let got: Vec<&str> = s.results.iter().map(|r| r.case.name.as_str()).collect();
    assert_eq!(got, names);
    let classes: Vec<&str> = s.results.iter().map(|r| r.class()).collect();
    assert_eq!(classes, ["PASSED", "INCORRECT_RESULT", "PASSED", "FAILED_RUNTIME", "FAILED_C_COMPILE", "PASSED"]);
    assert_eq!(out.lines().filter(|l| l.starts_with("PASSED ") || l.starts_with("FAILED ")).count(), 6, "{out}");
    assert_eq!(s.exit_code(), 2, "a case that could not run outranks a wrong result");
    let table = s.table();
    assert!(table.contains("| wrong1/GAP9-L3-training") && table.contains("INCORRECT_RESULT"), "{table}");
    assert_eq!(s.totals(), "6 cases: 3 passed, 3 failed, 0 xfail, 0 xpass, 0 skipped");
}

#[test]
fn status_table_errors_name_the_entry() {
    let bad = |text: &str, needle: &str| {
        let e = StatusTable::parse(text).unwrap_err().to_string();
        assert!(e.contains(needle), "expected {needle:?} in: {e}");
    };
    let entry = |key: &str, body: &str| format!("[\"{key}\"]\n{body}\n");
    let ok = "stage = \"FAILED_BIND\"\nreason = \"r\"\nevidence = \"e\"";
    bad(
        &entry("m/GAP9-L3-training", &format!("status = \"FLAKY\"\n{ok}")),
        "entry \"m/GAP9-L3-training\": unknown variant `FLAKY`",
    );
    bad(
        &entry("m/GAP9-L3-training", &format!("status = \"NOT_SUPPORTED_SKIP\"\n{ok}\nowner = \"me\"")),
        "unknown field `owner`",
    );
    bad(
        &entry("m/GAP9-L3-training", "status = \"KNOWN_FAILURE_XFAIL\"\nstage = \"FAILED_BIND\"\nreason = \"r\""),
        "needs a non-empty `evidence`",
    );
    bad(
        &entry("m/GAP9-L3-training", "status = \"KNOWN_FAILURE_XFAIL\"\nreason = \"r\"\nevidence = \"e\""),
        "needs `stage`",
    );
    bad(
        &entry(
            "m/GAP9-L3-training",
            "status = \"KNOWN_FAILURE_XFAIL\"\nstage = \"BROKEN\"\nreason = \"r\"\nevidence = \"e\"",
        ),
        "unknown variant `BROKEN`",
    );
    bad(
        &entry("m/GAP9-L3-training", "status = \"EXPECTED_PASSING\"\nreason = \"r\""),
        "an EXPECTED_PASSING entry has no stage",
    );
    bad(
        &entry("m/gap9-L3-training", &format!("status = \"KNOWN_FAILURE_XFAIL\"\n{ok}")),
        "entry \"m/gap9-L3-training\": platform 'gap9' is spelled 'GAP9'",
    );
    bad(&entry("m/GAP9-L1-training", &format!("status = \"KNOWN_FAILURE_XFAIL\"\n{ok}")), "level 'L1'");
    bad(&entry("m/GAP9-L3-train", &format!("status = \"KNOWN_FAILURE_XFAIL\"\n{ok}")), "'train'");
    bad(
        &entry("GAP9-L3-training", &format!("status = \"KNOWN_FAILURE_XFAIL\"\n{ok}")),
        "expected <model>/<platform>-<level>-training",
    );
    bad(&entry("m/Mars-L3-training", &format!("status = \"KNOWN_FAILURE_XFAIL\"\n{ok}")), "unknown platform 'Mars'");
    let t = table(&entry("m/Siracusa-L2-inference", &format!("status = \"NOT_SUPPORTED_SKIP\"\n{ok}")));
    assert_eq!(t.get("m/Siracusa-L2-inference").unwrap().stage, Some(Stage::Bind));
}

#[test]
fn the_checked_in_status_table_is_valid() {
    let t = StatusTable::read(&common::root().join("status.toml")).unwrap_or_else(|e| panic!("{e}"));
    for key in t.entries.keys() {
        let k = t.key(key).unwrap();
        assert!(
            common::root().join("models").join(&k.model).is_dir(),
            "status.toml entry \"{key}\": no models/{}",
            k.model
        );
    }
}

// ------------------------------------------------------------------- junit

#[test]
fn junit_is_well_formed_with_the_properties() {
    let calls = AtomicUsize::new(0);
    let t = table(&format!(
        "{}[\"crash1/GAP9-L3-training\"]\nstatus = \"NOT_SUPPORTED_SKIP\"\nstage = \"FAILED_RUNTIME\"\nreason = \"r\"\nevidence = \"e\"\n",
        xfail("wrong2/GAP9-L3-training", "INCORRECT_RESULT")
    ));
    let (s, _) = run_all(&["pass1", "wrong1", "badc1", "wrong2", "crash1"], &t, &quiet(), &calls);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.xml");
    junit::write(&s, &path).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["report.xml"], "the report is written through a temp file and renamed");

    let xml = std::fs::read_to_string(&path).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let suite = &report.test_suites[0];
    assert_eq!(suite.test_cases.len(), 5);
    let prop = |i: usize, k: &str| -> String {
        let tc = &suite.test_cases[i];
        let p = tc.properties.iter().find(|p| p.name.as_str() == k).unwrap_or_else(|| panic!("no property {k}"));
        p.value.as_str().to_string()
    };
    use quick_junit::{NonSuccessKind, TestCaseStatus};
    let kinds: Vec<&str> = suite
        .test_cases
        .iter()
        .map(|tc| match &tc.status {
            TestCaseStatus::Success { .. } => "success",
            TestCaseStatus::NonSuccess { kind: NonSuccessKind::Failure, .. } => "failure",
            TestCaseStatus::NonSuccess { kind: NonSuccessKind::Error, .. } => "error",
            TestCaseStatus::Skipped { .. } => "skipped",
        })
        .collect();
    assert_eq!(kinds, ["success", "failure", "error", "skipped", "skipped"]);
    assert_eq!(suite.test_cases[1].name.as_str(), "wrong1/GAP9-L3-training");
    for (i, stage, status) in [
        (0, "PASSED", "PASSED"),
        (1, "INCORRECT_RESULT", "FAILED"),
        (2, "FAILED_C_COMPILE", "FAILED"),
        (3, "INCORRECT_RESULT", "XFAIL"),
        (4, "NOT_RUN", "SKIPPED"),
    ] {
        assert_eq!((prop(i, "stage"), prop(i, "status")), (stage.to_string(), status.to_string()), "case {i}");
        assert_eq!((prop(i, "platform"), prop(i, "default_mem")), ("GAP9".to_string(), "L3".to_string()));
    }
    assert_eq!(
        (prop(0, "compared"), prop(0, "tolerance"), prop(0, "error_message")),
        ("4".into(), "0.001".into(), "".into())
    );
    assert!(prop(1, "error_message").contains("1 of 4 compared values are wrong"));
    assert_eq!(prop(2, "compared"), "");
}

// -------------------------------------------------------------- the command

fn deploygen() -> Command {
    Command::cargo_bin("deploygen").unwrap()
}

#[test]
fn the_command_classifies_pipeline_failures_and_writes_junit() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("out.xml");
    // tests/fixtures is a folder of model folders; two of them fail early.
    let out = deploygen()
        .current_dir(dir.path())
        .args(["test", "--platform", "GAP9", "--default-mem", "L3", "-j", "2", "--junit"])
        .arg(&junit)
        .arg(common::root().join("tests/fixtures"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("FAILED  truncated_onnx/GAP9-L3-training  FAILED_IMPORT:"), "{stdout}");
    assert!(stdout.contains("FAILED  missing_labels/GAP9-L3-training  FAILED_BIND: "), "{stdout}");
    assert!(stdout.contains("no status table: every case is expected to pass"), "{stdout}");
    assert!(stdout.contains("| case "), "the summary table: {stdout}");
    let report = quick_junit::Report::deserialize_from_str(&std::fs::read_to_string(&junit).unwrap()).unwrap();
    // A folder without a model file (tests/fixtures/quant holds case
    // folders of its own) is named in a note, not run as a case.
    let models = ["network.onnx", "training_model.onnx"];
    let folders = std::fs::read_dir(common::root().join("tests/fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && models.iter().any(|m| p.join(m).exists()))
        .count();
    assert!(folders >= 5, "the fixture folders: {folders}");
    assert_eq!(report.test_suites[0].test_cases.len(), folders);
    assert!(stdout.contains("quant: no model file, not a case"), "{stdout}");
}

#[test]
fn the_command_reports_a_plan_that_does_not_fit() {
    // An empty status table (a status table is a regular file: not /dev/null).
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("status.toml");
    std::fs::write(&empty, "").unwrap();
    deploygen()
        .args(["test", "--platform", "GAP9", "--default-mem", "L2", "--l2", "4096", "--status"])
        .arg(&empty)
        .arg(common::fixture("tiny_classifier"))
        .assert()
        .code(2)
        .stdout(predicate::str::contains("FAILED  tiny_classifier/GAP9-L2-training  FAILED_PLAN: "));
}

#[test]
fn the_command_honours_the_status_table() {
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("status.toml");
    std::fs::write(
        &status,
        "[\"missing_labels/GAP9-L3-training\"]\nstatus = \"KNOWN_FAILURE_XFAIL\"\nstage = \"FAILED_BIND\"\n\
         reason = \"Model expects targets to be passed while in training mode\"\nevidence = \"inputs.npz has no labels\"\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut c = deploygen();
        c.args(["test", "--platform", "GAP9", "--default-mem", "L3", "--status"]).arg(&status).args(extra);
        c.arg(common::fixture("missing_labels"));
        c.assert()
    };
    run(&[]).code(0).stdout(predicate::str::contains("XFAIL   missing_labels/GAP9-L3-training  FAILED_BIND"));
    run(&["--runxfail"]).code(2).stdout(predicate::str::contains("FAILED  missing_labels/GAP9-L3-training"));
    // A broken table is bad input: nothing runs.
    std::fs::write(&status, "[\"missing_labels/GAP9-L3-training\"]\nstatus = \"KNOWN_FAILURE_XFAIL\"\n").unwrap();
    run(&[]).code(2).stdout(predicate::str::is_empty()).stderr(predicate::str::contains(
        "entry \"missing_labels/GAP9-L3-training\": a KNOWN_FAILURE_XFAIL entry needs `stage`",
    ));
}

#[test]
fn the_command_refuses_bad_input() {
    let fails = |args: &[&str], needle: &str| {
        deploygen().arg("test").args(args).assert().code(2).stderr(predicate::str::contains(needle));
    };
    let model = common::fixture("tiny_classifier");
    let m = model.to_str().unwrap();
    fails(&[m, "--platform", "Mars", "--default-mem", "L3"], "unknown platform 'Mars'");
    fails(&[m, "--platform", "GAP9", "--default-mem", "L1"], "--default-mem L1");
    fails(&["/no/such/model", "--platform", "GAP9", "--default-mem", "L3"], "/no/such/model");
    fails(&[m, "--platform", "GAP9", "--default-mem", "L3", "--tolerance", "nan"], "--tolerance NaN");
    fails(&[m, "--platform", "GAP9", "--default-mem", "L3", "--rtol", "0.5"], "--rtol 0.5: a relative tolerance");
    fails(&[m, "--platform", "GAP9", "--default-mem", "L3", "--rtol=-1e-3"], "--rtol -0.001");
    fails(&[m, "--platform", "GAP9", "--default-mem", "L3", "--status", "/no/status.toml"], "/no/status.toml");
    let empty = tempfile::tempdir().unwrap();
    fails(&[empty.path().to_str().unwrap(), "--platform", "GAP9", "--default-mem", "L3"], "holds no model");
    fails(&[m, "--default-mem", "L3"], "--platform");
}

/// The whole command with a fake generation step: a wrong result is exit 1,
/// with the verdict, the summary and the JUnit report saying so.
#[test]
fn the_command_exits_1_on_a_wrong_result() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: deploygen::cli::test::TestArgs,
    }
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("r.xml");
    // An empty status table: every case is expected to pass.
    let empty = dir.path().join("status.toml");
    std::fs::write(&empty, "").unwrap();
    let model = common::fixture("tiny_classifier");
    let cli = Cli::parse_from([
        "test".as_ref(),
        model.as_os_str(),
        "--platform".as_ref(),
        "GAP9".as_ref(),
        "--platform".as_ref(),
        "Siracusa".as_ref(),
        "--default-mem".as_ref(),
        "L3".as_ref(),
        "--status".as_ref(),
        empty.as_os_str(),
        "--junit".as_ref(),
        junit.as_os_str(),
    ]);
    let gen = |case: &Case, dir: &Path| -> Result<(), Error> {
        let main = if case.platform == "GAP9" { prints(&WRONG, 1) } else { prints(&PASS, 0) };
        fake(main, 4, 2)(case, dir)
    };
    let mut out = Vec::new();
    let code = deploygen::cli::test::run_with(&cli.args, &gen, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAILED  tiny_classifier/GAP9-L3-training  INCORRECT_RESULT: 1 of 4 compared values are wrong"),
        "{out}"
    );
    assert!(out.contains("PASSED  tiny_classifier/Siracusa-L3-training  Errors: 0 out of 4, tolerance 0.001"), "{out}");
    assert!(out.contains("2 cases: 1 passed, 1 failed, 0 xfail, 0 xpass, 0 skipped"), "{out}");
    let report = quick_junit::Report::deserialize_from_str(&std::fs::read_to_string(&junit).unwrap()).unwrap();
    let names: Vec<&str> = report.test_suites[0].test_cases.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["tiny_classifier/GAP9-L3-training", "tiny_classifier/Siracusa-L3-training"]);
}

#[test]
fn a_panicking_generation_step_fails_its_case_only() {
    let calls = AtomicUsize::new(0);
    let gen = |case: &Case, dir: &Path| -> Result<(), Error> {
        if case.name == "boom" {
            panic!("index out of bounds");
        }
        by_name(&calls)(case, dir)
    };
    let cases = [case("boom"), case("pass1")];
    let s = runner::run(&cases, &StatusTable::empty(), &gen, &quiet(), &mut Vec::new());
    let o = s.results[0].outcome.as_ref().unwrap();
    assert_stage(o, Stage::Emit, "deploygen panicked while generating the project (a bug): index out of bounds");
    assert_eq!(s.results[1].verdict, Verdict::Passed);
}
