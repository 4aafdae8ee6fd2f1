//! The seccomp filter every confined command gets: what Landlock cannot refuse.
//!
//! Always (in `default` and `plan` mode):
//! - `ioctl` `TIOCSTI` and `TIOCLINUX`, which type into a terminal: a command could push a line
//!   into another terminal's shell, which would run it unconfined; and `TIOCSETD`, which swaps a
//!   terminal's line discipline and so ends the read a program waits in (a secret typed for it,
//!   docs/BEHAVIOUR.md §4, would then wait for whoever reads next);
//! - the `*setxattr`/`*removexattr` family and the `FS_IOC_SETFLAGS`/`FS_IOC_FSSETXATTR` ioctls:
//!   Landlock does not cover extended attributes (`security.capability` included) or inode flags
//!   (`chattr +i`), so they would reach files outside the sandbox. They fail with EOPNOTSUPP, the
//!   answer of a file system without xattrs, which `cp -a`, `rsync -a` and `tar` pass over;
//! - with a supervisor (`Prepared::supervised_by`), `ioctl` `TIOCSWINSZ`, which the supervisor
//!   makes itself, but not while a secret is typed into that terminal: a resize's SIGWINCH
//!   would end the read the program waits in for a moment, and free it for another reader;
//! - `io_uring_setup` (ENOSYS, as a kernel without io_uring): its operations (socket, connect,
//!   setxattr) would bypass every check here;
//! - `userfaultfd` but for faults of user mode (`UFFD_USER_MODE_ONLY`), and `/dev/userfaultfd`'s
//!   `USERFAULTFD_IOC_NEW` (EPERM): the server reads a command's memory (a `connect`'s address,
//!   a resize's size) on the one thread that answers every caller's commands, and a read of a
//!   page whose faults a command's userfaultfd handles would wait for as long as it liked
//!   (review 28);
//! - syscalls of a foreign ABI (x86 `int 0x80`, x32), whose numbers differ and would bypass the
//!   checks: 32-bit binaries do not run confined;
//! - reaching into another process ([`reach_into_processes`]): `ptrace`, `process_vm_readv`,
//!   `process_vm_writev`, `pidfd_getfd`, `perf_event_open` on another process, and `prlimit64`
//!   setting another process's limits. A secret the user types goes to a program in the
//!   agent's shell (docs/BEHAVIOUR.md §4 *Sealed entry*): `strace -p` or `gdb -p` of that program,
//!   or a read of its memory, would hand it to the agent. So `strace`, `gdb` and `perf stat`
//!   do not work confined, on any process, their own children included.
//!
//! By the network mode (docs/BEHAVIOUR.md §13):
//! - `off`: `socket()` of any family but `AF_UNIX` and `AF_NETLINK` fails with EACCES;
//! - `allowlist`/`ask` (*supervised*): `socket()` of a family other than `AF_UNIX`, `AF_INET`,
//!   `AF_INET6`, `AF_NETLINK` fails, and so does an IP socket that is not plain TCP (UDP, DNS to
//!   outside resolvers included, ICMP datagrams, raw sockets, MPTCP and SCTP, which Landlock's
//!   TCP rules do not see): refused by the supervisor, which notes it for the model (a program
//!   that failed to resolve a name says only that); `sendto`/`sendmsg`/`sendmmsg` with `MSG_FASTOPEN` fail (TCP Fast
//!   Open connects without `connect`); every `connect` is sent to the server's supervisor
//!   (`SECCOMP_RET_USER_NOTIF`, see `net/supervisor.rs`), which makes the allowed ones itself
//!   (where Landlock refuses the command's own TCP connects, all but those given a unix
//!   address's full length: [`UNIX_ADDRESS_LENGTH`]);
//!   with loopback closed, every `connect`, that length too: the supervisor checks unix
//!   sockets (`net/unix.rs`), and no unix datagram socket is made (`socket`, `socketpair`):
//!   one sends to whatever socket an address names (`sendto`, `sendmsg`), which the supervisor
//!   does not see;
//!   and so is every `bind` (but those of that length) and `listen`, which the supervisor makes in the server's network
//!   namespace when the command runs in the session's own (`net/listening.rs`).
//!   The command's own TCP connects are refused by its Landlock domain (`landlock.rs`), so the
//!   supervisor may let the kernel carry on with any call it does not handle.
//! - `on`: nothing.
//!
//! In `plan` mode also `socket(AF_UNIX, …)`: a read-only command must not reach a daemon that
//! would act for it (tmux, docker, systemd, D-Bus, ssh-agent). `socketpair` and inherited
//! sockets work.
//!
//! Hand-built classic BPF rather than the `seccompiler` crate: a few dozen fixed instructions,
//! assembled once in `prepare` (in the parent), need no extra dependency on a 2-core build
//! machine. Installing is two syscalls on that prepared program, async-signal-safe.

