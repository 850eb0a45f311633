//! What the harness printed, read line by line, and the verdict on it.
//!
//! Lines the harness prints (docs/testing.md, "The harness"):
//!
//! ```text
//! [loss i] computed=%.6f ref=%.6f diff=%.6f tol=%.6f
//! [check NAME] errors E out of N
//!   mismatch NAME[i] computed=… ref=…
//! FATAL: L1 allocation of <bytes> B failed (<name>)
//! Errors: E out of N
//! BENCH train_cycles=… opt_cycles=…
//! ```
//!
//! Sanitizers add `ERROR: AddressSanitizer…`, `ERROR: LeakSanitizer…` and
//! `…: runtime error: …` on stderr.

use std::time::Duration;

use super::exec::{signal_name, Ran};
use super::manifest::Manifest;
use super::{Loss, Outcome, Stage};

/// One `[check NAME] errors E out of N` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: String,
    pub errors: u64,
    pub compared: u64,
}

/// Everything recognised in the output.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every line that starts with `Errors:`, as printed.
    pub errors_lines: Vec<String>,
    pub losses: Vec<Loss>,
    pub checks: Vec<Check>,
    pub mismatches: Vec<String>,
    pub fatal: Vec<String>,
    pub sanitizer: Vec<String>,
    /// Lines that look like harness lines but do not parse.
    pub malformed: Vec<String>,
    pub bench: Option<String>,
}

/// `E out of N` → (E, N).
fn e_out_of_n(s: &str) -> Option<(u64, u64)> {
    let mut w = s.split_whitespace();
    let e = w.next()?.parse().ok()?;
    (w.next()? == "out").then_some(())?;
    (w.next()? == "of").then_some(())?;
    let n = w.next()?.parse().ok()?;
    w.next().is_none().then_some((e, n))
}

/// A number as C's printf writes it, `nan`, `-nan` and `inf` included.
fn c_float(s: &str) -> Option<f64> {
    s.parse().ok()
}

fn parse_loss(line: &str) -> Option<Loss> {
    let rest = line.strip_prefix("[loss ")?;
    let (index, rest) = rest.split_once(']')?;
    let index = index.trim().parse().ok()?;
    let (mut computed, mut reference, mut diff, mut tol) = (None, None, None, None);
    for kv in rest.split_whitespace() {
        let (k, v) = kv.split_once('=')?;
        let slot = match k {
            "computed" => &mut computed,
            "ref" => &mut reference,
            "diff" => &mut diff,
            "tol" => &mut tol,
            _ => return None,
        };
        *slot = Some(c_float(v)?);
    }
    Some(Loss { index, computed: computed?, reference: reference?, diff: diff?, tol: tol? })
}

fn parse_check(line: &str) -> Option<Check> {
    let rest = line.strip_prefix("[check ")?;
    let (name, rest) = rest.split_once(']')?;
    let (errors, compared) = e_out_of_n(rest.trim().strip_prefix("errors ")?)?;
    Some(Check { name: name.to_string(), errors, compared })
}

fn is_sanitizer(line: &str) -> bool {
    line.contains("ERROR: AddressSanitizer")
        || line.contains("ERROR: LeakSanitizer")
        || line.contains("runtime error:")
        || line.contains("WARNING: ThreadSanitizer")
}

pub fn parse(stdout: &str, stderr: &str) -> Report {
    let mut r = Report::default();
    for line in stdout.lines().chain(stderr.lines()) {
        let t = line.trim_end();
        if is_sanitizer(t) {
            r.sanitizer.push(t.to_string());
        } else if let Some(rest) = t.trim_start().strip_prefix("FATAL:") {
            r.fatal.push(format!("FATAL:{rest}"));
        } else if t.starts_with("Errors:") {
            r.errors_lines.push(t.to_string());
        } else if t.starts_with("[loss") {
            match parse_loss(t) {
                Some(l) => r.losses.push(l),
                None => r.malformed.push(t.to_string()),
            }
        } else if t.starts_with("[check") {
            match parse_check(t) {
                Some(c) => r.checks.push(c),
                None => r.malformed.push(t.to_string()),
            }
        } else if t.trim_start().starts_with("mismatch ") {
            r.mismatches.push(t.trim_start().to_string());
        } else if let Some(b) = t.strip_prefix("BENCH ") {
            r.bench = Some(b.trim().to_string());
        }
    }
    r
}

