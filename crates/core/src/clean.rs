//! Output cleaning (docs/BEHAVIOUR.md §7.1): carriage-return collapse, then escape-sequence stripping,
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
///
/// Why two paths: `vte` hands printable text to [`LineState`] one character at a time, a few
/// hundred MB/s per core, and a background job flooding a pipe would be bound by that. Most
/// output is text (UTF-8 with newlines and tabs) that cleaning leaves exactly as it is. So while
/// the parser is *at rest* (in its ground state, holding no partial character), such text is
/// applied to the line state in bulk, with the same carriage-return and flush rules; escapes,
/// other control characters and invalid bytes go through `vte`. A test checks the text produced
/// is identical to `vte` fed byte by byte, for any input and any chunking.
pub struct Cleaner {
    parser: vte::Parser,
    line: LineState,
    /// The parser is in its ground state with no partial character: text may bypass it.
    at_rest: bool,
    /// The parser may hold part of a character: hand it one byte at a time. (Given more,
    /// `vte` 0.15 skips valid characters after a split one when an invalid byte follows.)
    one_byte: bool,
    /// What [`Cleaner::feed`] returns.
    out: String,
    /// The stream's first escape was met and reported ([`Emit::first_escape`]).
    escape_met: bool,
}

/// Where a cleaner's text goes ([`Cleaner::feed_to`]).
pub trait Emit {
    /// Text of completed lines, in order and possibly in several pieces.
    fn text(&mut self, text: &str);

    /// The stream's first ESC byte, met before the parser takes it (once per cleaner): `at` is
    /// the cleaner there (every line completed before it went to [`Emit::text`]), `rest` this
    /// chunk's raw bytes from the ESC on. The web view's copy starts here (`crate::view_tap`):
    /// output without an escape is scanned once, by the cleaning itself.
    fn first_escape(&mut self, at: &Cleaner, rest: &[u8]) {
        let _ = (at, rest);
    }
}

/// A closure taking text as an [`Emit`] with no interest in escapes.
struct Lines<F>(F);

impl<F: FnMut(&str)> Emit for Lines<F> {
    #[inline]
    fn text(&mut self, text: &str) {
        (self.0)(text);
    }
}

impl Default for Cleaner {
    fn default() -> Self {
        Self {
            parser: vte::Parser::new(),
            line: LineState::default(),
            at_rest: true,
            one_byte: false,
            out: String::new(),
            escape_met: false,
        }
    }
}

#[derive(Default)]
struct LineState {
    /// The line being written; not final until `\n`.
    pending: String,
    /// A `\r` was seen: the next printed character starts the line over.
    carriage_return: bool,
    /// Completed text not yet handed to the caller.
    done: String,
    /// Set by the callbacks that are only made in, or lead back to, the ground state.
    settled: bool,
    /// Keep colour and bold (SGR sequences) in the text: the web view's copy only
    /// ([`Cleaner::keeping_colours`]); what a model reads never has them.
    keep_colours: bool,
    /// The SGR sequence being rebuilt, kept so a coloured flood allocates none per sequence.
    sgr: String,
}

impl LineState {
    /// Prints text with no newline, flushing the pending line where `put_char` would.
    fn print_str(&mut self, mut text: &str) {
        if text.is_empty() {
            return;
        }
        if self.carriage_return {
            self.pending.clear();
            self.carriage_return = false;
        }
        while !text.is_empty() {
            let room = PENDING_LINE_MAX_BYTES
                .saturating_sub(self.pending.len())
                .max(1);
            if text.len() < room {
                self.pending.push_str(text);
                return;
            }
            // `put_char` flushes after the character that brings the line to the limit.
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            self.pending.push_str(&text[..cut]);
            self.done.push_str(&self.pending);
            self.pending.clear();
            text = &text[cut..];
        }
    }

