//! The kernel side of seccomp user notification, as raw system calls: receive a notification,
//! check it is still live, read the target's memory, take a copy of one of its fds, install a
//! socket in its place and answer. Nothing here decides anything (`supervisor.rs` does).
//!
//! The order of checks is the kernel's documented one: whatever is read from the target (its
//! memory, its fd) is trusted only after `SECCOMP_IOCTL_NOTIF_ID_VALID` says the notification is
//! still pending, because the pid may meanwhile belong to another process.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use super::closer::{ClosedElsewhere, Owner};

/// What a notification says: which syscall, of which thread, with which arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Notif {
    pub id: u64,
    /// The thread's id in this process's PID namespace.
    pub pid: u32,
    pub nr: i32,
    pub args: [u64; 6],
}

/// Bytes a receive buffer has: above the kernel's `struct seccomp_notif` (80 bytes today), and
/// checked against what the kernel says at start ([`fits`]).
const NOTIF_BUFFER_BYTES: usize = 256;

/// Whether the kernel's notification structures fit the buffers here.
pub(crate) fn fits() -> io::Result<()> {
    let mut sizes = libc::seccomp_notif_sizes {
        seccomp_notif: 0,
        seccomp_notif_resp: 0,
        seccomp_data: 0,
    };
    // SAFETY: the kernel writes the three sizes into the struct.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_NOTIF_SIZES,
            0u32,
            &raw mut sizes,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let resp = std::mem::size_of::<libc::seccomp_notif_resp>();
    if usize::from(sizes.seccomp_notif) > NOTIF_BUFFER_BYTES
        || usize::from(sizes.seccomp_notif_resp) > resp
    {
        return Err(io::Error::other(
            "seccomp notification structures larger than known",
        ));
    }
    Ok(())
}

fn ioctl<T>(fd: RawFd, request: libc::Ioctl, arg: *mut T) -> io::Result<libc::c_int> {
    // SAFETY: each caller passes a pointer to the structure `request` reads or writes.
    let rc = unsafe { libc::ioctl(fd, request, arg) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Receives the next notification from `listener` (blocks unless one is pending: poll first).
pub(crate) fn recv(listener: RawFd) -> io::Result<Notif> {
    let mut buffer = [0u64; NOTIF_BUFFER_BYTES / 8];
    ioctl(
        listener,
        libc::SECCOMP_IOCTL_NOTIF_RECV,
        buffer.as_mut_ptr(),
    )?;
    // SAFETY: the buffer is larger than `seccomp_notif` and 8-aligned; the kernel filled it.
    let notif = unsafe { std::ptr::read(buffer.as_ptr().cast::<libc::seccomp_notif>()) };
    Ok(Notif {
        id: notif.id,
        pid: notif.pid,
        nr: notif.data.nr,
        args: notif.data.args,
    })
}

/// Whether notification `id` is still pending: its target still waits in that syscall.
pub(crate) fn id_valid(listener: RawFd, id: u64) -> bool {
    let mut id = id;
    ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &raw mut id).is_ok()
}

/// Answers notification `id`: the syscall returns `val`, or fails with `errno` when not 0.
pub(crate) fn answer(listener: RawFd, id: u64, val: i64, errno: i32) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val,
        error: -errno,
        flags: 0,
    };
    ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &raw mut resp).map(drop)
}

/// Lets the kernel run the syscall as the target made it. Only for calls whose outcome does
/// not depend on what was read from the target (see the callers).
pub(crate) fn carry_on(listener: RawFd, id: u64) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &raw mut resp).map(drop)
}

/// Installs `source` in the target of notification `id` as its fd `target_fd`, replacing what
/// was there (as `dup2`), close-on-exec when `cloexec`.
pub(crate) fn install_fd(
    listener: RawFd,
    id: u64,
    source: &OwnedFd,
    target_fd: i32,
    cloexec: bool,
) -> io::Result<()> {
    let mut addfd = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        srcfd: source.as_raw_fd() as u32,
        newfd: target_fd as u32,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ADDFD, &raw mut addfd).map(drop)
}

/// Reads `buf.len()` bytes at `address` in process `pid`; the count read.
pub(crate) fn read_memory(pid: u32, address: u64, buf: &mut [u8]) -> io::Result<usize> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the local iovec covers `buf`; the remote one is only read by the kernel, which
    // checks it against the target's address space.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// A copy of fd `fd` of process `pid` (the same open file: same socket, same flags), held for
