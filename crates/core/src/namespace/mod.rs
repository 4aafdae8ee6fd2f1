//! The session's process namespaces: nothing a confined command starts outlives the server, by
//! the kernel's word rather than by tracking, and over HTTP no caller's commands see another's
//! (docs/BEHAVIOUR.md §3, §9).
//!
//! Tracking (run markers, subreapers, the watchdog) misses one case: a command's descendant
//! that wiped its environment (`env -i`) and double-forked, when the server and the watchdog
//! are killed in the same instant (`pkill -9 agentty`). The kernel has a mechanism that cannot
//! miss: when the init (pid 1) of a PID namespace dies, every process in that namespace is
//! killed with it, those of the namespaces inside it included. So where agentty may create one
//! (`CAP_SYS_ADMIN`: root, as in most containers), the server starts, once at start-up while it
//! has one thread, a small process, the **session init**, that is pid 1 of a new PID namespace,
//! and starts every confined command inside that namespace; over HTTP, inside a namespace of
//! its caller's own (a token of the token file), whose init the session init makes at the
//! caller's first confined command:
//!
//! ```text
//! watchdog ── server ── session init (pid 1 of the session's namespace; reaps orphans)
//!               │            └── a caller's init (pid 1 of a caller's namespace, inside it)
//!               └── confined commands (in the session's namespace, or their caller's) …
//! ```
//!
//! The session init dies with the server however the server dies: `PR_SET_PDEATHSIG` (SIGKILL)
//! for any death of the server, SIGKILL and the OOM killer included, and EOF on a socket only
//! the server holds as a second net; the server also kills it when a session ends. The callers'
//! go with it (they are in its namespace; `PR_SET_PDEATHSIG` too). A confined command cannot
//! kill any of them: Landlock scopes its signals to its own tree, the kernel ignores what a
//! namespace's own processes send to its init, and an outer namespace's processes are not
//! there to name.
//!
//! A caller's init is made by the session init, not by the server: a fork is only safe in a
//! process of one thread, and the session init is one (forked before the runtime), idle but for
//! reaping. It is a fork of that fork, so the pages it does not write are shared with it (`ps`
//! counts them in its RSS; what it has of its own is tens of KB). The server asks over a
//! socket pair and receives a pidfd of the new init (`SCM_RIGHTS`), as it holds the session
//! init's.
//!
//! `/proc` follows the namespace: the session init enters a mount namespace of its own (a copy
//! of the server's, so the session's private `/dev/pts` is there too) with `/proc` mounted for the
//! new PID namespace, and each confined command enters it before its sandbox; a caller's init
//! enters a copy of that one (the read-only and covered paths with it) and mounts `/proc` again
//! for its own namespace, with the same masks. A pid a command reads from `ps` or `pgrep` is
//! then one `kill` can use, and another caller's processes are not in `ps`, `/proc` or the
//! reach of `kill`: a namespace sees those inside it only. The consequence, said in the README:
//! confined commands see their session's (over HTTP, their caller's) processes only.
//!
//! Asked to (network `allowlist` and `ask`, docs/BEHAVIOUR.md §13), the session init also
//! enters a network namespace of its own, with only `lo` (up, given `CAP_NET_ADMIN`), and every
//! confined command (the callers' too: they share it) enters it with the mount namespace.
//! Nothing there routes anywhere: the connections a command is allowed are made by the server's
//! supervisor from the server's own namespace (`agentty-sandbox`'s `net/`), and its TCP `bind`
//! and `listen` too, so a dev server listens where the user's browser and the next command
//! reach it. What the seccomp and Landlock layer does not see (a syscall it misses, a raw socket
//! of a command that kept `CAP_NET_RAW`) finds no route out.
//!
//! The server itself stays in the host's namespaces: it reads the host's `/proc` for the pids
//! `clone` gives it. Its spawning thread enters a command's PID namespace only around the
//! clone of a confined command (`setns(CLONE_NEWPID)` sets where the thread's next child goes)
//! and leaves it at once: a thread whose children would go to another PID namespace cannot
//! start threads. Unconfined commands (`auto` mode, an approved escalation) stay in the host's
//! namespaces, where `ps` and `kill` reach the user's processes, and are tracked as before.

pub(crate) mod control;
mod init;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use crate::children::HeldChildren;

