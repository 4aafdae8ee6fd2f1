//! The one spawn seam: every process agentty starts is started here.
//!
//! One place means one place to get right: its own process group (so a tree can be signalled
//! as one), no controlling terminal (so `/dev/tty` cannot be opened and `sudo`/`ssh` fail fast
//! instead of prompting), the non-interactive environment, the run marker that lets an escaped
//! descendant be traced back to its command, the sandbox, and registration with the reaper.
//! Nothing else in agentty calls `Command::spawn`.
//!
//! Speed shapes this module. A `fork()` of the multi-threaded server costs several hundred
//! microseconds (page tables, then copy-on-write faults); `posix_spawn` (a `vfork`-style clone)
//! costs a fraction, and std only uses it when no `pre_exec` closure is set. So nothing runs in
//! the child: the process group comes from `posix_spawn` itself, the controlling terminal is
//! dropped once by the server ([`detach_controlling_terminal`]) and so is never inherited, and
//! the sandbox is applied to a dedicated launcher thread ([`Launcher`]) whose restrictions every
//! child it spawns inherits (Landlock and `no_new_privs` are per-thread and inherited on clone).

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use crate::reaper::{self, ExitWatch};

/// Environment variable carrying a run's marker; [`crate::tree`] finds escaped descendants by it.
pub const RUN_MARKER_VAR: &str = "AGENTTY_RUN";

/// Set unless the caller overrides them: a command must never wait for a human who is not there.
pub const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
    ("GCM_INTERACTIVE", "never"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
];

/// A confinement (the sandbox, SPEC §5), applied to the calling thread so that every process
/// spawned from that thread afterwards inherits it.
pub trait Confine: Send + Sync {
    fn restrict_current_thread(&self) -> io::Result<()>;
}

type LaunchJob = Box<dyn FnOnce() + Send>;

/// A thread that holds one confinement and spawns every process that must run under it.
///
/// Restricting a thread is irreversible, so each confinement gets its own thread, created once
/// and reused by every call: the per-call cost of the sandbox is one hand-off between threads.
pub struct Launcher {
    jobs: std::sync::Mutex<std::sync::mpsc::Sender<LaunchJob>>,
}

impl Launcher {
    pub fn new(confine: Arc<dyn Confine>) -> io::Result<Self> {
        let (jobs_tx, jobs_rx) = std::sync::mpsc::channel::<LaunchJob>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
        std::thread::Builder::new()
            .name("agentty-launcher".into())
            .spawn(move || {
                let restricted = confine.restrict_current_thread();
                let ok = restricted.is_ok();
                let _ = ready_tx.send(restricted);
                if ok {
                    for job in jobs_rx {
                        job();
                    }
                }
            })?;
        ready_rx.recv().map_err(io::Error::other)??;
        Ok(Self {
            jobs: std::sync::Mutex::new(jobs_tx),
        })
    }

    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> io::Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        let job: LaunchJob = Box::new(move || {
            let _ = tx.send(f());
        });
        self.jobs
            .lock()
            .map_err(|_| io::Error::other("launcher lock poisoned"))?
            .send(job)
            .map_err(|_| io::Error::other("launcher thread is gone"))?;
        rx.recv()
            .map_err(|_| io::Error::other("launcher thread is gone"))
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
    /// Spawn from this launcher's confined thread; `None` spawns unconfined.
    pub launcher: Option<Arc<Launcher>>,
}

/// A started process with piped output.
pub struct Spawned {
    pub pid: i32,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub exit: ExitWatch,
}

/// The program, arguments, workdir and environment of `spec`: shared by the pipe and PTY paths.
fn base_command(spec: &SpawnSpec) -> Command {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args).current_dir(&spec.cwd);
    for (key, value) in NON_INTERACTIVE_ENV {
        cmd.env(key, value);
    }
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    cmd.env(RUN_MARKER_VAR, &spec.marker);
    cmd
}

/// The one `Command::spawn` of the program: from `launcher`'s confined thread when there is one,
/// registered with the reaper before anything can reap it.
fn launch(mut cmd: Command, launcher: Option<&Launcher>) -> io::Result<(Child, ExitWatch)> {
    let mut spawn = move || {
        reaper::spawn_registered(|| {
            let child = cmd.spawn()?;
            Ok((child.id() as i32, child))
        })
    };
    match launcher {
        Some(launcher) => launcher.run(spawn)?,
        None => spawn(),
    }
}

/// Starts `spec` in its own session with piped stdout and stderr.
pub fn spawn(spec: SpawnSpec) -> io::Result<Spawned> {
    let mut cmd = base_command(&spec);
    cmd.stdin(match spec.stdin {
        StdinMode::Null => Stdio::null(),
        StdinMode::Piped => Stdio::piped(),
    });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());

    // Its own process group, set by posix_spawn itself (no fork, no code in the child).
    cmd.process_group(0);

    let (child, exit) = launch(cmd, spec.launcher.as_deref())?;
    let pid = child.id() as i32;
    // The std handle is only a carrier for the pipes: the reaper owns the exit status, and
    // dropping a `Child` neither waits nor kills.
    let mut child = child;
    let stdin = child.stdin.take().map(OwnedFd::from);
    let stdout = child.stdout.take().map(OwnedFd::from);
    let stderr = child.stderr.take().map(OwnedFd::from);
    drop(child);
    match (stdout, stderr) {
        (Some(stdout), Some(stderr)) => Ok(Spawned {
            pid,
            stdin,
            stdout,
            stderr,
            exit,
        }),
        _ => Err(io::Error::other("spawned process has no output pipes")),
    }
}

/// A process started on the slave side of a pseudo-terminal.
pub struct SpawnedPty {
    pub pid: i32,
    pub exit: ExitWatch,
}

/// Starts `spec` with `slave` (a PTY's slave side) as stdin, stdout, stderr and controlling
/// terminal, in a new session of its own. `spec.stdin` is ignored: the terminal is the input.
///
/// Unlike [`spawn`], this needs code in the child: `setsid` and `TIOCSCTTY` cannot be expressed
/// to `posix_spawn`, so std forks here. That costs a few hundred microseconds, paid once per
/// shell or per `pty: true` call, never on the pipe path. A new session is required: a
/// terminal can only be the controlling terminal of a session leader, and job control (Ctrl+C
/// reaching the foreground job, `tcgetpgrp`) works only through a controlling terminal.
/// Forked from the launcher thread, the child inherits that thread's confinement as on the pipe
/// path.
pub fn spawn_pty(spec: SpawnSpec, slave: &OwnedFd) -> io::Result<SpawnedPty> {
    let mut cmd = base_command(&spec);
    cmd.stdin(Stdio::from(slave.try_clone()?))
        .stdout(Stdio::from(slave.try_clone()?))
        .stderr(Stdio::from(slave.try_clone()?));
    // SAFETY: setsid and ioctl are async-signal-safe and touch only the child's own state; no
    // allocation or lock happens between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            // fd 0 is the slave by now (std dups stdio before running pre_exec).
            if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (child, exit) = launch(cmd, spec.launcher.as_deref())?;
    // The child's stdio are the slave; std holds no pipes for it. Dropping the `Child` neither
    // waits nor kills: the reaper owns the exit status.
    let pid = child.id() as i32;
    drop(child);
    Ok(SpawnedPty { pid, exit })
}
