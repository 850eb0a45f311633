//! Many cases at once: run them in parallel (`-j`), judge each against the
//! status table, print a verdict line as each finishes, a summary table at
//! the end, and the exit code.
//!
//! Exit code: 0 when every case passed, failed as recorded (xfail) or was
//! skipped; 1 when any result was wrong (`INCORRECT_RESULT`) or a strict
//! xfail passed; 2 when any case could not be generated, built or run —
//! 2 wins over 1.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::progress::Progress;
use super::status::{Entry, Status, StatusTable};
use super::{run_case, Case, Outcome, Stage, StageError};

/// A case's result relative to the status table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed,
    /// Failed as the table records (same stage).
    XFailed,
    /// A strict known failure that passed: the entry must be promoted.
    XPassed,
    /// Not run: the table says the case is not supported.
    Skipped,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Passed => "PASSED",
            Verdict::Failed => "FAILED",
            Verdict::XFailed => "XFAIL",
            Verdict::XPassed => "XPASS",
            Verdict::Skipped => "SKIPPED",
        }
    }

    /// Whether this verdict makes the run fail.
    pub fn is_failure(self) -> bool {
        matches!(self, Verdict::Failed | Verdict::XPassed)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Cases run at once.
    pub jobs: usize,
    /// Run NOT_SUPPORTED_SKIP entries and report their real outcome.
    pub force_run: bool,
    /// Report KNOWN_FAILURE_XFAIL entries' real outcome, as if unmarked.
    pub runxfail: bool,
    /// Print a line on stderr as each case starts and ends (and a progress
    /// bar when stderr is a terminal).
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            force_run: false,
            runxfail: false,
            progress: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct CaseResult {
    pub case: Case,
    pub key: String,
    pub entry: Option<Entry>,
    pub verdict: Verdict,
    /// What the verdict line says (for a pass, the outcome's message).
    pub message: String,
    /// `None` when the case was skipped.
    pub outcome: Option<Outcome>,
}

impl CaseResult {
    /// `PASSED`, a failure stage, or `NOT_RUN`.
    pub fn class(&self) -> &'static str {
        self.outcome.as_ref().map_or("NOT_RUN", Outcome::class)
    }
}

/// The verdict on an outcome, given the case's table entry.
pub fn judge(key: &str, entry: Option<&Entry>, outcome: &Outcome, opts: &RunOptions) -> (Verdict, String) {
    let real = |o: &Outcome| (if o.passed() { Verdict::Passed } else { Verdict::Failed }, o.message.clone());
    let Some(e) = entry else { return real(outcome) };
    match e.status {
        Status::ExpectedPassing => real(outcome),
        Status::KnownFailure if opts.runxfail => real(outcome),
        Status::NotSupported => {
            // Only run under --force-run: the real outcome, with a nudge.
            let (v, m) = real(outcome);
            if v == Verdict::Passed {
                (v, format!("{m} (forced; {key} is NOT_SUPPORTED_SKIP in the status table)"))
            } else {
                (v, m)
            }
        }
        Status::KnownFailure => {
            let recorded = e.stage.expect("non-passing entries have a stage (checked when read)");
            match outcome.stage {
                None => (
                    Verdict::XPassed,
                    format!(
                        "unexpected pass of strict xfail \"{key}\" ({}: {}): it passes now — promote it by removing the entry from the status table",
                        recorded, e.reason
                    ),
                ),
                Some(s) if s == recorded => (Verdict::XFailed, format!("{} (known: {})", outcome.message, e.reason)),
                Some(s) => (
                    Verdict::Failed,
                    format!(
                        "{} — \"{key}\" records a known failure at {recorded} ({}), but it now fails at {s}",
                        outcome.message, e.reason
                    ),
                ),
            }
        }
    }
}

/// All results, in the order the cases were given.
#[derive(Debug, Default)]
pub struct Summary {
    pub results: Vec<CaseResult>,
    /// Notes about the table (entries that can match no case).
    pub warnings: Vec<String>,
}

impl Summary {
    pub fn exit_code(&self) -> i32 {
        let mut code = 0;
        for r in &self.results {
            let c = match (r.verdict, r.outcome.as_ref().and_then(|o| o.stage)) {
                (Verdict::XPassed, _) => 1,
                (Verdict::Failed, Some(Stage::Result)) => 1,
                (Verdict::Failed, _) => 2,
                _ => 0,
            };
            code = code.max(c);
        }
        code
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.results.iter().filter(|r| r.verdict == v).count()
    }

    /// `5 cases: 3 passed, 1 failed, 1 xfail, 0 xpass, 0 skipped`.
    pub fn totals(&self) -> String {
        format!(
            "{} case{}: {} passed, {} failed, {} xfail, {} xpass, {} skipped",
            self.results.len(),
            if self.results.len() == 1 { "" } else { "s" },
            self.count(Verdict::Passed),
            self.count(Verdict::Failed),
            self.count(Verdict::XFailed),
            self.count(Verdict::XPassed),
            self.count(Verdict::Skipped)
        )
    }

