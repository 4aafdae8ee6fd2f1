//! Resizes of a terminal a secret is typed into, refused while it is (docs/BEHAVIOUR.md §4
//! *Sealed entry*).
//!
//! A resize sends SIGWINCH to the terminal's foreground group: a program that handles it (Go's
//! runtime handles every signal) leaves the read it waits in for a moment, and the terminal's
//! read lock is free then. A command of another spawn handed the terminal's fd (kept in flight
//! on a unix socket, out of any look at fd tables) could resize it and read a key of the
//! secret in that moment. The server's own resizes wait for the typing (`ResizesHeld` in
//! `shell/secret.rs`); a confined command's resize reaches the server instead of the kernel
//! (the sandbox's seccomp filter and its supervisor), which makes it here, on the command's own
//! file: refused with EBUSY while a secret is typed into that terminal. Made under the lock
//! the typing registers with, so no resize of the command's is under way once the typing
//! starts.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The terminals (their slave's device and inode) a secret is being typed into now.
static TYPED_INTO: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

fn typed_into() -> MutexGuard<'static, Vec<(u64, u64)>> {
    TYPED_INTO.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A secret being typed into the terminal `id` (a [`crate::pty::sys::Peer::file_id`]): its
/// resizes by confined commands fail until this is dropped.
#[derive(Debug)]
pub struct Typing((u64, u64));

impl Typing {
    pub fn new(id: (u64, u64)) -> Self {
        typed_into().push(id);
        Self(id)
    }
}

impl Drop for Typing {
    fn drop(&mut self) {
        let mut typed = typed_into();
        if let Some(at) = typed.iter().position(|&id| id == self.0) {
            typed.swap_remove(at);
        }
    }
}

/// Sets the window size of `terminal` (a confined command's fd, copied by the server) to
/// `size`, as its `ioctl(TIOCSWINSZ)` would; EBUSY while a secret is typed into it.
pub fn resize_unless_typed_into(terminal: BorrowedFd<'_>, size: &libc::winsize) -> io::Result<()> {
    // Held until the resize is made: a typing that starts meanwhile waits for it.
    let typed = typed_into();
    let stat = nix::sys::stat::fstat(terminal)?;
    if typed.contains(&(stat.st_dev, stat.st_ino)) {
        return Err(io::Error::from_raw_os_error(libc::EBUSY));
    }
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer.
    if unsafe { libc::ioctl(terminal.as_raw_fd(), libc::TIOCSWINSZ, size) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
