//! A confined command's TCP `bind` and `listen` (network `allowlist` and `ask`): bound by the
//! supervisor, to this machine's loopback only ([`loopback_only`]). The command's own TCP binds
//! are refused by its Landlock domain (`landlock.rs`), so no bind of its reaches the kernel with
//! an address read again after the check (another thread could change it). A listener on every
//! address let a host the user never allowed connect in and take what the command served.
//!
//! In the command's own network namespace (an unprivileged server: the server's), the
//! command's socket itself is bound, from a copy of its fd. Where it runs in a network namespace
//! of the session's own (`agentty-core`'s `namespace`), which has nothing but `lo`, a dev server
//! listening there could be reached neither by the user's browser nor by the agent's next
//! command, whose connections the supervisor makes from the server's namespace. So an unbound
//! TCP socket of such a command that binds (or listens unbound) is swapped for a socket of the
//! server's namespace, made here with the command's options, bound to the loopback, and put in
//! the command's place with `SECCOMP_IOCTL_NOTIF_ADDFD`, as `connect` does (`supervisor.rs`). It
//! then listens, and accepts, in the server's namespace; a connect from it is still the
//! supervisor's to make, and its own still refused by Landlock.
//!
//! Which socket is whose is told by the command's thread, not the socket: `SIOCGSKNS` would
//! name a socket's namespace but needs `CAP_NET_ADMIN`, which a container given `SYS_ADMIN`
//! alone lacks. A command of the session's namespace makes its sockets there; the only sockets
//! of the server's namespace it holds are those the supervisor handed it, each bound or
//! connected already. So an unbound TCP socket of such a command is of the session's namespace.
//!
//! A socket that is not TCP (a unix socket) is left to the kernel: the call carries on as the
//! command made it, which holds nothing the supervisor judged.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::sync::Arc;

use super::closer;
use super::notify::{self, Notif};
use super::supervisor::{
    ADDRESS_BYTES_MAX, Listener, Step, copy_options, hand_over, int_option, last_errno,
    local_address, set_blocking, set_int_option, socket_address, status_flags, tcp_domain,
    tcp_socket, with_sockaddr,
};

/// `CAP_NET_BIND_SERVICE`: a port below `ip_unprivileged_port_start` needs it.
const CAP_NET_BIND_SERVICE: u32 = 10;

/// The options a program sets on a socket before it binds, besides those a connect keeps
/// (`copy_options`): which address it may share, and whether it may bind one not (yet) local.
const BIND_OPTIONS: [(i32, i32); 4] = [
    (libc::SOL_SOCKET, libc::SO_REUSEADDR),
    (libc::SOL_SOCKET, libc::SO_REUSEPORT),
    (libc::IPPROTO_IP, libc::IP_FREEBIND),
    (libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT),
];

/// A namespace, as `stat` names it (device, inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NamespaceId(u64, u64);

/// The server's namespaces, as the supervisor's thread sees them (it never leaves them): the
/// network namespace confined commands' listening sockets belong in, and the user namespace
/// whose capabilities count there.
#[derive(Debug, Clone, Copy)]
pub(super) struct Home {
    net: Option<NamespaceId>,
    user: Option<NamespaceId>,
}

fn id_of(path: &str) -> Option<NamespaceId> {
    let meta = std::fs::metadata(path).ok()?;
    Some(NamespaceId(meta.dev(), meta.ino()))
}

/// The calling thread's namespaces (the server's: the supervisor never leaves them).
pub(super) fn home() -> Home {
    Home {
        net: id_of("/proc/thread-self/ns/net"),
        user: id_of("/proc/thread-self/ns/user"),
    }
}

/// Whether thread `pid` runs in a network namespace other than `home`'s. `false` when unknown.
pub(super) fn elsewhere(pid: u32, home: Home) -> bool {
    home.net
        .is_some_and(|home| id_of(&format!("/proc/{pid}/ns/net")).is_some_and(|id| id != home))
}

/// Whether thread `pid` runs in `home`'s user namespace, where its capabilities count for the
/// server's files and network namespace. `false` when unknown.
pub(super) fn same_user_namespace(pid: u32, home: Home) -> bool {
    home.user
        .is_some_and(|home| id_of(&format!("/proc/{pid}/ns/user")) == Some(home))
}

/// Whether `socket` has a local port already.
fn bound(socket: &OwnedFd) -> bool {
    local_address(socket).is_some_and(|at| at.port() != 0)
}

