//! The count of skipped tests, at the end of a `cargo test` run (cargo
//! runs integration test binaries in name order, so this one comes after
//! `tests/it`, the crate that holds most tests):
//! libtest counts a test that skipped itself (no `../shared/conformance`
//! next to the checkout) as passed, and this line says how many did.
//! Each skipped test leaves a record (tests/common, `skip_record`) and
//! removes it when it runs for real.

mod common;

use std::io::Write;

#[test]
fn skipped_tests_are_counted() {
    let mut lines: Vec<String> = std::fs::read_dir(common::skip_dir())
        .map(|d| d.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok()).collect())
        .unwrap_or_default();
    lines.sort();
    let mut out = std::io::stdout().lock();
    // Written past libtest's capture, so the summary shows in the output.
    let _ = writeln!(out, "SKIPPED: {} test(s) skipped when they last ran (counted as passed above)", lines.len());
    for l in &lines {
        let _ = write!(out, "  {l}");
    }
}

/// Every skip goes through tests/common (`skip`, `skip_unless_ci`,
/// `have_gcc`), so the count above sees it: no test file prints its own
/// SKIPPED line.
#[test]
fn every_skip_is_recorded_for_the_count() {
    let tests = common::root().join("tests");
    let mut own = vec![];
    let files: Vec<_> = [tests.clone(), tests.join("it")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
        .collect();
    let mut seen = 0;
    for p in files {
        let name = p.strip_prefix(&tests).unwrap().display().to_string();
        if !name.ends_with(".rs") || name == "zz_skipped.rs" {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&p).unwrap();
        own.extend(text.lines().filter(|l| l.contains("\"SKIPPED:")).map(|l| format!("{name}: {}", l.trim())));
    }
    assert!(seen > 40, "only {seen} test files found under {}", tests.display());
    assert!(own.is_empty(), "SKIPPED lines printed outside tests/common (not counted):\n{}", own.join("\n"));
}
