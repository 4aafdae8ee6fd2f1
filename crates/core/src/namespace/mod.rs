//! The session's process namespace: nothing a confined command starts outlives the server, by
//! the kernel's word rather than by tracking (docs/BEHAVIOUR.md §3).
//!
//! Tracking (run markers, subreapers, the watchdog) misses one case: a command's descendant
//! that wiped its environment (`env -i`) and double-forked, when the server and the watchdog
//! are killed in the same instant (`pkill -9 agentty`). The kernel has a mechanism that cannot
//! miss: when the init (pid 1) of a PID namespace dies, every process in that namespace is
//! killed with it. So where agentty may create one (`CAP_SYS_ADMIN`: root, as in most
//! containers), the server starts, once at start-up while it has one thread, a small process,
//! the **session init**, that is pid 1 of a new PID namespace, and starts every confined command
//! inside that namespace:
//!
//! ```text
//! watchdog ── server ── session init (pid 1 of the session's namespace; reaps orphans)
//!                  └── confined commands (in that namespace) ── their escapees …
//! ```
//!
//! The session init dies with the server however the server dies: `PR_SET_PDEATHSIG` (SIGKILL)
//! for any death of the server, SIGKILL and the OOM killer included, and the end of a pipe only
//! the server holds as a second net; the server also kills it when a session ends. A confined
//! command cannot kill it: Landlock scopes its signals to its own tree, and the kernel ignores
//! what a namespace's own processes send to its init.
//!
//! `/proc` follows the namespace: the session init enters a mount namespace of its own (a copy
//! of the server's, so the session's private `/dev/pts` is there too) with `/proc` mounted for the
//! new PID namespace, and each confined command enters it before its sandbox. A pid a command
//! reads from `ps` or `pgrep` is then one `kill` can use. The consequence, said in the README:
//! confined commands see the session's processes only.
//!
//! The server itself stays in the host's namespaces: it reads the host's `/proc` for the pids
//! `clone` gives it. Its spawning thread enters the session's PID namespace only around the
//! clone of a confined command (`setns(CLONE_NEWPID)` sets where the thread's next child goes)
//! and leaves it at once: a thread whose children would go to another PID namespace cannot
//! start threads. Unconfined commands (`auto` mode, an approved escalation) stay in the host's
//! namespaces, where `ps` and `kill` reach the user's processes, and are tracked as before.

mod init;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// How long the end of a session waits for the session init (and so every process of the
/// namespace) to be gone; a process in uninterruptible sleep cannot die until its I/O returns.
const END_WAIT: Duration = Duration::from_secs(10);
/// How long start-up waits for the session init to report (a mount on a hung network file
/// system must not hang the server).
const READY_WAIT: Duration = Duration::from_secs(10);
/// The session init's report: a status byte, then two counts (`u32`, native order).
const REPORT_BYTES: usize = 9;

/// What the session's mount namespace changes for confined commands.
#[derive(Debug, Default, Clone)]
pub struct Mounts {
    /// Each becomes a read-only copy of itself (extracted package sources; one that cannot be
    /// is skipped).
    pub read_only: Vec<PathBuf>,
    /// Each becomes a copy of itself, so it cannot be renamed or removed (the directories
    /// above `read_only`'s, parents first).
    pub pinned: Vec<PathBuf>,
    /// Each is covered: a directory by an empty read-only one (the server's records of runs),
    /// a file by `/dev/null` (the HTTP token file).
    pub hidden: Vec<PathBuf>,
    /// Each, a file or a directory, becomes a read-only copy of itself, like `read_only`, and
    /// is counted apart: the paths that run code later (`.git/hooks`, `.git/config`, rc files;
    /// the sandbox's `protected.rs`). Their renameable parents are in `pinned`.
    pub protected: Vec<PathBuf>,
}

/// What the session init made read-only.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// How many of [`Mounts::read_only`] are read-only.
    pub sealed: usize,
    /// How many of [`Mounts::protected`] are read-only.
    pub protected: usize,
}

/// The session's PID namespace, as the server holds it.
#[derive(Debug)]
pub(crate) struct SessionNamespace {
    /// The session init's pid, in the server's (host) namespace.
    init_pid: i32,
    /// A pidfd of the session init: `setns` into its namespaces, and its death is readable.
    init: OwnedFd,
    /// The server's own PID namespace, to return the spawning thread to.
    host: OwnedFd,
    /// The pipe's write end: the session init leaves when it reads EOF.
    _alive: OwnedFd,
    /// How many of the paths asked to be read-only are.
    started: Started,
}

