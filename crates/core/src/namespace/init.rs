//! The session init: pid 1 of the session's PID namespace, in a mount namespace of its own; and,
//! made by it on the server's request, each HTTP caller's init, pid 1 of a PID namespace inside
//! the session's.
//!
//! The session init is a forked copy of the single-threaded server. It first lets go of
//! everything of the server's it holds (the client's pipes above all: the client sees EOF when
//! the server ends), then builds the mounts confined commands see, reports to the server, and
//! then, until the server is gone, reaps the orphans the namespace hands it and answers the
//! server's requests for a caller's namespace. Every mount here is made in its own namespace
//! only (`/` is a slave of the server's first, so nothing propagates back).
//!
//! A caller's init is forked by the session init (one thread, no runtime: a fork is safe there,
//! where the multi-threaded server could not fork), so it shares every page it does not write
//! with it; it leaves in a copy of the session's mount namespace with `/proc` mounted again for
//! its own PID namespace, and then only reaps.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use super::{Mounts, READY_WAIT, check, control};

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}
/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const OPEN_TREE_CLONE: libc::c_uint = 0x01;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const MOUNT_ATTR_RDONLY: u64 = 0x01;

/// The paths as C strings, made before anything else happens in the child.
pub(super) struct CMounts {
    read_only: Vec<CString>,
    pinned: Vec<CString>,
    hidden: Vec<CString>,
    protected: Vec<CString>,
}

impl CMounts {
    pub(super) fn new(mounts: &Mounts) -> Self {
        let c = |paths: &[std::path::PathBuf]| -> Vec<CString> {
            paths
                .iter()
                .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
                .collect()
        };
        CMounts {
            read_only: c(&mounts.read_only),
            pinned: c(&mounts.pinned),
            hidden: c(&mounts.hidden),
            protected: c(&mounts.protected),
        }
    }
}

/// The `pid_max` values the inits write, as text made before the fork (see
/// [`super::ProcessBounds`]).
pub(super) struct PidMaxes {
    session: Vec<u8>,
    caller: Vec<u8>,
}

impl PidMaxes {
    pub(super) fn new(bounds: super::ProcessBounds) -> Self {
        let pid_max = |count| {
            super::ProcessBounds::pid_max_for(count)
                .to_string()
                .into_bytes()
        };
        PidMaxes {
            session: pid_max(bounds.session),
            caller: pid_max(bounds.caller),
        }
    }
}

/// Writes `value` as the `pid_max` of the calling process's PID namespace (Linux 6.14: the
/// namespace of the writer is the one changed), then makes this mount namespace's `/proc/sys`
/// read-only where it can: a confined command running as root where there is no Landlock could
/// otherwise raise it (the kernel asks only for euid 0). Only ever called where the kernel keeps
/// it per namespace. `Err`: the bound was not set.
fn set_pid_max(value: &[u8]) -> io::Result<()> {
    write_pid_max(value)?;
    let _ = read_only_in_place(c"/proc/sys");
    Ok(())
}

