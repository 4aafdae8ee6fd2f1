//! Where the supervisor's files are closed: off its thread, so that a release that waits (a
//! socket lingering, a pipe whose lock a command holds) holds no caller's connects.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A file the supervisor holds that a command holds too, closed off the supervisor's thread: a
/// copy of a command's fd (`notify::copy_fd`), or a socket the supervisor made and put in a command's
/// place (`supervisor::tcp_socket`, `unix.rs`). Once the command closed its own, this is the
/// file's last reference, and its close runs the file's release, which may wait: a TCP socket
/// lingering (`SO_LINGER`, which a command sets on its socket, copied to ours, or on the one it
/// was given) with unsent data waits for its peer up to the linger time, and so does one a
/// unix socket holds in flight (`SCM_RIGHTS`), whose last reference goes with the unix
/// socket's. On the supervisor's thread that wait would hold every confined command's
/// connects and resizes, every caller's. See [`close_elsewhere`] for where it is closed.
#[derive(Debug)]
pub(crate) struct ClosedElsewhere(std::mem::ManuallyDrop<OwnedFd>);

impl ClosedElsewhere {
    pub(crate) fn new(fd: OwnedFd) -> Self {
        Self(std::mem::ManuallyDrop::new(fd))
    }

    /// The fd, to be closed by whoever holds it (a test's control).
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> OwnedFd {
        let mut this = std::mem::ManuallyDrop::new(self);
        // SAFETY: taken once; `this` is never dropped.
        unsafe { std::mem::ManuallyDrop::take(&mut this.0) }
    }
}

impl std::ops::Deref for ClosedElsewhere {
    type Target = OwnedFd;

    fn deref(&self) -> &OwnedFd {
        &self.0
    }
}

impl Drop for ClosedElsewhere {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and never used again.
        close_elsewhere(unsafe { std::mem::ManuallyDrop::take(&mut self.0) });
    }
}

/// Files handed to the closer and not closed yet.
pub(super) static CLOSING: AtomicUsize = AtomicUsize::new(0);

/// Files that may wait to be closed at most: past it no fd is copied (EAGAIN; every socket the
/// supervisor makes follows a copy). The closer never waits on a release but a terminal's (see
/// [`close_elsewhere`]), so this bounds a burst, or files whose releases hold up threads.
pub(super) const CLOSING_MAX: usize = 256;

/// Release threads ([`close_elsewhere`]) alive at once at most; past it files wait (and then
/// fds are not copied, [`CLOSING_MAX`]), so releases that never end cannot take every thread.
const RELEASING_MAX: usize = 64;

/// How long files wait before a release thread is tried again, when none could start.
const RELEASE_RETRY: std::time::Duration = std::time::Duration::from_millis(10);

/// Closes `fd` off this thread: on the closer's thread (`agentty-closer`), started at the
/// first (on this thread if it cannot start), where a pseudo-terminal is closed (what an
/// interactive shell resizes after every command; its release waits on nothing a command
/// holds), and any other file handed to a short-lived thread of its own (`agentty-release`),
/// which takes the files out of the process's fd table into one of its own and ends. A
/// thread's files are released as it exits, and the kernel waits on no socket's linger for an
/// exiting thread (`inet_release`), nor on one a unix socket had in flight, whose release is
/// deferred to the same exit. A release that waits all the same (a pipe whose lock a command
/// holds, splicing into it) holds that thread and what it took; the closer goes on. Where a
/// thread cannot start, or [`RELEASING_MAX`] are alive, the files wait and it is tried again;
/// where a thread cannot have a table of its own (no `close_range`), they are closed on the
/// closer.
fn close_elsewhere(fd: OwnedFd) {
    use std::sync::{Mutex, OnceLock, mpsc};
    static CLOSER: OnceLock<Option<Mutex<mpsc::Sender<OwnedFd>>>> = OnceLock::new();
    let closer = CLOSER.get_or_init(|| {
        let (send, receive) = mpsc::channel::<OwnedFd>();
        std::thread::Builder::new()
            .name("agentty-closer".into())
            .stack_size(64 * 1024)
            .spawn(move || close_what_comes(&receive))
            .ok()
            .map(|_| Mutex::new(send))
    });
    if let Some(send) = closer {
        CLOSING.fetch_add(1, Ordering::Relaxed);
        let send = send
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(mpsc::SendError(fd)) = send.send(fd) {
            CLOSING.fetch_sub(1, Ordering::Relaxed);
            drop(fd);
        }
    }
}