    fn put_char(&mut self, c: char) {
        // C1 controls: `vte` executes them when a slice holds the whole character but prints
        // them when it arrived split; dropping them here makes both cases the same.
        if ('\u{80}'..='\u{9f}').contains(&c) {
            return;
        }
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

    fn end_line(&mut self) {
        self.carriage_return = false;
        self.done.push_str(&self.pending);
        self.done.push('\n');
        self.pending.clear();
    }
}

/// An SGR sequence rebuilt from its parsed parameters into `seq`: only digits, `;` and `:`
/// between `ESC [` and `m`, whatever the command printed.
fn sgr(params: &vte::Params, seq: &mut String) {
    use std::fmt::Write as _;
    seq.clear();
    seq.push_str("\x1b[");
    for (i, param) in params.iter().enumerate() {
        if i > 0 {
            seq.push(';');
        }
        for (j, sub) in param.iter().enumerate() {
            if j > 0 {
                seq.push(':');
            }
            let _ = write!(seq, "{sub}");
        }
    }
    seq.push('m');
}

impl vte::Perform for LineState {
    fn print(&mut self, c: char) {
        self.settled = true;
        self.put_char(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => self.end_line(),
            b'\r' => self.carriage_return = true,
            // Not `print`: a tab executed inside a sequence says nothing about the parser state.
            b'\t' => self.put_char('\t'),
            // Backspace: spinners and `less`-style overstrike erase the previous character.
            0x08 => {
                self.pending.pop();
            }
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], ignore: bool, c: char) {
        self.settled = true;
        if self.keep_colours && c == 'm' && intermediates.is_empty() && !ignore {
            let mut seq = std::mem::take(&mut self.sgr);
            sgr(params, &mut seq);
            self.print_str(&seq);
            self.sgr = seq;
        }
    }

    fn esc_dispatch(&mut self, _: &[u8], _: bool, _: u8) {
        self.settled = true;
    }

    fn osc_dispatch(&mut self, _: &[&[u8]], _: bool) {
        self.settled = true;
    }

    fn unhook(&mut self) {
        self.settled = true;
    }

    /// Stops `advance_until_terminated` once the parser is back on the ground.
    fn terminated(&self) -> bool {
        self.settled
    }
}

impl Cleaner {
    pub fn new() -> Self {
        Self::default()
    }

    /// A cleaner that keeps SGR sequences (colours, bold) and drops every other escape: the
    /// web view's copy of an output, which renders them (`crate::view_tap`).
    pub fn keeping_colours() -> Self {
        let mut cleaner = Self::default();
        cleaner.line.keep_colours = true;
        cleaner
    }

    /// A cleaner keeping colours that goes on from where `other` is: the line it is writing,
    /// and a carriage return waiting to start it over. The web view's copy starts so at an
    /// output's first escape (`crate::view_tap`); the plain text before it is the same.
    pub fn keeping_colours_from(other: &Cleaner) -> Self {
        let mut cleaner = Self::keeping_colours();
        cleaner.line.pending.clone_from(&other.line.pending);
        cleaner.line.carriage_return = other.line.carriage_return;
        cleaner
    }

    /// Feeds raw bytes; returns the text of the lines completed by them (possibly empty).
    pub fn feed(&mut self, bytes: &[u8]) -> &str {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        self.feed_into(bytes, &mut |text| out.push_str(text));
        self.out = out;
        &self.out
    }

    /// Feeds raw bytes; hands the text of the lines completed by them to `emit`, in order and
    /// possibly in several pieces. Lines that pass through unchanged are handed over as slices
    /// of `bytes`, not copied: a flood is copied once, by the caller, into its buffer.
    pub fn feed_into(&mut self, bytes: &[u8], emit: &mut impl FnMut(&str)) {
        self.feed_to(bytes, &mut Lines(emit));
    }

