//! The pseudo-terminal itself: opening a master/slave pair, the non-blocking master registered
//! in tokio's reactor, window size, and the terminal's foreground process group.
//!
//! Plain `libc` rather than a PTY crate: portable-pty and pty-process both bring their own
//! `Command` and child handle, which would bypass the one spawn seam ([`crate::spawn`]) with its
//! run marker, sandbox and pidfd reaper. What remains is five calls
//! (`posix_openpt`, `grantpt`, `unlockpt`, `ptsname_r`, `open`), written out here.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// A fresh pair: the master stays with agentty, the slave goes to the child and is then dropped
/// here (while the server holds a slave fd, reading the master never reports the end).
pub struct PtyPair {
    pub master: OwnedFd,
    pub slave: OwnedFd,
    /// `/dev/pts/N`: how the child's file descriptors name the terminal in `/proc`.
    pub tty_path: String,
    /// The terminal's file (device and inode), to know it in other processes' fds whatever
    /// path their mount namespace gives it (a spawn's own devpts, `spawn::terminals`, is
    /// another instance than the server's, where the same path is another terminal).
    pub tty_id: (u64, u64),
}

impl PtyPair {
    /// The pair of `master` and `slave`, named `tty_path`, sized `cols`×`rows`.
    pub fn new(
        master: OwnedFd,
        slave: OwnedFd,
        tty_path: String,
        cols: u16,
        rows: u16,
    ) -> io::Result<Self> {
        set_size(master.as_raw_fd(), cols, rows)?;
        let tty_id = file_id(&slave)?;
        Ok(Self {
            master,
            slave,
            tty_path,
            tty_id,
        })
    }
}

/// How a spawn's terminal is known: its path in the spawn's `/proc` links, and its file.
#[derive(Debug, Clone)]
pub struct TtyName {
    /// `/dev/pts/N` as the spawn's processes see it.
    pub path: String,
    /// Device and inode (see [`PtyPair::tty_id`]).
    pub id: (u64, u64),
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An open file's device and inode.
fn file_id(fd: &OwnedFd) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::File::from(fd.try_clone()?).metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// Opens a pair sized `cols`×`rows` from the process's `/dev/ptmx`.
pub fn open_pair(cols: u16, rows: u16) -> io::Result<PtyPair> {
    // SAFETY: plain syscalls on fds we own; ptsname_r writes at most buf.len() bytes.
    unsafe {
        let raw = check(libc::posix_openpt(
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        ))?;
        let master = OwnedFd::from_raw_fd(raw);
        check(libc::grantpt(raw))?;
        check(libc::unlockpt(raw))?;
        let mut buf = [0 as libc::c_char; 128];
        let rc = libc::ptsname_r(raw, buf.as_mut_ptr(), buf.len());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        let name = CStr::from_ptr(buf.as_ptr());
        let tty_path = name.to_string_lossy().into_owned();
        let slave_raw = check(libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        ))?;
        let slave = OwnedFd::from_raw_fd(slave_raw);
        PtyPair::new(master, slave, tty_path, cols, rows)
    }
}

/// Whether this process may lock a terminal's settings ([`Peer::lock_settings`]), as a secret's
/// typing does: tried on a fresh pair.
pub fn settings_lockable() -> bool {
    let Ok(pair) = open_pair(80, 24) else {
        return false;
    };
    let Ok(peer) = Peer::open(pair.master.as_raw_fd(), &pair.tty_path) else {
        return false;
    };
    let locked = peer.lock_settings(true).is_ok();
    let _ = peer.lock_settings(false);
    locked
}

/// The terminal's window size now, as (cols, rows): whoever set it last (the server, or a
/// program in it: `stty cols`).
pub fn window_size(master: RawFd) -> Option<(u16, u16)> {
    // SAFETY: a zeroed winsize is a valid value for the kernel to fill.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize to the pointer.
    check(unsafe { libc::ioctl(master, libc::TIOCGWINSZ, &raw mut size) }).ok()?;
    Some((size.ws_col, size.ws_row))
}

/// Sets the terminal's window size (the kernel sends SIGWINCH to the foreground group).
pub fn set_size(master: RawFd, cols: u16, rows: u16) -> io::Result<()> {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer.
    check(unsafe { libc::ioctl(master, libc::TIOCSWINSZ, &size) }).map(drop)
}

