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
/// overwrite column by column (a wide character is two) (review 35 F8: dropping it hid what a terminal shows, a `FAILED` that
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
    /// Insert mode (`CSI 4 h`): a terminal shifts what the cursor stands on right as text
    /// comes, so the line takes no move left while it is on (see [`LineState::unsynced`]).
    insert: bool,
    /// Where the terminal's cursor stands is not known to be where the line has it: after a
    /// move the line does not follow, a tab, a zero-width or combining character, a move left
    /// into a wide character, a vertical move
    /// that keeps the column, an erasure of the line that keeps it, a flush at the pending
    /// limit. Then what is printed goes at the line's end and writes over nothing, and a move
    /// left or `\r` ends the line instead (a `\r` then starts the next in step with the
    /// terminal): the text keeps more than a terminal shows, never less (review 44 H1, H2).
    /// Nothing stands right of the cursor while it is set.
    unsynced: bool,
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
        if !self.unsynced && !all_columns_known(text) {
            self.unsynced = true;
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
            self.flush_full();
            text = &text[cut..];
        }
    }

    /// A zero-width escape kept in the text (an SGR sequence of the web view's copy): where
    /// the cursor is, overwriting nothing.
    fn put_escape(&mut self, seq: &str) {
        self.settle_return();
        self.pending.push_str(seq);
        if self.pending.len() >= PENDING_LINE_MAX_BYTES {
            self.flush_full();
        }
    }

    fn put_char(&mut self, c: char) {
        // C1 controls: `vte` executes them when a slice holds the whole character but prints
        // them when it arrived split; both cases go the same way.
        if ('\u{80}'..='\u{9f}').contains(&c) {
            self.c1_control(c as u8);
            return;
        }
        // DEL: a terminal shows nothing for it.
        if c == '\x7f' {
            return;
        }
        self.settle_return();
        match columns(c) {
            // One column over one ASCII character, the common case: that character goes.
            Some(1) if self.right.as_bytes().last().is_some_and(u8::is_ascii) => {
                self.right.pop();
            }
            Some(width) if !self.right.is_empty() => self.write_over(width),
            Some(_) => {}
            None => {
                // A tab, a zero-width or combining character: its columns are not known here.
                // Over the line, it goes on a line of its own.
                if !self.right.is_empty() {
                    self.break_line();
                }
                self.unsynced = true;
            }
        }
        self.pending.push(c);
        if self.pending.len() >= PENDING_LINE_MAX_BYTES {
            self.flush_full();
        }
    }

    /// A C1 control (U+0080 to U+009F, which some terminals act on): `NEL` ends the line as
    /// `\n` does, `IND` moves down as a vertical tab does, `HTS` and `ST` move nothing, and any
    /// other may move the cursor or start a sequence (`CSI`, `RI`): a move away.
    fn c1_control(&mut self, code: u8) {
        match code {
            0x85 => self.end_line(),
            0x84 => self.move_down(),
            0x88 | 0x9c => {}
            _ => self.cursor_moved_away(),
        }
    }

    /// The `width` columns under the cursor, about to be written over, go (as on a terminal: a
    /// wide character half covered is blanked, its other half left as a space).
    fn write_over(&mut self, width: usize) {
        let mut covered = 0;
        while covered < width {
            match self.right.pop() {
                // Only characters of one or two columns are ever right of the cursor.
                Some(under) => covered += columns(under).unwrap_or(1),
                None => return,
            }
        }
        for _ in width..covered {
            self.right.push(' ');
        }
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

    /// The line reached the pending limit: it goes to `done` without a newline, and the next
    /// part starts where the terminal's cursor is not at its line's start.
    fn flush_full(&mut self) {
        self.hand_over();
        self.unsynced = true;
    }

    /// The line so far, if any, ends here with a newline no parser took (not counted in
    /// `lines_ended`): what comes next starts a line of its own.
    fn break_line(&mut self) {
        if !self.pending.is_empty() || !self.right.is_empty() {
            self.hand_over();
            self.done.push('\n');
        }
        self.returned = false;
    }

    /// The line so far goes to `done` without a newline.
    fn hand_over(&mut self) {
        self.returned = false;
        self.done.push_str(&self.pending);
        self.done.extend(self.right.chars().rev());
        self.pending.clear();
        self.right.clear();
    }

    /// The line ends. Only a `\n` is counted in `lines_ended` (by `execute`): a vertical tab
    /// or `ESC E` before an escape string left open must not pass for the newline that cuts it.
    fn end_line(&mut self) {
        self.hand_over();
        self.done.push('\n');
        self.unsynced = false;
    }

    /// A vertical tab, a form feed, `ESC D`, `IND`: down a line, in the same column. The line
    /// ends, and the next starts in step with the terminal only if the column was its first.
    fn move_down(&mut self) {
        let off_start = self.unsynced || self.column_past_start();
        self.end_line();
        self.unsynced = off_start;
    }

    /// Whether something of the line stands right of the cursor.
    fn text_right_of_cursor(&self) -> bool {
        !self.right.is_empty() || (self.returned && !self.pending.is_empty())
    }

    /// Whether the cursor stands past the line's first column.
    fn column_past_start(&self) -> bool {
        !self.returned && !self.pending.is_empty()
    }

    /// A move the line does not follow (right, to a column or a position, up or down, a
    /// restored cursor, blanks inserted before it): on a terminal, what is printed next lands
    /// elsewhere than under this cursor. Where something of the line is right of the cursor,
    /// printing it here would write over what a terminal still shows (`FAILED\r\e[6Cok` read
    /// `okILED`, review 42 M1's other rows), so the line ends here instead. Either way the
    /// cursor is out of step from now on ([`LineState::unsynced`]).
    fn cursor_moved_away(&mut self) {
        if self.text_right_of_cursor() {
            self.break_line();
        }
        self.returned = false;
        self.unsynced = true;
    }

    /// A move left while the line takes none (insert mode, or out of step): the line ends
    /// where something of it is left of the cursor, so nothing is written over.
    fn left_out_of_step(&mut self) {
        if !self.pending.is_empty() {
            self.break_line();
        }
        self.unsynced = true;
    }

    /// `\r`: the cursor to the line's start; all of it is right of the cursor now.
    fn carriage_return(&mut self) {
        if self.insert || self.unsynced {
            // The next line starts at the terminal's first column: in step again.
            self.break_line();
            self.unsynced = false;
            return;
        }
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

    /// What a sequence does to the line (but a colour, which [`vte::Perform::csi_dispatch`]
    /// keeps itself): one place for both tables' effects.
    fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Colour | Effect::Nothing => {}
            Effect::Left(n) => self.cursor_left(n),
            Effect::Down => self.move_down(),
            Effect::LineStart => self.carriage_return(),
            Effect::EraseRight => self.erase_right(),
            Effect::EraseLine => {
                // The cursor stays in its column.
                self.unsynced |= self.column_past_start();
                self.returned = false;
                self.pending.clear();
                self.right.clear();
            }
            Effect::Insert(on) => {
                // What stands right of the cursor would be shifted as text comes.
                if on && self.text_right_of_cursor() {
                    self.break_line();
                }
                self.insert = on;
            }
            Effect::Away => self.cursor_moved_away(),
            Effect::Reset => {
                self.insert = false;
                self.cursor_moved_away();
            }
            Effect::NewLine => self.end_line(),
        }
    }

    /// The cursor `n` columns left, not past the line's start (backspace, `CSI n D`). The web
    /// view's copy drops the colour sequences it passes (see [`LineState::pending_to_right`]).
    fn cursor_left(&mut self, n: usize) {
        if self.insert || self.unsynced {
            self.left_out_of_step();
            return;
        }
        if self.returned {
            return;
        }
        let mut left = n;
        while left > 0 {
            while self.keep_colours {
                let tail = sgr_tail_len(&self.pending);
                if tail == 0 {
                    break;
                }
                self.pending.truncate(self.pending.len() - tail);
            }
            let Some(c) = self.pending.chars().next_back() else {
                return;
            };
            // In step, every character left of the cursor is one or two columns wide.
            let width = columns(c).unwrap_or(1);
            if width > left {
                // Into the second half of a wide character: not followed.
                self.left_out_of_step();
                return;
            }
            self.pending.pop();
            self.right.push(c);
            left -= width;
        }
    }
}

