//! The pipe path of `terminal` (docs/BEHAVIOUR.md §2): run one process to its end, capture, shape, clean up.
//!
//! One loop owns the whole life of the call: it reads stdout and stderr as they arrive, notices
//! the leader's exit, the timeout, the caller's cancellation and the capture cap, and reports
//! progress. Its theme is *leave no orphan*: whatever ends the call, everything the command
//! started is stopped before the call returns (or, on cancellation, by a task that outlives it),
//! and the call itself returns within a bounded time even if a process ignores SIGKILL.
//!
//! One exception, asked for by the caller: with [`run_until`] and `hand_over: true`, reaching
//! the timeout stops nothing. The loop hands its live pipes, exit watch, per-stream cleaners and
//! a ring already holding the captured text to [`Handover`], and the job table adopts the
//! command as a background job ([`crate::jobs::command::adopt`]), so no byte is lost or doubled.

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::clean::Cleaner;
pub use crate::handover::Handover;
use crate::handover::{HandoverSpill, Live};
use crate::jobs::ring::OutputRing;
use crate::limits::{
    CANCEL_GRACE_MS, CAPTURE_LIMIT_BYTES, DRAIN_MS, KILL_GRACE_MS, KILL_WAIT_MS,
    PROGRESS_INTERVAL_MS, PROGRESS_LINE_CHARS, READ_CHUNK_BYTES,
};
use crate::model_output::{Finished, LazySpill, ModelOutput};
use crate::reaper::Exit;
use crate::shape::{Shaped, Shaper};
use crate::spawn::{SpawnSpec, StdinMode, spawn};
use crate::spill::SpillStore;
use crate::tree::{self, Terminated};

/// One call to run.
pub struct RunRequest {
    pub spec: SpawnSpec,
    /// Fed to the process, then EOF. `None` means stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Where the full output goes if it outgrows the inline limit: the store and a file name.
    pub spill: Option<(Arc<SpillStore>, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Success,
    Failed,
    Timeout,
    Cancelled,
    /// Stopped by agentty for capturing more than the cap.
    Killed,
}

/// What happened to the full text of an over-long output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spill {
    /// The output fit inline; no file was written.
    NotNeeded,
    Written(PathBuf),
    /// The file could not be written; the reason is stated to the model.
    Failed(String),
}

/// Descendants still running when the command's shell had exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strays {
    /// They held the output pipes open past the drain time (`npm run dev &`).
    HeldOutput(usize),
    /// They no longer held the output but were still running (`server > log &`).
    Lingering(usize),
}

#[derive(Debug)]
pub struct RunOutcome {
    pub pid: i32,
    pub status: RunStatus,
    /// `None` when the process could not even be reaped in time (uninterruptible sleep).
    pub exit: Option<Exit>,
    pub duration: Duration,
    pub stdout: Shaped,
    pub stderr: Shaped,
    /// stdout and stderr merged in arrival order (line-atomic).
    pub output: Shaped,
    pub output_bytes: u64,
    pub output_lines: u64,
    pub spill: Spill,
    pub captured_bytes: u64,
    pub strays: Option<Strays>,
    /// Set when the tree had to be stopped (timeout, cap, cancellation, strays).
    pub stopped: Option<Terminated>,
}

/// How a [`run_until`] call ended.
// Finished is the path of every call and stays unboxed; the rare hand-over is the boxed one.
#[allow(clippy::large_enum_variant)]
pub enum RunEnd {
    Finished(RunOutcome),
    /// The timeout was reached and the command is still running, handed over intact.
    TimedOut(Box<Handover>),
}

/// A progress report while the command runs.
#[derive(Debug, Clone)]
pub struct Progress {
    pub elapsed: Duration,
    /// The latest line of output, cleaned and shortened.
    pub line: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    Out,
    Err,
}

/// Everything captured so far.
struct Capture {
    out_cleaner: Cleaner,
    err_cleaner: Cleaner,
    stdout: Shaper,
    stderr: Shaper,
    /// The merged output the model gets, and its spill file.
    merged: ModelOutput,
    captured: u64,
    last_line: String,
    last_stream: Stream,
    /// Only when the command may be handed over: the merged text, as a job would have kept it.
    ring: Option<OutputRing>,
}

