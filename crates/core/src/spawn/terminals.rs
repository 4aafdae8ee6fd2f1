//! A terminal of one spawn's own: each PTY agentty opens (a shell's, a `pty` command's) comes
//! from a devpts instance of its own, mounted at `/dev/pts` in a mount namespace only that
//! spawn's processes are in.
//!
//! The server's commands already share a devpts instance apart from the user's
//! (`agentty-sandbox`'s `terminals.rs`). But inside it every terminal of the session was one
//! `open("/dev/pts/N")` away from every confined command (`script`, `tmux` and Python's `pty`
//! need the directory): another spawn's command, or over HTTP another caller's, could write
//! into a shell's terminal (text the shell's reader takes as the shell's output), or read from
//! it (keys the agent types, a password the user types into a sealed entry: a reader that
//! keeps its file in flight over a socket shows in no fd table, and one spinning on
//! non-blocking reads takes bytes between those of a program that reads a byte at a time).
//! Now a terminal is reachable by path only from its own spawn's mount namespace; from anywhere
//! else, only through `/proc/<pid>/fd` of a process holding it, which Landlock's ptrace scope
//! closes to confined commands.
//!
//! How: the server makes the instance as a detached mount (`fsopen("devpts")` with
//! `newinstance`, `fsmount`), opens the master through it (`ptmx` of the instance) and the
//! slave with `TIOCGPTPEER`; a launcher of this spawn alone (`spare.rs` `start_alone`), after entering the session's namespaces, enters a mount namespace of its own
//! (a copy, its mounts made slaves so nothing propagates out), attaches the instance on
//! `/dev/pts` there (`move_mount`), takes the shared part of the confinement as every launcher
//! does, and clones the child into that namespace. Inside, `/dev/pts/0` is the
//! spawn's terminal (`tty`, `ttyname`, `GPG_TTY` work), `/dev/ptmx` opens more terminals in the
//! same instance, and nothing else is there. Landlock binds rules to inodes, and its check
//! does not stop at a directory a mount covers, so a confined spawn's own domain gets a rule
//! on the instance's root ([`super::Confine::with_terminals`]).
//!
//! Both steps need `CAP_SYS_ADMIN`, which a pooled launcher has dropped: so each such spawn has
//! a launcher of its own, which costs it a thread, the copy of the namespace's mounts and the
//! seccomp filter's compile. The thread and the copy are made ahead, after the namespace's
//! previous such spawn (`spare.rs` `Spare`), so a spawn waits only for the compile.
//!
//! Without the capability (agentty not run as root, a container without it) the instance is
//! made by a helper in a user namespace (`terminal_maker.rs`) and mounted nowhere: no path
//! names the terminal. Where user namespaces are refused too, terminals come from the shared
//! `/dev/ptmx` as before. [`own_terminals`] says which.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// `fsconfig` commands and `fsopen`/`fsmount`/`move_mount` flags (linux/mount.h).
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_FLAG: libc::c_uint = 0;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const MOUNT_ATTR_NOSUID: libc::c_uint = 0x2;
const MOUNT_ATTR_NOEXEC: libc::c_uint = 0x8;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// The instance's options: `ptmxmode` lets its `ptmx` node be opened (by the server, and by the
/// spawn's `/dev/ptmx`); `mode` is the usual one for a new terminal.
const OPTIONS: &[(&CStr, &CStr)] = &[(c"ptmxmode", c"0666"), (c"mode", c"0620")];

fn check(rc: libc::c_long) -> io::Result<libc::c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// How PTY spawns get terminals of their own here, if they do: `Err` says why not (neither
/// the capability nor a user namespace).
pub fn own_terminals() -> Result<OwnTerminals, String> {
    match mountable() {
        Ok(()) => Ok(OwnTerminals::Named),
        Err(no_mount) => match super::terminal_maker::available() {
            Ok(()) => Ok(OwnTerminals::Unnamed),
            Err(no_maker) => Err(format!("{no_mount}; in a user namespace: {no_maker}")),
        },
    }
}

/// How a PTY spawn's terminal of its own is had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnTerminals {
    /// Made and mounted by the server (`CAP_SYS_ADMIN`): `/dev/pts/0` in the spawn's own mount
    /// namespace.
    Named,
    /// Made by a helper in a user namespace (`terminal_maker.rs`), mounted nowhere: no path
    /// names it.
    Unnamed,
}

/// Whether PTY spawns get terminals of their own mounted on their `/dev/pts`: `Err` says why not
/// (the capability missing, a kernel without `fsopen`, no `/dev/pts` to mount on). Tried once,
/// by the first PTY spawn, all the way: an instance made and attached on a short-lived thread,
/// whose mount namespace ends with it (so a machine where the attach fails does not fail every
/// PTY spawn).
fn mountable() -> Result<(), String> {
    AVAILABLE
        .get_or_init(|| {
            let tried = std::thread::Builder::new()
                .name("agentty-terminals-check".into())
                .spawn(|| {
                    let mount = new_instance()?;
                    // SAFETY: unshare(CLONE_FS) changes only this thread's cwd and root.
                    check(unsafe { libc::unshare(libc::CLONE_FS) }.into())?;
                    unshare_mounts()?;
                    attach(&mount)
                })
                .map_err(|e| e.to_string())?
                .join()
                .map_err(|_| "the check panicked".to_owned())?;
            tried.map_err(|e| match e.raw_os_error() {
                Some(libc::EPERM) => "needs CAP_SYS_ADMIN".to_owned(),
                Some(libc::ENOSYS) => "the kernel has no fsopen (Linux 5.2)".to_owned(),
                _ => e.to_string(),
            })
        })
        .clone()
}

