//! Verification: build the generated project, run it, compare, report.