/// The closer's loop ([`close_elsewhere`]).
fn close_what_comes(receive: &std::sync::mpsc::Receiver<OwnedFd>) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut waiting: Vec<OwnedFd> = Vec::new();
    let mut releasing: Vec<libc::pid_t> = Vec::new();
    loop {
        let first = if waiting.is_empty() {
            match receive.recv() {
                Ok(fd) => Some(fd),
                Err(_) => return,
            }
        } else {
            match receive.recv_timeout(RELEASE_RETRY) {
                Ok(fd) => Some(fd),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(RELEASE_RETRY);
                    None
                }
            }
        };
        let (terminals, others): (Vec<OwnedFd>, Vec<OwnedFd>) = first
            .into_iter()
            .chain(receive.try_iter())
            .partition(is_a_pseudo_terminal);
        let closed = terminals.len();
        drop(terminals);
        CLOSING.fetch_sub(closed, Ordering::Relaxed);
        waiting.extend(others);
        if waiting.is_empty() {
            continue;
        }
        releasing.retain(|tid| std::path::Path::new(&format!("/proc/self/task/{tid}")).exists());
        if releasing.len() >= RELEASING_MAX {
            continue;
        }
        let count = waiting.len();
        match release_on_an_exiting_thread(std::mem::take(&mut waiting)) {
            Released::Taken(tid) => releasing.push(tid),
            Released::Here => {}
            Released::NotStarted(files) => {
                waiting = files;
                continue;
            }
        }
        CLOSING.fetch_sub(count, Ordering::Relaxed);
    }
}

/// Whether `fd` is a pseudo-terminal (either side): a Unix98 pty slave (136-143) or
/// `/dev/ptmx` (5, 2). Its file's type only (`statx` without a sync: asks no file system).
fn is_a_pseudo_terminal(fd: &OwnedFd) -> bool {
    // SAFETY: statx is plain data, written by the kernel.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: an empty path with AT_EMPTY_PATH names `fd` itself; the kernel writes `st`.
    let rc = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_STATX_DONT_SYNC,
            libc::STATX_TYPE,
            &raw mut st,
        )
    };
    if rc != 0 || u32::from(st.stx_mode) & libc::S_IFMT != libc::S_IFCHR {
        return false;
    }
    (136..=143).contains(&st.stx_rdev_major) || (st.stx_rdev_major, st.stx_rdev_minor) == (5, 2)
}

/// What became of files handed to [`release_on_an_exiting_thread`].
enum Released {
    /// A release thread (this thread id) took them.
    Taken(libc::pid_t),
    /// No thread could have a table of its own: closed here.
    Here,
    /// No thread could start: given back.
    NotStarted(Vec<OwnedFd>),
}

/// Hands `files` to a thread of their own, which takes them into an fd table of its own and
/// ends, releasing them as it exits (see [`close_elsewhere`]). Returns once they are out of
/// this process's table.
fn release_on_an_exiting_thread(files: Vec<OwnedFd>) -> Released {
    use std::sync::mpsc;
    let (unshared, told) = mpsc::sync_channel::<Option<libc::pid_t>>(0);
    let (go, wait) = mpsc::sync_channel::<()>(0);
    let mut kept: Vec<u32> = files.iter().map(|fd| fd.as_raw_fd() as u32).collect();
    kept.sort_unstable();
    let started = std::thread::Builder::new()
        .name("agentty-release".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let own = table_of_its_own_with(&kept);
            // SAFETY: gettid has no preconditions.
            let _ = unshared.send(own.then(|| unsafe { libc::gettid() }));
            if own {
                // The process's table lets go of them first: then this one holds their last
                // references when the thread ends.
                let _ = wait.recv();
            }
        });
    if started.is_err() {
        return Released::NotStarted(files);
    }
    let taken = told.recv().ok().flatten();
    // Dropped here: the last references when the thread could not take them; else this
    // table's, which the thread's table holds still.
    drop(files);
    match taken {
        Some(tid) => {
            let _ = go.send(());
            Released::Taken(tid)
        }
        None => Released::Here,
    }
}

/// Gives the calling thread an fd table of its own holding only the fds `kept` (sorted): the
/// first `close_range` unshares the table (`CLOSE_RANGE_UNSHARE`, Linux 5.9, which the
/// supervisor needs anyway), and each closes the copies between two kept fds. False if it
/// could not: then the thread shares the process's table still.
fn table_of_its_own_with(kept: &[u32]) -> bool {
    const CLOSE_RANGE_UNSHARE: libc::c_uint = 1 << 1;
    let (mut from, mut own) = (0u32, false);
    for &fd in kept.iter().chain(std::iter::once(&u32::MAX)) {
        if fd > from {
            // SAFETY: close_range closes the fds from..=fd-1 of this thread's table, which after
            // the first call (CLOSE_RANGE_UNSHARE) is a copy of its own.
            let rc =
                unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, CLOSE_RANGE_UNSHARE) };
            if rc != 0 && !own {
                return false;
            }
            own = true;
        }
        from = fd.saturating_add(1);
    }
    own
}
