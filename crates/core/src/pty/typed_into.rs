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
//!
//! A terminal is told by the device the file acts on (`TIOCGDEV`), not by the file: the slave
//! opened by its path, `/dev/tty` (its own inode, acting on the opener's controlling terminal)
//! and the master all act on it. The device's number is the same in every devpts instance
//! (each shell's `/dev/pts/0`, where the server has one per terminal): a slave opened in
//! another instance (its file's own device says so) is another terminal; a file that does not
//! say (`/dev/tty`, a master) is taken for the one typed into.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A terminal a secret is typed into: the device it is (major, minor) and the devpts instance
/// its slave lives in (the slave file's own device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Terminal {
    device: (u32, u32),
    instance: u64,
}

/// The terminals a secret is being typed into now.
static TYPED_INTO: Mutex<Vec<Terminal>> = Mutex::new(Vec::new());

fn typed_into() -> MutexGuard<'static, Vec<Terminal>> {
    TYPED_INTO.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The device (major, minor) of the terminal `fd` acts on: `TIOCGDEV`, in the kernel's own
/// encoding of a device number. ENOTTY when `fd` is no terminal.
fn device_of(fd: BorrowedFd<'_>) -> io::Result<(u32, u32)> {
    let mut dev: libc::c_uint = 0;
    // SAFETY: TIOCGDEV writes one unsigned int to the pointer.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGDEV, &raw mut dev) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(((dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00)))
}

/// A file's own device, as (major, minor), and the device of the file system it is on.
fn file_devices(fd: BorrowedFd<'_>) -> io::Result<((u32, u32), u64)> {
    let stat = nix::sys::stat::fstat(fd)?;
    let rdev = stat.st_rdev;
    Ok(((libc::major(rdev), libc::minor(rdev)), stat.st_dev))
}

/// A secret being typed into the terminal whose slave `peer` is: its resizes by confined
/// commands fail until this is dropped.
#[derive(Debug)]
pub struct Typing(Terminal);

impl Typing {
    pub fn new(peer: BorrowedFd<'_>) -> io::Result<Self> {
        let device = device_of(peer)?;
        let (_, instance) = file_devices(peer)?;
        let terminal = Terminal { device, instance };
        typed_into().push(terminal);
        Ok(Self(terminal))
    }
}

impl Drop for Typing {
    fn drop(&mut self) {
        let mut typed = typed_into();
        if let Some(at) = typed.iter().position(|&t| t == self.0) {
            typed.swap_remove(at);
        }
    }
}

/// Sets the window size of `terminal` (a confined command's fd, copied by the server) to
/// `size`, as its `ioctl(TIOCSWINSZ)` would; EBUSY while a secret is typed into the terminal
/// it acts on (the module header).
pub fn resize_unless_typed_into(terminal: BorrowedFd<'_>, size: &libc::winsize) -> io::Result<()> {
    // Held until the resize is made: a typing that starts meanwhile waits for it.
    let typed = typed_into();
    if !typed.is_empty() {
        // No terminal (ENOTTY): the resize below fails as the kernel says.
        if let Ok(device) = device_of(terminal) {
            let (own, instance) = file_devices(terminal)?;
            let a_slave = own == device;
            if typed
                .iter()
                .any(|t| t.device == device && (!a_slave || t.instance == instance))
            {
                return Err(io::Error::from_raw_os_error(libc::EBUSY));
            }
        }
    }
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer.
    if unsafe { libc::ioctl(terminal.as_raw_fd(), libc::TIOCSWINSZ, size) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;
    use crate::pty::sys::{Peer, open_pair};

    const SIZE: libc::winsize = libc::winsize {
        ws_row: 20,
        ws_col: 70,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };

    /// Every file acting on the terminal typed into is refused, through the master too; another
    /// terminal is not, nor the same one once the typing ends.
    #[test]
    fn a_terminal_typed_into_is_not_resized_through_any_of_its_files() {
        let typed = open_pair(80, 24).unwrap();
        let other = open_pair(80, 24).unwrap();
        let peer = Peer::open(typed.master.as_raw_fd(), &typed.tty_path).unwrap();
        let by_path = std::fs::File::open(&typed.tty_path).unwrap();
        let typing = Typing::new(peer.as_fd()).unwrap();
        for fd in [typed.master.as_fd(), typed.slave.as_fd(), by_path.as_fd()] {
            let refused = resize_unless_typed_into(fd, &SIZE).unwrap_err();
            assert_eq!(refused.raw_os_error(), Some(libc::EBUSY));
        }
        resize_unless_typed_into(other.slave.as_fd(), &SIZE).unwrap();
        resize_unless_typed_into(other.master.as_fd(), &SIZE).unwrap();
        drop(typing);
        resize_unless_typed_into(typed.slave.as_fd(), &SIZE).unwrap();
    }
}
