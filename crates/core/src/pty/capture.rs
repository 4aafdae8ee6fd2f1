//! What one `shell_send` returns: the output of the command it ran, cut out of the terminal
//! stream by the prompt markers, cleaned (§7.1), without the echoed input or the next prompt.
//!
//! With a start marker (bash's `PS0`) the window is exact: from "command line read" to the next
//! prompt, for each command the input ran. Without one (POSIX shells) the window starts at the
//! send, so the terminal's echo of the input line is removed by comparing text, and it ends at
//! the last prompt. Without any marker (an unknown shell, a program that reads the keyboard)
//! it is everything since the send, echo removed, including the line still being written (the
//! `Password: ` a program waits on).

use crate::clean::Cleaner;
use crate::pty::integration::{Marker, POSIX_PROMPT};

/// Most cleaned text one send keeps; past it the head is dropped and the reply says how much
/// (the ring still holds it for `shell_read`). Same figure as the one-shot inline limit.
pub const SEND_TEXT_MAX_BYTES: usize = crate::limits::INLINE_LIMIT_BYTES;

pub(crate) struct SendCapture {
    cleaner: Cleaner,
    text: String,
    /// Bytes dropped from the head of `text`.
    pub dropped: u64,
    feeding: bool,
    marks_start: bool,
    seen_start: bool,
    /// Primary and continuation prompts seen since the send.
    pub prompts: u32,
    pub last: Option<Marker>,
    pub exit: Option<i32>,
    /// Length of `text` when the last prompt marker arrived (what follows is prompt and echo).
    text_at_prompt: usize,
    /// First line of the input, to drop its echo.
    echo: String,
    /// Output arrived since the send (a line editor echoes what it read).
    pub any_output: bool,
    /// The send waits for a pattern in the text: any chunk may bring its answer.
    pub watches_text: bool,
    /// Earlier sends left this many command lines running or queued: the first prompts are
    /// theirs, and everything up to the last of them belongs to them, not to this send.
    stale: u32,
    /// That earlier command's exit code and what it printed since this send, kept at its
    /// prompt. If nothing of this send runs after that prompt, the input went to that command
    /// (a line typed into a REPL that was still busy), and this is the send's answer.
    stale_end: Option<(i32, String)>,
    /// The exit codes of those earlier commands whose prompts came during this send, oldest
    /// first: ended commands the send tells of.
    earlier_codes: Vec<i32>,
}

impl SendCapture {
    pub fn new(input: &str, marks_start: bool) -> Self {
        Self {
            cleaner: Cleaner::new(),
            text: String::new(),
            dropped: 0,
            feeding: true,
            marks_start,
            seen_start: false,
            prompts: 0,
            watches_text: false,
            last: None,
            exit: None,
            text_at_prompt: 0,
            echo: input
                .lines()
                .next()
                .unwrap_or_default()
                .trim_end()
                .to_owned(),
            any_output: false,
            stale: 0,
            stale_end: None,
            earlier_codes: Vec::new(),
        }
    }

    /// The exit codes of earlier commands that ended during this send (see
    /// [`SendCapture::earlier_codes`]).
    pub fn earlier_codes(&self) -> &[i32] {
        &self.earlier_codes
    }

    /// A command line was accepted since the send (its start marker came).
    pub fn ran_command(&self) -> bool {
        self.seen_start
    }

    /// See [`SendCapture::stale`].
    pub fn after_running_commands(mut self, lines: u32) -> Self {
        self.stale = lines;
        self
    }

    /// Prompts of earlier commands this send has not seen (they are still owed).
    pub fn stale_left(&self) -> u32 {
        self.stale
    }

    /// Whether every chunk may bring the send's answer: it watches for a pattern, or its prompt
    /// came and only the terminal's return to the shell is awaited.
    pub fn wants_every_chunk(&self) -> bool {
        self.watches_text || matches!(self.last, Some(Marker::Prompt(_)))
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.any_output = true;
        if self.feeding {
            let text = self.cleaner.feed(bytes);
            self.text.push_str(text);
            self.trim();
        }
    }

    pub fn marker(&mut self, marker: Marker) {
        match marker {
            Marker::Start => {
                if !self.seen_start {
                    // Everything before the first start marker is the echo of the input.
                    self.text.clear();
                    self.seen_start = true;
                }
                self.cleaner = Cleaner::new();
                self.feeding = true;
            }
            Marker::Prompt(code) if self.stale > 0 => {
                let before = self.output(false);
                let echo = std::mem::take(&mut self.echo);
                let stale = self.stale - 1;
                let watches_text = self.watches_text;
                let mut earlier_codes = std::mem::take(&mut self.earlier_codes);
                earlier_codes.push(code);
                *self = Self::new("", self.marks_start);
                self.earlier_codes = earlier_codes;
                self.echo = echo;
                self.watches_text = watches_text;
                self.stale = stale;
                self.any_output = true;
                self.stale_end = Some((code, before));
                return;
            }
            Marker::Prompt(code) => {
                self.end_segment();
                self.exit = Some(code);
            }
            Marker::Continue => self.end_segment(),
            // Turned into `Prompt` by the shell once confirmed; never seen here.
            Marker::End(_) => return,
        }
        self.last = Some(marker);
    }

    fn end_segment(&mut self) {
        if self.feeding {
            let rest = self.cleaner.finish().to_owned();
            self.text.push_str(&rest);
        }
        self.prompts += 1;
        self.text_at_prompt = self.text.len();
        // With start markers, prompts and echoes are outside every window.
        self.feeding = !self.marks_start;
    }

