//! Each caller's share of the supervisor's closes (`closer::Owner`): releases of one caller
//! that never end (the read end of a pipe whose lock a command holds, splicing an idle socket
//! into it) hold none of another caller's, and refuse that caller's copies only.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::closer::{self, ClosedElsewhere};
use super::notify;

/// Whether thread `tid` of this process waits in `splice(2)`.
fn in_splice(tid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .is_ok_and(|s| s.split_whitespace().next() == Some(&libc::SYS_splice.to_string()))
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

/// Whether a file of `owner`'s let go now is released within a second: the write end of a
/// new pipe, whose read end then sees the hang-up.
fn released_soon(owner: &std::sync::Arc<closer::Owner>) -> bool {
    let (read, write) = pipe();
    drop(ClosedElsewhere::new(write, owner));
    let mut pollfd = super::supervisor::poll_for(read.as_raw_fd(), libc::POLLIN);
    // SAFETY: one pollfd, alive for the call.
    unsafe { libc::poll(&raw mut pollfd, 1, 1000) == 1 && pollfd.revents & libc::POLLHUP != 0 }
}

/// Whether a copy of one of this process's fds is made for `owner` (or refused, EAGAIN).
fn copied_for(owner: &std::sync::Arc<closer::Owner>) -> bool {
    let probe = std::fs::File::open("/dev/null").unwrap();
    match notify::copy_fd(std::process::id(), probe.as_raw_fd(), owner) {
        Ok(_) => true,
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => false,
        Err(e) => panic!("copy_fd: {e}"),
    }
}

#[test]
fn a_callers_releases_that_wait_hold_no_other_callers() {
    let (stuck, other) = (closer::owner(Some("stuck")), closer::owner(Some("other")));
    assert!(copied_for(&stuck) && copied_for(&other));
    // Files of the pipe's read end of their own (each its own last reference), opened before
    // its lock is taken (an open waits for it too).
    let (read, write) = pipe();
    let files: Vec<OwnedFd> = (0..80)
        .map(|_| {
            std::fs::File::open(format!("/proc/self/fd/{}", read.as_raw_fd()))
                .unwrap()
                .into()
        })
        .collect();
    // A thread splices an idle socket into the pipe, holding the pipe's lock until a byte comes.
    let (idle, feed) = std::os::unix::net::UnixStream::pair().unwrap();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let splicer = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        // SAFETY: splice between two fds this thread holds; null offsets (a socket, a pipe).
        unsafe {
            libc::splice(
                idle.as_raw_fd(),
                std::ptr::null_mut(),
                write.as_raw_fd(),
                std::ptr::null_mut(),
                4096,
                0,
            )
        }
    });
    let tid = tid_rx.recv().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !in_splice(tid) {
        assert!(
            Instant::now() < deadline,
            "the splicer is not in its splice"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // One caller lets them go one by one: each release waits for the lock, on a thread of its
    // own, until its share of threads is used up; the rest wait for a thread.
    for file in files {
        drop(ClosedElsewhere::new(file, &stuck));
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(
        released_soon(&other),
        "another caller's release waits behind the stuck caller's"
    );
    assert!(copied_for(&other), "another caller's copy is refused");
    assert!(
        !copied_for(&stuck),
        "the caller whose releases wait is not refused past its share"
    );
    // The lock let go, the caller's releases end and its share comes back.
    std::io::Write::write_all(&mut &feed, b"x").unwrap();
    assert_eq!(splicer.join().unwrap(), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !copied_for(&stuck) {
        assert!(
            Instant::now() < deadline,
            "the caller's share did not come back"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(released_soon(&stuck));
    drop(read);
}
