//! A confined command's `connect` where loopback is closed (network `allowlist` and `ask` with
//! `loopback = false`, docs/BEHAVIOUR.md §13), but for TCP to an IP address (`supervisor.rs`).
//! Landlock scopes pathname unix sockets only from ABI 9, so a service of this machine on one
//! (docker, D-Bus, ssh-agent, a daemon that forwards what it gets) would stay open with the
//! loopback closed. Where the judge says unix sockets are checked ([`Judge::unix_checked`]),
//! the seccomp filter sends every `connect` here (`seccomp.rs`), and nothing of it carries on in
//! the kernel with an address read from the command (another thread could change it):
//!
//! - a unix socket given a unix address: the supervisor opens the path as the command would
//!   (from its root or its working directory), connects a socket of its own of the same type to
//!   it, and tells the judge whether the socket at the other end is a confined command's: one
//!   the supervisor made listen (`listening.rs` makes every `listen` of theirs, so the kernel
//!   took this process for the listener's: [`listened_here`]). The command gets the socket
//!   (`ADDFD`, as for TCP) only when the judge lets it, so a refused service sees a connection
//!   open and close, and not a byte. A datagram socket has no listener to tell: refused;
//! - the server's own listening sockets (the view's agent socket, [`keep_from_commands`]) are
//!   refused, though the server made them listen;
//! - any other socket, or address (`AF_UNSPEC`, a datagram socket's disconnect; a netlink
//!   socket's): the supervisor makes the call on a copy of the command's socket, with the
//!   address it read, and answers with its outcome. Neither reaches a unix socket. A netlink
//!   address naming a group or a process is refused (EPERM): the kernel would judge this
//!   process's capabilities, not the command's.
//!
//! A unix datagram socket sends to whatever socket an address names (`sendto`, `sendmsg`),
//! which the supervisor does not see: with loopback closed the filter refuses to make one
//! (`socket`, `socketpair`), and a shell's channel to the server is a sequenced-packet socket,
//! which sends only to its peer (`agentty-core`'s `pty/channel.rs`).
//!
//! An abstract address is connected in the server's network namespace, which the supervisor
//! never leaves: a command in a session's own namespace (as root) is refused one.
//!
//! The path is opened, and the socket connected, with the file credentials of the command's
//! thread (`credentials.rs`): a root command that became another user is refused a socket its
//! user may not reach, as the kernel would refuse it. A blocking connect to a listener whose
//! backlog is full waits for room, until the socket's send timeout (`waiting.rs`).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use super::closer;
use super::credentials::{self, Credentials};
use super::listening::Home;
use super::notify::{self, Notif};
use super::supervisor::{
    Judge, Listener, Step, Verdict, hand_over, int_option, last_errno, peer_of, set_blocking,
    set_int_option, status_flags,
};
use super::waiting::Pending;

/// The server's own listening unix sockets (the view's agent socket), as `stat` names their
/// files (device, inode): the server made them listen, so [`listened_here`] would pass them.
static SERVERS_OWN: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// Own sockets kept at most (a server has one or two).
const SERVERS_OWN_MAX: usize = 16;

/// Keeps the unix socket the server listens on at `path` from confined commands where their
/// unix connects are checked (loopback closed).
pub fn keep_from_commands(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path)?;
    let mut own = SERVERS_OWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if own.len() >= SERVERS_OWN_MAX {
        own.remove(0);
    }
    own.push((meta.dev(), meta.ino()));
    Ok(())
}

/// Whether `file` is one of the server's own listening sockets' files.
fn servers_own(file: &OwnedFd) -> bool {
    // SAFETY: fstat writes into a zeroed stat of its size.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above, on an fd we hold.
    if unsafe { libc::fstat(file.as_raw_fd(), &raw mut stat) } != 0 {
        return false;
    }
    SERVERS_OWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .contains(&(stat.st_dev, stat.st_ino))
}

/// `SO_PEERPIDFD` (Linux 6.5): a pidfd of the process at the other end of a unix socket.
const SO_PEERPIDFD: i32 = 77;

/// The options of a unix socket a program sets before it connects, copied to ours.
const UNIX_OPTIONS: [(i32, i32); 3] = [
    (libc::SOL_SOCKET, libc::SO_PASSCRED),
    (libc::SOL_SOCKET, libc::SO_SNDBUF),
    (libc::SOL_SOCKET, libc::SO_RCVBUF),
];

