//! The watchdog: no job outlives the server, even when the server is killed with SIGKILL
//! (SPEC §3), which no cleanup code of the server itself survives.
//!
//! At start-up, while the server still has a single thread, it forks a tiny watchdog process
//! joined to it by a pipe. The server holds the write end (close-on-exec, so no command ever
//! inherits it) and never writes; the watchdog blocks reading the other end. However the server
//! ends (exit, panic, any signal including SIGKILL), the kernel closes the write end, the read
//! returns end-of-file, and the watchdog stops every process whose environment carries a run
//! marker of this server ([`crate::spawn::RUN_MARKER_VAR`] starting with the server's prefix):
//! SIGTERM, a short grace, then SIGKILL rounds that re-scan for late forks. The marker is
//! inherited by every descendant, so a `setsid` or double-fork escapee is found too; a process
//! that deliberately wipes its environment (`env -i`) is the one thing it cannot attribute.
//!
//! Why a process and not a thread or `PR_SET_PDEATHSIG` on each job: a thread dies with the
//! server, and a death signal set on the leader does not reach a grandchild that escaped with
//! `setsid`. The pipe is the kernel's own notice of the server's death, with no race to close.
//!
//! Why fork without exec: exec needs the binary's path (which a rebuild may have replaced) and a
//! second entry point; forked before any thread exists, the child is an ordinary single-threaded
//! copy that may allocate and read `/proc` freely. [`start`] refuses when threads already run.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigHandler, Signal, kill, signal};
use nix::unistd::{ForkResult, Pid, fork, pipe2, read, setsid};

use crate::spawn::RUN_MARKER_VAR;

/// After SIGTERM, how long the watchdog waits before SIGKILL. Short: the server is already gone
/// and nobody waits for these processes' output any more.
pub const WATCHDOG_GRACE_MS: u64 = 500;

/// SIGKILL rounds (each re-scans `/proc` for late forks) before the watchdog gives up.
const KILL_ROUNDS: usize = 50;
/// Pause between two scans.
const POLL_MS: u64 = 20;

/// The watchdog's pid (0 when none runs). It is a child of the server but never a command's
/// leftover, so the per-call survivor check skips it without reading its environment.
static WATCHDOG_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The running watchdog's pid, if any.
pub fn watchdog_pid() -> Option<i32> {
    let pid = WATCHDOG_PID.load(std::sync::atomic::Ordering::Relaxed);
    (pid != 0).then_some(pid)
}

/// Why the watchdog could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchdogError {
    #[error("the watchdog must be started before any thread exists ({0} threads run)")]
    Threads(usize),
    #[error("cannot start the watchdog: {0}")]
    Os(#[from] nix::Error),
    #[error("cannot start the watchdog: {0}")]
    Io(#[from] io::Error),
}

/// The server's end of the watchdog: keep it alive as long as the server runs. Dropping it
/// (or the server dying) makes the watchdog stop every marked process.
#[derive(Debug)]
pub struct Watchdog {
    pid: i32,
    _alive: OwnedFd,
}

impl Watchdog {
    pub fn pid(&self) -> i32 {
        self.pid
    }
}

/// Forks the watchdog for the run markers starting with `marker_prefix`.
pub fn start(marker_prefix: &str) -> Result<Watchdog, WatchdogError> {
    let threads = fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(WatchdogError::Threads(threads));
    }
    let (read_end, write_end) = pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // SAFETY: the process has exactly one thread (checked above), so the child is a complete
    // copy with no lock held by a thread that does not exist in it.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => {
            drop(read_end);
            WATCHDOG_PID.store(child.as_raw(), std::sync::atomic::Ordering::Relaxed);
            Ok(Watchdog {
                pid: child.as_raw(),
                _alive: write_end,
            })
        }
        ForkResult::Child => {
            drop(write_end);
            watch(read_end, marker_prefix);
            std::process::exit(0)
        }
    }
}

/// The watchdog's whole life: detach, wait for the server to die, sweep.
fn watch(alive: OwnedFd, prefix: &str) {
    // Its own session: Ctrl+C or a hang-up aimed at the server's terminal group must not take
    // the watchdog down before the server, or nobody is left to clean up.
    let _ = setsid();
    for sig in [Signal::SIGINT, Signal::SIGHUP, Signal::SIGPIPE] {
        // SAFETY: SIG_IGN installs no handler code.
        let _ = unsafe { signal(sig, SigHandler::SigIgn) };
    }
    // stdout is the MCP channel: the client must see it close when the server dies, so the
    // watchdog keeps no copy of it (nor of stdin).
    if let Ok(null) = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        // SAFETY: dup2 onto the standard descriptors of this single-threaded process.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
    let mut byte = [0u8; 1];
    loop {
        match read(&alive, &mut byte) {
            Ok(0) => break,
            Err(nix::Error::EINTR) | Ok(_) => continue,
            Err(_) => break,
        }
    }
    let (found, killed) = sweep(prefix);
    if found > 0 {
        tracing::warn!(
            found,
            killed,
            "agentty watchdog: the server ended; stopped the processes it had started"
        );
    }
}

/// Stops every process carrying a marker with `prefix`; returns (found, needed SIGKILL).
pub fn sweep(prefix: &str) -> (usize, usize) {
    let first = marked(prefix);
    if first.is_empty() {
        return (0, 0);
    }
    for &pid in &first {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
    }
    let deadline = Instant::now() + Duration::from_millis(WATCHDOG_GRACE_MS);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(POLL_MS));
        if marked(prefix).is_empty() {
            return (first.len(), 0);
        }
    }
    let mut killed = 0;
    for round in 0..KILL_ROUNDS {
        let left = marked(prefix);
        if left.is_empty() {
            break;
        }
        if round == 0 {
            killed = left.len();
        }
        for &pid in &left {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    (first.len(), killed)
}

/// Live (non-zombie) processes, other than this one, whose run marker starts with `prefix`.
fn marked(prefix: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let wanted = format!("{RUN_MARKER_VAR}={prefix}");
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && !is_zombie(pid))
        .filter(|&pid| {
            fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|entry| entry.starts_with(wanted.as_bytes()))
            })
        })
        .collect()
}

fn is_zombie(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rfind(')')
            .and_then(|i| stat.get(i + 2..i + 3))
            .is_none_or(|state| state == "Z" || state == "X")
    })
}
