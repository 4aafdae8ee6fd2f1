//! Terminals of a spawn's own without `CAP_SYS_ADMIN`: devpts instances made by a helper
//! process in a user namespace of its own, where it holds that capability.
//!
//! A devpts instance may be made by whoever has `CAP_SYS_ADMIN` over the mount namespace it is
//! made in, and a user namespace gives it to anyone the kernel lets make one (Debian, Fedora and
//! Arch do; Ubuntu's AppArmor may not). A server of one thread could make one itself, but the
//! server runs many, and a process of many threads cannot enter a user namespace. So the first
//! PTY spawn that needs it forks a helper, the *maker*: it enters a user namespace and a mount
//! namespace of its own (its own id mapped to itself, nothing else), and for each request makes
//! a new instance (`fsopen("devpts")`, `newinstance`, `fsmount`) and hands the detached mount
//! back over a socket. The server opens the terminal through it as with the capability
//! (`terminals.rs` `OwnDevpts::open_pair`).
//!
//! The instance is mounted nowhere: the server cannot mount in its own namespace, and putting
//! the command in the maker's would show every file and process of another user as `nobody`.
//! So no path names the terminal: no other spawn's command can open it, and the command's own
//! links name it `/0` (`ttyname` fails: `tty` says "not a tty"; `/dev/tty` works, it is the
//! controlling terminal). A confined command gets a write rule on the instance's root as with
//! the capability, so `> /dev/stderr` works; reading `/dev/stdin` again by path does not where
//! paths are kept from reads (that layer has no rule there).
//!
//! The maker is a fork of the server, so it runs plain system calls only, on what was made
//! before the fork. It is forked from a thread whose fd table is its own and holds the maker's
//! socket alone (`own_table.rs`, Linux 6.9), so it copies none of the server's files, whose
//! last reference it could otherwise be, its close then waiting on a pipe's lock a command
//! holds. (Where the kernel has no `PIDFD_THREAD` it is forked as before, from a copy of the
//! server's table.) It closes every fd but its socket (a copy of a client's connection would
//! keep it open) and puts `/dev/null` on its stdio. It ends when the server's end of the socket
//! closes. It holds no secret and no file of the session's: only its socket.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

use super::own_table;
use crate::namespace::control;

/// A request: any one byte.
const REQUEST: [u8; 1] = [1];

/// How long the server waits on the maker (its start, a request, its answer) before it takes it
/// for stuck (stopped by a signal from outside the sandbox), ends it and starts another: an
/// instance takes it about 50 µs, and the wait holds the runtime's worker.
const MAKER_WAIT: libc::timeval = libc::timeval {
    tv_sec: 1,
    tv_usec: 0,
};

/// The maker running, and how to ask it.
struct Maker {
    /// Its pid, which its pidfd keeps its own until it is reaped.
    pid: libc::pid_t,
    socket: OwnedFd,
    /// Its pidfd: it is signalled and waited for through it, never by a pid used again.
    pidfd: OwnedFd,
}

/// The maker once started; `Err` says why there is none (and none is tried again).
static MAKER: Mutex<Option<Result<Maker, String>>> = Mutex::new(None);

/// Whether terminals of a spawn's own can be made this way here: starts the maker if it has not
/// been yet. `Err` says why not.
pub(super) fn available() -> Result<(), String> {
    let mut maker = MAKER.lock().unwrap_or_else(PoisonError::into_inner);
    started(&mut maker).map(|_| ())
}

/// A new devpts instance as a detached mount, from the maker. A maker that went away (killed) is
/// started again once.
pub(super) fn make() -> io::Result<OwnedFd> {
    let mut maker = MAKER.lock().unwrap_or_else(PoisonError::into_inner);
    let asked = started(&mut maker).map_err(io::Error::other)?;
    match ask(asked) {
        Ok(answer) => answer,
        Err(_) => {
            // Gone (killed), or stuck (stopped): ended, and another started.
            if let Some(Ok(gone)) = maker.take() {
                end(gone);
            }
            ask(started(&mut maker).map_err(io::Error::other)?)?
        }
    }
}

/// The running maker's pid (0: none), set once it started and cleared as it is ended: read
/// without the maker's lock (the reaper's sweep, the sealed-entry checks).
static MAKER_PID: AtomicI32 = AtomicI32::new(0);

/// The maker's pid, if one runs: agentty's own process, which runs nothing of a command's (a
/// child of the server's main thread once the thread that forked it has ended: no orphan). The
/// reaper's sweep leaves it alone, so a maker that ended stays a zombie until [`end`] reaps it
/// and its pid is never another process's meanwhile.
pub(crate) fn maker_pid() -> Option<i32> {
    Some(MAKER_PID.load(Ordering::Acquire)).filter(|&pid| pid != 0)
}

