//! Starting a process as `posix_spawn` does, plus the steps `posix_spawn` cannot express.
//!
//! `posix_spawn` is a `vfork`-style clone: the child borrows the caller's memory until it
//! calls `exec`, so nothing is copied and the call costs a fraction of a `fork()` of the
//! multi-threaded server (whose page tables alone take hundreds of microseconds to copy).
//! But two things agentty needs must run *in the child*, and `posix_spawn` has no slot for
//! them: the sandbox (Landlock and seccomp restrict the calling task, so the child has to
//! restrict itself) and, for a terminal, `setsid` plus `TIOCSCTTY`. std's `Command` turns any
//! such step into a full `fork()`. (Confining a launcher thread with *all* of the sandbox
//! would avoid the per-child steps, but every command would then share one Landlock domain and
//! could signal the others; `launcher.rs` shares only the part that is safe to share.)
//!
//! So this module does what glibc's `posix_spawn` does, with those steps added: `clone` with
//! `CLONE_VM | CLONE_VFORK | CLONE_PIDFD` on a small stack of our own (the pidfd comes from the
//! clone itself, so a process whose pidfd could not be opened never starts), then in the child only
//! raw system calls on data prepared before the clone, no allocation, no lock, no unwinding.
//! The caller's thread is suspended until the child has called `exec` or exited. Signals are
//! blocked in the caller across the clone, so no handler of the server can run on the child's
//! stack; every handled signal (and SIGPIPE, which Rust ignores) goes back to its default, by
//! the clone itself where the kernel can (`vfork.rs`), else by the child, which then unblocks
//! them all, as `posix_spawn` and std do. SIGCHLD, which the server never handles, stays
//! unblocked where the clone resets the handlers, so exits are dropped rather than queued
//! ([`ALL_BUT_CHILD_EXITS`]). The masks and dispositions themselves are in `signals.rs`.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

use super::signals::{
    ALL_BUT_CHILD_EXITS, block_signals, reset_signal_dispositions, set_signal_mask,
};
use super::{Confine, vfork};
use crate::namespace::Namespace;

/// What runs a file without `#!`, as execvp does.
const SHELL: &CStr = c"/bin/sh";

/// The child's stack. Its code is a few system calls deep; 64 KB leaves a wide margin.
const CHILD_STACK_BYTES: usize = 64 * 1024;

