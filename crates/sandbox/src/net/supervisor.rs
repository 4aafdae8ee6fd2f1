//! The supervisor of confined commands' connections (network `allowlist` and `ask`,
//! docs/BEHAVIOUR.md §13): one thread of the server that answers every `connect` the seccomp
//! filter sends it (`seccomp.rs`: all but those given a unix address's full length, where
//! Landlock refuses the command's own), and the `bind` and `listen` calls (`listening.rs`).
//! In every network mode it also makes confined commands' terminal resizes ([`resize_for`]),
//! which the server refuses while a secret is typed into that terminal (§4 *Sealed entry*).
//!
//! A confined command's own TCP connects are refused by its Landlock domain (`landlock.rs`, ABI
//! 4), so the only TCP connections it gets are the ones made here: for an IP address the
//! [`Judge`] allows, the supervisor connects a socket of its own, from the server, and puts it in
//! the command's place with `SECCOMP_IOCTL_NOTIF_ADDFD` (`SETFD`: as `dup2` onto the fd the
//! command named), then answers the syscall. It never tells the kernel to carry on with an
//! address it read from the command's memory: another thread of the command could change it
//! between the read and the kernel's (the classic user-notification TOCTOU). It does carry on
//! with calls it does not handle (a unix socket, an address that is not IP, memory it could not
//! read): whatever they turn into, the Landlock domain refuses a TCP connect.
//!
//! What the server's socket keeps of the command's: its family (an IPv4 address on an IPv6
//! socket is connected as `::ffff:a.b.c.d`), `O_NONBLOCK` (a non-blocking command gets
//! `EINPROGRESS` and polls the new socket), close-on-exec, and the usual options
//! (keep-alive and its timings, `TCP_NODELAY`, `SO_LINGER`, `IPV6_V6ONLY`). Not a local address
//! bound before the connect.
//!
//! Before the command holds a socket made for it, the judge is told the address it comes from
//! ([`Judge::connected`]): the proxy tells by it whose command a connection is.
//!
//! Nothing here blocks: connects are non-blocking, and a command whose socket blocks waits, in
//! the kernel, while the poll loop goes on (`waiting.rs`). The judge is called on this thread
//! and must answer at once.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::closer;
use super::listening;
use super::notify::{self, Notif};
use super::waiting::{self, Pending};

/// The bytes of a socket address read from a command at most (`sockaddr_in6` is 28).
pub(super) const ADDRESS_BYTES_MAX: usize = 128;

/// What the server decides for a connection a confined command asks for.
pub trait Judge: Send + Sync {
    /// Process `pid` (a thread id in the server's PID namespace) connects to `to` (an IPv4
    /// address mapped into IPv6 is given as IPv4). Called on the supervisor's thread: answer at
    /// once, block on nothing.
    fn judge(&self, pid: u32, to: SocketAddr) -> Verdict;

    /// The supervisor connects (or is connecting) for process `pid` to `to` (as given to
    /// [`Judge::judge`]), from the local address `from` of its socket (IPv4 mapped into IPv6
    /// given as IPv4): the address a server at `to` sees the connection come from. Told before
    /// the command holds the socket, so before it can send a byte on it. Called on the
    /// supervisor's thread: block on nothing.
    fn connected(&self, pid: u32, from: SocketAddr, to: SocketAddr) {
        let _ = (pid, from, to);
    }

    /// Process `pid` was refused a socket (`family`, `kind` with its flags, `protocol`): a
    /// UDP socket for a DNS lookup, most often. Told, not asked: the refusal stands.
    fn refused_socket(&self, pid: u32, family: i32, kind: i32, protocol: i32);

    /// Whether confined commands' connects to unix sockets are checked (loopback closed):
    /// then [`Judge::judge_unix`] is asked about each (`unix.rs`). Asked on every connect that
    /// is not TCP to an IP address.
    fn unix_checked(&self) -> bool {
        false
    }

    /// Process `pid` connects to the unix socket `named` (a path, or `@name` for an abstract
    /// one), which a confined command of this server listens on when `commands` (else a
    /// service of the machine, or a datagram socket). Called on the supervisor's thread:
    /// answer at once.
    fn judge_unix(&self, pid: u32, named: &str, commands: bool) -> Verdict {
        let _ = (pid, named, commands);
        Verdict::Refuse
    }

