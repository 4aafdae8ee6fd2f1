//! The control socket between the server and the session init (a `SOCK_SEQPACKET` pair: one
//! message per request or reply, and EOF when the server is gone). The server asks for a
//! caller's namespace with the request's number; the session init answers with the number, a
//! status (0, or the errno that stopped it) and, made, a pidfd of the new namespace's init.
//! Plain system calls only: the session init's side runs in a forked copy of the server.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::check;

/// A request: its number.
pub(super) const REQUEST_BYTES: usize = 4;
/// A reply: the status byte, then the request's number.
pub(super) const REPLY_BYTES: usize = 5;

/// A connected pair, both ends close-on-exec: (the server's, the session init's).
pub(crate) fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two fresh fds into the array on success; nothing else owns them.
    unsafe {
        check(libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        ))?;
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// Most fds one message carries.
pub(crate) const MOST_FDS: usize = 7;

/// A control buffer aligned for a `cmsghdr`, with room for [`MOST_FDS`] fds (`CMSG_SPACE` of
/// 28 bytes is 48 on Linux).
type ControlBuffer = [u64; 8];

/// Sends `data` as one message, with `fd` passed along when there is one.
pub(crate) fn send(socket: RawFd, data: &[u8], fd: Option<RawFd>) -> io::Result<()> {
    send_with(socket, data, fd.as_slice(), 0)
}

/// Sends `data` as one message with `fds` (at most [`MOST_FDS`]) passed along, with `flags`
/// besides `MSG_NOSIGNAL` (`MSG_DONTWAIT`). No allocation: the session init's side uses it.
pub(crate) fn send_with(
    socket: RawFd,
    data: &[u8],
    fds: &[RawFd],
    flags: libc::c_int,
) -> io::Result<()> {
    if fds.len() > MOST_FDS {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut control = ControlBuffer::default();
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // SAFETY: a plain C struct, for which all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let fd_bytes = size_of_val(fds) as u32;
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE and CMSG_LEN compute sizes; the first header of `msg` and the
        // fds after it lie inside `control`, which holds CMSG_SPACE of MOST_FDS ints.
        unsafe {
            msg.msg_controllen = libc::CMSG_SPACE(fd_bytes) as _;
            let header = libc::CMSG_FIRSTHDR(&raw const msg);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(header).cast::<libc::c_int>(),
                fds.len(),
            );
        }
    }
    // SAFETY: sendmsg reads `msg`, whose pointers are valid for the call.
    let sent = unsafe { libc::sendmsg(socket, &raw const msg, flags | libc::MSG_NOSIGNAL) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one message into `data`: its length (0 at EOF) and the fd passed along, if any
/// (close-on-exec).
pub(crate) fn receive(socket: RawFd, data: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    let mut fd = None;
    let (got, _) = receive_with(socket, data, 0, |passed| fd = Some(passed))?;
    Ok((got, fd))
}

/// Receives one message into `data`, with `flags` besides `MSG_CMSG_CLOEXEC`
/// (`MSG_DONTWAIT`): its length (0 at EOF) and the message's flags (`MSG_TRUNC`,
/// `MSG_CTRUNC`); each fd passed along, now this process's own, goes to `each_fd`. No
/// allocation: the session init's side uses it.
pub(crate) fn receive_with(
    socket: RawFd,
    data: &mut [u8],
    flags: libc::c_int,
    mut each_fd: impl FnMut(OwnedFd),
) -> io::Result<(usize, libc::c_int)> {
    let mut control = ControlBuffer::default();
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // SAFETY: a plain C struct, for which all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: recvmsg writes into the buffers `msg` points to, of the sizes it gives.
    let got = unsafe { libc::recvmsg(socket, &raw mut msg, flags | libc::MSG_CMSG_CLOEXEC) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the headers walked are those recvmsg wrote inside `control`; an SCM_RIGHTS one
    // holds fds that are now this process's own.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&raw const msg);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let passed = libc::CMSG_DATA(header).cast::<libc::c_int>();
                let bytes = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..bytes / size_of::<libc::c_int>() {
                    each_fd(OwnedFd::from_raw_fd(passed.add(i).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&raw const msg, header);
        }
    }
    Ok((got as usize, msg.msg_flags))
}
