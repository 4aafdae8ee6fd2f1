//! The one spawn seam: every process agentty starts is started here.
//!
//! One place means one place to get right: its own process group (so a tree can be signalled
//! as one), no controlling terminal (so `/dev/tty` cannot be opened and `sudo`/`ssh` fail fast
//! instead of prompting), the non-interactive environment, the run marker that lets an escaped
//! descendant be traced back to its command, the sandbox, and registration with the reaper.
//! Nothing else in agentty starts a process.
//!
//! Speed shapes this module: a trivial command must cost barely more than its own fork and
//! exec. [`exec`] starts the child the way `posix_spawn` does (a `vfork`-style clone, nothing
//! copied) and runs the few steps that must happen in the child itself (the process group or
//! terminal session, the command's own Landlock domain) there. A confined command is cloned by
//! a launcher thread that carries the shareable part of the sandbox already (`launcher.rs`), so
//! the seccomp filter is compiled once per thread, not once per command. The controlling
//! terminal is dropped once by the server ([`detach_controlling_terminal`]) and so is never
//! inherited.
//!
//! This file is the seam's face (what a caller asks for and gets back, the pipes). Behind it:
//! `prepare.rs` encodes everything the child needs before the clone, `claim.rs` hands the plan
//! over and claims the child back, `launcher.rs` (and `spare.rs`, for a spawn with a terminal
//! of its own) keeps the threads that clone, `own_table.rs` their fd tables, `exec.rs` and
//! `vfork.rs` clone it, `signals.rs` keeps the
//! signal masks around the clone, and `marker.rs` names the run-marker variable.

mod claim;
mod exec;
mod launcher;
pub(crate) mod marker;
pub(crate) mod own_table;
mod prepare;
mod signals;
#[cfg(target_os = "linux")]
mod spare;
#[cfg(target_os = "linux")]
mod terminal_maker;
#[cfg(target_os = "linux")]
mod terminals;
mod vfork;

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::reaper::ExitWatch;
use claim::launch_async;
use exec::{ExecPlan, Session};
use prepare::plan;

pub use crate::reaper::AfterStart;
pub use claim::{Claim, Ready};
pub use exec::{ChildEnds, TakeChildEnds};
pub use marker::RUN_MARKER_VAR;
pub use prepare::NON_INTERACTIVE_ENV;
#[cfg(target_os = "linux")]
pub use terminal_maker::end_maker as end_terminal_maker;
#[cfg(target_os = "linux")]
pub(crate) use terminal_maker::maker_pid as terminal_maker_pid;

/// No terminal maker runs where there is none.
#[cfg(not(target_os = "linux"))]
pub(crate) fn terminal_maker_pid() -> Option<i32> {
    None
}

/// agentty's own processes, which run no command: the namespaces' inits (the session's, and
/// over HTTP each caller's, inside it), where the kernel re-parents confined commands'
/// orphans, and the terminal maker.
pub(crate) struct OwnProcesses {
    inits: Vec<i32>,
    maker: Option<i32>,
}

impl OwnProcesses {
    /// Those there are now.
    pub(crate) fn now() -> Self {
        OwnProcesses {
            inits: crate::namespace::init_pids().0,
            maker: terminal_maker_pid(),
        }
    }

    /// The namespaces' inits among them.
    pub(crate) fn inits(&self) -> &[i32] {
        &self.inits
    }

    /// Whether `pid` is one of them.
    pub(crate) fn contains(&self, pid: i32) -> bool {
        self.inits.contains(&pid) || self.maker == Some(pid)
    }
}
#[cfg(target_os = "linux")]
pub use terminals::{OwnDevpts, OwnTerminals, own_terminals};

/// A confinement (the sandbox, docs/BEHAVIOUR.md §5), in two parts: one each command must have
/// to itself, and one a spawning thread may take once for all the children it clones (see
/// `launcher.rs`). Both are raw system calls on data prepared beforehand only, no allocation,
/// no lock: they may run in a child between clone and exec, which shares the server's memory.
pub trait Confine: Send + Sync {
    /// Applied by each child to itself before `exec`: what must not be shared between two
    /// commands (their own Landlock domain, which scopes signals and abstract sockets).
    fn apply_own(&self) -> io::Result<()>;

    /// The fd [`Confine::apply_own`] uses, if any (its Landlock ruleset): a launcher whose fd
    /// table is its own is handed it with each spawn's fds, at the same number
    /// (`own_table.rs`).
    fn own_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    /// The fd [`Confine::apply_shared`] uses, if any (the reads' ruleset): a thread that takes
    /// the shared part from an fd table of its own made for one spawn (`own_table::apart`, a
    /// spare) takes a copy of it at the same number.
    fn shared_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    /// Applied to the calling thread, and so inherited by every child it clones after: what
    /// commands may share (the seccomp filter, the capabilities dropped). A child that is not
    /// cloned by a thread that has it applies it to itself, after [`Confine::apply_own`].
    fn apply_shared(&self) -> io::Result<()>;

