//! The engine: one loop drives every command agentty starts, whatever the path.
//!
//! A running command is a [`Source`] (its pipes, or its terminal's master side), an exit watch
//! and a process tree. [`drive`] reads the source, hands each chunk to a [`Sink`], and decides
//! when and why the tree is stopped; the paths are thin drivers that choose a sink, a [`Watch`]
//! and the loop's settings:
//!
//! | path | sink | watch | settings |
//! |---|---|---|---|
//! | one-shot, pipes (`run.rs`) | the model's capture (+ a ring, if it may be handed over) | progress | deadline, hand-over |
//! | one-shot, terminal (`pty/once.rs`) | the model's capture | a prompt nobody answers | deadline |
//! | background job (`jobs/command.rs`) | the job's ring | none | outside stop, take turns |
//! | shell (`pty/shell/mod.rs`), through [`pump`] | ring, screen, send capture | — | until closed |
//!
//! Both pipe paths start their command through [`start_on_pipes`] (stdin fed or `/dev/null`,
//! the pipes kept on a thread of their own: `pipe_thread.rs`, whose threads `pipe_pool.rs`
//! keeps). A shell (`pty/shell/`) has no deadline and no end of its
//! own (its commands are driven by its sends), so its terminal is read by [`pump`], the same
//! reading without the stop logic, into a sink that feeds its ring, its screen and the send in
//! progress. A command that reaches its deadline with hand-over changes owner whole: the same
//! source, exit watch and partial lines move to the job table ([`crate::handover`]), and the
//! job's loop goes on where this one stopped.

mod caller_threads;
mod drive;
mod pipe_pool;
mod pipe_thread;
mod read_buf;
mod source;
mod start;

pub(crate) use drive::{Drive, DriveEnd, Ended, NoWatch, Now, Stop, Watch, drive, pump};
pub(crate) use source::{Source, Stream};
pub(crate) use start::{Started, start_on_pipes, start_on_pipes_async};

/// Where a command's output goes, chunk by chunk, in the order it arrived. The model's capture,
/// a job's ring, a shell (its ring, screen and send capture), and later a live view, are sinks.
pub(crate) trait Sink {
    /// Takes the raw bytes of one chunk of `stream`; false once the sink takes no more (its
    /// cap is reached), which stops the command.
    fn ingest(&mut self, stream: Stream, bytes: &[u8]) -> bool;
}
