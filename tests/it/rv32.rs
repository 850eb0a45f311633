//! The rv32 instrument (`make -C runtime/bench rv32`): the kernels built for
//! 32-bit RISC-V with floats in the integer registers (zfinx) and run under
//! qemu-riscv32, instructions counted per MAC / element. Fails when a case's
//! figure grows by more than 10 % over `runtime/bench/rv32_baseline.txt`,
//! or when the cases and the baseline no longer list the same cases.
//!
//! Needs `python3 -m ziglang` (pip `ziglang`) and `qemu-riscv32` (Debian
//! `qemu-user`); `.ci/run` installs both. Without them the test prints
//! `SKIPPED:`, except under CI (`CI` set), where a missing tool fails.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Growth over the baseline that fails the test.
const TOLERANCE: f64 = 1.10;

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("runtime/bench")
}

fn tool_works(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd).args(args).output().is_ok_and(|o| o.status.success())
}

/// `(kernel, case) -> figure` of `rv32 <kernel> <case> <figure> ...` lines.
fn parse(text: &str) -> BTreeMap<(String, String), f64> {
    let mut m = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("rv32 ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert!(f.len() >= 4, "malformed line {line:?}");
        let v: f64 = f[3].parse().unwrap_or_else(|_| panic!("malformed figure in {line:?}"));
        let key = (f[1].to_string(), f[2].to_string());
        assert!(m.insert(key, v).is_none(), "case listed twice: {line:?}");
    }
    m
}

/// The regressions (and cases missing on either side) of `now` against `base`.
fn compare(base: &BTreeMap<(String, String), f64>, now: &BTreeMap<(String, String), f64>) -> Vec<String> {
    let mut bad = Vec::new();
    for ((k, c), b) in base {
        match now.get(&(k.clone(), c.clone())) {
            None => bad.push(format!("{k} {c}: in the baseline but not measured")),
            Some(v) if *v > b * TOLERANCE => bad.push(format!(
                "{k} {c}: {v:.3} instructions per unit, baseline {b:.3} (+{:.0} %)",
                (v / b - 1.0) * 100.0
            )),
            Some(_) => {}
        }
    }
    for (k, c) in now.keys() {
        if !base.contains_key(&(k.clone(), c.clone())) {
            bad.push(format!("{k} {c}: measured but not in the baseline (add it)"));
        }
    }
    bad
}

#[test]
fn compare_flags_growth_and_missing_cases() {
    let base = parse("rv32 gemm a 2.000\nrv32 conv b 3.000 1 2\n");
    assert!(compare(&base, &parse("rv32 gemm a 2.199\nrv32 conv b 2.0\n")).is_empty());
    let bad = compare(&base, &parse("rv32 gemm a 2.201\nrv32 relu c 1.0\n"));
    assert_eq!(bad.len(), 3, "{bad:?}");
}

#[test]
fn kernels_on_rv32_stay_within_the_baseline() {
    let ci = std::env::var_os("CI").is_some();
    let have_zig = tool_works("python3", &["-m", "ziglang", "version"]);
    let have_qemu = tool_works("qemu-riscv32", &["--version"]);
    if !have_zig || !have_qemu {
        let msg = format!(
            "rv32 instrument: missing{}{} (pip install ziglang; apt-get install qemu-user)",
            if have_zig { "" } else { " python3 -m ziglang" },
            if have_qemu { "" } else { " qemu-riscv32" }
        );
        assert!(!ci, "{msg}");
        common::skip("rv32 instrument", &msg);
        return;
    }
    common::ran("rv32 instrument");
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new("make")
        .args(["-s", "-C"])
        .arg(bench_dir())
        .arg("rv32")
        .arg(format!("RV32_DIR={}", tmp.path().display()))
        .output()
        .expect("running make");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "make rv32 failed:\n{text}{}", String::from_utf8_lossy(&o.stderr));
    let now = parse(&text);
    let base_text = std::fs::read_to_string(bench_dir().join("rv32_baseline.txt")).unwrap();
    let base = parse(&base_text);
    assert!(now.len() >= 100, "only {} cases measured:\n{text}", now.len());
    let bad = compare(&base, &now);
    assert!(
        bad.is_empty(),
        "rv32 instruction counts over the baseline (+10 % allowed):\n{}\n\nfull run:\n{text}",
        bad.join("\n")
    );
}
