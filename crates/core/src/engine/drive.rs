//! The loop that drives one command from start to the end of its tree.
//!
//! It owns the facts every path shares: a chunk goes to the sink as it arrives; the leader's exit
//! starts a short drain; a timeout, a sink that is full, a process left holding the output, or a
//! watch's verdict (a prompt nobody will answer) starts stopping the whole tree, with the grace
//! that reason gets; the caller's cancellation stops the tree at once; and after the loop,
//! whatever the command left running is stopped and counted. Callers differ only in their
//! [`Sink`](super::Sink), their [`Watch`] and their [`Drive`] settings.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use super::Sink;
use super::source::{Read, Source};
use crate::limits::{CANCEL_GRACE_MS, DRAIN_MS, KILL_GRACE_MS, KILL_WAIT_MS};
use crate::outcome::{RunStatus, Strays};
use crate::reaper::{Exit, ExitWatch};
use crate::tree::{self, Terminated};

/// Why the loop started stopping the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Timeout,
    /// The sink took all it will take (the capture cap).
    OverCapture,
    /// The leader exited and something it started still held the output past the drain time.
    HeldOutput,
    /// A watch found the command waiting for input nobody will type.
    AwaitingInput,
}

impl Stop {
    /// How long the tree gets between SIGTERM and SIGKILL: a slow command gets a chance to
    /// clean up; leftovers and a prompt are stopped quickly.
    fn grace_ms(self) -> u64 {
        match self {
            Stop::HeldOutput | Stop::AwaitingInput => CANCEL_GRACE_MS,
            Stop::Timeout | Stop::OverCapture => KILL_GRACE_MS,
        }
    }
}

/// The loop's state, as a [`Watch`] sees it.
pub(crate) struct Now {
    pub last_output: Instant,
    /// The leader has exited.
    pub exited: bool,
    /// The tree is being stopped.
    pub stopping: bool,
}

/// A periodic check a path adds to the loop: progress reports, a probe for a prompt.
pub(crate) trait Watch<S> {
    /// When to check next; `None`: not at this point.
    fn next(&self, now: &Now) -> Option<Instant>;
    /// The check; `Some` starts stopping the tree for that reason.
    fn check(&mut self, sink: &mut S, now: &Now) -> Option<Stop>;
}

/// No periodic check.
pub(crate) struct NoWatch;

impl<S> Watch<S> for NoWatch {
    fn next(&self, _: &Now) -> Option<Instant> {
        None
    }
    fn check(&mut self, _: &mut S, _: &Now) -> Option<Stop> {
        None
    }
}

/// One command to drive.
pub(crate) struct Drive<'a> {
    pub pid: i32,
    pub marker: &'a str,
    pub exit_watch: &'a mut ExitWatch,
    /// The leader's exit, when it came before this loop (a command changing owner).
    pub exit: Option<Exit>,
    /// When the command's time is up; `None`: never.
    pub deadline: Option<Instant>,
    /// At the deadline, stop nothing and return [`DriveEnd::TimedOut`].
    pub hand_over: bool,
    /// Set by a stop from outside the loop (`task_stop`, shutdown), which then owns the tree's end.
    pub outside_stop: Option<&'a AtomicBool>,
    /// Yield after every chunk: loops that share the drivers' thread take turns.
    pub take_turns: bool,
}

impl<'a> Drive<'a> {
    /// A one-shot call: a command started here, with a deadline, on the request runtime.
    pub(crate) fn one_shot(
        pid: i32,
        marker: &'a str,
        exit_watch: &'a mut ExitWatch,
        deadline: Instant,
        hand_over: bool,
    ) -> Self {
        Drive {
            pid,
            marker,
            exit_watch,
            exit: None,
            deadline: Some(deadline),
            hand_over,
            outside_stop: None,
            take_turns: false,
        }
    }
}

/// How the loop ended.
pub(crate) enum DriveEnd {
    Ended(Ended),
    /// The caller gave up; the tree was stopped first.
    Cancelled {
        exit: Option<Exit>,
        stopped: Terminated,
    },
    /// The deadline came with `hand_over`: nothing was stopped, the source is as it was.
    TimedOut {
        exit: Option<Exit>,
    },
}