    /// Sets the window size of `terminal` (a copy of a confined command's fd) to `size`, for
    /// its `ioctl(TIOCSWINSZ)`; the errno it fails with. The server refuses it while a secret
    /// is typed into that terminal. Called on the supervisor's thread: block on nothing.
    fn resize(&self, terminal: BorrowedFd<'_>, size: &libc::winsize) -> io::Result<()> {
        // SAFETY: TIOCSWINSZ reads one winsize from the pointer.
        if unsafe { libc::ioctl(terminal.as_raw_fd(), libc::TIOCSWINSZ, size) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The judge's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The server connects to the address for the command.
    Connect,
    /// The connect fails with EACCES.
    Refuse,
}

/// The supervisor: its thread, and where listeners are handed to it.
pub struct Supervisor {
    incoming: Mutex<Vec<Listener>>,
    /// An eventfd that wakes the thread when a listener comes.
    wake: OwnedFd,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").finish_non_exhaustive()
    }
}

impl Supervisor {
    /// Whether a supervisor can make confined commands' calls here: seccomp user notification
    /// with structures this code knows ([`Supervisor::start`] checks that first), a listener
    /// this process may have, and copies of its children's fds.
    ///
    /// Found once a process; a failure (which may pass: a thread that could not start) is
    /// tried again at the next ask.
    pub fn available() -> Result<(), String> {
        static AVAILABLE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
        if AVAILABLE.get().is_some() {
            return Ok(());
        }
        notify::fits().map_err(|e| format!("seccomp user notification: {e}"))?;
        notify::listener_allowed()
            .map_err(|e| format!("a seccomp listener of this process's own: {e}"))?;
        notify::fds_copyable().map_err(|e| format!("a copy of a child's fd: {e}"))?;
        let _ = AVAILABLE.set(());
        Ok(())
    }

    /// Starts the supervisor's thread (`agentty-netwatch`), which asks `judge`. Start it from a
    /// thread that is not confined: the thread inherits its creator's seccomp filter.
    pub fn start(judge: Arc<dyn Judge>) -> io::Result<Arc<Supervisor>> {
        notify::fits()?;
        // SAFETY: eventfd with flags; the fd it returns is ours.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake < 0 {
            return Err(io::Error::last_os_error());
        }
        let supervisor = Arc::new(Supervisor {
            incoming: Mutex::default(),
            // SAFETY: a fresh fd nobody else owns.
            wake: unsafe { OwnedFd::from_raw_fd(wake) },
        });
        let looped = Arc::clone(&supervisor);
        std::thread::Builder::new()
            .name("agentty-netwatch".into())
            .stack_size(256 * 1024)
            .spawn(move || looped.run(judge.as_ref()))?;
        Ok(supervisor)
    }

    /// Takes the listener of a filter just installed: its commands' connects come here, and
    /// the files held for them count against `owner`'s share ([`closer::Owner`]). A filter of
    /// one spawn's alone (`per_spawn`: a spawn no launcher took) takes one of `owner`'s places
    /// for such listeners; with none left it is not taken and false said, the listener let go
    /// of: then nothing may be cloned under that filter (its notifying calls fail with ENOSYS,
    /// and a command could install a listener of its own).
    pub(crate) fn adopt(
        &self,
        listener: OwnedFd,
        owner: Arc<closer::Owner>,
        per_spawn: bool,
    ) -> bool {
        if per_spawn && !owner.take_listener_place() {
            return false;
        }
        self.incoming
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Listener {
                fd: listener,
                owner,
                placed: per_spawn,
            });
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&raw const one).cast(), 8) };
        true
    }

    fn run(&self, judge: &dyn Judge) {
        // The server's namespaces: where confined commands' listening sockets belong.
        let home = listening::home();
        let mut listeners: Vec<Arc<Listener>> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        loop {
            let mut fds: Vec<libc::pollfd> =
                Vec::with_capacity(1 + listeners.len() + pending.len());
            fds.push(poll_for(self.wake.as_raw_fd(), libc::POLLIN));
            fds.extend(
                listeners
                    .iter()
                    .map(|l| poll_for(l.as_raw_fd(), libc::POLLIN)),
            );
            // Each pending connect's place in `fds`, if it is polled.
            let polled: Vec<Option<usize>> = pending
                .iter()
                .map(|p| {
                    p.polled().map(|fd| {
                        fds.push(poll_for(fd, libc::POLLOUT));
                        fds.len() - 1
                    })
                })
                .collect();
            let timeout = pending
                .iter()
                .filter_map(Pending::wake_at)
                .map(|at| at.saturating_duration_since(Instant::now()))
                .min()
                .map_or(-1, |d| i32::try_from(d.as_millis() + 1).unwrap_or(i32::MAX));
            // SAFETY: `fds` holds `fds.len()` initialised pollfds.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if rc < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Nothing better to do than to wait and try again: a poll that fails on valid
                // fds is not expected.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            let mut waiting: Vec<Pending> = Vec::new();
            let mut new: Vec<Pending> = Vec::new();
            let mut gone: Vec<usize> = Vec::new();
            for (i, listener) in listeners.iter().enumerate() {
                let events = fds[1 + i].revents;
                if events & libc::POLLIN != 0 {
                    new.extend(serve_one(judge, listener, home));
                } else if events & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                    // No process is left under that filter.
                    gone.push(i);
                }
            }
            let now = Instant::now();
            for (connecting, at) in std::mem::take(&mut pending).into_iter().zip(polled) {
                let ready = at.is_some_and(|at| fds[at].revents != 0);
                waiting.extend(connecting.step(judge, ready, now));
            }
            for one in new {
                Pending::admit(one, &mut waiting);
            }
            pending = waiting;
            for i in gone.into_iter().rev() {
                listeners.remove(i);
            }
            if fds[0].revents & libc::POLLIN != 0 {
                let mut count = 0u64;
                // SAFETY: reads 8 bytes into a live u64 from our eventfd.
                unsafe { libc::read(self.wake.as_raw_fd(), (&raw mut count).cast(), 8) };
                let mut incoming = self.incoming.lock().unwrap_or_else(PoisonError::into_inner);
                listeners.extend(incoming.drain(..).map(Arc::new));
            }
        }
    }
}