/// Whether thread `pid` may bind a privileged port in the server's network namespace, as the
/// kernel would judge its own bind there: `CAP_NET_BIND_SERVICE` in its effective set, in the
/// server's user namespace. A command that made a user namespace of its own holds every
/// capability in it (and `/proc` shows them) but none in the server's. `false` when unknown.
fn may_bind_privileged(pid: u32, home: Home) -> bool {
    same_user_namespace(pid, home)
        && notify::status_of(pid)
            .ok()
            .and_then(|status| {
                notify::status_field(&status, "CapEff:")
                    .and_then(|caps| u64::from_str_radix(caps, 16).ok())
            })
            .is_some_and(|caps| caps & (1 << CAP_NET_BIND_SERVICE) != 0)
}

/// The first port an unprivileged bind may take, in the server's namespace.
fn unprivileged_port_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(1024)
}

/// A socket of the server's namespace in the place of `theirs` (TCP, of `domain`): its options
/// and blocking mode, unbound.
fn ours_for(
    theirs: &OwnedFd,
    domain: i32,
    owner: &Arc<closer::Owner>,
) -> Result<closer::ClosedElsewhere, i32> {
    let ours = tcp_socket(domain, owner).map_err(|e| e.raw_os_error().unwrap_or(libc::ENOBUFS))?;
    copy_options(theirs, &ours, domain);
    for (level, name) in BIND_OPTIONS {
        if let Some(value) = int_option(theirs, level, name).filter(|&v| v != 0) {
            set_int_option(&ours, level, name, value);
        }
    }
    if status_flags(theirs) & libc::O_NONBLOCK == 0 {
        set_blocking(&ours);
    }
    Ok(ours)
}

/// The address a confined command's listening socket gets for `asked`: this machine's
/// loopback. A wildcard (`0.0.0.0`, `::`, `::ffff:0.0.0.0`) is bound to the loopback of its
/// family, so a dev server is reached from this machine (the user's browser, the agent's next
/// command) and from no other host; a loopback address stays; any other address is refused
/// (`None`): a listener on one would let a host the user never allowed connect in and take what
/// the command serves, past every rule on the way out. A `dual_stack` IPv6 socket's `::` (what
/// Go, Node and Python's `http.server` bind for "every address") becomes `::ffff:127.0.0.1`:
/// one socket has one loopback, and `127.0.0.1` is the one programs and people type (a client of
/// `localhost` tries both).
pub(super) fn loopback_only(asked: SocketAddr, dual_stack: bool) -> Option<SocketAddr> {
    let ip = match asked.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() && dual_stack => {
            IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped())
        }
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_unspecified()) => {
            IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped())
        }
        ip if ip.to_canonical().is_loopback() => ip,
        _ => return None,
    };
    Some(match ip {
        IpAddr::V4(v4) => SocketAddr::V4(SocketAddrV4::new(v4, asked.port())),
        IpAddr::V6(v6) => SocketAddr::V6(SocketAddrV6::new(v6, asked.port(), 0, 0)),
    })
}

/// The loopback address an unbound TCP socket of `domain` listens on, any port: what
/// [`loopback_only`] gives its wildcard.
fn loopback_of(domain: i32, dual_stack: bool) -> SocketAddr {
    let any = if domain == libc::AF_INET6 {
        SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0))
    } else {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
    };
    loopback_only(any, dual_stack).unwrap_or(any)
}

/// Whether `socket` (TCP of `domain`) is an IPv6 one that takes IPv4 too (`IPV6_V6ONLY` off).
fn dual_stack(socket: &OwnedFd, domain: i32) -> bool {
    domain == libc::AF_INET6 && int_option(socket, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) == Some(0)
}

/// Binds `socket` (a copy of the command's fd: the same socket) to `at`, from the supervisor.
fn bind_to(socket: &OwnedFd, at: SocketAddr) -> Result<(), i32> {
    with_sockaddr(at, |address, length| {
        // SAFETY: `address` points to a valid address of `length` bytes.
        unsafe { libc::bind(socket.as_raw_fd(), address, length) }
    })
}