static NAMESPACE: OnceLock<Result<SessionNamespace, String>> = OnceLock::new();

/// The session's namespace, once [`start`] made one.
pub(crate) fn get() -> Option<&'static SessionNamespace> {
    NAMESPACE.get().and_then(|made| made.as_ref().ok())
}

pub(crate) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fresh fds into the array on success; nothing else owns them.
    unsafe {
        check(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC))?;
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

fn open(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: open on a NUL-terminated path; the fd returned is fresh.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Starts the session init (see the module comment) with `mounts` made in the session's mount
/// namespace. Call once, in the server, while the process has one thread. Returns how many of
/// the paths asked to be read-only are; `Err` says why there is no namespace: confined commands
/// then run in the server's namespaces, tracked by run marker and subreaper only.
pub fn start(mounts: &Mounts) -> Result<Started, String> {
    NAMESPACE
        .get_or_init(|| create(mounts).map_err(|e| why(&e)))
        .as_ref()
        .map(|ns| ns.started)
        .map_err(Clone::clone)
}

/// What [`start`] made, when it was called: `None` before (or in a process that never calls
/// it, such as `doctor`).
pub fn started() -> Option<Result<Started, String>> {
    NAMESPACE
        .get()
        .map(|made| made.as_ref().map(|ns| ns.started).map_err(Clone::clone))
}

fn why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => "needs CAP_SYS_ADMIN".to_owned(),
        _ => e.to_string(),
    }
}

fn create(mounts: &Mounts) -> io::Result<SessionNamespace> {
    let threads = std::fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(io::Error::other(format!(
            "must start before any thread exists ({threads} threads run)"
        )));
    }
    let host = open(c"/proc/self/ns/pid")?;
    let (alive_read, alive) = pipe()?;
    let (ready_read, ready_write) = pipe()?;
    let mounts = init::CMounts::new(mounts);
    // SAFETY: unshare(CLONE_NEWPID) only changes where this (only) thread's next child goes.
    check(unsafe { libc::unshare(libc::CLONE_NEWPID) })?;
    // SAFETY: one thread (checked above): the child is a complete copy of this process.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop((alive, ready_read));
        init::run(alive_read, ready_write, &mounts);
    }
    let forked = io::Error::last_os_error();
    // Back to the host namespace for every later child and thread, whatever happened; a
    // thread could not be started otherwise, so this failing ends the server.
    // SAFETY: setns on an fd of this process's own PID namespace.
    if unsafe { libc::setns(host.as_raw_fd(), libc::CLONE_NEWPID) } != 0 {
        eprintln!(
            "agentty: cannot return to its own PID namespace: {}",
            io::Error::last_os_error()
        );
        std::process::exit(1);
    }
    if pid < 0 {
        return Err(forked);
    }
    drop((alive_read, ready_write));
    // A status byte (0, or the errno that stopped it), then how many paths it made read-only:
    // of the package sources, then of the protected paths.
    let mut ready = [0u8; REPORT_BYTES];
    let mut waiting = libc::pollfd {
        fd: ready_read.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd, then read into a buffer of the size given from a pipe this
    // process owns; the init writes the whole report in one write, under the pipe's atomic size.
    let got = unsafe {
        if libc::poll(&raw mut waiting, 1, READY_WAIT.as_millis() as libc::c_int) == 1 {
            libc::read(
                ready_read.as_raw_fd(),
                ready.as_mut_ptr().cast(),
                REPORT_BYTES,
            )
        } else {
            -1
        }
    };
    // SAFETY: pidfd_open on the child this process just forked and has not reaped.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if got != REPORT_BYTES as isize || ready[0] != 0 || pidfd < 0 {
        let error = if got >= 1 && ready[0] != 0 {
            io::Error::from_raw_os_error(i32::from(ready[0]))
        } else {
            io::Error::other("the session init did not start")
        };
        // SAFETY: kill and waitpid on the child forked above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        return Err(error);
    }
    // SAFETY: a fresh pidfd, owned by nobody else.
    let init = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let count = |at: usize| {
        u32::from_ne_bytes([ready[at], ready[at + 1], ready[at + 2], ready[at + 3]]) as usize
    };
    Ok(SessionNamespace {
        init_pid: pid,
        init,
        host,
        _alive: alive,
        started: Started {
            sealed: count(1),
            protected: count(5),
        },
    })
}

