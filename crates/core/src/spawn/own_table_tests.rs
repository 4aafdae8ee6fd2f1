//! A cloner's table: a spawn's fds reach it, each at the number it has in the sender's table,
//! whatever numbers they came at; a spawn never gets another's.

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use super::{Table, send};

/// The inode behind fd `fd` of this thread's table (`None`: nothing there).
fn inode(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat writes a plain struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat of a number; an empty slot says EBADF.
    (unsafe { libc::fstat(fd, &raw mut st) } == 0).then_some(st.st_ino)
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two fds into `ends`.
    assert_eq!(
        unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    // SAFETY: fresh fds nobody else owns.
    unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) }
}

#[test]
fn a_spawns_fds_are_put_at_their_numbers() {
    // Numbers high enough that the receiving table (a socket and little else) has them free.
    let pipes: Vec<_> = (0..2).map(|_| pipe()).collect();
    let numbers: Vec<RawFd> = pipes
        .iter()
        .flat_map(|(r, w)| [r.as_raw_fd(), w.as_raw_fd()])
        .collect();
    let inodes: Vec<u64> = numbers.iter().map(|&n| inode(n).unwrap()).collect();
    let seen = run(&numbers, &inodes);
    for (number, there, sent) in seen {
        assert_eq!(there, Some(sent), "fd {number} holds another file");
    }
}

/// Sends the fds at `numbers` for spawns 6 and then 7 (6's is let go), and receives 7's.
fn run(numbers: &[RawFd], inodes: &[u64]) -> Vec<(RawFd, Option<u64>, u64)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (go_tx, go) = std::sync::mpsc::channel::<()>();
    let wanted = numbers.to_vec();
    let expected = inodes.to_vec();
    let thread = std::thread::spawn(move || {
        let (mut table, end) = Table::make().unwrap();
        // SAFETY: gettid has no preconditions.
        tx.send((unsafe { libc::gettid() }, end)).unwrap();
        go.recv().unwrap();
        // SAFETY: the other end, this thread's own; the sender has its copy.
        unsafe { libc::close(end) };
        let placed = table.receive(7).unwrap();
        let seen: Vec<_> = wanted
            .iter()
            .zip(&expected)
            .map(|(&n, &ino)| (n, inode(n), ino))
            .collect();
        placed.close();
        seen
    });
    let (tid, end) = rx.recv().unwrap();
    let to = super::take_end(tid, end).unwrap();
    // An earlier spawn's fds, never received: let go, not taken for 7's.
    let (r, w) = pipe();
    send(&to, 6, &[w.as_raw_fd(), r.as_raw_fd()]).unwrap();
    send(&to, 7, numbers).unwrap();
    go_tx.send(()).unwrap();
    thread.join().unwrap()
}

/// Fds received at the numbers others are to be put at, and at the table's socket's: each still
/// ends where it is to be (the socket moved out of the way), none lost.
#[test]
fn fds_received_where_others_go_are_put_right() {
    std::thread::spawn(|| {
        let (mut table, end) = Table::make().unwrap();
        // SAFETY: the other end, not taken by anyone here.
        unsafe { libc::close(end) };
        // The write ends are the spawn's too (everything but the socket): closed by the
        // placement's close, never dropped here.
        let (a, wa) = pipe();
        let (b, wb) = pipe();
        let (c, wc) = pipe();
        let writes = [wa, wb, wc].map(IntoRawFd::into_raw_fd);
        let (ia, ib, ic) = (
            inode(a.as_raw_fd()).unwrap(),
            inode(b.as_raw_fd()).unwrap(),
            inode(c.as_raw_fd()).unwrap(),
        );
        let socket = table.socket.as_raw_fd();
        // a goes where b is, b where a is, c where the socket is.
        let at = [b.as_raw_fd(), a.as_raw_fd(), socket];
        let placed = super::place(vec![a, b, c], &at, Some(&mut table.socket)).unwrap();
        assert_eq!(inode(at[0]), Some(ia));
        assert_eq!(inode(at[1]), Some(ib));
        assert_eq!(inode(at[2]), Some(ic));
        assert_ne!(table.socket.as_raw_fd(), socket, "the socket was not moved");
        // SAFETY: getsockopt of an int into an int.
        let mut kind: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(
                table.socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TYPE,
                (&raw mut kind).cast(),
                &raw mut len,
            )
        };
        assert_eq!((rc, kind), (0, libc::SOCK_SEQPACKET), "the socket was lost");
        placed.close();
        for fd in at.into_iter().chain(writes) {
            assert_eq!(inode(fd), None, "fd {fd} still open after the close");
        }
    })
    .join()
    .unwrap();
}

/// A probe's refusal (a seccomp profile's EPERM, an old kernel's ENOSYS) is kept, as is a
/// success; a failure that may pass (EAGAIN, EMFILE: which the same user's commands can bring
/// about at the moment of the first ask) is not, and the next ask tries again.
#[test]
fn only_a_certain_answer_is_kept() {
    use std::io;
    use std::sync::OnceLock;
    let refused = OnceLock::new();
    assert_eq!(
        super::kept_once_certain(&refused, || Err(io::Error::from_raw_os_error(libc::EPERM))),
        Some(false)
    );
    assert_eq!(
        super::kept_once_certain(&refused, || Ok(())),
        Some(false),
        "a refusal was not kept"
    );
    let passing = OnceLock::new();
    for errno in [libc::EAGAIN, libc::EMFILE, libc::ENOMEM] {
        assert_eq!(
            super::kept_once_certain(&passing, || Err(io::Error::from_raw_os_error(errno))),
            None,
            "a passing failure is no answer"
        );
    }
    assert_eq!(
        super::kept_once_certain(&passing, || Ok(())),
        Some(true),
        "a passing failure was kept"
    );
    assert_eq!(
        super::kept_once_certain(&passing, || Err(io::Error::from_raw_os_error(libc::EPERM))),
        Some(true)
    );
}
