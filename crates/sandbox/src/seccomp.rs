//! Optional network-off (`Policy.network == false`): a seccomp filter refusing new IP sockets.
//!
//! Hand-built classic BPF rather than the `seccompiler` crate: the program is twelve fixed
//! instructions, and a fixed-size array needs no allocation and no extra dependency on a 2-core
//! build machine. It returns EACCES (not a kill) so tools print "Permission denied" and exit
//! normally. It refuses `socket(AF_INET | AF_INET6 | AF_PACKET, ...)` and `io_uring_setup` (whose
//! IORING_OP_SOCKET would bypass the check); unix sockets and inherited sockets keep working.
//! Syscalls from a foreign ABI (x86 `int 0x80`, x32) are refused wholesale, since they would
//! otherwise bypass the check: 32-bit binaries therefore do not run with network off.

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use libc::{
    BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W, SECCOMP_RET_ALLOW,
    SECCOMP_RET_ERRNO, sock_filter,
};

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_NATIVE: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_NATIVE: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// Syscall numbers at or above this are not native: x32's marker bit on x86_64. On aarch64 no
/// such ABI exists and only the invalid number `u32::MAX` compares, which is harmless to refuse.
#[cfg(target_arch = "x86_64")]
const FOREIGN_NR_MIN: u32 = 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const FOREIGN_NR_MIN: u32 = u32::MAX;

/// Offsets into `struct seccomp_data` (bytes): nr, arch, args[0] low word (little-endian).
const OFFSET_NR_BYTES: u32 = 0;
const OFFSET_ARCH_BYTES: u32 = 4;
const OFFSET_ARG0_BYTES: u32 = 16;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const PROGRAM_LEN: usize = 12;

#[derive(Clone, Copy)]
pub struct NetFilter {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    program: [sock_filter; PROGRAM_LEN],
}

// libc implements Debug for `sock_filter` only with its `extra_traits` feature.
impl std::fmt::Debug for NetFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetFilter").finish_non_exhaustive()
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const fn jeq(k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter {
        code: (BPF_JMP | BPF_JEQ | BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

impl NetFilter {
    /// The filter for this architecture, or `None` where we have no syscall table for it.
    pub fn new() -> Option<NetFilter> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let ld = |off| stmt(BPF_LD | BPF_W | BPF_ABS, off);
            let deny = SECCOMP_RET_ERRNO | libc::EACCES as u32;
            // Jump offsets count instructions skipped after the jump: ALLOW is index 10, DENY 11.
            let program = [
                ld(OFFSET_ARCH_BYTES),        // 0
                jeq(AUDIT_ARCH_NATIVE, 0, 9), // 1: foreign arch -> DENY
                ld(OFFSET_NR_BYTES),          // 2
                sock_filter {
                    // 3: x32 -> DENY
                    code: (BPF_JMP | BPF_JGE | BPF_K) as u16,
                    jt: 7,
                    jf: 0,
                    k: FOREIGN_NR_MIN,
                },
                jeq(libc::SYS_io_uring_setup as u32, 6, 0), // 4: -> DENY
                jeq(libc::SYS_socket as u32, 0, 4),         // 5: not socket -> ALLOW
                ld(OFFSET_ARG0_BYTES),                      // 6: domain
                jeq(libc::AF_INET as u32, 3, 0),            // 7 -> DENY
                jeq(libc::AF_INET6 as u32, 2, 0),           // 8 -> DENY
                jeq(libc::AF_PACKET as u32, 1, 0),          // 9 -> DENY
                stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),   // 10 ALLOW
                stmt(BPF_RET | BPF_K, deny),                // 11 DENY
            ];
            Some(NetFilter { program })
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
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
                len: PROGRAM_LEN as libc::c_ushort,
                filter: self.program.as_ptr().cast_mut(),
            };
            // SAFETY: prog points to PROGRAM_LEN valid instructions that outlive the call; the
            // kernel copies the program.
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