thread_local! {
    /// One child stack per spawning thread, allocated on its first spawn and reused rather than
    /// zero-filling 64 KB per call. Reuse is safe: the thread is suspended while its child
    /// runs on it (CLONE_VFORK), and the child never spawns.
    static CHILD_STACK: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How the child relates to sessions and terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Session {
    /// A process group of its own (pgid = pid), in the server's session with no terminal.
    OwnGroup,
    /// A session of its own whose controlling terminal is its stdin (a PTY slave).
    OwnTerminal,
}

/// Everything the child needs, built before the clone and owned, so it can be handed to a
/// launcher thread (`launcher.rs`) and outlive the caller that asked for it.
pub(crate) struct ExecPlan {
    pub argv: Vec<CString>,
    /// `KEY=VALUE` entries; the inherited ones are encoded once and borrowed.
    pub env: Vec<Cow<'static, CStr>>,
    /// Paths to try `execve` on, in order: the program itself when it contains a `/`, else
    /// the program under each `PATH` directory (as `execvp` searches).
    pub candidates: Vec<CString>,
    pub cwd: CString,
    /// Become fds 0, 1 and 2.
    pub stdio: [RawFd; 3],
    /// The fds behind `stdio` that the plan owns (the child's ends of its pipes, its terminal):
    /// open until the clone, then let go of ([`ExecPlan::let_go_of_child_ends`]).
    pub keep_open: Vec<OwnedFd>,
    /// Where `keep_open` goes after the clone; closed where the plan is when `None`.
    pub child_ends_to: Option<ChildEnds>,
    /// More fds for the child at fixed numbers (see [`super::PassedFd`]).
    pub passed: Vec<super::PassedFd>,
    pub session: Session,
    pub confine: Option<Arc<dyn Confine>>,
    /// The namespaces of a confined child: the session's, or its caller's (see
    /// `crate::namespace`).
    pub namespace: Option<&'static Namespace>,
    /// A devpts instance (a detached mount) to be the child's `/dev/pts`, in a mount namespace
    /// of its own (`terminals.rs`): the launcher of this plan alone mounts it
    /// (`spare.rs` `start_alone`).
    pub own_devpts: Option<OwnedFd>,
    /// A slot of the server's fd table held for the child's pidfd, where it is opened after the
    /// child has started (a launcher's answering thread, a clone apart: `reaper::watch_launched`):
    /// taken before the hand-over, so that when no fd is left the spawn fails before anything
    /// runs, as a clone whose own pidfd cannot be made does.
    pub room_for_pidfd: Option<OwnedFd>,
}

/// Takes the plan's copies of a child's ends once the child has its own, to close them where a
/// close may wait (see [`ExecPlan::let_go_of_child_ends`]).
pub trait TakeChildEnds: Send {
    fn take(self: Box<Self>, ends: Vec<OwnedFd>);
}

/// Where a plan's copies of its child's ends go after the clone.
pub type ChildEnds = Box<dyn TakeChildEnds>;

impl ExecPlan {
    /// The fds the child uses before its `exec` (its stdio, the passed ones, the confinement's
    /// own), each once: what a launcher with an fd table of its own is handed.
    pub(super) fn fds_for_child(&self) -> Vec<RawFd> {
        let mut fds = Vec::with_capacity(6);
        let passed = self.passed.iter().map(|passed| passed.fd.as_raw_fd());
        let own = self.confine.as_ref().and_then(|confine| confine.own_fd());
        for fd in self.stdio.into_iter().chain(passed).chain(own) {
            if !fds.contains(&fd) {
                fds.push(fd);
            }
        }
        fds
    }

    /// [`Self::fds_for_child`], and what a child that applies the whole confinement and
    /// enters the namespaces itself uses besides (`Confine::shared_fd`, `Namespace::fds`): what
    /// a thread that clones it from an fd table of its own takes in.
    pub(super) fn fds_for_whole_child(&self) -> Vec<RawFd> {
        let mut fds = self.fds_for_child();
        let shared = self
            .confine
            .as_ref()
            .and_then(|confine| confine.shared_fd());
        let namespace = self.namespace.map(Namespace::fds).unwrap_or_default();
        for fd in shared.into_iter().chain(namespace) {
            if !fds.contains(&fd) {
                fds.push(fd);
            }
        }
        fds
    }

    /// After the clone (the child has its own copies, or none was made): the plan's copies of
    /// the child's ends go where [`ExecPlan::child_ends_to`] says. The child can make the plan's
    /// copy of a pipe's end the last one (it reopens `/proc/self/fd/1` and closes its fd 1) and
    /// then hold the pipe's lock (a splice from an idle socket into it): closing that copy waits
    /// for the lock, for as long as the child likes. On a launcher that stalled every command
    /// after it; the pipes' own thread may wait (`engine/pipe_thread.rs`).
    pub fn let_go_of_child_ends(&mut self) {
        let ends = std::mem::take(&mut self.keep_open);
        match self.child_ends_to.take() {
            Some(to) => to.take(ends),
            None => drop(ends),
        }
    }
}

/// The step at which the child failed, reported through memory shared with the parent.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Step {
    None = 0,
    Session,
    Stdio,
    Terminal,
    Workdir,
    Sandbox,
    Exec,
    Namespace,
}

impl Step {
    fn from_u8(v: u8) -> Step {
        match v {
            1 => Step::Session,
            2 => Step::Stdio,
            3 => Step::Terminal,
            4 => Step::Workdir,
            5 => Step::Sandbox,
            6 => Step::Exec,
            7 => Step::Namespace,
            _ => Step::None,
        }
    }

    fn error(self, errno: i32) -> io::Error {
        let os = io::Error::from_raw_os_error(errno);
        let what = match self {
            // Callers tell "not found" from "not executable" by kind: keep the OS error as is.
            Step::Exec | Step::None => return os,
            Step::Session => "could not start a process group",
            Step::Stdio => "could not set up stdin/stdout/stderr",
            Step::Terminal => "could not attach the terminal",
            Step::Workdir => "could not enter the workdir",
            Step::Sandbox => SANDBOX_FAILED,
            Step::Namespace => NAMESPACE_FAILED,
        };
        io::Error::new(os.kind(), format!("{what}: {os}"))
    }
}

/// What a spawn whose sandbox could not be applied says, before the system's error.
const SANDBOX_FAILED: &str = "the sandbox could not be applied";

