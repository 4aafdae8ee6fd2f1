//! Long-lived jobs: the output ring and the one job table (docs/BEHAVIOUR.md §3, §4).

pub mod command;
pub mod ring;
pub mod table;
pub(crate) mod tail;

pub use ring::{OutputRing, READ_MAX_BYTES, RING_BYTES, Slice};
pub use table::{
    CapReached, ENDED_KEPT, HANDLE_BITS, Ids, Job, JobControl, JobKind, JobState, JobTable, NewJob,
    Reserved, StopCause, StopFuture,
};