impl Capture {
    fn new(spill: Option<(Arc<SpillStore>, String)>, hand_over: bool) -> Self {
        Self {
            out_cleaner: Cleaner::new(),
            err_cleaner: Cleaner::new(),
            stdout: Shaper::new(),
            stderr: Shaper::new(),
            merged: ModelOutput::new(spill),
            captured: 0,
            last_line: String::new(),
            last_stream: Stream::Out,
            ring: hand_over.then(|| OutputRing::new(None)),
        }
    }

    /// Takes raw bytes from one stream; returns false once the capture cap is reached.
    fn ingest(&mut self, stream: Stream, bytes: &[u8]) -> bool {
        let room = CAPTURE_LIMIT_BYTES.saturating_sub(self.captured);
        let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        self.captured += take as u64;
        self.last_stream = stream;
        let (cleaner, shaper) = match stream {
            Stream::Out => (&mut self.out_cleaner, &mut self.stdout),
            Stream::Err => (&mut self.err_cleaner, &mut self.stderr),
        };
        let text = cleaner.feed(&bytes[..take]);
        shaper.push(text);
        if let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) {
            self.last_line.clear();
            self.last_line.push_str(line);
        }
        self.merged.push(text);
        if let Some(ring) = &self.ring {
            ring.push(text);
        }
        take == bytes.len() && self.captured < CAPTURE_LIMIT_BYTES
    }

    fn progress_line(&self) -> String {
        let cleaner = match self.last_stream {
            Stream::Out => &self.out_cleaner,
            Stream::Err => &self.err_cleaner,
        };
        let pending = cleaner.pending_line().trim();
        let line = if pending.is_empty() {
            self.last_line.trim()
        } else {
            pending
        };
        line.chars().take(PROGRESS_LINE_CHARS).collect()
    }

    /// Everything but the shaped text goes to the new owner; partial lines stay in the
    /// cleaners, so they are neither lost nor counted twice.
    fn hand_over(self, live: Live, started: Instant, workdir: PathBuf) -> Handover {
        let ring = self.ring.unwrap_or_else(|| OutputRing::new(None));
        let (merged, spill) = self.merged.into_parts();
        let (spill_path, spill) = match spill {
            LazySpill::Off => (None, HandoverSpill::Off),
            LazySpill::Ready(store, _) => (None, HandoverSpill::Lazy(store)),
            LazySpill::Writing(mut file) => match file.flush() {
                Ok(()) => (
                    Some(file.path().to_owned()),
                    HandoverSpill::Continue(file, merged.total_bytes()),
                ),
                Err(e) => (None, HandoverSpill::Failed(e.to_string())),
            },
            LazySpill::Failed(reason) => (None, HandoverSpill::Failed(reason)),
        };
        Handover {
            pid: live.pid,
            started: started.into_std(),
            workdir,
            output_bytes: merged.total_bytes(),
            output_lines: merged.total_lines(),
            output: merged.finish(),
            stdout: self.stdout.finish(),
            stderr: self.stderr.finish(),
            spill_path,
            cursor: ring.total(),
            live: Live {
                out_cleaner: self.out_cleaner,
                err_cleaner: self.err_cleaner,
                ..live
            },
            ring,
            spill,
        }
    }

    fn finish(mut self) -> Captured {
        let tail = self.out_cleaner.finish().to_owned();
        self.stdout.push(&tail);
        self.merged.push(&tail);
        let tail = self.err_cleaner.finish().to_owned();
        self.stderr.push(&tail);
        self.merged.push(&tail);
        Captured {
            stdout: self.stdout.finish(),
            stderr: self.stderr.finish(),
            merged: self.merged.finish(),
            captured: self.captured,
        }
    }
}

/// What a finished capture holds: each stream shaped, the merged output with its spill file,
/// and the raw bytes counted against the capture cap.
pub(crate) struct Captured {
    pub stdout: Shaped,
    pub stderr: Shaped,
    pub merged: Finished,
    pub captured: u64,
}

/// Why the loop started stopping the tree.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    OverCapture,
    HeldOutput,
}

/// Reads into `buf` (cleared first, capacity kept) so no read buffer is ever zero-filled.
async fn read_some(pipe: &mut Option<pipe::Receiver>, buf: &mut Vec<u8>) -> io::Result<usize> {
    buf.clear();
    match pipe {
        Some(p) => p.read_buf(buf).await,
        None => std::future::pending().await,
    }
}

/// Starts stopping the tree in a task of its own; the leader is pinned before this returns.
fn start_stop(pid: i32, marker: &str, grace_ms: u64) -> JoinHandle<Terminated> {
    tokio::spawn(tree::terminate(
        pid,
        marker,
        Duration::from_millis(grace_ms),
    ))
}