/// The columns a terminal moves its cursor for `c`, where the line can follow them: 1, or 2
/// for a wide character. `None` for a tab (to the next stop), a combining or zero-width
/// character (none), a control.
fn columns(c: char) -> Option<usize> {
    use unicode_width::UnicodeWidthChar as _;
    // Printable ASCII, most of what is written over: no table to look up.
    if (' '..='~').contains(&c) {
        return Some(1);
    }
    match c.width() {
        Some(width @ 1..=2) if c != '\t' => Some(width),
        _ => None,
    }
}

/// Whether every character of `text` (no controls but tabs) has [`columns`]; ASCII text needs
/// only a look for a tab.
fn all_columns_known(text: &str) -> bool {
    if text.is_ascii() {
        memchr::memchr(b'\t', text.as_bytes()).is_none()
    } else {
        text.chars().all(|c| columns(c).is_some())
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

/// What an escape sequence does to the line being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Nothing the line shows: dropped. Erasures that leave the cursor where it is (the text
    /// keeps more than a terminal shows, never less), reports, modes and settings that move
    /// nothing.
    Nothing,
    /// Colour and bold (SGR): kept in the web view's copy only.
    Colour,
    /// The cursor `n` columns left (`CSI n D`).
    Left(usize),
    /// The cursor to the line's start (`CSI G`, `CSI 1 G`).
    LineStart,
    /// The line right of the cursor erased (`CSI K`).
    EraseRight,
    /// The whole line erased (`CSI 2 K`).
    EraseLine,
    /// Insert mode on or off (`CSI 4 h`, `CSI 4 l`; a soft reset turns it off).
    Insert(bool),
    /// The line ends, as with a newline (`ESC E`).
    NewLine,
    /// Down a line in the same column (`ESC D`), as a vertical tab.
    Down,
    /// The cursor goes where the line does not follow ([`LineState::cursor_moved_away`]).
    Away,
    /// A terminal reset (`ESC c`): insert mode off, and the cursor away.
    Reset,
}

/// DEC private modes (`CSI ? n h`, `CSI ? n l`) that move no text and no cursor: cursor keys,
/// reverse video, autowrap, auto-repeat, mouse reporting and its encodings, the cursor's
/// blinking and showing, focus events, bracketed paste, synchronized output. Any other (origin
/// mode and the alternate screen move the cursor or the text) counts as a move away.
const QUIET_PRIVATE_MODES: &[u16] = &[
    1, 5, 7, 8, 9, 12, 25, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1015, 1016, 1034, 1036,
    1042, 2004, 2026, 2027,
];

/// What a CSI sequence does to the line (review 35 F8, reviews 42 M1, 44, 45). An allowlist: a
/// sequence not known to leave the cursor where the line has it (or to move it as the line
/// follows) is a move away, so that no sequence a terminal acts on can make later text write
/// over what it still shows. Those `vte` gives up on (too many parameters or intermediates)
/// too, but for colours, and one that may set insert mode.
pub(crate) fn csi_effect(
    params: &vte::Params,
    intermediates: &[u8],
    ignore: bool,
    c: char,
) -> Effect {
    let first = params
        .iter()
        .next()
        .and_then(|p| p.first().copied())
        .unwrap_or(0);
    // Each mode one number (no sub-parameters), and `quiet`.
    let each_mode =
        |quiet: &dyn Fn(u16) -> bool| params.iter().all(|p| matches!(p, &[mode] if quiet(mode)));
    if ignore {
        // One `vte` gives up on may still set insert mode on a terminal.
        return match c {
            'm' => Effect::Nothing,
            'h' => Effect::Insert(true),
            _ => Effect::Away,
        };
    }
    match intermediates {
        [] => match (c, first) {
            ('m', _) => Effect::Colour,
            ('D', n) => Effect::Left(usize::from(n.max(1))),
            ('G' | '`', 0 | 1) => Effect::LineStart,
            ('K', 0) => Effect::EraseRight,
            ('K', 2) => Effect::EraseLine,
            ('h' | 'l', _) if !each_mode(&|m| m != 4) => Effect::Insert(c == 'h'),
            // Erasures that leave the cursor (left of it, the screen, characters), reports,
            // window operations, tab stops cleared, printing, modes other than insert (none
            // moves the cursor).
            ('K' | 'J' | 'X' | 'P' | 'n' | 'c' | 't' | 'g' | 'i' | 'h' | 'l', _) => Effect::Nothing,
            _ => Effect::Away,
        },
        [b'?'] => match c {
            'h' | 'l' if each_mode(&|m| QUIET_PRIVATE_MODES.contains(&m)) => Effect::Nothing,
            // Selective erasures, reports, a kitty keyboard query, modes saved.
            'J' | 'K' | 'n' | 'c' | 'u' | 'm' | 's' => Effect::Nothing,
            _ => Effect::Away,
        },
        // A soft reset (`CSI ! p`) turns insert mode off and moves nothing.
        [b'!'] if c == 'p' => Effect::Insert(false),
        // The cursor's style (`CSI n SP q`), protection (`CSI " q`), device attributes, mode
        // requests, rectangle operations and key modifiers (`>`, `=`, `$`): settings, reports
        // and changes that move no cursor. Not the shifts (`CSI SP @`, `CSI SP A`, `CSI ' }`).
        [b' ' | b'"'] if c == 'q' => Effect::Nothing,
        // Not the status line chosen or shown (`CSI n $ }`, `$ ~`, review 45 A1: text then goes
        // to another row) nor the columns per page set (`$ |`).
        [b'$'] if !matches!(c, '}' | '~' | '|') => Effect::Nothing,
        [b'>' | b'='] => Effect::Nothing,
        _ => Effect::Away,
    }
}

/// What an ESC sequence does to the line: `ESC D` and `ESC E` move down a line, as `\n` does;
/// `ESC M` (up), `ESC 8` (a saved cursor restored), `ESC 9` (forward) and `ESC # 8` (the screen
/// filled, the cursor home) move away; `ESC c` resets. Charset designations, keypad modes, a
/// saved cursor, tab stops and the string terminator change nothing the line shows.
pub(crate) fn esc_effect(intermediates: &[u8], ignore: bool, byte: u8) -> Effect {
    if ignore {
        return Effect::Nothing;
    }
    match (intermediates, byte) {
        ([], b'E') => Effect::NewLine,
        ([], b'D') => Effect::Down,
        // Up, a restored cursor, forward and back index, the screen filled (the cursor home),
        // and the VT52 moves (`ESC A B C H I Y`, after `CSI ? 2 l`).
        ([], b'M' | b'8' | b'9' | b'6' | b'A' | b'B' | b'C' | b'H' | b'I' | b'Y')
        | ([b'#'], b'8') => Effect::Away,
        ([], b'c') => Effect::Reset,
        _ => Effect::Nothing,
    }
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
            b'\n' => {
                self.lines_ended += 1;
                self.end_line();
            }
            0x0b | 0x0c => self.move_down(),
            b'\r' => self.carriage_return(),
            // Not `print`: a tab executed inside a sequence says nothing about the parser state.
            b'\t' => self.put_char('\t'),
            // Backspace moves left: spinners and `less`-style overstrike write over it.
            0x08 => self.cursor_left(1),
            0x80..=0x9f => self.c1_control(byte),
            _ => {}
        }
    }

    /// What [`csi_effect`] says of the sequence: a colour kept in the web view's copy here (it
    /// needs the parameters), the rest as [`LineState::apply`] does.
    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], ignore: bool, c: char) {
        self.settled = true;
        match csi_effect(params, intermediates, ignore, c) {
            Effect::Colour if self.keep_colours => {
                let mut seq = std::mem::take(&mut self.sgr);
                sgr(params, &mut seq);
                self.put_escape(&seq);
                self.sgr = seq;
            }
            effect => self.apply(effect),
        }
    }

    /// What [`esc_effect`] says of the sequence.
    fn esc_dispatch(&mut self, intermediates: &[u8], ignore: bool, byte: u8) {
        self.settled = true;
        self.apply(esc_effect(intermediates, ignore, byte));
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
        cleaner.line.insert = other.line.insert;
        cleaner.line.unsynced = other.line.unsynced;
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
        // The notice writes over nothing a terminal still shows (review 44 H3).
        if self.line.text_right_of_cursor() {
            self.line.break_line();
        }
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
        self.line.unsynced = false;
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
