//! `terminal({command, pty: true})` (docs/BEHAVIOUR.md §4): one command under a pseudo-terminal, with the
//! limits and termination of the pipe path (§2) and early return when it waits for input.
//!
//! A PTY has one stream, so stdout and stderr arrive merged; the result carries it as both the
//! merged output and stdout, with stderr empty. Shaping is the pipe path's (head+tail past
//! 50 KB, spill file, 10 MB capture cap), termination too (timeout, cancellation, tree stop,
//! strays holding the terminal). What is PTY-only: when the command blocks reading the keyboard
//! (a `Password:` or `[y/N]` prompt nobody will answer), it is stopped at once instead of
//! waiting out the timeout, and the result names the prompt line.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::clean::Cleaner;
use crate::limits::{
    CANCEL_GRACE_MS, CAPTURE_LIMIT_BYTES, DRAIN_MS, KILL_GRACE_MS, KILL_WAIT_MS, READ_CHUNK_BYTES,
};
use crate::model_output::{Finished, ModelOutput};
use crate::pty::integration::keystrokes;
use crate::pty::probe::{InputWait, input_wait};
use crate::pty::{ONCE_AWAIT_QUIET_MS, PROBE_INTERVAL_MS, spawn_on_pty, sys};
use crate::reaper::Exit;
use crate::run::{RunOutcome, RunStatus};
use crate::shape::Shaped;
use crate::spawn::SpawnSpec;
use crate::spill::SpillStore;
use crate::tree::{self, Terminated};

pub struct PtyRunRequest {
    pub spec: SpawnSpec,
    /// Typed into the terminal after start (`\n` becomes Enter). No end-of-file follows.
    pub input: Option<String>,
    pub timeout: Duration,
    pub spill: Option<(Arc<SpillStore>, String)>,
    pub cols: u16,
    pub rows: u16,
}

pub struct PtyRunOutcome {
    pub run: RunOutcome,
    /// Set when the command was stopped because it waited for input: the prompt line.
    pub awaiting_input: Option<String>,
    /// The command drew a whole screen (`top`, an editor): its "prompt" is just the last line
    /// it drew, not a question.
    pub full_screen: bool,
}

struct Capture {
    cleaner: Cleaner,
    /// The output the model gets, and its spill file.
    output: ModelOutput,
    captured: u64,
    /// The last read ended with a "\r", counted in `captured` (its "\n" may start the next).
    cr_counted: bool,
    /// A screen-drawing sequence was seen (see [`super::SCREEN_SEQUENCES`]).
    drew_screen: bool,
    /// The last bytes of the previous read, so a sequence split between reads is seen.
    seq_carry: Vec<u8>,
}

impl Capture {
    /// Returns false once the capture cap is reached.
    fn ingest(&mut self, bytes: &[u8]) -> bool {
        if !self.drew_screen {
            let mut window = std::mem::take(&mut self.seq_carry);
            window.extend_from_slice(&bytes[..bytes.len().min(16)]);
            self.drew_screen = super::draws_screen(&window) || super::draws_screen(bytes);
            let keep = bytes.len().saturating_sub(7);
            self.seq_carry = bytes[keep..].to_vec();
        }
        // The terminal writes each "\n" of the program as "\r\n" (ONLCR): the cap counts what
        // the program wrote, not the carriage returns the terminal added.
        let mut take = bytes.len();
        let mut counted = 0u64;
        // A "\r" that ended the previous read, and this one starts with its "\n".
        if std::mem::take(&mut self.cr_counted) && bytes.first() == Some(&b'\n') {
            self.captured = self.captured.saturating_sub(1);
        }
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                continue;
            }
            if self.captured + counted >= CAPTURE_LIMIT_BYTES {
                take = i;
                break;
            }
            counted += 1;
        }
        self.captured += counted;
        self.cr_counted = take == bytes.len() && bytes.last() == Some(&b'\r');
        let text = self.cleaner.feed(&bytes[..take]).to_owned();
        self.push(&text);
        take == bytes.len() && self.captured < CAPTURE_LIMIT_BYTES
    }

    fn push(&mut self, text: &str) {
        self.output.push(text);
    }

    fn prompt_line(&self) -> String {
        self.cleaner.pending_line().trim_end().to_owned()
    }

    fn finish(mut self) -> (Finished, u64) {
        let tail = self.cleaner.finish().to_owned();
        self.push(&tail);
        (self.output.finish(), self.captured)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    OverCapture,
    HeldOutput,
    AwaitingInput,
}

/// Starts stopping the tree in a task of its own; the leader is pinned before this returns.
fn start_stop(pid: i32, marker: &str, grace_ms: u64) -> JoinHandle<Terminated> {
    tokio::spawn(tree::terminate(
        pid,
        marker,
        Duration::from_millis(grace_ms),
    ))
}

