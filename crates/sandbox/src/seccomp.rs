//! The seccomp filter every confined command gets: what Landlock cannot refuse.
//!
//! Always (in `default` and `plan` mode):
//! - `ioctl` `TIOCSTI` and `TIOCLINUX`, which type into a terminal: a command could push a line
//!   into another terminal's shell, which would run it unconfined;
//! - the `*setxattr`/`*removexattr` family and the `FS_IOC_SETFLAGS`/`FS_IOC_FSSETXATTR` ioctls:
//!   Landlock does not cover extended attributes (`security.capability` included) or inode flags
//!   (`chattr +i`), so they would reach files outside the sandbox. They fail with EOPNOTSUPP, the
//!   answer of a file system without xattrs, which `cp -a`, `rsync -a` and `tar` pass over;
//! - `io_uring_setup` (ENOSYS, as a kernel without io_uring): its operations (socket, setxattr)
//!   would bypass every check here;
//! - syscalls of a foreign ABI (x86 `int 0x80`, x32), whose numbers differ and would bypass the
//!   checks: 32-bit binaries do not run confined.
//!
//! With network off: `socket(AF_INET | AF_INET6 | AF_PACKET, …)` fails with EACCES. In `plan`
//! mode also `socket(AF_UNIX, …)`: a read-only command must not reach a daemon that would act
//! for it (tmux, docker, systemd, D-Bus, ssh-agent). `socketpair` and inherited sockets work.
//!
//! Hand-built classic BPF rather than the `seccompiler` crate: a few dozen fixed instructions,
//! assembled once in `prepare` (in the parent), need no extra dependency on a 2-core build
//! machine. Installing is two syscalls on that prepared program, async-signal-safe.

/// What the filter refuses beyond what it always refuses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterSpec {
    /// Refuse new IP and packet sockets.
    pub network_off: bool,
    /// Refuse new unix sockets (plan mode).
    pub unix_off: bool,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod bpf {
    use libc::{
        BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W, SECCOMP_RET_ALLOW,
        SECCOMP_RET_ERRNO, sock_filter,
    };

    #[cfg(target_arch = "x86_64")]
    pub const AUDIT_ARCH_NATIVE: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    pub const AUDIT_ARCH_NATIVE: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

    /// Syscall numbers at or above this are not native: x32's marker bit on x86_64. On aarch64
    /// no such ABI exists and only the invalid number `u32::MAX` compares.
    #[cfg(target_arch = "x86_64")]
    pub const FOREIGN_NR_MIN: u32 = 0x4000_0000;
    #[cfg(target_arch = "aarch64")]
    pub const FOREIGN_NR_MIN: u32 = u32::MAX;

    /// Offsets into `struct seccomp_data` (bytes): nr, arch, the low words of args 0 and 1
    /// (little-endian). An ioctl request is an `unsigned int` to the kernel: the low word is it.
    pub const OFFSET_NR: u32 = 0;
    pub const OFFSET_ARCH: u32 = 4;
    pub const OFFSET_ARG0: u32 = 16;
    pub const OFFSET_ARG1: u32 = 24;

    /// `setxattrat` and `removexattrat` (Linux 6.13): new syscalls share one number on every
    /// architecture.
    pub const SYS_SETXATTRAT: u32 = 463;
    pub const SYS_REMOVEXATTRAT: u32 = 466;

    /// `FS_IOC_SETFLAGS` (`_IOW('f', 2, long)`), its 32-bit twin, and `FS_IOC_FSSETXATTR`
    /// (`_IOW('X', 32, struct fsxattr)`).
    pub const FS_IOC_SETFLAGS: u32 = 0x4008_6602;
    pub const FS_IOC32_SETFLAGS: u32 = 0x4004_6602;
    pub const FS_IOC_FSSETXATTR: u32 = 0x401C_5820;

    pub fn ld(offset: u32) -> sock_filter {
        stmt(BPF_LD | BPF_W | BPF_ABS, offset)
    }

    pub fn ret_allow() -> sock_filter {
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    }

    pub fn ret_errno(errno: i32) -> sock_filter {
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (errno as u32 & 0xFFFF))
    }

    /// If A == k skip `jt` instructions, else skip `jf`.
    pub fn jeq(k: u32, jt: u8, jf: u8) -> sock_filter {
        jump(BPF_JEQ, k, jt, jf)
    }

    /// If A >= k skip `jt` instructions, else skip `jf`.
    pub fn jge(k: u32, jt: u8, jf: u8) -> sock_filter {
        jump(BPF_JGE, k, jt, jf)
    }

    fn jump(op: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
        sock_filter {
            code: (BPF_JMP | op | BPF_K) as u16,
            jt,
            jf,
            k,
        }
    }

    fn stmt(code: u32, k: u32) -> sock_filter {
        sock_filter {
            code: code as u16,
            jt: 0,
            jf: 0,
            k,
        }
    }
}

