//! The watchdog: no process a command started outlives the server, however the server ends
//! (docs/BEHAVIOUR.md §3), SIGKILL and a wiped environment included.
//!
//! `agentty serve` forks once at start-up, before any thread exists. The **parent stays behind
//! as the watchdog** and the child becomes the server:
//!
//! ```text
//! host ── agentty (watchdog: child subreaper, forwards signals, mirrors the exit status)
//!            └── agentty (server: child subreaper) ── commands ── their escapees …
//! ```
//!
//! Both are *child subreapers* (`PR_SET_CHILD_SUBREAPER`). While the server lives, a descendant
//! that escaped its command (`setsid`, a double fork, `env -i`) is re-parented to the server.
//! When the server dies, by any signal, SIGKILL and the OOM killer included, the kernel
//! re-parents all of them, at once, to the watchdog. The watchdog then stops every child it has
//! until the kernel says it has none (`ECHILD`): ground truth, with no need to read a marker
//! that a command can erase. A sweep by run marker ([`crate::sweep::leftovers`]) follows as a
//! second net. Meanwhile it is the session's heartbeat ([`crate::runs::heartbeat`]).
//!
//! The other way round: if the watchdog is killed (the host's SIGKILL lands on the pid it
//! started, which is the watchdog), the server gets [`WATCHDOG_DIED`] (`PR_SET_PDEATHSIG`),
//! kills every child it has at once, with no grace ([`stop_children`]), and ends. When stdin is not a terminal the server also leaves the watchdog's process group,
//! so a host that kills the whole group (the Python SDK does) reaches only the watchdog and the
//! server still gets to clean up. The one ending tracking does not cover: the watchdog and the
//! server killed with SIGKILL in the same instant (e.g. `pkill -9 agentty`), or the server killed
//! within milliseconds of the watchdog. Confined commands are then covered by the kernel where
//! the session has a PID namespace of its own ([`crate::namespace`]); other escapees go to init,
//! and the next agentty to start stops those that keep their run marker and descend from the
//! session ([`crate::sweep::dead_sessions`]).
//!
//! The host sees one process: the watchdog holds neither stdin nor stdout (the client must see
//! EOF when the server ends), forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to the server, and exits with the server's status once its children are gone.
//!
//! Why fork without exec: exec needs the binary's path (which a rebuild may have replaced) and a
//! second entry point; forked before any thread exists, both sides are ordinary single-threaded
//! copies that may allocate and read `/proc` freely. [`start`] refuses when threads already run.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, kill, signal, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, getpid, getppid, isatty, setpgid};

pub use crate::limits::WATCHDOG_GRACE_MS;

/// Pause between two scans.
const POLL_MS: u64 = 20;
/// How long stopping children may take before giving up on what is left (a process in
/// uninterruptible sleep cannot die until its I/O returns).
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// Signals the watchdog passes on to the server.
const FORWARDED: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// What the server receives when its watchdog dies (`PR_SET_PDEATHSIG`). The watchdog only
/// dies first when it was killed hard (any other signal it passes on), so the server must
/// stop everything at once and leave: nothing would catch what it leaves behind.
pub const WATCHDOG_DIED: i32 = libc::SIGUSR1;

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

/// The server's view of its watchdog (the parent process).
#[derive(Debug)]
pub struct Watchdog {
    pid: i32,
}

impl Watchdog {
    /// The watchdog's pid: the process the host started.
    pub fn pid(&self) -> i32 {
        self.pid
    }
}