fn write_pid_max(value: &[u8]) -> io::Result<()> {
    // SAFETY: open on a NUL-terminated path, write of a buffer of the length given, close of
    // the fd opened here.
    unsafe {
        let fd = libc::open(
            c"/proc/sys/kernel/pid_max".as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let wrote = libc::write(fd, value.as_ptr().cast(), value.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if wrote == value.len() as isize {
            Ok(())
        } else {
            Err(error)
        }
    }
}

/// The errno of `e` as the status byte of a report.
fn status_of(e: &io::Error) -> u8 {
    u8::try_from(e.raw_os_error().unwrap_or(libc::EIO)).unwrap_or(u8::MAX)
}

/// The session init's body, in a network namespace of its own with `network`. Never returns.
pub(super) fn run(
    control: OwnedFd,
    ready: OwnedFd,
    mounts: &CMounts,
    network: bool,
    pid_maxes: Option<&PidMaxes>,
) -> ! {
    // SAFETY (whole function): a single-threaded forked child; plain system calls on fds it
    // owns and on NUL-terminated strings.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::prctl(libc::PR_SET_NAME, c"agentty-init".as_ptr(), 0, 0, 0);
        let Some([control, ready]) = keep_only([control, ready]) else {
            libc::_exit(1);
        };
        // Read before this namespace's `/proc` covers the server's: a caller's init puts them
        // back over its own `/proc` too. A pinned directory that moved or became a symlink since
        // it was listed is skipped (nothing below it is then made read-only by path: see
        // `attach_copy`).
        // Where the kernel refuses one, confined commands stay in the server's network
        // namespace (the seccomp and Landlock layer holds alone), and the report says so.
        let network = network && own_network().is_ok();
        let masks = proc_masks();
        let mounted = own_proc(&masks)
            .and_then(|()| mounts.hidden.iter().try_for_each(|p| hide(p)))
            .map(|()| {
                for path in &mounts.pinned {
                    let _ = attach_copy(path, Copy::Pin);
                }
            });
        let status = mounted.as_ref().map_or_else(status_of, |()| 0);
        // A path that moved or became a symlink since it was listed is skipped.
        let count = |paths: &[CString]| -> u32 {
            let made = if mounted.is_ok() {
                paths
                    .iter()
                    .filter(|p| attach_copy(p, Copy::ReadOnly).is_ok())
                    .count()
            } else {
                0
            };
            u32::try_from(made).unwrap_or(u32::MAX)
        };
        let protected = count(&mounts.protected);
        let sealed = count(&mounts.read_only);
        // This namespace's bound first, then each caller's, in its own namespace.
        let bounded = pid_maxes.is_some_and(|p| set_pid_max(&p.session).is_ok());
        let caller_pid_max = pid_maxes.filter(|_| bounded).map(|p| p.caller.as_slice());
        let mut report = [0u8; super::REPORT_BYTES];
        report[0] = status;
        report[1..5].copy_from_slice(&sealed.to_ne_bytes());
        report[5..9].copy_from_slice(&protected.to_ne_bytes());
        report[9] = u8::from(network);
        report[10] = u8::from(bounded);
        libc::write(ready.as_raw_fd(), report.as_ptr().cast(), report.len());
        drop(ready);
        if mounted.is_err() {
            libc::_exit(1);
        }
        serve(control.as_raw_fd(), &masks, caller_pid_max)
    }
}

/// Reaps orphans and answers the server's requests for a caller's namespace until the control
/// socket reads EOF (the server is gone); then leaves, which takes every process of the
/// namespace along, the callers' namespaces included.
fn serve(control: RawFd, masks: &[ProcMask], caller_pid_max: Option<&[u8]>) -> ! {
    // This namespace, to come back to after each caller's is made.
    let own = open_own_pid_namespace();
    // SAFETY: plain system calls on fds and a signal set of this process.
    unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut chld);
        libc::sigaddset(&raw mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const chld, std::ptr::null_mut());
        let signals = libc::signalfd(-1, &raw const chld, libc::SFD_CLOEXEC);
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: control,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: signals,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let n = libc::poll(fds.as_mut_ptr(), 2, if signals < 0 { 200 } else { -1 });
            if n > 0 && fds[0].revents != 0 {
                let mut request = [0u8; control::REQUEST_BYTES];
                match control::receive(control, &mut request) {
                    Ok((control::REQUEST_BYTES, _)) => {
                        let made = match &own {
                            Ok(own) => make_caller(own.as_raw_fd(), masks, caller_pid_max),
                            Err(e) => Err(io::Error::from_raw_os_error(
                                e.raw_os_error().unwrap_or(libc::EIO),
                            )),
                        };
                        let mut reply = [0u8; control::REPLY_BYTES];
                        reply[0] = made.as_ref().map_or_else(status_of, |_| 0);
                        reply[1..].copy_from_slice(&request);
                        let pidfd = made.as_ref().ok().map(AsRawFd::as_raw_fd);
                        let _ = control::send(control, &reply, pidfd);
                    }
                    // EOF, or a socket that no longer works: the server is gone.
                    Ok((0, _)) | Err(_) => libc::_exit(0),
                    Ok(_) => {}
                }
            }
            if fds[1].revents != 0 {
                let mut info = [0u8; 128];
                libc::read(signals, info.as_mut_ptr().cast(), info.len());
            }
            while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
        }
    }
}

