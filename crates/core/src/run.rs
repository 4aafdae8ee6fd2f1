//! The pipe path of `terminal` (docs/BEHAVIOUR.md §2): run one process to its end, capture, shape, clean up.
//!
//! A thin driver over [`crate::engine`]: the loop reads stdout and stderr as they arrive and
//! stops the tree when the timeout, the capture cap or a process left holding the output says
//! so; this file is the capture (each stream cleaned and shaped, the merged output with its
//! lazy spill) and the progress reports. Its theme is *leave no orphan*: whatever ends the call,
//! everything the command started is stopped before the call returns (or, on cancellation, by
//! a task that outlives it), and the call itself returns within a bounded time even if a
//! process ignores SIGKILL.
//!
//! One exception, asked for by the caller: with [`run_until`] and `hand_over: true`, reaching
//! the timeout stops nothing. The same live source, exit watch, per-stream cleaners and a ring
//! already holding the captured text go to [`Handover`], and the job table adopts the command
//! as a background job ([`crate::jobs::command::adopt`]), so no byte is lost or doubled.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::clean::Cleaner;
use crate::engine::{self, Drive, DriveEnd, Now, Sink, Started, Stop, Stream, Watch};
pub use crate::handover::Handover;
use crate::handover::{HandoverSpill, Live};
use crate::jobs::ring::OutputRing;
use crate::limits::{CAPTURE_LIMIT_BYTES, PROGRESS_INTERVAL_MS, PROGRESS_LINE_CHARS};
use crate::model_output::{Finished, LazySpill, ModelOutput};
pub use crate::outcome::{Progress, RunOutcome, RunStatus, Spill, Strays, Whole};
use crate::reaper::Exit;
use crate::shape::{Shaped, Shaper};
use crate::spawn::SpawnSpec;
use crate::spill::SpillStore;

/// One call to run.
pub struct RunRequest {
    pub spec: SpawnSpec,
    /// Fed to the process, then EOF. `None` means stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Where the full output goes if it outgrows the inline limit: the store and a file name.
    pub spill: Option<(Arc<SpillStore>, String)>,
    /// Also keep each stream's whole cleaned text (up to the capture cap), for a parser that
    /// must read all of it rather than the head and tail the model gets.
    pub keep_whole: bool,
    /// The web view's copy of the output (`crate::view_tap`).
    pub view: Option<Arc<crate::view_tap::ViewTap>>,
}

/// How a [`run_until`] call ended.
// Finished is the path of every call and stays unboxed; the rare hand-over is the boxed one.
#[allow(clippy::large_enum_variant)]
pub enum RunEnd {
    Finished(RunOutcome),
    /// The timeout was reached and the command is still running, handed over intact.
    TimedOut(Box<Handover>),
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
    /// Only when asked ([`RunRequest::keep_whole`]): stdout and stderr, cleaned, whole.
    whole: Option<Whole>,
    view: Option<Arc<crate::view_tap::ViewTap>>,
}