/// A filter program, assembled before any spawn.
#[derive(Clone)]
pub struct Filter {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    program: Vec<libc::sock_filter>,
}

// libc implements Debug for `sock_filter` only with its `extra_traits` feature.
impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter").finish_non_exhaustive()
    }
}

impl Filter {
    /// The filter for this architecture, or `None` where we have no syscall table for it.
    pub fn new(spec: FilterSpec) -> Option<Filter> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            Some(Filter {
                program: assemble(spec),
            })
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = spec;
            None
        }
    }

    /// Installs the filter on the calling process. Async-signal-safe: the `sock_fprog` lives on
    /// the stack and points into `self`; two syscalls.
    pub fn install(&self) -> std::io::Result<()> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            // Required to install a filter without CAP_SYS_ADMIN; idempotent.
            // SAFETY: plain prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let prog = libc::sock_fprog {
                len: self.program.len() as libc::c_ushort,
                filter: self.program.as_ptr().cast_mut(),
            };
            // SAFETY: prog points to `len` valid instructions that outlive the call; the kernel
            // copies the program.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0u32,
                    &raw const prog,
                )
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// The program: checks in order, each ending in a return, so no jump is longer than one block.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn assemble(spec: FilterSpec) -> Vec<libc::sock_filter> {
    use bpf::*;

    let mut p = vec![
        ld(OFFSET_ARCH),
        jeq(AUDIT_ARCH_NATIVE, 1, 0),
        ret_errno(libc::ENOSYS),
        ld(OFFSET_NR),
        jge(FOREIGN_NR_MIN, 0, 1),
        ret_errno(libc::ENOSYS),
    ];
    let no_xattr = libc::EOPNOTSUPP;
    let refused: [(u32, i32); 9] = [
        (libc::SYS_setxattr as u32, no_xattr),
        (libc::SYS_lsetxattr as u32, no_xattr),
        (libc::SYS_fsetxattr as u32, no_xattr),
        (libc::SYS_removexattr as u32, no_xattr),
        (libc::SYS_lremovexattr as u32, no_xattr),
        (libc::SYS_fremovexattr as u32, no_xattr),
        (SYS_SETXATTRAT, no_xattr),
        (SYS_REMOVEXATTRAT, no_xattr),
        (libc::SYS_io_uring_setup as u32, libc::ENOSYS),
    ];
    for (nr, errno) in refused {
        p.extend([jeq(nr, 0, 1), ret_errno(errno)]);
    }
    // ioctl: by request number.
    let requests = [
        (libc::TIOCSTI as u32, libc::EPERM),
        (libc::TIOCLINUX as u32, libc::EPERM),
        (FS_IOC_SETFLAGS, no_xattr),
        (FS_IOC32_SETFLAGS, no_xattr),
        (FS_IOC_FSSETXATTR, no_xattr),
    ];
    let mut block = vec![ld(OFFSET_ARG1)];
    for (request, errno) in requests {
        block.extend([jeq(request, 0, 1), ret_errno(errno)]);
    }
    block.push(ret_allow());
    p.push(jeq(libc::SYS_ioctl as u32, 0, block.len() as u8));
    p.extend(block);
    // socket: by domain.
    let mut families = Vec::new();
    if spec.network_off {
        families.extend([libc::AF_INET, libc::AF_INET6, libc::AF_PACKET]);
    }
    if spec.unix_off {
        families.push(libc::AF_UNIX);
    }
    if !families.is_empty() {
        let mut block = vec![ld(OFFSET_ARG0)];
        for family in families {
            block.extend([jeq(family as u32, 0, 1), ret_errno(libc::EACCES)]);
        }
        block.push(ret_allow());
        p.push(jeq(libc::SYS_socket as u32, 0, block.len() as u8));
        p.extend(block);
    }
    p.push(ret_allow());
    p
}
