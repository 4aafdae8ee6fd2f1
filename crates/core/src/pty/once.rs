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
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::clean::Cleaner;
use crate::engine::{self, Drive, DriveEnd, Now, Sink, Source, Stop, Stream, Watch};
use crate::limits::{CAPTURE_LIMIT_BYTES, READ_CHUNK_BYTES};
use crate::model_output::{Finished, ModelOutput};
use crate::outcome::{RunOutcome, RunStatus};
use crate::pty::integration::keystrokes;
use crate::pty::probe::{InputWait, input_wait};
use crate::pty::{ONCE_AWAIT_QUIET_MS, PROBE_INTERVAL_MS, spawn_on_pty, sys};
use crate::reaper::Exit;
use crate::shape::Shaped;
use crate::spawn::SpawnSpec;
use crate::spill::SpillStore;

pub struct PtyRunRequest {
    pub spec: SpawnSpec,
    /// Typed into the terminal after start (`\n` becomes Enter). No end-of-file follows.
    pub input: Option<String>,
    pub timeout: Duration,
    pub spill: Option<(Arc<SpillStore>, String)>,
    pub cols: u16,
    pub rows: u16,
    /// The web view's copy of the output (`crate::view_tap`).
    pub view: Option<Arc<crate::view_tap::ViewTap>>,
}

pub struct PtyRunOutcome {
    pub run: RunOutcome,
    /// Set when the command was stopped because it waited for input: the prompt line.
    pub awaiting_input: Option<String>,
    /// The command drew a whole screen (`top`, an editor): its "prompt" is just the last line
    /// it drew, not a question.
    pub full_screen: bool,
    /// It waited for a password: a line read with echo off (as `getpass` reads).
    pub awaiting_password: bool,
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
    view: Option<Arc<crate::view_tap::ViewTap>>,
    /// A read's text, when the view's copy watches the cleaning.
    text: String,
}

impl Capture {
    /// Returns false once the capture cap is reached.
    fn take(&mut self, bytes: &[u8]) -> bool {
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
        let text = match &self.view {
            None => self.cleaner.feed(&bytes[..take]),
            Some(view) => {
                // A terminal has one stream: no line of stderr is open (giving the same cleaner
                // twice had the copy's stderr end with stdout's open line again).
                let no_stderr = Cleaner::new();
                let streams = crate::view_tap::Streams {
                    err: false,
                    cleaner: &mut self.cleaner,
                    other: &no_stderr,
                    plain: None,
                };
                let text = &mut self.text;
                text.clear();
                view.through(streams, &bytes[..take], &mut |t| text.push_str(t));
                &self.text
            }
        };
        self.output.push(text);
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
        if let Some(view) = &self.view {
            view.plain(&tail);
            view.finish();
        }
        self.push(&tail);
        (self.output.finish(), self.captured)
    }
}

impl Sink for Capture {
    fn ingest(&mut self, _: Stream, bytes: &[u8]) -> bool {
        self.take(bytes)
    }
}

/// Stops a command that waits for input nobody will type: checked once the output has been
/// quiet for [`ONCE_AWAIT_QUIET_MS`], at most every [`PROBE_INTERVAL_MS`], and believed the
/// second time in a row with no output between.
struct PromptWatch {
    pid: i32,
    master: RawFd,
    tty_path: String,
    tty_id: (u64, u64),
    waiting_probes: u32,
    output_seen: Instant,
    /// The line the command waits on, once it was stopped for it.
    prompt: Option<String>,
    /// The terminal read a line with echo off when it was stopped.
    password: bool,
}

impl Watch<Capture> for PromptWatch {
    fn next(&self, now: &Now) -> Option<Instant> {
        (!now.stopping && !now.exited).then(|| {
            (now.last_output + Duration::from_millis(ONCE_AWAIT_QUIET_MS))
                .max(Instant::now() + Duration::from_millis(PROBE_INTERVAL_MS))
        })
    }

    fn check(&mut self, capture: &mut Capture, now: &Now) -> Option<Stop> {
        if now.last_output != self.output_seen {
            self.output_seen = now.last_output;
            self.waiting_probes = 0;
        }
        let fg = sys::foreground_group(self.master);
        let tty = crate::pty::probe::Terminal {
            path: &self.tty_path,
            id: self.tty_id,
        };
        if input_wait(self.pid, fg, tty) == InputWait::No {
            self.waiting_probes = 0;
            return None;
        }
        self.waiting_probes += 1;
        if self.waiting_probes < 2 {
            return None;
        }
        self.prompt = Some(capture.prompt_line());
        self.password = sys::settings(self.master).is_some_and(|t| sys::asks_password(&t));
        Some(Stop::AwaitingInput)
    }
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
        view,
    } = req;
    spec.env.insert(0, ("TERM".into(), "xterm-256color".into()));
    let marker = spec.marker.clone();
    let start = Instant::now();
    let masks = spec.masks.clone();
    let (master, tty, started) = spawn_on_pty(spec, cols, rows).await?;
    let pid = started.pid;
    let mut exit_watch = started.exit;
    let mut capture = Capture {
        cleaner: Cleaner::new(),
        output: ModelOutput::new(spill),
        captured: 0,
        cr_counted: false,
        drew_screen: false,
        seq_carry: Vec::new(),
        view,
        text: String::new(),
    };
    let mut watch = PromptWatch {
        pid,
        master: master.raw(),
        tty_path: tty.path,
        tty_id: tty.id,
        waiting_probes: 0,
        output_seen: start,
        prompt: None,
        password: false,
    };
    // The source holds the only handle on the master: the loop hangs it up when it is done.
    let mut source = Source::terminal(Arc::new(master), READ_CHUNK_BYTES).masked(masks);
    if let Some(text) = input {
        source.type_in(keystrokes(&text));
    }
    let run = Drive::one_shot(pid, &marker, &mut exit_watch, start + timeout, false);
    let ended = match engine::drive(run, &mut source, &mut capture, &mut watch, cancel).await {
        DriveEnd::Ended(ended) => ended,
        DriveEnd::Cancelled { exit, stopped } => {
            let mut outcome = finish(pid, RunStatus::Cancelled, exit, start, capture);
            outcome.stopped = Some(stopped);
            return Ok(PtyRunOutcome {
                run: outcome,
                awaiting_input: None,
                full_screen: false,
                awaiting_password: false,
            });
        }
        DriveEnd::TimedOut { .. } => {
            return Err(io::Error::other("hand-over without a request for it"));
        }
    };
    let full_screen = capture.drew_screen;
    let mut outcome = finish(pid, ended.status(), ended.exit, start, capture);
    outcome.strays = ended.strays;
    outcome.stopped = ended.stopped;
    Ok(PtyRunOutcome {
        full_screen,
        awaiting_password: watch.password,
        run: outcome,
        awaiting_input: if ended.stop == Some(Stop::AwaitingInput) {
            watch.prompt
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
        whole: None,
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
            view: None,
            text: String::new(),
        };
        for chunk in [&b"ab\r"[..], b"\ncd\r\n", b"\r", b"\r\n", b"e\rf"] {
            assert!(capture.take(chunk));
        }
        // The program wrote "ab\ncd\n\r\ne\rf": 11 bytes (a "\r" of its own stays counted).
        assert_eq!(capture.captured, 11);
    }
}
