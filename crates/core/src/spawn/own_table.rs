//! A launcher's fd table of its own, so its children copy nothing of the server's.
//!
//! A child starts with a copy of the fd table of the thread that clones it, until its `exec`
//! closes the close-on-exec fds. A launcher that shares the server's table hands each child a
//! copy of every file the server holds: another caller's command's pipes among them. When the
//! server lets go of such a pipe (its pipe thread reached the output cap) while the command holds
//! the pipe's lock (splicing an idle socket into it), the child's copy is the last one, and the
//! child's `exec` waits for the lock in an uninterruptible sleep: another caller's command hung
//! before its first instruction, SIGKILL included, for as long as that command liked.
//!
//! So the thread that clones (a launcher's *cloner*) makes its table its own once it is
//! confined, holding none of the server's files ([`Table::make`]: `close_range` with
//! `CLOSE_RANGE_UNSHARE` over every fd copies nothing), and each spawn's fds are sent to it over
//! a socket pair (`SCM_RIGHTS`, [`send`]) and put at the numbers they have in the server's table
//! ([`Table::receive`]), so the plan, and the confinement's own part, name them as they are.
//! A child then copies the cloner's few fds only. The server's end of the pair is taken from
//! the cloner's table with `pidfd_getfd` on the cloner's thread (`PIDFD_THREAD`, Linux 6.9):
//! where the kernel has none, cloners share the server's table as before ([`supported`]).
//!
//! What runs on a cloner must never use an fd number of the server's: the fd it names there is
//! another file, or none. It never drops what the server owns (the plan goes on to the
//! launcher's answering thread), wakes no task (a tokio wake may write to the runtime's
//! eventfd), and writes no log (its fd 2 is not the server's stderr). [`on_this_thread`] says
//! where the reaper must not keep a pidfd made here.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use crate::namespace::control;

/// `pidfd_open`'s flag for a pidfd of a thread (Linux 6.9), not its process.
const PIDFD_THREAD: u32 = libc::O_EXCL as u32;

/// `close_range`'s flag that unshares the fd table first (Linux 5.9).
const CLOSE_RANGE_UNSHARE: u32 = 1 << 1;

/// Most fds one spawn sends: stdin, stdout, stderr, two passed fds and the confinement's own,
/// and one to spare, which keeps a payload free of padding (as many as one message of the
/// session init's kind carries).
const MOST_FDS: usize = control::MOST_FDS;

/// The first fd number a spawn's fds may have: 0, 1 and 2 of a table of its own are
/// `/dev/null`, so that nothing written to them (a panic's message) reaches a spawn's file.
const FIRST_SPAWN_FD: RawFd = 3;

/// What a spawn's message says besides its fds: which spawn it is for, and the fds' numbers in
/// the server's table, in the order they come.
#[repr(C)]
#[derive(Clone, Copy)]
struct Payload {
    spawn: u64,
    count: u32,
    numbers: [RawFd; MOST_FDS],
}

// No padding: every byte of a payload is one of its fields, so it may be sent as bytes.
const _: () = assert!(std::mem::size_of::<Payload>() == 8 + 4 + 4 * MOST_FDS);

impl Payload {
    /// The payload as the bytes a message carries.
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: a `repr(C)` struct of integers without padding (asserted above): each of its
        // bytes is initialized, and any bytes make a valid value.
        unsafe {
            std::slice::from_raw_parts_mut(
                (&raw mut *self).cast::<u8>(),
                std::mem::size_of::<Self>(),
            )
        }
    }
}

