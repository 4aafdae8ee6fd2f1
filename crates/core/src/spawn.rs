//! The one spawn seam: every process agentty starts is started here.
//!
//! One place means one place to get right: a new session (own process group, no controlling
//! terminal, so `/dev/tty` cannot be opened and `sudo`/`ssh` fail fast instead of prompting), a
//! parent-death signal, the non-interactive environment, the run marker that lets an escaped
//! descendant be traced back to its command, the sandbox hook applied just before exec, and
//! registration with the reaper. Nothing else in agentty calls `Command::spawn`.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::reaper::{self, Exit};

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

/// A confinement applied in the child between fork and exec (the sandbox, SPEC §5).
///
/// `before_exec` runs in the forked child of a multi-threaded process: it must only make
/// async-signal-safe calls (raw syscalls on data prepared before the fork), never allocate or lock.
pub trait Confine: Send + Sync {
    fn before_exec(&self) -> io::Result<()>;
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
    pub confine: Option<Arc<dyn Confine>>,
}

/// A started process with piped output.
pub struct Spawned {
    pub pid: i32,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub exit: oneshot::Receiver<Exit>,
}

/// Starts `spec` in its own session with piped stdout and stderr.
pub fn spawn(spec: SpawnSpec) -> io::Result<Spawned> {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args).current_dir(&spec.cwd);
    for (key, value) in NON_INTERACTIVE_ENV {
        cmd.env(key, value);
    }
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    cmd.env(RUN_MARKER_VAR, &spec.marker);
    cmd.stdin(match spec.stdin {
        StdinMode::Null => Stdio::null(),
        StdinMode::Piped => Stdio::piped(),
    });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());

    let parent = std::process::id() as libc::pid_t;
    let confine = spec.confine.clone();
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls:
    // setsid, prctl, getppid, and the confinement's contract forbids anything else.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                // The server may have died between fork and prctl: then nobody would kill us.
                if libc::getppid() != parent {
                    libc::_exit(137);
                }
            }
            if let Some(confine) = &confine {
                confine.before_exec()?;
            }
            Ok(())
        });
    }

    let (child, exit) = reaper::spawn_registered(|| {
        let child = cmd.spawn()?;
        Ok((child.id() as i32, child))
    })?;
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