/// Why a thread that would clone a command under a supervised filter clones none: its listener
/// could not be handed to the supervisor (no fd left in the server's table, or the caller's
/// filters hold the most listeners it keeps for one caller).
pub(super) const FILTER_NOT_HANDED: &str = "agentty could not hand the command's filter to \
     its supervisor (too many of this caller's commands are supervised at once, or no file \
     descriptor is left)";

/// Why a spawn no launcher takes fails when whether a thread can clone it apart could not be
/// told (no thread or fd to try it with at that moment).
pub(super) const NOT_NOW: &str = "agentty could not start the command: no thread or file \
     descriptor is left to start it with; try again once some commands have ended";

/// What a spawn says whose launcher panicked while it cloned the child.
pub(super) const LAUNCHER_FAILED: &str = "agentty's launcher failed while it started the command";

/// `error`, from a clone into `namespace` (if any) on a thread that could not look whether its
/// init is gone (a table of its own has no pidfd of it): the namespace's end where it is gone,
/// as a clone there fails then (ENOMEM).
pub(super) fn failed_in(namespace: Option<&Namespace>, error: io::Error) -> io::Error {
    match namespace {
        Some(namespace) if namespace.init_gone() => namespace.ended(),
        _ => error,
    }
}

/// What a spawn that could not enter its namespace says, before the system's error.
const NAMESPACE_FAILED: &str = "could not enter the session's namespace";

/// `error`, from applying a spawn's sandbox on the thread that clones it, worded as the child's
/// own failure to is.
pub(super) fn sandbox_failed(error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{SANDBOX_FAILED}: {error}"))
}

/// `error`, from entering a spawn's namespaces on the thread that clones it, worded as the
/// child's own failure to is.
pub(super) fn namespace_failed(error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{NAMESPACE_FAILED}: {error}"))
}

struct Failure {
    step: AtomicU8,
    errno: AtomicI32,
}

impl Failure {
    /// What came of a child cloned as `pid` with `pidfd`: both, once it has exec'd; else the
    /// error of the step it failed at.
    fn outcome(&self, pid: i32, pidfd: OwnedFd) -> io::Result<(i32, OwnedFd)> {
        let step = Step::from_u8(self.step.load(Ordering::Acquire));
        if matches!(step, Step::None) {
            return Ok((pid, pidfd));
        }
        // The child exits (status 127), releasing its copies of the server's files, which may
        // wait: reaped here if it is done, else by the reaper's next sweep, never waited for
        // on this thread (review 28).
        crate::reaper::reap_failed(pid, pidfd);
        Err(step.error(self.errno.load(Ordering::Acquire)))
    }
}