/// Runs one command under a PTY to its end (see the module header).
pub async fn run(
    req: PtyRunRequest,
    cancel: impl Future<Output = ()>,
) -> io::Result<PtyRunOutcome> {
    let PtyRunRequest {
        mut spec,
        input,
        timeout,
        spill,
        cols,
        rows,
    } = req;
    spec.env.insert(0, ("TERM".into(), "xterm-256color".into()));
    let marker = spec.marker.clone();
    let start = Instant::now();
    let (master, tty_path, started) = spawn_on_pty(spec, cols, rows)?;
    let pid = started.pid;
    let mut exit_watch = started.exit;
    if let Some(text) = input {
        exit_watch.or_kill(master.write_all(&keystrokes(&text)).await)?;
    }
    let mut capture = Capture {
        cleaner: Cleaner::new(),
        output: ModelOutput::new(spill),
        captured: 0,
        cr_counted: false,
        drew_screen: false,
        seq_carry: Vec::new(),
    };
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut reading = true;
    let mut exit: Option<Exit> = None;
    let mut stop: Option<Stop> = None;
    let mut stopper: Option<JoinHandle<Terminated>> = None;
    let mut aux_deadline: Option<Instant> = None;
    let mut last_output = start;
    let mut waiting_probes = 0u32;
    let mut prompt = None;
    let timeout_at = start + timeout;
    let far = timeout_at + Duration::from_secs(3600);
    tokio::pin!(cancel);

    loop {
        if exit.is_some() && !reading {
            break;
        }
        let probe_at = if stop.is_none() && exit.is_none() {
            (last_output + Duration::from_millis(ONCE_AWAIT_QUIET_MS))
                .max(Instant::now() + Duration::from_millis(PROBE_INTERVAL_MS))
        } else {
            far
        };
        tokio::select! {
            r = master.read(&mut buf), if reading => match r {
                Ok(n) if n > 0 => {
                    last_output = Instant::now();
                    waiting_probes = 0;
                    if !capture.ingest(&buf[..n]) && stop.is_none() {
                        stop = Some(Stop::OverCapture);
                    }
                }
                _ => reading = false,
            },
            status = exit_watch.wait(), if exit.is_none() => {
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
                return Ok(PtyRunOutcome {
                    run: outcome,
                    awaiting_input: None,
                    full_screen: false,
                });
            },
            () = sleep_until(timeout_at), if stop.is_none() => stop = Some(Stop::Timeout),
            () = sleep_until(aux_deadline.unwrap_or(far)), if aux_deadline.is_some() => {
                if stopper.is_some() {
                    break; // the stopped tree did not let go of the terminal in time
                }
                stop = Some(Stop::HeldOutput);
            },
            () = sleep_until(probe_at), if stop.is_none() && exit.is_none() => {
                let fg = sys::foreground_group(master.raw());
                if input_wait(pid, fg, &tty_path) == InputWait::No {
                    waiting_probes = 0;
                } else {
                    waiting_probes += 1;
                    if waiting_probes >= 2 {
                        prompt = Some(capture.prompt_line());
                        stop = Some(Stop::AwaitingInput);
                    }
                }
            },
        }
        if let Some(reason) = stop
            && stopper.is_none()
        {
            let grace = match reason {
                Stop::HeldOutput | Stop::AwaitingInput => CANCEL_GRACE_MS,
                Stop::Timeout | Stop::OverCapture => KILL_GRACE_MS,
            };
            stopper = Some(start_stop(pid, &marker, grace));
            aux_deadline =
                Some(Instant::now() + Duration::from_millis(grace + KILL_WAIT_MS + DRAIN_MS));
            if reason == Stop::OverCapture {
                reading = false;
            }
        }
    }
    drop(master);
    let (strays, stopped) =
        crate::run::settle(pid, &marker, stopper, stop == Some(Stop::HeldOutput)).await;
    let status = match (stop, exit) {
        (Some(Stop::Timeout), _) => RunStatus::Timeout,
        (Some(Stop::OverCapture), _) => RunStatus::Killed,
        // As on the pipe path: a command that exited 0 succeeded, even when a process it left
        // behind held the terminal and was stopped (a note says so). Stopped at a prompt, it
        // did not finish.
        (_, Some(e)) if e.success() && stop != Some(Stop::AwaitingInput) => RunStatus::Success,
        _ => RunStatus::Failed,
    };
    let full_screen = capture.drew_screen;
    let mut outcome = finish(pid, status, exit, start, capture);
    outcome.strays = strays;
    outcome.stopped = stopped;
    Ok(PtyRunOutcome {
        full_screen,
        run: outcome,
        awaiting_input: if stop == Some(Stop::AwaitingInput) {
            prompt
        } else {
            None
        },
    })
}

fn finish(
    pid: i32,
    status: RunStatus,
    exit: Option<Exit>,
    start: Instant,
    capture: Capture,
) -> RunOutcome {
    let (merged, captured_bytes) = capture.finish();
    RunOutcome {
        pid,
        status,
        exit,
        duration: start.elapsed(),
        stdout: merged.output.clone(),
        stderr: Shaped::Whole(String::new()),
        output: merged.output,
        output_bytes: merged.bytes,
        output_lines: merged.lines,
        spill: merged.spill,
        captured_bytes,
        strays: None,
        stopped: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cap counts what the program wrote: the terminal's "\r" before each "\n" is not
    /// counted, also when a read ends between the two.
    #[test]
    fn the_terminals_carriage_returns_are_not_counted_across_reads() {
        let mut capture = Capture {
            cleaner: Cleaner::new(),
            output: ModelOutput::new(None),
            captured: 0,
            cr_counted: false,
            drew_screen: false,
            seq_carry: Vec::new(),
        };
        for chunk in [&b"ab\r"[..], b"\ncd\r\n", b"\r", b"\r\n", b"e\rf"] {
            assert!(capture.ingest(chunk));
        }
        // The program wrote "ab\ncd\n\r\ne\rf": 11 bytes (a "\r" of its own stays counted).
        assert_eq!(capture.captured, 11);
    }
}
