//! The closer's side of closing the supervisor's files (`closer.rs`): the fd table of its own
//! they are held in, how they get there (a copy taken from the process's table with
//! `pidfd_getfd`), and the short-lived threads that take them into a table of their own and end.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long a file's holder waits for the closer to take it, at most: the closer never waits
/// on a release, so it answers within microseconds; past this the file is kept and offered
/// again (`closer::close_elsewhere`).
const TAKE_WAIT: Duration = Duration::from_secs(5);

/// A file offered to the closer: its number in the process's table, its owner's number, where
/// to say whether the closer took a copy, and where the offerer says it closed its own.
struct Offer {
    fd: RawFd,
    owner: u32,
    taken: mpsc::SyncSender<bool>,
    closed: mpsc::Receiver<()>,
}

/// The closer's thread, as the rest of the process reaches it.
pub(super) struct Closer {
    offers: Mutex<mpsc::Sender<Offer>>,
}

/// The files offered to the closer, as its thread takes them.
pub(super) struct Offered {
    /// This process, opened in the closer's table: the files are taken from its table.
    process: OwnedFd,
    offers: mpsc::Receiver<Offer>,
}

impl Closer {
    /// Starts the closer's thread, which runs `serve`; `None` if it cannot start. It is started
    /// while the server starts (`notify::fds_copyable`, before any command runs), as its table
    /// is made from the process's then (see [`closers_table`]).
    pub(super) fn start(serve: fn(Offered)) -> Option<Closer> {
        let (offers, offered) = mpsc::channel::<Offer>();
        let (ready, started) = mpsc::sync_channel::<()>(0);
        std::thread::Builder::new()
            .name("agentty-closer".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                closers_table();
                // SAFETY: pidfd_open of this process; the fd it returns is ours.
                let process = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
                let _ = ready.send(());
                if process < 0 {
                    return;
                }
                serve(Offered {
                    // SAFETY: a fresh fd nobody else owns.
                    process: unsafe { OwnedFd::from_raw_fd(process as RawFd) },
                    offers: offered,
                });
            })
            .ok()?;
        started.recv().ok()?;
        Some(Closer {
            offers: Mutex::new(offers),
        })
    }

    /// Offers `fd` (of owner number `owner`) to the closer, waits until it took a copy, then
    /// closes `fd`, which is not the file's last reference then, and says so: the closer lets
    /// its copy go only after that, so its release is the last. `fd` back if the closer could
    /// not take it.
    pub(super) fn hand(&self, fd: OwnedFd, owner: u32) -> Result<(), OwnedFd> {
        let (taken, told) = mpsc::sync_channel(1);
        let (closed, closing) = mpsc::sync_channel(1);
        let offer = Offer {
            fd: fd.as_raw_fd(),
            owner,
            taken,
            closed: closing,
        };
        let sent = self
            .offers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(offer);
        if sent.is_err() || !told.recv_timeout(TAKE_WAIT).unwrap_or(false) {
            return Err(fd);
        }
        drop(fd);
        let _ = closed.send(());
        Ok(())
    }
}

impl Offered {
    /// On the closer's thread: waits for an offer (at most `wait`; `None`: until one comes),
    /// then takes a copy of each file offered from the process's table into the closer's, with
    /// its owner's number.
    pub(super) fn take(&self, wait: Option<Duration>) -> Vec<(u32, OwnedFd)> {
        let first = match wait {
            None => self.offers.recv().ok(),
            Some(wait) => self.offers.recv_timeout(wait).ok(),
        };
        let mut taken = Vec::new();
        for offer in first.into_iter().chain(self.offers.try_iter()) {
            // SAFETY: pidfd_getfd takes a pidfd, an fd number of that process and flags; the
            // new fd is ours (close-on-exec). The offerer keeps its fd open until answered.
            let copy = unsafe {
                libc::syscall(
                    libc::SYS_pidfd_getfd,
                    self.process.as_raw_fd(),
                    offer.fd,
                    0u32,
                )
            };
            if copy < 0 {
                let _ = offer.taken.send(false);
                continue;
            }
            // SAFETY: a fresh fd nobody else owns.
            let copy = unsafe { OwnedFd::from_raw_fd(copy as RawFd) };
            // An offerer that gave up keeps its file: this copy goes (not its last reference).
            if offer.taken.send(true).is_err() {
                continue;
            }
            // Kept until the offerer closed its own (at once: not the last reference), so that
            // the last is never the offerer's.
            if offer.closed.recv_timeout(TAKE_WAIT).is_ok() {
                taken.push((offer.owner, copy));
            } else {
                // Never let go: whatever the offerer does, the last reference is not its.
                std::mem::forget(copy);
            }
        }
        taken
    }
}

