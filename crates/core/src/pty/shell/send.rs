//! Typing into a shell and waiting for what the keystrokes did: the command's end (its
//! prompt marker), a `wait_for` match, keyboard input awaited, quiet, or the timeout; and the
//! line typed so far, which the guard judges whole at its Enter.

use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::pty::capture::SendCapture;
use crate::pty::integration::{Flavor, Marker, keystrokes};
use crate::pty::probe::{InputWait, input_wait};
use crate::pty::sys::{self};
use crate::pty::{LINE_EDITOR_WAIT_MS, PROBE_INTERVAL_MS, PROBE_QUIET_MS, PtyError, SEND_IDLE_MS};

use super::*;

impl Shell {
    /// What was typed since the last Enter, Ctrl+C or Ctrl+U, Backspace applied.
    pub fn pending_line(&self) -> String {
        lock(&self.typed).clone()
    }

    /// The pending line after typing `input` (see [`crate::pty::line_editor::edit`]).
    fn typed_after(pending: &str, input: &str) -> String {
        crate::pty::line_editor::edit(pending, input).pending
    }

    /// Fails with the length the pending line would have if `input` made it pass `max` bytes.
    pub fn check_typed(&self, input: &str, max: usize) -> Result<(), usize> {
        let len = Self::typed_after(&lock(&self.typed), input).len();
        if len > max { Err(len) } else { Ok(()) }
    }

    /// Records keystrokes that were typed.
    fn note_typed(&self, input: &str) {
        let mut typed = lock(&self.typed);
        *typed = Self::typed_after(&typed, input);
    }

