//! Exit statuses: each spawn watches its own child through a pidfd, and one reaper thread
//! collects everything else.
//!
//! agentty makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): a descendant that escaped
//! its command with `setsid` or a double fork is re-parented to the server instead of to init, so
//! it can still be found and stopped. Such orphans must be reaped too, which is the reaper
//! thread's job; it never touches a pid that a spawn registered as its own.
//!
//! The spawn's own child is watched with a pidfd registered in the caller's reactor, so the exit
//! arrives in the same wake-up as the end of its output, with no hop through another thread: on
//! a trivial command that hop is a measurable share of the whole call.
//!
//! A stop pins its leader ([`pin`]): while pinned, the leader is never reaped (its exit is still
//! observed, with `WNOWAIT`), so its pid, and with it the process group and session numbered
//! after it, cannot be reused by an unrelated process. That makes `kill(-leader)` certain for
//! the whole stop, whatever `/proc` shows at that instant. It matters: `pid_max` can be as low
//! as 32768, and a busy machine wraps it in minutes.
//!
//! The reaper is a plain thread that sweeps every [`SWEEP_INTERVAL`]: it outlives any one tokio
//! runtime (tests create many), and it is deliberately not woken by SIGCHLD, which fires on
//! every command's exit and would put its work on the hot path of every call.
//!
//! [`AfterStart`], the error of a set-up step that failed once the child had started, lives here
//! because [`ExitWatch::or_kill`] is what makes it; the spawn seam exports it under its own name.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock};

use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;

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

    /// The exit code, when the process exited rather than being ended by a signal.
    pub fn code(self) -> Option<i32> {
        match self {
            Exit::Code(code) => Some(code),
            Exit::Signal(_) => None,
        }
    }
}

/// "SIGKILL" for 9, and so on; "signal N" for numbers without a name.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_owned())
}

#[derive(Default)]
struct Registry {
    /// Children a spawn watches itself; the orphan sweep leaves them alone.
    owned: HashSet<i32>,
    /// Watches dropped before their child exited: the reaper reaps these on its next sweep.
    abandoned: Vec<(i32, OwnedFd)>,
    /// Children that must not be reaped yet (a stop is under way), with a count of pins.
    pinned: HashMap<i32, usize>,
    /// What a child's spawn let outlive it, each let go by the reaper's thread once its child
    /// is reaped ([`keep_until_reaped`]).
    kept: Vec<(i32, OwnedFd)>,
    /// Children that failed or were let go where no pidfd of the server's could be kept for
    /// them (a launcher's cloner, [`reap_failed`]; no fd left, [`watch_launched`]): the sweep
    /// opens one and abandons them. Nothing else reaps them meanwhile, so each pid is still its
    /// child's.
    failed_elsewhere: Vec<i32>,
}

/// How often orphans are looked for. An orphan that exited stays a zombie (no CPU, no memory
/// beyond its process table slot) at most this long; the hot path never pays for the sweep.
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();

/// Held shared by every spawn from before its clone until its pid is registered, and exclusive
/// by the orphan sweep: spawns on several threads run side by side, and the sweep never sees a
/// child that is not registered yet (it would take it for an orphan and could reap it).
static SPAWNS: RwLock<()> = RwLock::new(());
static STARTED: OnceLock<Result<(), String>> = OnceLock::new();

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts the reaper (idempotent). Call before the first spawn.
pub fn init() -> Result<(), String> {
    STARTED.get_or_init(start).clone()
}

fn start() -> Result<(), String> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    std::thread::Builder::new()
        .name("agentty-reaper".into())
        .spawn(move || {
            let _ = ready_tx.send(Ok(()));
            loop {
                sweep();
                // Here only, not in the sweeps a dropped watch makes on the caller's thread:
                // letting go of a copy of the mounts costs its holder the teardown.
                let reaped = registry().take_reaped_keeps();
                drop(reaped);
                std::thread::sleep(SWEEP_INTERVAL);
            }
        })
        .map_err(|e| format!("reaper thread: {e}"))?;
    ready_rx.recv().map_err(|e| format!("reaper start: {e}"))?
}

/// Keeps `what` open until `pid`, a spawned child, has been reaped, then closes it on the
/// reaper's thread after its next sweep: for what costs its last holder a lot to let go (a
/// spawn's copy of the mounts), which the child would otherwise pay at its exit, before its
/// exit is told. Past [`KEPT_MOST`] kept, the caller lets go of those reaped already itself.
pub(crate) fn keep_until_reaped(pid: i32, what: OwnedFd) {
    let mut reg = registry();
    reg.kept.push((pid, what));
    if reg.kept.len() > KEPT_MOST {
        let reaped = reg.take_reaped_keeps();
        drop(reg);
        drop(reaped);
    }
}