/// The foreground process group of the terminal, read through the master.
pub fn foreground_group(master: RawFd) -> Option<i32> {
    // SAFETY: tcgetpgrp only reads the terminal's state.
    let pgrp = unsafe { libc::tcgetpgrp(master) };
    (pgrp > 0).then_some(pgrp)
}

/// The terminal's settings, read through the master (they are the slave's).
pub fn settings(master: std::os::fd::RawFd) -> Option<libc::termios> {
    // SAFETY: tcgetattr writes one termios into the zeroed struct given.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(master, &raw mut t) == 0).then_some(t)
    }
}

/// Whether the terminal waits for a password: a line read by the terminal itself (canonical)
/// with echo off, as `getpass`, `sudo`, `ssh` and `read -s` ask. A line editor at a shell
/// prompt (readline) and full-screen programs turn echo off too, but read key by key.
pub fn asks_password(t: &libc::termios) -> bool {
    t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO == 0
}

/// Bytes the terminal has written that agentty has not read yet. The kernel moves what a
/// program wrote into the master's queue from a work item, which `FIONREAD` does not wait for:
/// right after a write it said 0 in about half the tries here. Linux's poll runs that work
/// first, so one comes before the count.
pub fn unread_output(master: RawFd) -> usize {
    let mut fd = libc::pollfd {
        fd: master,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd given, and does not wait (timeout 0).
    unsafe { libc::poll(&raw mut fd, 1, 0) };
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let rc = unsafe { libc::ioctl(master, libc::FIONREAD, &mut n) };
    if rc < 0 {
        0
    } else {
        usize::try_from(n).unwrap_or(0)
    }
}

/// The terminal's slave side, opened from the master for a moment (never as a controlling
/// terminal): only that side shows and clears the input queue, what was typed and not yet read.
/// While it is open, reading the master does not report the end, so it is held briefly.
pub struct Peer(OwnedFd);

impl std::os::fd::AsFd for Peer {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.0)
    }
}

impl Peer {
    /// Opens the slave of `master`: `TIOCGPTPEER` on Linux (no path lookup), else `tty_path`.
    pub fn open(master: RawFd, tty_path: &str) -> io::Result<Self> {
        let flags = libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC;
        #[cfg(target_os = "linux")]
        {
            let _ = tty_path;
            // SAFETY: TIOCGPTPEER takes the open flags and returns a new fd we then own.
            let fd = check(unsafe { libc::ioctl(master, libc::TIOCGPTPEER, flags) })?;
            // SAFETY: fd was just opened and is owned by nobody else.
            Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
        }
        // Untested: macOS has no TIOCGPTPEER.
        #[cfg(not(target_os = "linux"))]
        {
            let _ = master;
            let path = std::ffi::CString::new(tty_path)
                .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
            // SAFETY: open with a NUL-terminated path; the fd is then ours.
            let fd = check(unsafe { libc::open(path.as_ptr(), flags) })?;
            // SAFETY: fd was just opened and is owned by nobody else.
            Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
        }
    }

    /// Whether a line waits to be read: a whole one, when the terminal reads lines (a partial
    /// line is not yet readable), else any byte. Linux's poll first moves what the master wrote
    /// into the queue.
    pub fn line_waiting(&self) -> bool {
        let mut fd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes the one pollfd given, and does not wait (timeout 0).
        let n = unsafe { libc::poll(&raw mut fd, 1, 0) };
        n == 1 && fd.revents & libc::POLLIN != 0
    }

    /// The terminal's file (device and inode), to know it in other processes' fds whatever
    /// path their mount namespace gives it.
    pub fn file_id(&self) -> io::Result<(u64, u64)> {
        file_id(&self.0)
    }

    /// The terminal's settings now.
    pub fn settings(&self) -> Option<libc::termios> {
        settings(self.0.as_raw_fd())
    }

    /// Sets the terminal's settings now (`tcsetattr(TCSANOW)`): what waits in the input queue
    /// stays.
    pub fn apply(&self, t: &libc::termios) -> io::Result<()> {
        // SAFETY: tcsetattr reads the one termios given, on an fd we own.
        check(unsafe { libc::tcsetattr(self.0.as_raw_fd(), libc::TCSANOW, t) }).map(drop)
    }