/// Null-terminated pointer arrays over `strings`, which must outlive them.
fn pointers<S: AsRef<CStr>>(strings: &[S]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ref().as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Starts `plan`'s program from this thread; returns its pid and a pidfd for it once it has
/// called `exec`. An `exec` or set-up failure comes back as the error, with the child already
/// reaped; a clone that failed (no fd left for the pidfd, no memory, the process limit)
/// started nothing. The child enters the namespaces and confines itself: this is the way where
/// no launcher could be set up (`launcher.rs`).
pub(crate) fn start(plan: &ExecPlan) -> io::Result<(i32, OwnedFd)> {
    clone_child(plan, Cloner::Plain)
}

/// Starts `plan`'s program from a launcher: the calling thread is confined and in the session's
/// namespaces (`namespace`, if any) already, so the child inherits both.
pub(super) fn start_confined(
    plan: &ExecPlan,
    namespace: Option<&Namespace>,
) -> io::Result<(i32, OwnedFd)> {
    clone_child(plan, Cloner::Launcher(namespace))
}

/// The thread that clones a child.
#[derive(Clone, Copy)]
enum Cloner<'a> {
    /// An ordinary thread: the child enters the namespaces and applies the sandbox itself.
    Plain,
    /// A launcher: confined, and in these namespaces (if any), already.
    Launcher(Option<&'a Namespace>),
}

/// Clones `plan`'s child from this thread (see [`start`]): what it borrows is prepared here,
/// the clone made, and what came of the child read back.
fn clone_child(plan: &ExecPlan, cloner: Cloner<'_>) -> io::Result<(i32, OwnedFd)> {
    let argv = pointers(&plan.argv);
    // For a file the kernel cannot execute (a script without `#!`), execvp runs it with the
    // shell: `/bin/sh FILE ARGS…`. Slot 1 is the file, filled in by the child.
    let mut script_argv: Vec<*const libc::c_char> = [SHELL.as_ptr(), std::ptr::null()]
        .into_iter()
        .chain(argv.iter().skip(1).copied())
        .collect();
    let envp = pointers(&plan.env);
    let candidates = present_candidates(plan, &cloner);
    let failure = Failure {
        step: AtomicU8::new(Step::None as u8),
        errno: AtomicI32::new(0),
    };
    let mut child = ChildArgs {
        plan,
        inherits: matches!(cloner, Cloner::Launcher(_)),
        argv: &argv,
        script_argv: &mut script_argv,
        envp: &envp,
        candidates: &candidates,
        failure: &failure,
        handlers_cleared: false,
    };
    let cloned = clone_in_namespace(&mut child, cloner)?;
    // SAFETY: with CLONE_PIDFD a successful clone returns a fresh fd that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(cloned.pidfd) };
    failure.outcome(cloned.pid, pidfd)
}

/// Clones `child` with this thread in the PID namespace the child belongs in, if any (the
/// session's or its caller's), and with signals blocked across the clone.
fn clone_in_namespace(child: &mut ChildArgs<'_>, cloner: Cloner<'_>) -> io::Result<vfork::Cloned> {
    // The clone below starts the child in its PID namespace; the thread leaves it right after.
    // A launcher is in it for good.
    let namespace = match cloner {
        Cloner::Plain => child.plan.namespace,
        Cloner::Launcher(namespace) => namespace,
    };
    let entered = match cloner {
        Cloner::Plain => child.plan.namespace.map(Namespace::enter).transpose()?,
        Cloner::Launcher(_) => None,
    };
    // SIGCHLD stays open where the clone resets the child's handlers (see ALL_BUT_CHILD_EXITS).
    let saved = block_signals(ALL_BUT_CHILD_EXITS)?;
    let cloned = clone_on_thread_stack(child);
    drop(entered);
    set_signal_mask(saved);
    cloned.map_err(|clone_error| match namespace {
        // clone says ENOMEM when the namespace's init is gone. (A launcher's cloner with a
        // table of its own has not the init's pidfd: its answering thread looks.)
        Some(namespace)
            if !(entered_by_launcher(cloner) && super::own_table::on_this_thread())
                && namespace.init_gone() =>
        {
            namespace.ended()
        }
        _ => clone_error,
    })
}

/// Whether a launcher entered the namespaces (a cloner, whose fd table may be its own).
fn entered_by_launcher(cloner: Cloner<'_>) -> bool {
    matches!(cloner, Cloner::Launcher(_))
}

/// Clones `child` onto this thread's [`CHILD_STACK`]; this thread is suspended until the child
/// has exec'd or exited. The caller has blocked the signals (see [`clone_in_namespace`]).
fn clone_on_thread_stack(child: &mut ChildArgs<'_>) -> io::Result<vfork::Cloned> {
    CHILD_STACK.with_borrow_mut(|stack| {
        if stack.len() < CHILD_STACK_BYTES {
            stack.resize(CHILD_STACK_BYTES, 0);
        }
        let bottom = stack.as_mut_ptr();
        let top = stack.as_mut_ptr_range().end;
        let aligned = top.wrapping_sub(top as usize % 16);
        let bytes = aligned as usize - bottom as usize;
        let child: *mut ChildArgs<'_> = child;
        // SAFETY: CLONE_VM | CLONE_VFORK: the child runs on `stack` and this thread waits
        // until it has exec'd or exited, so everything `child` borrows outlives its use. All
        // signals are blocked (by the caller) so no handler runs in the child before it resets
        // them.
        unsafe {
            let cleared = &raw mut (*child).handlers_cleared;
            vfork::clone_vfork(child_entry, child.cast(), aligned, bytes, cleared)
        }
    })
}

/// The plan's candidates for `execve`, less those that are certainly not there as this thread
/// sees the file system: an absolute path whose lookup says it does not exist (ENOENT) or
/// runs through a file (ENOTDIR), the two answers on which the child's execvp loop moves on to
/// the next one. A command named without a `/` has one candidate per `PATH` directory; the
/// child now tries the one or two that exist instead of each in turn, and an `execve` that
/// fails in a confined child walks its path under Landlock's checks and the seccomp filter,
/// ~5 us each here (`terminal({argv:["true"]})` with 8 directories before `/usr/bin`: 53 us
/// more than `/usr/bin/true`). Anything else (it exists, or the lookup was refused: EACCES,
/// which the child must still meet and report) keeps the candidate, in order, so the result
/// is execvp's. Those after the first that exists are kept unlooked-at: the child reaches
/// them only if that one's `execve` fails, and then meets what is there itself.
///
/// Only where this thread sees what the child will: a launcher is in the session's mount
/// namespace already, and a child without a namespace sees the server's. A child that enters
/// the namespace itself (no launcher) may see other mounts there (hidden or pinned paths), so
/// its candidates are all kept. A relative candidate is resolved from the child's workdir:
/// kept too.
fn present_candidates<'p>(plan: &'p ExecPlan, cloner: &Cloner<'_>) -> Vec<&'p CStr> {
    let same_view = match cloner {
        Cloner::Launcher(_) => true,
        Cloner::Plain => plan.namespace.is_none(),
    };
    let mut found = false;
    plan.candidates
        .iter()
        .map(CString::as_c_str)
        .filter(|path| {
            if found || !same_view || path.to_bytes().first() != Some(&b'/') {
                return true;
            }
            // SAFETY: access reads a NUL-terminated path and touches nothing else.
            if unsafe { libc::access(path.as_ptr(), libc::F_OK) } == 0 {
                found = true;
                return true;
            }
            let errno = io::Error::last_os_error().raw_os_error();
            !matches!(errno, Some(libc::ENOENT | libc::ENOTDIR))
        })
        .collect()
}

/// What the child borrows from the suspended parent's frame.
struct ChildArgs<'p> {
    plan: &'p ExecPlan,
    /// The cloning thread is a launcher: the child has its namespaces and the shared part of
    /// its sandbox already.
    inherits: bool,
    argv: &'p [*const libc::c_char],
    script_argv: &'p mut [*const libc::c_char],
    envp: &'p [*const libc::c_char],
    /// The plan's candidates that may be there (see [`present_candidates`]).
    candidates: &'p [&'p CStr],
    failure: &'p Failure,
    /// The clone reset the server's signal handlers in the child already.
    handlers_cleared: bool,
}

