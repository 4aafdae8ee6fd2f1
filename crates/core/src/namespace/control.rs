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

/// Sends `data` as one message, with `fd` passed along when there is one.
pub(crate) fn send(socket: RawFd, data: &[u8], fd: Option<RawFd>) -> io::Result<()> {
    // A buffer aligned for a `cmsghdr`, with room for one fd.
    let mut control = [0u64; 4];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // SAFETY: a plain C struct, for which all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        let fd_bytes = size_of::<libc::c_int>() as u32;
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE and CMSG_LEN compute sizes; the first header of `msg` lies inside
        // `control`, which holds CMSG_SPACE of one int.
        unsafe {
            msg.msg_controllen = libc::CMSG_SPACE(fd_bytes) as _;
            let header = libc::CMSG_FIRSTHDR(&raw const msg);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), fd);
        }
    }
    // SAFETY: sendmsg reads `msg`, whose pointers are valid for the call.
    let sent = unsafe { libc::sendmsg(socket, &raw const msg, libc::MSG_NOSIGNAL) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one message into `data`: its length (0 at EOF) and the fd passed along, if any
/// (close-on-exec).
pub(crate) fn receive(socket: RawFd, data: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    let mut control = [0u64; 4];
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
    let got = unsafe { libc::recvmsg(socket, &raw mut msg, libc::MSG_CMSG_CLOEXEC) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fd = None;
    // SAFETY: the headers walked are those recvmsg wrote inside `control`; an SCM_RIGHTS one
    // holds fds that are now this process's own.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&raw const msg);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let passed =
                    std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>());
                fd = Some(OwnedFd::from_raw_fd(passed));
            }
            header = libc::CMSG_NXTHDR(&raw const msg, header);
        }
    }
    Ok((got as usize, fd))
}
