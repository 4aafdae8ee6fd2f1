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

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// How long the end of a session waits for the session init (and so every process of the
/// namespace) to be gone; a process in uninterruptible sleep cannot die until its I/O returns.
const END_WAIT: Duration = Duration::from_secs(10);

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
    sealed: usize,
}

static NAMESPACE: OnceLock<Result<SessionNamespace, String>> = OnceLock::new();

/// The session's namespace, once [`start`] made one.
pub(crate) fn get() -> Option<&'static SessionNamespace> {
    NAMESPACE.get().and_then(|made| made.as_ref().ok())
}

fn check(rc: libc::c_int) -> io::Result<()> {
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

/// Starts the session init (see the module comment). Call once, in the server, while the
/// process has one thread. In the session's mount namespace each of `read_only` becomes a
/// read-only bind mount of itself (extracted package sources a confined command must not
/// change; a path that cannot be is skipped), and each of `hidden` is covered by an empty
/// read-only directory (the server's records, see `crate::runs`; one that cannot be fails the
/// start). Returns how many paths are read-only; `Err` says why there is no
/// namespace: confined commands then run in the server's namespaces, tracked by run marker and
/// subreaper only.
pub fn start(read_only: &[PathBuf], hidden: &[PathBuf]) -> Result<usize, String> {
    NAMESPACE
        .get_or_init(|| create(read_only, hidden).map_err(|e| why(&e)))
        .as_ref()
        .map(|ns| ns.sealed)
        .map_err(Clone::clone)
}

fn why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => "needs CAP_SYS_ADMIN".to_owned(),
        _ => e.to_string(),
    }
}

fn create(read_only: &[PathBuf], hidden: &[PathBuf]) -> io::Result<SessionNamespace> {
    let threads = std::fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(io::Error::other(format!(
            "must start before any thread exists ({threads} threads run)"
        )));
    }
    let host = open(c"/proc/self/ns/pid")?;
    let (alive_read, alive) = pipe()?;
    let (ready_read, ready_write) = pipe()?;
    let c_paths = |paths: &[PathBuf]| -> Vec<CString> {
        paths
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
            .collect()
    };
    let (read_only, hidden) = (c_paths(read_only), c_paths(hidden));
    // SAFETY: unshare(CLONE_NEWPID) only changes where this (only) thread's next child goes.
    check(unsafe { libc::unshare(libc::CLONE_NEWPID) })?;
    // SAFETY: one thread (checked above): the child is a complete copy of this process.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop((alive, ready_read));
        session_init(alive_read, ready_write, &read_only, &hidden);
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
    // A status byte (0, or the errno that stopped it), then how many paths it made read-only.
    let mut ready = [0u8; 5];
    // SAFETY: read into a buffer of the size given from a pipe this process owns; the init
    // writes all five bytes in one write, well under the pipe's atomic size.
    let got = unsafe { libc::read(ready_read.as_raw_fd(), ready.as_mut_ptr().cast(), 5) };
    // SAFETY: pidfd_open on the child this process just forked and has not reaped.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if got != 5 || ready[0] != 0 || pidfd < 0 {
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
    let sealed = u32::from_ne_bytes([ready[1], ready[2], ready[3], ready[4]]) as usize;
    Ok(SessionNamespace {
        init_pid: pid,
        init,
        host,
        _alive: alive,
        sealed,
    })
}

/// The session init: pid 1 of the new namespace. Mounts its `/proc`, makes `read_only` so,
/// says so, then reaps the orphans the namespace hands it until the server is gone. Never
/// returns.
fn session_init(alive: OwnedFd, ready: OwnedFd, read_only: &[CString], hidden: &[CString]) -> ! {
    // SAFETY (whole function): this is a single-threaded forked child; plain system calls on
    // fds it owns and on constant strings.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::prctl(libc::PR_SET_NAME, c"agentty-init".as_ptr(), 0, 0, 0);
        let mounted = mount_own_proc().and_then(|()| hidden.iter().try_for_each(|p| hide(p)));
        let status = mounted.as_ref().map_or_else(
            |e| u8::try_from(e.raw_os_error().unwrap_or(libc::EIO)).unwrap_or(u8::MAX),
            |()| 0,
        );
        let sealed = if mounted.is_ok() {
            read_only.iter().filter(|path| seal(path).is_ok()).count()
        } else {
            0
        };
        let mut report = [status, 0, 0, 0, 0];
        report[1..].copy_from_slice(&u32::try_from(sealed).unwrap_or(u32::MAX).to_ne_bytes());
        libc::write(ready.as_raw_fd(), report.as_ptr().cast(), report.len());
        drop(ready);
        if mounted.is_err() {
            libc::_exit(1);
        }
        let alive = keep_only(alive.as_raw_fd());
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut chld);
        libc::sigaddset(&raw mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const chld, std::ptr::null_mut());
        let signals = libc::signalfd(-1, &raw const chld, libc::SFD_CLOEXEC);
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: alive,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: signals,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let n = libc::poll(fds.as_mut_ptr(), 2, if signals < 0 { 200 } else { -1 });
            if n > 0 && fds[0].revents != 0 {
                // The server is gone (EOF): leaving takes every process of the namespace along.
                libc::_exit(0);
            }
            if fds[1].revents != 0 {
                let mut info = [0u8; 128];
                libc::read(signals, info.as_mut_ptr().cast(), info.len());
            }
            while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
        }
    }
}

/// A mount namespace of the session init's own (a copy of the server's) whose `/proc` shows the
/// new PID namespace. Changes made here do not reach the server's namespace.
fn mount_own_proc() -> io::Result<()> {
    // SAFETY: plain system calls on constant, NUL-terminated strings.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS))?;
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ))
    }
}

/// Makes `path` a read-only bind mount of itself, in the session's mount namespace only.
fn seal(path: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: plain system calls on a NUL-terminated path.
    unsafe {
        check(libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            std::ptr::null(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
            std::ptr::null(),
        ))
    }
}

/// Covers `path` with an empty, read-only directory, in the session's mount namespace only.
fn hide(path: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: plain system calls on NUL-terminated strings.
    unsafe {
        check(libc::mount(
            c"tmpfs".as_ptr(),
            path.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"size=4k,mode=0500".as_ptr().cast(),
        ))
    }
}

/// How many extracted package sources are read-only to confined commands, when the session has
/// its namespace.
pub fn sealed() -> Option<usize> {
    get().map(|ns| ns.sealed)
}

/// Closes every fd but `keep`, with stdin, stdout and stderr on `/dev/null`: the session init
/// must hold neither the client's pipes (the client sees EOF when the server ends) nor anything
/// else of the server's. Returns the fd `keep` now has.
fn keep_only(keep: RawFd) -> RawFd {
    // SAFETY: plain system calls on fds of this single-threaded process.
    unsafe {
        // Above stdio first, so that putting /dev/null there cannot replace it.
        let kept = libc::fcntl(keep, libc::F_DUPFD_CLOEXEC, 3);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            if null >= 0 {
                libc::dup2(null, fd);
            }
        }
        if kept > 3 {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                (kept - 1) as libc::c_uint,
                0u32,
            );
        }
        libc::syscall(
            libc::SYS_close_range,
            (kept + 1) as libc::c_uint,
            libc::c_uint::MAX,
            0u32,
        );
        kept
    }
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
        check(unsafe { libc::setns(self.init.as_raw_fd(), libc::CLONE_NEWPID) })?;
        Ok(Entered { namespace: self })
    }
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
        let mut fd = libc::pollfd {
            fd: ns.init.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        libc::poll(&raw mut fd, 1, END_WAIT.as_millis() as libc::c_int);
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