/// How many [`keep_until_reaped`] may hold between sweeps before its callers let go of those
/// whose child was reaped: a copy of the mounts is about 220 mounts here, and a burst of `pty`
/// calls makes hundreds in a sweep's interval.
const KEPT_MOST: usize = 16;

impl Registry {
    /// What was kept for children reaped since, taken out (to be closed once the lock is let go).
    fn take_reaped_keeps(&mut self) -> Vec<(i32, OwnedFd)> {
        let (reaped, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.kept)
            .into_iter()
            .partition(|(pid, _)| {
                !self.owned.contains(pid) && !self.abandoned.iter().any(|(p, _)| p == pid)
            });
        self.kept = kept;
        reaped
    }
}

/// [`sweep`], now (for tests elsewhere in the crate).
#[cfg(test)]
pub(crate) fn sweep_now() {
    sweep();
}

/// Reaps abandoned children and orphans; leaves registered children to their owners.
fn sweep() {
    let mut reg = registry();
    let Registry {
        abandoned,
        pinned,
        failed_elsewhere,
        ..
    } = &mut *reg;
    failed_elsewhere.retain(|&pid| {
        // SAFETY: pidfd_open takes a pid and flags; the fd it returns is ours.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: a fresh fd nobody else owns.
            abandoned.push((pid, unsafe {
                OwnedFd::from_raw_fd(fd as std::os::fd::RawFd)
            }));
        }
        // Kept for the next sweep unless it is gone (reaped already).
        fd < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    });
    abandoned.retain(|(pid, fd)| {
        if pinned.contains_key(pid) {
            return true;
        }
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
        let done = matches!(
            waitid(Id::PIDFd(fd.as_fd()), flags),
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) | Err(_)
        );
        if done {
            tracing::trace!(pid, "reaped an abandoned child");
        }
        !done
    });
    drop(reg);
    // No spawn is between its clone and its registration while this is held. Never waited
    // for: a spawn may be held up (a child's release of a file, which a command can make wait
    // on a pipe's lock), and a writer waiting would hold up every other spawn behind it
    // (review 28). Orphans wait for the next sweep then.
    let _no_spawn = match SPAWNS.try_write() {
        Ok(guard) => guard,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    let reg = registry();
    // Orphans are re-parented to the first live thread of the subreaper: the main thread.
    let main = std::process::id();
    let Ok(children) = std::fs::read_to_string(format!("/proc/self/task/{main}/children")) else {
        return;
    };
    for pid in children
        .split_ascii_whitespace()
        .filter_map(|s| s.parse::<i32>().ok())
    {
        if reg.owned.contains(&pid)
            || reg.abandoned.iter().any(|(p, _)| *p == pid)
            || reg.failed_elsewhere.contains(&pid)
            || crate::spawn::terminal_maker_pid() == Some(pid)
        {
            continue;
        }
        if let Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) =
            waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG))
        {
            tracing::debug!(pid, "reaped an orphan");
        }
    }
}

/// Runs `spawn` and registers the pid and pidfd it returns, with the orphan sweep held off
/// meanwhile ([`SPAWNS`]), so it can never reap a child before its watch exists; other spawns
/// go on at the same time. The pidfd comes from the clone itself (`CLONE_PIDFD`): when no fd
/// is left for it, the clone fails and nothing runs.
pub(crate) fn spawn_registered<T>(
    spawn: impl FnOnce() -> io::Result<(i32, OwnedFd, T)>,
) -> io::Result<(T, ExitWatch)> {
    init().map_err(io::Error::other)?;
    let no_sweep = SPAWNS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (pid, fd, value) = spawn()?;
    registry().owned.insert(pid);
    drop(no_sweep);
    Ok((
        value,
        ExitWatch {
            pid,
            fd: Some(fd),
            async_fd: None,
            exited: None,
        },
    ))
}

/// Reaps a child that failed before its `exec` (`pidfd` its) if it is done, else leaves it to
/// the reaper's next sweep: its exit may wait (its copies of the server's files are released as
/// it exits, and a command can make a pipe's release wait), and the spawn must not wait with
/// it (review 28). On a thread whose fd table is its own (a launcher's cloner), `pidfd` is not
/// the server's: the sweep opens one of its own for the child.
pub(crate) fn reap_failed(pid: i32, pidfd: OwnedFd) {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
    if matches!(
        waitid(Id::PIDFd(pidfd.as_fd()), flags),
        Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) | Err(_)
    ) {
        return;
    }
    if crate::spawn::own_table::on_this_thread() {
        drop(pidfd);
        registry().failed_elsewhere.push(pid);
    } else {
        registry().abandoned.push((pid, pidfd));
    }
}

