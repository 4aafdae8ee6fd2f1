//! Where the supervisor's files are closed: off its thread, so that a release that waits (a
//! socket lingering, a pipe whose lock a command holds) holds no caller's connects; and each
//! caller's apart, so that one caller's releases that wait hold no other's.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Whose commands the supervisor's files are for: a caller's over HTTP (its token's name), or
/// the session's (stdio: one caller). Each has a share of the closes that may wait of its own
/// ([`OWNER_CLOSING_MAX`], [`OWNER_RELEASING_MAX`]), so a caller whose releases never end (a
/// pipe whose lock one of its commands holds for ever, splicing into it) is refused its own
/// copies then, and no other caller's.
#[derive(Debug)]
pub(crate) struct Owner {
    name: Option<Box<str>>,
    /// Its files handed to the closer and not closed yet.
    closing: AtomicUsize,
}

impl Owner {
    /// Whether another of its files may wait to be closed ([`OWNER_CLOSING_MAX`]): past it,
    /// no fd of its commands is copied (EAGAIN; every socket the supervisor makes follows a
    /// copy).
    pub(super) fn may_hold_more(&self) -> bool {
        self.closing.load(Ordering::Relaxed) < OWNER_CLOSING_MAX
    }
}

/// The owner named `name` (`None`: the session's), the same one each time: owners are never let
/// go, and there are as many as the server has callers.
pub(crate) fn owner(name: Option<&str>) -> Arc<Owner> {
    static OWNERS: Mutex<Vec<Arc<Owner>>> = Mutex::new(Vec::new());
    let mut owners = OWNERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = owners.iter().find(|o| o.name.as_deref() == name) {
        return Arc::clone(found);
    }
    let made = Arc::new(Owner {
        name: name.map(Box::from),
        closing: AtomicUsize::new(0),
    });
    owners.push(Arc::clone(&made));
    made
}

/// A file the supervisor holds that a command holds too, closed off the supervisor's thread: a
/// copy of a command's fd (`notify::copy_fd`), or a socket the supervisor made and put in a
/// command's place (`supervisor::tcp_socket`, `unix.rs`). Once the command closed its own, this
/// is the file's last reference, and its close runs the file's release, which may wait: a TCP
/// socket lingering (`SO_LINGER`, which a command sets on its socket, copied to ours, or on the
/// one it was given) with unsent data waits for its peer up to the linger time, and so does one
/// a unix socket holds in flight (`SCM_RIGHTS`), whose last reference goes with the unix
/// socket's; a pipe's waits for its lock. On the supervisor's thread that wait would hold every
/// confined command's connects and resizes, every caller's. See [`close_elsewhere`] for where
/// it is closed; it counts against its `owner`'s share.
#[derive(Debug)]
pub(crate) struct ClosedElsewhere {
    fd: std::mem::ManuallyDrop<OwnedFd>,
    owner: Arc<Owner>,
}

impl ClosedElsewhere {
    pub(crate) fn new(fd: OwnedFd, owner: &Arc<Owner>) -> Self {
        Self {
            fd: std::mem::ManuallyDrop::new(fd),
            owner: Arc::clone(owner),
        }
    }

    /// The fd, to be closed by whoever holds it (a test's control).
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> OwnedFd {
        let mut this = std::mem::ManuallyDrop::new(self);
        // SAFETY: taken once; `this` is never dropped, and its owner is dropped here.
        unsafe {
            std::ptr::drop_in_place(&raw mut this.owner);
            std::mem::ManuallyDrop::take(&mut this.fd)
        }
    }
}

impl std::ops::Deref for ClosedElsewhere {
    type Target = OwnedFd;

    fn deref(&self) -> &OwnedFd {
        &self.fd
    }
}

impl Drop for ClosedElsewhere {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and never used again.
        let fd = unsafe { std::mem::ManuallyDrop::take(&mut self.fd) };
        close_elsewhere(fd, Arc::clone(&self.owner));
    }
}

/// An owner's files that may wait to be closed at most ([`Owner::may_hold_more`]). The closer
/// never waits on a release but a terminal's (see [`close_elsewhere`]), so this bounds a burst,
/// or files whose releases hold up the owner's threads.
const OWNER_CLOSING_MAX: usize = 64;

/// Release threads ([`close_elsewhere`]) of one owner alive at once at most; past it its files
/// wait (and then its commands' fds are not copied), so its releases that never end cannot
/// take the threads of every owner.
const OWNER_RELEASING_MAX: usize = 16;

