//! A running command changing owner: the foreground run that reached its timeout hands the
//! same live process, its pipes, its partial lines and its spill file, to the job table, which
//! drives it from there with nothing lost or counted twice (`on_timeout: "background"`).
//!
//! Both owners ([`crate::run`] and [`crate::jobs::command`]) depend on this module and not on
//! each other.

use std::path::PathBuf;
use std::sync::Arc;

use crate::clean::Cleaner;
use crate::engine::Source;
use crate::jobs::ring::OutputRing;
use crate::reaper::Exit;
use crate::shape::Shaped;
use crate::spill::{SpillFile, SpillStore};
use crate::tree::StopOnDrop;

/// The live parts of a running command: what the driver owns. Dropped with its tree still
/// running (a hand-over nobody took), it stops the tree (`owner`).
pub(crate) struct Live {
    /// Stops the tree if this is dropped before a driver has seen to its end. First, so it is
    /// dropped first: its stop pins the leader while the exit watch still holds it unreaped.
    pub(crate) owner: StopOnDrop,
    pub(crate) pid: i32,
    /// Spawned confined (the sandbox applies).
    pub(crate) confined: bool,
    pub(crate) marker: String,
    /// The output pipes, read from where the last owner stopped.
    pub(crate) source: Source,
    pub(crate) exit_watch: crate::reaper::ExitWatch,
    /// Set when the leader already exited (and was reaped) before the driver took over.
    pub(crate) exit: Option<Exit>,
    /// Per-stream cleaners: a partial line in either stays pending until its newline.
    pub(crate) out_cleaner: Cleaner,
    pub(crate) err_cleaner: Cleaner,
}

impl Live {
    /// A command as its first owner holds it: no partial line in either stream yet.
    pub(crate) fn new(
        pid: i32,
        confined: bool,
        marker: String,
        source: Source,
        exit_watch: crate::reaper::ExitWatch,
        exit: Option<Exit>,
    ) -> Self {
        Live {
            owner: StopOnDrop::new(pid, &marker),
            pid,
            confined,
            marker,
            source,
            exit_watch,
            exit,
            out_cleaner: Cleaner::new(),
            err_cleaner: Cleaner::new(),
        }
    }
}

/// A command whose timeout was reached, with everything needed to keep it running elsewhere.
pub struct Handover {
    pub pid: i32,
    /// When the command started.
    pub started: std::time::Instant,
    pub workdir: PathBuf,
    /// Merged output captured so far (complete lines; a partial line stays with the cleaner).
    pub output: Shaped,
    pub stdout: Shaped,
    pub stderr: Shaped,
    pub output_bytes: u64,
    pub output_lines: u64,
    /// The spill file of the capture, when it had started one (it keeps growing).
    pub spill_path: Option<PathBuf>,
    /// Byte cursor just after `output`: where a reader of the job continues.
    pub cursor: u64,
    pub(crate) live: Live,
    /// The merged text so far (its newest 256 KB), with absolute cursors from byte 0.
    pub(crate) ring: OutputRing,
    pub(crate) spill: HandoverSpill,
}

/// What becomes of the capture's spill when the command is handed over.
pub(crate) enum HandoverSpill {
    Off,
    /// Nothing spilled yet: the job's ring spills lazily, to a file named after the job.
    Lazy(Arc<SpillStore>),
    /// The capture's file holds every byte so far: the job keeps writing it.
    Continue(SpillFile, u64),
    Failed(String),
}

impl HandoverSpill {
    pub(crate) fn apply(self, ring: &OutputRing, job_id: String) {
        match self {
            HandoverSpill::Off => {}
            HandoverSpill::Lazy(store) => ring.spill_to(Some((store, job_id))),
            HandoverSpill::Continue(file, bytes) => ring.continue_spill(file, bytes),
            HandoverSpill::Failed(reason) => ring.spill_failed(reason),
        }
    }
}