/// Runs `spawn` on a launcher's cloner and registers the child it returns (by pid: its
/// `pidfd` may be in a table of the cloner's own, `spawn/own_table.rs`, and is let go here),
/// with the orphan sweep held off meanwhile, as [`spawn_registered`]. The server's thread that
/// answers for the cloner then watches it ([`watch_launched`]). Never starts the reaper's
/// thread (which would share the cloner's table): the spawn that handed the plan over did.
pub(crate) fn launched_registered(
    spawn: impl FnOnce() -> io::Result<(i32, OwnedFd)>,
) -> io::Result<i32> {
    match STARTED.get() {
        Some(Ok(())) => {}
        Some(Err(e)) => return Err(io::Error::other(e.clone())),
        None => return Err(io::Error::other("the reaper has not started")),
    }
    let no_sweep = SPAWNS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (pid, pidfd) = spawn()?;
    registry().owned.insert(pid);
    drop(no_sweep);
    drop(pidfd);
    Ok(pid)
}

/// The exit watch of `pid`, a child [`launched_registered`]: a pidfd of it opened here, in the
/// server's table. Nothing reaps a registered child but its watch, so `pid` is still that
/// child's. `room`, a slot held since before the child started, is let go for it where no fd
/// is left. Where none can be opened all the same (another thread took the slot), the child's
/// group is killed and the sweep reaps it: the error says it may have begun.
pub(crate) fn watch_launched(pid: i32, room: Option<OwnedFd>) -> io::Result<ExitWatch> {
    let open = || {
        // SAFETY: pidfd_open takes a pid and flags; the fd it returns is ours.
        unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) }
    };
    let mut fd = open();
    if fd < 0
        && matches!(
            io::Error::last_os_error().raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE)
        )
        && let Some(room) = room
    {
        drop(room);
        fd = open();
    }
    if fd < 0 {
        let error = io::Error::last_os_error();
        let _ = nix::sys::signal::killpg(Pid::from_raw(pid), nix::sys::signal::SIGKILL);
        let mut reg = registry();
        reg.owned.remove(&pid);
        reg.failed_elsewhere.push(pid);
        return Err(AfterStart::wrap(error));
    }
    Ok(ExitWatch {
        pid,
        // SAFETY: a fresh fd nobody else owns.
        fd: Some(unsafe { OwnedFd::from_raw_fd(fd as std::os::fd::RawFd) }),
        async_fd: None,
        exited: None,
    })
}

/// The children spawns started and that were not reaped yet (runs' leaders; orphans aside).
pub(crate) fn spawned() -> Vec<i32> {
    let reg = registry();
    reg.owned
        .iter()
        .copied()
        .chain(reg.abandoned.iter().map(|(pid, _)| *pid))
        .chain(reg.failed_elsewhere.iter().copied())
        .collect()
}

/// Whether `pid` is a child that a spawn watches (a run's leader, not an orphan).
pub(crate) fn is_owned(pid: i32) -> bool {
    let reg = registry();
    reg.owned.contains(&pid)
        || reg.abandoned.iter().any(|(p, _)| *p == pid)
        || reg.failed_elsewhere.contains(&pid)
}

/// Keeps a child from being reaped while it lives (see the module comment).
pub(crate) struct Pin(i32);

/// Pins `pid` if it is a spawned child not reaped yet; `None` once it has been reaped.
pub(crate) fn pin(pid: i32) -> Option<Pin> {
    let mut reg = registry();
    let unreaped = reg.owned.contains(&pid) || reg.abandoned.iter().any(|(p, _)| *p == pid);
    if !unreaped {
        return None;
    }
    *reg.pinned.entry(pid).or_default() += 1;
    Some(Pin(pid))
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut reg = registry();
        if let Some(count) = reg.pinned.get_mut(&self.0) {
            *count -= 1;
            if *count == 0 {
                reg.pinned.remove(&self.0);
            }
        }
        drop(reg);
        // An abandoned watch of this child may be waiting for the pin to go.
        sweep();
    }
}

/// An error met after the program was started (its exec had succeeded), while the server
/// set up the reading of its output: its process group was killed at once, but it may have
/// begun to run, so "nothing ran" would not be true. Carried inside an [`io::Error`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AfterStart(pub io::Error);