/// `bind(fd, address, len)` of a confined command. Its own TCP binds are refused by its
/// Landlock domain (`landlock.rs`, where its own connects are), so a TCP socket is bound here,
/// to [`loopback_only`]'s address, never by the kernel from an address it reads again (another
/// thread could change it): in the command's namespace, on the command's own socket; from
/// another namespace, on a socket of the server's put in its place.
pub(super) fn bind_for(listening: &Listener, notif: &Notif, home: Home) -> Step {
    let listener = listening.as_raw_fd();
    let (pid, id) = (notif.pid, notif.id);
    let target_fd = notif.args[0] as u32 as i32;
    let length = (notif.args[2] as u32 as usize).min(ADDRESS_BYTES_MAX);
    let Ok(theirs) = notify::copy_fd(pid, target_fd, &listening.owner) else {
        return Step::CarryOn;
    };
    let Some(domain) = tcp_domain(&theirs) else {
        // Not TCP (a unix socket): the kernel's, and the Landlock domain's.
        return Step::CarryOn;
    };
    let mut bytes = [0u8; ADDRESS_BYTES_MAX];
    let Ok(read) = notify::read_memory(pid, notif.args[1], &mut bytes[..length]) else {
        return Step::Fail(libc::EFAULT);
    };
    let Some(at) = socket_address(&bytes[..read]) else {
        return Step::Fail(libc::EAFNOSUPPORT);
    };
    let privileged = may_bind_privileged(pid, home);
    let cloexec = notify::fd_cloexec(pid, target_fd);
    let away = elsewhere(pid, home);
    // What was read names the command only if the notification still waits.
    if !notify::id_valid(listener, id) {
        return Step::Done;
    }
    // The kernel's answers to an address of the other family, a port the command may not
    // bind, and a second bind, in its order.
    match (domain, at) {
        (libc::AF_INET, SocketAddr::V6(_)) => return Step::Fail(libc::EAFNOSUPPORT),
        (libc::AF_INET6, SocketAddr::V4(_)) => return Step::Fail(libc::EINVAL),
        _ => {}
    }
    // The server may bind a port the command may not: judged as the kernel would judge it.
    if at.port() != 0 && at.port() < unprivileged_port_start() && !privileged {
        return Step::Fail(libc::EACCES);
    }
    let Some(local) = loopback_only(at, dual_stack(&theirs, domain)) else {
        return Step::Fail(libc::EACCES);
    };
    // The command's own socket, in its namespace; and one with a port already (the server's,
    // handed back: the kernel's EINVAL, or a bind where a failed connect let its port go).
    if !away || bound(&theirs) {
        return match bind_to(&theirs, local) {
            Ok(()) => Step::Succeed,
            Err(errno) => Step::Fail(errno),
        };
    }
    let ours = match ours_for(&theirs, domain, &listening.owner) {
        Ok(ours) => ours,
        Err(errno) => return Step::Fail(errno),
    };
    drop(theirs);
    match bind_to(&ours, local) {
        Ok(()) => {
            hand_over(listener, id, &ours, target_fd, cloexec, 0);
            Step::Done
        }
        Err(errno) => Step::Fail(errno),
    }
}

/// `listen(fd, backlog)` of a confined command, always made here on the socket checked, never
/// carried on: the kernel would look the fd up again, and a thread of the command could swap
/// another socket in meanwhile (`dup2`; an attacker's second pass won that race in about a
/// second). An unbound TCP socket (which the kernel would bind to every address) is bound to
/// the loopback first: in the command's namespace, the command's own socket; from another
/// namespace, a socket of the server's, put in its place. A bound one listens where it is, if
/// that is the loopback. Another kind of socket (a unix one) listens as it would have.
pub(super) fn listen_for(listening: &Listener, notif: &Notif, home: Home) -> Step {
    let listener = listening.as_raw_fd();
    let (pid, id) = (notif.pid, notif.id);
    let target_fd = notif.args[0] as u32 as i32;
    let backlog = notif.args[1] as u32 as i32;
    let theirs = match notify::copy_fd(pid, target_fd, &listening.owner) {
        Ok(theirs) => theirs,
        Err(e) => return Step::Fail(e.raw_os_error().unwrap_or(libc::EBADF)),
    };
    let cloexec = notify::fd_cloexec(pid, target_fd);
    let away = elsewhere(pid, home);
    if !notify::id_valid(listener, id) {
        return Step::Done;
    }
    let listen_on = |socket: &OwnedFd| {
        // SAFETY: listen on a socket we hold.
        if unsafe { libc::listen(socket.as_raw_fd(), backlog) } == 0 {
            Ok(())
        } else {
            Err(last_errno())
        }
    };
    let answered = |result: Result<(), i32>| match result {
        Ok(()) => Step::Succeed,
        Err(errno) => Step::Fail(errno),
    };
    let Some(domain) = tcp_domain(&theirs) else {
        return answered(listen_on(&theirs));
    };
    if bound(&theirs) {
        return match local_address(&theirs) {
            Some(at) if at.ip().to_canonical().is_loopback() => answered(listen_on(&theirs)),
            _ => Step::Fail(libc::EACCES),
        };
    }
    let dual = dual_stack(&theirs, domain);
    if !away {
        return answered(
            bind_to(&theirs, loopback_of(domain, dual)).and_then(|()| listen_on(&theirs)),
        );
    }
    let ours = match ours_for(&theirs, domain, &listening.owner) {
        Ok(ours) => ours,
        Err(errno) => return Step::Fail(errno),
    };
    drop(theirs);
    if let Err(errno) = bind_to(&ours, loopback_of(domain, dual)).and_then(|()| listen_on(&ours)) {
        return Step::Fail(errno);
    }
    hand_over(listener, id, &ours, target_fd, cloexec, 0);
    Step::Done
}
