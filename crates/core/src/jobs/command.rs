//! Background commands (docs/BEHAVIOUR.md §3): `terminal({…, background: true})`, and foreground commands
//! moved into the background when their timeout is reached (`on_timeout: "background"`).
//!
//! A background command is started through the one spawn seam with the caller's `SpawnSpec`
//! (same sandbox, same marker scheme), registered in the session's [`JobTable`] under
//! the id it was reserved (so its spill file can be named after it), and then driven by one
//! task that owns its pipes and exit watch until the whole tree is gone.
//!
//! Why the driver never stops reading: a process blocked on a full pipe looks hung, and an
//! endless flood must not hold the server's memory either. So the pipes are drained at full
//! speed forever; the ring keeps the newest 256 KB and the spill file the first
//! [`SPILL_MAX_BYTES`](crate::jobs::ring::SPILL_MAX_BYTES). The one-shot 10 MB over-capture kill
//! does not apply: a background job is expected to be long and loud (a dev server, a watcher).
//!
//! A job's life is its leader's: once the leader exited and its output is drained, anything it
//! left running is stopped (as in the foreground), counted in [`Job::leftovers`], and only then
//! is the job's state set, so `task_wait` returns with the tree gone and the output complete.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::clean::Cleaner;
use crate::engine::{self, Drive, DriveEnd, Ended, NoWatch, Sink, Started, Stream};
use crate::handover::{Handover, Live};
use crate::jobs::ring::OutputRing;
use crate::jobs::table::{
    CapReached, Job, JobControl, JobKind, JobState, JobTable, NewJob, StopFuture,
};
use crate::limits::{DRAIN_MS, KILL_GRACE_MS, KILL_WAIT_MS};
use crate::outcome::Strays;
use crate::reaper::Exit;
use crate::spawn::SpawnSpec;
use crate::spill::SpillStore;
use crate::tree::{self, Terminated};

/// Pipe capacity asked for a job's output, and the size of one read. A flood then costs one
/// wake-up and one read per quarter megabyte instead of per 64 KB (the default pipe), which is
/// most of the driver's overhead; the kernel may grant less (`/proc/sys/fs/pipe-max-size`).
const JOB_PIPE_BYTES: usize = 256 * 1024;

/// A background command to start.
pub struct CommandStart {
    pub spec: SpawnSpec,
    /// Fed to the process, then EOF. `None` means stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// What the model asked to run, shown by `task_list`.
    pub label: String,
}

/// Why a background command did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Cap(#[from] CapReached),
    #[error("cannot start the command: {0}")]
    Spawn(#[from] io::Error),
}

/// Starts `start` as a background job of `table`; its output spills to `<id>.log` in `spill`.
pub fn start(
    table: &JobTable,
    start: CommandStart,
    spill: Option<Arc<SpillStore>>,
) -> Result<Arc<Job>, StartError> {
    let CommandStart { spec, stdin, label } = start;
    // Reserved first, so a refusal spawns nothing and the id is known for the spill name.
    let reserved = table.reserve(JobKind::Command)?;
    let Started {
        pid,
        exit_watch,
        source,
        marker,
        workdir,
        confined,
    } = engine::start_on_pipes(spec, stdin, Some(JOB_PIPE_BYTES))?;
    let live = Live::new(pid, confined, marker, source, exit_watch, None);
    let id = reserved.id().to_owned();
    let output = Arc::new(OutputRing::new(spill.map(|store| (store, id))));
    let (control, shared) = CommandControl::new(pid, live.marker.clone());
    let job = reserved.register(NewJob {
        kind: JobKind::Command,
        label,
        workdir,
        pid,
        output,
        control: Box::new(control),
        confined,
    });
    crate::drivers::spawn(drive(job.clone(), live, shared));
    Ok(job)
}

/// Moves a foreground command whose timeout was reached into `table`. On refusal (the session
/// already runs the maximum) the handover comes back so the caller can stop it instead.
pub fn adopt(
    table: &JobTable,
    handover: Handover,
    label: String,
) -> Result<Arc<Job>, (Box<Handover>, CapReached)> {
    let reserved = match table.reserve(JobKind::Command) {
        Ok(r) => r,
        Err(cap) => return Err((Box::new(handover), cap)),
    };
    let Handover {
        mut live,
        ring,
        spill,
        started,
        workdir,
        ..
    } = handover;
    // The job's view copy is a new one: it starts at the job's first escape, which the call's
    // cleaners may have met already for the call's.
    live.out_cleaner.watch_for_escape_again();
    live.err_cleaner.watch_for_escape_again();
    let id = reserved.id().to_owned();
    spill.apply(&ring, id);
    let pid = live.pid;
    let (control, shared) = CommandControl::new(pid, live.marker.clone());
    let job = reserved.register_since(
        NewJob {
            kind: JobKind::Command,
            label,
            workdir,
            pid,
            output: Arc::new(ring),
            control: Box::new(control),
            confined: live.confined,
        },
        started,
    );
    crate::drivers::spawn(drive(job.clone(), live, shared));
    Ok(job)
}