impl AfterStart {
    pub fn wrap(error: io::Error) -> io::Error {
        io::Error::new(error.kind(), AfterStart(error))
    }

    /// The error met after the start, when `error` is one.
    pub fn of(error: &io::Error) -> Option<&io::Error> {
        let inner = error.get_ref()?.downcast_ref::<AfterStart>()?;
        Some(&inner.0)
    }
}

/// The exit of one spawned child, owned by whoever runs it.
pub struct ExitWatch {
    pid: i32,
    fd: Option<OwnedFd>,
    async_fd: Option<AsyncFd<OwnedFd>>,
    /// The exit, once seen while the child was pinned (it stays a zombie until unpinned).
    exited: Option<Exit>,
}

impl ExitWatch {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// For a set-up step that failed right after the spawn: on `Err`, kills the child's whole
    /// process group at once, so nothing runs that no one supervises (the watch, once dropped,
    /// has the reaper reap it). Certain: while the watch holds the child unreaped, the group
    /// number is still its own. The error comes back as an [`AfterStart`]:
    /// the program may have begun.
    pub fn or_kill<T>(&self, result: io::Result<T>) -> io::Result<T> {
        if result.is_err()
            && self.exited.is_none()
            && (self.fd.is_some() || self.async_fd.is_some())
        {
            let _ = nix::sys::signal::killpg(Pid::from_raw(self.pid), nix::sys::signal::SIGKILL);
        }
        result.map_err(AfterStart::wrap)
    }

    /// Waits for the child to exit and reaps it (unless a stop has it pinned: then it is
    /// reaped once the watch is dropped and the pin gone). Must be called within a tokio runtime.
    pub async fn wait(&mut self) -> io::Result<Exit> {
        if let Some(exit) = self.exited {
            return Ok(exit);
        }
        if self.async_fd.is_none() {
            // A child that has exited already (a short command, whose end of output the caller
            // waited for first) is reaped without a round through the reactor.
            if let Some(exit) = self.try_reap()? {
                return Ok(exit);
            }
            let fd = self
                .fd
                .take()
                .ok_or_else(|| io::Error::other("already reaped"))?;
            // SAFETY: an OwnedFd is a valid open fd, owned by the AsyncFd until it is dropped or
            // taken back with into_inner, and it always reports the same raw fd.
            let registered =
                unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) };
            self.async_fd = Some(registered.map_err(io::Error::from)?);
        }
        loop {
            let Some(async_fd) = &self.async_fd else {
                return Err(io::Error::other("no pidfd"));
            };
            let mut guard = async_fd.readable().await?;
            let Some((exit, pinned)) = wait_now(self.pid, async_fd.get_ref().as_fd())? else {
                guard.clear_ready();
                continue;
            };
            drop(guard);
            return Ok(self.exited_as(exit, pinned));
        }
    }

    /// The exit, if the child has exited already (reaped, or kept while pinned); `None` while
    /// it runs. Asks the kernel directly, with no registration in the reactor.
    fn try_reap(&mut self) -> io::Result<Option<Exit>> {
        let Some(fd) = &self.fd else {
            return Err(io::Error::other("already reaped"));
        };
        Ok(wait_now(self.pid, fd.as_fd())?.map(|(exit, pinned)| self.exited_as(exit, pinned)))
    }

    /// Records `exit`: pinned, the child is still a zombie (reaped by the sweep once the watch
    /// is dropped and unpinned); otherwise it was reaped and the pidfd is let go.
    fn exited_as(&mut self, exit: Exit, pinned: bool) -> Exit {
        if pinned {
            self.exited = Some(exit);
        } else {
            self.async_fd = None;
            self.fd = None;
        }
        exit
    }
}

/// `waitid` on `pidfd` without blocking: the exit and whether the child is pinned (then left
/// a zombie, `WNOWAIT`), or `None` while it runs. A child reaped here leaves the registry.
fn wait_now(pid: i32, pidfd: std::os::fd::BorrowedFd<'_>) -> io::Result<Option<(Exit, bool)>> {
    let mut reg = registry();
    let pinned = reg.pinned.contains_key(&pid);
    let mut flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
    if pinned {
        flags |= WaitPidFlag::WNOWAIT;
    }
    let exit = match waitid(Id::PIDFd(pidfd), flags)? {
        WaitStatus::Exited(_, code) => Exit::Code(code),
        WaitStatus::Signaled(_, sig, _) => Exit::Signal(sig as i32),
        _ => return Ok(None),
    };
    if !pinned {
        reg.owned.remove(&pid);
    }
    Ok(Some((exit, pinned)))
}

