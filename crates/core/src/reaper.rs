//! The one owner of child exit statuses.
//!
//! agentty makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): a descendant that escaped
//! its command with `setsid` or a double fork is re-parented to the server instead of to init, so
//! it can still be found and stopped, and its exit status lands here. Because orphans must be
//! reaped too, nobody else may call `waitpid`: this module waits for *any* child on every
//! SIGCHLD and hands each status to the spawn that registered that pid. Unknown pids are
//! orphans; their status is discarded.
//!
//! The loop runs on its own thread with its own small runtime, so it outlives any one tokio
//! runtime (tests create many) and never competes with request handling.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use nix::errno::Errno;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::sync::oneshot;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

/// "SIGKILL" for 9, and so on; "signal N" for numbers without a name.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_owned())
}

type Waiters = HashMap<i32, oneshot::Sender<Exit>>;

struct Reaper {
    waiters: Mutex<Waiters>,
}

static REAPER: OnceLock<Result<Reaper, String>> = OnceLock::new();

fn reaper() -> Result<&'static Reaper, String> {
    REAPER.get_or_init(start).as_ref().map_err(Clone::clone)
}

fn start() -> Result<Reaper, String> {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    std::thread::Builder::new()
        .name("agentty-reaper".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("reaper runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                use tokio::signal::unix::{SignalKind, signal};
                let mut sigchld = match signal(SignalKind::child()) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("SIGCHLD handler: {e}")));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                loop {
                    reap_all();
                    if sigchld.recv().await.is_none() {
                        return;
                    }
                }
            });
        })
        .map_err(|e| format!("reaper thread: {e}"))?;
    ready_rx
        .recv()
        .map_err(|e| format!("reaper start: {e}"))??;
    Ok(Reaper {
        waiters: Mutex::new(HashMap::new()),
    })
}

fn reap_all() {
    loop {
        let (pid, exit) = match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => (pid, Exit::Code(code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, Exit::Signal(sig as i32)),
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return,
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(e) => {
                tracing::warn!("waitpid: {e}");
                return;
            }
        };
        // The registry may not exist yet only while `start` is still running, before any spawn.
        if let Some(Ok(reaper)) = REAPER.get()
            && let Some(tx) = lock(&reaper.waiters).remove(&pid.as_raw())
        {
            let _ = tx.send(exit);
        } else {
            tracing::debug!(pid = pid.as_raw(), ?exit, "reaped an orphan");
        }
    }
}

fn lock(waiters: &Mutex<Waiters>) -> MutexGuard<'_, Waiters> {
    waiters
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts the reaper (idempotent). Call before the first spawn.
pub fn init() -> Result<(), String> {
    reaper().map(|_| ())
}

/// Runs `spawn` while holding the registry lock, then registers the pid it returns, so a child
/// that exits at once cannot be reaped before its waiter exists.
pub(crate) fn spawn_registered<T>(
    spawn: impl FnOnce() -> std::io::Result<(i32, T)>,
) -> std::io::Result<(T, oneshot::Receiver<Exit>)> {
    let reaper = reaper().map_err(std::io::Error::other)?;
    let mut waiters = lock(&reaper.waiters);
    let (pid, value) = spawn()?;
    let (tx, rx) = oneshot::channel();
    waiters.insert(pid, tx);
    Ok((value, rx))
}
