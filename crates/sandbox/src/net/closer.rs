//! Where the supervisor's files are closed: off its thread, so that a release that waits (a
//! socket lingering, a pipe whose lock a command holds) holds no caller's connects; and each
//! caller's apart, so that one caller's releases that wait hold no other's.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::release;

/// Whose commands the supervisor's files are for: a caller's over HTTP (its token's name), or
/// the session's (stdio: one caller). Each has a share of the closes that may wait of its own
/// ([`OWNER_CLOSING_MAX`], [`OWNER_RELEASING_MAX`]), so a caller whose releases never end (a
/// pipe whose lock one of its commands holds for ever, splicing into it) is refused its own
/// copies then, and no other caller's.
#[derive(Debug)]
pub(crate) struct Owner {
    name: Option<Box<str>>,
    /// Its place in [`OWNERS`]: how the closer's thread is told whose a file is.
    index: u32,
    /// Its files handed to the closer and not taken by a release thread (or closed) yet.
    closing: AtomicUsize,
    /// Its filters' listeners the supervisor holds ([`Owner::take_listener_place`]).
    listeners: AtomicUsize,
}

impl Owner {
    /// Whether another of its files may wait to be closed ([`OWNER_CLOSING_MAX`]): past it,
    /// no fd of its commands is copied (EAGAIN; every socket the supervisor makes follows a
    /// copy).
    pub(super) fn may_hold_more(&self) -> bool {
        self.closing.load(Ordering::Relaxed) < OWNER_CLOSING_MAX
    }