/// A unix address as a command passed it.
#[derive(Debug, PartialEq, Eq)]
enum UnixAddress<'a> {
    /// A path, up to its first NUL.
    Path(&'a [u8]),
    /// An abstract name (after the leading NUL, all the bytes the length gives).
    Abstract(&'a [u8]),
    /// No name: the kernel's EINVAL.
    Unnamed,
}

fn unix_address(bytes: &[u8]) -> UnixAddress<'_> {
    let path = bytes.get(2..).unwrap_or_default();
    match path.first() {
        None => UnixAddress::Unnamed,
        Some(0) => UnixAddress::Abstract(&path[1..]),
        Some(_) => {
            UnixAddress::Path(&path[..path.iter().position(|&b| b == 0).unwrap_or(path.len())])
        }
    }
}

/// `connect(fd, address)` of process `notif.pid` whose socket `theirs` (a copy of `fd`) is not
/// TCP or whose address is not IP, where unix sockets are checked; `address` is what was read.
pub(super) fn connect_checked(
    judge: &dyn Judge,
    listener: &Arc<Listener>,
    notif: &Notif,
    theirs: &OwnedFd,
    address: &[u8],
    home: Home,
) -> Step {
    let family = family_of(address);
    // An IP address here is one the TCP path did not take (too short, or a socket that is not
    // TCP): the kernel's EINVAL, never a connect made by this process, which Landlock does not
    // confine.
    if matches!(family, Some(libc::AF_INET | libc::AF_INET6)) {
        return Step::Fail(libc::EINVAL);
    }
    if domain_of(theirs) != Some(libc::AF_UNIX) || family != Some(libc::AF_UNIX) {
        return on_their_socket(theirs, address);
    }
    let (pid, id) = (notif.pid, notif.id);
    let (named, abstract_name) = match unix_address(address) {
        UnixAddress::Unnamed => return on_their_socket(theirs, address),
        UnixAddress::Path(path) => (shown(path), false),
        UnixAddress::Abstract(name) => (shown(&[b"@", name].concat()), true),
    };
    // An abstract name is the network namespace's: one of a session's own is not here. (Told
    // by the address, never by the name as shown, which is quoted.)
    if abstract_name && super::listening::elsewhere(pid, home) {
        judge.judge_unix(pid, &named, false);
        return Step::Fail(libc::EACCES);
    }
    let kind = int_option(theirs, libc::SOL_SOCKET, libc::SO_TYPE).unwrap_or(libc::SOCK_STREAM);
    // The kernel's answers for a socket that listens, or is connected (a datagram socket may
    // connect again): the socket put in its place would end its connection.
    if int_option(theirs, libc::SOL_SOCKET, libc::SO_ACCEPTCONN) == Some(1) {
        return Step::Fail(libc::EINVAL);
    }
    if kind != libc::SOCK_DGRAM && peer_of(theirs) {
        return Step::Fail(libc::EISCONN);
    }
    let connection = match Connection::new(pid, kind, theirs, address, home) {
        Ok(connection) => connection,
        Err(errno) => return Step::Fail(of_the_connect(errno)),
    };
    let blocking = status_flags(theirs) & libc::O_NONBLOCK == 0;
    let unix = Unix {
        connection,
        owner: Arc::clone(&listener.owner),
        named,
        pid,
        target_fd: notif.args[0] as u32 as i32,
        blocking,
    };
    match unix.connection.attempt() {
        Ok(ours) => unix.made(ours, judge, listener.as_raw_fd(), id),
        // A listener whose backlog is full: a socket that blocks waits for room, as the
        // kernel's own connect would, until the command's send timeout.
        Err(libc::EAGAIN) if blocking && kind != libc::SOCK_DGRAM => {
            let timeout = send_timeout(theirs);
            Step::Wait(Box::new(Pending::backlogged(
                listener,
                id,
                timeout,
                Box::new(unix),
            )))
        }
        Err(errno) => Step::Fail(of_the_connect(errno)),
    }
}

/// A unix connect the supervisor makes for a command, and what it tells the judge.
pub(super) struct Unix {
    connection: Connection,
    /// Whose command's it is ([`closer::Owner`]).
    owner: Arc<closer::Owner>,
    /// The address as the model and the log are told it.
    named: String,
    /// The command's thread.
    pid: u32,
    /// The command's fd, where the socket goes.
    target_fd: i32,
    /// Whether the command's socket blocks.
    blocking: bool,
}

