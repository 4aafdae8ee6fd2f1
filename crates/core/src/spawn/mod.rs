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

mod exec;
mod launcher;
pub(crate) mod marker;
mod signals;
mod vfork;

use std::borrow::Cow;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::reaper::{self, ExitWatch};
use exec::{ExecPlan, Session};

pub use crate::reaper::AfterStart;
pub use marker::RUN_MARKER_VAR;

/// Both forms of the non-interactive defaults, from one list: the names and values, and the
/// child's `KEY=VALUE` entries, encoded at compile time.
macro_rules! non_interactive_env {
    ($($key:literal = $value:literal),* $(,)?) => {
        /// Set unless the caller overrides them: a command must never wait for a human who is
        /// not there.
        pub const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[$(($key, $value)),*];

        /// [`NON_INTERACTIVE_ENV`] as the child's `KEY=VALUE` entries, in the same order: a
        /// command that does not override them gets these, with no encoding per spawn.
        const NON_INTERACTIVE_ENTRIES: [&CStr; NON_INTERACTIVE_ENV.len()] =
            [$(c_str_literal(concat!($key, "=", $value, "\0"))),*];
    };
}

non_interactive_env! {
    "PAGER" = "cat",
    "GIT_PAGER" = "cat",
    "MANPAGER" = "cat",
    "GIT_TERMINAL_PROMPT" = "0",
    "GIT_EDITOR" = "true",
    "GCM_INTERACTIVE" = "never",
    "DEBIAN_FRONTEND" = "noninteractive",
    "PIP_NO_INPUT" = "1",
    // Python block-buffers stdout on a pipe: a background dev server's "Serving on port N"
    // stayed unread for as long as it ran, and a traceback came before the prints above it.
    "PYTHONUNBUFFERED" = "1",
}

/// A NUL-terminated literal as a `CStr`; a literal that is not one fails the build.
const fn c_str_literal(literal: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(literal.as_bytes()) {
        Ok(c_str) => c_str,
        Err(_) => panic!("not a NUL-terminated string without an inner NUL"),
    }
}

/// A confinement (the sandbox, docs/BEHAVIOUR.md §5), in two parts: one each command must have
/// to itself, and one a spawning thread may take once for all the children it clones (see
/// `launcher.rs`). Both are raw system calls on data prepared beforehand only, no allocation,
/// no lock: they may run in a child between clone and exec, which shares the server's memory.
pub trait Confine: Send + Sync {
    /// Applied by each child to itself before `exec`: what must not be shared between two
    /// commands (their own Landlock domain, which scopes signals and abstract sockets).
    fn apply_own(&self) -> io::Result<()>;

    /// Applied to the calling thread, and so inherited by every child it clones after: what
    /// commands may share (the seccomp filter, the capabilities dropped). A child that is not
    /// cloned by a thread that has it applies it to itself, after [`Confine::apply_own`].
    fn apply_shared(&self) -> io::Result<()>;
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

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} contains a NUL byte"),
    )
}

fn c_string(bytes: Vec<u8>, what: &str) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| invalid(what))
}

/// [`c_string`] of borrowed bytes, copied once into an allocation with room for the NUL.
fn c_string_of(bytes: &[u8], what: &str) -> io::Result<CString> {
    let mut owned = Vec::with_capacity(bytes.len() + 1);
    owned.extend_from_slice(bytes);
    c_string(owned, what)
}

/// One `KEY=VALUE` entry of the server's own environment, encoded once.
struct InheritedVar {
    key: OsString,
    entry: CString,
}

/// The server's own environment, read and encoded once: agentty never changes it after
/// start-up, and re-reading it per spawn (as std does) is a measurable share of a trivial call.
/// Entries with a NUL byte cannot be passed on and are dropped, as std drops them.
fn inherited_env() -> &'static [InheritedVar] {
    static ENV: OnceLock<Vec<InheritedVar>> = OnceLock::new();
    ENV.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(key, value)| {
                let entry = CString::new(env_entry(&key, &value)).ok()?;
                Some(InheritedVar { key, entry })
            })
            .collect()
    })
}

fn env_entry(key: &OsStr, value: &OsStr) -> Vec<u8> {
    // One byte more for the NUL that `CString::new` appends: no reallocation.
    let mut entry = Vec::with_capacity(key.len() + 1 + value.len() + 1);
    entry.extend_from_slice(key.as_bytes());
    entry.push(b'=');
    entry.extend_from_slice(value.as_bytes());
    entry
}