/// Runs one command to its end. `cancel` resolving means the caller gave up: the tree is stopped
/// by a detached task and the call returns at once with status `Cancelled`.
pub async fn run(
    req: RunRequest,
    cancel: impl Future<Output = ()>,
    on_progress: Option<&mut (dyn FnMut(Progress) + Send)>,
) -> io::Result<RunOutcome> {
    match run_until(req, false, cancel, on_progress).await? {
        RunEnd::Finished(outcome) => Ok(outcome),
        RunEnd::TimedOut(_) => Err(io::Error::other("hand-over without a request for it")),
    }
}

/// Like [`run`]; with `hand_over`, reaching the timeout returns the still-running command as a
/// [`Handover`] instead of stopping it.
pub async fn run_until(
    req: RunRequest,
    hand_over: bool,
    cancel: impl Future<Output = ()>,
    mut on_progress: Option<&mut (dyn FnMut(Progress) + Send)>,
) -> io::Result<RunEnd> {
    let RunRequest {
        mut spec,
        stdin,
        timeout,
        spill,
    } = req;
    spec.stdin = if stdin.is_some() {
        StdinMode::Piped
    } else {
        StdinMode::Null
    };
    let marker = spec.marker.clone();
    let workdir = spec.cwd.clone();
    let confined = spec.confine.is_some();
    let start = Instant::now();
    let spawned = spawn(spec)?;
    let pid = spawned.pid;
    let mut exit_watch = spawned.exit;
    let (mut out, mut err) = exit_watch.or_kill((|| {
        if let (Some(fd), Some(data)) = (spawned.stdin, stdin) {
            feed_stdin(fd, data)?;
        }
        // The seam hands over non-blocking pipe read ends: no need to check and set them again.
        let out = pipe::Receiver::from_owned_fd_unchecked(spawned.stdout)?;
        let err = pipe::Receiver::from_owned_fd_unchecked(spawned.stderr)?;
        Ok((Some(out), Some(err)))
    })())?;
    let mut exit: Option<Exit> = None;
    let mut capture = Capture::new(spill, hand_over);
    let mut buf_out = Vec::with_capacity(READ_CHUNK_BYTES);
    let mut buf_err = Vec::with_capacity(READ_CHUNK_BYTES);

    let mut stop: Option<Stop> = None;
    let mut stopper: Option<JoinHandle<Terminated>> = None;
    // The next deadline that is not the timeout: the drain time after exit, then the bound on
    // waiting for a killed tree.
    let mut aux_deadline: Option<Instant> = None;
    let timeout_sleep = sleep_until(start + timeout);
    let progress_every = Duration::from_millis(PROGRESS_INTERVAL_MS);
    let mut next_progress = start + progress_every;
    tokio::pin!(cancel, timeout_sleep);

    loop {
        if exit.is_some() && out.is_none() && err.is_none() {
            break;
        }
        let aux = sleep_until(aux_deadline.unwrap_or(start + timeout + progress_every));
        let progress = sleep_until(next_progress);
        tokio::select! {
            r = read_some(&mut out, &mut buf_out) => match r {
                Ok(n) if n > 0 => {
                    if !capture.ingest(Stream::Out, &buf_out) && stop.is_none() {
                        stop = Some(Stop::OverCapture);
                    }
                }
                _ => out = None,
            },
            r = read_some(&mut err, &mut buf_err) => match r {
                Ok(n) if n > 0 => {
                    if !capture.ingest(Stream::Err, &buf_err) && stop.is_none() {
                        stop = Some(Stop::OverCapture);
                    }
                }
                _ => err = None,
            },
            status = exit_watch.wait(), if exit.is_none() => {
                // waitid cannot fail for our own live child; if it did, treat it as killed.
                exit = Some(status.unwrap_or(Exit::Signal(libc::SIGKILL)));
                if stop.is_none() {
                    aux_deadline = Some(Instant::now() + Duration::from_millis(DRAIN_MS));
                }
            },
            () = &mut cancel => {
                // Confirmed before the result says so ("the process tree was stopped").
                let grace = Duration::from_millis(CANCEL_GRACE_MS);
                let stopped = tree::terminate(pid, &marker, grace).await;
                let mut outcome = finish(pid, RunStatus::Cancelled, exit, start, capture);
                outcome.stopped = Some(stopped);
                return Ok(RunEnd::Finished(outcome));
            },
            () = &mut timeout_sleep, if stop.is_none() => {
                if hand_over {
                    let live = Live {
                        pid,
                        confined,
                        marker,
                        out,
                        err,
                        exit_watch,
                        exit,
                        out_cleaner: Cleaner::new(),
                        err_cleaner: Cleaner::new(),
                    };
                    let handover = capture.hand_over(live, start, workdir);
                    return Ok(RunEnd::TimedOut(Box::new(handover)));
                }
                stop = Some(Stop::Timeout);
            },
            () = aux, if aux_deadline.is_some() => {
                if stopper.is_some() {
                    break; // the killed tree did not let go of the pipes in time
                }
                stop = Some(Stop::HeldOutput);
            },
            () = progress, if on_progress.is_some() => {
                next_progress = Instant::now() + progress_every;
                if let Some(report) = on_progress.as_deref_mut() {
                    report(Progress { elapsed: start.elapsed(), line: capture.progress_line() });
                }
            },
        }
        if let Some(reason) = stop
            && stopper.is_none()
        {
            let grace = if reason == Stop::HeldOutput {
                CANCEL_GRACE_MS
            } else {
                KILL_GRACE_MS
            };
            stopper = Some(start_stop(pid, &marker, grace));
            aux_deadline =
                Some(Instant::now() + Duration::from_millis(grace + KILL_WAIT_MS + DRAIN_MS));
            if reason == Stop::OverCapture {
                // Nothing more will be kept; stop reading so the tree sees EPIPE at once.
                out = None;
                err = None;
            }
        }
    }

    let (strays, stopped) = settle(pid, &marker, stopper, stop == Some(Stop::HeldOutput)).await;
    let status = match (stop, exit) {
        (Some(Stop::Timeout), _) => RunStatus::Timeout,
        (Some(Stop::OverCapture), _) => RunStatus::Killed,
        (_, Some(e)) if e.success() => RunStatus::Success,
        _ => RunStatus::Failed,
    };
    let mut outcome = finish(pid, status, exit, start, capture);
    outcome.strays = strays;
    outcome.stopped = stopped;
    Ok(RunEnd::Finished(outcome))
}