/// How long the end of a session waits for the session init (and so every process of the
/// namespace) to be gone; a process in uninterruptible sleep cannot die until its I/O returns.
const END_WAIT: Duration = Duration::from_secs(10);
/// How long start-up waits for the session init to report, and the session init for a
/// caller's (a mount on a hung network file system must not hang the server).
const READY_WAIT: Duration = Duration::from_secs(10);
/// The session init's report: a status byte, two counts (`u32`, native order), whether it
/// made a network namespace (1) or not (0), and whether it bounded the processes (1) or not.
const REPORT_BYTES: usize = 11;

/// How many processes and threads confined commands may have at once: the `pid_max` of their
/// PID namespaces, which Linux keeps per namespace from 6.14 (on an older kernel it is one value
/// for the whole machine, never written here). `session`: all of them together (stdio's one
/// caller, or every HTTP caller's); `caller`: each HTTP caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessBounds {
    pub session: u32,
    pub caller: u32,
}

impl ProcessBounds {
    /// Over stdio, `per_caller` for the session's one caller. Over HTTP, `per_caller` each, and
    /// three quarters of the machine's `pid_max` for all together (the rest for the server
    /// and everything else), never below `per_caller`.
    pub fn new(per_caller: u32, http: bool) -> Self {
        let session = if http {
            host_pid_max().map_or(per_caller, |max| (max / 4 * 3).max(per_caller))
        } else {
            per_caller
        };
        ProcessBounds {
            session,
            caller: per_caller.min(session),
        }
    }
}

/// The numbers the kernel skips when a namespace's pids wrap around: past its first wrap a
/// namespace whose `pid_max` is `n` holds `n - 300` processes, so a bound of `count` is written as
/// `count + 300` (never fewer than asked; up to 300 more before the first wrap).
const RESERVED_PIDS: u32 = 300;

impl ProcessBounds {
    /// The `pid_max` that holds `count` processes: `count` plus the reserved numbers, at least
    /// the kernel's least (`max(301, 8 × possible CPUs)`: a smaller one is refused).
    pub(crate) fn pid_max_for(count: u32) -> u32 {
        count.saturating_add(RESERVED_PIDS).max(pid_max_floor())
    }
}

/// The least `pid_max` the kernel accepts: 301, or 8 per possible CPU where that is more.
fn pid_max_floor() -> u32 {
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|list| possible_cpus(&list))
        .unwrap_or(1);
    (RESERVED_PIDS + 1).max(possible.saturating_mul(8))
}

/// How many CPUs a kernel CPU list names (`0-127`, `0,2-3`).
fn possible_cpus(list: &str) -> Option<u32> {
    let mut count = 0u32;
    for part in list.trim().split(',') {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        let (first, last): (u32, u32) = (first.parse().ok()?, last.parse().ok()?);
        count = count.saturating_add(last.checked_sub(first)? + 1);
    }
    Some(count)
}

/// The machine's `pid_max`, as this process's PID namespace reads it.
fn host_pid_max() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether this kernel keeps `pid_max` per PID namespace (Linux 6.14 and later); on an older one
/// a write inside a namespace would change the machine's.
pub fn pid_max_per_namespace() -> bool {
    // SAFETY: uname fills the struct it is given; all zeroes is a valid value of it.
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a pointer to a struct of the right type.
    if unsafe { libc::uname(&raw mut name) } != 0 {
        return false;
    }
    // SAFETY: uname NUL-terminates `release`.
    let release = unsafe { std::ffi::CStr::from_ptr(name.release.as_ptr()) }.to_string_lossy();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (6, 14)
}

/// What the session's mount namespace changes for confined commands.
#[derive(Debug, Default, Clone)]
pub struct Mounts {
    /// Each becomes a read-only copy of itself (extracted package sources; one that cannot be
    /// is skipped).
    pub read_only: Vec<PathBuf>,
    /// Each becomes a copy of itself, so it cannot be renamed or removed (the directories
    /// above `read_only`'s, parents first).
    pub pinned: Vec<PathBuf>,
    /// Each is covered: a directory by an empty read-only one (the server's records of runs),
    /// a file by `/dev/null` (the HTTP token file).
    pub hidden: Vec<PathBuf>,
    /// Each, a file or a directory, becomes a read-only copy of itself, like `read_only`, and
    /// is counted apart: the paths that run code later (`.git/hooks`, `.git/config`, rc files;
    /// the sandbox's `protected.rs`). Their renameable parents are in `pinned`.
    pub protected: Vec<PathBuf>,
}

