//! Output cleaning (SPEC §7.1): carriage-return collapse, then escape-sequence stripping,
//! streaming and UTF-8 safe.
//!
//! A model reads text, not a terminal. A progress bar that rewrote one line a thousand times
//! becomes its final state; colours, cursor moves and OSC titles disappear. The byte stream is
//! parsed by `vte` (the parser behind Alacritty), which also decodes UTF-8 across chunk
//! boundaries, so a character split between two pipe reads is never mangled and invalid bytes
//! become U+FFFD.
//!
//! The cleaner emits text one *completed line* at a time: a line is only final once its newline
//! arrives, because a later `\r` may still rewrite it. That also makes the merged stdout+stderr
//! stream line-atomic: two streams never interleave inside one line.

/// A line that never ends (a binary blob, `yes | tr -d '\n'`) is flushed once it reaches this
/// size, so memory stays bounded; carriage-return collapse does not reach across the flush.
pub const PENDING_LINE_MAX_BYTES: usize = 64 * 1024;

/// Streaming cleaner for one byte stream.
#[derive(Default)]
pub struct Cleaner {
    parser: vte::Parser,
    line: LineState,
}

#[derive(Default)]
struct LineState {
    /// The line being written; not final until `\n`.
    pending: String,
    /// A `\r` was seen: the next printed character starts the line over.
    carriage_return: bool,
    /// Completed text not yet handed to the caller.
    done: String,
}

impl vte::Perform for LineState {
    fn print(&mut self, c: char) {
        if self.carriage_return {
            self.pending.clear();
            self.carriage_return = false;
        }
        self.pending.push(c);
        if self.pending.len() >= PENDING_LINE_MAX_BYTES {
            self.done.push_str(&self.pending);
            self.pending.clear();
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.carriage_return = false;
                self.done.push_str(&self.pending);
                self.done.push('\n');
                self.pending.clear();
            }
            b'\r' => self.carriage_return = true,
            b'\t' => self.print('\t'),
            // Backspace: spinners and `less`-style overstrike erase the previous character.
            0x08 => {
                self.pending.pop();
            }
            _ => {}
        }
    }
}

impl Cleaner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds raw bytes; returns the text of the lines completed by them (possibly empty).
    pub fn feed(&mut self, bytes: &[u8]) -> &str {
        self.line.done.clear();
        self.parser.advance(&mut self.line, bytes);
        &self.line.done
    }

    /// Ends the stream: returns the unterminated last line, if any.
    pub fn finish(&mut self) -> &str {
        self.line.done.clear();
        std::mem::swap(&mut self.line.done, &mut self.line.pending);
        self.line.carriage_return = false;
        &self.line.done
    }

    /// The line currently being written (for progress messages).
    pub fn pending_line(&self) -> &str {
        &self.line.pending
    }
}

/// Cleans a complete byte string in one go.
pub fn clean_all(bytes: &[u8]) -> String {
    let mut cleaner = Cleaner::new();
    let mut out = cleaner.feed(bytes).to_owned();
    out.push_str(cleaner.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar_collapses_to_final_state() {
        assert_eq!(clean_all(b"10%\r50%\r100%\ndone\n"), "100%\ndone\n");
    }

    #[test]
    fn crlf_keeps_the_line() {
        assert_eq!(clean_all(b"a\r\nb\r\n"), "a\nb\n");
    }

    #[test]
    fn ansi_and_osc_are_stripped() {
        let raw = b"\x1b]0;title\x07\x1b[1;31merror\x1b[0m: \x1b[2Kbad\x1b(B\n";
        assert_eq!(clean_all(raw), "error: bad\n");
    }

    #[test]
    fn utf8_split_across_feeds_is_whole() {
        let text = "héllo→世界\n".as_bytes();
        for cut in 0..text.len() {
            let mut cleaner = Cleaner::new();
            let mut out = cleaner.feed(&text[..cut]).to_owned();
            out.push_str(cleaner.feed(&text[cut..]));
            out.push_str(cleaner.finish());
            assert_eq!(out, "héllo→世界\n", "cut at {cut}");
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement() {
        assert_eq!(clean_all(b"a\xffb\n"), "a\u{fffd}b\n");
    }

    #[test]
    fn backspace_erases() {
        assert_eq!(clean_all(b"ab\x08c\n"), "ac\n");
    }

    #[test]
    fn endless_line_is_flushed_in_bounded_pieces() {
        let mut cleaner = Cleaner::new();
        let chunk = vec![b'x'; PENDING_LINE_MAX_BYTES * 3];
        let out = cleaner.feed(&chunk).len();
        assert!(out >= PENDING_LINE_MAX_BYTES * 2, "flushed {out}");
        assert!(cleaner.pending_line().len() < PENDING_LINE_MAX_BYTES);
    }
}
