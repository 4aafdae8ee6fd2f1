//! A shell's private channel to the server: how bash and zsh say that a command ended, and with
//! what exit code, in a way no program they run can imitate (docs/BEHAVIOUR.md §4).
//!
//! Whatever a program prints can look like a prompt marker, and whatever the shell knows and has
//! in its environment, a program it starts can read. What a program cannot change is who it is:
//! a Unix socket pair per shell (`SOCK_SEQPACKET`: datagrams on a connection), the server's end
//! with `SO_PASSCRED`, makes the kernel stamp every datagram with the sending process's pid
//! (translated into the server's PID namespace; naming another pid takes `CAP_SYS_ADMIN`, which
//! confined commands drop). The
//! shell's end is its fd [`SHELL_CHANNEL_FD`]; its prompt hook, a builtin run in the shell's
//! own process, sends `D <seq> <code>` there just before it prints its end marker. Every
//! program the shell starts inherits that fd too, but what it sends carries its own pid and is
//! dropped. A sequenced-packet socket sends only to its peer: a `SOCK_DGRAM` one would also send
//! to any unix socket an address names (`sendto` to syslog's `/dev/log`), which with loopback
//! closed no confined command may hold (`agentty-sandbox`'s `seccomp.rs`).
//!
//! The server's end is non-blocking and close-on-exec. It is drained when an end marker arrives
//! (the shell sent the datagram before printing the marker, so it is queued by then) and at each
//! probe of a waiting send (every 50 ms while output is quiet): a program that fills the queue
//! makes the shell's own report wait for room (the shell's end blocks), so it holds the prompt
//! up that long at most while a send waits for it. No task watches it: on every command that
//! would be one more wake-up. Anything else a datagram can carry is refused: passed fds are
//! closed at once, truncated datagrams dropped.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The shell's end of its channel, as the shell sees it. High enough to stay out of the way of
/// what a user redirects (3–9) and of what bash and zsh open for themselves (zsh from 10 up,
/// bash from 255 down).
pub const SHELL_CHANNEL_FD: RawFd = 100;

/// Where bash finds its start-up text (`startup.rs`), read and closed before its first prompt.
pub const SHELL_STARTUP_FD: RawFd = 101;

/// Holds [`SHELL_CHANNEL_FD`] and [`SHELL_STARTUP_FD`] in the server's own table for good
/// (`/dev/null`, close-on-exec), where they are free: a shell's child `dup2`s its fds onto those
/// numbers before its `exec`, which closes its copy of whatever the server had there, and a
/// server file there (a command's pipe, whose lock the command holds) would then be released by
/// the child, with its launcher held until it is (review 28).
pub(crate) fn reserve_shell_fds() {
    static RESERVED: std::sync::Once = std::sync::Once::new();
    RESERVED.call_once(|| {
        let Ok(null) = std::fs::File::open("/dev/null") else {
            return;
        };
        for number in [SHELL_CHANNEL_FD, SHELL_STARTUP_FD] {
            // SAFETY: F_DUPFD_CLOEXEC gives the lowest free number at or above the one asked;
            // kept only if it is that number (never closing one the server holds), for the
            // life of the process.
            let at = unsafe {
                libc::fcntl(
                    std::os::fd::AsRawFd::as_raw_fd(&null),
                    libc::F_DUPFD_CLOEXEC,
                    number,
                )
            };
            if at >= 0 && at != number {
                // SAFETY: the copy just made, owned by nothing else.
                unsafe { libc::close(at) };
            }
        }
    });
}

/// Longest datagram read: `D <seq> <code>` is far shorter; a longer one is no report.
const DATAGRAM_MAX_BYTES: usize = 64;

/// Datagrams read in one drain at most: an empty one and the end of the connection (the shell
/// and every program holding its end gone) both read as 0 bytes, the end forever.
const DRAIN_MAX: usize = 1024;

/// The server's end.
pub(crate) struct Channel {
    fd: OwnedFd,
}