/// What the session init made read-only.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// How many of [`Mounts::read_only`] are read-only.
    pub sealed: usize,
    /// How many of [`Mounts::protected`] are read-only.
    pub protected: usize,
    /// Confined commands run in a network namespace of the session's own (only `lo`):
    /// asked of [`start`] and made.
    pub network: bool,
    /// The bounds on confined commands' processes, where the kernel keeps them per namespace
    /// and the session init set its own.
    pub processes: Option<ProcessBounds>,
}

/// A PID namespace confined commands run in (the session's, or a caller's), as the server
/// holds it: its init.
#[derive(Debug)]
pub(crate) struct Namespace {
    /// The init's pid, in the server's (host) namespace.
    init_pid: i32,
    /// A pidfd of the init: `setns` into its namespaces, and its death is readable.
    init: OwnedFd,
    /// A caller's (made on request), not the session's.
    of_caller: bool,
    /// The init is in a network namespace of its own (a caller's shares the session's):
    /// confined commands enter it too.
    network: bool,
    /// The init's children list, held open: where the orphans of confined commands go, read
    /// on every send at a shell's prompt (`pty/shell/reader.rs`).
    children: Option<HeldChildren>,
    /// The init's `/proc/<pid>/stat`, held open: read before every command of a caller
    /// ([`Namespace::init_ending`]), where opening and closing it cost twice the read.
    stat: Option<std::fs::File>,
}

/// The session's namespace, and what makes the callers'.
#[derive(Debug)]
struct Session {
    namespace: Namespace,
    /// The server's own PID namespace, to return the spawning thread to.
    host: OwnedFd,
    /// The server's end of the control socket: asks the session init for a caller's namespace,
    /// and the session init leaves when it reads EOF.
    control: Mutex<OwnedFd>,
    /// The number of the next request on `control`.
    requests: AtomicU32,
    /// How many of the paths asked to be read-only are.
    started: Started,
}

static SESSION: OnceLock<Result<Session, String>> = OnceLock::new();

/// Each HTTP caller's namespace, made at its first confined command: a caller's name and its
/// namespace. Made ones are never freed (a caller's init lives as long as the server): at most
/// one per caller of the token file, and one more each time one's init was killed.
static CALLERS: RwLock<Vec<(std::sync::Arc<str>, &'static Namespace)>> = RwLock::new(Vec::new());

/// How many callers' namespaces were made: what the tree's list of reapers is kept by.
static CALLERS_MADE: AtomicUsize = AtomicUsize::new(0);

fn session() -> Option<&'static Session> {
    SESSION.get().and_then(|made| made.as_ref().ok())
}

/// The session's namespace, once [`start`] made one.
pub(crate) fn get() -> Option<&'static Namespace> {
    session().map(|s| &s.namespace)
}

/// The namespace a confined command of `caller` runs in: the session's without a caller (stdio,
/// one caller), the caller's own over HTTP, made now at its first command; `None` where the
/// session has no namespace. A caller's that cannot be made is an error: the command must not
/// run where another caller's commands can see it.
pub(crate) fn of(caller: Option<&str>) -> io::Result<Option<&'static Namespace>> {
    let Some(session) = session() else {
        return Ok(None);
    };
    let Some(caller) = caller else {
        return Ok(Some(&session.namespace));
    };
    // The callers' are inside the session's, and die with it.
    if session.namespace.init_gone() {
        return Err(session.namespace.ended());
    }
    // A caller's namespace whose init was killed is made again at its next command; one whose
    // init is still ending (waiting for its last processes to be reaped) counts as ended too,
    // as no command can start in it any more.
    let live = |callers: &[(std::sync::Arc<str>, &'static Namespace)]| {
        callers
            .iter()
            .find(|(name, ns)| **name == *caller && !ns.init_gone() && !ns.init_ending())
            .map(|(_, ns)| *ns)
    };
    if let Some(ns) = live(&CALLERS.read().unwrap_or_else(PoisonError::into_inner)) {
        return Ok(Some(ns));
    }
    // Made once: the request is made under the control socket's lock, so a second command of
    // the same caller waits for the first's namespace and finds it.
    let control = session
        .control
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(ns) = live(&CALLERS.read().unwrap_or_else(PoisonError::into_inner)) {
        return Ok(Some(ns));
    }
    let made = crate::blocking::section(|| session.make_caller(&control)).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot make this caller's PID namespace: {e}"),
        )
    })?;
    let made: &'static Namespace = Box::leak(Box::new(made));
    let mut callers = CALLERS.write().unwrap_or_else(PoisonError::into_inner);
    callers.retain(|(name, _)| **name != *caller);
    callers.push((caller.into(), made));
    CALLERS_MADE.fetch_add(1, Ordering::Release);
    Ok(Some(made))
}