    /// [`Confine::apply_shared`] as a launcher thread takes it, once, before it clones any
    /// child: not in a child, so it may allocate and lock (the seccomp filter's listener is
    /// handed to the server's supervisor of connections here).
    fn apply_to_launcher(&self) -> io::Result<()> {
        self.apply_shared()
    }

    /// [`Confine::apply_to_launcher`] for a thread whose fd table is its own
    /// (`own_table.rs`): the seccomp filter's listener, if any, made in that table, is given
    /// back for a thread in the server's table to take a copy of and hand over
    /// ([`Confine::adopt_listener`]). A thread that cannot hand it over must clone nothing.
    /// By default [`Confine::apply_shared`], which makes no listener.
    fn apply_to_cloner(&self) -> io::Result<Option<std::os::fd::OwnedFd>> {
        self.apply_shared().map(|()| None)
    }

    /// Hands a listener [`Confine::apply_to_cloner`] gave (a copy in the server's table) to
    /// the supervisor of connections; false when it was not taken (then nothing is cloned).
    /// `per_spawn`: the filter is one spawn's alone (a spawn no launcher took), whose listeners
    /// the supervisor bounds per caller.
    fn adopt_listener(&self, listener: std::os::fd::OwnedFd, per_spawn: bool) -> bool {
        let _ = per_spawn;
        drop(listener);
        false
    }

    /// Which launchers may clone this confinement's children: those of another confinement
    /// with the same key, whose shared part ([`Confine::apply_shared`]) is the same. Two keys are
    /// equal only while the thing they are the address of lives, so an implementation that
    /// returns another object's address must keep that object alive. By default, this object's
    /// own address: a confinement made per command whose own part differs (a ruleset made again
    /// since) returns its shared part's, so its children go to the same launchers.
    fn shared_key(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>() as usize
    }

    /// Whose commands these are: an HTTP caller's, `None` for the session's. Launchers clone
    /// one caller's commands only, so what is held for a launcher's commands is that caller's
    /// (the network supervisor's share of files, `agentty_sandbox`).
    fn caller(&self) -> Option<&str> {
        None
    }

    /// This confinement for a command whose `/dev/pts` is a devpts instance of its own, whose
    /// root is `root` (`terminals.rs`): Landlock binds rules to inodes, so its own domain needs
    /// a rule there to open terminals (`script`, `tmux`). `None`: this one serves unchanged
    /// (the default: a confinement without path rules).
    fn with_terminals(
        &self,
        root: std::os::fd::BorrowedFd<'_>,
    ) -> io::Result<Option<Arc<dyn Confine>>> {
        let _ = root;
        Ok(None)
    }
}

/// Drops this process's controlling terminal, once, at start-up, so no child inherits one.
/// A session leader cannot do this without hanging up its session; it is left alone and the
/// result says so.
pub fn detach_controlling_terminal() -> bool {
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return true; // no controlling terminal to begin with
    };
    // SAFETY: getsid/getpid have no preconditions; TIOCNOTTY on our own ctty fd only detaches
    // this process from it.
    unsafe {
        if libc::getsid(0) == libc::getpid() {
            return false;
        }
        use std::os::fd::AsRawFd;
        libc::ioctl(tty.as_raw_fd(), libc::TIOCNOTTY) == 0
    }
}

/// What stdin the process gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinMode {
    /// `/dev/null`: reading gets EOF at once.
    Null,
    /// A pipe the caller writes to and closes.
    Piped,
}

/// Everything needed to start one process.
pub struct SpawnSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Added to (and overriding) the inherited environment, after the non-interactive defaults.
    pub env: Vec<(OsString, OsString)>,
    pub stdin: StdinMode,
    /// Unique per run; exported as [`RUN_MARKER_VAR`].
    pub marker: String,
    /// The sandbox the child applies to itself; `None` runs it unconfined.
    pub confine: Option<Arc<dyn Confine>>,
    /// Whom it runs for, over HTTP: the caller's name (a token of the token file). A confined
    /// command of a caller runs in that caller's own PID namespace, where the session has
    /// namespaces (`crate::namespace`); `None` (stdio, one caller) runs it in the session's.
    pub caller: Option<Arc<str>>,
    /// More fds the child gets at fixed numbers besides stdio (a shell's end of its private
    /// channel to the server, `pty::channel`, and bash's start-up text, `pty::startup`); empty
    /// for everything else. At most [`PASSED_FDS_MAX`], each at its own number.
    pub pass_fds: Vec<PassedFd>,
    /// The secrets masked in its output (the session's, [`crate::mask`]); `None`: none.
    pub masks: Option<Arc<crate::mask::Masks>>,
}

/// Most fds a spawn passes besides stdio ([`SpawnSpec::pass_fds`]).
pub const PASSED_FDS_MAX: usize = 2;

/// An fd given to the child as fd `at` (3 or more), without close-on-exec. The server's copy is
/// held by the plan until the child is cloned, then closed with the last clone of the `Arc`.
#[derive(Clone)]
pub struct PassedFd {
    pub fd: Arc<OwnedFd>,
    pub at: std::os::fd::RawFd,
}