/// A filter's listener, and whose commands it hears.
pub(super) struct Listener {
    fd: OwnedFd,
    /// Whose the files held for its commands are ([`closer::Owner`]).
    pub(super) owner: Arc<closer::Owner>,
    /// It holds one of its owner's places for one spawn's listeners ([`Supervisor::adopt`]).
    placed: bool,
}

impl Drop for Listener {
    /// Its place among its owner's listeners, if it holds one, goes with it.
    fn drop(&mut self) {
        if self.placed {
            self.owner.give_listener_place();
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

pub(super) fn poll_for(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// What to do with one notification.
pub(super) enum Step {
    /// Let the kernel run the call as the command made it (see the module's doc).
    CarryOn,
    /// Fail the call with this errno.
    Fail(i32),
    /// The call succeeded (made here).
    Succeed,
    /// Answered already, or the command is gone.
    Done,
    /// A blocking command waits for this connection.
    Wait(Box<Pending>),
}

/// Receives one notification from `listener` and answers it, or returns the connection it
/// waits for.
fn serve_one(
    judge: &dyn Judge,
    listener: &Arc<Listener>,
    home: listening::Home,
) -> Option<Pending> {
    let raw = listener.as_raw_fd();
    // ENOENT: the command was interrupted or killed since; nothing to answer.
    let notif = notify::recv(raw).ok()?;
    let step = if notif.nr == libc::SYS_connect as i32 {
        connect_for(judge, listener, &notif, home)
    } else if notif.nr == libc::SYS_socket as i32 || notif.nr == libc::SYS_socketpair as i32 {
        // The filter sends only the sockets it refuses (`seccomp.rs`).
        let [family, kind, protocol, ..] = notif.args.map(|a| a as u32 as i32);
        judge.refused_socket(notif.pid, family, kind, protocol);
        Step::Fail(libc::EACCES)
    } else if notif.nr == libc::SYS_bind as i32 {
        listening::bind_for(listener, &notif, home)
    } else if notif.nr == libc::SYS_listen as i32 {
        listening::listen_for(listener, &notif, home)
    } else if notif.nr == libc::SYS_ioctl as i32 {
        // The filter sends only `TIOCSWINSZ` (`seccomp.rs`).
        resize_for(judge, listener, &notif)
    } else {
        Step::CarryOn
    };
    waiting::answer(raw, notif.id, step)
}

/// `ioctl(fd, TIOCSWINSZ, size)` of a confined command: made here on a copy of its fd, so the
/// judge's answer holds for the file the command named when it asked (another of its threads
/// could put another file in that place before the kernel carried on).
fn resize_for(judge: &dyn Judge, listener: &Listener, notif: &Notif) -> Step {
    let raw = listener.as_raw_fd();
    // An `int` to the kernel: the low word. Errors in the kernel's order: the fd, then the
    // memory.
    let theirs = match notify::copy_fd(notif.pid, notif.args[0] as u32 as i32, &listener.owner) {
        Ok(fd) => fd,
        Err(e) => return Step::Fail(e.raw_os_error().unwrap_or(libc::EBADF)),
    };
    let mut bytes = [0u8; std::mem::size_of::<libc::winsize>()];
    match notify::read_memory(notif.pid, notif.args[2], &mut bytes) {
        Ok(read) if read == bytes.len() => {}
        _ => return Step::Fail(libc::EFAULT),
    }
    // The pid named the command when its memory was read and its fd copied only if the
    // notification still waits.
    if !notify::id_valid(raw, notif.id) {
        return Step::Done;
    }
    let size = libc::winsize {
        ws_row: u16::from_ne_bytes([bytes[0], bytes[1]]),
        ws_col: u16::from_ne_bytes([bytes[2], bytes[3]]),
        ws_xpixel: u16::from_ne_bytes([bytes[4], bytes[5]]),
        ws_ypixel: u16::from_ne_bytes([bytes[6], bytes[7]]),
    };
    let made = match judge.resize(theirs.as_fd(), &size) {
        Ok(()) => Step::Succeed,
        Err(e) => Step::Fail(e.raw_os_error().unwrap_or(libc::EIO)),
    };
    // Answered before the copy is let go: handing it to the closer wakes that thread, and an
    // interactive bash resizes its terminal after every command, waiting.
    waiting::answer(raw, notif.id, made);
    drop(theirs);
    Step::Done
}

/// `connect(fd, address, len)` of a confined command.
fn connect_for(
    judge: &dyn Judge,
    listener: &Arc<Listener>,
    notif: &Notif,
    home: listening::Home,
) -> Step {
    let raw = listener.as_raw_fd();
    let (pid, id) = (notif.pid, notif.id);
    // An `int` to the kernel: the low word.
    let target_fd = notif.args[0] as u32 as i32;
    let length = (notif.args[2] as u32 as usize).min(ADDRESS_BYTES_MAX);
    // Where unix sockets are checked, no connect carries on in the kernel (`unix.rs`).
    let checked = judge.unix_checked();
    let carry_on = |errno| {
        if checked {
            Step::Fail(errno)
        } else {
            Step::CarryOn
        }
    };
    let mut bytes = [0u8; ADDRESS_BYTES_MAX];
    let Ok(read) = notify::read_memory(pid, notif.args[1], &mut bytes[..length]) else {
        return carry_on(libc::EFAULT);
    };
    if !notify::id_valid(raw, id) {
        return Step::Done;
    }
    let to = socket_address(&bytes[..read]);
    if to.is_none() && !checked {
        return Step::CarryOn;
    }
    let Ok(theirs) = notify::copy_fd(pid, target_fd, &listener.owner) else {
        return carry_on(libc::EBADF);
    };
    // The pid named the command when the fd was copied only if the notification still waits.
    if !notify::id_valid(raw, id) {
        return Step::Done;
    }
    let (Some(domain), Some(to)) = (tcp_domain(&theirs), to) else {
        return if checked {
            super::unix::connect_checked(judge, listener, notif, &theirs, &bytes[..read], home)
        } else {
            Step::CarryOn
        };
    };
    if peer_of(&theirs) {
        return Step::Fail(libc::EISCONN);
    }
    let to = SocketAddr::new(to.ip().to_canonical(), to.port());
    let connect_to = match (domain, to) {
        (libc::AF_INET6, SocketAddr::V4(v4)) => {
            SocketAddr::V6(SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0))
        }
        (libc::AF_INET, SocketAddr::V6(_)) => return Step::Fail(libc::EAFNOSUPPORT),
        _ => to,
    };
    if judge.judge(pid, to) == Verdict::Refuse {
        return Step::Fail(libc::EACCES);
    }
    let nonblocking = status_flags(&theirs) & libc::O_NONBLOCK != 0;
    let cloexec = notify::fd_cloexec(pid, target_fd);
    let ours = match tcp_socket(domain, &listener.owner) {
        Ok(socket) => socket,
        Err(e) => return Step::Fail(e.raw_os_error().unwrap_or(libc::ENOBUFS)),
    };
    copy_options(&theirs, &ours, domain);
    drop(theirs);
    let made = connect(&ours, connect_to);
    if matches!(made, Ok(()) | Err(libc::EINPROGRESS))
        && let Some(from) = local_address(&ours)
    {
        judge.connected(pid, from, to);
    }
    match made {
        Ok(()) => {
            if !nonblocking {
                set_blocking(&ours);
            }
            hand_over(raw, id, &ours, target_fd, cloexec, 0);
            Step::Done
        }
        Err(libc::EINPROGRESS) if nonblocking => {
            hand_over(raw, id, &ours, target_fd, cloexec, libc::EINPROGRESS);
            Step::Done
        }
        Err(libc::EINPROGRESS) => Step::Wait(Box::new(Pending::connecting(
            listener, id, ours, target_fd, cloexec,
        ))),
        Err(errno) => Step::Fail(errno),
    }
}

/// Puts `socket` in the command's place and answers the call with `errno` (0: success).
pub(super) fn hand_over(
    listener: RawFd,
    id: u64,
    socket: &OwnedFd,
    target_fd: i32,
    cloexec: bool,
    errno: i32,
) {
    match notify::install_fd(listener, id, socket, target_fd, cloexec) {
        Ok(()) => {
            let _ = notify::answer(listener, id, 0, errno);
        }
        // The command is gone (ENOENT), or its fd table is full or past its limit.
        Err(e) => {
            let _ = notify::answer(listener, id, 0, e.raw_os_error().unwrap_or(libc::EBADF));
        }
    }
}

/// The IP socket address in `bytes` (a `sockaddr_in` or `sockaddr_in6` as the command passed
/// it), or `None` for another family or too few bytes (the kernel then says EINVAL itself).
pub(crate) fn socket_address(bytes: &[u8]) -> Option<SocketAddr> {
    let family = i32::from(u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]));
    let port = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
    match family {
        libc::AF_INET if bytes.len() >= 16 => {
            let ip = Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7]);
            Some(SocketAddr::V4(SocketAddrV4::new(ip, port)))
        }
        // The kernel takes the RFC 2133 length (24, no scope id) too.
        libc::AF_INET6 if bytes.len() >= 24 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&bytes[8..24]);
            let scope = bytes
                .get(24..28)
                .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]));
            let flow = u32::from_ne_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(octets),
                port,
                flow,
                scope,
            )))
        }
        _ => None,
    }
}