    /// Types `input` and waits for the outcome (see the module header).
    pub async fn send(&self, req: SendRequest<'_>) -> Result<SendOutcome, PtyError> {
        // The timeout counts from the request, the wait for an earlier send included.
        let start = Instant::now();
        let deadline = start + req.timeout;
        let Ok(_one_at_a_time) = tokio::time::timeout_at(deadline, self.send_lock.lock()).await
        else {
            return Err(PtyError::Busy);
        };
        let master = self.master().ok_or(PtyError::Closed)?;
        if self.would_stop_sealed(req.input) {
            return Err(PtyError::StopsSealed);
        }
        let mut rx = self.answers.subscribe();
        let cursor_from = self.output.total();
        // Blank lines or Ctrl+C: nothing a shell at its prompt would run.
        let blank = req
            .input
            .chars()
            .all(|ch| ch.is_whitespace() || ch == '\x03');
        // Text typed at the prompt goes to whoever reads the terminal: typed only while that
        // can be nobody but the shell (a blank line or Ctrl+C gives nobody anything). Else
        // nothing is typed and the reply says who else could read; the next send at this
        // prompt, made knowing it, types. Judged once the line editor is up: the prompt's hooks
        // (and what they started, a command substitution in the shell's own group) are done.
        if !blank
            && self.idle()
            && !std::mem::take(&mut lock(&self.live).held_told)
            && self.wait_for_prompt(master.raw()).await
            && let Some(by) = self.lurker()
        {
            lock(&self.live).held_told = true;
            return Ok(SendOutcome {
                status: SendStatus::Held { by },
                output: String::new(),
                dropped: 0,
                cursor_from,
                cursor_next: cursor_from,
                elapsed: start.elapsed(),
                ended_before: Vec::new(),
                full_screen: false,
                untyped: req.input.len(),
                running: None,
                read_by_earlier: false,
            });
        }
        let begun = self.begin_capture(req.input, blank, req.wait_for.is_some());
        self.touch();
        if req.input.is_empty() && begun.idle_before {
            // Nothing typed and nothing running: nothing to wait for.
            lock(&self.live).send = None;
            return Ok(SendOutcome {
                status: SendStatus::AtPrompt,
                output: String::new(),
                dropped: 0,
                cursor_from,
                cursor_next: cursor_from,
                elapsed: start.elapsed(),
                ended_before: begun.ended_before,
                full_screen: false,
                untyped: 0,
                running: None,
                read_by_earlier: false,
            });
        }
        if begun.idle_before {
            self.wait_for_prompt(master.raw()).await;
        }
        if !req.input.is_empty() {
            self.input_comes();
        }
        // Typed as the terminal takes it, until the deadline: a program that does not read
        // its input (raw mode, queues full) cannot hold the send past its timeout.
        let taken = master.write_until(&keystrokes(req.input), deadline).await?;
        let typed = typed_part(req.input, taken);
        self.note_typed(typed);
        // Only typed lines get prompts: an untyped one is owed none.
        let newlines = typed.matches('\n').count() as u32;
        // In bytes of the input, whole characters (a `\r\n` is one keystroke but two bytes).
        let untyped = req.input.len() - typed.len();
        drop(master);
        let status = self
            .await_status(&req, start, deadline, newlines, &mut rx)
            .await;
        let (cap, full_screen) =
            self.end_capture(&status, req.input.is_empty(), begun.raw_from, newlines);
        // The shell sat at its prompt and the new prompt ended nothing: the input was blank lines
        // or Ctrl+C (any shell), or no command started in between (a start marker says so).
        let status = match (status, &cap) {
            (SendStatus::Done(_), Some(c))
                if begun.idle_before
                    && (blank || (self.flavor.marks_start() && !c.ran_command())) =>
            {
                SendStatus::AtPrompt
            }
            (status, _) => status,
        };
        self.touch();
        let running = (status == SendStatus::Running)
            .then(|| self.running_program())
            .flatten();
        let (output, dropped) = match &cap {
            // Nothing ran: what came back is the echo of the key and a prompt.
            _ if status == SendStatus::AtPrompt => (String::new(), 0),
            Some(c) => (c.output(matches!(status, SendStatus::Done(_))), c.dropped),
            None => (String::new(), 0),
        };
        // Earlier commands that ended during this send are told as those that ended before it;
        // the last of them is this send's answer when the input went to it (review 35, F3).
        let read_by_earlier = matches!(status, SendStatus::Done(_))
            && cap
                .as_ref()
                .is_some_and(|c| c.input_went_to_earlier_command().is_some());
        let mut ended_before = begun.ended_before;
        if let Some(c) = &cap {
            let codes = c.earlier_codes();
            let told = if read_by_earlier {
                &codes[..codes.len().saturating_sub(1)]
            } else {
                codes
            };
            ended_before.extend_from_slice(told);
        }
        Ok(SendOutcome {
            status,
            output,
            dropped,
            cursor_from,
            cursor_next: self.output.total(),
            elapsed: start.elapsed(),
            ended_before,
            full_screen,
            untyped,
            running,
            read_by_earlier,
        })
    }

    /// Waits (briefly, see [`wait_for_line_editor`]) for bash's or zsh's line editor to take the
    /// terminal at the prompt; always `true`, to be chained.
    async fn wait_for_prompt(&self, master: std::os::fd::RawFd) -> bool {
        if matches!(self.flavor, Flavor::Bash | Flavor::Zsh) {
            wait_for_line_editor(master).await;
        }
        true
    }

    /// What the shell is doing now (no scan for other readers of the terminal).
    pub fn activity(&self) -> Activity {
        if self.idle() && self.holds_terminal() {
            return Activity::AtPrompt;
        }
        if let Some(awaiting) = self.awaiting_input() {
            let program = (!awaiting.by_shell)
                .then(|| self.running_program())
                .flatten();
            return Activity::AwaitingInput(awaiting, program);
        }
        self.running_program()
            .map_or(Activity::Busy, Activity::Running)
    }