    /// The summary table: one row per case.
    pub fn table(&self) -> String {
        let mut rows = vec![];
        for r in &self.results {
            let o = r.outcome.as_ref();
            let compared = match o.map(|o| (o.compared, o.expected)) {
                Some((Some(n), Some(x))) if n != x => format!("{n} of {x}"),
                Some((Some(n), _)) => n.to_string(),
                _ => "-".into(),
            };
            let time = o.map_or("-".into(), |o| format!("{:.1}s", o.elapsed.as_secs_f64()));
            let mut msg = r.message.lines().next().unwrap_or("").to_string();
            if msg.chars().count() > 90 {
                msg = msg.chars().take(89).collect::<String>() + "…";
            }
            // The stage column names where a case failed; a pass has none.
            let stage = match r.class() {
                "PASSED" | "NOT_RUN" => "-",
                c => c,
            };
            rows.push(vec![r.key.clone(), r.verdict.name().into(), stage.into(), compared, time, msg]);
        }
        let header = ["case", "verdict", "stage", "compared", "time", "message"];
        crate::text::markdown(&header, &rows).trim_end_matches('\n').to_string()
    }
}

/// The verdict line of one case, and its details indented below it.
pub fn verdict_lines(r: &CaseResult) -> String {
    let class = match r.class() {
        "PASSED" | "NOT_RUN" => String::new(),
        c => format!("{c}: "),
    };
    let mut s = format!("{:<7} {}  {class}{}", r.verdict.name(), r.key, r.message);
    if let Some(o) = &r.outcome {
        s.push_str(&format!("  ({:.1}s)", o.elapsed.as_secs_f64()));
        if !o.losses.is_empty() {
            s.push_str(&format!("\n        {}", loss_line(&o.losses)));
        }
        if r.verdict != Verdict::Passed {
            for d in o.details.iter().take(30) {
                s.push_str("\n        ");
                s.push_str(d);
            }
        }
        if let Some(p) = &o.project {
            s.push_str(&format!("\n        project kept in {}", p.display()));
        }
    }
    if let (Some(e), Verdict::XFailed | Verdict::Skipped) = (&r.entry, r.verdict) {
        s.push_str(&format!("\n        evidence: {}", e.evidence.lines().next().unwrap_or("")));
    }
    s.push('\n');
    s
}

/// `losses: 1.8846 (ref 1.8846), 2.1203 (ref 2.1203)`: what each step's
/// loss was against its reference, the first 8.
fn loss_line(losses: &[super::Loss]) -> String {
    let shown: Vec<String> =
        losses.iter().take(8).map(|l| format!("{:.6} (ref {:.6})", l.computed, l.reference)).collect();
    let more = if losses.len() > 8 { format!(", … {} more", losses.len() - 8) } else { String::new() };
    format!("losses: {}{more}", shown.join(", "))
}

/// One case: skipped when the table says so, else run and judged.
fn run_one<E>(
    case: &Case,
    table: &StatusTable,
    gen: &(dyn Fn(&Case, &Path) -> Result<(), E> + Sync),
    opts: &RunOptions,
) -> CaseResult
where
    E: Into<StageError>,
{
    let key = case.key();
    let entry = table.get(&key).cloned();
    if let Some(e) = entry.as_ref().filter(|e| e.status == Status::NotSupported && !opts.force_run) {
        let message = format!("not supported ({}: {})", e.stage.map_or("-", |s| s.name()), e.reason);
        return CaseResult {
            case: case.clone(),
            key,
            entry: entry.clone(),
            verdict: Verdict::Skipped,
            message,
            outcome: None,
        };
    }
    let outcome = run_case(case, gen);
    let (verdict, message) = judge(&key, entry.as_ref(), &outcome, opts);
    CaseResult { case: case.clone(), key, entry, verdict, message, outcome: Some(outcome) }
}

/// Run `cases` with `gen`, judged against `table`; verdict lines go to
/// `out` as cases finish.
pub fn run<E>(
    cases: &[Case],
    table: &StatusTable,
    gen: &(dyn Fn(&Case, &Path) -> Result<(), E> + Sync),
    opts: &RunOptions,
    out: &mut (dyn Write + Send),
) -> Summary
where
    E: Into<StageError>,
{
    let mut warnings = vec![];
    for c in cases {
        for k in table.other_kind(&c.name, &c.platform, &c.default_mem, c.kind) {
            warnings.push(format!("status table entry \"{k}\" can match no case: {} is a {} model", c.name, c.kind));
        }
    }
    warnings.sort();
    warnings.dedup();
    let jobs = opts.jobs.clamp(1, cases.len().max(1));
    let results: Vec<Mutex<Option<CaseResult>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let progress = if opts.progress { Progress::new("deploygen test", cases.len()) } else { Progress::quiet() };
    let out = Mutex::new(out);
    let emit = |r: &CaseResult| {
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        progress.suspend(|| {
            let _ = o.write_all(verdict_lines(r).as_bytes());
            let _ = o.flush();
        });
    };
    {
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        for w in &warnings {
            let _ = writeln!(o, "warning: {w}");
        }
    }
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        let Some(case) = cases.get(i) else { break };
        let key = case.key();
        progress.start(&key);
        // Cores left over by the parallel cases go to each case's make.
        let case = &Case { build_jobs: (super::parallelism() / jobs).max(1), ..case.clone() };
        let result = run_one(case, table, gen, opts);
        let elapsed = result.outcome.as_ref().map_or_else(Default::default, |o| o.elapsed);
        progress.end(&key, result.verdict.name(), elapsed);
        emit(&result);
        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(worker);
        }
    });
    progress.finish();
    let results = results
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every case was run by a worker"))
        .collect();
    Summary { results, warnings }
}