use std::os::fd::{FromRawFd, OwnedFd};

/// What the filter does with sockets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NetFilter {
    /// Nothing: network `on`.
    #[default]
    Open,
    /// No IP (or other non-local) socket: network `off`.
    Off,
    /// TCP only, every `connect` to the supervisor: `allowlist` and `ask`.
    Supervised,
}

/// What the filter refuses beyond what it always refuses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterSpec {
    pub network: NetFilter,
    /// Refuse new unix sockets (plan mode).
    pub unix_off: bool,
    /// The command's own TCP connects are refused by its Landlock domain (ABI 4): supervised,
    /// a `connect` or `bind` given a unix address's full length is let through without asking
    /// the supervisor (see [`UNIX_ADDRESS_LENGTH`]).
    pub own_tcp_refused: bool,
    /// Supervised with loopback closed: every `connect` goes to the supervisor, a unix
    /// address's full length too, which checks unix sockets (`net/unix.rs`).
    pub unix_checked: bool,
    /// Every `ioctl(TIOCSWINSZ)` goes to the supervisor, which makes it but while a secret is
    /// typed into that terminal (`net/supervisor.rs`).
    pub resizes_supervised: bool,
}

/// The address length of the `connect` and `bind` calls the supervisor is not asked about when
/// the command's own TCP connects are refused by Landlock: `sizeof(struct sockaddr_un)`, which
/// glibc gives for its lookups through nscd (two or more on every `ls -l`, `id`, `git`, and on
/// a shell's start), sparing each a round trip to the supervisor (docs/BEHAVIOUR.md §13 has
/// the figures). An IP address given with that length reaches the kernel too, which refuses the
/// command's own TCP connect (Landlock) or binds it where it is (the session's network
/// namespace, if any): it never reaches another host, but an allowed address so given fails
/// (EACCES, with no 2010 note). Only this length: a program may well give an IP address with
/// another one it does not have (`sizeof` a union of address types, 112), which the supervisor
/// still judges, as it does unix addresses given their exact length.
pub const UNIX_ADDRESS_LENGTH: u32 = 110;
const _: () = assert!(std::mem::size_of::<libc::sockaddr_un>() == UNIX_ADDRESS_LENGTH as usize);

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod bpf {
    use libc::{
        BPF_ABS, BPF_K, BPF_LD, BPF_RET, BPF_W, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, sock_filter,
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

    /// Offsets into `struct seccomp_data` (bytes): nr, arch, the low words of args 0, 1 and 2
    /// and the high word of arg 2 (little-endian). An ioctl request is an `unsigned int` to the
    /// kernel: the low word is it.
    pub const OFFSET_NR: u32 = 0;
    pub const OFFSET_ARCH: u32 = 4;
    pub const OFFSET_ARG0: u32 = 16;
    pub const OFFSET_ARG1: u32 = 24;
    pub const OFFSET_ARG2: u32 = 32;
    pub const OFFSET_ARG2_HIGH: u32 = 36;
    pub const OFFSET_ARG3: u32 = 40;

    /// `SOCK_TYPE_MASK`: a socket type's low bits, without `SOCK_NONBLOCK`/`SOCK_CLOEXEC`.
    pub const SOCK_TYPE_MASK: u32 = 0xf;

    /// `setxattrat` and `removexattrat` (Linux 6.13): new syscalls share one number on every
    /// architecture.
    pub const SYS_SETXATTRAT: u32 = 463;
    pub const SYS_REMOVEXATTRAT: u32 = 466;

    /// `FS_IOC_SETFLAGS` (`_IOW('f', 2, long)`), its 32-bit twin, and `FS_IOC_FSSETXATTR`
    /// (`_IOW('X', 32, struct fsxattr)`).
    pub const FS_IOC_SETFLAGS: u32 = 0x4008_6602;
    pub const FS_IOC32_SETFLAGS: u32 = 0x4004_6602;
    pub const FS_IOC_FSSETXATTR: u32 = 0x401C_5820;
    /// `USERFAULTFD_IOC_NEW` (`_IO(0xAA, 0x00)`, linux/userfaultfd.h): a userfaultfd from
    /// `/dev/userfaultfd`.
    pub const USERFAULTFD_IOC_NEW: u32 = 0xAA00;
    /// `UFFD_USER_MODE_ONLY` (linux/userfaultfd.h): the userfaultfd handles faults of user mode
    /// only; a fault in the kernel (another process reading the memory) fails at once.
    pub const UFFD_USER_MODE_ONLY: u32 = 1;

    pub fn ld(offset: u32) -> sock_filter {
        stmt(BPF_LD | BPF_W | BPF_ABS, offset)
    }

    pub fn ret_allow() -> sock_filter {
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    }

    pub fn ret_errno(errno: i32) -> sock_filter {
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (errno as u32 & 0xFFFF))
    }

    pub fn ret_notify() -> sock_filter {
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_USER_NOTIF)
    }

    /// `A &= k`.
    pub fn and(k: u32) -> sock_filter {
        stmt(libc::BPF_ALU | libc::BPF_AND | BPF_K, k)
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
    /// The program for a thread that cannot hand a listener to the supervisor (a child between
    /// clone and exec): what would go to the supervisor fails with ENOSYS instead. Never a
    /// notifying filter without a live listener: once its listener is closed the kernel lets a
    /// command install a listener of its own, whose filter, newer, would get the notifications
    /// and let the calls carry on; an errno outranks any notification.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    unlistened: Vec<libc::sock_filter>,
    /// What the program was made from.
    spec: FilterSpec,
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
                program: assemble(spec, true)?,
                unlistened: assemble(spec, false)?,
                spec,
            })
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = spec;
            None
        }
    }

    /// This filter, sending resizes to the supervisor too ([`FilterSpec::resizes_supervised`]).
    pub fn with_resizes_supervised(&self) -> Option<Filter> {
        Filter::new(FilterSpec {
            resizes_supervised: true,
            ..self.spec
        })
    }

    /// Whether the program sends calls to a supervisor: installed with a new listener.
    fn notifies(&self) -> bool {
        self.spec.network == NetFilter::Supervised || self.spec.resizes_supervised
    }

    /// Installs the filter on the calling thread. Async-signal-safe: the `sock_fprog` lives on
    /// the stack and points into `self`; two syscalls. A filter that notifies comes with its
    /// listener, close-on-exec: the fd the supervisor reads the notifications from, which must
    /// be handed to it (dropped, the notifying syscalls fail with ENOSYS, and a command could
    /// install a listener of its own: see [`Filter::install_unlistened`]).
    pub fn install(&self) -> std::io::Result<Option<OwnedFd>> {
        self.install_program(true)
    }

    /// Installs the filter on the calling thread with no listener: what would go to the
    /// supervisor fails with ENOSYS. Async-signal-safe, as [`Filter::install`].
    pub fn install_unlistened(&self) -> std::io::Result<()> {
        self.install_program(false).map(drop)
    }

    fn install_program(&self, listened: bool) -> std::io::Result<Option<OwnedFd>> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            // Required to install a filter without CAP_SYS_ADMIN; idempotent.
            // SAFETY: plain prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let listened = listened && self.notifies();
            let program = if listened {
                &self.program
            } else {
                &self.unlistened
            };
            let prog = libc::sock_fprog {
                len: program.len() as libc::c_ushort,
                filter: program.as_ptr().cast_mut(),
            };
            let flags = if listened {
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
            } else {
                0
            };
            // SAFETY: prog points to `len` valid instructions that outlive the call; the kernel
            // copies the program.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    flags,
                    &raw const prog,
                )
            };
            if rc < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if listened {
                // SAFETY: with NEW_LISTENER the syscall returns a fresh fd that nobody else owns.
                return Ok(Some(unsafe { OwnedFd::from_raw_fd(rc as i32) }));
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let _ = listened;
        Ok(None)
    }
}