    /// Locks the terminal's settings (`locked`: every flag and key) against `tcsetattr` from
    /// any fd of it, this one's included, or unlocks them (`TIOCSLCKTRMIOS`: Linux, and it
    /// needs `CAP_SYS_ADMIN` in the initial user namespace; elsewhere, or without it, an error).
    pub fn lock_settings(&self, locked: bool) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: a zeroed termios is a valid value; fields are set below.
            let mut lock: libc::termios = unsafe { std::mem::zeroed() };
            if locked {
                lock.c_iflag = !0;
                lock.c_oflag = !0;
                lock.c_cflag = !0;
                lock.c_lflag = !0;
                lock.c_line = 1;
                lock.c_cc = [0xff; libc::NCCS];
            }
            // SAFETY: TIOCSLCKTRMIOS reads the one termios given, on an fd we own.
            check(unsafe { libc::ioctl(self.0.as_raw_fd(), libc::TIOCSLCKTRMIOS, &raw const lock) })
                .map(drop)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = locked;
            Err(io::Error::from_raw_os_error(libc::ENOTSUP))
        }
    }

    /// Drops everything in the input queue, a partial line included (`tcflush(TCIFLUSH)`), as
    /// a password reader does when it turns echo off (`TCSAFLUSH`).
    pub fn discard_input(&self) -> io::Result<()> {
        // SAFETY: tcflush on an fd we own.
        check(unsafe { libc::tcflush(self.0.as_raw_fd(), libc::TCIFLUSH) }).map(drop)
    }
}

/// Between two tries on a terminal that tokio once saw hung up (it keeps reporting it ready),
/// and between two writes to an input queue whose room was gone again, or whose room could not
/// be waited for (no fd or epoll entry to spare).
const STALE_HANG_UP_RETRY: std::time::Duration = std::time::Duration::from_millis(10);