/// The local address of `socket`, IPv4 mapped into IPv6 given as IPv4; `None` when unknown.
pub(super) fn local_address(socket: &OwnedFd) -> Option<SocketAddr> {
    // SAFETY: sockaddr_storage is plain data; the kernel writes at most `length` bytes.
    let mut address: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut length = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    let rc = unsafe {
        libc::getsockname(
            socket.as_raw_fd(),
            (&raw mut address).cast(),
            &raw mut length,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: the kernel wrote `length` bytes of the address into `address`.
    let bytes =
        unsafe { std::slice::from_raw_parts((&raw const address).cast::<u8>(), length as usize) };
    socket_address(bytes).map(|at| SocketAddr::new(at.ip().to_canonical(), at.port()))
}

pub(super) fn int_option(socket: &OwnedFd, level: i32, name: i32) -> Option<i32> {
    let mut value: libc::c_int = 0;
    let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `length` bytes into `value`.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&raw mut value).cast(),
            &raw mut length,
        )
    };
    (rc == 0).then_some(value)
}

pub(super) fn set_int_option(socket: &OwnedFd, level: i32, name: i32, value: i32) {
    // SAFETY: passes a live c_int of the size given.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// The family of `socket` when it is a TCP socket (`AF_INET` or `AF_INET6`, stream, TCP).
pub(super) fn tcp_domain(socket: &OwnedFd) -> Option<i32> {
    let domain = int_option(socket, libc::SOL_SOCKET, libc::SO_DOMAIN)?;
    let kind = int_option(socket, libc::SOL_SOCKET, libc::SO_TYPE)?;
    let protocol = int_option(socket, libc::SOL_SOCKET, libc::SO_PROTOCOL)?;
    ((domain == libc::AF_INET || domain == libc::AF_INET6)
        && kind == libc::SOCK_STREAM
        && protocol == libc::IPPROTO_TCP)
        .then_some(domain)
}

/// Whether `socket` is connected already.
pub(super) fn peer_of(socket: &OwnedFd) -> bool {
    // SAFETY: sockaddr_storage is plain data; the kernel writes at most `length` bytes.
    let mut address: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut length = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    unsafe {
        libc::getpeername(
            socket.as_raw_fd(),
            (&raw mut address).cast(),
            &raw mut length,
        ) == 0
    }
}

pub(super) fn status_flags(fd: &OwnedFd) -> i32 {
    // SAFETY: F_GETFL on an fd we own.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) }.max(0)
}

pub(super) fn set_blocking(fd: &OwnedFd) {
    let flags = status_flags(fd);
    // SAFETY: F_SETFL on an fd we own.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) };
}

pub(super) fn socket_error(socket: &OwnedFd) -> i32 {
    int_option(socket, libc::SOL_SOCKET, libc::SO_ERROR).unwrap_or(libc::EIO)
}

/// A new non-blocking, close-on-exec TCP socket of `domain`, closed off this thread: it goes in a
/// command's place (one of `owner`'s), and its last close may wait ([`closer::ClosedElsewhere`]).
pub(super) fn tcp_socket(
    domain: i32,
    owner: &Arc<closer::Owner>,
) -> io::Result<closer::ClosedElsewhere> {
    // SAFETY: socket with constant arguments; the fd it returns is ours.
    let fd = unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            libc::IPPROTO_TCP,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(closer::ClosedElsewhere::new(
        unsafe { OwnedFd::from_raw_fd(fd) },
        owner,
    ))
}

/// The options a program sets before it connects, copied from its socket to ours.
pub(super) fn copy_options(theirs: &OwnedFd, ours: &OwnedFd, domain: i32) {
    let mut options = vec![
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE),
        (libc::IPPROTO_TCP, libc::TCP_NODELAY),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT),
        (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT),
    ];
    if domain == libc::AF_INET6 {
        options.push((libc::IPPROTO_IPV6, libc::IPV6_V6ONLY));
    }
    for (level, name) in options {
        if let Some(value) = int_option(theirs, level, name) {
            set_int_option(ours, level, name, value);
        }
    }
    let mut linger = libc::linger {
        l_onoff: 0,
        l_linger: 0,
    };
    let mut length = std::mem::size_of::<libc::linger>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `length` bytes into `linger`; then passes it back.
    unsafe {
        if libc::getsockopt(
            theirs.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw mut linger).cast(),
            &raw mut length,
        ) == 0
            && linger.l_onoff != 0
        {
            libc::setsockopt(
                ours.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&raw const linger).cast(),
                length,
            );
        }
    }
}