/// The program. Its length on the path of an ordinary syscall is what costs: when a filter is
/// installed the kernel runs it once for every syscall number to precompute which are always
/// allowed, and that was most of a confined spawn's sandbox cost with a linear list of checks
/// (~75 µs). So the syscalls it looks at are found by a binary search over their numbers: an
/// ordinary syscall passes in about eight instructions.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn assemble(spec: FilterSpec, listened: bool) -> Option<Vec<libc::sock_filter>> {
    use bpf::*;

    let mut asm = Asm::default();
    let (native, deny_nosys, allow) = (asm.label(), asm.label(), asm.label());
    let (deny_perm, deny_access, no_xattr) = (asm.label(), asm.label(), asm.label());
    let (ioctl, socket, user_faults) = (asm.label(), asm.label(), asm.label());
    let reach = Reach {
        perf: asm.label(),
        prlimit: asm.label(),
    };

    asm.stmt(ld(OFFSET_ARCH));
    asm.jump(libc::BPF_JEQ, AUDIT_ARCH_NATIVE, native, deny_nosys);
    asm.mark(native);
    asm.stmt(ld(OFFSET_NR));
    let native_nr = asm.label();
    asm.jump(libc::BPF_JGE, FOREIGN_NR_MIN, deny_nosys, native_nr);
    asm.mark(native_nr);

    let notify = asm.label();
    let mut special: Vec<(u32, Label)> = vec![
        (libc::SYS_setxattr as u32, no_xattr),
        (libc::SYS_lsetxattr as u32, no_xattr),
        (libc::SYS_fsetxattr as u32, no_xattr),
        (libc::SYS_removexattr as u32, no_xattr),
        (libc::SYS_lremovexattr as u32, no_xattr),
        (libc::SYS_fremovexattr as u32, no_xattr),
        (SYS_SETXATTRAT, no_xattr),
        (SYS_REMOVEXATTRAT, no_xattr),
        (libc::SYS_io_uring_setup as u32, deny_nosys),
        (libc::SYS_ioctl as u32, ioctl),
        (libc::SYS_userfaultfd as u32, user_faults),
    ];
    special.extend(reach_into_processes(&reach, deny_perm));
    // Families `socket()` may make; `None`: any.
    let families: Option<Vec<i32>> = match spec.network {
        NetFilter::Open => None,
        NetFilter::Off => Some(vec![libc::AF_UNIX, libc::AF_NETLINK]),
        NetFilter::Supervised => Some(vec![
            libc::AF_UNIX,
            libc::AF_NETLINK,
            libc::AF_INET,
            libc::AF_INET6,
        ]),
    };
    let families = match (families, spec.unix_off) {
        (Some(mut list), true) => {
            list.retain(|&f| f != libc::AF_UNIX);
            Some(list)
        }
        (None, true) => None,
        (list, false) => list,
    };
    let (send_to, send_msg, send_mmsg) = (asm.label(), asm.label(), asm.label());
    if families.is_some() || spec.unix_off {
        special.push((libc::SYS_socket as u32, socket));
    }
    // Loopback closed: no unix datagram socket, which sends to whatever an address names.
    let unix_datagrams = (spec.network == NetFilter::Supervised && spec.unix_checked)
        .then(|| (asm.label(), asm.label()));
    if let Some((_, socket_pair)) = unix_datagrams {
        special.push((libc::SYS_socketpair as u32, socket_pair));
    }
    // connect and bind: to the supervisor, but for a unix address's length where Landlock holds.
    let addressed = if spec.own_tcp_refused {
        asm.label()
    } else {
        notify
    };
    if spec.network == NetFilter::Supervised {
        let connect = if spec.unix_checked { notify } else { addressed };
        special.extend([
            (libc::SYS_connect as u32, connect),
            (libc::SYS_bind as u32, addressed),
            (libc::SYS_listen as u32, notify),
            (libc::SYS_sendto as u32, send_to),
            (libc::SYS_sendmsg as u32, send_msg),
            (libc::SYS_sendmmsg as u32, send_mmsg),
        ]);
    }
    special.sort_unstable_by_key(|(nr, _)| *nr);
    asm.search(&special, allow);

    // ioctl: by request number.
    asm.mark(ioctl);
    asm.stmt(ld(OFFSET_ARG1));
    let resize = if spec.resizes_supervised {
        vec![(libc::TIOCSWINSZ as u32, notify)]
    } else {
        Vec::new()
    };
    for (request, refuse) in resize.into_iter().chain([
        (libc::TIOCSTI as u32, deny_perm),
        (libc::TIOCLINUX as u32, deny_perm),
        (libc::TIOCSETD as u32, deny_perm),
        (FS_IOC_SETFLAGS, no_xattr),
        (FS_IOC32_SETFLAGS, no_xattr),
        (FS_IOC_FSSETXATTR, no_xattr),
        (USERFAULTFD_IOC_NEW, deny_perm),
    ]) {
        let next = asm.label();
        asm.jump(libc::BPF_JEQ, request, refuse, next);
        asm.mark(next);
    }
    asm.always(allow);
    // userfaultfd: faults of user mode only (the flags' low word).
    asm.mark(user_faults);
    asm.stmt(ld(OFFSET_ARG0));
    asm.stmt(and(UFFD_USER_MODE_ONLY));
    asm.jump(libc::BPF_JEQ, UFFD_USER_MODE_ONLY, allow, deny_perm);
    // socket: by domain, then (IP, supervised) by type and protocol.
    asm.mark(socket);
    asm.stmt(ld(OFFSET_ARG0));
    // Supervised, a refused socket is the supervisor's to refuse, so it can tell the model
    // that a UDP socket (a DNS lookup, most often) was refused; it never allows one.
    let refuse_socket = if spec.network == NetFilter::Supervised {
        notify
    } else {
        deny_access
    };
    match &families {
        // An allow-list of families.
        Some(allowed) => {
            let inet = asm.label();
            for &family in allowed {
                let next = asm.label();
                let to = match unix_datagrams {
                    _ if family == libc::AF_INET || family == libc::AF_INET6 => inet,
                    Some((unix_kind, _)) if family == libc::AF_UNIX => unix_kind,
                    _ => allow,
                };
                asm.jump(libc::BPF_JEQ, family as u32, to, next);
                asm.mark(next);
            }
            asm.always(refuse_socket);
            // Plain TCP only: SOCK_STREAM with protocol 0 or IPPROTO_TCP.
            asm.mark(inet);
            asm.stmt(ld(OFFSET_ARG1));
            asm.stmt(and(SOCK_TYPE_MASK));
            let stream = asm.label();
            asm.jump(
                libc::BPF_JEQ,
                libc::SOCK_STREAM as u32,
                stream,
                refuse_socket,
            );
            asm.mark(stream);
            asm.stmt(ld(OFFSET_ARG2));
            let not_zero = asm.label();
            asm.jump(libc::BPF_JEQ, 0, allow, not_zero);
            asm.mark(not_zero);
            asm.jump(
                libc::BPF_JEQ,
                libc::IPPROTO_TCP as u32,
                allow,
                refuse_socket,
            );
        }
        // Open network, plan mode: only unix sockets refused.
        None => {
            asm.jump(libc::BPF_JEQ, libc::AF_UNIX as u32, deny_access, allow);
        }
    }
    // socket and socketpair of a unix datagram socket: refused by the supervisor (noted).
    if let Some((unix_kind, socket_pair)) = unix_datagrams {
        asm.mark(socket_pair);
        asm.stmt(ld(OFFSET_ARG0));
        asm.jump(libc::BPF_JEQ, libc::AF_UNIX as u32, unix_kind, allow);
        asm.mark(unix_kind);
        asm.stmt(ld(OFFSET_ARG1));
        asm.stmt(and(SOCK_TYPE_MASK));
        asm.jump(libc::BPF_JEQ, libc::SOCK_DGRAM as u32, notify, allow);
    }
    if spec.network == NetFilter::Supervised && spec.own_tcp_refused {
        // The kernel reads the length as an `int`: the low word.
        asm.mark(addressed);
        asm.stmt(ld(OFFSET_ARG2));
        asm.jump(libc::BPF_JEQ, UNIX_ADDRESS_LENGTH, allow, notify);
    }
    // sendto/sendmsg/sendmmsg: TCP Fast Open connects without `connect`.
    let sends = [
        (send_to, OFFSET_ARG3),
        (send_msg, OFFSET_ARG2),
        (send_mmsg, OFFSET_ARG3),
    ];
    let sends = if spec.network == NetFilter::Supervised {
        &sends[..]
    } else {
        &[]
    };
    for &(label, flags_at) in sends {
        asm.mark(label);
        asm.stmt(ld(flags_at));
        asm.jump(
            libc::BPF_JSET,
            libc::MSG_FASTOPEN as u32,
            deny_access,
            allow,
        );
    }
    reach.assemble(&mut asm, allow, deny_perm, deny_access);

    let to_supervisor = if listened {
        ret_notify()
    } else {
        ret_errno(libc::ENOSYS)
    };
    for (label, ret) in [
        (allow, ret_allow()),
        (notify, to_supervisor),
        (deny_nosys, ret_errno(libc::ENOSYS)),
        (deny_perm, ret_errno(libc::EPERM)),
        (deny_access, ret_errno(libc::EACCES)),
        (no_xattr, ret_errno(libc::EOPNOTSUPP)),
    ] {
        asm.mark(label);
        asm.stmt(ret);
    }
    asm.finish()
}