/// Stops a handed-over command that could not be adopted (the foreground timeout path).
pub async fn abandon(handover: Box<Handover>) -> Terminated {
    let live = handover.live;
    let report =
        tree::terminate(live.pid, &live.marker, Duration::from_millis(KILL_GRACE_MS)).await;
    live.owner.disarm();
    // The rest of `live` goes here: dropping the exit watch hands the zombie to the reaper.
    report
}

/// What the driver and the control share.
struct Shared {
    /// Set by `task_stop` and shutdown: the end is then "stopped", not an exit of its own.
    stopping: AtomicBool,
    /// Becomes true when the driver has finished (output closed, state set).
    done: watch::Sender<bool>,
}

struct CommandControl {
    pid: i32,
    marker: String,
    shared: Arc<Shared>,
}

impl CommandControl {
    fn new(pid: i32, marker: String) -> (Self, Arc<Shared>) {
        let (done, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            done,
        });
        let control = Self {
            pid,
            marker,
            shared: shared.clone(),
        };
        (control, shared)
    }
}

impl JobControl for CommandControl {
    fn stop(&self) -> StopFuture {
        let shared = self.shared.clone();
        shared.stopping.store(true, Ordering::SeqCst);
        // Pins the leader now, before the driver can reap it: the stop is then certain. It runs
        // to its end even if this future is dropped: the driver leaves the tree's end to it.
        let stopping =
            tree::terminate_detached(self.pid, &self.marker, Duration::from_millis(KILL_GRACE_MS));
        Box::pin(async move {
            let _ = stopping.await;
            // The driver now sees the pipes close; let it record the end and flush the ring.
            // Bounded, for a process stuck in uninterruptible sleep holding a pipe.
            let mut done = shared.done.subscribe();
            let wait = Duration::from_millis(KILL_WAIT_MS + DRAIN_MS);
            let _ = tokio::time::timeout(wait, done.wait_for(|d| *d)).await;
        })
    }
}

/// The job's ring as a sink: each stream through its own cleaner, so a partial line waits for
/// its newline. It never fills: the ring keeps the newest bytes and the spill file the first.
struct RingSink<'a> {
    out_cleaner: &'a mut Cleaner,
    err_cleaner: &'a mut Cleaner,
    ring: &'a OutputRing,
    view: &'a crate::view_tap::ViewTap,
}

impl Sink for RingSink<'_> {
    fn ingest(&mut self, stream: Stream, bytes: &[u8]) -> bool {
        let ring = self.ring;
        let (cleaner, other) = match stream {
            Stream::Err => (&mut *self.err_cleaner, &*self.out_cleaner),
            Stream::Out | Stream::Terminal => (&mut *self.out_cleaner, &*self.err_cleaner),
        };
        let streams = crate::view_tap::Streams {
            err: stream == Stream::Err,
            cleaner,
            other,
            plain: Some(ring),
        };
        self.view
            .through(streams, bytes, &mut |text| ring.push(text));
        true
    }
}

/// Owns a running command until its whole tree is gone.
async fn drive(job: Arc<Job>, live: Live, shared: Arc<Shared>) {
    let ring = job.output.clone();
    let Live {
        pid,
        marker,
        mut source,
        mut exit_watch,
        exit,
        mut out_cleaner,
        mut err_cleaner,
        owner,
        confined: _,
    } = live;
    source.read_in(JOB_PIPE_BYTES);
    let mut sink = RingSink {
        out_cleaner: &mut out_cleaner,
        err_cleaner: &mut err_cleaner,
        ring: &ring,
        view: &job.view,
    };
    let run = Drive {
        pid,
        marker: &marker,
        exit_watch: &mut exit_watch,
        exit,
        deadline: None,
        hand_over: false,
        outside_stop: Some(&shared.stopping),
        take_turns: true,
    };
    let never = std::future::pending::<()>();
    let ended = engine::drive(run, &mut source, &mut sink, &mut NoWatch, never).await;
    owner.disarm();
    let ended = match ended {
        DriveEnd::Ended(ended) => ended,
        // Neither can happen without a deadline or a cancellation.
        DriveEnd::Cancelled { exit, .. } | DriveEnd::TimedOut { exit } => Ended {
            exit,
            stop: None,
            strays: None,
            stopped: None,
            by_outside_stop: true,
        },
    };
    // The leader is gone and so is what it started: nothing it started outlives the job.
    if let Some(Strays::HeldOutput(n) | Strays::Lingering(n)) = ended.strays {
        job.set_leftovers(n);
    }
    ring.push(out_cleaner.finish());
    ring.push(err_cleaner.finish());
    job.view.finish();
    let state = match ended.exit {
        _ if ended.by_outside_stop => JobState::Stopped,
        Some(Exit::Code(code)) => JobState::Exited(code),
        Some(Exit::Signal(sig)) => JobState::Signalled(sig),
        None => JobState::Stopped,
    };
    // Closed first (the spill file complete and its fd released), so a job reported ended has
    // all its output in place.
    ring.close();
    if job.state().is_running() {
        job.set_state(state);
    }
    shared.done.send_replace(true);
}