thread_local! {
    /// Whether this thread's fd table is its own ([`own_empty_table`]).
    static OWN: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread has an fd table of its own: an fd made here is not the server's.
pub(crate) fn on_this_thread() -> bool {
    OWN.with(Cell::get)
}

/// Gives the calling thread an fd table of its own holding none of the server's files
/// (`close_range` of every fd with `CLOSE_RANGE_UNSHARE` copies none), with `/dev/null` as its
/// 0, 1 and 2. An error after the unshare leaves the thread with a table of its own all the
/// same ([`on_this_thread`]): it must then end.
fn own_empty_table() -> io::Result<()> {
    // No handler of the server's runs here from now on: one would use its fd numbers (a
    // runtime's wake), another file here. (A launcher blocked them already.)
    super::signals::block_signals(super::signals::ALL_BUT_CHILD_EXITS)?;
    // SAFETY: close_range of every fd number, unsharing this thread's table first.
    let unshared =
        unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, CLOSE_RANGE_UNSHARE) };
    if unshared != 0 {
        return Err(io::Error::last_os_error());
    }
    OWN.with(|own| own.set(true));
    // SAFETY: open of a constant path; the fd is this table's 0, kept for good.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if null != 0 {
        return Err(io::Error::last_os_error());
    }
    for fd in 1..FIRST_SPAWN_FD {
        // SAFETY: dup3 of this table's /dev/null onto its 1 and 2.
        if unsafe { libc::dup3(0, fd, libc::O_CLOEXEC) } != fd {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether cloners can have tables of their own here: a thread can make one with a socket pair,
/// and the server take a copy of one end from that thread's table (`pidfd_open` with
/// `PIDFD_THREAD`, Linux 6.9; `pidfd_getfd`, which a container's seccomp profile may refuse).
/// Tried on a thread that ends; the answer kept once it is certain ([`kept_once_certain`]):
/// `None` until then.
pub(super) fn supported() -> Option<bool> {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    kept_once_certain(&SUPPORTED, || {
        let (made_tx, made) = std::sync::mpsc::sync_channel(1);
        let (done_tx, done) = std::sync::mpsc::sync_channel::<()>(1);
        std::thread::Builder::new()
            .name("agentty-fds-check".into())
            .spawn(move || {
                let table = Table::make();
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() };
                let _ = made_tx.send(table.as_ref().map(|(_, end)| (tid, *end)).map_err(|e| {
                    e.raw_os_error().map_or_else(
                        || io::Error::other(e.to_string()),
                        io::Error::from_raw_os_error,
                    )
                }));
                // The table stays until the server's copy was tried.
                let _ = done.recv();
            })?;
        let tried = made
            .recv()
            .map_err(|_| io::Error::other("the check's thread ended"))?
            .and_then(|(tid, end)| take_end(tid, end).map(drop));
        let _ = done_tx.send(());
        tried
    })
}

/// Whether a thread can take copies of the server's fds into a table of its own
/// (`close_range` with `CLOSE_RANGE_UNSHARE`, Linux 5.9; `pidfd_getfd` of this process, which a
/// container's seccomp profile may refuse): what [`apart`] does, tried as it does it, on a
/// thread that ends; the answer kept once it is certain ([`kept_once_certain`]): `None` until
/// then.
fn pulls_work() -> Option<bool> {
    static WORKS: OnceLock<bool> = OnceLock::new();
    kept_once_certain(&WORKS, || {
        let probe = std::fs::File::open("/dev/null")?;
        let fd = probe.as_raw_fd();
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("agentty-fds-check".into())
                .spawn_scoped(scope, move || {
                    own_empty_table()?;
                    pull(&[fd]).map(drop)
                })?
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the check's thread panicked")))
        })
    })
}

/// `try_it`'s answer, kept in `kept` when it is certain: it worked, or the kernel refused
/// (`EPERM`, `EACCES`: a seccomp profile; `ENOSYS`, `EINVAL`: too old a kernel). A failure that
/// may pass (no thread, no fd, no memory left at that moment: which the same user's commands can
/// bring about) is no answer (`None`): not kept, tried again at the next ask, and the asker
/// neither falls back to the server's table for it nor says no for good (review 33).
fn kept_once_certain(
    kept: &OnceLock<bool>,
    try_it: impl FnOnce() -> io::Result<()>,
) -> Option<bool> {
    if let Some(&answer) = kept.get() {
        return Some(answer);
    }
    match try_it() {
        Ok(()) => Some(*kept.get_or_init(|| true)),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EPERM | libc::EACCES | libc::ENOSYS | libc::EINVAL)
            ) =>
        {
            Some(*kept.get_or_init(|| false))
        }
        Err(_) => None,
    }
}

/// Copies of this process's fds `fds`, taken into the calling thread's table.
fn pull(fds: &[RawFd]) -> io::Result<Vec<OwnedFd>> {
    // SAFETY: pidfd_open of this process; the fd it returns is ours.
    let process = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0u32) };
    if process < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd nobody else owns.
    let process = unsafe { OwnedFd::from_raw_fd(process as RawFd) };
    fds.iter()
        .map(|&fd| {
            // SAFETY: pidfd_getfd of an fd number of this process; the copy is ours
            // (close-on-exec).
            let copy =
                unsafe { libc::syscall(libc::SYS_pidfd_getfd, process.as_raw_fd(), fd, 0u32) };
            if copy < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a fresh fd nobody else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(copy as RawFd) })
        })
        .collect()
}

