//! Progress of long work on stderr: a line as each case starts and ends
//! (always, so a log or a CI job shows where time goes), and an
//! `indicatif` bar below them when stderr is a terminal. Results stay on
//! stdout; write them through [`Progress::suspend`] so the bar does not
//! tear them.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    /// `deploygen test`, `deploygen triage`, …: the start of every line.
    who: String,
    total: usize,
    started: AtomicUsize,
    done: AtomicUsize,
    bar: Option<ProgressBar>,
    /// The cases running, with the number each started as.
    running: Mutex<Vec<(String, usize)>>,
    /// Print nothing at all (library callers that judge output themselves).
    quiet: bool,
}

impl Progress {
    /// Progress of `total` cases (0: not known in advance), announced as `who`.
    pub fn new(who: &str, total: usize) -> Progress {
        Progress::with(who, total, false)
    }

    /// A progress that prints nothing.
    pub fn quiet() -> Progress {
        Progress::with("", 0, true)
    }

    fn with(who: &str, total: usize, quiet: bool) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            // Without a known total, a spinner.
            let (len, template) = match total {
                0 => (None, "{spinner} {elapsed:>4} {wide_msg}"),
                n => (Some(n as u64), "{bar:30} {pos}/{len} {elapsed:>4} {wide_msg}"),
            };
            let b = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style);
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Progress {
            who: who.to_string(),
            total,
            started: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            bar,
            running: Mutex::new(vec![]),
            quiet,
        }
    }

    fn line(&self, text: &str) {
        if self.quiet {
            return;
        }
        let text = &*crate::escape::terminal(text);
        match &self.bar {
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// `[ 3/12]`, or `[3]` without a known total.
    fn count(&self, i: usize) -> String {
        match self.total {
            0 => format!("[{i}]"),
            n => format!("[{i:>w$}/{n}]", w = n.to_string().len()),
        }
    }

    fn show_running(&self) {
        if let Some(b) = &self.bar {
            let r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            b.set_message(r.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", "));
        }
    }

    /// `deploygen test: [ 3/12] start  KEY`.
    pub fn start(&self, key: &str) {
        let i = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        self.running.lock().unwrap_or_else(|e| e.into_inner()).push((key.to_string(), i));
        self.line(&format!("{}: {} start  {key}", self.who, self.count(i)));
        self.show_running();
    }

    /// `deploygen test: [ 3/12] end    KEY  PASSED (0.4 s; 4 done)`: the
    /// number is the one the case started as, so a start and its end
    /// pair up when cases run in parallel.
    pub fn end(&self, key: &str, what: &str, elapsed: Duration) {
        let text = self.end_text(key, what, elapsed);
        self.line(&text);
        if let Some(b) = &self.bar {
            b.inc(1);
        }
        self.show_running();
    }

    fn end_text(&self, key: &str, what: &str, elapsed: Duration) -> String {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let i = {
            let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            let pos = r.iter().position(|(k, _)| k == key);
            pos.map(|p| r.remove(p).1)
        };
        let secs = elapsed.as_secs_f64();
        let number = i.map_or_else(|| format!("[{done}]"), |i| self.count(i));
        format!("{}: {number} end    {key}  {what} ({secs:.1} s; {done} done)", self.who)
    }

    /// Run `f` (which writes to stdout) with the bar hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_carries_the_number_its_case_started_as() {
        let p = Progress::with("t", 3, true);
        p.start("a");
        p.start("b");
        let b = p.end_text("b", "PASSED", Duration::ZERO);
        assert!(b.starts_with("t: [2/3] end    b  PASSED (0.0 s; 1 done)"), "{b}");
        let a = p.end_text("a", "FAILED", Duration::ZERO);
        assert!(a.starts_with("t: [1/3] end    a  FAILED (0.0 s; 2 done)"), "{a}");
    }
}