/// The pids of every namespace's init (the session's and the callers'), where the kernel
/// re-parents the orphans of confined commands; and how many callers' were made by then (a
/// list is current while [`inits_made`] says the same).
pub(crate) fn init_pids() -> (Vec<i32>, usize) {
    let made = CALLERS_MADE.load(Ordering::Acquire);
    let mut pids: Vec<i32> = get().map(|ns| ns.init_pid).into_iter().collect();
    pids.extend(
        CALLERS
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, ns)| ns.init_pid),
    );
    (pids, made)
}

/// The children of every namespace's init (the session's and the callers'), read through the
/// lists held open; an init whose list could not be held, by its pid.
pub(crate) fn inits_children() -> Vec<Vec<i32>> {
    let read = |ns: &Namespace| match &ns.children {
        Some(children) => children.read(),
        None => crate::children::of_single_threaded(ns.init_pid),
    };
    let mut all: Vec<Vec<i32>> = get().map(read).into_iter().collect();
    all.extend(
        CALLERS
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, ns)| read(ns)),
    );
    all
}

/// The session init's pid, when there is one: it is the server's child but none of its
/// commands'.
pub fn init_pid() -> Option<i32> {
    get().map(|ns| ns.init_pid)
}

/// Where this process sees the root of the namespaces `caller`'s confined commands run in
/// (`/proc/<init>/root`: their mounts, their `/proc`), that caller's made now if it was not yet
/// (see [`of`]); `None` where they run in the server's own.
pub fn root_of(caller: Option<&str>) -> io::Result<Option<PathBuf>> {
    Ok(of(caller)?.map(|ns| PathBuf::from(format!("/proc/{}/root", ns.init_pid))))
}

/// The PID namespace `caller`'s confined commands run in, as `stat` names its file (device,
/// inode), where it was made already: the session's without a caller (stdio), the caller's own
/// over HTTP. `None` where there is none (an unprivileged server; a caller with no command yet).
/// Never makes one.
pub fn pid_namespace_of(caller: Option<&str>) -> Option<(u64, u64)> {
    let session = session()?;
    let init = match caller {
        None => session.namespace.init_pid,
        Some(caller) => CALLERS
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(name, ns)| **name == *caller && !ns.init_gone())
            .map(|(_, ns)| ns.init_pid)?,
    };
    pid_namespace_of_process(init.unsigned_abs())
}

/// The PID namespace process `pid` runs in (device, inode of `/proc/<pid>/ns/pid`).
pub fn pid_namespace_of_process(pid: u32) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(format!("/proc/{pid}/ns/pid")).ok()?;
    Some((meta.dev(), meta.ino()))
}

/// Deepest nesting of PID namespaces the kernel allows.
const PID_NAMESPACE_LEVELS_MAX: usize = 32;

/// The PID namespaces process `pid` runs within: its own first, then each parent up to this
/// process's own (`NS_GET_PARENT`); empty when `/proc` does not tell. A command may make PID
/// namespaces of its own (`unshare -p`, bubblewrap, rootless containers) below its session's:
/// it is still within the session's.
pub fn pid_namespaces_of_process(pid: u32) -> Vec<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(mut at) = std::fs::File::open(format!("/proc/{pid}/ns/pid")) else {
        return Vec::new();
    };
    let mut chain = Vec::new();
    while let Ok(meta) = at.metadata() {
        chain.push((meta.dev(), meta.ino()));
        if chain.len() == PID_NAMESPACE_LEVELS_MAX {
            break;
        }
        // SAFETY: NS_GET_PARENT on a namespace fd returns a fresh fd (or fails: the initial
        // namespace, or one above this process's own).
        let parent = unsafe { libc::ioctl(at.as_raw_fd(), libc::NS_GET_PARENT) };
        if parent < 0 {
            break;
        }
        // SAFETY: a fresh fd nothing else owns.
        at = unsafe { std::fs::File::from_raw_fd(parent) };
    }
    chain
}

/// How many callers' namespaces were made so far.
pub(crate) fn inits_made() -> usize {
    CALLERS_MADE.load(Ordering::Acquire)
}

