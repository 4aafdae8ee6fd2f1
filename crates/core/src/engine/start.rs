//! Starting a command on pipes: the prologue the one-shot and background pipe paths share.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;

use super::Source;
use crate::limits::READ_CHUNK_BYTES;
use crate::reaper::ExitWatch;
use crate::spawn::{Pipes, SpawnSpec, StdinMode, prepare_on_pipes, spawn};

/// A command started on pipes, ready for [`super::drive`].
pub(crate) struct Started {
    pub pid: i32,
    pub exit_watch: ExitWatch,
    pub source: Source,
    pub marker: String,
    pub workdir: PathBuf,
    /// Spawned confined (the sandbox applies).
    pub confined: bool,
}

/// Starts `spec` with stdout and stderr on pipes, and `stdin` fed (then EOF) or `/dev/null`.
/// `pipe_bytes` asks the kernel for pipes that large and reads them that much at a time: a
/// background job drains a flood in a quarter of the wake-ups (the kernel may grant less,
/// `/proc/sys/fs/pipe-max-size`). The calling thread waits for the clone: see
/// [`start_on_pipes_async`].
pub(crate) fn start_on_pipes(
    mut spec: SpawnSpec,
    stdin: Option<Vec<u8>>,
    pipe_bytes: Option<usize>,
) -> io::Result<Started> {
    let prologue = Prologue::of(&mut spec, stdin.is_some());
    let spawned = spawn(spec)?;
    let exit_watch = spawned.exit;
    let pipes = Pipes {
        stdin: spawned.stdin,
        stdout: spawned.stdout,
        stderr: spawned.stderr,
    };
    // Started already: on a failure here its group is killed at once.
    let mut ends = exit_watch.or_kill(Ends::register(pipes, stdin, pipe_bytes))?;
    ends.feed();
    Ok(prologue.started(spawned.pid, exit_watch, ends))
}

/// [`start_on_pipes`] that lets the worker thread run other tasks while the child is cloned.
///
/// The output pipes go into the reactor before the command is handed over (a failure there
/// means nothing ran), and the launcher's answer (pid and exit watch) is claimed only once
/// there is output to read or the output has ended, or after [`CLAIM_AFTER`]. Either comes
/// after the command's exec, when the launcher has answered already: its answer, sent while
/// nobody waited for it, woke no one. One wake-up of the worker per command fewer; on a 2-vCPU
/// VM, a wake-up of a sleeping thread is a context switch that costs tens of µs.
pub(crate) async fn start_on_pipes_async(
    mut spec: SpawnSpec,
    stdin: Option<Vec<u8>>,
    pipe_bytes: Option<usize>,
) -> io::Result<Started> {
    let prologue = Prologue::of(&mut spec, stdin.is_some());
    let (ready, pipes) = prepare_on_pipes(&spec)?;
    let mut ends = Ends::register(pipes, stdin, pipe_bytes)?;
    let claim = ready.hand();
    ends.feed();
    // The first output, or the end of both streams at the exit of a command that prints
    // nothing, comes after the exec: by then the launcher has answered.
    let _ = tokio::time::timeout(CLAIM_AFTER, async {
        tokio::select! {
            _ = ends.out.readable() => {},
            _ = ends.err.readable() => {},
        }
    })
    .await;
    let (pid, exit_watch) = claim.claim().await?;
    Ok(prologue.started(pid, exit_watch, ends))
}

/// How long a command's pid may stay unclaimed while its output is open (see
/// [`start_on_pipes_async`]): until then neither its exit nor a cancellation is acted on.
const CLAIM_AFTER: std::time::Duration = std::time::Duration::from_millis(10);

/// What [`Started`] keeps of the spec.
struct Prologue {
    marker: String,
    workdir: PathBuf,
    confined: bool,
    masks: Option<std::sync::Arc<crate::mask::Masks>>,
}

impl Prologue {
    /// Sets `spec`'s stdin to a pipe if there is input to feed, and keeps what [`Started`]
    /// needs of it.
    fn of(spec: &mut SpawnSpec, has_stdin: bool) -> Self {
        spec.stdin = if has_stdin {
            StdinMode::Piped
        } else {
            StdinMode::Null
        };
        Prologue {
            marker: spec.marker.clone(),
            workdir: spec.cwd.clone(),
            confined: spec.confine.is_some(),
            masks: spec.masks.clone(),
        }
    }

    /// The started command, reading its output from `ends`.
    fn started(self, pid: i32, exit_watch: ExitWatch, ends: Ends) -> Started {
        Started {
            pid,
            exit_watch,
            source: Source::pipes(ends.out, ends.err, ends.chunk).masked(self.masks),
            marker: self.marker,
            workdir: self.workdir,
            confined: self.confined,
        }
    }
}

/// The server's ends of a command's pipes: its output in the reactor, and its input until it is
/// fed.
struct Ends {
    out: pipe::Receiver,
    err: pipe::Receiver,
    /// How much one read takes.
    chunk: usize,
    input: Option<(pipe::Sender, Vec<u8>)>,
}

impl Ends {
    /// `pipes` in the reactor, the output's enlarged (best-effort) to `pipe_bytes`.
    fn register(
        pipes: Pipes,
        stdin: Option<Vec<u8>>,
        pipe_bytes: Option<usize>,
    ) -> io::Result<Self> {
        let input = match (pipes.stdin, stdin) {
            (Some(fd), Some(data)) => Some((pipe::Sender::from_owned_fd(fd)?, data)),
            _ => None,
        };
        Ok(Ends {
            out: receiver(pipes.stdout, pipe_bytes)?,
            err: receiver(pipes.stderr, pipe_bytes)?,
            chunk: pipe_bytes.unwrap_or(READ_CHUNK_BYTES),
            input,
        })
    }

    /// Writes the input to the command's stdin in the background, then closes it (EOF). A
    /// process that exits without reading it is not an error.
    fn feed(&mut self) {
        if let Some((mut sender, data)) = self.input.take() {
            tokio::spawn(async move {
                let _ = sender.write_all(&data).await;
            });
        }
    }
}

/// The read end of an output pipe in the reactor, enlarged (best-effort) to `bytes`.
fn receiver(fd: OwnedFd, bytes: Option<usize>) -> io::Result<pipe::Receiver> {
    if let Some(bytes) = bytes {
        // SAFETY: F_SETPIPE_SZ on a pipe fd we own; failure leaves the pipe as it was.
        unsafe {
            libc::fcntl(
                fd.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX),
            );
        }
    }
    // The seam hands over non-blocking pipe read ends: no need to check and set them again.
    pipe::Receiver::from_owned_fd_unchecked(fd)
}