/// A pair: the server's end and the shell's (blocking, close-on-exec until it is installed in
/// the child as [`SHELL_CHANNEL_FD`]). The shell's end blocks: a shell whose report finds the
/// queue full waits until the server drained it, rather than losing it.
pub(crate) fn pair() -> io::Result<(Channel, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two fds into the array on success.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds are fresh and owned by nobody else.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads one int; fcntl on an fd we own.
    unsafe {
        if libc::setsockopt(
            ours.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PASSCRED,
            (&raw const on).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        let flags = libc::fcntl(ours.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(ours.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((Channel { fd: ours }, theirs))
}

/// One datagram: what it says, and the pid of the process that sent it as the kernel saw it
/// (`None`: it came without credentials, which the kernel always attaches here).
pub(crate) struct Datagram<'a> {
    pub bytes: &'a [u8],
    pub sender: Option<i32>,
}

impl Channel {
    /// Calls `each` with the datagrams queued now, oldest first, until none is left or `each`
    /// returns `false`.
    pub fn drain(&self, mut each: impl FnMut(Datagram<'_>) -> bool) {
        let mut buf = [0u8; DATAGRAM_MAX_BYTES];
        // Room for the credentials and a few passed fds (which are closed); `u64` for alignment.
        let mut control = [0u64; 16];
        for _ in 0..DRAIN_MAX {
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: a zeroed msghdr is valid; the pointers set below outlive the call.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &raw mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = size_of_val(&control) as _;
            // SAFETY: recvmsg writes at most the lengths given into `buf` and `control`.
            let n = unsafe {
                libc::recvmsg(
                    self.fd.as_raw_fd(),
                    &raw mut msg,
                    libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
                )
            };
            if n < 0 {
                return; // EAGAIN: drained (any other error: nothing more to read either)
            }
            // SAFETY: `msg` was filled by recvmsg; its control buffer is ours.
            let sender = unsafe { credentials_closing_fds(&msg) };
            if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
                tracing::debug!("a truncated datagram on a shell's channel was dropped");
                continue;
            }
            let len = usize::try_from(n).unwrap_or(0).min(buf.len());
            let more = each(Datagram {
                bytes: &buf[..len],
                sender,
            });
            if !more {
                return;
            }
        }
    }
}

/// The sender's pid from the credentials in `msg`'s control data; every fd it passed
/// (`SCM_RIGHTS`) is closed.
///
/// # Safety
/// `msg` must have been filled by `recvmsg`, its control pointer still valid.
unsafe fn credentials_closing_fds(msg: &libc::msghdr) -> Option<i32> {
    let mut sender = None;
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled, within its length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            let header = &*cmsg;
            let data = libc::CMSG_DATA(cmsg);
            let len = header.cmsg_len as usize - libc::CMSG_LEN(0) as usize;
            match (header.cmsg_level, header.cmsg_type) {
                (libc::SOL_SOCKET, libc::SCM_CREDENTIALS) if len >= size_of::<libc::ucred>() => {
                    let cred = data.cast::<libc::ucred>().read_unaligned();
                    sender = Some(cred.pid);
                }
                (libc::SOL_SOCKET, libc::SCM_RIGHTS) => {
                    for i in 0..len / size_of::<RawFd>() {
                        let fd = data.cast::<RawFd>().add(i).read_unaligned();
                        libc::close(fd);
                    }
                }
                _ => {}
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    sender
}

/// `D <seq> <code>`: the shell's report that the command numbered `seq` (its prompt count)
/// ended with `code`.
pub(crate) fn parse_end(bytes: &[u8]) -> Option<(u64, i32)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut words = text.split(' ');
    let (Some("D"), Some(seq), Some(code), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return None;
    };
    Some((seq.parse().ok()?, code.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn an_end_report_is_exactly_three_words() {
        assert_eq!(parse_end(b"D 3 130"), Some((3, 130)));
        assert_eq!(parse_end(b"D 3"), None);
        assert_eq!(parse_end(b"D 3 0 x"), None);
        assert_eq!(parse_end(b"E 3 0"), None);
        assert_eq!(parse_end(b"D -1 0"), None);
    }

    /// The kernel stamps each datagram with its sender's pid; fds passed along are not kept.
    #[test]
    fn each_datagram_carries_its_senders_pid_and_passed_fds_are_closed() {
        let (channel, theirs) = pair().unwrap();
        let fds_before = std::fs::read_dir("/proc/self/fd").unwrap().count();
        // SAFETY: send on a socket we own, of a buffer we own.
        let sent = unsafe { libc::send(theirs.as_raw_fd(), b"D 1 0".as_ptr().cast(), 5, 0) };
        assert_eq!(sent, 5);
        // Passing fds: they must not pile up in the server.
        let mut control = [0u64; 4];
        let payload = *b"D 2 0";
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr() as *mut _,
            iov_len: payload.len(),
        };
        // SAFETY: a msghdr carrying one SCM_RIGHTS with fds 0 and 1, in buffers we own.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &raw mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(8) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(8) as _;
            let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
            data.write_unaligned(0);
            data.add(1).write_unaligned(1);
            assert_eq!(libc::sendmsg(theirs.as_raw_fd(), &msg, 0), 5);
        }
        let mut got = Vec::new();
        channel.drain(|d| {
            got.push((d.bytes.to_vec(), d.sender));
            true
        });
        let me = std::process::id().cast_signed();
        assert_eq!(
            got,
            vec![(b"D 1 0".to_vec(), Some(me)), (b"D 2 0".to_vec(), Some(me))]
        );
        assert_eq!(
            std::fs::read_dir("/proc/self/fd").unwrap().count(),
            fds_before
        );
    }

    /// The shell channel's number is held by the server from its start (`crate::init`), as
    /// `/dev/null`: a shell's child that `dup2`s its channel there drops a copy of nothing the
    /// server's commands could hold up.
    #[test]
    fn the_shell_channels_number_is_held_as_dev_null() {
        crate::init().unwrap();
        let held = std::fs::read_link(format!("/proc/self/fd/{SHELL_CHANNEL_FD}")).unwrap();
        assert_eq!(held, std::path::Path::new("/dev/null"));
        // SAFETY: F_GETFD on a plain integer.
        let flags = unsafe { libc::fcntl(SHELL_CHANNEL_FD, libc::F_GETFD) };
        assert_eq!(
            flags & libc::FD_CLOEXEC,
            libc::FD_CLOEXEC,
            "not close-on-exec"
        );
    }
}