/// Forks: the calling process becomes the watchdog and never returns from here; the child
/// returns as the server. `marker_prefix` names the run markers of this server, for the
/// second-net sweep, which stops only markers the session wrote in `runs` (see
/// [`crate::runs`]) when it has that record, any of its markers otherwise.
pub fn start(marker_prefix: &str, runs: Option<&Path>) -> Result<Watchdog, WatchdogError> {
    let threads = fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(WatchdogError::Threads(threads));
    }
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error().into());
    }
    // Blocked before the fork, so that neither a forwarded signal nor the server's death can
    // arrive before the watchdog waits for them; the child restores the old mask.
    let mut handled = SigSet::empty();
    for sig in FORWARDED {
        handled.add(sig);
    }
    handled.add(Signal::SIGCHLD);
    let mut old = SigSet::empty();
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&handled), Some(&mut old))?;
    let watchdog = getpid();
    // SAFETY: the process has exactly one thread (checked above), so the child is a complete
    // copy with no lock held by a thread that does not exist in it.
    match unsafe { fork() } {
        Err(e) => {
            let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
            Err(e.into())
        }
        Ok(ForkResult::Parent { child }) => watch(child, &handled, marker_prefix, runs),
        Ok(ForkResult::Child) => {
            sigprocmask(SigmaskHow::SIG_SETMASK, Some(&old), None)?;
            // SAFETY: prctl with PR_SET_PDEATHSIG only sets a flag on this process. The parent
            // is single-threaded, so "the thread that forked us died" means the watchdog died.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, WATCHDOG_DIED, 0, 0, 0) };
            if getppid() != watchdog {
                // The watchdog died before the flag was set: nothing would guard this server.
                std::process::exit(1);
            }
            // Out of the host's process group, so a kill of that group reaches the watchdog
            // alone and this server still cleans up. Not when stdin is a terminal: a process
            // outside the foreground group that reads the terminal is stopped (SIGTTIN).
            if !isatty(std::io::stdin()).unwrap_or(false) {
                let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
            }
            Ok(Watchdog {
                pid: watchdog.as_raw(),
            })
        }
    }
}

/// The watchdog's whole life: pass signals on, wait for the server to end, stop what it left,
/// and end as the server ended.
fn watch(server: Pid, handled: &SigSet, prefix: &str, runs: Option<&Path>) -> ! {
    // stdin and stdout are the MCP channel: the client must see them close when the server
    // ends, so the watchdog keeps no copy of either.
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
    let ended = loop {
        match wait_or_beat(handled) {
            Ok(Signal::SIGCHLD) => match waitpid(server, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, code)) => break Ok(code),
                Ok(WaitStatus::Signaled(_, sig, _)) => break Err(sig),
                Ok(_) => {}
                Err(_) => break Ok(1),
            },
            Ok(sig) => {
                let _ = kill(server, sig);
            }
            Err(_) => {}
        }
    };
    let grace = Duration::from_millis(WATCHDOG_GRACE_MS);
    let session = prefix.trim_end_matches('-');
    // Then only what descends from this session through this watchdog and carries a marker it
    // wrote down (`crate::sweep`): a copy in the user's environment (a command's own, planted in
    // `.envrc`) must not get the user's process stopped. With no record (it could not be
    // written), no marker is trusted: whatever a command started is a descendant that the
    // kernel re-parents here, or, confined, it dies with the session's PID namespace.
    let recorded = runs.and_then(|dir| crate::runs::recorded(dir, session));
    let found = stop_children(true, grace)
        + recorded.map_or(0, |record| crate::sweep::leftovers(session, record));
    if let Some(dir) = runs {
        crate::runs::forget(dir, session);
    }
    if found > 0 {
        tracing::warn!(
            found,
            "agentty watchdog: the server ended; stopped the processes it had left"
        );
    }
    match ended {
        Ok(code) => std::process::exit(code),
        Err(sig) => end_by(sig),
    }
}

/// Waits for one of the signals of `set`; meanwhile, every [`crate::runs::HEARTBEAT_MS`], marks
/// the session as alive in its record ([`crate::runs::heartbeat`]).
fn wait_or_beat(set: &SigSet) -> nix::Result<Signal> {
    let beat = Duration::from_millis(crate::runs::HEARTBEAT_MS);
    let timeout = libc::timespec {
        tv_sec: beat.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(beat.subsec_nanos() as i32),
    };
    loop {
        // SAFETY: sigtimedwait reads a signal set and a timespec through valid pointers and
        // writes no siginfo (null).
        let got =
            unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &raw const timeout) };
        if got >= 0 {
            return Signal::try_from(got);
        }
        match nix::errno::Errno::last() {
            nix::errno::Errno::EAGAIN => crate::runs::heartbeat(),
            nix::errno::Errno::EINTR => {}
            e => return Err(e),
        }
    }
}