/// Whether no slave fd of the terminal is open now (poll(2) at this moment, unlike tokio's
/// readiness, which keeps a hang-up it once saw).
fn hung_up_now(master: RawFd) -> bool {
    let mut fd = libc::pollfd {
        fd: master,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd given, and does not wait (timeout 0).
    let n = unsafe { libc::poll(&raw mut fd, 1, 0) };
    n == 1 && fd.revents & libc::POLLHUP != 0
}

/// The master side, non-blocking, in tokio's reactor.
pub struct Master {
    fd: AsyncFd<OwnedFd>,
    /// Bytes taken from the terminal may not be handed on yet: set before each read, cleared
    /// by the next read that finds nothing (see [`Master::output_in_flight`]).
    in_hand: AtomicBool,
}

impl Master {
    pub fn new(fd: OwnedFd) -> io::Result<Self> {
        // SAFETY: fcntl on an fd we own.
        unsafe {
            let flags = check(libc::fcntl(fd.as_raw_fd(), libc::F_GETFL))?;
            check(libc::fcntl(
                fd.as_raw_fd(),
                libc::F_SETFL,
                flags | libc::O_NONBLOCK,
            ))?;
        }
        // SAFETY: the OwnedFd is open and owned by the AsyncFd until it is dropped, and it
        // always reports the same raw fd.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) };
        Ok(Self {
            fd: fd.map_err(io::Error::from)?,
            in_hand: AtomicBool::new(false),
        })
    }

    /// This master, watched by the drivers' thread's reactor from now on (`drivers.rs`): where
    /// a driver reads it, the kernel then wakes that thread itself when output comes, not a
    /// request worker that would only pass the wake-up on.
    /// Where that registration fails (a full epoll), it stays with the caller's reactor.
    pub fn watched_by_drivers(self) -> io::Result<Self> {
        let fd = self.fd.into_inner();
        // SAFETY (both): as in `new`: the fd is ours, owned by the AsyncFd until it is dropped.
        let moved = crate::drivers::registering(|| unsafe {
            AsyncFd::register_with_interest(fd, Interest::READABLE)
        });
        let in_hand = self.in_hand;
        match moved {
            Ok(fd) => Ok(Self { fd, in_hand }),
            Err(failed) => {
                let (fd, e) = failed.into_parts();
                tracing::warn!("a terminal stays with the request runtime's reactor: {e}");
                unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                    .map(|fd| Self { fd, in_hand })
                    .map_err(io::Error::from)
            }
        }
    }

    pub fn raw(&self) -> RawFd {
        self.fd.get_ref().as_raw_fd()
    }

    /// Whether output the program wrote may not have reached its reader's sink yet: bytes still
    /// in the terminal (counted after a poll: [`unread_output`]), or a chunk its reader took and
    /// has not handed on (its next read has not begun). A look for a program waiting for keys
    /// makes no claim then: the prompt it would quote may be in that chunk.
    pub fn output_in_flight(&self) -> bool {
        // The count first: a read that took those bytes had set the flag before it did.
        unread_output(self.raw()) > 0 || self.in_hand.load(Ordering::SeqCst)
    }

    /// Reads some bytes; `Ok(0)` is the end. After the last slave fd closes Linux reports EIO
    /// rather than 0, so EIO is the end too.
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut guard = self.fd.readable().await?;
            let hung_up = guard.ready().is_read_closed();
            // Set before the bytes leave the terminal; the chunk before was handed on.
            self.in_hand.store(true, Ordering::SeqCst);
            let result = guard.try_io(|fd| {
                // SAFETY: read writes at most buf.len() bytes into buf.
                let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            if !matches!(result, Ok(Ok(n)) if n > 0) {
                self.in_hand.store(false, Ordering::SeqCst);
            }
            match result {
                Ok(Ok(n)) => return Ok(n),
                Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
                Ok(Err(e)) => return Err(e),
                // A hang-up stays "ready" (tokio never clears it), even once the terminal is
                // opened again: wait a moment between two tries, or this loop would spin.
                Err(_would_block) if hung_up => tokio::time::sleep(STALE_HANG_UP_RETRY).await,
                Err(_would_block) => continue,
            }
        }
    }

    /// Writes `data` as the terminal's input queue takes it, until `deadline`: how much of it
    /// was taken (all, unless the program does not read its input).
    pub async fn write_until(
        &self,
        data: &[u8],
        deadline: tokio::time::Instant,
    ) -> io::Result<usize> {
        let mut taken = 0;
        while taken < data.len() {
            match tokio::time::timeout_at(deadline, self.write_some(&data[taken..])).await {
                Ok(written) => taken += written?,
                Err(_deadline) => break,
            }
        }
        Ok(taken)
    }

    /// Writes what the terminal's input queue takes of `data` now, waiting until it takes
    /// something (at least one byte of a non-empty `data`); EIO when the terminal is hung up
    /// with its queue full. Cancel-safe: until it returns, nothing was written.
    pub async fn write_some(&self, data: &[u8]) -> io::Result<usize> {
        let mut waited = false;
        loop {
            // SAFETY: write reads at most data.len() bytes from data.
            let n = unsafe { libc::write(self.raw(), data.as_ptr().cast(), data.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::WouldBlock {
                return Err(e);
            }
            // The terminal was hung up (its last slave fd closed) with its input queue full:
            // nobody will take more.
            if hung_up_now(self.raw()) {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            if waited {
                // Room was reported and gone again before this write: not a busy loop.
                tokio::time::sleep(STALE_HANG_UP_RETRY).await;
            }
            if self.queue_room().await.is_err() {
                // No fd or epoll entry to spare for the wait: try again a moment later, as
                // a wait with nothing new to hold would have.
                tokio::time::sleep(STALE_HANG_UP_RETRY).await;
            }
            waited = true;
        }
    }

    /// Waits until the terminal's input queue has room (or the terminal is hung up), on a
    /// registration made for this wait alone. The master itself is watched for reading only:
    /// a program that reads its input a byte at a time (readline does) makes room at every
    /// byte, and a standing interest in writing would wake the reactor's thread for each one,
    /// eight wake-ups for `echo hi`. A registration reports the state it finds, so room made
    /// since the write that would have blocked is not missed.
    async fn queue_room(&self) -> io::Result<()> {
        let own = self.fd.get_ref().try_clone()?;
        // SAFETY: `own` is an fd of our own, owned by the AsyncFd until it is dropped.
        let watch = unsafe { AsyncFd::register_with_interest(own, Interest::WRITABLE) }
            .map_err(io::Error::from)?;
        let _ready = watch.writable().await?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "sys_tests.rs"]
mod tests;