    /// Who waits for keys now, if anyone does but the shell at its prompt with nothing typed:
    /// a program blocked reading the terminal (or the shell's `read` in a command line) with
    /// the line it asks at, or the shell for the rest of a line. One look, as a send's probe
    /// looks: none while output is still in flight.
    pub fn awaiting_input(&self) -> Option<Awaiting> {
        let master = self.master()?;
        if self.has_ended() || master.output_in_flight() {
            return None;
        }
        let wait = input_wait(
            self.pid,
            sys::foreground_group(master.raw()),
            self.terminal(),
        );
        let typed = self.pending_line();
        let live = lock(&self.live);
        let idle = live.at_prompt && live.owed_prompts == 0;
        let written = live.ring_cleaner.pending_line().trim_end().to_owned();
        let (prompt, by_shell) = match wait {
            InputWait::No => return None,
            InputWait::Shell if !typed.trim().is_empty() => (typed, true),
            InputWait::Shell if live.started => (written, false),
            InputWait::Shell if idle => return None,
            InputWait::Shell => (written, true),
            InputWait::Program => (written, false),
        };
        Some(Awaiting {
            prompt,
            by_shell,
            full_screen: live.screen.screen().alternate_screen(),
        })
    }

    /// Whether the shell sits at its prompt, running nothing and owing no prompt.
    fn idle(&self) -> bool {
        let live = lock(&self.live);
        live.at_prompt && live.owed_prompts == 0
    }

    /// Starts capturing what `input` brings back, and notes how the shell stood before it.
    /// `pattern`: the send waits for a pattern in the output (every chunk may bring it).
    fn begin_capture(&self, input: &str, blank: bool, pattern: bool) -> Begun {
        let newlines = input.matches('\n').count() as u32;
        let mut live = lock(&self.live);
        let idle_before = live.at_prompt && live.owed_prompts == 0;
        let raw_from = live.raw_total;
        let ended_before = std::mem::take(&mut live.ended_unseen);
        if !blank {
            // Text goes in: until the next prompt, the line is not empty or something other
            // than the prompt reads the keyboard (shells without a start marker give no
            // other sign of it).
            live.at_prompt = false;
        }
        let mut cap = SendCapture::new(input, self.flavor.marks_start());
        cap.watches_text = pattern;
        // Only typed-ahead lines wait behind the earlier commands' prompts; a bare key
        // (Ctrl+C) is for the running command, and its prompt is this send's answer.
        if live.owed_prompts > 0 && newlines > 0 {
            cap = cap.after_running_commands(live.owed_prompts);
            live.owed_prompts = 0;
        }
        live.send = Some(cap);
        Begun {
            idle_before,
            raw_from,
            ended_before,
        }
    }

    /// Waits for how the send ends: its prompt (`newlines` typed lines need as many), a
    /// `wait_for` match, the shell's end, the foreground waiting for the keyboard (agreed on by
    /// two probes), quiet (a shell without markers), or the deadline.
    async fn await_status(
        &self,
        req: &SendRequest<'_>,
        start: Instant,
        deadline: Instant,
        newlines: u32,
        rx: &mut watch::Receiver<u64>,
    ) -> SendStatus {
        let probe_quiet = Duration::from_millis(PROBE_QUIET_MS);
        let idle = Duration::from_millis(SEND_IDLE_MS);
        let mut next_probe = start;
        // A verdict from process state must hold on two probes in a row: a line editor
        // consuming typed-ahead input passes through the same wait between two keys.
        let mut agreed: Option<SendStatus> = None;
        loop {
            let now = Instant::now();
            let (verdict, quiet_since, any_output) =
                self.capture_verdict(req.wait_for, newlines, start);
            if let Some(v) = verdict {
                return v;
            }
            if self.has_ended() {
                return SendStatus::ShellEnded;
            }
            let quiet_for = now.saturating_duration_since(quiet_since);
            if quiet_for >= probe_quiet && now >= next_probe {
                next_probe = now + Duration::from_millis(PROBE_INTERVAL_MS);
                match self.probe(any_output) {
                    Some(status) if agreed.as_ref() == Some(&status) => return status,
                    seen => agreed = seen,
                }
            }
            if self.flavor == Flavor::Unknown && quiet_for >= idle {
                return SendStatus::Quiet;
            }
            if now >= deadline {
                return SendStatus::Running;
            }
            let mut wake = deadline.min(quiet_since + probe_quiet).max(next_probe);
            if self.flavor == Flavor::Unknown {
                wake = wake.min(quiet_since + idle);
            }
            tokio::select! {
                _ = rx.changed() => {}
                () = sleep_until(wake.min(deadline).max(now + Duration::from_millis(1))) => {}
            }
        }
    }