/// Ends this process the way the server ended, so the host sees the same status.
fn end_by(sig: Signal) -> ! {
    // Re-raised when that ends the process without a core dump; otherwise the shell convention.
    if matches!(
        sig,
        Signal::SIGKILL
            | Signal::SIGTERM
            | Signal::SIGINT
            | Signal::SIGHUP
            | Signal::SIGPIPE
            | Signal::SIGUSR1
            | Signal::SIGUSR2
            | Signal::SIGALRM
    ) {
        // SAFETY: SIG_DFL installs no handler code.
        let _ = unsafe { signal(sig, SigHandler::SigDfl) };
        let mut set = SigSet::empty();
        set.add(sig);
        let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
        let _ = nix::sys::signal::raise(sig);
    }
    std::process::exit(128 + sig as i32)
}

/// Stops every child of this process until it has none: SIGTERM and SIGCONT, `grace`, then
/// SIGKILL rounds (at once when `grace` is zero). A killed child's own children are re-parented
/// here (this process is a subreaper), so each round reaches one generation further, until
/// nothing is left. With `reap`, it also collects them and stops only when the kernel says no
/// child is left (`ECHILD`); without, a reaper elsewhere collects them. Returns how many
/// processes it found.
pub fn stop_children(reap: bool, grace: Duration) -> usize {
    let me = std::process::id() as i32;
    let started = Instant::now();
    let poll = Duration::from_millis(if grace.is_zero() { 2 } else { POLL_MS });
    let mut seen = HashSet::new();
    loop {
        let mut any = false;
        if reap {
            loop {
                match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) => {
                        any = true;
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        let live = crate::tree::live_children_of(me);
        if live.is_empty() && !any {
            return seen.len();
        }
        if started.elapsed() > STOP_LIMIT {
            tracing::warn!(left = live.len(), "processes would not die; left them");
            return seen.len();
        }
        let kill_now = started.elapsed() >= grace;
        for pid in live {
            let pid_ = Pid::from_raw(pid);
            if kill_now {
                let _ = kill(pid_, Signal::SIGKILL);
            } else if seen.insert(pid) {
                let _ = kill(pid_, Signal::SIGTERM);
                let _ = kill(pid_, Signal::SIGCONT);
            }
            seen.insert(pid);
        }
        std::thread::sleep(poll);
    }
}

/// A name for the session this process starts: `<epoch seconds>-<pid>-<start ticks>`. The
/// seconds keep names in date order (they name the spill directory); pid and start ticks name
/// the watchdog exactly, so a later server can tell a dead session's leftovers from a live one's
/// ([`crate::sweep::dead_sessions`]).
pub fn session_name() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let pid = std::process::id();
    let ticks = crate::tree::start_ticks(pid as i32).unwrap_or(0);
    format!("{secs}-{pid}-{ticks}")
}

/// `doctor`'s line on how this machine keeps commands from outliving the server: it tries the
/// kernel feature the watchdog rests on, on the calling process.
pub fn describe() -> String {
    let mut on: libc::c_int = 0;
    // SAFETY: prctl sets a flag on this process, then writes one int through a valid pointer.
    let subreaper = unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_GET_CHILD_SUBREAPER,
                &mut on as *mut libc::c_int,
                0,
                0,
                0,
            ) == 0
    } && on == 1;
    if subreaper {
        "server end: watchdog and server are child subreapers: whatever a command started, \
         env -i and setsid escapees included, is stopped however the server ends; both killed \
         in the same instant (pkill -9 agentty): see the next line for confined commands; \
         otherwise the next start stops what kept its run marker"
            .to_owned()
    } else {
        "server end: no child subreaper on this kernel: only processes that keep the run marker \
         are stopped when the server is killed"
            .to_owned()
    }
}