/// The child's environment as `KEY=VALUE` entries: the run marker, then inherited, then the
/// non-interactive defaults, then the caller's variables; a later entry replaces an earlier one
/// of the same name. Also returns the child's `PATH`, where its program is looked
/// up.
fn child_env(spec: &SpawnSpec) -> io::Result<(Vec<Cow<'static, CStr>>, Option<&OsStr>)> {
    // (name, value, the default's index in `NON_INTERACTIVE_ENV` while it is not overridden)
    let mut set: Vec<(&OsStr, &OsStr, Option<usize>)> =
        Vec::with_capacity(NON_INTERACTIVE_ENV.len() + 8);
    let overrides = NON_INTERACTIVE_ENV
        .iter()
        .enumerate()
        .map(|(i, (k, v))| (OsStr::new(*k), OsStr::new(*v), Some(i)))
        .chain(
            spec.env
                .iter()
                .map(|(k, v)| (k.as_os_str(), v.as_os_str(), None)),
        )
        .chain(std::iter::once((
            OsStr::new(RUN_MARKER_VAR),
            OsStr::new(spec.marker.as_str()),
            None,
        )));
    for (key, value, default) in overrides {
        if key.is_empty() || key.as_bytes().contains(&b'=') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid environment variable name {key:?}"),
            ));
        }
        match set.iter_mut().find(|(k, ..)| *k == key) {
            Some(entry) => *entry = (key, value, default),
            None => set.push((key, value, default)),
        }
    }
    let inherited = inherited_env();
    let path = set
        .iter()
        .find(|(k, ..)| *k == OsStr::new("PATH"))
        .map(|(_, v, _)| *v)
        .or_else(|| {
            let var = inherited.iter().find(|var| var.key == "PATH")?;
            let value = var.entry.to_bytes().get(var.key.len() + 1..)?;
            Some(OsStr::from_bytes(value))
        });
    let mut env: Vec<Cow<'static, CStr>> = Vec::with_capacity(inherited.len() + set.len());
    env.extend(
        inherited
            .iter()
            .filter(|var| !set.iter().any(|(k, ..)| *k == var.key))
            .map(|var| Cow::Borrowed(var.entry.as_c_str())),
    );
    for (key, value, default) in set {
        let entry = match default {
            Some(i) => Cow::Borrowed(NON_INTERACTIVE_ENTRIES[i]),
            None => Cow::Owned(c_string(env_entry(key, value), "an environment variable")?),
        };
        // The run marker goes first: a reader that catches only the start of the environment
        // (the process in the middle of `exec`) still finds it.
        if key == OsStr::new(RUN_MARKER_VAR) {
            env.insert(0, entry);
        } else {
            env.push(entry);
        }
    }
    Ok((env, path))
}

