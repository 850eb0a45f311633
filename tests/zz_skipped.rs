//! The count of skipped tests, at the end of a `cargo test` run (cargo
//! runs integration test binaries in name order, so this one comes last):
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
    let dir = common::root().join("tests");
    let mut own = vec![];
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".rs") || name == "zz_skipped.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        own.extend(text.lines().filter(|l| l.contains("\"SKIPPED:")).map(|l| format!("{name}: {}", l.trim())));
    }
    assert!(own.is_empty(), "SKIPPED lines printed outside tests/common (not counted):\n{}", own.join("\n"));
}