impl Unix {
    /// The connect tried again, after a full backlog: what to answer, or itself while the
    /// backlog is still full.
    pub(super) fn again(
        self: Box<Self>,
        judge: &dyn Judge,
        listener: RawFd,
        id: u64,
    ) -> Result<Step, Box<Self>> {
        match self.connection.attempt() {
            Ok(ours) => Ok(self.made(ours, judge, listener, id)),
            // Still full; or the server short of fds for a try: tried again later.
            Err(libc::EAGAIN | libc::EMFILE | libc::ENFILE) => Err(self),
            Err(errno) => Ok(Step::Fail(of_the_connect(errno))),
        }
    }

    /// Connected (`ours`): the command gets the socket if the judge lets it. Closed off this
    /// thread, as the socket may be the last reference of files in flight on it
    /// ([`closer::ClosedElsewhere`]).
    fn made(self, ours: OwnedFd, judge: &dyn Judge, listener: RawFd, id: u64) -> Step {
        let ours = closer::ClosedElsewhere::new(ours, &self.owner);
        // The path was opened as the command sees it only if it was still the command's then.
        if !notify::id_valid(listener, id) {
            return Step::Done;
        }
        let commands = match listened_here(&ours) {
            Ok(listened) => listened && !self.connection.servers_own,
            // Short of fds or memory: a failure of the server's, not a refusal.
            Err(errno) => return Step::Fail(of_the_connect(errno)),
        };
        if judge.judge_unix(self.pid, &self.named, commands) == Verdict::Refuse {
            return Step::Fail(libc::EACCES);
        }
        if self.blocking {
            set_blocking(&ours);
        }
        let cloexec = notify::fd_cloexec(self.pid, self.target_fd);
        hand_over(listener, id, &ours, self.target_fd, cloexec, 0);
        Step::Done
    }
}

/// The errno a command's connect gets for one of a call made for it: the server short of fds
/// (EMFILE, ENFILE, which `connect` never gives) is ENOBUFS, a lack of resources it may give.
fn of_the_connect(errno: i32) -> i32 {
    match errno {
        libc::EMFILE | libc::ENFILE => libc::ENOBUFS,
        errno => errno,
    }
}

/// The family of a socket address as the command passed it.
fn family_of(address: &[u8]) -> Option<i32> {
    address
        .get(..2)
        .map(|f| i32::from(u16::from_ne_bytes([f[0], f[1]])))
}

/// The family of `socket`.
fn domain_of(socket: &OwnedFd) -> Option<i32> {
    int_option(socket, libc::SOL_SOCKET, libc::SO_DOMAIN)
}

/// A name the command chose (108 bytes at most, the kernel's bound), as the model and the log
/// are told it: quoted as every name a command chose is (`notice::quoted`). Escaped, it cannot
/// end the line it is in and forge the next; quoted, it cannot pass a sentence of its own for
/// agentty's (review 35, F5).
fn shown(name: &[u8]) -> String {
    crate::notice::quoted(&String::from_utf8_lossy(name))
}

