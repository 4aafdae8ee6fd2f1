//! The closer's side of closing the supervisor's files (`closer.rs`): the fd table of its own
//! they are held in, how they get there (in flight on a socket), and the short-lived threads
//! that take them into a table of their own and end.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, socketpair,
};

/// The socket pair files are sent to the closer on: (the senders' end, the closer's).
pub(super) fn socket_pair() -> nix::Result<(OwnedFd, OwnedFd)> {
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
}

/// Sends `fd` to the closer on `socket`, with the number of its owner. Blocks while the
/// closer's queue is full: the closer never waits on a release, so it empties it soon.
pub(super) fn send_fd(socket: &OwnedFd, owner: u32, fd: &OwnedFd) -> nix::Result<()> {
    let payload = owner.to_ne_bytes();
    let fds = [fd.as_raw_fd()];
    loop {
        match sendmsg::<()>(
            socket.as_raw_fd(),
            &[IoSlice::new(&payload)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        ) {
            Err(nix::errno::Errno::EINTR) => {}
            sent => return sent.map(drop),
        }
    }
}

/// The next file waiting on `socket` (the closer's end), with its owner's number; `None` when
/// none waits.
pub(super) fn receive_fd(socket: &OwnedFd) -> Option<(u32, OwnedFd)> {
    use std::os::fd::FromRawFd as _;
    loop {
        let mut payload = [0u8; 4];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let mut iov = [IoSliceMut::new(&mut payload)];
        let got = match recvmsg::<()>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(got) => got,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return None,
        };
        let mut file = None;
        for message in got.cmsgs().into_iter().flatten() {
            if let ControlMessageOwned::ScmRights(fds) = message {
                for fd in fds {
                    // SAFETY: a file passed to us: the fd is new in this table, owned by none.
                    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                    file.get_or_insert(owned);
                }
            }
        }
        let Some(file) = file else {
            continue;
        };
        return Some((u32::from_ne_bytes(payload), file));
    }
}

/// Gives the closer's thread an fd table of its own, holding only `socket` (its end), made
/// from the process's as it is now (so made at start, before any command runs). False where
/// the kernel has no `close_range` (Linux 5.9): the closer then shares the process's table.
pub(super) fn closers_table(socket: RawFd) -> bool {
    table_of_its_own_with(&[socket as u32])
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
                // Counted all the same, until the next look finds the number gone.
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