pub(crate) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fresh fds into the array on success; nothing else owns them.
    unsafe {
        check(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC))?;
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

fn open(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: open on a NUL-terminated path; the fd returned is fresh.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Starts the session init (see the module comment) with `mounts` made in the session's mount
/// namespace and, with `network`, in a network namespace of its own (see [`network_isolated`]).
/// Call once, in the server, while the process has one thread. Returns how many of the paths
/// asked to be read-only are, and whether the network namespace was made; `Err` says why there
/// is no namespace: confined commands then run in the server's namespaces, tracked by run
/// marker and subreaper only.
pub fn start(mounts: &Mounts, network: bool, processes: ProcessBounds) -> Result<Started, String> {
    SESSION
        .get_or_init(|| create(mounts, network, processes).map_err(|e| why(&e)))
        .as_ref()
        .map(|session| session.started)
        .map_err(Clone::clone)
}

/// What [`start`] made, when it was called: `None` before (or in a process that never calls
/// it, such as `doctor`).
pub fn started() -> Option<Result<Started, String>> {
    SESSION
        .get()
        .map(|made| made.as_ref().map(|s| s.started).map_err(Clone::clone))
}

fn why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => "needs CAP_SYS_ADMIN".to_owned(),
        _ => e.to_string(),
    }
}

fn create(mounts: &Mounts, network: bool, processes: ProcessBounds) -> io::Result<Session> {
    let threads = std::fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(io::Error::other(format!(
            "must start before any thread exists ({threads} threads run)"
        )));
    }
    let host = open(c"/proc/self/ns/pid")?;
    let (control, control_init) = control::pair()?;
    let (ready_read, ready_write) = pipe()?;
    let mounts = init::CMounts::new(mounts);
    let bounds = pid_max_per_namespace().then(|| init::PidMaxes::new(processes));
    // SAFETY: unshare(CLONE_NEWPID) only changes where this (only) thread's next child goes.
    check(unsafe { libc::unshare(libc::CLONE_NEWPID) })?;
    // SAFETY: one thread (checked above): the child is a complete copy of this process.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop((control, ready_read));
        init::run(control_init, ready_write, &mounts, network, bounds.as_ref());
    }
    let forked = io::Error::last_os_error();
    // Back to the host namespace for every later child and thread, whatever happened; a
    // thread could not be started otherwise, so this failing ends the server.
    // SAFETY: setns on an fd of this process's own PID namespace.
    if unsafe { libc::setns(host.as_raw_fd(), libc::CLONE_NEWPID) } != 0 {
        eprintln!(
            "agentty: cannot return to its own PID namespace: {}",
            io::Error::last_os_error()
        );
        std::process::exit(1);
    }
    if pid < 0 {
        return Err(forked);
    }
    drop((control_init, ready_write));
    // A status byte (0, or the errno that stopped it), then how many paths it made read-only:
    // of the package sources, then of the protected paths.
    let mut ready = [0u8; REPORT_BYTES];
    let mut waiting = libc::pollfd {
        fd: ready_read.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd, then read into a buffer of the size given from a pipe this
    // process owns; the init writes the whole report in one write, under the pipe's atomic size.
    let got = unsafe {
        if libc::poll(&raw mut waiting, 1, READY_WAIT.as_millis() as libc::c_int) == 1 {
            libc::read(
                ready_read.as_raw_fd(),
                ready.as_mut_ptr().cast(),
                REPORT_BYTES,
            )
        } else {
            -1
        }
    };
    // SAFETY: pidfd_open on the child this process just forked and has not reaped.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if got != REPORT_BYTES as isize || ready[0] != 0 || pidfd < 0 {
        let error = if got >= 1 && ready[0] != 0 {
            io::Error::from_raw_os_error(i32::from(ready[0]))
        } else {
            io::Error::other("the session init did not start")
        };
        // SAFETY: kill and waitpid on the child forked above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        return Err(error);
    }
    // SAFETY: a fresh pidfd, owned by nobody else.
    let init = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let count = |at: usize| {
        u32::from_ne_bytes([ready[at], ready[at + 1], ready[at + 2], ready[at + 3]]) as usize
    };
    let network = ready[9] == 1;
    Ok(Session {
        namespace: Namespace {
            init_pid: pid,
            children: children_of_init(pid, &init),
            stat: stat_of_init(pid, &init),
            init,
            of_caller: false,
            network,
        },
        host,
        control: Mutex::new(control),
        requests: AtomicU32::new(0),
        started: Started {
            sealed: count(1),
            protected: count(5),
            network,
            processes: (ready[10] == 1).then_some(processes),
        },
    })
}

