//! Many cases at once: run them in parallel (`-j`), judge each against the
//! status table, print a verdict line as each finishes, a summary table at
//! the end, and the exit code.
//!
//! Exit code: 0 when every case passed, failed as recorded (xfail) or was
//! skipped; 1 when any result was wrong (`INCORRECT_RESULT`) or a strict
//! xfail passed; 2 when any case could not be generated, built or run —
//! 2 wins over 1.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use comfy_table::{presets, ContentArrangement, Table};

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
    /// Show a progress line (on stderr, when it is a terminal).
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            force_run: false,
            runxfail: false,
            progress: std::io::stderr().is_terminal(),
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
pub fn judge(entry: Option<&Entry>, outcome: &Outcome, opts: &RunOptions) -> (Verdict, String) {
    let real = |o: &Outcome| (if o.passed() { Verdict::Passed } else { Verdict::Failed }, o.message.clone());
    let Some(e) = entry else { return real(outcome) };
    match e.status {
        Status::ExpectedPassing => real(outcome),
        Status::KnownFailure if opts.runxfail => real(outcome),
        Status::NotSupported => {
            // Only run under --force-run: the real outcome, with a nudge.
            let (v, m) = real(outcome);
            if v == Verdict::Passed {
                (v, format!("{m} (forced; {} is NOT_SUPPORTED_SKIP in the status table)", e.key))
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
                        "unexpected pass of strict xfail \"{}\" ({}: {}): it passes now — promote it by removing the entry from the status table",
                        e.key, recorded, e.reason
                    ),
                ),
                Some(s) if s == recorded => (Verdict::XFailed, format!("{} (known: {})", outcome.message, e.reason)),
                Some(s) => (
                    Verdict::Failed,
                    format!(
                        "{} — \"{}\" records a known failure at {recorded} ({}), but it now fails at {s}",
                        outcome.message, e.key, e.reason
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
        let mut t = Table::new();
        t.load_preset(presets::ASCII_MARKDOWN).set_content_arrangement(ContentArrangement::Disabled);
        t.set_header(["case", "verdict", "stage", "compared", "time", "message"]);
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
            t.add_row([r.key.clone(), r.verdict.name().into(), r.class().into(), compared, time, msg]);
        }
        t.to_string()
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

struct Progress {
    enabled: bool,
    total: usize,
    done: usize,
    running: Vec<String>,
}

impl Progress {
    fn line(&self) -> String {
        let names = self.running.join(", ");
        let mut l = format!("[{}/{}] running {}", self.done, self.total, names);
        if l.chars().count() > 100 {
            l = l.chars().take(99).collect::<String>() + "…";
        }
        l
    }

    fn draw(&self) {
        if self.enabled {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K{}", self.line());
            let _ = e.flush();
        }
    }

    fn clear(&self) {
        if self.enabled {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
        }
    }
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
        for e in table.other_kind(&c.name, &c.platform, &c.default_mem, c.kind) {
            warnings
                .push(format!("status table entry \"{}\" can match no case: {} is a {} model", e.key, c.name, c.kind));
        }
    }
    warnings.sort();
    warnings.dedup();
    let results: Vec<Mutex<Option<CaseResult>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let progress = Mutex::new(Progress { enabled: opts.progress, total: cases.len(), done: 0, running: vec![] });
    let out = Mutex::new(out);
    let emit = |r: &CaseResult| {
        let p = progress.lock().unwrap_or_else(|e| e.into_inner());
        p.clear();
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = o.write_all(verdict_lines(r).as_bytes());
        let _ = o.flush();
        p.draw();
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
        let entry = table.get(&key).cloned();
        let skip = entry.as_ref().is_some_and(|e| e.status == Status::NotSupported) && !opts.force_run;
        let result = if skip {
            let e = entry.clone().expect("skip implies an entry");
            let message = format!("not supported ({}: {})", e.stage.map_or("-", |s| s.name()), e.reason);
            CaseResult { case: case.clone(), key, entry, verdict: Verdict::Skipped, message, outcome: None }
        } else {
            {
                let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
                p.running.push(key.clone());
                p.draw();
            }
            let outcome = run_case(case, gen);
            {
                let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
                p.running.retain(|k| *k != key);
            }
            let (verdict, message) = judge(entry.as_ref(), &outcome, opts);
            CaseResult { case: case.clone(), key, entry, verdict, message, outcome: Some(outcome) }
        };
        progress.lock().unwrap_or_else(|e| e.into_inner()).done += 1;
        emit(&result);
        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    };
    let jobs = opts.jobs.clamp(1, cases.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(worker);
        }
    });
    progress.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let results = results
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every case was run by a worker"))
        .collect();
    Summary { results, warnings }
}