    /// What the send's capture says now: a verdict if it has one (the shell has ended when
    /// there is no capture any more), when output last came (not before `start`), and whether
    /// any came for this send.
    fn capture_verdict(
        &self,
        wait_for: Option<&regex::Regex>,
        newlines: u32,
        start: Instant,
    ) -> (Option<SendStatus>, Instant, bool) {
        let live = lock(&self.live);
        let Some(cap) = live.send.as_ref() else {
            return (Some(SendStatus::ShellEnded), start, false);
        };
        // The shell's end of the command, and the terminal back with the shell: a prompt hook
        // that runs a program after agentty's holds it for a moment, and a program that
        // outlived its command may have taken it.
        let done = matches!(cap.last, Some(Marker::Prompt(_)))
            && cap.prompts >= newlines.max(1)
            && self.holds_terminal();
        let verdict = if done {
            Some(SendStatus::Done(cap.exit.unwrap_or_default()))
        } else if wait_for.is_some_and(|re| re.is_match(&cap.for_match())) {
            Some(SendStatus::Matched)
        } else if live.eof {
            Some(SendStatus::ShellEnded)
        } else {
            None
        };
        (verdict, live.last_output.max(start), cap.any_output)
    }

    /// Ends the send's capture and returns it, with whether a program draws a whole screen
    /// now; settles the prompts still owed by lines that run on after the send returns.
    /// `waited_only`: nothing was typed.
    fn end_capture(
        &self,
        status: &SendStatus,
        waited_only: bool,
        raw_from: u64,
        newlines: u32,
    ) -> (Option<SendCapture>, bool) {
        let mut live = lock(&self.live);
        let full_screen = !matches!(
            status,
            SendStatus::Done(_) | SendStatus::AtPrompt | SendStatus::ShellEnded
        ) && Self::draws_full_screen(&live, raw_from);
        let (unseen, own_missing, seen) = live.send.as_ref().map_or((0, 0, 0), |c| {
            (
                c.stale_left(),
                newlines.saturating_sub(c.prompts),
                c.prompts,
            )
        });
        live.owed_prompts = match status {
            // This send's lines still run or wait: their prompts come later.
            SendStatus::Matched | SendStatus::Running | SendStatus::Quiet => {
                live.owed_prompts + unseen + own_missing
            }
            // A wait (nothing typed) ended at the first prompt: later lines may still run.
            SendStatus::Done(_) | SendStatus::AtPrompt if waited_only => {
                live.owed_prompts.saturating_sub(seen)
            }
            // At a prompt again after typing (Ctrl+C flushes what was queued): nothing owed.
            SendStatus::Done(_) | SendStatus::AtPrompt => 0,
            // A program reads the input (not the shell), or the shell is gone.
            SendStatus::AwaitingInput { .. } | SendStatus::ShellEnded => live.owed_prompts + unseen,
            // Nothing was typed.
            SendStatus::Held { .. } => live.owed_prompts,
        };
        (live.send.take(), full_screen)
    }

