//! What a one-shot command came to, on either path (pipes or terminal): the types a caller
//! renders into a result.

use std::path::PathBuf;
use std::time::Duration;

use crate::reaper::Exit;
use crate::shape::Shaped;
use crate::tree::Terminated;

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
    /// Each stream's whole cleaned text, when the request asked to keep it.
    pub whole: Option<Whole>,
}

/// stdout and stderr, cleaned and whole (up to the capture cap): what a parser reads.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Whole {
    pub stdout: String,
    pub stderr: String,
}

impl Whole {
    pub(crate) fn stream(&mut self, stream: crate::engine::Stream) -> &mut String {
        match stream {
            crate::engine::Stream::Err => &mut self.stderr,
            _ => &mut self.stdout,
        }
    }
}

/// A progress report while the command runs.
#[derive(Debug, Clone)]
pub struct Progress {
    pub elapsed: Duration,
    /// The latest line of output, cleaned and shortened.
    pub line: String,
}