fn open_own_pid_namespace() -> io::Result<OwnedFd> {
    // SAFETY: open on a NUL-terminated path; the fd returned is fresh.
    let fd = unsafe {
        libc::open(
            c"/proc/self/ns/pid".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes a caller's namespace: forks its init into a new PID namespace inside this one, and
/// waits until it has its `/proc`. Returns a pidfd of it.
fn make_caller(own: RawFd, masks: &[ProcMask], pid_max: Option<&[u8]>) -> io::Result<OwnedFd> {
    let (ready_read, ready_write) = super::pipe()?;
    // SAFETY: unshare(CLONE_NEWPID) only changes where this (only) thread's next child goes.
    check(unsafe { libc::unshare(libc::CLONE_NEWPID) })?;
    // SAFETY: this process has one thread: the child is a complete copy of it.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop(ready_read);
        caller_init(ready_write, masks, pid_max);
    }
    let forked = io::Error::last_os_error();
    // Back to this namespace for the children after (unshare refuses while they would go
    // elsewhere).
    // SAFETY: setns on an fd of this process's own PID namespace.
    let back = check(unsafe { libc::setns(own, libc::CLONE_NEWPID) });
    if pid < 0 {
        return Err(forked);
    }
    drop(ready_write);
    let mut status = [0u8; 1];
    let mut waiting = libc::pollfd {
        fd: ready_read.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd, then a read of one byte into a buffer of that size.
    let got = unsafe {
        if libc::poll(&raw mut waiting, 1, READY_WAIT.as_millis() as libc::c_int) == 1 {
            libc::read(ready_read.as_raw_fd(), status.as_mut_ptr().cast(), 1)
        } else {
            -1
        }
    };
    // SAFETY: pidfd_open on the child just forked, not reaped (only this loop reaps).
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    let failed = if got != 1 {
        Some(io::Error::other("a caller's init did not start"))
    } else if status[0] != 0 {
        Some(io::Error::from_raw_os_error(i32::from(status[0])))
    } else if pidfd < 0 {
        Some(io::Error::last_os_error())
    } else {
        back.err()
    };
    if let Some(error) = failed {
        // SAFETY: kill and waitpid on the child forked above; close the pidfd if any.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
            if pidfd >= 0 {
                libc::close(pidfd);
            }
        }
        return Err(error);
    }
    // SAFETY: a fresh pidfd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(pidfd) })
}

/// A caller's init: pid 1 of the caller's PID namespace, in a copy of the session's mount
/// namespace whose `/proc` shows the caller's processes only. Never returns.
fn caller_init(ready: OwnedFd, masks: &[ProcMask], pid_max: Option<&[u8]>) -> ! {
    // SAFETY (whole function): a single-threaded forked child; plain system calls on fds it
    // owns. Its parent is the session init, whose death kills this namespace too.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        let Some([ready]) = keep_only([ready]) else {
            libc::_exit(1);
        };
        // A bound the kernel refuses leaves the caller within the session's (which it took).
        let status = own_proc(masks).as_ref().map_or_else(status_of, |()| 0);
        if status == 0
            && let Some(value) = pid_max
        {
            let _ = set_pid_max(value);
        }
        libc::write(ready.as_raw_fd(), [status].as_ptr().cast(), 1);
        drop(ready);
        if status != 0 {
            libc::_exit(1);
        }
        reap_forever()
    }
}

/// Reaps the orphans the namespace hands to its init, for as long as it lives.
fn reap_forever() -> ! {
    // SAFETY: plain system calls on a signal set of this process.
    unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut chld);
        libc::sigaddset(&raw mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const chld, std::ptr::null_mut());
        loop {
            while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
            libc::sigwaitinfo(&raw const chld, std::ptr::null_mut());
        }
    }
}