/// `owner`: EAGAIN where too many of its files wait to be closed ([`Owner::may_hold_more`]).
pub(crate) fn copy_fd(pid: u32, fd: i32, owner: &Arc<Owner>) -> io::Result<ClosedElsewhere> {
    if !owner.may_hold_more() {
        return Err(io::Error::from_raw_os_error(libc::EAGAIN));
    }
    // A notification names the thread that made the call, and the fd is in that thread's table:
    // a thread may have one of its own (`unshare(CLONE_FILES)`). From Linux 6.9 a pidfd names
    // the thread itself (`PIDFD_THREAD`); before, `pidfd_open` refuses a thread that does not
    // lead its process (EINVAL: every connect and bind of a program's other threads fell to the
    // kernel, where Landlock refused them; Go, Java and tokio programs connect from such
    // threads), and its process's table is taken, which its threads share but for such a one.
    // SAFETY: pidfd_open takes a pid and flags; the fd it returns is ours.
    let mut pidfd =
        unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, PIDFD_THREAD) };
    if pidfd < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        let process = thread_group_of(pid)?;
        // SAFETY: as above.
        pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, process as libc::pid_t, 0u32) };
    }
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd nobody else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    // SAFETY: pidfd_getfd takes a pidfd, the target's fd number and flags; the new fd is ours
    // (close-on-exec).
    let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(ClosedElsewhere::new(
        unsafe { OwnedFd::from_raw_fd(copy as RawFd) },
        owner,
    ))
}

/// Whether this process may install a filter with a listener of its own: refused (EBUSY)
/// where a filter above it has one (a container's syscall interception, agentty inside
/// agentty), or without seccomp. The filter confined commands get with a supervisor, installed
/// on a short-lived thread, whose filter ends with it.
pub(crate) fn listener_allowed() -> io::Result<()> {
    let filter = crate::seccomp::Filter::new(crate::seccomp::FilterSpec {
        resizes_supervised: true,
        ..Default::default()
    })
    .ok_or_else(|| io::Error::other("no seccomp filter for this architecture"))?;
    std::thread::Builder::new()
        .name("agentty-notify-check".into())
        .spawn(move || filter.install().map(drop))?
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the check's thread panicked")))
}

/// Whether [`copy_fd`] works here: `pidfd_getfd` (Linux 5.6), tried on this process, and
/// ptrace access to its children, which Yama's `ptrace_scope` 2 and 3 refuse to a server
/// without `CAP_SYS_PTRACE` (an unprivileged one; a root one keeps the capability).
pub(crate) fn fds_copyable() -> io::Result<()> {
    let probe = std::fs::File::open("/dev/null")?;
    drop(copy_fd(
        std::process::id(),
        probe.as_raw_fd(),
        &super::closer::owner(None),
    )?);
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(0);
    // SAFETY: geteuid reads the caller's effective uid.
    if scope >= 2 && unsafe { libc::geteuid() } != 0 {
        return Err(io::Error::other(format!(
            "Yama's ptrace_scope is {scope}: only a privileged server may copy its children's fds"
        )));
    }
    Ok(())
}

/// `pidfd_open`'s flag for a pidfd of a thread, not its process (Linux 6.9; `O_EXCL`).
const PIDFD_THREAD: u32 = libc::O_EXCL as u32;

/// Thread `tid`'s `/proc/<tid>/status`, for [`status_field`].
pub(crate) fn status_of(tid: u32) -> io::Result<String> {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
}

/// The value of the line `name` (with its colon: `"Tgid:"`) of a `status` file, trimmed.
pub(crate) fn status_field<'s>(status: &'s str, name: &str) -> Option<&'s str> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .map(str::trim)
}

/// The process (thread group) thread `tid` belongs to, from `/proc/<tid>/status`. A caller
/// checks afterwards that its notification still waits: then the thread still runs, and the
/// process read is its own.
fn thread_group_of(tid: u32) -> io::Result<u32> {
    status_field(&status_of(tid)?, "Tgid:")
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| io::Error::other("no Tgid line"))
}

/// Whether fd `fd` of process `pid` is close-on-exec, from `/proc/<pid>/fdinfo/<fd>`'s `flags`
/// (octal): a per-descriptor flag, which a copy of the file does not carry. `true` when unknown
/// (the safer guess: the socket does not leak into a program the command runs).
pub(crate) fn fd_cloexec(pid: u32, fd: i32) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else {
        return true;
    };
    info.lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .and_then(|flags| u32::from_str_radix(flags.trim(), 8).ok())
        .is_none_or(|flags| flags & libc::O_CLOEXEC as u32 != 0)
}