/// A started process with piped output.
pub struct Spawned {
    pub pid: i32,
    pub stdin: Option<OwnedFd>,
    /// Read end of a pipe, already non-blocking.
    pub stdout: OwnedFd,
    /// Read end of a pipe, already non-blocking.
    pub stderr: OwnedFd,
    pub exit: ExitWatch,
}

/// A read-only `/dev/null`, opened once and shared as every child's empty stdin.
fn dev_null() -> io::Result<&'static OwnedFd> {
    static NULL: OnceLock<OwnedFd> = OnceLock::new();
    if let Some(fd) = NULL.get() {
        return Ok(fd);
    }
    let file = std::fs::File::open("/dev/null")?;
    Ok(NULL.get_or_init(|| OwnedFd::from(file)))
}

/// A pipe, both ends close-on-exec: (read end, write end). The read end is non-blocking when
/// asked, ready for the reactor.
fn pipe(nonblocking_read: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fds into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds are fresh and owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETFL on an fd we own; O_NONBLOCK is the only status flag a fresh pipe needs.
    if nonblocking_read
        && unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok((read, write))
}

/// The server's ends of a command's pipes: stdin's write end when it is piped, and the read ends
/// of stdout and stderr (non-blocking).
pub struct Pipes {
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Prepares `spec` on pipes in a process group of its own without starting it: the caller sets
/// up its ends of the pipes first (where a failure means nothing ran), then hands it over.
pub fn prepare_on_pipes(spec: &SpawnSpec) -> io::Result<(Ready, Pipes)> {
    let (plan, pipes) = on_pipes(spec)?;
    let ready = Ready {
        plan,
        marker: spec.marker.clone(),
    };
    Ok((ready, pipes))
}

impl Pipes {
    fn spawned(self, pid: i32, exit: ExitWatch) -> Spawned {
        Spawned {
            pid,
            stdin: self.stdin,
            stdout: self.stdout,
            stderr: self.stderr,
            exit,
        }
    }
}

/// The plan for `spec` on pipes in a process group of its own, and the server's ends of them.
/// The child's ends belong to the plan: they close when it is dropped after the clone, so the
/// read ends see EOF when the child's copies close.
fn on_pipes(spec: &SpawnSpec) -> io::Result<(ExecPlan, Pipes)> {
    let (stdin_read, stdin_write) = match spec.stdin {
        StdinMode::Null => (None, None),
        StdinMode::Piped => {
            let (r, w) = pipe(false)?;
            (Some(r), Some(w))
        }
    };
    let stdin_fd = match &stdin_read {
        Some(fd) => fd.as_raw_fd(),
        None => dev_null()?.as_raw_fd(),
    };
    let (stdout, stdout_write) = pipe(true)?;
    let (stderr, stderr_write) = pipe(true)?;
    let stdio = [stdin_fd, stdout_write.as_raw_fd(), stderr_write.as_raw_fd()];
    let mut keep_open = vec![stdout_write, stderr_write];
    keep_open.extend(stdin_read);
    let plan = plan(spec, stdio, keep_open, Session::OwnGroup)?;
    let ends = Pipes {
        stdin: stdin_write,
        stdout,
        stderr,
    };
    Ok((plan, ends))
}

/// Starts `spec` in a process group of its own with piped stdout and stderr; the calling worker
/// thread goes on with other tasks while a launcher clones the child. Dropped before the answer,
/// the child is killed as soon as it has started.
pub async fn spawn_async(spec: SpawnSpec) -> io::Result<Spawned> {
    let (plan, ends) = on_pipes(&spec)?;
    let (pid, exit) = launch_async(plan, &spec.marker).await?;
    Ok(ends.spawned(pid, exit))
}

/// A process started on the slave side of a pseudo-terminal.
pub struct SpawnedPty {
    pub pid: i32,
    pub exit: ExitWatch,
}

/// Starts `spec` with `slave` (a PTY's slave side) as stdin, stdout, stderr and controlling
/// terminal, in a new session of its own. `spec.stdin` is ignored: the terminal is the input.
/// The server's copy of `slave` is closed once the child has its own.
///
/// A new session is required: a terminal can only be the controlling terminal of a session
/// leader, and job control (Ctrl+C reaching the foreground job, `tcgetpgrp`) works only
/// through a controlling terminal. As [`spawn_async`], the calling worker thread goes on with
/// other tasks while a launcher clones the child.
///
/// `own_devpts`, a devpts instance the terminal comes from (`terminals.rs`), is mounted on the
/// child's `/dev/pts` in a mount namespace of its own.
pub async fn spawn_pty(
    spec: SpawnSpec,
    slave: OwnedFd,
    own_devpts: Option<OwnedFd>,
) -> io::Result<SpawnedPty> {
    let fd = slave.as_raw_fd();
    let mut plan = plan(&spec, [fd, fd, fd], vec![slave], Session::OwnTerminal)?;
    plan.own_devpts = own_devpts;
    let (pid, exit) = launch_async(plan, &spec.marker).await?;
    Ok(SpawnedPty { pid, exit })
}