/// Whether a thread can clone apart here: take copies of the server's fds into a table of its
/// own ([`pulls_work`]), and have a file of that table taken into the server's ([`supported`]).
/// `None`: not known yet ([`kept_once_certain`]).
pub(super) fn works_apart() -> Option<bool> {
    match (pulls_work(), supported()) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// Has a thread in the server's table take a copy of `listener`, a filter's listener made in the
/// calling thread's table of its own (which the filter refuses the copy): `handing` tells that
/// thread this thread's tid and the listener's number, and says whether it was taken
/// ([`take_end`]). This table's is let go of either way. An error when it was not taken:
/// nothing may be cloned under that filter then.
pub(super) fn hand_listener(
    listener: OwnedFd,
    handing: impl FnOnce(libc::pid_t, RawFd) -> bool,
) -> io::Result<()> {
    // SAFETY: gettid has no preconditions.
    let taken = handing(unsafe { libc::gettid() }, listener.as_raw_fd());
    drop(listener);
    if taken {
        Ok(())
    } else {
        Err(io::Error::other(super::exec::FILTER_NOT_HANDED))
    }
}

/// Gives the calling thread an fd table of its own ([`own_empty_table`]) holding copies of the
/// server's `fds`, each at the number it has there. An error leaves the table its own all the
/// same: the thread must then clone nothing.
pub(super) fn pulled(fds: &[RawFd]) -> io::Result<Placed> {
    own_empty_table()?;
    let copies = pull(fds)?;
    place(copies, fds, None)
}

/// A clone made apart ([`apart`]): what its thread does, in order.
pub(super) struct Apart<B, C, A, K> {
    /// In the server's table still: the namespaces entered.
    pub(super) before: B,
    /// Once the thread's table holds the child's fds: the confinement's shared part, and the
    /// filter's listener it made, if any, which the calling thread takes into the server's
    /// table and hands to `adopt` before anything is cloned.
    pub(super) confine: C,
    /// On the calling thread, with its copy of that listener: whether it was taken (if not,
    /// nothing is cloned).
    pub(super) adopt: A,
    /// The child's clone.
    pub(super) clone: K,
}

/// Runs a child's clone on a thread of its own whose fd table holds only `fds`, copies of the
/// server's taken at the same numbers (`pidfd_getfd`, before the thread confines itself, whose
/// filter refuses it), and returns what the clone returns; the calling thread waits, taking the
/// filter's listener meanwhile (see [`Apart`]). For a spawn no launcher takes: a launcher that
/// could not be set up, or whose fds could not be sent (a user's fds in flight at their limit,
/// which the same user's commands can fill: review 32). No fd goes in flight. Its child then
/// copies none of the server's files either, and its connects are supervised as a launcher's
/// child's are. `None` where no thread can take copies ([`pulls_work`]), or none can have its
/// listener taken ([`supported`]): the caller clones it itself then. A thread that cannot start
/// is an error, not that (review 30: the same user's commands could make it so).
pub(super) fn apart<T: Send>(
    fds: &[RawFd],
    steps: Apart<
        impl FnOnce() -> io::Result<()> + Send,
        impl FnOnce() -> io::Result<Option<OwnedFd>> + Send,
        impl FnOnce(OwnedFd) -> bool,
        impl FnOnce() -> io::Result<T> + Send,
    >,
) -> Option<io::Result<T>> {
    match works_apart() {
        Some(true) => {}
        Some(false) => return None,
        None => return Some(Err(io::Error::other(super::exec::NOT_NOW))),
    }
    let Apart {
        before,
        confine,
        adopt,
        clone,
    } = steps;
    Some(std::thread::scope(|scope| {
        let (ask, asked) = std::sync::mpsc::sync_channel::<(libc::pid_t, RawFd)>(1);
        let (answer, answered) = std::sync::mpsc::sync_channel::<bool>(1);
        let thread = std::thread::Builder::new()
            .name("agentty-spawn-apart".into())
            .spawn_scoped(scope, move || {
                before()?;
                let placed = pulled(fds)?;
                let handed = confine().and_then(|listener| {
                    listener.map_or(Ok(()), |listener| {
                        hand_listener(listener, |tid, fd| {
                            ask.send((tid, fd)).is_ok() && answered.recv().unwrap_or(false)
                        })
                    })
                });
                drop(ask);
                let cloned = handed.and_then(|()| clone());
                placed.close();
                cloned
            })?;
        // The thread's listener, when it makes one, taken into this table (the thread's
        // filter refuses it the copy) and handed over.
        if let Ok((tid, fd)) = asked.recv() {
            let taken = take_end(tid, fd).is_ok_and(adopt);
            let _ = answer.send(taken);
        }
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the spawn's thread panicked")))
    }))
}

/// A cloner's own table: its end of the socket pair the spawns' fds come on.
pub(super) struct Table {
    socket: OwnedFd,
}

/// The fds of one spawn, put at their numbers in a table of its own: every fd of it from
/// [`FIRST_SPAWN_FD`] on but `socket`, closed by [`Placed::close`].
pub(super) struct Placed {
    socket: Option<RawFd>,
}

impl Table {
    /// Gives the calling thread an fd table of its own ([`own_empty_table`]), then a socket
    /// pair in it: the table, and the number of the other end, for the server to take
    /// ([`take_end`]) and then for this thread to close.
    pub(super) fn make() -> io::Result<(Self, RawFd)> {
        own_empty_table()?;
        // The session init's kind of pair (one message per spawn), both ends close-on-exec.
        let (socket, other) = control::pair()?;
        Ok((Self { socket }, other.into_raw_fd()))
    }

    /// This table's end of its socket pair.
    pub(super) fn socket(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// Closes whatever a spawn left in this table (one that panicked): every fd but its own.
    pub(super) fn sweep(&self) {
        Placed {
            socket: Some(self.socket.as_raw_fd()),
        }
        .close();
    }

    /// The fds [`send`] sent for spawn number `spawn`, each put at the number it has in the
    /// server's table ([`place`]). They are always sent before the spawn is handed over: none
    /// there is an error, not a wait. A message for an earlier spawn (whose own receive failed
    /// before it was read) is let go, so a spawn never gets another's fds.
    pub(super) fn receive(&mut self, spawn: u64) -> io::Result<Placed> {
        loop {
            let (payload, received) = self.receive_one()?;
            if payload.spawn < spawn {
                continue;
            }
            let count = payload.count as usize;
            if payload.spawn != spawn || count > MOST_FDS || received.len() != count {
                return Err(io::Error::other("a spawn's fds did not come with it"));
            }
            return place(received, &payload.numbers[..count], Some(&mut self.socket));
        }
    }

    /// The next message on the socket: what it says, and the fds it carries, owned.
    fn receive_one(&self) -> io::Result<(Payload, Vec<OwnedFd>)> {
        let mut payload = Payload {
            spawn: 0,
            count: 0,
            numbers: [0; MOST_FDS],
        };
        let mut received = Vec::with_capacity(MOST_FDS);
        let (got, flags) = control::receive_with(
            self.socket.as_raw_fd(),
            payload.as_bytes_mut(),
            libc::MSG_DONTWAIT,
            |fd| received.push(fd),
        )?;
        if got != std::mem::size_of::<Payload>()
            || flags & (libc::MSG_CTRUNC | libc::MSG_TRUNC) != 0
        {
            return Err(io::Error::other("a spawn's message came cut short"));
        }
        Ok((payload, received))
    }
}

/// Puts each of `received` at its number in `at` (all from [`FIRST_SPAWN_FD`] on), moving
/// `socket`, if any, out of the way if it has one of them. Where a received fd has the number
/// another is to be put at, all are first copied above every such number. Nothing is closed
/// here: every fd of the table from [`FIRST_SPAWN_FD`] on but `socket` is the spawn's from now
/// on, all closed at once by [`Placed::close`].
fn place(received: Vec<OwnedFd>, at: &[RawFd], socket: Option<&mut OwnedFd>) -> io::Result<Placed> {
    let above = at.iter().copied().max().unwrap_or(0).saturating_add(1);
    let socket = match socket {
        Some(socket) => {
            if at.contains(&socket.as_raw_fd()) {
                *socket = dup_from(socket.as_raw_fd(), above)?;
            }
            Some(socket.as_raw_fd())
        }
        None => None,
    };
    let placed = Placed { socket };
    let received: Vec<RawFd> = received.into_iter().map(IntoRawFd::into_raw_fd).collect();
    if at.iter().any(|&fd| fd < FIRST_SPAWN_FD) {
        placed.close();
        return Err(io::Error::other(
            "a spawn's fd has a number below 3 in the server's table",
        ));
    }
    let in_the_way = received
        .iter()
        .zip(at)
        .any(|(&fd, &own)| fd != own && at.contains(&fd));
    let sources = if in_the_way {
        match received
            .iter()
            .map(|&fd| dup_from(fd, above).map(IntoRawFd::into_raw_fd))
            .collect::<io::Result<Vec<_>>>()
        {
            Ok(above_all) => above_all,
            Err(error) => {
                placed.close();
                return Err(error);
            }
        }
    } else {
        received
    };
    for (fd, &number) in sources.into_iter().zip(at) {
        // SAFETY: dup3 onto a number of this thread's own table where no fd still to be put
        // is (none received is where another goes, or all were copied above them); what it
        // replaces there is the spawn's.
        if fd != number && unsafe { libc::dup3(fd, number, libc::O_CLOEXEC) } < 0 {
            let error = io::Error::last_os_error();
            placed.close();
            return Err(error);
        }
    }
    Ok(placed)
}

impl Placed {
    /// Closes the spawn's fds in the table of its own (its child has its own copies by now):
    /// every fd from [`FIRST_SPAWN_FD`] on but the socket, as the table holds nothing else of
    /// its own there between spawns.
    pub(super) fn close(self) {
        let first = FIRST_SPAWN_FD as u32;
        // SAFETY: close_range over this thread's own table, around its socket.
        unsafe {
            match self.socket {
                Some(socket) if socket as u32 >= first => {
                    let socket = socket as u32;
                    if socket > first {
                        libc::syscall(libc::SYS_close_range, first, socket - 1, 0u32);
                    }
                    libc::syscall(libc::SYS_close_range, socket + 1, u32::MAX, 0u32);
                }
                _ => {
                    libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32);
                }
            }
        }
    }
}

/// A copy of `fd` at `from` or above, close-on-exec.
pub(super) fn dup_from(fd: RawFd, from: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on an open fd; the new fd is ours.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, from) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// Takes a copy of fd `fd` of thread `tid` of this process, whose fd table is its own (a
/// cloner's end of its socket pair, a filter's listener), into the calling thread's table.
pub(super) fn take_end(tid: libc::pid_t, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a tid and flags; the fd it returns is ours.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid as libc::c_long, PIDFD_THREAD) };
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd nobody else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    // SAFETY: pidfd_getfd takes a pidfd, an fd number of that thread's table and flags; the
    // copy it returns is ours (close-on-exec).
    let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(copy as RawFd) })
}