impl Capture {
    fn new(spill: Option<(Arc<SpillStore>, String)>, hand_over: bool, keep_whole: bool) -> Self {
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
            whole: keep_whole.then(Whole::default),
            view: None,
        }
    }

    /// Takes raw bytes from one stream; returns false once the capture cap is reached.
    fn take(&mut self, stream: Stream, bytes: &[u8]) -> bool {
        let room = CAPTURE_LIMIT_BYTES.saturating_sub(self.captured);
        let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        self.captured += take as u64;
        self.last_stream = stream;
        let (cleaner, other, shaper) = match stream {
            Stream::Err => (&mut self.err_cleaner, &self.out_cleaner, &mut self.stderr),
            Stream::Out | Stream::Terminal => {
                (&mut self.out_cleaner, &self.err_cleaner, &mut self.stdout)
            }
        };
        // Each piece of text the cleaner completes goes everywhere it is kept as it comes: whole
        // lines that pass through unchanged are slices of `bytes`, never gathered into a buffer
        // first (a flood's text was copied once more for nothing).
        let (whole, merged, ring, last_line) = (
            &mut self.whole,
            &mut self.merged,
            &self.ring,
            &mut self.last_line,
        );
        let mut keep = |text: &str| {
            shaper.push(text);
            if let Some(whole) = whole {
                whole.stream(stream).push_str(text);
            }
            // Pieces end at line ends, so the last non-blank line of the last piece that has
            // one is the chunk's (but for a line past `PENDING_LINE_MAX_BYTES`, which comes in
            // pieces: its last piece is shown).
            if let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) {
                last_line.clear();
                last_line.push_str(line);
            }
            merged.push(text);
            if let Some(ring) = ring {
                ring.push(text);
            }
        };
        match &self.view {
            None => cleaner.feed_into(&bytes[..take], &mut keep),
            Some(view) => {
                let streams = crate::view_tap::Streams {
                    err: stream == Stream::Err,
                    cleaner,
                    other,
                    plain: None,
                };
                view.through(streams, &bytes[..take], &mut keep);
            }
        }
        take == bytes.len() && self.captured < CAPTURE_LIMIT_BYTES
    }

    fn progress_line(&self) -> String {
        let cleaner = match self.last_stream {
            Stream::Err => &self.err_cleaner,
            Stream::Out | Stream::Terminal => &self.out_cleaner,
        };
        let pending = cleaner.pending_line();
        let pending = pending.trim();
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
        if let Some(view) = &self.view {
            view.finish();
        }
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
        if let Some(view) = &self.view {
            view.plain(&tail);
        }
        self.stdout.push(&tail);
        self.merged.push(&tail);
        if let Some(whole) = &mut self.whole {
            whole.stdout.push_str(&tail);
        }
        let tail = self.err_cleaner.finish().to_owned();
        if let Some(view) = &self.view {
            view.plain(&tail);
            view.finish();
        }
        self.stderr.push(&tail);
        self.merged.push(&tail);
        if let Some(whole) = &mut self.whole {
            whole.stderr.push_str(&tail);
        }
        Captured {
            whole: self.whole,
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
    pub whole: Option<Whole>,
    pub stdout: Shaped,
    pub stderr: Shaped,
    pub merged: Finished,
    pub captured: u64,
}

impl Sink for Capture {
    fn ingest(&mut self, stream: Stream, bytes: &[u8]) -> bool {
        self.take(stream, bytes)
    }
}

/// Reports progress every [`PROGRESS_INTERVAL_MS`] while the command runs.
struct ProgressWatch<'r> {
    report: Option<&'r mut (dyn FnMut(Progress) + Send)>,
    start: Instant,
    next_at: Instant,
}

impl Watch<Capture> for ProgressWatch<'_> {
    fn next(&self, _: &Now) -> Option<Instant> {
        self.report.is_some().then_some(self.next_at)
    }

    fn check(&mut self, capture: &mut Capture, _: &Now) -> Option<Stop> {
        self.next_at = Instant::now() + Duration::from_millis(PROGRESS_INTERVAL_MS);
        if let Some(report) = self.report.as_deref_mut() {
            report(Progress {
                elapsed: self.start.elapsed(),
                line: capture.progress_line(),
            });
        }
        None
    }
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
    on_progress: Option<&mut (dyn FnMut(Progress) + Send)>,
) -> io::Result<RunEnd> {
    let RunRequest {
        spec,
        stdin,
        timeout,
        spill,
        keep_whole,
        view,
    } = req;
    let start = Instant::now();
    let Started {
        pid,
        mut exit_watch,
        mut source,
        marker,
        workdir,
        confined,
    } = engine::start_on_pipes_async(spec, stdin, None).await?;
    let mut capture = Capture::new(spill, hand_over, keep_whole);
    capture.view = view;
    let mut watch = ProgressWatch {
        report: on_progress,
        start,
        next_at: start + Duration::from_millis(PROGRESS_INTERVAL_MS),
    };
    let run = Drive::one_shot(pid, &marker, &mut exit_watch, start + timeout, hand_over);
    let outcome = match engine::drive(run, &mut source, &mut capture, &mut watch, cancel).await {
        DriveEnd::Ended(ended) => {
            let mut outcome = finish(pid, ended.status(), ended.exit, start, capture);
            outcome.strays = ended.strays;
            outcome.stopped = ended.stopped;
            outcome
        }
        DriveEnd::Cancelled { exit, stopped } => {
            let mut outcome = finish(pid, RunStatus::Cancelled, exit, start, capture);
            outcome.stopped = Some(stopped);
            outcome
        }
        DriveEnd::TimedOut { exit } => {
            let live = Live::new(pid, confined, marker, source, exit_watch, exit);
            let handover = capture.hand_over(live, start, workdir);
            return Ok(RunEnd::TimedOut(Box::new(handover)));
        }
    };
    Ok(RunEnd::Finished(outcome))
}

fn finish(
    pid: i32,
    status: RunStatus,
    exit: Option<Exit>,
    start: Instant,
    capture: Capture,
) -> RunOutcome {
    let Captured {
        whole,
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
        whole,
    }
}