/// After a run's read loop, on every path (pipe and PTY): a stop that was started is confirmed
/// (bounded, for a process stuck in the kernel); otherwise anything the command left running
/// is stopped now. `held_output`: the stop was for processes that kept the output open.
pub(crate) async fn settle(
    pid: i32,
    marker: &str,
    stopper: Option<JoinHandle<Terminated>>,
    held_output: bool,
) -> (Option<Strays>, Option<Terminated>) {
    if let Some(handle) = stopper {
        // The output is closed (or the wait bound passed): the tree is dead or dying, so the
        // stopper is about to confirm it.
        let wait = Duration::from_millis(KILL_WAIT_MS);
        let report = tokio::time::timeout(wait, handle)
            .await
            .ok()
            .and_then(Result::ok);
        let strays = held_output.then(|| Strays::HeldOutput(report.map_or(1, |r| r.found.max(1))));
        return (strays, Some(report.unwrap_or_default()));
    }
    if tree::has_survivors(pid, marker) {
        let report = tree::terminate(pid, marker, Duration::from_millis(CANCEL_GRACE_MS)).await;
        if report.found > 0 {
            return (Some(Strays::Lingering(report.found)), Some(report));
        }
    }
    (None, None)
}

fn finish(
    pid: i32,
    status: RunStatus,
    exit: Option<Exit>,
    start: Instant,
    capture: Capture,
) -> RunOutcome {
    let Captured {
        stdout,
        stderr,
        merged,
        captured,
    } = capture.finish();
    RunOutcome {
        pid,
        status,
        exit,
        duration: start.elapsed(),
        stdout,
        stderr,
        output: merged.output,
        output_bytes: merged.bytes,
        output_lines: merged.lines,
        spill: merged.spill,
        captured_bytes: captured,
        strays: None,
        stopped: None,
    }
}

/// Writes `data` to the child's stdin in the background, then closes it (EOF). A process that
/// exits without reading it is not an error.
fn feed_stdin(fd: OwnedFd, data: Vec<u8>) -> io::Result<()> {
    let mut sender = pipe::Sender::from_owned_fd(fd)?;
    tokio::spawn(async move {
        let _ = sender.write_all(&data).await;
    });
    Ok(())
}