/// Release threads alive at once at most, all owners together: a bound on the threads, which
/// only as many callers as it takes to reach it (16 at [`OWNER_RELEASING_MAX`]) can fill.
const RELEASING_MAX: usize = 256;

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
/// thread cannot start, or `owner` has [`OWNER_RELEASING_MAX`] alive (or all have
/// [`RELEASING_MAX`]), the files wait and it is tried again; where a thread cannot have a table
/// of its own (no `close_range`), they are closed on the closer.
fn close_elsewhere(fd: OwnedFd, owner: Arc<Owner>) {
    use std::sync::{OnceLock, mpsc};
    type Closing = (OwnedFd, Arc<Owner>);
    static CLOSER: OnceLock<Option<Mutex<mpsc::Sender<Closing>>>> = OnceLock::new();
    let closer = CLOSER.get_or_init(|| {
        let (send, receive) = mpsc::channel::<Closing>();
        std::thread::Builder::new()
            .name("agentty-closer".into())
            .stack_size(64 * 1024)
            .spawn(move || close_what_comes(&receive))
            .ok()
            .map(|_| Mutex::new(send))
    });
    if let Some(send) = closer {
        owner.closing.fetch_add(1, Ordering::Relaxed);
        let send = send.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(mpsc::SendError((fd, owner))) = send.send((fd, owner)) {
            owner.closing.fetch_sub(1, Ordering::Relaxed);
            drop(fd);
        }
    }
}

/// The closer's loop ([`close_elsewhere`]).
fn close_what_comes(receive: &std::sync::mpsc::Receiver<(OwnedFd, Arc<Owner>)>) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut waiting: Vec<(OwnedFd, Arc<Owner>)> = Vec::new();
    let mut releasing: Vec<(libc::pid_t, Arc<Owner>)> = Vec::new();
    loop {
        let first = if waiting.is_empty() {
            match receive.recv() {
                Ok(closing) => Some(closing),
                Err(_) => return,
            }
        } else {
            match receive.recv_timeout(RELEASE_RETRY) {
                Ok(closing) => Some(closing),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(RELEASE_RETRY);
                    None
                }
            }
        };
        for (fd, owner) in first.into_iter().chain(receive.try_iter()) {
            if is_a_pseudo_terminal(&fd) {
                drop(fd);
                owner.closing.fetch_sub(1, Ordering::Relaxed);
            } else {
                waiting.push((fd, owner));
            }
        }
        if waiting.is_empty() {
            continue;
        }
        releasing
            .retain(|(tid, _)| std::path::Path::new(&format!("/proc/self/task/{tid}")).exists());
        waiting = release_each_owners(std::mem::take(&mut waiting), &mut releasing);
    }
}

/// Hands each owner's files in `waiting` to a release thread of their own, where the owner and
/// all have threads to spare ([`OWNER_RELEASING_MAX`], [`RELEASING_MAX`]); the files left
/// waiting.
fn release_each_owners(
    mut waiting: Vec<(OwnedFd, Arc<Owner>)>,
    releasing: &mut Vec<(libc::pid_t, Arc<Owner>)>,
) -> Vec<(OwnedFd, Arc<Owner>)> {
    let mut left = Vec::new();
    while let Some((_, owner)) = waiting.first() {
        let owner = Arc::clone(owner);
        let (files, others): (Vec<_>, Vec<_>) = waiting
            .into_iter()
            .partition(|(_, of)| Arc::ptr_eq(of, &owner));
        waiting = others;
        let its_threads = releasing
            .iter()
            .filter(|(_, of)| Arc::ptr_eq(of, &owner))
            .count();
        if releasing.len() >= RELEASING_MAX || its_threads >= OWNER_RELEASING_MAX {
            left.extend(files);
            continue;
        }
        let count = files.len();
        match release_on_an_exiting_thread(files.into_iter().map(|(fd, _)| fd).collect()) {
            Released::Taken(tid) => releasing.push((tid, Arc::clone(&owner))),
            Released::Here => {}
            Released::NotStarted(fds) => {
                left.extend(fds.into_iter().map(|fd| (fd, Arc::clone(&owner))));
                continue;
            }
        }
        owner.closing.fetch_sub(count, Ordering::Relaxed);
    }
    left
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