/// Gives the closer's thread an fd table of its own, holding none of the process's files, made
/// from the process's as it is now (so made at start, before any command runs). False where
/// the kernel has no `close_range` (Linux 5.9): the closer then shares the process's table.
fn closers_table() -> bool {
    table_of_its_own_with(&[])
}

/// A release thread, by its `stat` file kept open: it reads nothing once the thread is gone,
/// whatever thread gets its number later. (`None`: the file could not be opened; the thread
/// counts as gone.)
pub(super) struct Thread(Option<std::fs::File>);

impl Thread {
    /// Whether the thread is still there (exiting, waiting on a release, counts).
    pub(super) fn alive(&self) -> bool {
        let mut byte = [0u8; 1];
        self.0.as_ref().is_some_and(|file| {
            std::os::unix::fs::FileExt::read_at(file, &mut byte, 0).is_ok_and(|n| n > 0)
        })
    }
}

/// What became of files handed to [`on_an_exiting_thread`].
pub(super) enum Released {
    /// A release thread took them.
    Taken(Thread),
    /// No thread could have a table of its own: closed here.
    Here,
    /// No thread could start: given back.
    NotStarted(Vec<OwnedFd>),
}

/// Hands `files` to a thread of their own, which takes them into an fd table of its own and
/// ends, releasing them as it exits (see `closer::close_elsewhere`). Returns once they are out
/// of the caller's table (the closer's).
pub(super) fn on_an_exiting_thread(files: Vec<OwnedFd>) -> Released {
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
                // The caller's table lets go of them first: then this one holds their last
                // references when the thread ends.
                let _ = wait.recv();
            }
        });
    if started.is_err() {
        return Released::NotStarted(files);
    }
    let taken = told.recv().ok().flatten();
    // Opened here, in this table, while the thread waits: bound to that thread.
    let thread = taken.map(|tid| std::fs::File::open(format!("/proc/self/task/{tid}/stat")));
    // Dropped here: the last references when the thread could not take them; else this
    // table's, which the thread's table holds still.
    drop(files);
    match thread {
        Some(opened) => {
            let _ = go.send(());
            match opened {
                Ok(file) => Released::Taken(Thread(Some(file))),
                // Not counted (gone at the next look): its file could not be opened.
                Err(_) => Released::Taken(Thread(None)),
            }
        }
        None => Released::Here,
    }
}

/// Gives the calling thread an fd table of its own holding only the fds `kept` (sorted): a
/// copy of the one it shares (`close_range` of no fd with `CLOSE_RANGE_UNSHARE`, Linux 5.9,
/// which the supervisor needs anyway), in which every other fd is then closed. False if it
/// could not: then the thread shares the table still.
fn table_of_its_own_with(kept: &[u32]) -> bool {
    const CLOSE_RANGE_UNSHARE: libc::c_uint = 1 << 1;
    // SAFETY: close_range of the one fd number no table holds, unsharing this thread's table.
    let unshared = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            u32::MAX,
            u32::MAX,
            CLOSE_RANGE_UNSHARE,
        )
    };
    if unshared != 0 {
        return false;
    }
    #[cfg(test)]
    tests::after_copy();
    let mut from = 0u32;
    for &fd in kept.iter().chain(std::iter::once(&u32::MAX)) {
        if fd > from {
            // SAFETY: closes fds from..=fd-1 of this thread's table, a copy of its own.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, 0u32) };
        }
        from = fd.saturating_add(1);
    }
    true
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::Mutex;
    use std::sync::mpsc::{Receiver, Sender};

    /// A pause a test sets for the next thread that copies its table: told once it has its
    /// copy, it waits for the word to go on.
    pub(in crate::net) static PAUSE_AFTER_COPY: Mutex<Option<(Sender<()>, Receiver<()>)>> =
        Mutex::new(None);

    pub(super) fn after_copy() {
        let pause = PAUSE_AFTER_COPY
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((copied, go)) = pause {
            let _ = copied.send(());
            let _ = go.recv();
        }
    }
}