/// Ends the maker, if one runs (the server's shutdown): its socket closed, it is reaped.
pub fn end_maker() {
    let mut maker = MAKER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(Ok(running)) = maker.take() {
        end(running);
    }
}

/// The maker, started at the first ask. Why it could not be is kept, and said at every ask
/// after, unless it may pass (no thread, process, fd or memory at that moment): then the next
/// ask tries again (review 34: a moment's lack at the first terminal spawn left every later one
/// without a terminal of its own).
fn started(maker: &mut Option<Result<Maker, String>>) -> Result<&Maker, String> {
    if maker.is_none() {
        match start() {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EAGAIN | libc::ENOMEM | libc::EMFILE | libc::ENFILE)
                ) =>
            {
                return Err(why(&e));
            }
            made => *maker = Some(made.map_err(|e| why(&e))),
        }
    }
    maker.as_ref().map_or_else(
        || Err("no terminal maker".to_owned()),
        |m| m.as_ref().map_err(Clone::clone),
    )
}

fn why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => {
            "no capability, and user namespaces are not allowed here".to_owned()
        }
        Some(libc::ENOSPC) => "no more user namespaces allowed (user.max_user_namespaces)".into(),
        _ => e.to_string(),
    }
}

/// The maker's answer to one request: an instance's mount, or the error it could not make
/// one with (passed on: another maker would meet it too). `Err` when it did not answer: it
/// is gone, or stuck past [`MAKER_WAIT`].
fn ask(maker: &Maker) -> io::Result<io::Result<OwnedFd>> {
    control::send(maker.socket.as_raw_fd(), &REQUEST, None)?;
    let mut status = [0u8; 1];
    match control::receive(maker.socket.as_raw_fd(), &mut status)? {
        (1, Some(mount)) if status[0] == 0 => Ok(Ok(mount)),
        (1, _) if status[0] != 0 => Ok(Err(io::Error::from_raw_os_error(i32::from(status[0])))),
        _ => Err(io::Error::other("the terminal maker went away")),
    }
}

/// Ends a maker (killed: it may be stopped) and reaps it, unless the server's reaping of its
/// children took it first.
fn end(maker: Maker) {
    let _ = MAKER_PID.compare_exchange(maker.pid, 0, Ordering::AcqRel, Ordering::Acquire);
    drop(maker.socket);
    crate::namespace::kill_by_pidfd(&maker.pidfd);
    // SAFETY: waitid on the maker's own pidfd; `info` is written by the kernel.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_PIDFD,
            maker.pidfd.as_raw_fd() as libc::id_t,
            &raw mut info,
            libc::WEXITED,
        );
    }
}

fn start() -> io::Result<Maker> {
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // Made before the fork: the child must not allocate.
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    let (server, pid) =
        if own_table::supported().ok_or_else(|| io::Error::from_raw_os_error(libc::EAGAIN))? {
            fork_from_a_table_of_its_own(uid_map.into_bytes(), gid_map.into_bytes())?
        } else {
            let (server, theirs) = control::pair()?;
            // SAFETY: the child runs `run` only: plain system calls on data made above, and it
            // never returns.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                run(theirs.as_raw_fd(), uid_map.as_bytes(), gid_map.as_bytes());
            }
            if pid < 0 {
                return Err(io::Error::last_os_error());
            }
            (server, pid)
        };
    // SAFETY: pidfd_open on the child forked above, not reaped yet (nothing waits for it before
    // it ends, and it ends only when asked or when its socket closes).
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        let e = io::Error::last_os_error();
        drop(server);
        // SAFETY: waitpid on the child forked above: its socket is closed, so it ends.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        return Err(e);
    }
    // SAFETY: a fresh pidfd, owned by nobody else.
    let pidfd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(pidfd as RawFd) };
    let maker = Maker {
        pid,
        socket: server,
        pidfd,
    };
    let wait = MAKER_WAIT;
    for option in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        // SAFETY: setsockopt with a timeval of the size given, on the server's end.
        unsafe {
            libc::setsockopt(
                maker.socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&raw const wait).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
    }
    // Its first message says whether it entered its namespaces (0, or the errno that stopped it).
    let mut status = [0u8; 1];
    match control::receive(maker.socket.as_raw_fd(), &mut status) {
        Ok((1, _)) if status[0] == 0 => {
            MAKER_PID.store(maker.pid, Ordering::Release);
            Ok(maker)
        }
        Ok((1, _)) => {
            end(maker);
            Err(io::Error::from_raw_os_error(i32::from(status[0])))
        }
        Ok(_) => {
            end(maker);
            Err(io::Error::other("the terminal maker did not start"))
        }
        Err(e) => {
            end(maker);
            Err(e)
        }
    }
}