/// First lines worth showing for a wrong result: failing losses, then
/// per-tensor mismatches.
fn evidence(r: &Report) -> Vec<String> {
    let mut v: Vec<String> = r
        .losses
        .iter()
        .filter(|l| !l.within())
        .take(8)
        .map(|l| format!("loss {}: computed {} ref {} diff {} tol {}", l.index, l.computed, l.reference, l.diff, l.tol))
        .collect();
    v.extend(
        r.checks
            .iter()
            .filter(|c| c.errors > 0)
            .take(8)
            .map(|c| format!("check {}: {} of {} values differ", c.name, c.errors, c.compared)),
    );
    v.extend(r.mismatches.iter().take(8).cloned());
    v
}

/// Judge a run of the app: the first rule that fails decides.
pub fn judge(m: &Manifest, ran: &Ran, limit: Duration) -> Outcome {
    let r = parse(&ran.stdout, &ran.stderr);
    let base = Outcome {
        losses: r.losses.clone(),
        bench: r.bench.clone(),
        expected: Some(m.expected_compared),
        tolerance: Some(m.tolerance),
        rtol: Some(m.rtol),
        ..Default::default()
    };
    let tail = super::tail(&ran.text(), 12);
    let fail = |stage: Stage, msg: String, details: Vec<String>| Outcome {
        stage: Some(stage),
        message: msg,
        details,
        ..base.clone()
    };

    if ran.timed_out {
        return fail(Stage::Runtime, format!("timed out: still running after {} s, killed", limit.as_secs_f64()), tail);
    }
    if !r.sanitizer.is_empty() {
        let msg = format!("sanitizer report: {}", r.sanitizer[0].trim());
        return fail(Stage::Runtime, msg, r.sanitizer.iter().skip(1).take(10).cloned().collect());
    }
    if let Some(f) = r.fatal.first() {
        return fail(Stage::Runtime, format!("the app stopped at Init: {f}"), r.fatal[1..].to_vec());
    }
    if let Some(sig) = ran.signal() {
        return fail(Stage::Runtime, format!("crashed: killed by signal {sig} ({})", signal_name(sig)), tail);
    }
    let (e, n) = match r.errors_lines.as_slice() {
        [] => {
            let msg =
                format!("no `Errors: E out of N` line: the harness reported no verdict ({})", ran.describe_status());
            return fail(Stage::Runtime, msg, tail);
        }
        [line] => match line.strip_prefix("Errors:").and_then(|s| e_out_of_n(s.trim())) {
            Some(en) => en,
            None => {
                let msg = format!("malformed verdict line `{line}`: expected `Errors: E out of N`");
                return fail(Stage::Runtime, msg, tail);
            }
        },
        lines => {
            let msg = format!("{} `Errors:` lines where the harness prints one", lines.len());
            return fail(Stage::Runtime, msg, lines.to_vec());
        }
    };
    if let Some(line) = r.malformed.first() {
        return fail(Stage::Runtime, format!("malformed harness line `{line}`"), r.malformed[1..].to_vec());
    }
    let base = Outcome { errors: Some(e), compared: Some(n), ..base };
    let fail = |stage: Stage, msg: String, details: Vec<String>| Outcome {
        stage: Some(stage),
        message: msg,
        details,
        ..base.clone()
    };
    if e > n {
        return fail(
            Stage::Runtime,
            format!("malformed verdict `Errors: {e} out of {n}`: more errors than values"),
            tail,
        );
    }
    if e > 0 {
        return fail(Stage::Result, format!("{e} of {n} compared values are wrong"), evidence(&r));
    }
    if n != m.expected_compared {
        let msg = if n == 0 {
            format!("vacuous check: the harness compared 0 values, the project has {} references", m.expected_compared)
        } else {
            format!(
                "the harness compared {n} values, the project has {} references: not everything was checked",
                m.expected_compared
            )
        };
        return fail(Stage::Result, msg, vec![]);
    }
    // One check line per compared tensor: what makes a project whose
    // references are all zero-size (N = 0) more than a run that printed
    // nothing.
    if r.checks.len() != m.compared.len() {
        let msg = format!(
            "the harness printed {} `[check]` line(s) for {} compared tensor(s)",
            r.checks.len(),
            m.compared.len()
        );
        return fail(Stage::Result, msg, vec![]);
    }
    // The detail lines must not contradict E = 0.
    let bad_losses: Vec<&Loss> = r.losses.iter().filter(|l| !l.within()).collect();
    let bad_checks: u64 = r.checks.iter().map(|c| c.errors).sum();
    if !bad_losses.is_empty() || bad_checks > 0 || !r.mismatches.is_empty() {
        let msg = format!(
            "the harness reported `Errors: 0 out of {n}`, but its own lines show {} loss(es) out of tolerance, {bad_checks} tensor error(s) and {} mismatch line(s)",
            bad_losses.len(),
            r.mismatches.len()
        );
        return fail(Stage::Result, msg, evidence(&r));
    }
    let mut seen: Vec<usize> = r.losses.iter().map(|l| l.index).collect();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() as u64 != m.loss_refs {
        let msg = format!("the harness printed {} `[loss i]` line(s) for {} reference losses", seen.len(), m.loss_refs);
        return fail(Stage::Result, msg, vec![]);
    }
    if !ran.success() {
        let msg = format!("the app reported `Errors: 0 out of {n}` but ended with {}", ran.describe_status());
        return fail(Stage::Runtime, msg, tail);
    }
    let exact: u64 = m.compared.iter().filter(|c| c.exact).map(|c| c.values).sum();
    let tol = match exact {
        e if e == n => ", compared exactly".to_string(),
        0 => format!(", tolerance {} + {} x |ref|", m.tolerance, m.rtol),
        e => format!(", tolerance {} + {} x |ref| ({e} integer values exactly)", m.tolerance, m.rtol),
    };
    Outcome { message: format!("Errors: 0 out of {n}{tol}"), ..base }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_harness_lines() {
        let out = "[loss 0] computed=2.302585 ref=1.884626 diff=0.417959 tol=0.001000\n\
                   [loss 1] computed=-nan ref=2.120300 diff=nan tol=0.001000\n\
                   [check fc1.weight_updated] errors 3 out of 12\n\
                   \x20 mismatch fc1.weight_updated[4] computed=0.1 ref=0.2\n\
                   Errors: 5 out of 16\nBENCH train_cycles=10 opt_cycles=2\n";
        let r = parse(out, "");
        assert_eq!(r.losses.len(), 2);
        assert!(r.losses[1].computed.is_nan() && !r.losses[1].within());
        assert_eq!(r.checks, vec![Check { name: "fc1.weight_updated".into(), errors: 3, compared: 12 }]);
        assert_eq!(r.mismatches.len(), 1);
        assert_eq!(r.errors_lines, vec!["Errors: 5 out of 16".to_string()]);
        assert_eq!(r.bench.as_deref(), Some("train_cycles=10 opt_cycles=2"));
        assert!(r.malformed.is_empty());
    }

    /// The harness prints `diff=0` for equal infinities: they match; other
    /// infinite or NaN losses do not.
    #[test]
    fn equal_infinite_losses_match() {
        let out = "[loss 0] computed=-inf ref=-inf diff=0.000000 tol=0.001000\n\
                   [loss 1] computed=inf ref=-inf diff=inf tol=0.001000\n\
                   [loss 2] computed=inf ref=inf diff=nan tol=0.001000\n\
                   [loss 3] computed=nan ref=nan diff=0.000000 tol=0.001000\n";
        let r = parse(out, "");
        let within: Vec<bool> = r.losses.iter().map(Loss::within).collect();
        assert_eq!(within, vec![true, false, false, false]);
    }

    #[test]
    fn verdict_line_forms() {
        assert_eq!(e_out_of_n("0 out of 4"), Some((0, 4)));
        assert_eq!(e_out_of_n("0 out of"), None);
        assert_eq!(e_out_of_n("-1 out of 4"), None);
        assert_eq!(e_out_of_n("0 out of 4 extra"), None);
        assert_eq!(e_out_of_n("zero out of 4"), None);
        assert!(parse_loss("[loss 0] computed=1 ref=1 diff=0").is_none());
        assert!(parse_loss("[loss x] computed=1 ref=1 diff=0 tol=1").is_none());
    }
}