impl Session {
    /// Asks the session init for a caller's namespace, on `control` (its lock held), and waits
    /// (bounded) for it.
    fn make_caller(&self, control: &OwnedFd) -> io::Result<Namespace> {
        let number = self.requests.fetch_add(1, Ordering::Relaxed).to_ne_bytes();
        control::send(control.as_raw_fd(), &number, None)?;
        let deadline = std::time::Instant::now() + READY_WAIT + Duration::from_secs(1);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let mut waiting = libc::pollfd {
                fd: control.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one pollfd.
            if unsafe { libc::poll(&raw mut waiting, 1, left.as_millis() as libc::c_int) } != 1 {
                return Err(io::Error::other("the session init did not answer"));
            }
            let mut reply = [0u8; control::REPLY_BYTES];
            let (got, pidfd) = control::receive(control.as_raw_fd(), &mut reply)?;
            if got == 0 {
                return Err(ended_error(false));
            }
            // A late answer to a request given up on is dropped (its pidfd with it).
            if got != control::REPLY_BYTES || reply[1..] != number {
                continue;
            }
            if reply[0] != 0 {
                return Err(io::Error::from_raw_os_error(i32::from(reply[0])));
            }
            let init = pidfd.ok_or_else(|| io::Error::other("no pidfd came with the answer"))?;
            let init_pid = pid_of(&init)?;
            return Ok(Namespace {
                init_pid,
                children: children_of_init(init_pid, &init),
                stat: stat_of_init(init_pid, &init),
                init,
                of_caller: true,
                network: self.started.network,
            });
        }
    }
}

/// The children list of the init `pid` that `pidfd` refers to, held open; `None` when the init
/// ended before the list was opened (the pid may then name another process).
fn children_of_init(pid: i32, pidfd: &OwnedFd) -> Option<HeldChildren> {
    HeldChildren::open(pid, pid).filter(|_| still_runs(pidfd))
}

/// The `stat` file of the init `pid` that `pidfd` refers to, held open as its children list is
/// (a file of `/proc/<pid>` stays bound to the process it was opened for).
fn stat_of_init(pid: i32, pidfd: &OwnedFd) -> Option<std::fs::File> {
    std::fs::File::open(format!("/proc/{pid}/stat"))
        .ok()
        .filter(|_| still_runs(pidfd))
}

/// Whether the process `pidfd` refers to has not ended (a pidfd reads as ready once it has);
/// false where that cannot be told (a file then held could be another process's).
fn still_runs(pidfd: &OwnedFd) -> bool {
    ended(pidfd) == Some(false)
}

/// Whether the process `pidfd` refers to has ended; `None` where `poll` failed (a signal).
fn ended(pidfd: &OwnedFd) -> Option<bool> {
    let mut ready = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd, not waiting.
    match unsafe { libc::poll(&raw mut ready, 1, 0) } {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// The pid, in this process's namespace, of the process `pidfd` refers to.
fn pid_of(pidfd: &OwnedFd) -> io::Result<i32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd()))?;
    info.lines()
        .find_map(|line| line.strip_prefix("Pid:"))
        .and_then(|pid| pid.trim().parse().ok())
        .filter(|&pid: &i32| pid > 0)
        .ok_or_else(|| io::Error::other("the caller's init has no pid here"))
}

impl Namespace {
    /// The init's pidfd: a confined child enters its mount namespace with it.
    pub(crate) fn init_fd(&self) -> RawFd {
        self.init.as_raw_fd()
    }

    /// The namespaces a confined child (or its launcher) enters with `setns` on the init's
    /// pidfd besides the PID namespace: the mount namespace, and the network namespace where
    /// there is one.
    pub(crate) fn entered(&self) -> libc::c_int {
        if self.network {
            libc::CLONE_NEWNS | libc::CLONE_NEWNET
        } else {
            libc::CLONE_NEWNS
        }
    }

    /// Makes the calling thread's next child start in this PID namespace, until the guard is
    /// dropped. Nothing but that one clone may happen in between.
    pub(crate) fn enter(&self) -> io::Result<Entered> {
        let host = session().map(|s| &s.host).ok_or_else(|| self.ended())?;
        // SAFETY: setns with a pidfd and CLONE_NEWPID changes only where this thread's
        // children go.
        check(unsafe { libc::setns(self.init.as_raw_fd(), libc::CLONE_NEWPID) })
            .map_err(|e| if self.init_gone() { self.ended() } else { e })?;
        Ok(Entered { host })
    }