impl Drop for ExitWatch {
    fn drop(&mut self) {
        let fd = match (self.async_fd.take(), self.fd.take()) {
            (Some(async_fd), _) => async_fd.into_inner(),
            (None, Some(fd)) => fd,
            (None, None) => return, // reaped
        };
        let mut reg = registry();
        reg.owned.remove(&self.pid);
        reg.abandoned.push((self.pid, fd));
        drop(reg);
        // The child may already be a zombie, with no SIGCHLD left to come.
        sweep();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;
    use std::time::Duration;

    fn exit_of(watch: &mut ExitWatch) -> io::Result<Exit> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        runtime.block_on(watch.wait())
    }

    /// Starts `sh -c 'exit <code>'` (std's child, never waited for by std): its pid and pidfd.
    fn sh_exit(code: i32) -> io::Result<(i32, OwnedFd)> {
        let child = std::process::Command::new("/bin/sh")
            .args(["-c", &format!("exit {code}")])
            .spawn()?;
        let pid = i32::try_from(child.id()).expect("a pid");
        // SAFETY: pidfd_open returns a fresh fd (or -1) that nothing else owns.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        assert!(fd >= 0, "pidfd_open: {}", io::Error::last_os_error());
        let fd = unsafe { OwnedFd::from_raw_fd(i32::try_from(fd).expect("an fd")) };
        Ok((pid, fd))
    }

    fn state(pid: i32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(") ")?.1.chars().next()
    }

    /// A child between its clone and its registration (a spawn under way, before its
    /// registration) looks like an orphan to the sweep. The sweep must leave it to its spawn:
    /// it skips the orphans while a spawn is under way (it never waits for one either: a spawn
    /// held up would hold every other behind a waiting sweep, review 28).
    #[test]
    fn the_sweep_leaves_a_child_whose_spawn_has_not_registered_it_yet() {
        init().unwrap();
        let ((), mut watch) = spawn_registered(|| {
            let (pid, fd) = sh_exit(7)?;
            while state(pid) != Some('Z') {
                std::thread::sleep(Duration::from_millis(1));
            }
            let sweeper = std::thread::spawn(sweep);
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !sweeper.is_finished() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the sweep waits for a spawn"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            sweeper.join().unwrap();
            assert_eq!(
                state(pid),
                Some('Z'),
                "the sweep reaped a child not registered yet"
            );
            Ok((pid, fd, ()))
        })
        .unwrap();
        assert_eq!(exit_of(&mut watch).unwrap(), Exit::Code(7));
    }

    /// A registered `sh -c 'exit <code>'`, once it is a zombie.
    fn exited_child(code: i32) -> (i32, ExitWatch) {
        init().unwrap();
        let ((), watch) = spawn_registered(|| {
            let (pid, fd) = sh_exit(code)?;
            Ok((pid, fd, ()))
        })
        .unwrap();
        while state(watch.pid()) != Some('Z') {
            std::thread::sleep(Duration::from_millis(1));
        }
        (watch.pid(), watch)
    }

    /// A runtime with no reactor: registering a pidfd there panics, so a wait that returns
    /// asked the kernel directly.
    fn without_reactor() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_child_that_has_exited_is_reaped_without_the_reactor() {
        let (pid, mut watch) = exited_child(5);
        let exit = without_reactor().block_on(watch.wait()).unwrap();
        assert_eq!(exit, Exit::Code(5));
        assert_eq!(state(pid), None, "the child was reaped");
        assert!(!is_owned(pid));
    }

    #[test]
    fn a_pinned_child_that_has_exited_is_left_a_zombie_until_the_pin_goes() {
        let (pid, mut watch) = exited_child(6);
        let pin = pin(pid).expect("not reaped yet");
        let exit = without_reactor().block_on(watch.wait()).unwrap();
        assert_eq!(exit, Exit::Code(6));
        assert_eq!(state(pid), Some('Z'), "a pinned child keeps its pid");
        // Asked again, the watch answers from what it saw.
        assert_eq!(
            without_reactor().block_on(watch.wait()).unwrap(),
            Exit::Code(6)
        );
        drop(watch);
        drop(pin);
        let mut tries = 0;
        while state(pid).is_some() && tries < 2000 {
            std::thread::sleep(Duration::from_millis(1));
            tries += 1;
        }
        assert_eq!(state(pid), None, "reaped once unpinned");
    }
}