    /// Checks whether someone in the foreground waits for the keyboard.
    fn probe(&self, any_output: bool) -> Option<SendStatus> {
        if let Some(channel) = &self.channel {
            // A program filling the channel holds the shell's report (and prompt) up: make room.
            let mut live = lock(&self.live);
            super::stream::take_reports(channel, self.pid, &mut live.reports);
        }
        let master = self.master()?;
        if master.output_in_flight() {
            return None; // output is still in flight: not quiet after all
        }
        let fg = sys::foreground_group(master.raw());
        let wait = input_wait(self.pid, fg, self.terminal());
        let live = lock(&self.live);
        let cap = live.send.as_ref()?;
        match wait {
            InputWait::No => None,
            // The earlier command's prompt came and the shell reads again with nothing of this
            // send run: the input was that command's (typed into a REPL still busy).
            InputWait::Shell if let Some(code) = cap.input_went_to_earlier_command() => {
                Some(SendStatus::Done(code))
            }
            // The shell reads again after a prompt: done, even if fewer prompts came than
            // lines were typed (a program consumed some of them).
            InputWait::Shell if matches!(cap.last, Some(Marker::Prompt(_))) => {
                Some(SendStatus::Done(cap.exit.unwrap_or_default()))
            }
            // Before the shell echoed anything it may simply not have read the input yet.
            InputWait::Shell if !any_output => None,
            // A command line was accepted and runs: the shell reading now is a builtin of that
            // command (`read -p`, `select`), which waits for an answer like any program.
            InputWait::Shell if matches!(cap.last, Some(Marker::Start)) => {
                Some(SendStatus::AwaitingInput {
                    prompt: cap.prompt_line(),
                    by_shell: false,
                })
            }
            // The shell waits for the rest of a line: name the line as typed (we know it), not
            // as the screen shows it, where the prompt and the echo can run together
            // ("pwd# pwd" when the echo lands before the prompt is redrawn).
            InputWait::Shell => Some(SendStatus::AwaitingInput {
                prompt: Some(self.pending_line())
                    .filter(|typed| !typed.trim().is_empty())
                    .unwrap_or_else(|| cap.prompt_line()),
                by_shell: true,
            }),
            InputWait::Program => Some(SendStatus::AwaitingInput {
                prompt: cap.prompt_line(),
                by_shell: false,
            }),
        }
    }
}

/// How the shell stood when a send began its capture.
struct Begun {
    /// At its prompt, running nothing and owing no prompt.
    idle_before: bool,
    /// Raw bytes received before the send (where its screen drawing is looked for).
    raw_from: u64,
    /// Exit codes of earlier commands that ended between sends, told by this one.
    ended_before: Vec<i32>,
}

/// The prompt marker comes a moment before the line editor takes the terminal out of canonical
/// mode; keys typed in between are echoed by the terminal and again by the editor (`pwd# pwd`).
/// Waits, briefly and boundedly, for the editor.
async fn wait_for_line_editor(master: std::os::fd::RawFd) {
    let until = Instant::now() + Duration::from_millis(LINE_EDITOR_WAIT_MS);
    while canonical(master) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Whether the terminal of `master` is in canonical mode (its own line editing and echo).
fn canonical(master: std::os::fd::RawFd) -> bool {
    sys::settings(master).is_some_and(|t| t.c_lflag & libc::ICANON != 0)
}

/// The part of `input` whose keystrokes ([`keystrokes`]) are the first `taken` bytes (a `\r\n`
/// is one keystroke), cut back to a character boundary.
fn typed_part(input: &str, taken: usize) -> &str {
    let bytes = input.as_bytes();
    let (mut i, mut keys) = (0, 0);
    while i < bytes.len() && keys < taken {
        i += if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        keys += 1;
    }
    while !input.is_char_boundary(i) {
        i -= 1;
    }
    &input[..i]
}

#[cfg(test)]
mod tests {
    use super::typed_part;

    #[test]
    fn the_typed_part_counts_a_crlf_as_one_keystroke_and_keeps_whole_characters() {
        assert_eq!(typed_part("ab\r\ncd", 3), "ab\r\n");
        assert_eq!(typed_part("ab\ncd", 3), "ab\n");
        assert_eq!(typed_part("ab", 5), "ab");
        assert_eq!(typed_part("aé", 2), "a");
        assert_eq!(typed_part("aé", 3), "aé");
        assert_eq!(typed_part("x", 0), "");
    }
}