    /// The fds a thread uses to clone a child into these namespaces and the child to enter
    /// them ([`Self::enter`], `setns` on the init's pidfd): the init's pidfd, and the server's
    /// own PID namespace, where the thread goes back to.
    pub(crate) fn fds(&self) -> Vec<RawFd> {
        std::iter::once(self.init.as_raw_fd())
            .chain(session().map(|s| s.host.as_raw_fd()))
            .collect()
    }

    /// Whether the init has exited (its pidfd reads readable then).
    pub(crate) fn init_gone(&self) -> bool {
        ended(&self.init) == Some(true)
    }

    /// Whether the init is exiting (`PF_EXITING` in its `/proc/<pid>/stat` flags): killed, it
    /// first waits for every process of its namespace to be reaped, and a clone into the
    /// namespace fails meanwhile. Its pid is still its own while [`Self::init_gone`] is false.
    pub(crate) fn init_ending(&self) -> bool {
        const PF_EXITING: u64 = 0x4;
        let mut buf = [0u8; 1024];
        let read = match &self.stat {
            Some(held) => std::os::unix::fs::FileExt::read_at(held, &mut buf, 0),
            None => std::fs::File::open(format!("/proc/{}/stat", self.init_pid))
                .and_then(|mut file| std::io::Read::read(&mut file, &mut buf)),
        };
        let Ok(len) = read else {
            return false;
        };
        // The fields after the command name (in parentheses, which may hold anything): state
        // is the first, flags the seventh.
        let read = &buf[..len];
        let after = read
            .iter()
            .rposition(|&b| b == b')')
            .map_or(&[][..], |at| &read[at + 1..]);
        let mut fields = std::str::from_utf8(after)
            .unwrap_or_default()
            .split_whitespace();
        let state = fields.next().unwrap_or_default();
        let flags: u64 = fields.nth(5).and_then(|f| f.parse().ok()).unwrap_or(0);
        matches!(state, "Z" | "X" | "x") || flags & PF_EXITING != 0
    }

    /// Why a confined command cannot start once the init is gone.
    pub(crate) fn ended(&self) -> io::Error {
        ended_error(self.of_caller)
    }
}

fn ended_error(of_caller: bool) -> io::Error {
    io::Error::other(if of_caller {
        "this caller's PID namespace has ended (its init process was killed); the next command \
         gets a new one"
    } else {
        "the session's PID namespace has ended (its init process was killed); restart agentty"
    })
}

/// The spawning thread is in a confined commands' PID namespace (for its children) while this
/// lives.
pub(crate) struct Entered {
    host: &'static OwnedFd,
}

impl Drop for Entered {
    fn drop(&mut self) {
        // SAFETY: setns on an fd of the server's own PID namespace.
        if unsafe { libc::setns(self.host.as_raw_fd(), libc::CLONE_NEWPID) } != 0 {
            // This thread could no longer start threads; nothing can run correctly after.
            eprintln!(
                "agentty: cannot return to its own PID namespace: {}",
                io::Error::last_os_error()
            );
            std::process::abort();
        }
    }
}

/// Sends SIGKILL to the process `pidfd` holds; a process gone already is no error to anyone.
pub(crate) fn kill_by_pidfd(pidfd: &OwnedFd) {
    // SAFETY: pidfd_send_signal on a pidfd the caller holds, with no siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        );
    }
}