static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();

/// A new devpts instance, not mounted anywhere yet (a detached mount).
pub struct OwnDevpts {
    mount: OwnedFd,
    /// Whether it is to be mounted on the spawn's `/dev/pts` ([`OwnTerminals::Named`]).
    named: bool,
}

impl OwnDevpts {
    /// One for a new PTY spawn, where this process can have them ([`own_terminals`]).
    pub fn for_spawn() -> io::Result<Option<Self>> {
        match own_terminals() {
            Ok(OwnTerminals::Named) => Ok(Some(Self {
                mount: new_instance()?,
                named: true,
            })),
            Ok(OwnTerminals::Unnamed) => Ok(Some(Self {
                mount: super::terminal_maker::make()?,
                named: false,
            })),
            Err(_) => Ok(None),
        }
    }

    /// Opens a terminal of the instance (its first: `/dev/pts/0` as the spawn will see it),
    /// sized `cols`×`rows`.
    pub fn open_pair(&self, cols: u16, rows: u16) -> io::Result<crate::pty::sys::PtyPair> {
        let flags = libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC;
        // SAFETY: plain system calls on fds we own; TIOCSPTLCK reads and TIOCGPTN writes one int.
        unsafe {
            let master =
                check(libc::openat(self.mount.as_raw_fd(), c"ptmx".as_ptr(), flags).into())?;
            let master = OwnedFd::from_raw_fd(master as RawFd);
            let unlock: libc::c_int = 0;
            check(libc::ioctl(master.as_raw_fd(), libc::TIOCSPTLCK, &unlock).into())?;
            let mut index: libc::c_int = 0;
            check(libc::ioctl(master.as_raw_fd(), libc::TIOCGPTN, &mut index).into())?;
            let slave = check(libc::ioctl(master.as_raw_fd(), libc::TIOCGPTPEER, flags).into())?;
            let slave = OwnedFd::from_raw_fd(slave as RawFd);
            // How the spawn's links name it: mounted on its `/dev/pts`, or at the root of a
            // mount no path reaches.
            let path = if self.named {
                format!("/dev/pts/{index}")
            } else {
                format!("/{index}")
            };
            crate::pty::sys::PtyPair::new(master, slave, path, cols, rows)
        }
    }

    /// The instance's root: what a confined spawn's Landlock rule is made on.
    pub fn root(&self) -> BorrowedFd<'_> {
        self.mount.as_fd()
    }

    /// The detached mount, for the spawn's launcher to attach ([`attach`]); `None` for one
    /// mounted nowhere ([`OwnTerminals::Unnamed`]).
    pub fn into_attachable(self) -> Option<OwnedFd> {
        self.named.then_some(self.mount)
    }
}

/// A new devpts instance as a detached mount (`fsopen("devpts")` with `newinstance`, then
/// `fsmount`). Plain system calls only, no allocation: the terminal maker runs it in a forked
/// child (`terminal_maker.rs`).
pub(super) fn new_instance() -> io::Result<OwnedFd> {
    // SAFETY: plain system calls on NUL-terminated constants; each fd returned is new.
    unsafe {
        let fs = check(libc::syscall(
            libc::SYS_fsopen,
            c"devpts".as_ptr(),
            FSOPEN_CLOEXEC,
        ))?;
        let fs = OwnedFd::from_raw_fd(fs as RawFd);
        let set = |cmd: libc::c_uint, key: &CStr, value: *const libc::c_char| {
            check(libc::syscall(
                libc::SYS_fsconfig,
                fs.as_raw_fd(),
                cmd,
                key.as_ptr(),
                value,
                0,
            ))
        };
        set(FSCONFIG_SET_FLAG, c"newinstance", std::ptr::null())?;
        for (key, value) in OPTIONS {
            set(FSCONFIG_SET_STRING, key, value.as_ptr())?;
        }
        check(libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_char>(),
            0,
        ))?;
        let mount = check(libc::syscall(
            libc::SYS_fsmount,
            fs.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
        ))?;
        Ok(OwnedFd::from_raw_fd(mount as RawFd))
    }
}

/// Puts the calling thread in a mount namespace of its own, a copy of the one it is in, its
/// mounts made slaves (nothing mounted there propagates out); the children it clones afterwards
/// are in it too. The thread must have a cwd and root of its own (`unshare(CLONE_FS)`).
pub(super) fn unshare_mounts() -> io::Result<()> {
    // SAFETY: plain system calls on NUL-terminated constants.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS).into())?;
        // The attach below cannot propagate to the namespace this one was copied from (where
        // `/dev/pts` may be a shared mount).
        check(
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            )
            .into(),
        )?;
    }
    Ok(())
}

/// Makes the instance `mount` the calling thread's `/dev/pts`, in the mount namespace of its
/// own it entered ([`unshare_mounts`]).
pub(super) fn attach(mount: &OwnedFd) -> io::Result<()> {
    // SAFETY: a plain system call on NUL-terminated constants and an fd we own.
    unsafe {
        check(libc::syscall(
            libc::SYS_move_mount,
            mount.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            c"/dev/pts".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ))?;
    }
    Ok(())
}
