//! The closes of the supervisor's files (`closer::ClosedElsewhere`): a release that waits (a
//! socket lingering with unsent data, or one in flight on a unix socket) holds neither the
//! supervisor's thread nor the closer. Each test has its control: the same close made plainly,
//! which waits here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::closer;
use super::supervisor::{connect, poll_for, socket_error, tcp_socket};

const LINGER_SECS: i32 = 2;

fn set_option(fd: RawFd, level: i32, name: i32, value: &[u8]) {
    // SAFETY: `value` is a live buffer of the option's size.
    let done = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    };
    assert_eq!(done, 0, "{}", io::Error::last_os_error());
}

/// A connected TCP socket of the supervisor's making (`tcp_socket`), lingering
/// ([`LINGER_SECS`]) with unsent data: a peer that never reads (its connection is not even
/// accepted yet) and little room on both sides. Its last close waits for the peer.
fn lingering_socket() -> (std::net::TcpListener, closer::ClosedElsewhere) {
    let peer = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    set_option(
        peer.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_RCVBUF,
        &4096i32.to_ne_bytes(),
    );
    let ours = tcp_socket(libc::AF_INET, &closer::owner(None)).unwrap();
    set_option(
        ours.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_SNDBUF,
        &4096i32.to_ne_bytes(),
    );
    match connect(&ours, peer.local_addr().unwrap()) {
        Ok(()) | Err(libc::EINPROGRESS) => {}
        Err(errno) => panic!("connect: errno {errno}"),
    }
    let mut pollfd = poll_for(ours.as_raw_fd(), libc::POLLOUT);
    // SAFETY: one pollfd, alive for the call.
    assert_eq!(unsafe { libc::poll(&raw mut pollfd, 1, 5000) }, 1);
    assert_eq!(socket_error(&ours), 0);
    let chunk = [0u8; 4096];
    let mut sent = 0usize;
    loop {
        // SAFETY: `chunk` is a live buffer of its length.
        let n = unsafe {
            libc::send(
                ours.as_raw_fd(),
                chunk.as_ptr().cast(),
                chunk.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n <= 0 {
            break;
        }
        sent += n as usize;
    }
    assert!(sent > 0);
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: LINGER_SECS,
    };
    // SAFETY: plain data of the option's size.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            (&raw const linger).cast::<u8>(),
            std::mem::size_of::<libc::linger>(),
        )
    };
    set_option(ours.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, bytes);
    (peer, ours)
}

/// The control: closing the last reference `file` plainly, on a thread of its own, waits for
/// the linger here.
fn the_control_lingers(file: OwnedFd) {
    let started = std::time::Instant::now();
    std::thread::spawn(move || drop(file)).join().unwrap();
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_millis(1500),
        "the control did not linger: {took:?}"
    );
}

/// Lets `file` go (the last reference of a lingering socket of `peer`'s, or of one in flight on
/// it): the closer goes on, no release thread waits, and the socket is released.
fn let_go_holds_nothing(file: closer::ClosedElsewhere, peer: &std::net::TcpListener) {
    let before = release_threads();
    drop(file);
    assert!(the_closer_goes_on(), "the closer waits on the socket");
    assert!(
        the_release_threads_end(&before),
        "a release waits on the linger"
    );
    assert!(released(peer), "the socket was kept, not released");
}

/// Whether a file handed to the closer after the others is closed within a second: the
/// write end of a pipe, whose read end then sees the hang-up. Handed over a moment after
/// the others, so that the closer is at them already (with them, it would be closed first).
fn the_closer_goes_on() -> bool {
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two fds into `ends`.
    assert_eq!(
        unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    // SAFETY: fresh fds nobody else owns.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    drop(closer::ClosedElsewhere::new(write, &closer::owner(None)));
    let mut pollfd = poll_for(read.as_raw_fd(), libc::POLLIN);
    // SAFETY: one pollfd, alive for the call.
    unsafe { libc::poll(&raw mut pollfd, 1, 1000) == 1 && pollfd.revents & libc::POLLHUP != 0 }
}

/// The release threads of this process now, by thread id (other tests in the same process,
/// under plain `cargo test`, may hold some of their own).
fn release_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim() == "agentty-release")
        })
        .map(|task| task.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Whether the release threads started since `before` was taken end within a second (a
/// release waiting on a linger would hold one for [`LINGER_SECS`]).
fn the_release_threads_end(before: &[String]) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        if release_threads().iter().all(|tid| before.contains(tid)) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The peer accepts and reads all that was sent: true if the connection then ends (the
/// socket was released, not kept), within a few seconds.
fn released(peer: &std::net::TcpListener) -> bool {
    use std::io::Read as _;
    let (mut accepted, _) = peer.accept().unwrap();
    accepted
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut buffer = [0u8; 65536];
    loop {
        match accepted.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

/// A socket the supervisor made and put in a command's place, whose last reference it holds
/// (the command closed its own), lingering with unsent data: its last close waits for the
/// peer up to the linger time (the control shows it does here). Let go, it holds neither
/// the supervisor's thread nor the closer (a file handed over after it is closed at once),
/// and it is released.
#[test]
fn a_lingering_socket_of_the_supervisors_holds_neither_its_thread_nor_the_closer() {
    let _alone = super::shares_tests::ONE_AT_A_TIME.lock();
    let (peer, control) = lingering_socket();
    the_control_lingers(control.into_inner());
    let (peer_of_ours, ours) = lingering_socket();
    let_go_holds_nothing(ours, &peer_of_ours);
    drop(peer);
}

/// A unix socket the supervisor holds the last reference of, with a lingering TCP socket in
/// flight on it (`SCM_RIGHTS`, the TCP socket's only reference left): releasing the unix
/// socket releases the TCP one on the same thread, which then waits (the control), unless
/// that thread is ending. Let go, it does not hold the closer.
#[test]
fn a_socket_in_flight_on_a_unix_socket_does_not_hold_the_closer() {
    let _alone = super::shares_tests::ONE_AT_A_TIME.lock();
    let in_flight = |tcp: OwnedFd| -> OwnedFd {
        let mut pair = [0; 2];
        // SAFETY: socketpair writes two fds into `pair`.
        assert_eq!(
            unsafe {
                libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                    0,
                    pair.as_mut_ptr(),
                )
            },
            0
        );
        // SAFETY: fresh fds nobody else owns.
        let (sending, receiving) =
            unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        let byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_ptr() as *mut libc::c_void,
            iov_len: 1,
        };
        // SAFETY: CMSG_SPACE is a pure computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        let mut control = vec![0u8; space];
        // SAFETY: msghdr is plain data; every pointer set below is alive for the call.
        let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
        message.msg_iov = &raw mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = space as _;
        // SAFETY: the control buffer holds one header and one fd.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&raw const message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), tcp.as_raw_fd());
            assert_eq!(libc::sendmsg(sending.as_raw_fd(), &raw const message, 0), 1);
        }
        drop(tcp);
        drop(sending);
        receiving
    };
    let (peer, control) = lingering_socket();
    the_control_lingers(in_flight(control.into_inner()));
    let (peer_of_ours, ours) = lingering_socket();
    let carrier = closer::ClosedElsewhere::new(in_flight(ours.into_inner()), &closer::owner(None));
    let_go_holds_nothing(carrier, &peer_of_ours);
    drop(peer);
}