/// Where `execve` is tried: the program itself when it names a path, else each directory of
/// the child's `PATH` in order (an empty entry is the workdir), as `execvp` searches.
fn exec_candidates(program: &OsStr, path: Option<&OsStr>) -> io::Result<Vec<CString>> {
    let bytes = program.as_bytes();
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    if bytes.contains(&b'/') {
        return Ok(vec![c_string_of(bytes, "the program")?]);
    }
    let path = path.map_or(&b"/bin:/usr/bin"[..], OsStr::as_bytes);
    path.split(|&b| b == b':')
        .map(|dir| {
            let dir = if dir.is_empty() { &b"."[..] } else { dir };
            let mut full = Vec::with_capacity(dir.len() + 1 + bytes.len() + 1);
            full.extend_from_slice(dir);
            full.push(b'/');
            full.extend_from_slice(bytes);
            c_string(full, "PATH")
        })
        .collect()
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

/// The plan for `spec` with `stdio` as fds 0-2; `keep_open` are the fds behind them that the
/// plan owns until the clone is done.
fn plan(
    spec: &SpawnSpec,
    stdio: [RawFd; 3],
    keep_open: Vec<OwnedFd>,
    session: Session,
) -> io::Result<ExecPlan> {
    let (env, path) = child_env(spec)?;
    let candidates = exec_candidates(&spec.program, path)?;
    if candidates.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let mut argv = Vec::with_capacity(spec.args.len() + 1);
    argv.push(c_string_of(spec.program.as_bytes(), "the program")?);
    for arg in &spec.args {
        argv.push(c_string_of(arg.as_bytes(), "an argument")?);
    }
    let namespace = spec.confine.as_ref().and(crate::namespace::get());
    if namespace.is_none() {
        // Outside the session's namespace only tracking stops this run's escapees; the next
        // start trusts its marker only if it is written down (see `crate::runs`).
        crate::runs::note(&spec.marker);
    }
    Ok(ExecPlan {
        argv,
        env,
        candidates,
        cwd: c_string_of(spec.cwd.as_os_str().as_bytes(), "the workdir")?,
        stdio,
        keep_open,
        session,
        confine: spec.confine.clone(),
        // Confined commands only: unconfined ones keep the host's `ps` and `kill`.
        namespace,
    })
}

/// Clones `plan`'s child from this thread, registered with the reaper before anything can reap
/// it: where no launcher takes the plan.
fn launch_here(plan: &ExecPlan) -> io::Result<(i32, ExitWatch)> {
    reaper::spawn_registered(|| exec::start(plan).map(|(pid, pidfd)| (pid, pidfd, pid)))
}

/// What a launcher's answer is when the launcher ended without one (it can only have panicked).
fn launcher_gone() -> io::Error {
    io::Error::other("agentty's launcher thread ended before it started the command")
}

/// Starts `plan`'s child, registered with the reaper, and waits for it. The one place a process
/// is started, with [`launch_async`].
fn launch(plan: ExecPlan, marker: &str) -> io::Result<(i32, ExitWatch)> {
    let (reply, answer) = launcher::wait_reply();
    match launcher::hand(plan, marker, reply) {
        Ok(()) => answer.recv().map_err(|_| launcher_gone())?,
        Err(returned) => launch_here(&returned.0),
    }
}

/// [`launch`] for a task: a launcher's clone does not hold up the calling worker thread.
/// Outside a runtime it is [`launch`].
async fn launch_async(plan: ExecPlan, marker: &str) -> io::Result<(i32, ExitWatch)> {
    hand(plan, marker).claim().await
}

/// Hands `plan` to a launcher (or, where none takes it or outside a runtime, clones it here).
fn hand(plan: ExecPlan, marker: &str) -> Claim {
    let claimed = match launcher::Reply::to_task(marker) {
        None => Claimed::Started(launch(plan, marker)),
        Some((reply, answer)) => match launcher::hand(plan, marker, reply) {
            Ok(()) => Claimed::Answer(answer),
            Err(returned) => Claimed::Started(launch_here(&returned.0)),
        },
    };
    Claim {
        claimed: Some(claimed),
        marker: marker.to_owned(),
    }
}

/// A command handed to a launcher: its pid and exit watch, once claimed. Dropped unclaimed, the
/// child is stopped as soon as it has started (nobody would supervise it).
///
/// Until [`Claim::claim`] is awaited nothing waits for the launcher's answer, so sending it wakes
/// no one: a caller that has something else to wait for first (the command's output) spares the
/// worker thread that wake-up.
pub struct Claim {
    /// Taken by [`Claim::claim`].
    claimed: Option<Claimed>,
    /// The run marker, to find the tree of a child nobody claimed.
    marker: String,
}

enum Claimed {
    /// A launcher's answer, still to come or come.
    Answer(launcher::Answer),
    /// Cloned here, at the hand-over.
    Started(io::Result<(i32, ExitWatch)>),
}

impl Claim {
    /// The child's pid and exit watch, or why it was not started (nothing ran).
    pub async fn claim(mut self) -> io::Result<(i32, ExitWatch)> {
        match self.claimed.take() {
            Some(Claimed::Answer(answer)) => answer.await.map_err(|_| launcher_gone())?,
            Some(Claimed::Started(started)) => started,
            None => Err(io::Error::other("already claimed")),
        }
    }
}

impl Drop for Claim {
    /// A child cloned here and never claimed is stopped as a launcher's would be (an
    /// [`launcher::Answer`] dropped unclaimed stops its own).
    fn drop(&mut self) {
        if let Some(Claimed::Started(Ok((pid, watch)))) = self.claimed.take() {
            launcher::stop_unclaimed(pid, watch, &self.marker);
        }
    }
}

/// A command ready to be handed over ([`Ready::hand`]): nothing has started yet.
pub struct Ready {
    plan: ExecPlan,
    marker: String,
}

impl Ready {
    /// Hands the command to a launcher: from here on it may run.
    pub fn hand(self) -> Claim {
        hand(self.plan, &self.marker)
    }
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

/// Starts `spec` in a process group of its own with piped stdout and stderr.
pub fn spawn(spec: SpawnSpec) -> io::Result<Spawned> {
    let (plan, ends) = on_pipes(&spec)?;
    let (pid, exit) = launch(plan, &spec.marker)?;
    Ok(ends.spawned(pid, exit))
}

/// [`spawn`] for a task: the calling worker thread goes on with other tasks while a launcher
/// clones the child. Dropped before the answer, the child is killed as soon as it has started.
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
pub async fn spawn_pty(spec: SpawnSpec, slave: OwnedFd) -> io::Result<SpawnedPty> {
    let fd = slave.as_raw_fd();
    let plan = plan(&spec, [fd, fd, fd], vec![slave], Session::OwnTerminal)?;
    let (pid, exit) = launch_async(plan, &spec.marker).await?;
    Ok(SpawnedPty { pid, exit })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoded_defaults_are_the_defaults() {
        let encoded: Vec<Vec<u8>> = NON_INTERACTIVE_ENTRIES
            .iter()
            .map(|entry| entry.to_bytes().to_vec())
            .collect();
        let defaults: Vec<Vec<u8>> = NON_INTERACTIVE_ENV
            .iter()
            .map(|(k, v)| env_entry(OsStr::new(k), OsStr::new(v)))
            .collect();
        assert_eq!(encoded, defaults);
    }
}