/// The labels of the calls into other processes that are refused by their arguments.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
struct Reach {
    perf: Label,
    prlimit: Label,
}

/// The syscalls that reach into another process (the module header says why), each with where
/// the filter goes for it: refused outright (`refuse`, EPERM), or to a check of its arguments.
/// Kept in one list, apart from the others, so that every such call is found in one place.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn reach_into_processes(reach: &Reach, refuse: Label) -> [(u32, Label); 6] {
    [
        // Attach to, trace, read and write another process (strace, gdb).
        (libc::SYS_ptrace as u32, refuse),
        // Read or write another process's memory directly.
        (libc::SYS_process_vm_readv as u32, refuse),
        (libc::SYS_process_vm_writev as u32, refuse),
        // Take a copy of another process's fd (a pipe it writes a password to).
        (libc::SYS_pidfd_getfd as u32, refuse),
        // Sample another process: `PERF_SAMPLE_STACK_USER` copies its stack.
        (libc::SYS_perf_event_open as u32, reach.perf),
        // Raise another process's core size limit, then make it dump its memory to a file.
        (libc::SYS_prlimit64 as u32, reach.prlimit),
    ]
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl Reach {
    /// The argument checks: `perf_event_open(attr, pid, …)` is refused (EACCES, as the kernel's
    /// own `perf_event_paranoid` refusal) unless `pid` is 0, the caller itself; `prlimit64(pid,
    /// resource, new, old)` (EPERM) when `pid` is not 0 and `new` is set (reading another's
    /// limits stays allowed). Both `pid`s are a `pid_t` to the kernel: the low word is it.
    fn assemble(&self, asm: &mut Asm, allow: Label, refuse: Label, refuse_access: Label) {
        use bpf::{OFFSET_ARG0, OFFSET_ARG1, OFFSET_ARG2, OFFSET_ARG2_HIGH, ld};
        asm.mark(self.perf);
        asm.stmt(ld(OFFSET_ARG1));
        asm.jump(libc::BPF_JEQ, 0, allow, refuse_access);
        asm.mark(self.prlimit);
        asm.stmt(ld(OFFSET_ARG0));
        let other = asm.label();
        asm.jump(libc::BPF_JEQ, 0, allow, other);
        asm.mark(other);
        asm.stmt(ld(OFFSET_ARG2));
        let low_null = asm.label();
        asm.jump(libc::BPF_JEQ, 0, low_null, refuse);
        asm.mark(low_null);
        asm.stmt(ld(OFFSET_ARG2_HIGH));
        asm.jump(libc::BPF_JEQ, 0, allow, refuse);
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
type Label = usize;

/// A tiny assembler for forward jumps to labels (classic BPF jumps only go forward).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Default)]
struct Asm {
    ops: Vec<Op>,
    labels: usize,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
enum Op {
    Stmt(libc::sock_filter),
    /// `if A <op> k goto t else goto f`.
    Jump(u32, u32, Label, Label),
    Always(Label),
    Mark(Label),
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl Asm {
    fn label(&mut self) -> Label {
        self.labels += 1;
        self.labels
    }

    fn stmt(&mut self, s: libc::sock_filter) {
        self.ops.push(Op::Stmt(s));
    }

    fn jump(&mut self, op: u32, k: u32, t: Label, f: Label) {
        self.ops.push(Op::Jump(op, k, t, f));
    }

    fn always(&mut self, to: Label) {
        self.ops.push(Op::Always(to));
    }

    fn mark(&mut self, label: Label) {
        self.ops.push(Op::Mark(label));
    }

    /// Jumps to the label of the accumulator's value in `sorted`, or to `otherwise`.
    fn search(&mut self, sorted: &[(u32, Label)], otherwise: Label) {
        if sorted.len() <= 3 {
            for &(value, to) in sorted {
                let next = self.label();
                self.jump(libc::BPF_JEQ, value, to, next);
                self.mark(next);
            }
            self.always(otherwise);
            return;
        }
        let mid = sorted.len() / 2;
        let (low, high) = (self.label(), self.label());
        self.jump(libc::BPF_JGE, sorted[mid].0, high, low);
        self.mark(low);
        self.search(&sorted[..mid], otherwise);
        self.mark(high);
        self.search(&sorted[mid..], otherwise);
    }

    /// The program; `None` if a jump would be too long for classic BPF (a bug: see the test).
    fn finish(self) -> Option<Vec<libc::sock_filter>> {
        let mut at = vec![0usize; self.labels + 1];
        let mut n = 0;
        for op in &self.ops {
            match op {
                Op::Mark(l) => at[*l] = n,
                _ => n += 1,
            }
        }
        let mut out = Vec::with_capacity(n);
        let offset = |from: usize, to: Label| at[to].checked_sub(from + 1);
        for op in self.ops {
            let here = out.len();
            match op {
                Op::Mark(_) => {}
                Op::Stmt(s) => out.push(s),
                Op::Jump(op, k, t, f) => out.push(libc::sock_filter {
                    code: (libc::BPF_JMP | op | libc::BPF_K) as u16,
                    jt: u8::try_from(offset(here, t)?).ok()?,
                    jf: u8::try_from(offset(here, f)?).ok()?,
                    k,
                }),
                Op::Always(to) => out.push(libc::sock_filter {
                    code: (libc::BPF_JMP | libc::BPF_JA) as u16,
                    jt: 0,
                    jf: 0,
                    k: u32::try_from(offset(here, to)?).ok()?,
                }),
            }
        }
        Some(out)
    }
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// Every variant assembles: no jump too long for classic BPF.
    #[test]
    fn every_variant_assembles() {
        for network in [NetFilter::Open, NetFilter::Off, NetFilter::Supervised] {
            for unix_off in [false, true] {
                for own_tcp_refused in [false, true] {
                    for (unix_checked, resizes_supervised) in
                        [(false, false), (false, true), (true, false), (true, true)]
                    {
                        let spec = FilterSpec {
                            network,
                            unix_off,
                            own_tcp_refused,
                            unix_checked,
                            resizes_supervised,
                        };
                        for listened in [true, false] {
                            let program = assemble(spec, listened).expect("assembles");
                            assert!(program.len() < 140, "{} instructions", program.len());
                        }
                    }
                }
            }
        }
    }
}