    /// [`Cleaner::feed_into`], telling `emit` of the stream's first escape too.
    pub fn feed_to(&mut self, bytes: &[u8], emit: &mut impl Emit) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let used = if self.at_rest {
                self.feed_at_rest(rest, emit)
            } else if self.escape_met {
                self.feed_parser(rest)
            } else {
                self.feed_parser_watching(rest, emit)
            };
            rest = &rest[used..];
        }
        if !self.line.done.is_empty() {
            emit.text(&self.line.done);
            self.line.done.clear();
        }
    }

    /// Off rest before the stream's first escape (a cut, invalid or C1 character took the
    /// parser's path): through the parser up to the first ESC, never past it, so that it is
    /// met however the parser got here. One byte at a time while a character may be cut.
    #[cold]
    #[inline(never)]
    fn feed_parser_watching(&mut self, rest: &[u8], emit: &mut impl Emit) -> usize {
        if rest[0] == 0x1b {
            self.meet_escape(rest, emit);
            return 1;
        }
        if self.one_byte {
            return self.feed_parser(rest);
        }
        let end = memchr::memchr(0x1b, rest).unwrap_or(rest.len());
        self.feed_parser(&rest[..end])
    }

    /// The stream's first ESC, at the start of `rest`: the parser takes it alone (a character it
    /// cuts short becomes U+FFFD, in the line the copy starts from), the lines completed before
    /// it go out, then [`Emit::first_escape`] with `rest` from the ESC on.
    #[cold]
    #[inline(never)]
    fn meet_escape(&mut self, rest: &[u8], emit: &mut impl Emit) {
        self.escape_met = true;
        self.parser.advance(&mut self.line, &rest[..1]);
        self.at_rest = false;
        self.one_byte = false;
        if !self.line.done.is_empty() {
            emit.text(&self.line.done);
            self.line.done.clear();
        }
        emit.first_escape(self, rest);
    }

    /// The next ESC is reported as the first ([`Emit::first_escape`]): the cleaners of a call
    /// handed over to a job, whose view copy is a new one (`jobs::command::adopt`).
    pub fn watch_for_escape_again(&mut self) {
        self.escape_met = false;
    }

    /// Applies text with no control character but `\n` and `\t`, as `vte` would, in bulk.
    fn text(&mut self, text: &str, emit: &mut impl Emit) {
        let line = &mut self.line;
        let Some(first) = memchr::memchr(b'\n', text.as_bytes()) else {
            line.print_str(text);
            return;
        };
        line.print_str(&text[..first]);
        line.end_line();
        // After a newline the line is empty and no `\r` is pending, so the complete lines that
        // follow come out exactly as they are, whatever their length: passed on, not copied.
        let rest = &text[first + 1..];
        let last = memchr::memrchr(b'\n', rest.as_bytes()).map_or(0, |i| i + 1);
        if last > 0 {
            if !line.done.is_empty() {
                emit.text(&line.done);
                line.done.clear();
            }
            emit.text(&rest[..last]);
        }
        line.print_str(&rest[last..]);
    }

    /// At rest: text in bulk, or one step through the parser. Returns the bytes used (0 only
    /// when it leaves the rest state, so the next step goes through the parser).
    fn feed_at_rest(&mut self, bytes: &[u8], emit: &mut impl Emit) -> usize {
        let ascii = ascii_text_prefix_len(bytes);
        let valid = if ascii == bytes.len() || ends_text(bytes[ascii]) {
            // SAFETY: every byte of the prefix was just checked to be ASCII.
            unsafe { std::str::from_utf8_unchecked(&bytes[..ascii]) }
        } else {
            let candidate = &bytes[..ascii + text_prefix_len(&bytes[ascii..])];
            match std::str::from_utf8(candidate) {
                Ok(text) => text,
                // SAFETY: `valid_up_to` bytes were just checked to be UTF-8.
                Err(e) => unsafe { std::str::from_utf8_unchecked(&candidate[..e.valid_up_to()]) },
            }
        };
        if !valid.is_empty() {
            self.text(valid, emit);
            return valid.len();
        }
        match bytes[0] {
            0x1b if !self.escape_met => {
                self.meet_escape(bytes, emit);
                1
            }
            0x1b => {
                self.at_rest = false;
                0
            }
            0x80.. => {
                // A C1 control, an invalid byte or a cut character. Whole characters leave the
                // parser at rest; one cut by the chunk's end (or by an ASCII byte) is finished
                // one byte at a time, as the parser sees it.
                let run = bytes.iter().position(u8::is_ascii).unwrap_or(bytes.len());
                let whole = run - incomplete_tail_len(&bytes[..run]);
                self.parser.advance(&mut self.line, &bytes[..whole]);
                if whole < run {
                    self.at_rest = false;
                    self.one_byte = true;
                }
                whole
            }
            // Another C0 control or DEL: executed (or printed) in the ground state, which the
            // parser does not leave for them.
            _ => {
                self.parser.advance(&mut self.line, &bytes[..1]);
                1
            }
        }
    }

    /// Away from rest: through the parser until it is back on the ground. Back at rest when a
    /// ground-only callback fired and the last byte taken was neither an ESC (which can end a
    /// string and start a sequence in one step) nor a UTF-8 lead byte (which can start a new
    /// partial character after finishing or replacing one), and the bytes taken do not end
    /// inside a character (text after a sequence, `\x1b\x18ab\xf0\x9f`, leaves its last one
    /// cut in the parser though the last byte is no lead byte).
    fn feed_parser(&mut self, bytes: &[u8]) -> usize {
        self.line.settled = false;
        let used = if self.one_byte {
            self.parser.advance(&mut self.line, &bytes[..1]);
            1
        } else {
            let used = self.parser.advance_until_terminated(&mut self.line, bytes);
            if used == 0 {
                // Not expected (the parser takes at least one byte); stay total regardless.
                self.parser.advance(&mut self.line, &bytes[..1]);
                1
            } else {
                used
            }
        };
        let last = bytes[used - 1];
        // Only bytes ending in a non-ASCII one can leave a character cut.
        let cut = !last.is_ascii() && (last >= 0xc0 || incomplete_tail_len(&bytes[..used]) > 0);
        self.at_rest = self.line.settled && last != 0x1b && !cut;
        self.one_byte = !self.at_rest && !last.is_ascii();
        used
    }

    /// Ends the stream: returns the unterminated last line, if any.
    pub fn finish(&mut self) -> &str {
        self.out.clear();
        std::mem::swap(&mut self.out, &mut self.line.pending);
        self.line.carriage_return = false;
        &self.out
    }

    /// The line currently being written (for progress messages).
    pub fn pending_line(&self) -> &str {
        &self.line.pending
    }
}