    fn trim(&mut self) {
        if self.text.len() <= SEND_TEXT_MAX_BYTES {
            return;
        }
        let mut cut = self.text.len() - SEND_TEXT_MAX_BYTES;
        while !self.text.is_char_boundary(cut) {
            cut += 1;
        }
        self.text.drain(..cut);
        self.dropped += cut as u64;
        self.text_at_prompt = self.text_at_prompt.saturating_sub(cut);
    }

    /// What `wait_for` is matched against: the output so far, never the echo of the input
    /// (a pattern that also appears in the command line would match at once).
    pub fn for_match(&self) -> String {
        if !self.seen_start && !self.echo.is_empty() && !self.text.contains('\n') {
            return String::new(); // the echo line is not complete yet
        }
        self.output(false)
    }

    /// The text so far including the line still being written.
    pub fn visible(&self) -> String {
        let mut out = self.text.clone();
        if self.feeding {
            out.push_str(&self.cleaner.pending_line());
        }
        out
    }

    /// The last non-empty line: the prompt a program waits on.
    pub fn prompt_line(&self) -> String {
        let pending = self.cleaner.pending_line();
        if !pending.trim().is_empty() {
            return pending.trim_end().to_owned();
        }
        self.text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .trim_end()
            .to_owned()
    }

    /// The exit code of the command a previous send left running, when this send's input went
    /// to it: that command's prompt came, and nothing (no command, no continuation) since.
    pub fn input_went_to_earlier_command(&self) -> Option<i32> {
        match (&self.stale_end, &self.last) {
            (Some((code, _)), None) => Some(*code),
            _ => None,
        }
    }

    /// The command's output: up to the last prompt when the command finished, else all of it.
    pub fn output(&self, finished: bool) -> String {
        if finished
            && self.last.is_none()
            && let Some((_, before)) = &self.stale_end
        {
            return before.clone();
        }
        let mut out = if finished && self.prompts > 0 {
            self.text[..self.text_at_prompt.min(self.text.len())].to_owned()
        } else {
            self.visible()
        };
        if self.stale_end.is_some() && !self.marks_start {
            // The window opened at an earlier command's prompt marker: without a start marker,
            // the visible prompt that follows it is in the text.
            if let Some(rest) = out.strip_prefix(POSIX_PROMPT) {
                out = rest.to_owned();
            }
        }
        if !self.seen_start && !self.echo.is_empty() {
            strip_echo(&mut out, &self.echo);
        }
        out
    }
}

/// Removes the terminal's echo of `echo` from the start of `out` (a whole first line, or the
/// whole text when the input had no newline yet).
fn strip_echo(out: &mut String, echo: &str) {
    let first_end = out.find('\n').map_or(out.len(), |i| i + 1);
    if out[..first_end].trim_end().ends_with(echo) {
        out.drain(..first_end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What wakes a waiting send (`Shell::answers`): every chunk only once its prompt came or
    /// where it watches for a pattern, which an earlier command's prompt does not undo.
    #[test]
    fn every_chunk_is_wanted_after_the_prompt_or_for_a_pattern_only() {
        let mut c = SendCapture::new("echo hi\n", true);
        assert!(!c.wants_every_chunk());
        c.marker(Marker::Start);
        c.bytes(b"hi\r\n");
        assert!(
            !c.wants_every_chunk(),
            "a start marker and output answer nothing"
        );
        c.marker(Marker::Prompt(0));
        assert!(
            c.wants_every_chunk(),
            "after the prompt the terminal's return is awaited"
        );

        let mut c = SendCapture::new("x\n", true).after_running_commands(1);
        c.watches_text = true;
        c.marker(Marker::Prompt(0));
        assert!(
            c.wants_every_chunk(),
            "the earlier command's prompt keeps the pattern"
        );
    }

    #[test]
    fn start_marker_window_drops_echo_and_prompt() {
        let mut c = SendCapture::new("echo hi\n", true);
        c.bytes(b"echo hi\r\n\x1b[?2004l\r");
        c.marker(Marker::Start);
        c.bytes(b"hi\r\n\x1b[?2004h");
        c.marker(Marker::Prompt(0));
        c.bytes(b"$ ");
        assert_eq!(c.output(true), "hi\n");
        assert_eq!(c.exit, Some(0));
    }

    #[test]
    fn posix_window_strips_echo_by_text() {
        let mut c = SendCapture::new("false\n", false);
        c.bytes(b"false\r\n");
        c.marker(Marker::Prompt(1));
        c.bytes(b"$ ");
        assert_eq!(c.output(true), "");
        assert_eq!(c.exit, Some(1));
    }

    #[test]
    fn input_taken_by_the_earlier_command_is_answered_by_its_prompt() {
        let mut c = SendCapture::new("exit(3)\n", true).after_running_commands(1);
        c.bytes(b"exit(3)\r\nbye\r\n");
        c.marker(Marker::Prompt(3));
        c.bytes(b"$ ");
        assert_eq!(c.input_went_to_earlier_command(), Some(3));
        assert_eq!(c.output(true), "bye\n");
        // A typed-ahead command line runs after that prompt instead: the window is its own.
        c.marker(Marker::Start);
        assert_eq!(c.input_went_to_earlier_command(), None);
    }

    #[test]
    fn waiting_prompt_is_the_pending_line() {
        let mut c = SendCapture::new("sudo true\n", true);
        c.marker(Marker::Start);
        c.bytes(b"[sudo] Password: ");
        assert_eq!(c.prompt_line(), "[sudo] Password:");
        assert_eq!(c.output(false), "[sudo] Password: ");
    }
}
