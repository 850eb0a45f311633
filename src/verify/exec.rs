//! Run a child process under a time limit, in its own process group, and
//! keep (a capped amount of) what it prints. On time-out the whole group is
//! killed, so a build's compilers or a forked helper do not outlive it; and
//! when the leader exits, stragglers left in its group are killed too.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
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

/// Read a stream to its end, keeping its first `HEAD` and last `TAIL` bytes.
fn read_capped(mut r: impl Read) -> String {
    let mut head = Vec::new();
    let mut tail = std::collections::VecDeque::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut chunk = &buf[..n];
        if head.len() < HEAD {
            let take = chunk.len().min(HEAD - head.len());
            head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        tail.extend(chunk.iter().copied());
        if tail.len() > TAIL {
            let excess = tail.len() - TAIL;
            tail.drain(..excess);
            dropped += excess;
        }
    }
    let mut s = String::from_utf8_lossy(&head).into_owned();
    if dropped > 0 {
        s.push_str(&format!("\n[… {dropped} bytes of output not kept …]\n"));
    }
    let tail: Vec<u8> = tail.into_iter().collect();
    s.push_str(&String::from_utf8_lossy(&tail));
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
    let t_out = thread::spawn(move || read_capped(out));
    let t_err = thread::spawn(move || read_capped(err));
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
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    Ok(Ran { status: (!timed_out).then_some(status), timed_out, stdout, stderr, elapsed: start.elapsed() })
}