/// The clone's entry point: unpacks [`ChildArgs`] and runs [`child_main`].
extern "C" fn child_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` that `start` passed to clone, alive in the suspended
    // parent's frame; `child_main` makes only async-signal-safe calls on data in that frame,
    // and never returns (it execs or exits).
    unsafe { child_main(&mut *arg.cast::<ChildArgs<'_>>()) as libc::c_int }
}

/// The child, between clone and exec. Only raw system calls: see the module comment. Each
/// step that fails ends the child through [`fail`], so nothing it holds is ever dropped here.
///
/// # Safety
/// Must run only as the body of a `CLONE_VM | CLONE_VFORK` child, with all signals blocked.
unsafe fn child_main(child: &mut ChildArgs<'_>) -> isize {
    let ChildArgs {
        plan,
        inherits,
        argv,
        ref mut script_argv,
        envp,
        candidates,
        failure,
        handlers_cleared,
    } = *child;

    // SAFETY (whole block): plain system calls on integers and on pointers into memory that
    // the suspended parent keeps alive.
    unsafe {
        reset_signal_dispositions(handlers_cleared);

        let session_ok = match plan.session {
            Session::OwnGroup => libc::setpgid(0, 0) == 0,
            Session::OwnTerminal => libc::setsid() >= 0,
        };
        if !session_ok {
            fail(failure, Step::Session, errno());
        }
        // Read before stdio is installed: a passed fd below 3, or at another's number, is
        // moved out of the way first.
        let mut passed = [(-1, -1); super::PASSED_FDS_MAX];
        for (slot, p) in passed.iter_mut().zip(&plan.passed) {
            *slot = (p.fd.as_raw_fd(), p.at);
        }
        let targets = passed.map(|(_, at)| at);
        let above = targets.iter().copied().max().unwrap_or(2).max(2) + 1;
        for (from, at) in &mut passed {
            if *from >= 0 && (*from < 3 || (*from != *at && targets.contains(from))) {
                *from = moved_to(*from, above, failure);
            }
        }
        install_stdio(plan.stdio, failure);
        for (from, at) in passed {
            if from >= 0 {
                install_passed(from, at, failure);
            }
        }
        if plan.session == Session::OwnTerminal && libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
            fail(failure, Step::Terminal, errno());
        }
        // Before the workdir: entering a mount namespace moves the cwd to its root. The
        // network namespace, where there is one, comes with it.
        if let Some(namespace) = plan.namespace
            && !inherits
            && libc::setns(namespace.init_fd(), namespace.entered()) != 0
        {
            fail(failure, Step::Namespace, errno());
        }
        if libc::chdir(plan.cwd.as_ptr()) != 0 {
            fail(failure, Step::Workdir, errno());
        }
        if let Some(confine) = &plan.confine {
            confine_self(confine.as_ref(), inherits, failure);
        }

        set_signal_mask(0);

        let code = exec_as_execvp(candidates, argv, script_argv, envp);
        fail(failure, Step::Exec, code)
    }
}

/// Ends the child after a failed step: the step and its errno go where the parent reads them
/// once it is resumed ([`Failure::outcome`]).
fn fail(failure: &Failure, step: Step, errno: i32) -> ! {
    failure.errno.store(errno, Ordering::Release);
    failure.step.store(step as u8, Ordering::Release);
    // SAFETY: _exit ends the child without running any of the parent's exit handlers.
    unsafe { libc::_exit(127) }
}

/// The errno of the system call that just failed.
fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Makes `stdio` the child's fds 0, 1 and 2.
///
/// # Safety
/// Child only (see [`child_main`]).
unsafe fn install_stdio(mut stdio: [RawFd; 3], failure: &Failure) {
    // SAFETY: fcntl and dup2 on plain integers.
    unsafe {
        // A source below 3 could be overwritten by an earlier dup2: move it up first.
        for fd in &mut stdio {
            if *fd < 3 {
                let moved = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 3);
                if moved < 0 {
                    fail(failure, Step::Stdio, errno());
                }
                *fd = moved;
            }
        }
        for (target, &source) in (0..3).zip(stdio.iter()) {
            if libc::dup2(source, target) < 0 {
                fail(failure, Step::Stdio, errno());
            }
        }
    }
}

/// A copy of `fd` at `above` or higher (out of the way of the numbers stdio and the passed fds
/// are installed at).
///
/// # Safety
/// Child only (see [`child_main`]).
unsafe fn moved_to(fd: RawFd, above: RawFd, failure: &Failure) -> RawFd {
    // SAFETY: fcntl on a plain integer.
    let moved = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, above) };
    if moved < 0 {
        fail(failure, Step::Stdio, errno());
    }
    moved
}

/// Makes `from` the child's fd `at`, open across `exec`: `dup2` clears close-on-exec on the
/// copy; when the fd already has that number, the flag is cleared on it.
///
/// # Safety
/// Child only (see [`child_main`]).
unsafe fn install_passed(from: RawFd, at: RawFd, failure: &Failure) {
    // SAFETY: fcntl and dup2 on plain integers.
    let done = unsafe {
        if from == at {
            libc::fcntl(at, libc::F_SETFD, 0) == 0
        } else {
            libc::dup2(from, at) == at
        }
    };
    if !done {
        fail(failure, Step::Stdio, errno());
    }
}

/// Applies the command's sandbox to the child: the own part always; the shared part came with
/// the launcher's clone (`inherits`), if any.
fn confine_self(confine: &dyn Confine, inherits: bool, failure: &Failure) {
    let applied = confine.apply_own().and_then(|()| {
        if inherits {
            Ok(())
        } else {
            confine.apply_shared()
        }
    });
    if let Err(e) = applied {
        fail(
            failure,
            Step::Sandbox,
            e.raw_os_error().unwrap_or(libc::EPERM),
        );
    }
}

/// As execvp: tries `execve` on each candidate; remembers a permission error, stops at any error
/// that is not "not here"; runs a file without `#!` with the shell (`script_argv`, whose slot 1
/// it fills). Returns only when no candidate could be run, with the errno to report.
///
/// # Safety
/// Child only (see [`child_main`]); the pointer arrays are null-terminated and point into
/// memory the suspended parent keeps alive.
unsafe fn exec_as_execvp(
    candidates: &[&CStr],
    argv: &[*const libc::c_char],
    script_argv: &mut [*const libc::c_char],
    envp: &[*const libc::c_char],
) -> i32 {
    let mut denied = false;
    let mut last = libc::ENOENT;
    for path in candidates {
        // SAFETY: as this function's contract.
        unsafe {
            libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            last = errno();
            if last == libc::ENOEXEC
                && let Some(slot) = script_argv.get_mut(1)
            {
                *slot = path.as_ptr();
                libc::execve(SHELL.as_ptr(), script_argv.as_ptr(), envp.as_ptr());
                last = errno();
            }
        }
        match last {
            libc::EACCES => denied = true,
            libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
            _ => break,
        }
    }
    if denied && last == libc::ENOENT {
        libc::EACCES
    } else {
        last
    }
}
