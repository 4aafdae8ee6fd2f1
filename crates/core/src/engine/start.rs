//! Starting a command on pipes: the prologue the one-shot and background pipe paths share.

use std::io;
use std::path::PathBuf;

use super::Source;
use super::pipe_thread::{Ends, Input, PipeThread};
use crate::limits::READ_CHUNK_BYTES;
use crate::reaper::ExitWatch;
use crate::spawn::{Ready, SpawnSpec, StdinMode, prepare_on_pipes};

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
    let (ready, pipes) = on_a_thread(&spec, stdin, pipe_bytes)?;
    let (pid, exit_watch) = ready.start()?;
    Ok(prologue.started(pid, exit_watch, pipes))
}

/// [`start_on_pipes`] that lets the worker thread run other tasks while the child is cloned.
///
/// The launcher's answer (pid and exit watch) is claimed only once
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
    let (ready, mut pipes) = on_a_thread(&spec, stdin, pipe_bytes)?;
    let claim = ready.hand();
    // The first output, or the end of both streams at the exit of a command that prints
    // nothing, comes after the exec: by then the launcher has answered.
    let _ = tokio::time::timeout(CLAIM_AFTER, pipes.output_or_end()).await;
    let (pid, exit_watch) = claim.claim().await?;
    Ok(prologue.started(pid, exit_watch, pipes))
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

    /// The started command, reading its output from `pipes`.
    fn started(self, pid: i32, exit_watch: ExitWatch, pipes: PipeThread) -> Started {
        Started {
            pid,
            exit_watch,
            source: Source::pipes(pipes).masked(self.masks),
            marker: self.marker,
            workdir: self.workdir,
            confined: self.confined,
        }
    }
}

/// `spec` prepared on pipes, their server's ends on a thread of their own (stdin fed `stdin`,
/// then closed; the output pipes enlarged, best-effort, to `pipe_bytes` and read that much at a
/// time), and the child's ends closed there after the clone. All before the command is handed
/// over: a failure here means nothing ran.
fn on_a_thread(
    spec: &SpawnSpec,
    stdin: Option<Vec<u8>>,
    pipe_bytes: Option<usize>,
) -> io::Result<(Ready, PipeThread)> {
    let (mut ready, pipes) = prepare_on_pipes(spec)?;
    let input = match (pipes.stdin, stdin) {
        (Some(fd), Some(bytes)) => Some(Input { fd, bytes }),
        _ => None,
    };
    let ends = Ends {
        out: pipes.stdout,
        err: pipes.stderr,
        input,
        caller: spec.caller.clone(),
    };
    let mut thread = PipeThread::start(ends, pipe_bytes.unwrap_or(READ_CHUNK_BYTES), pipe_bytes)?;
    if let Some(starter) = thread.starter() {
        ready.child_ends_to(starter);
    }
    Ok((ready, thread))
}