/// Closes every fd but `keep`, which move above stdio, with stdin, stdout and stderr on
/// `/dev/null`. Returns the fds `keep` now have; `None` if they could not be kept apart.
fn keep_only<const N: usize>(keep: [OwnedFd; N]) -> Option<[OwnedFd; N]> {
    // SAFETY: plain system calls on fds of this single-threaded process; the duplicates are
    // fresh and owned by nobody else.
    unsafe {
        let mut kept = [-1; N];
        for (slot, fd) in kept.iter_mut().zip(&keep) {
            *slot = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3);
            if *slot < 0 {
                return None;
            }
        }
        drop(keep);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            if null >= 0 {
                libc::dup2(null, fd);
            }
        }
        let mut low: libc::c_uint = 3;
        let mut sorted = kept;
        sorted.sort_unstable();
        for fd in sorted {
            let fd = fd as libc::c_uint;
            if fd > low {
                libc::syscall(libc::SYS_close_range, low, fd - 1, 0u32);
            }
            low = fd + 1;
        }
        libc::syscall(libc::SYS_close_range, low, libc::c_uint::MAX, 0u32);
        Some(kept.map(|fd| OwnedFd::from_raw_fd(fd)))
    }
}

/// Enters a network namespace of its own and brings its loopback up: nothing else is there.
/// An `lo` that stays down is no failure (the namespace is what matters: nothing routes out).
fn own_network() -> io::Result<()> {
    // SAFETY: plain system calls; `request` is plain data the kernel reads and writes.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNET))?;
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Ok(());
        }
        let socket = OwnedFd::from_raw_fd(socket);
        let mut request: libc::ifreq = std::mem::zeroed();
        for (to, from) in request.ifr_name.iter_mut().zip(b"lo") {
            *to = *from as libc::c_char;
        }
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &raw mut request) == 0 {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &raw mut request);
        }
    }
    Ok(())
}

/// Enters a mount namespace of its own (a copy of the one it is in) whose `/proc` shows the PID
/// namespace this process is pid 1 of, with `masks` (those the server's `/proc` had, a
/// container's) put back.
fn own_proc(masks: &[ProcMask]) -> io::Result<()> {
    // SAFETY: plain system calls on constant, NUL-terminated strings.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS))?;
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ))?;
    }
    for mask in masks {
        mask.apply()?;
    }
    Ok(())
}

/// Makes `path` a read-only copy of itself in this mount namespace.
fn read_only_in_place(path: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: plain mount calls on a NUL-terminated string.
    unsafe {
        check(libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            std::ptr::null(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
            std::ptr::null(),
        ))
    }
}

/// A mount below `/proc` in the server's namespace: a container runtime's mask.
enum ProcMask {
    /// A part of `/proc` made read-only (`/proc/sys`, `/proc/sysrq-trigger`, …).
    ReadOnly(CString),
    /// A file covered (`/proc/kcore`, `/proc/keys`, …).
    File(CString),
    /// A directory covered (`/proc/acpi`, `/proc/scsi`, …).
    Dir(CString),
}

/// The masks under `/proc` in this (the server's) mount namespace, parents first.
fn proc_masks() -> Vec<ProcMask> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut masks = Vec::new();
    for line in info.lines() {
        // id parent major:minor root mountpoint options ... - fstype source super-options
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(point), Some(dash)) = (fields.get(4), fields.iter().position(|f| *f == "-"))
        else {
            continue;
        };
        if !point.starts_with("/proc/") {
            continue;
        }
        let fstype = fields.get(dash + 1).copied().unwrap_or("");
        let Ok(path) = CString::new(point.replace("\\040", " ")) else {
            continue;
        };
        let mask = if fstype == "proc" {
            ProcMask::ReadOnly(path)
        } else if std::fs::metadata(point).is_ok_and(|m| m.is_dir()) {
            ProcMask::Dir(path)
        } else {
            ProcMask::File(path)
        };
        masks.push(mask);
    }
    masks
}