/// A file of a cloner's table of its own, fd `fd` of thread `tid`, for a thread in the server's
/// table to take a copy of ([`take_end`]) and give `to`: a spare's filter's listener
/// (`spare.rs`), which the spare's filter refuses it the copy of. `done` is told whether it was.
pub(super) struct HandOver {
    pub(super) tid: libc::pid_t,
    pub(super) fd: RawFd,
    pub(super) to: Box<dyn FnOnce(OwnedFd) -> bool + Send>,
    pub(super) done: std::sync::mpsc::SyncSender<bool>,
}

impl HandOver {
    /// Takes the copy and gives it on (in the server's table).
    pub(super) fn hand(self) {
        let taken = take_end(self.tid, self.fd).is_ok_and(self.to);
        let _ = self.done.send(taken);
    }
}

/// Sends `fds` (at most [`MOST_FDS`], numbers of the server's table) for spawn number `spawn`
/// to a cloner, on the server's end `to` of its socket pair, without waiting: a full socket, or
/// a user with too many fds in flight (`ETOOMANYREFS`: a limit the same user's commands can
/// fill when the server has no `CAP_SYS_RESOURCE`), is an error, and the spawn is then cloned
/// elsewhere.
pub(super) fn send(to: &OwnedFd, spawn: u64, fds: &[RawFd]) -> io::Result<()> {
    if fds.is_empty() || fds.len() > MOST_FDS {
        return Err(io::Error::other("a spawn has no fds or too many to send"));
    }
    let mut payload = Payload {
        spawn,
        count: fds.len() as u32,
        numbers: [-1; MOST_FDS],
    };
    payload.numbers[..fds.len()].copy_from_slice(fds);
    control::send_with(
        to.as_raw_fd(),
        payload.as_bytes_mut(),
        fds,
        libc::MSG_DONTWAIT,
    )
}

#[cfg(test)]
#[path = "own_table_tests.rs"]
mod tests;
