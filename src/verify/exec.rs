//! Run a child process under a time limit, in its own process group, and
//! keep (a capped amount of) what it prints. On time-out the whole group is
//! killed, so a build's compilers or a forked helper do not outlive it; and
//! when the leader exits, stragglers left in its group are killed too.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Bytes kept from the start and from the end of each stream.
const HEAD: usize = 256 * 1024;
const TAIL: usize = 768 * 1024;

/// What a finished (or killed) process left.
#[derive(Debug)]
pub struct Ran {
    /// `None` when it was killed for taking too long.
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Ran {
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The signal that ended it, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }

    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// `exit status 2`, `killed by signal 6 (SIGABRT)`, `timed out`.
    pub fn describe_status(&self) -> String {
        match (self.timed_out, self.code(), self.signal()) {
            (true, _, _) => "timed out".into(),
            (_, Some(c), _) => format!("exit status {c}"),
            (_, _, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
            _ => "unknown status".into(),
        }
    }

    /// stdout, then stderr.
    pub fn text(&self) -> String {
        let mut t = self.stdout.clone();
        if !self.stderr.is_empty() {
            if !t.is_empty() && !t.ends_with('\n') {
                t.push('\n');
            }
            t.push_str(&self.stderr);
        }
        t
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

/// A stream's bytes: its first `HEAD` and last `TAIL`.
#[derive(Default)]
struct Capped {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: usize,
}

impl Capped {
    fn push(&mut self, mut chunk: &[u8]) {
        if self.head.len() < HEAD {
            let take = chunk.len().min(HEAD - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        self.tail.extend(chunk.iter().copied());
        if self.tail.len() > TAIL {
            let excess = self.tail.len() - TAIL;
            self.tail.drain(..excess);
            self.dropped += excess;
        }
    }

    fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[… {} bytes of output not kept …]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

/// Read a stream to its end into a shared buffer, in a thread; the
/// receiver hears when it is done.
fn reader(mut r: impl Read + Send + 'static) -> (Arc<Mutex<Capped>>, mpsc::Receiver<()>) {
    let buf = Arc::new(Mutex::new(Capped::default()));
    let (tx, rx) = mpsc::channel();
    let b = Arc::clone(&buf);
    thread::spawn(move || {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match r.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => b.lock().unwrap_or_else(|e| e.into_inner()).push(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send(());
    });
    (buf, rx)
}

/// What a reader got, waiting at most `grace` for the stream to end: a
/// process that left the group may still hold the pipe open.
fn collect((buf, done): (Arc<Mutex<Capped>>, mpsc::Receiver<()>), grace: Duration) -> String {
    let finished = done.recv_timeout(grace).is_ok();
    let mut s = buf.lock().unwrap_or_else(|e| e.into_inner()).text();
    if !finished {
        s.push_str("\n[output pipe still held open by a process outside the group; stopped reading]\n");
    }
    s
}

fn kill_group(pgid: u32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory
    // is shared. The group's leader is not yet reaped when this is called
    // (see `exited`), so the group id cannot have been reused.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), libc::SIGKILL);
    }
}

/// Whether the child has exited, without reaping it: its pid (and so its
/// process group id) stays reserved until `wait`.
fn exited(pid: u32) -> std::io::Result<bool> {
    // SAFETY: waitid writes only into the siginfo_t we own.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(info.si_pid() != 0)
    }
}

/// Run `cmd` to completion or until `limit`, with stdin closed.
pub fn run(cmd: &mut Command, limit: Duration) -> std::io::Result<Ran> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let out = child.stdout.take().expect("stdout is piped");
    let err = child.stderr.take().expect("stderr is piped");
    let t_out = reader(out);
    let t_err = reader(err);
    let mut pause = Duration::from_millis(1);
    let timed_out = loop {
        match exited(pid) {
            Ok(true) => break false,
            Ok(false) => {}
            Err(e) => {
                kill_group(pid);
                let _ = child.wait();
                return Err(e);
            }
        }
        if start.elapsed() >= limit {
            break true;
        }
        thread::sleep(pause.min(limit.saturating_sub(start.elapsed())));
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    // The leader has exited or is out of time: nothing of its group may
    // keep running (or keep the output pipes open).
    kill_group(pid);
    let status = child.wait()?;
    // Out of time, unless it exited on its own in the last moment.
    let timed_out = timed_out && status.signal() == Some(libc::SIGKILL);
    let stdout = collect(t_out, Duration::from_secs(2));
    let stderr = collect(t_err, Duration::from_secs(2));
    Ok(Ran { status: (!timed_out).then_some(status), timed_out, stdout, stderr, elapsed: start.elapsed() })
}
