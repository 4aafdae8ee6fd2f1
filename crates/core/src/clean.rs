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

/// Put where a newline cut an escape string left open (see [`Cleaner::cut_open_string`]).
pub const OPEN_ESCAPE_CUT: &str =
    "[an escape sequence was left open: the rest of this line was dropped]";

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

/// One terminal line as it is written: the text left of the cursor, and what a terminal still
/// shows right of it (after `\r`, a backspace or a move left), which printed characters
/// overwrite one by one (review 35 F8: dropping it hid what a terminal shows, a `FAILED` that
/// a shorter `\rok` only partly covers). Every move costs at most the characters it passes,
/// and only `\r` and moves left pass them to the right, once each per character written: a
/// command cannot make the cleaning cost more than its output's length.
#[derive(Default)]
struct LineState {
    /// The line left of the cursor; not final until `\n`.
    pending: String,
    /// The line right of the cursor, last character first (so the one under the cursor is
    /// popped, and one moved left is pushed, in O(1)).
    right: String,
    /// A `\r` came and nothing since: the cursor is at the line's start, and `pending` (with
    /// `right` empty) is all right of it. Moved there only when something is written (a
    /// terminal's `\r\n` line endings cost nothing).
    returned: bool,
    /// Completed text not yet handed to the caller.
    done: String,
    /// Set by the callbacks that are only made in, or lead back to, the ground state.
    settled: bool,
    /// Lines ended so far: whether the parser took a newline as one.
    lines_ended: u64,
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
        self.settle_return();
        if !self.right.is_empty() {
            // Over what a terminal still shows: a character at a time, each in its column.
            text.chars().for_each(|c| self.put_char(c));
            return;
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
            self.hand_over();
            text = &text[cut..];
        }
    }

    /// A zero-width escape kept in the text (an SGR sequence of the web view's copy): where
    /// the cursor is, overwriting nothing.
    fn put_escape(&mut self, seq: &str) {
        self.settle_return();
        self.pending.push_str(seq);
        if self.pending.len() >= PENDING_LINE_MAX_BYTES {
            self.hand_over();
        }
    }

    fn put_char(&mut self, c: char) {
        // C1 controls: `vte` executes them when a slice holds the whole character but prints
        // them when it arrived split; dropping them here makes both cases the same.
        if ('\u{80}'..='\u{9f}').contains(&c) {
            return;
        }
        self.settle_return();
        if !self.right.is_empty() {
            self.drop_under_cursor();
        }
        self.pending.push(c);
        if self.pending.len() >= PENDING_LINE_MAX_BYTES {
            self.hand_over();
        }
    }

    /// The character under the cursor, about to be overwritten, goes.
    fn drop_under_cursor(&mut self) {
        self.right.pop();
    }

    /// The whole line as a terminal shows it.
    fn shown(&self) -> std::borrow::Cow<'_, str> {
        if self.right.is_empty() {
            std::borrow::Cow::Borrowed(&self.pending)
        } else {
            let mut line = self.pending.clone();
            line.extend(self.right.chars().rev());
            std::borrow::Cow::Owned(line)
        }
    }

    /// The line so far goes to `done` without a newline (it reached the pending limit).
    fn hand_over(&mut self) {
        self.returned = false;
        self.done.push_str(&self.pending);
        self.done.extend(self.right.chars().rev());
        self.pending.clear();
        self.right.clear();
    }

    fn end_line(&mut self) {
        self.lines_ended += 1;
        self.hand_over();
        self.done.push('\n');
    }

    /// A move the line does not follow (right, to a column or a position, up or down, a
    /// restored cursor, blanks inserted before it): on a terminal, what is printed next lands
    /// elsewhere than under this cursor. Where something of the line is right of the cursor,
    /// printing it here would write over what a terminal still shows (`FAILED\r\e[6Cok` read
    /// `okILED`, review 42 M1's other rows), so the line ends here instead: what follows starts
    /// a line of its own, and nothing is hidden. At the line's end it goes on as written. Not
    /// counted as a line ended by a newline ([`Cleaner::feed_parser`] asks that of the parser).
    fn cursor_moved_away(&mut self) {
        let written_right = !self.right.is_empty() || (self.returned && !self.pending.is_empty());
        if written_right {
            self.hand_over();
            self.done.push('\n');
        }
    }

    /// `\r`: the cursor to the line's start; all of it is right of the cursor now.
    fn carriage_return(&mut self) {
        if self.right.is_empty() {
            self.returned = !self.pending.is_empty();
        } else {
            self.pending_to_right();
        }
    }

    /// Where a `\r` left the cursor at the start, the line goes right of it before anything
    /// is written there.
    fn settle_return(&mut self) {
        if std::mem::take(&mut self.returned) {
            self.pending_to_right();
        }
    }

    /// All of the line left of the cursor goes right of it. The web view's copy keeps its text
    /// there, not its colours (review 42 H1, H2): a run of colour sequences, which takes no
    /// column, would otherwise move back and forth whole with every `\rx` a command printed,
    /// and pile up right of the cursor with every `ESC[1m\r`. Each sequence is dropped once,
    /// so moves stay linear in the output and the line bounded.
    fn pending_to_right(&mut self) {
        if self.keep_colours && self.pending.contains('\x1b') {
            let mut in_escape = false;
            let visible: String = self
                .pending
                .chars()
                .filter(|&c| {
                    let was = in_escape;
                    in_escape = (in_escape || c == '\x1b') && c != 'm';
                    !was && c != '\x1b'
                })
                .collect();
            self.right.extend(visible.chars().rev());
        } else {
            self.right.extend(self.pending.chars().rev());
        }
        self.pending.clear();
    }

    /// `CSI K`: the line right of the cursor is erased.
    fn erase_right(&mut self) {
        if std::mem::take(&mut self.returned) {
            self.pending.clear();
        }
        self.right.clear();
    }

    /// The cursor `n` columns left, not past the line's start (backspace, `CSI n D`). The web
    /// view's copy drops the colour sequences it passes (see [`LineState::pending_to_right`]).
    fn cursor_left(&mut self, n: usize) {
        if self.returned {
            return;
        }
        for _ in 0..n {
            while self.keep_colours {
                let tail = sgr_tail_len(&self.pending);
                if tail == 0 {
                    break;
                }
                self.pending.truncate(self.pending.len() - tail);
            }
            match self.pending.pop() {
                Some(c) => self.right.push(c),
                None => return,
            }
        }
    }
}