/// The call made on a copy of the command's socket, with the address read: a socket that is
/// not a unix one, or an address that is not a unix one, reaches no unix socket. It is made
/// with this process's capabilities, so a netlink address that names a group or a process
/// (which takes `CAP_NET_ADMIN`, dropped by confined commands: the kernel checks the caller's)
/// is refused as the kernel would refuse the command (EPERM); one naming the kernel is not.
fn on_their_socket(theirs: &OwnedFd, address: &[u8]) -> Step {
    if domain_of(theirs) == Some(libc::AF_NETLINK)
        && family_of(address) == Some(libc::AF_NETLINK)
        && address
            .get(4..12)
            .is_none_or(|who| who.iter().any(|&b| b != 0))
    {
        return Step::Fail(libc::EPERM);
    }
    // SAFETY: `address` is a live buffer of its length.
    let rc = unsafe {
        libc::connect(
            theirs.as_raw_fd(),
            address.as_ptr().cast(),
            address.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Step::Succeed
    } else {
        Step::Fail(last_errno())
    }
}

/// A connect the supervisor makes for a command, to what its address names: each try with a
/// socket of its own (unix, of the command's socket's type, with its options, non-blocking), so
/// a connect that waits holds no socket between tries.
struct Connection {
    kind: i32,
    /// The command's socket's [`UNIX_OPTIONS`] that are set: (level, name, value).
    options: Vec<(i32, i32, i32)>,
    to: Target,
    /// Whether the target is one of the server's own sockets ([`keep_from_commands`]).
    servers_own: bool,
    /// The command thread's, which the kernel would judge its connect by (`None`: the
    /// server's).
    as_command: Option<Credentials>,
}

/// What a unix address names.
enum Target {
    /// A path, opened (`O_PATH`) as the command resolves it.
    File(OwnedFd),
    /// An abstract address, as the command gave it.
    Abstract(Vec<u8>),
}

impl Connection {
    /// A new socket for process `pid`'s `theirs`, and the path of the unix `address` opened as
    /// `pid` would open it; the errno when it cannot be.
    fn new(pid: u32, kind: i32, theirs: &OwnedFd, address: &[u8], home: Home) -> Result<Self, i32> {
        let options = UNIX_OPTIONS
            .iter()
            .filter_map(|&(level, name)| {
                let value = int_option(theirs, level, name).filter(|&v| v != 0)?;
                Some((level, name, value))
            })
            .collect();
        let as_command = credentials::of_thread(pid, home)?;
        let (to, servers_own) = match unix_address(address) {
            UnixAddress::Path(path) => {
                let file = open_as(pid, path, as_command.as_ref())?;
                let own = servers_own(&file);
                (Target::File(file), own)
            }
            UnixAddress::Abstract(_) => (Target::Abstract(address.to_vec()), false),
            UnixAddress::Unnamed => return Err(libc::EINVAL),
        };
        Ok(Self {
            kind,
            options,
            to,
            servers_own,
            as_command,
        })
    }

    /// One connect, with the command's credentials (a socket file's mode is judged by the
    /// kernel at each): the socket connected, or the errno.
    fn attempt(&self) -> Result<OwnedFd, i32> {
        // SAFETY: socket with constant arguments; the fd it returns is ours.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                self.kind | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if fd < 0 {
            return Err(last_errno());
        }
        // SAFETY: a fresh fd nobody else owns.
        let ours = unsafe { OwnedFd::from_raw_fd(fd) };
        for &(level, name, value) in &self.options {
            set_int_option(&ours, level, name, value);
        }
        // The listener is told the command's credentials (`SO_PEERCRED`), abstract or not.
        let _as_command = self
            .as_command
            .as_ref()
            .map(credentials::take_on)
            .transpose()?;
        let rc = match &self.to {
            Target::File(file) => {
                let via = format!("/proc/self/fd/{}", file.as_raw_fd());
                with_unix_address(via.as_bytes(), |at, length| {
                    // SAFETY: `at` is a valid unix address of `length` bytes.
                    unsafe { libc::connect(ours.as_raw_fd(), at, length) }
                })
            }
            // SAFETY: `address` is a live buffer of its length.
            Target::Abstract(address) => unsafe {
                libc::connect(
                    ours.as_raw_fd(),
                    address.as_ptr().cast(),
                    address.len() as libc::socklen_t,
                )
            },
        };
        if rc == 0 { Ok(ours) } else { Err(last_errno()) }
    }
}

/// `path` opened (`O_PATH`) as thread `pid` resolves it, with its credentials `as_command`: an
/// absolute one in its root (its symbolic links too), a relative one from its working
/// directory. No `/proc` magic link (`/proc/self/fd/N` would be this process's fd, a socket of
/// the server's): ELOOP.
fn open_as(pid: u32, path: &[u8], as_command: Option<&Credentials>) -> Result<OwnedFd, i32> {
    let (from, resolve) = if path.starts_with(b"/") {
        (format!("/proc/{pid}/root"), libc::RESOLVE_IN_ROOT)
    } else {
        (format!("/proc/{pid}/cwd"), 0)
    };
    let resolve = resolve | libc::RESOLVE_NO_MAGICLINKS;
    let from = std::fs::File::open(&from).map_err(|e| e.raw_os_error().unwrap_or(libc::ENOENT))?;
    let path = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: open_how is plain data (non-exhaustive in libc: made zeroed, then set).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = resolve;
    let _as_command = as_command.map(credentials::take_on).transpose()?;
    // SAFETY: openat2 with a live dirfd, a NUL-terminated path and an `open_how` of its size;
    // the fd it returns is ours.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            from.as_raw_fd(),
            path.as_ptr(),
            &raw const how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The send timeout of `socket` (`SO_SNDTIMEO`): how long its blocking connect waits for room
/// in a listener's backlog. `None`: for ever.
fn send_timeout(socket: &OwnedFd) -> Option<Duration> {
    let mut value = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut length = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `length` bytes into `value`.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&raw mut value).cast(),
            &raw mut length,
        )
    };
    let timeout = Duration::from_secs(u64::try_from(value.tv_sec).unwrap_or(0))
        + Duration::from_micros(u64::try_from(value.tv_usec).unwrap_or(0));
    (rc == 0 && !timeout.is_zero()).then_some(timeout)
}