    /// Takes a place for another of its filters' listeners, if there is one
    /// ([`OWNER_LISTENERS_MAX`]); given back with [`Owner::give_listener_place`].
    pub(super) fn take_listener_place(&self) -> bool {
        self.listeners
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < OWNER_LISTENERS_MAX).then_some(held + 1)
            })
            .is_ok()
    }

    /// Gives back a place [`Owner::take_listener_place`] took.
    pub(super) fn give_listener_place(&self) {
        self.listeners.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Every owner made so far ([`owner`]).
static OWNERS: Mutex<Vec<Arc<Owner>>> = Mutex::new(Vec::new());

/// The owner named `name` (`None`: the session's), the same one each time: owners are never let
/// go, and there are as many as the server has callers (the token file's names, and `None`).
pub(crate) fn owner(name: Option<&str>) -> Arc<Owner> {
    let mut owners = OWNERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = owners.iter().find(|o| o.name.as_deref() == name) {
        return Arc::clone(found);
    }
    let made = Arc::new(Owner {
        name: name.map(Box::from),
        index: u32::try_from(owners.len()).unwrap_or(u32::MAX),
        closing: AtomicUsize::new(0),
        listeners: AtomicUsize::new(0),
    });
    owners.push(Arc::clone(&made));
    made
}

/// The owner at `index` in [`OWNERS`].
fn owner_at(index: u32) -> Option<Arc<Owner>> {
    OWNERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(index as usize)
        .cloned()
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
/// it is closed; it counts against its `owner`'s share until a release thread took it.
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

/// An owner's listeners of one spawn's own filter the supervisor holds at most: a spawn no
/// launcher took has a filter of its own, whose listener is held for as long as a command
/// started under it lives. A caller that made every spawn go apart (filling the fds in flight)
/// and left each command's escapee running would otherwise have the server hold a listener per
/// call, without bound (review 33). Launchers' listeners (bounded by the pools) and terminal
/// spawns' (by the shells and jobs there may be) are not counted: an honest caller's idle
/// launchers of outdated pools, or its shells, would fill the places (review 34).
pub(super) const OWNER_LISTENERS_MAX: usize = 64;

/// Release threads ([`close_elsewhere`]) of one owner alive at once at most; past it its files
/// wait (and then its commands' fds are not copied), so its releases that never end cannot
/// take the threads of every owner.
const OWNER_RELEASING_MAX: usize = 16;

/// Release threads alive at once at most, all owners together: a bound on the threads, which
/// as many callers as it takes to reach it (16 at [`OWNER_RELEASING_MAX`]) can fill, but for
/// [`OWNER_RELEASING_FLOOR`].
const RELEASING_MAX: usize = 256;

/// Release threads an owner may have past [`RELEASING_MAX`]: however many other callers' releases
/// never end, each caller's files are still released, this many at a time. The threads are
/// bounded all the same, by the callers the server has (the token file's names, and the
/// session's): at most `RELEASING_MAX + OWNER_RELEASING_FLOOR × callers`.
const OWNER_RELEASING_FLOOR: usize = 2;

/// How long files wait before a release thread is tried again, when none could start.
const RELEASE_RETRY: std::time::Duration = std::time::Duration::from_millis(10);

/// Closes `fd` off this thread, as a file of `owner`'s: on the closer's thread
/// (`agentty-closer`), where a pseudo-terminal is closed (what an interactive shell resizes
/// after every command; its release waits on nothing a command holds), and any other file
/// handed to a short-lived thread of its own (`agentty-release`), which takes the files into an
/// fd table of its own and ends. A thread's files are released as it exits, and the kernel
/// waits on no socket's linger for an exiting thread (`inet_release`), nor on one a unix socket
/// had in flight, whose release is deferred to the same exit. A release that waits all the
/// same (a pipe whose lock a command holds, splicing into it) holds that thread and what it
/// took; the closer goes on. Where a thread cannot start, or `owner` has
/// [`OWNER_RELEASING_MAX`] alive (or all have [`RELEASING_MAX`] and it has its floor,
/// [`OWNER_RELEASING_FLOOR`]), the files wait and it is
/// tried again.
///
/// The closer and its release threads hold the files in an fd table of the closer's own
/// (`release::closers_table`), never in the process's: a release thread's copy of a table
/// then holds none of the files other threads of the server close meanwhile (a command's pipe,
/// which a pipe thread lets go while the command holds its lock), whose last reference it would
/// otherwise be, waiting on it before it answers the closer (review 27). The closer takes a
/// copy of `fd` (`pidfd_getfd` of this process, which no limit of the user's can refuse: a
/// file sent in flight could be refused by the same user's commands, review 28) and says so;
/// only then is `fd` closed here, and the closer keeps its copy until it was ([`release::Closer::hand`]),
/// so the last reference is always the closer's. A file the closer could not take is kept,
/// never closed here, and offered again with the next one.
fn close_elsewhere(fd: OwnedFd, owner: Arc<Owner>) {
    use std::sync::OnceLock;
    /// Files the closer could not take, offered again with the next.
    static UNTAKEN: Mutex<Vec<(OwnedFd, Arc<Owner>)>> = Mutex::new(Vec::new());
    static CLOSER: OnceLock<Option<release::Closer>> = OnceLock::new();
    let Some(closer) = CLOSER.get_or_init(|| release::Closer::start(close_what_comes)) else {
        return;
    };
    owner.closing.fetch_add(1, Ordering::Relaxed);
    let mut offered = std::mem::take(&mut *UNTAKEN.lock().unwrap_or_else(PoisonError::into_inner));
    offered.push((fd, owner));
    let mut untaken = Vec::new();
    for (fd, owner) in offered {
        if let Err(fd) = closer.hand(fd, owner.index) {
            untaken.push((fd, owner));
        }
    }
    UNTAKEN
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(untaken);
}

/// The closer's loop ([`close_elsewhere`]): each file it takes from `offered` (a copy in its own
/// table, with its owner's number) is closed or handed to a release thread.
fn close_what_comes(offered: release::Offered) {
    let mut waiting: Vec<(OwnedFd, Arc<Owner>)> = Vec::new();
    let mut releasing: Vec<(release::Thread, Arc<Owner>)> = Vec::new();
    loop {
        let wait = (!waiting.is_empty()).then_some(RELEASE_RETRY);
        for (index, fd) in offered.take(wait) {
            let Some(owner) = owner_at(index) else {
                continue;
            };
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
        releasing.retain(|(thread, _)| thread.alive());
        waiting = release_each_owners(std::mem::take(&mut waiting), &mut releasing);
    }
}

/// Hands each owner's files in `waiting` to a release thread of their own, where the owner and
/// all have threads to spare ([`may_start_another`]); the files left
/// waiting.
fn release_each_owners(
    mut waiting: Vec<(OwnedFd, Arc<Owner>)>,
    releasing: &mut Vec<(release::Thread, Arc<Owner>)>,
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
        if !may_start_another(releasing.len(), its_threads) {
            left.extend(files);
            continue;
        }
        let count = files.len();
        match release::on_an_exiting_thread(files.into_iter().map(|(fd, _)| fd).collect()) {
            release::Released::Taken(thread) => releasing.push((thread, Arc::clone(&owner))),
            release::Released::Here => {}
            release::Released::NotStarted(fds) => {
                left.extend(fds.into_iter().map(|fd| (fd, Arc::clone(&owner))));
                continue;
            }
        }
        owner.closing.fetch_sub(count, Ordering::Relaxed);
    }
    left
}

/// Whether an owner with `its` release threads alive may start another while `all` are alive:
/// within its share ([`OWNER_RELEASING_MAX`]) and the bound of all ([`RELEASING_MAX`]), or
/// below its floor ([`OWNER_RELEASING_FLOOR`]) whatever the others have.
fn may_start_another(all: usize, its: usize) -> bool {
    its < OWNER_RELEASING_FLOOR || (its < OWNER_RELEASING_MAX && all < RELEASING_MAX)
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