/// The length of the SGR sequence `text` ends with (`ESC [` digits `;` `:` `m`), or 0. Looks
/// back no further than the longest one [`sgr`] makes, so a move left costs the same on any
/// line (a long run of digits before an `m` cannot make each step scan it).
fn sgr_tail_len(text: &str) -> usize {
    // vte's 32 parameters, each at most 5 digits and a separator.
    const SGR_PARAMS_MAX: usize = 200;
    let Some((b'm', body)) = text.as_bytes().split_last() else {
        return 0;
    };
    let params = body
        .iter()
        .rev()
        .take(SGR_PARAMS_MAX)
        .take_while(|&&b| b.is_ascii_digit() || b == b';' || b == b':')
        .count();
    match body.len().checked_sub(params + 2) {
        Some(start) if &body[start..start + 2] == b"\x1b[" => text.len() - start,
        _ => 0,
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
            // A vertical tab and a form feed move down a line as `\n` does on a terminal: the
            // next text does not write over this line (review 42 M1).
            b'\n' | 0x0b | 0x0c => self.end_line(),
            b'\r' => self.carriage_return(),
            // Not `print`: a tab executed inside a sequence says nothing about the parser state.
            b'\t' => self.put_char('\t'),
            // Backspace moves left: spinners and `less`-style overstrike write over it.
            0x08 => self.cursor_left(1),
            _ => {}
        }
    }

    /// Colours (the web view's copy only) and the moves and erasures progress bars make in
    /// one line: `CSI n D` left, `CSI G` (column 1) to the start, `CSI K` erasing right of the
    /// cursor and `CSI 2 K` all of the line (its blanks left of the cursor not kept). The moves
    /// it does not follow end the line where it was written over ([`LineState::cursor_moved_away`]):
    /// right (`C`, `a`, forward tabs `I`), to a column (`G` past column 1, `` ` ``, `d`), to a
    /// position (`H`, `f`, margins `r`), up or down (`A`, `B`, `e`, `E`, `F`, scrolls `S`, `T`,
    /// lines inserted or deleted `L`, `M`), blanks inserted (`@`), a restored cursor (`u`).
    /// Moves left it does not follow (back tabs) and erasures (`J`, `X`, `P`) are dropped: the
    /// line keeps more than a terminal shows, never less.
    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], ignore: bool, c: char) {
        self.settled = true;
        if !intermediates.is_empty() || ignore {
            return;
        }
        let first = params.iter().next().and_then(|p| p.first().copied());
        match (c, first.unwrap_or(0)) {
            ('m', _) if self.keep_colours => {
                let mut seq = std::mem::take(&mut self.sgr);
                sgr(params, &mut seq);
                self.put_escape(&seq);
                self.sgr = seq;
            }
            ('D', n) => self.cursor_left(usize::from(n.max(1))),
            ('G' | '`', 0 | 1) => self.carriage_return(),
            ('K', 0) => self.erase_right(),
            ('K', 2) => {
                self.returned = false;
                self.pending.clear();
                self.right.clear();
            }
            ('G' | '`', _) | ('C' | 'a' | 'I' | 'd' | 'H' | 'f' | 'r' | 'u' | '@', _) => {
                self.cursor_moved_away();
            }
            ('A' | 'B' | 'e' | 'E' | 'F' | 'S' | 'T' | 'L' | 'M', _) => self.cursor_moved_away(),
            _ => {}
        }
    }

    /// `ESC D` and `ESC E` move down a line, as `\n` does; `ESC M` (up a line), `ESC 8` (a
    /// saved cursor restored) and `ESC c` (a reset) move where the line does not follow
    /// ([`LineState::cursor_moved_away`]).
    fn esc_dispatch(&mut self, intermediates: &[u8], ignore: bool, byte: u8) {
        self.settled = true;
        if !intermediates.is_empty() || ignore {
            return;
        }
        match byte {
            b'D' | b'E' => self.end_line(),
            b'M' | b'8' | b'c' => self.cursor_moved_away(),
            _ => {}
        }
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
    /// and where its cursor is. The web view's copy starts so at an
    /// output's first escape (`crate::view_tap`); the plain text before it is the same.
    pub fn keeping_colours_from(other: &Cleaner) -> Self {
        let mut cleaner = Self::keeping_colours();
        cleaner.line.pending.clone_from(&other.line.pending);
        cleaner.line.right.clone_from(&other.line.right);
        cleaner.line.returned = other.line.returned;
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
    ///
    /// A newline is the last byte of a step: where the parser did not take it as the end of a
    /// line, it was inside an escape string left open, which is cut there
    /// ([`Cleaner::cut_open_string`]).
    fn feed_parser(&mut self, bytes: &[u8]) -> usize {
        self.line.settled = false;
        let lines = self.line.lines_ended;
        let used = if self.one_byte {
            self.parser.advance(&mut self.line, &bytes[..1]);
            1
        } else {
            let step = memchr::memchr(b'\n', bytes).map_or(bytes, |at| &bytes[..=at]);
            let used = self.parser.advance_until_terminated(&mut self.line, step);
            if used == 0 {
                // Not expected (the parser takes at least one byte); stay total regardless.
                self.parser.advance(&mut self.line, &bytes[..1]);
                1
            } else {
                used
            }
        };
        let last = bytes[used - 1];
        if last == b'\n' && self.line.lines_ended == lines {
            self.cut_open_string();
            return used;
        }
        // Only bytes ending in a non-ASCII one can leave a character cut.
        let cut = !last.is_ascii() && (last >= 0xc0 || incomplete_tail_len(&bytes[..used]) > 0);
        self.at_rest = self.line.settled && last != 0x1b && !cut;
        self.one_byte = !self.at_rest && !last.is_ascii();
        used
    }

    /// A newline inside an escape string (OSC, DCS, SOS, PM, APC) that was never ended: a
    /// terminal would go on hiding every byte until the string's end, so one `ESC _` printed by
    /// any process of a command hid all that came after it on that stream, a failing test's
    /// summary included (review 35, F2). The line ends here instead, saying so, and the parser
    /// is sent back to the ground (CAN) for the lines after it.
    #[cold]
    #[inline(never)]
    fn cut_open_string(&mut self) {
        self.parser.advance(&mut self.line, &[0x18]);
        self.line.print_str(OPEN_ESCAPE_CUT);
        self.line.end_line();
        self.at_rest = true;
        self.one_byte = false;
    }

    /// Ends the stream: returns the unterminated last line, if any.
    pub fn finish(&mut self) -> &str {
        self.out.clear();
        self.out.push_str(&self.line.shown());
        self.line.pending.clear();
        self.line.right.clear();
        self.line.returned = false;
        &self.out
    }

    /// The line currently being written, as a terminal shows it (for progress messages).
    pub fn pending_line(&self) -> std::borrow::Cow<'_, str> {
        self.line.shown()
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