/// A command whose tree is gone (or could not be stopped within the bounds).
pub(crate) struct Ended {
    /// `None` when the leader could not even be reaped in time (uninterruptible sleep).
    pub exit: Option<Exit>,
    pub stop: Option<Stop>,
    pub strays: Option<Strays>,
    /// Set when the tree had to be stopped.
    pub stopped: Option<Terminated>,
    /// The leader's exit came after an outside stop began: it was stopped, not done.
    pub by_outside_stop: bool,
}

impl Ended {
    /// A command that exited 0 succeeded, even when a process it left behind held the output
    /// and was stopped (a note says so); one stopped at a prompt did not finish.
    pub(crate) fn status(&self) -> RunStatus {
        match (self.stop, self.exit) {
            (Some(Stop::Timeout), _) => RunStatus::Timeout,
            (Some(Stop::OverCapture), _) => RunStatus::Killed,
            (stop, Some(e)) if e.success() && stop != Some(Stop::AwaitingInput) => {
                RunStatus::Success
            }
            _ => RunStatus::Failed,
        }
    }
}

/// Drives `source` into `sink` until the command and its output are done (see the module
/// comment). `cancel` resolving means the caller gave up.
pub(crate) async fn drive<S: Sink, W: Watch<S>>(
    run: Drive<'_>,
    source: &mut Source,
    sink: &mut S,
    watch: &mut W,
    cancel: impl Future<Output = ()>,
) -> DriveEnd {
    let Drive {
        pid,
        marker,
        exit_watch,
        mut exit,
        deadline,
        hand_over,
        outside_stop,
        take_turns,
    } = run;
    // Until this returns, dropping it (its caller gave up without a cancellation) stops the tree.
    let owner = tree::StopOnDrop::new(pid, marker);
    let stopped_outside = || outside_stop.is_some_and(|s| s.load(Ordering::SeqCst));
    let mut by_outside_stop = false;
    let mut stopping = Stopping {
        reason: None,
        stopper: None,
        aux_deadline: exit.map(|_| Instant::now() + Duration::from_millis(DRAIN_MS)),
        waiting_for_outside: false,
    };
    let mut last_output = Instant::now();
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let time_up = sleep_until(deadline.unwrap_or(far));
    tokio::pin!(cancel, time_up);

    loop {
        if exit.is_some() && !source.is_open() {
            break;
        }
        let now = Now {
            last_output,
            exited: exit.is_some(),
            stopping: stopping.reason.is_some(),
        };
        let check_at = watch.next(&now);
        tokio::select! {
            read = source.read() => {
                if let Read::Chunk(stream) = read {
                    last_output = Instant::now();
                    if !sink.ingest(stream, source.bytes(stream)) {
                        stopping.ask(Stop::OverCapture);
                    }
                    if take_turns {
                        crate::drivers::fair().await;
                    }
                }
            },
            status = exit_watch.wait(), if exit.is_none() => {
                // waitid cannot fail for our own live child; if it did, treat it as killed.
                exit = Some(status.unwrap_or(Exit::Signal(libc::SIGKILL)));
                by_outside_stop = stopped_outside();
                stopping.leader_exited();
            },
            () = &mut cancel => {
                // Confirmed before the result says so ("the process tree was stopped").
                let grace = Duration::from_millis(CANCEL_GRACE_MS);
                let stopped = tree::terminate(pid, marker, grace).await;
                owner.disarm();
                return DriveEnd::Cancelled { exit, stopped };
            },
            () = &mut time_up, if deadline.is_some() && stopping.reason.is_none() => {
                if hand_over {
                    // The command changes owner whole, its stop on drop with it.
                    owner.disarm();
                    return DriveEnd::TimedOut { exit };
                }
                stopping.reason = Some(Stop::Timeout);
            },
            () = sleep_until(stopping.aux_deadline.unwrap_or(far)), if stopping.aux_deadline.is_some() => {
                if stopping.aux_deadline_passed(stopped_outside).is_break() {
                    break;
                }
            },
            () = sleep_until(check_at.unwrap_or(far)), if check_at.is_some() => {
                if let Some(reason) = watch.check(sink, &now) {
                    stopping.ask(reason);
                }
            },
        }
        stopping.start_if_asked(pid, marker, source);
    }
    source.hang_up();
    let held_output = stopping.reason == Some(Stop::HeldOutput);
    let (strays, stopped) = if stopped_outside() && stopping.stopper.is_none() {
        (None, None)
    } else {
        settle(pid, marker, stopping.stopper, held_output).await
    };
    owner.disarm();
    DriveEnd::Ended(Ended {
        exit,
        stop: stopping.reason,
        strays,
        stopped,
        by_outside_stop,
    })
}