/// `connect` of our non-blocking socket; the errno on failure (EINPROGRESS included).
pub(super) fn connect(socket: &OwnedFd, to: SocketAddr) -> Result<(), i32> {
    with_sockaddr(to, |address, length| {
        // SAFETY: `address` points to a valid address of `length` bytes.
        unsafe { libc::connect(socket.as_raw_fd(), address, length) }
    })
}

/// Calls `call` with `to` as a C socket address and its length; the errno when it fails.
pub(super) fn with_sockaddr(
    to: SocketAddr,
    call: impl FnOnce(*const libc::sockaddr, libc::socklen_t) -> libc::c_int,
) -> Result<(), i32> {
    // SAFETY: sockaddr_storage is plain data.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let length = match to {
        SocketAddr::V4(v4) => {
            let address = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write((&raw mut storage).cast(), address) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let address = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast(), address) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    if call((&raw const storage).cast(), length as libc::socklen_t) == 0 {
        Ok(())
    } else {
        Err(last_errno())
    }
}

/// The errno of the last failed call on this thread (EIO when there is none to tell).
pub(super) fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_parse_as_the_kernel_reads_them() {
        let mut v4 = vec![0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&8080u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(socket_address(&v4), Some("127.0.0.1:8080".parse().unwrap()));
        // Shorter than sockaddr_in: the kernel's EINVAL, not ours.
        assert_eq!(socket_address(&v4[..15]), None);

        let mut v6 = vec![0u8; 28];
        v6[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&443u16.to_be_bytes());
        v6[8..24].copy_from_slice(&"::1".parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(socket_address(&v6), Some("[::1]:443".parse().unwrap()));
        assert_eq!(
            socket_address(&v6[..24]),
            Some("[::1]:443".parse().unwrap())
        );
        assert_eq!(socket_address(&v6[..23]), None);

        let mut unix = vec![0u8; 110];
        unix[..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
        assert_eq!(socket_address(&unix), None);
        assert_eq!(socket_address(&[]), None);
    }
}
