//! `--junit FILE`: one test case per (model, platform, level), named by its
//! status-table key, with the properties CI dashboards read:
//! `error_message`, `stage`, `status`, `compared`, `tolerance`, `platform`,
//! `default_mem`.
//!
//! `status` is the verdict (`PASSED`, `FAILED`, `XFAIL`, `XPASS`,
//! `SKIPPED`); `stage` the outcome's class (`PASSED`, a `FAILED_…` stage,
//! `INCORRECT_RESULT`, or `NOT_RUN` for a skipped case). A wrong result or
//! an unexpected pass is a `<failure>`, any other failed case an `<error>`,
//! an expected failure or a skip `<skipped>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::runner::{Summary, Verdict};
use super::Stage;
use crate::error::{Error, Result};

pub const SUITE: &str = "deploygen test";

pub fn report(summary: &Summary) -> Report {
    let mut suite = TestSuite::new(SUITE);
    for r in &summary.results {
        let o = r.outcome.as_ref();
        let error_message = match r.verdict {
            Verdict::Passed => String::new(),
            _ => r.message.clone(),
        };
        let mut status = match r.verdict {
            Verdict::Passed => TestCaseStatus::success(),
            Verdict::XPassed => TestCaseStatus::non_success(NonSuccessKind::Failure),
            Verdict::Failed if o.and_then(|o| o.stage) == Some(Stage::Result) => {
                TestCaseStatus::non_success(NonSuccessKind::Failure)
            }
            Verdict::Failed => TestCaseStatus::non_success(NonSuccessKind::Error),
            Verdict::XFailed | Verdict::Skipped => TestCaseStatus::skipped(),
        };
        if r.verdict != Verdict::Passed {
            status.set_message(r.message.lines().next().unwrap_or(""));
            status.set_type(r.class());
            if let Some(o) = o.filter(|o| !o.details.is_empty()) {
                status.set_description(o.details.join("\n"));
            }
        }
        let mut tc = TestCase::new(r.key.as_str(), status);
        tc.set_classname(r.case.name.as_str());
        if let Some(o) = o {
            tc.set_time(o.elapsed);
            if !o.output.is_empty() {
                tc.set_system_out_lossy(o.output.as_bytes());
            }
        }
        let compared = o.and_then(|o| o.compared).map(|n| n.to_string()).unwrap_or_default();
        let tolerance = o
            .and_then(|o| o.tolerance)
            .map(|t| t.to_string())
            .or_else(|| r.case.tolerance.map(|t| t.to_string()))
            .unwrap_or_default();
        let rtol = o.and_then(|o| o.rtol).map(|t| t.to_string()).unwrap_or_default();
        for (k, v) in [
            ("error_message", error_message),
            ("stage", r.class().to_string()),
            ("status", r.verdict.name().to_string()),
            ("compared", compared),
            ("tolerance", tolerance),
            ("rtol", rtol),
            ("platform", r.case.platform.clone()),
            ("default_mem", r.case.default_mem.clone()),
        ] {
            tc.add_property(Property::new(k, v));
        }
        suite.add_test_case(tc);
    }
    let mut report = Report::new("deploygen");
    report.add_test_suite(suite);
    report
}

/// Write the report ([`crate::files::write`]: through a temporary file
/// renamed into place, only to a new name or over a regular file).
pub fn write(summary: &Summary, path: &Path) -> Result<()> {
    write_report(&report(summary), path)
}

/// Merge the JUnit files of `deploygen test --partition` slices into one
/// report at `out`: one suite holding every test case, sorted by name (a
/// case in two files is an error: the slices overlap). Returns the number
/// of test cases.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<usize> {
    for path in inputs {
        if same_file(path, out) {
            return Err(Error::Usage(format!(
                "--out {} is one of the reports to merge ({}): it would be overwritten; write elsewhere",
                out.display(),
                path.display()
            )));
        }
    }
    let mut cases: BTreeMap<String, (TestCase, PathBuf)> = BTreeMap::new();
    for path in inputs {
        let text = crate::limits::read_text(path, crate::limits::JUNIT_XML, "a JUnit XML report")?;
        let r = Report::deserialize_from_str(&text)
            .map_err(|e| Error::Usage(format!("{}: not a JUnit XML report: {e}", path.display())))?;
        for tc in r.test_suites.into_iter().flat_map(|s| s.test_cases) {
            let name = tc.name.to_string();
            if let Some((_, first)) = cases.get(&name) {
                return Err(Error::Usage(format!(
                    "test case \"{name}\" is in both {} and {}: the reports come from overlapping runs",
                    first.display(),
                    path.display()
                )));
            }
            cases.insert(name, (tc, path.clone()));
        }
    }
    let mut suite = TestSuite::new(SUITE);
    let n = cases.len();
    suite.add_test_cases(cases.into_values().map(|(tc, _)| tc));
    let mut report = Report::new("deploygen");
    report.add_test_suite(suite);
    write_report(&report, out)?;
    Ok(n)
}

/// The same file (device and inode), or the same path when `b` does not
/// exist yet.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

fn write_report(report: &Report, path: &Path) -> Result<()> {
    let xml = report.to_string().map_err(|e| Error::Usage(format!("cannot write JUnit XML: {e}")))?;
    crate::files::write(path, xml.as_bytes())
}