impl SessionNamespace {
    /// The session init's pidfd: a confined child enters its mount namespace with it.
    pub(crate) fn init_fd(&self) -> RawFd {
        self.init.as_raw_fd()
    }

    /// Makes the calling thread's next child start in the session's PID namespace, until the
    /// guard is dropped. Nothing but that one clone may happen in between.
    pub(crate) fn enter(&self) -> io::Result<Entered<'_>> {
        // SAFETY: setns with a pidfd and CLONE_NEWPID changes only where this thread's
        // children go.
        check(unsafe { libc::setns(self.init.as_raw_fd(), libc::CLONE_NEWPID) })
            .map_err(|e| if self.init_gone() { ended() } else { e })?;
        Ok(Entered { namespace: self })
    }

    /// Whether the session init has exited (its pidfd reads readable then).
    pub(crate) fn init_gone(&self) -> bool {
        let mut fd = libc::pollfd {
            fd: self.init.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd, no wait.
        unsafe { libc::poll(&raw mut fd, 1, 0) == 1 }
    }
}

/// Why a confined command cannot start once the session init is gone.
pub(crate) fn ended() -> io::Error {
    io::Error::other(
        "the session's PID namespace has ended (its init process was killed); restart agentty",
    )
}

/// The spawning thread is in the session's PID namespace (for its children) while this lives.
pub(crate) struct Entered<'a> {
    namespace: &'a SessionNamespace,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        // SAFETY: setns on an fd of the server's own PID namespace.
        if unsafe { libc::setns(self.namespace.host.as_raw_fd(), libc::CLONE_NEWPID) } != 0 {
            // This thread could no longer start threads; nothing can run correctly after.
            eprintln!(
                "agentty: cannot return to its own PID namespace: {}",
                io::Error::last_os_error()
            );
            std::process::abort();
        }
    }
}

/// Ends the session's namespace: kills the session init, which takes every process of the
/// namespace with it, and waits (bounded) until the kernel has them all gone. Returns whether
/// there was a namespace to end.
pub fn end() -> bool {
    let Some(ns) = get() else {
        return false;
    };
    // SAFETY: pidfd_send_signal and poll on the pidfd this process holds.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            ns.init.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        );
    }
    // The init's exit waits for every process of the namespace to be reaped, this server's own
    // children there too (their parent is outside): reap what is left while waiting. The
    // session is over, so no watch is waiting for these.
    let deadline = std::time::Instant::now() + END_WAIT;
    while !ns.init_gone() && std::time::Instant::now() < deadline {
        // SAFETY: waitpid for any child, without waiting.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The session init's pid, when there is one: it is the server's child but none of its
/// commands'.
pub fn init_pid() -> Option<i32> {
    get().map(|ns| ns.init_pid)
}

/// Whether confined commands get a PID namespace of the session's own: what [`start`] did, or,
/// where it was not called (`doctor`), whether the namespaces can be made here, tried on a
/// short-lived thread whose namespaces end with it.
pub fn available() -> Result<(), String> {
    if let Some(made) = NAMESPACE.get() {
        return made.as_ref().map(drop).map_err(Clone::clone);
    }
    std::thread::Builder::new()
        .name("agentty-namespace-check".into())
        .spawn(|| {
            // SAFETY: unshare changes only this short-lived thread's namespaces.
            check(unsafe { libc::unshare(libc::CLONE_NEWPID | libc::CLONE_NEWNS) })
        })
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|_| "the check panicked".to_owned())?
        .map_err(|e| why(&e))
}

/// `doctor`'s line on how the end of a session reaches what confined commands started.
pub fn describe(available: &Result<(), String>) -> String {
    match available {
        Ok(()) => "confined commands' processes: in a PID namespace of the session's own; the \
                   kernel ends them all with the server, however it ends (ps shows them only)"
            .to_owned(),
        Err(why) => format!(
            "confined commands' processes: tracked by run marker and subreaper (a PID namespace \
             of the session's own {why})"
        ),
    }
}