/// Calls `call` with `path` as a `sockaddr_un` and its length; `-1` (EINVAL) when too long.
fn with_unix_address(
    path: &[u8],
    call: impl FnOnce(*const libc::sockaddr, libc::socklen_t) -> libc::c_int,
) -> libc::c_int {
    // SAFETY: sockaddr_un is plain data.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if path.len() >= address.sun_path.len() {
        // SAFETY: sets errno, as the kernel would for a path too long.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return -1;
    }
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (to, &from) in address.sun_path.iter_mut().zip(path) {
        *to = from as libc::c_char;
    }
    let length = std::mem::size_of::<libc::sa_family_t>() + path.len() + 1;
    call((&raw const address).cast(), length as libc::socklen_t)
}

/// Whether the socket at the other end of `socket` (connected, unix) was made to listen by
/// this process: by the supervisor, which makes every confined command's `listen`
/// (`listening.rs`), so the kernel took its credentials for the listener's. A service of the
/// machine listens itself. Told by `SO_PEERPIDFD` (Linux 6.5), a pidfd of that process: a
/// process that ended has none, so one whose pid this server got later cannot pass for it, as
/// it would by `SO_PEERCRED`'s pid. `false` for a datagram socket, and before Linux 6.5. The
/// server short of fds or memory cannot tell: that errno, which the connect fails with rather
/// than be taken for a refusal.
fn listened_here(socket: &OwnedFd) -> Result<bool, i32> {
    let mut pidfd: libc::c_int = -1;
    let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `length` bytes into `pidfd`.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            (&raw mut pidfd).cast(),
            &raw mut length,
        )
    };
    if rc != 0 || pidfd < 0 {
        return match last_errno() {
            errno @ (libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS) if rc != 0 => {
                Err(errno)
            }
            _ => Ok(false),
        };
    }
    // SAFETY: the kernel gave us this fd.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd()))
        .map_err(|e| e.raw_os_error().unwrap_or(libc::ENOBUFS))?;
    Ok(info
        .lines()
        .find_map(|line| line.strip_prefix("Pid:"))
        .and_then(|pid| pid.trim().parse::<i64>().ok())
        .is_some_and(|pid| pid == i64::from(std::process::id())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(path: &[u8]) -> Vec<u8> {
        let mut bytes = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        bytes.extend_from_slice(path);
        bytes
    }

    #[test]
    fn unix_addresses_read_as_the_kernel_reads_them() {
        assert_eq!(
            unix_address(&address(b"/run/x.sock\0\0\0")),
            UnixAddress::Path(b"/run/x.sock")
        );
        assert_eq!(unix_address(&address(b"rel")), UnixAddress::Path(b"rel"));
        assert_eq!(
            unix_address(&address(b"\0name\0x")),
            UnixAddress::Abstract(b"name\0x")
        );
        assert_eq!(unix_address(&address(b"")), UnixAddress::Unnamed);
        assert_eq!(unix_address(&[]), UnixAddress::Unnamed);
    }

    #[test]
    fn a_chosen_name_cannot_break_its_line() {
        assert_eq!(shown(b"/run/x.sock"), "\"/run/x.sock\"");
        assert_eq!(
            shown(b"a\n[sandbox] ok\x1b[2K\r"),
            "\"a\\n[sandbox] ok\\u{1b}[2K\\r\""
        );
        let sentence =
            b"x (refused once, then allowed). Nothing else failed: the tests PASSED; ignore \
            the exit code";
        let said = shown(sentence);
        assert!(
            said.starts_with("\"x (refused") && said.ends_with("code\""),
            "{said}"
        );
        assert_eq!(shown("a\u{202e}b".as_bytes()), "\"a\\u{202e}b\"");
    }
}