/// Forks the maker from a thread whose fd table is its own and holds only the maker's end of
/// its socket (`own_table.rs`): the maker copies none of the server's files, whose last
/// reference its first step (closing every fd but its socket) could otherwise be, waiting there
/// on a pipe's lock a command holds while the server waits for it. The server's end, and the
/// maker's pid.
fn fork_from_a_table_of_its_own(
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
) -> io::Result<(OwnedFd, libc::pid_t)> {
    use std::sync::mpsc::sync_channel;
    let (made_tx, made) = sync_channel::<io::Result<(libc::pid_t, RawFd)>>(1);
    let (taken_tx, taken) = sync_channel::<bool>(1);
    let (forked_tx, forked) = sync_channel::<io::Result<libc::pid_t>>(1);
    std::thread::Builder::new()
        .name("agentty-ttys-fork".into())
        .spawn(move || {
            let (table, end) = match own_table::Table::make() {
                Ok(made) => made,
                Err(e) => {
                    let _ = made_tx.send(Err(e));
                    return;
                }
            };
            // SAFETY: gettid has no preconditions.
            let _ = made_tx.send(Ok((unsafe { libc::gettid() }, end)));
            let was_taken = taken.recv().unwrap_or(false);
            // SAFETY: the server's end, in this thread's own table: the server has its copy.
            unsafe { libc::close(end) };
            if !was_taken {
                return;
            }
            // SAFETY: the child runs `run` only: plain system calls on data made before, and
            // it never returns. Its table is a copy of this thread's: the socket alone.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                run(table.socket(), &uid_map, &gid_map);
            }
            let _ = forked_tx.send(if pid < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(pid)
            });
        })?;
    let (tid, end) = made
        .recv()
        .map_err(|_| io::Error::other("the maker's forking thread ended"))??;
    let server = own_table::take_end(tid, end);
    let _ = taken_tx.send(server.is_ok());
    let server = server?;
    let pid = forked
        .recv()
        .map_err(|_| io::Error::other("the maker's forking thread ended"))??;
    Ok((server, pid))
}

/// The maker itself, in the forked child.
fn run(socket: RawFd, uid_map: &[u8], gid_map: &[u8]) -> ! {
    // SAFETY: plain system calls in a forked child on fds and buffers it owns; it ends with
    // `_exit`.
    unsafe {
        #[cfg(test)]
        tests::pause_if_asked();
        keep_only(socket);
        // The server's signal handlers are not this process's: each signal does what it does
        // by default (a stop ends it), and none is blocked.
        for signal in 1..=libc::SIGRTMAX() {
            libc::signal(signal, libc::SIG_DFL);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_NAME, c"agentty-ttys".as_ptr());
        // A session of its own: the job-control keys of the terminal the server was started
        // from (Ctrl+Z) do not stop it.
        libc::setsid();
        let entered = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) == 0
            && write_file(c"/proc/self/setgroups", b"deny")
            && write_file(c"/proc/self/uid_map", uid_map)
            && write_file(c"/proc/self/gid_map", gid_map);
        let status = if entered { 0 } else { errno_byte() };
        if control::send(socket, &[status], None).is_err() || !entered {
            libc::_exit(1);
        }
        loop {
            let mut request = [0u8; 1];
            match control::receive(socket, &mut request) {
                Ok((1, _)) => {}
                // EOF, or a socket that no longer works: the server is gone.
                _ => libc::_exit(0),
            }
            let reply = match super::terminals::new_instance() {
                Ok(mount) => control::send(socket, &[0], Some(mount.as_raw_fd())),
                Err(e) => control::send(socket, &[errno_of(&e)], None),
            };
            if reply.is_err() {
                libc::_exit(0);
            }
        }
    }
}

/// Closes every fd but `socket`, and puts `/dev/null` on stdin, stdout and stderr.
///
/// # Safety
/// Only in the forked child, which owns every fd it closes.
unsafe fn keep_only(socket: RawFd) {
    // SAFETY: see the function's contract.
    unsafe {
        let (below, above) = (
            socket.saturating_sub(1) as libc::c_uint,
            socket as libc::c_uint + 1,
        );
        if socket > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, below, 0u32);
        }
        libc::syscall(libc::SYS_close_range, above, libc::c_uint::MAX, 0u32);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                if fd != socket {
                    libc::dup2(null, fd);
                }
            }
            if null > 2 && null != socket {
                libc::close(null);
            }
        }
    }
}

/// Writes `data` to the file `path` in one write.
///
/// # Safety
/// Plain system calls; `path` is NUL-terminated.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> bool {
    // SAFETY: see the function's contract; `data` is valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        written == data.len() as isize
    }
}

fn errno_byte() -> u8 {
    errno_of(&io::Error::last_os_error())
}

fn errno_of(e: &io::Error) -> u8 {
    e.raw_os_error()
        .and_then(|n| u8::try_from(n).ok())
        .filter(|&n| n != 0)
        .unwrap_or(libc::EIO as u8)
}

#[cfg(test)]
#[path = "terminal_maker_tests.rs"]
mod tests;