/// What the loop knows of stopping the tree.
struct Stopping {
    /// Why the loop started stopping the tree; the first reason is kept.
    reason: Option<Stop>,
    /// The stop under way, started once there is a reason.
    stopper: Option<JoinHandle<Terminated>>,
    /// The next deadline that is not the command's own: the drain time after the exit, then the
    /// bound on waiting for a stopped tree to let go of the output.
    aux_deadline: Option<Instant>,
    /// An outside stop owns the tree's end: after the drain, the loop only waits (bounded).
    waiting_for_outside: bool,
}

impl Stopping {
    /// Stops the tree for `reason`, unless there is a reason already.
    fn ask(&mut self, reason: Stop) {
        if self.reason.is_none() {
            self.reason = Some(reason);
        }
    }

    /// The leader exited: unless the tree is being stopped, what it left holding the output
    /// gets the drain time.
    fn leader_exited(&mut self) {
        if self.reason.is_none() {
            self.aux_deadline = Some(Instant::now() + Duration::from_millis(DRAIN_MS));
        }
    }

    /// The deadline that is not the command's own has passed. `Break`: the loop ends (the
    /// stopped tree did not let go of the output in time). Otherwise the drain is over: an
    /// outside stop is waited for (bounded), or what holds the output is stopped.
    fn aux_deadline_passed(&mut self, stopped_outside: impl Fn() -> bool) -> ControlFlow<()> {
        if self.stopper.is_some() || self.waiting_for_outside {
            return ControlFlow::Break(());
        }
        if stopped_outside() {
            self.waiting_for_outside = true;
            self.aux_deadline = Some(Instant::now() + Duration::from_millis(KILL_WAIT_MS));
        } else {
            self.reason = Some(Stop::HeldOutput);
        }
        ControlFlow::Continue(())
    }

    /// Starts stopping the tree, with the grace its reason gets, once there is a reason and
    /// no stop under way yet.
    fn start_if_asked(&mut self, pid: i32, marker: &str, source: &mut Source) {
        if let Some(reason) = self.reason
            && self.stopper.is_none()
        {
            let grace = reason.grace_ms();
            self.stopper = Some(tree::terminate_detached(
                pid,
                marker,
                Duration::from_millis(grace),
            ));
            self.aux_deadline =
                Some(Instant::now() + Duration::from_millis(grace + KILL_WAIT_MS + DRAIN_MS));
            if reason == Stop::OverCapture {
                // Nothing more will be kept; stop reading so the tree sees EPIPE at once.
                source.close();
            }
        }
    }
}

/// After the loop: a stop that was started is confirmed (bounded, for a process stuck in the
/// kernel); otherwise anything the command left running is stopped now. `held_output`: the
/// stop was for processes that kept the output open.
async fn settle(
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

/// Reads `source` into `sink` until the source ends, the sink takes no more, or `until`
/// resolves, taking turns after every chunk: the loop of a reader with no command's life to
/// watch (a shell's terminal, whose commands are driven by its sends).
pub(crate) async fn pump<S: Sink>(
    source: &mut Source,
    sink: &mut S,
    until: impl Future<Output = ()>,
) {
    tokio::pin!(until);
    while source.is_open() {
        tokio::select! {
            read = source.read() => {
                if let Read::Chunk(stream) = read {
                    if !sink.ingest(stream, source.bytes(stream)) {
                        return;
                    }
                    crate::drivers::fair().await;
                }
            },
            () = &mut until => return,
        }
    }
}