impl ProcMask {
    fn apply(&self) -> io::Result<()> {
        // SAFETY: plain system calls on NUL-terminated strings.
        unsafe {
            match self {
                ProcMask::ReadOnly(path) => read_only_in_place(path),
                ProcMask::File(path) => check(libc::mount(
                    c"/dev/null".as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )),
                ProcMask::Dir(path) => check(libc::mount(
                    c"tmpfs".as_ptr(),
                    path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=4k".as_ptr().cast(),
                )),
            }
        }
        // A mask the new /proc has nothing under (a path this kernel lacks) is not an error.
        .or_else(|e| {
            if e.raw_os_error() == Some(libc::ENOENT) {
                Ok(())
            } else {
                Err(e)
            }
        })
    }
}

/// Opens `path` as a location only, refusing a symlink anywhere on it: the paths were resolved
/// by the server, so a symlink now is one a command planted to redirect the mount.
fn open_exact(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    open_exact_with(path, libc::O_DIRECTORY)
}

/// [`open_exact`] of a directory (`O_DIRECTORY`) or of anything (0).
fn open_exact_with(path: &std::ffi::CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let how = OpenHow {
        flags: (libc::O_PATH | flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: openat2 with a NUL-terminated path and an `open_how` of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &raw const how,
            size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// What [`attach_copy`] makes of a path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Copy {
    /// A writable copy of a directory: a mount point, which cannot be renamed or removed.
    Pin,
    /// A read-only copy of a directory or a file.
    ReadOnly,
}

/// Mounts a copy of what is at `path` onto itself: a copy that is made read-only (when asked)
/// before it is attached, so it is never writable where commands can see it. A mount point
/// cannot be renamed or removed, so even a writable copy pins the directory. The copy takes the
/// mounts below `path` along (`AT_RECURSIVE`), so pinning a folder never uncovers what an
/// earlier mount hid or made read-only inside it.
fn attach_copy(path: &std::ffi::CStr, copy: Copy) -> io::Result<()> {
    let place = match copy {
        Copy::Pin => open_exact(path)?,
        Copy::ReadOnly => open_exact_with(path, 0)?,
    };
    // SAFETY: open_tree on an fd we hold, with an empty path; the fd returned is fresh.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            place.as_raw_fd(),
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | libc::AT_EMPTY_PATH as libc::c_uint
                | libc::AT_RECURSIVE as libc::c_uint,
        )
    };
    if tree < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd, owned by nobody else.
    let tree = unsafe { OwnedFd::from_raw_fd(tree as RawFd) };
    if copy == Copy::ReadOnly {
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: mount_setattr on the detached copy we hold, with an attr of the size given.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                tree.as_raw_fd(),
                c"".as_ptr(),
                (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
                &raw const attr,
                size_of::<MountAttr>(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: move_mount from the detached copy onto the location we hold, both by fd.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            place.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Covers the directory at `path` with an empty, read-only one, or the file at `path` with
/// `/dev/null`.
fn hide(path: &std::ffi::CStr) -> io::Result<()> {
    let place = open_exact_with(path, 0)?;
    let target = CString::new(format!("/proc/self/fd/{}", place.as_raw_fd()))
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a plain C struct, for which all zeroes is a valid value.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat into a stat of the right type, on an fd we hold.
    check(unsafe { libc::fstat(place.as_raw_fd(), &raw mut stat) })?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFDIR {
        // A file (a token): `/dev/null` bound over it reads as empty.
        // SAFETY: mount on the location the fd names (through its magic link), constant strings.
        return check(unsafe {
            libc::mount(
                c"/dev/null".as_ptr(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            )
        });
    }
    // SAFETY: mount on the location the fd names (through its magic link), constant strings.
    unsafe {
        check(libc::mount(
            c"tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"size=4k,mode=0500".as_ptr().cast(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_anywhere_on_the_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(real.join("cache/crate")).unwrap();
        std::os::unix::fs::symlink(real.join("cache"), real.join("link")).unwrap();
        let c = |p: std::path::PathBuf| CString::new(p.into_os_string().into_vec()).unwrap();
        use std::os::unix::ffi::OsStringExt;
        assert!(open_exact(&c(real.join("cache/crate"))).is_ok());
        let refused = open_exact(&c(real.join("link/crate"))).unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(libc::ELOOP), "{refused}");
    }
}