/// Bytes that end a bulk run: ESC, C0 controls but `\n` and `\t`, DEL, and `0xC2`, the lead
/// byte of the C1 controls (U+0080 to U+009F; a few printable Latin-1 characters share it and
/// simply take the parser's path).
fn ends_text(b: u8) -> bool {
    (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || b == 0xc2
}

/// Printable ASCII, `\n` and `\t`: text that needs no UTF-8 check.
fn is_plain_ascii(b: u8) -> bool {
    b.wrapping_sub(b' ') < 0x5f || b == b'\n' || b == b'\t'
}

/// Length of the leading run of plain ASCII: the common flood, checked in one pass.
fn ascii_text_prefix_len(bytes: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let mut done = 0;
    for block in bytes.chunks_exact(BLOCK) {
        if !block.iter().fold(true, |all, &b| all & is_plain_ascii(b)) {
            break;
        }
        done += BLOCK;
    }
    done + bytes[done..]
        .iter()
        .position(|&b| !is_plain_ascii(b))
        .unwrap_or(bytes.len() - done)
}

/// Length of the leading run of bytes that may be text. Checks 64 bytes at a time without an
/// early exit, which the compiler turns into vector instructions: floods scan at memory speed.
fn text_prefix_len(bytes: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let mut done = 0;
    for block in bytes.chunks_exact(BLOCK) {
        if block.iter().fold(false, |any, &b| any | ends_text(b)) {
            break;
        }
        done += BLOCK;
    }
    done + bytes[done..]
        .iter()
        .position(|&b| ends_text(b))
        .unwrap_or(bytes.len() - done)
}

/// Bytes at the end of `bytes` that begin a character but do not finish it (0 to 3).
fn incomplete_tail_len(bytes: &[u8]) -> usize {
    let is_continuation = |b: u8| b & 0xc0 == 0x80;
    let Some(lead) = bytes
        .iter()
        .rev()
        .take(4)
        .position(|&b| !is_continuation(b))
        .map(|back| bytes.len() - 1 - back)
    else {
        return 0;
    };
    match std::str::from_utf8(&bytes[lead..]) {
        Err(e) if e.valid_up_to() == 0 && e.error_len().is_none() => bytes.len() - lead,
        _ => 0,
    }
}

/// Cleans a complete byte string in one go (the unit tests' shorthand).
#[cfg(test)]
pub fn clean_all(bytes: &[u8]) -> String {
    let mut cleaner = Cleaner::new();
    let mut out = cleaner.feed(bytes).to_owned();
    out.push_str(cleaner.finish());
    out
}

#[cfg(test)]
#[path = "clean_tests.rs"]
pub(crate) mod tests;