/// Ends the session's namespace: kills the session init, which takes every process of the
/// namespace with it, and waits (bounded) until the kernel has them all gone. Returns whether
/// there was a namespace to end.
pub fn end() -> bool {
    let Some(ns) = get() else {
        return false;
    };
    // The callers' namespaces are inside the session's: they go with it.
    kill_by_pidfd(&ns.init);
    // The init's exit waits for every process of the namespace to be reaped, this server's own
    // children there too (their parent is outside): reap what is left while waiting. The
    // session is over, so no watch is waiting for these.
    let deadline = std::time::Instant::now() + END_WAIT;
    while !ns.init_gone() && std::time::Instant::now() < deadline {
        // SAFETY: waitpid for any child, without waiting.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Whether confined commands get a PID namespace of the session's own: what [`start`] did, or,
/// where it was not called (`doctor`), whether the namespaces can be made here, tried on a
/// short-lived thread whose namespaces end with it.
pub fn available() -> Result<(), String> {
    if let Some(made) = SESSION.get() {
        return made.as_ref().map(drop).map_err(Clone::clone);
    }
    std::thread::Builder::new()
        .name("agentty-namespace-check".into())
        .spawn(|| {
            // SAFETY: unshare changes only this short-lived thread's namespaces.
            check(unsafe { libc::unshare(libc::CLONE_NEWPID | libc::CLONE_NEWNS) })
        })
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|_| "the check panicked".to_owned())?
        .map_err(|e| why(&e))
}

/// Whether confined commands run in a network namespace of the session's own: what [`start`]
/// made (asked for, and made), or, where it was not called (`doctor`), whether one can be made
/// here, tried on a short-lived thread whose namespaces end with it.
pub fn network_isolated() -> bool {
    if let Some(made) = SESSION.get() {
        return made.as_ref().is_ok_and(|s| s.started.network);
    }
    std::thread::Builder::new()
        .name("agentty-namespace-check".into())
        .spawn(|| {
            // SAFETY: unshare changes only this short-lived thread's namespaces.
            check(unsafe {
                libc::unshare(libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWNET)
            })
        })
        .ok()
        .and_then(|check| check.join().ok())
        .is_some_and(|made| made.is_ok())
}

/// `doctor`'s line on how the end of a session reaches what confined commands started, and what
/// HTTP callers see of each other's commands.
pub fn describe(available: &Result<(), String>) -> String {
    match available {
        Ok(()) => "confined commands' processes: in a PID namespace of the session's own, over \
                   HTTP one per caller (token); the kernel ends them all with the server, \
                   however it ends; ps and /proc show a command its session's (caller's) \
                   processes only"
            .to_owned(),
        Err(why) => format!(
            "confined commands' processes: tracked by run marker and subreaper (a PID namespace \
             of the session's own {why}); over HTTP, callers are not apart in processes: ps and \
             /proc/<pid>/cmdline show every caller's commands (same user); another command's \
             environment and signals stay refused by Landlock (each command is a domain of its \
             own; signals from ABI 6)"
        ),
    }
}

/// What bounds how many processes and threads confined commands may have, given whether the
/// session's PID namespace can be made (`available`) and the bound per caller.
pub fn describe_bounds(available: &Result<(), String>, per_caller: u32) -> String {
    match available {
        Ok(()) if pid_max_per_namespace() => format!(
            "confined commands' processes and threads: at most {per_caller} per caller at once, \
             up to {} before its namespace's numbers first wrap (the pid_max of its PID \
             namespace; --max-processes), where the kernel takes it",
            ProcessBounds::pid_max_for(per_caller) - 1
        ),
        Ok(()) => "confined commands' processes and threads: no bound of agentty's (the kernel \
                   keeps pid_max per PID namespace from Linux 6.14); one caller's fork loop can \
                   take every process the machine has left"
            .to_owned(),
        Err(why) => format!(
            "confined commands' processes and threads: no bound of agentty's (a PID namespace \
             {why}); the user's own process limit, shared by every caller, is the only one"
        ),
    }
}

#[cfg(test)]
mod bounds_tests {
    use super::*;

    #[test]
    fn a_cpu_list_counts_its_cpus() {
        assert_eq!(possible_cpus("0-127\n"), Some(128));
        assert_eq!(possible_cpus("0,2-3,8-11"), Some(7));
        assert_eq!(possible_cpus("0"), Some(1));
        assert_eq!(possible_cpus("3-1"), None);
        assert_eq!(possible_cpus("x"), None);
    }

    /// A bound is written as itself plus the numbers a wrap skips, never under the kernel's
    /// least (review 40 M1: 512 was refused on a machine of 128 possible CPUs).
    #[test]
    fn a_bound_is_written_above_the_skipped_numbers_and_the_kernels_least() {
        let floor = pid_max_floor();
        assert!(floor >= 301);
        assert_eq!(
            ProcessBounds::pid_max_for(4096),
            (4096 + RESERVED_PIDS).max(floor)
        );
        assert!(ProcessBounds::pid_max_for(1) >= floor);
        assert_eq!(ProcessBounds::pid_max_for(u32::MAX), u32::MAX);
    }
}

#[cfg(test)]
#[path = "ending_tests.rs"]
mod ending_tests;
