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
    let raw = b"\x1b]0;title\x07\x1b[1;31merror\x1b[0m: \x1b[2Jbad\x1b(B\n";
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
fn backspace_moves_left_and_what_follows_writes_over() {
    assert_eq!(clean_all(b"ab\x08c\n"), "ac\n");
    assert_eq!(clean_all(b"|\x08/\x08-\x08done\n"), "done\n");
    assert_eq!(clean_all(b"X\x08X overstruck\n"), "X overstruck\n");
}

/// Review 35 F8: what a terminal still shows stays. A shorter line after `\r` covers only its
/// own columns, and backspaces alone erase nothing.
#[test]
fn a_carriage_return_or_backspace_hides_no_more_than_a_terminal() {
    assert_eq!(
        clean_all(b"test_migrate ... FAILED (3 rows lost)\rok\n"),
        "okst_migrate ... FAILED (3 rows lost)\n"
    );
    let mut erased = b"summary: 2 passed, 1 FAILED".to_vec();
    erased.extend_from_slice(&[0x08; 10]);
    erased.push(b'\n');
    assert_eq!(clean_all(&erased), "summary: 2 passed, 1 FAILED\n");
    assert_eq!(clean_all(b"abcdef\x1b[3Dxy\n"), "abcxyf\n");
}

/// The ways progress bars redraw a line still leave its last state alone.
#[test]
fn progress_bars_that_erase_or_return_leave_their_last_state() {
    assert_eq!(clean_all(b"Downloading 50%\r\x1b[KDone\n"), "Done\n");
    assert_eq!(clean_all(b"Downloading 50%\x1b[2K\rDone\n"), "Done\n");
    assert_eq!(clean_all(b"Downloading 50%\x1b[1G\x1b[0KDone\n"), "Done\n");
    assert_eq!(
        clean_all(b"[====>    ] 50%\r[=========] 100%\n"),
        "[=========] 100%\n"
    );
}

/// The web view's copy keeps the text of a line written over, not the colours right of the
/// cursor (review 42 H1, H2): colour sequences never pile up there, whatever `\r`, backspaces
/// and colours a command prints, so the line stays bounded and moves cost what was written.
#[test]
fn the_views_copy_keeps_the_text_written_over_and_no_colours_right_of_the_cursor() {
    let mut cleaner = Cleaner::keeping_colours();
    let mut out = cleaner.feed(b"\x1b[31mred\x1b[0m!\x08?\rRE\n").to_owned();
    out.push_str(cleaner.finish());
    assert_eq!(out, "REd?\n");
    let mut cleaner = Cleaner::keeping_colours();
    let _ = cleaner.feed("\x1b[1m\r".repeat(50_000).as_bytes());
    let _ = cleaner.feed(format!("{}x\rx\rx", "\x1b[1m".repeat(10_000)).as_bytes());
    let line = &cleaner.line;
    assert!(
        line.pending.len() + line.right.len() < 50_000,
        "{}",
        line.pending.len()
    );
    assert!(!line.right.contains('\x1b'));
}

/// A vertical tab, a form feed, `ESC D` and `ESC E` move down a line: what follows does not
/// write over the line (review 42 M1).
#[test]
fn a_line_moved_down_from_is_not_written_over() {
    for down in ["\x0b", "\x0c", "\x1bD", "\x1bE"] {
        let out = clean_all(format!("FAILED{down}\rok\n").as_bytes());
        assert_eq!(out, "FAILED\nok\n", "{down:?}");
    }
}

/// A move the cleaning does not follow (right, to a column or a position, up or down, a
/// restored cursor, blanks inserted) ends a line that the next text would write over there:
/// nothing a terminal still shows is hidden (review 42 M1's other rows). At the line's end the
/// line goes on as written; a newline inside an escape string left open after one is still cut.
#[test]
fn a_move_the_cleaning_does_not_follow_hides_nothing() {
    for away in [
        "\x1b[6C",
        "\x1b[C",
        "\x1b[6a",
        "\x1b[I",
        "\x1b[7G",
        "\x1b[7`",
        "\x1b[2d",
        "\x1b[1;7H",
        "\x1b[H",
        "\x1b[f",
        "\x1b[r",
        "\x1b[u",
        "\x1b[6@",
        "\x1b[A",
        "\x1b[2B",
        "\x1b[e",
        "\x1b[E",
        "\x1b[F",
        "\x1b[S",
        "\x1b[T",
        "\x1b[L",
        "\x1b[M",
        "\x1bM",
        "\x1b8",
        "\x1bc",
        "\x1b9",
        "\x1b#8",
        "\x1b[?6h",
        "\x1b[?1049h",
        "\x1b[?47l",
        "\x1b[?25;6h",
        "\x1b[?r",
        "\x1b[3b",
        "\x1b[*x",
        "\x1b[Z",
        "\x1b6",
        "\x1b[2 A",
        "\x1b[2 @",
        "\x1b[2'}",
        "\x1b[s",
        "\x1bC",
        "\x1b[?2l",
        "\x1b[?25:1h",
        "\x1b[1$}",
        "\x1b[2$~",
        "\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23;24;25;26;27;28;29;30;31;32;33;34H",
    ] {
        let returned = clean_all(format!("FAILED\r{away}ok\n").as_bytes());
        assert_eq!(returned, "FAILED\nok\n", "{away:?} after \\r");
        let moved_left = clean_all(format!("1 FAILED\x08\x08{away}ok\n").as_bytes());
        assert_eq!(moved_left, "1 FAILED\nok\n", "{away:?} after backspaces");
        let at_the_end = clean_all(format!("FAILED{away}ok\n").as_bytes());
        assert_eq!(at_the_end, "FAILEDok\n", "{away:?} at the line's end");
    }
    let open = clean_all(b"FAILED\r\x1b[6C\x1b_open\nnext\n");
    assert_eq!(open, format!("FAILED\n{OPEN_ESCAPE_CUT}\nnext\n"));
    // Sequences that move nothing leave the line as it was: a progress bar still collapses.
    for quiet in [
        "\x1b[?25l",
        "\x1b[?2004h",
        "\x1b[?1;1000h",
        "\x1b[6n",
        "\x1b[ q",
        "\x1b[>c",
        "\x1b[J",
        "\x1b[1K",
        "\x1b[3X",
        "\x1b[!p",
        "\x1b(B",
        "\x1b7",
        "\x1b=",
        "\x1b[2 q",
    ] {
        let out = clean_all(format!("10%\r{quiet}100%\n").as_bytes());
        assert_eq!(out, "100%\n", "{quiet:?}");
    }
}

/// Insert mode (`CSI 4 h`): a terminal shifts what the cursor stands on right, so the line
/// takes no move left while it is on: the text after `\r` or a backspace starts a line of its
/// own instead of writing over the line. The held line stays bounded (review 44 H4: `x\r`
/// repeated grew it without end). `CSI 4 l` and a soft reset (`CSI ! p`) end insert mode; a
/// reset (`ESC c`) too, and the cursor is then out of step.
#[test]
fn insert_mode_writes_over_nothing_and_holds_little() {
    assert_eq!(clean_all(b"\x1b[4hFAILED\rok\n"), "FAILED\nok\n");
    assert_eq!(clean_all(b"\x1b[4;20hFAILED\x08\x08ok\n"), "FAILED\nok\n");
    assert_eq!(clean_all(b"FAILED\r\x1b[4hok\n"), "FAILED\nok\n");
    for off in ["\x1b[4l", "\x1b[!p"] {
        let out = clean_all(format!("\x1b[4h{off}FAILED\rok\n").as_bytes());
        assert_eq!(out, "okILED\n", "{off:?}");
    }
    assert_eq!(clean_all(b"\x1b[4h\x1bcFAILED\rok\n"), "FAILED\nok\n");
    let mut cleaner = Cleaner::new();
    cleaner.feed(b"\x1b[4h");
    for _ in 0..100_000 {
        cleaner.feed(b"x\r");
    }
    assert!(
        cleaner.pending_line().len() < 8,
        "{}",
        cleaner.pending_line().len()
    );
}

/// The cursor out of step (review 44 H1, H2): after a move right at the line's end, a tab, a
/// zero-width character, a vertical tab or an erasure of the line (which keep the column), a
/// move left or `\r` would write over what a terminal still shows; the line ends there
/// instead. Wide characters are two columns, written over as a terminal does (review 45), so a
/// progress bar with them still collapses. DEL shows
/// nothing; C1 controls some terminals act on move too; the open-string notice writes over
/// nothing; a vertical tab or `ESC E` does not pass for the newline that cuts an open string.
#[test]
fn a_cursor_out_of_step_writes_over_nothing() {
    let zero_width = "\u{200b}".repeat(6);
    for (input, want) in [
        (
            "FAILED\x1b[10C\x1b[10DPASSED\n",
            "FAILED\nPASSED\n".to_owned(),
        ),
        (
            "FAILED\t\t\t\x08\x08\x08PASSED\n",
            "FAILED\t\t\t\nPASSED\n".to_owned(),
        ),
        (
            "xxxxxxxxxx\x1b[2KFAILED\rPASSED\n",
            "FAILED\nPASSED\n".to_owned(),
        ),
        (
            "xxxxxx\x0bFAILED\rPASSED\n",
            "xxxxxx\nFAILED\nPASSED\n".to_owned(),
        ),
        (
            "xxxxxx\x1bDFAILED\rPASSED\n",
            "xxxxxx\nFAILED\nPASSED\n".to_owned(),
        ),
        ("FAILED\r\t\tPASSED\n", "FAILED\n\t\tPASSED\n".to_owned()),
        ("FAILED\r\x7f\x7f\x7f\x7f\x7f\x7f\n", "FAILED\n".to_owned()),
        (
            &format!("FAILED\r{zero_width}\n"),
            format!("FAILED\n{zero_width}\n"),
        ),
        // A wide character takes two columns, as on a terminal: one half covered blanks it.
        ("FAILED\r世ok\n", "世okED\n".to_owned()),
        ("FAILED\r世界ok\n", "世界ok\n".to_owned()),
        ("世界\rok\n", "ok界\n".to_owned()),
        ("ab界\x1b[2Dcd\n", "abcd\n".to_owned()),
        ("ab世界\x1b[2DXY\n", "ab世XY\n".to_owned()),
        // Into a wide character's second half: not followed.
        ("ab界\x08x\n", "ab界\nx\n".to_owned()),
        ("FAILED\r\u{85}PASSED\n", "FAILED\nPASSED\n".to_owned()),
        ("FAILED\r\u{8d}PASSED\n", "FAILED\nPASSED\n".to_owned()),
        ("x\u{84}FAILED\rPASSED\n", "x\nFAILED\nPASSED\n".to_owned()),
        // In step: a progress bar of one-column characters still collapses.
        ("⠋ 10%\r⠙ 20%\r⠹ 100%\n", "⠹ 100%\n".to_owned()),
        (
            "🚀 10% 世界\r🚀 20% 世界\r🚀 100% 世界\n",
            "🚀 100% 世界\n".to_owned(),
        ),
        ("abc\x0bdef\n", "abc\ndef\n".to_owned()),
    ] {
        assert_eq!(clean_all(input.as_bytes()), want, "{input:?}");
    }
    for (input, first) in [
        (&b"FAILED\r\x1b_\nnext\n"[..], "FAILED\n"),
        (b"\x0b\x1b_\nnext\n", "\n"),
        (b"\x1bE\x1b_\nnext\n", "\n"),
    ] {
        let want = format!("{first}{OPEN_ESCAPE_CUT}\nnext\n");
        assert_eq!(clean_all(input), want, "{input:?}");
    }
}

/// The definition of what cleaning produces, written apart from the implementation's own
/// line handling: `vte` fed one byte at a time (fed larger slices, `vte` 0.15 skips valid
/// characters after a split one when an invalid byte comes within three; the bulk path never
/// hands it such a slice) into this model of one terminal line, cells and a cursor:
/// - a printed character (C1 controls U+0080–U+009F dropped) goes in the cursor's cell and
///   the cursor moves right; a line whose part left of the cursor reaches the pending limit is
///   handed over whole without a newline;
/// - `\n` (and VT, FF, `ESC D`, `ESC E`) ends the line, `\r` and `CSI G` (column 1) move the
///   cursor to its start, backspace
///   and `CSI n D` move it left (not past the start), `CSI K` erases from it to the end,
///   `CSI 2 K` erases the line and moves it to the start; `\t` prints; in insert mode
///   (`CSI 4 h`) a printed character shifts the cells from the cursor on right; a sequence the
///   implementation's [`csi_effect`] and [`esc_effect`] call a move away ends the line where
///   cells stand right of the cursor (with a newline no parser took), and does nothing at its
///   end (those tables are shared; `a_move_the_cleaning_does_not_follow_hides_nothing` checks
///   them); every other escape sequence and control is dropped;
/// - a `\n` inside an escape string left open ends the line all the same, with
///   [`OPEN_ESCAPE_CUT`] where the rest of it was, and the string is over.
struct Reference {
    parser: vte::Parser,
    line: Model,
}

/// The model's cell for a wide character's second column (NUL is never printed).
const SECOND_HALF: char = '\0';

#[derive(Default)]
struct Model {
    /// One per column: a wide character's second column holds [`SECOND_HALF`].
    cells: Vec<char>,
    cursor: usize,
    /// Bytes of the cells left of the cursor.
    left_bytes: usize,
    done: String,
    lines: u64,
    /// Insert mode: no move left is followed.
    insert: bool,
    /// The terminal's column may not be the model's: no move left is followed, and the cursor
    /// is at the line's end.
    unsynced: bool,
}

impl Model {
    fn write(&mut self, c: char) {
        use unicode_width::UnicodeWidthChar as _;
        match c {
            '\u{85}' => return self.end(),
            '\u{84}' => return self.down(),
            '\u{88}' | '\u{9c}' | '\x7f' => return,
            '\u{80}'..='\u{9f}' => return self.moved_away(),
            _ => {}
        }
        let width = match c.width() {
            Some(width @ 1..=2) if c != '\t' => width,
            _ => {
                if self.cursor < self.cells.len() {
                    self.break_line();
                }
                self.unsynced = true;
                1
            }
        };
        // A wide character whose first half is written over loses its second half.
        let end = self.cursor + width;
        if self.cells.get(end) == Some(&SECOND_HALF) {
            self.cells[end] = ' ';
        }
        self.put(self.cursor, c);
        if width == 2 {
            self.put(self.cursor + 1, SECOND_HALF);
        }
        self.cursor += width;
        self.left_bytes += c.len_utf8();
        if self.left_bytes >= PENDING_LINE_MAX_BYTES {
            self.hand_over();
            self.unsynced = true;
        }
    }

    fn put(&mut self, column: usize, cell: char) {
        match self.cells.get_mut(column) {
            Some(old) => *old = cell,
            None => self.cells.push(cell),
        }
    }

    fn hand_over(&mut self) {
        self.done
            .extend(self.cells.drain(..).filter(|&c| c != SECOND_HALF));
        self.cursor = 0;
        self.left_bytes = 0;
    }

    /// The line so far ends with a newline no parser took.
    fn break_line(&mut self) {
        if !self.cells.is_empty() {
            self.hand_over();
            self.done.push('\n');
        }
    }

    fn left(&mut self, n: usize) {
        if self.insert || self.unsynced {
            self.break_line();
            self.unsynced = true;
            return;
        }
        let to = self.cursor.saturating_sub(n);
        if self.cells.get(to) == Some(&SECOND_HALF) {
            // Into the second half of a wide character: not followed.
            self.break_line();
            self.unsynced = true;
            return;
        }
        for cell in &self.cells[to..self.cursor] {
            self.left_bytes -= if *cell == SECOND_HALF {
                0
            } else {
                cell.len_utf8()
            };
        }
        self.cursor = to;
    }

    fn carriage_return(&mut self) {
        if self.insert || self.unsynced {
            self.break_line();
            self.unsynced = false;
        } else {
            self.left(self.cursor);
        }
    }

    /// The line ends (not counted: only a `\n` is).
    fn end(&mut self) {
        self.hand_over();
        self.done.push('\n');
        self.unsynced = false;
    }

    /// Down a line in the same column.
    fn down(&mut self) {
        let off_start = self.unsynced || self.cursor > 0;
        self.end();
        self.unsynced = off_start;
    }

    fn line(&self) -> String {
        self.cells.iter().filter(|&&c| c != SECOND_HALF).collect()
    }

    /// A move the model does not follow: where cells stand right of the cursor, the line ends
    /// there (not counted as a newline); out of step from then on.
    fn moved_away(&mut self) {
        if self.cursor < self.cells.len() {
            self.break_line();
        }
        self.unsynced = true;
    }
}

impl vte::Perform for Model {
    fn print(&mut self, c: char) {
        self.write(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.lines += 1;
                self.end();
            }
            0x0b | 0x0c => self.down(),
            b'\r' => self.carriage_return(),
            b'\t' => self.write('\t'),
            0x08 => self.left(1),
            0x80..=0x9f => self.write(char::from(byte)),
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], ignore: bool, byte: u8) {
        self.apply(crate::clean::esc_effect(intermediates, ignore, byte));
    }

    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], ignore: bool, c: char) {
        self.apply(crate::clean::csi_effect(params, intermediates, ignore, c));
    }
}

impl Model {
    fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Nothing | Effect::Colour => {}
            Effect::Left(n) => self.left(n),
            Effect::LineStart => self.carriage_return(),
            Effect::EraseRight => self.cells.truncate(self.cursor),
            Effect::EraseLine => {
                self.unsynced |= self.cursor > 0;
                self.cells.clear();
                self.cursor = 0;
                self.left_bytes = 0;
            }
            Effect::Insert(on) => {
                if on && self.cursor < self.cells.len() {
                    self.break_line();
                }
                self.insert = on;
            }
            Effect::NewLine => self.end(),
            Effect::Down => self.down(),
            Effect::Away => self.moved_away(),
            Effect::Reset => {
                self.insert = false;
                self.moved_away();
            }
        }
    }
}

impl Reference {
    fn feed(&mut self, bytes: &[u8]) -> String {
        for byte in bytes {
            let lines = self.line.lines;
            self.parser
                .advance(&mut self.line, std::slice::from_ref(byte));
            if *byte == b'\n' && self.line.lines == lines {
                // Inside an escape string left open: cut at the line's end, said so.
                self.parser.advance(&mut self.line, b"\x18");
                if self.line.cursor < self.line.cells.len() {
                    self.line.break_line();
                }
                OPEN_ESCAPE_CUT.chars().for_each(|c| self.line.write(c));
                vte::Perform::execute(&mut self.line, b'\n');
            }
        }
        std::mem::take(&mut self.line.done)
    }
}

/// Feeds `input` in chunks of the given sizes to both cleaners; every feed must give the
/// same text and leave the same pending line.
fn same_as_vte_alone(input: &[u8], sizes: &mut impl Iterator<Item = usize>) {
    let mut fast = Cleaner::new();
    let mut reference = Reference {
        parser: vte::Parser::new(),
        line: Model::default(),
    };
    let mut rest = input;
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        let got = fast.feed(chunk).to_owned();
        assert_eq!(got, reference.feed(chunk), "input {input:?}");
        // The line as shown is made for the asking: compared while short, and at the end.
        if reference.line.cells.len() < 256 {
            assert_eq!(
                fast.pending_line(),
                reference.line.line(),
                "input {input:?}"
            );
        }
        rest = tail;
    }
    assert_eq!(fast.finish(), reference.line.line(), "input {input:?}");
}

/// A small deterministic generator (xorshift), so failures reproduce.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pieces of output that take every path of the cleaner (text, controls, sequences cut and
/// whole, cut and invalid characters, C1 controls, a line past the pending limit), for tests
/// that put random outputs together.
pub(crate) fn fragments() -> Vec<Vec<u8>> {
    let long = "y".repeat(PENDING_LINE_MAX_BYTES + 3);
    let pieces: Vec<&[u8]> = vec![
        b"plain text",
        b"\n",
        b"\r",
        b"\r\n",
        b"\t",
        b"\x08",
        b"\x7f",
        b"\x07",
        b"\x18",
        b"\x1b",
        b"[",
        b"0;1",
        b"m",
        b"\x1b[31m",
        b"\x1b[2K",
        b"\x1b[K",
        b"\x1b[1K",
        b"\x1b[3D",
        b"\x1b[D",
        b"\x1b[G",
        b"\x1b[1G",
        b"\x1b[5G",
        b"\x1b[6C",
        b"\x1b[C",
        b"\x1b[2;5H",
        b"\x1b[A",
        b"\x1b[2B",
        b"\x1bM",
        b"\x1b7",
        b"\x1b8",
        b"\x1b[6@",
        b"\x1b[u",
        b"\x1b[J",
        b"\x1b[3X",
        b"\x1b[4h",
        b"\x1b[4l",
        b"\x1b[?1049h",
        b"\x1b[?25l",
        b"\x1b#8",
        b"\x1b[Z",
        b"\x1b6",
        "\u{200b}".as_bytes(),
        "\u{301}".as_bytes(),
        b"\x1b[2 q",
        b"\x0b",
        b"\x0c",
        b"\x1bD",
        b"\x1bE",
        b"ok",
        b"\x08\x08\x08",
        b"\x1b(B",
        b"\x1b]0;title\x07",
        b"\x1b]8;;http://x\x1b\\",
        b"\x1bP1$r0m\x1b\\",
        b"\x1b_apc\x1b\\",
        b"\x1b]0;left open",
        b"\x1b_",
        b"\x1bPq",
        b"\x1bX",
        b"\x1b^pm",
        "é".as_bytes(),
        "世界".as_bytes(),
        "😀".as_bytes(),
        b"\xe4\xb8",
        b"\xf0\x9f",
        b"\xff",
        b"\x80",
        b"\xc2\x85",
        b"\x9c",
        "½°©".as_bytes(),
        b"\xc2",
        b"\x1b[3\x18",
        b"\x1bPq#0\x9c",
        "\x1b]0;tïtle 世\x07".as_bytes(),
        b"\x1b[?25l",
        b"\x00",
        long.as_bytes(),
    ];
    pieces.into_iter().map(<[u8]>::to_vec).collect()
}

/// A random output of up to 24 [`fragments`], and the chunk sizes it arrives in.
pub(crate) fn random_output(rng: &mut Rng, fragments: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut input = Vec::new();
    for _ in 0..rng.below(24) {
        input.extend_from_slice(&fragments[rng.below(fragments.len())]);
    }
    let max_chunk = [1, 2, 3, 5, 16, 4096, 1 << 20][rng.below(7)];
    let sizes = (0..=input.len())
        .map(|_| 1 + rng.below(max_chunk))
        .collect();
    (input, sizes)
}

#[test]
fn bulk_path_gives_exactly_what_vte_alone_gives() {
    let fragments = fragments();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let rounds = std::env::var("CLEAN_FUZZ_ROUNDS").map_or(800, |v| v.parse().unwrap_or(800));
    for _ in 0..rounds {
        let (input, sizes) = random_output(&mut rng, &fragments);
        same_as_vte_alone(&input, &mut sizes.into_iter());
    }
}

/// Text after a cancelled sequence (CAN, SUB) that ends in a cut character: the parser holds
/// the cut character though the last byte it took is no lead byte, and the next chunk must not
/// pass it by (800 fuzz rounds missed this; 100 000 found it).
#[test]
fn a_character_cut_after_a_cancelled_sequence_is_not_lost() {
    same_as_vte_alone(b"\x1b\x18ab\xf0\x9fcd\n", &mut [6, 3].into_iter());
    same_as_vte_alone(b"\x1b[3\x1aab\xe4\xb8\x96\n", &mut [7, 2].into_iter());
}

#[test]
fn text_prefix_stops_at_the_first_control() {
    let mut bytes = vec![b'a'; 300];
    for at in [0, 1, 63, 64, 65, 128, 299] {
        for stop in [0x1b, b'\r', 0x7f, 0xc2] {
            bytes[at] = stop;
            assert_eq!(text_prefix_len(&bytes), at);
        }
        bytes[at] = b'\n';
    }
    assert_eq!(text_prefix_len(&bytes), 300);
}

#[test]
fn incomplete_tails_are_measured() {
    assert_eq!(incomplete_tail_len("é".as_bytes()), 0);
    assert_eq!(incomplete_tail_len(b"\xe4\xb8"), 2);
    assert_eq!(incomplete_tail_len(b"\xf0\x9f\x98"), 3);
    assert_eq!(incomplete_tail_len(b"\xff"), 0);
    assert_eq!(incomplete_tail_len(b"\x80\x80\x80\x80"), 0);
    assert_eq!(incomplete_tail_len("世\u{4e16}".as_bytes()), 0);
}

#[test]
fn endless_line_is_flushed_in_bounded_pieces() {
    let mut cleaner = Cleaner::new();
    let chunk = vec![b'x'; PENDING_LINE_MAX_BYTES * 3];
    let out = cleaner.feed(&chunk).len();
    assert!(out >= PENDING_LINE_MAX_BYTES * 2, "flushed {out}");
    assert!(cleaner.pending_line().len() < PENDING_LINE_MAX_BYTES);
}

#[test]
fn the_views_copy_keeps_colours_and_nothing_else() {
    let raw = b"\x1b[1;31mFAIL\x1b[0m x\x1b]0;title\x07\x1b[2J\x1b[38:2:1:2:3mrgb\x1b[?25l\n";
    assert_eq!(Cleaner::new().feed(raw), "FAIL xrgb\n");
    assert_eq!(
        Cleaner::keeping_colours().feed(raw),
        "\x1b[1;31mFAIL\x1b[0m x\x1b[38:2:1:2:3mrgb\n"
    );
}

/// An escape string left open (OSC, DCS, SOS, PM, APC) hides nothing past its line: the lines
/// after it come out, and the cut says so (review 35, F2: one `ESC _` hid a failing test's
/// summary on every path). The same fed whole and byte by byte.
#[test]
fn an_escape_string_left_open_ends_at_its_line() {
    for open in ["\x1b]0;", "\x1bP", "\x1bX", "\x1b^", "\x1b_", "\x1b]8;;"] {
        let output =
            format!("test_a ... ok\n{open}test_b ... FAILED\ntest result: FAILED. 1 failed\n");
        let want = format!("test_a ... ok\n{OPEN_ESCAPE_CUT}\ntest result: FAILED. 1 failed\n");
        assert_eq!(clean_all(output.as_bytes()), want, "{open:?}");
        let mut cleaner = Cleaner::new();
        let bytewise: String = output
            .as_bytes()
            .iter()
            .map(|b| cleaner.feed(std::slice::from_ref(b)).to_owned())
            .collect();
        assert_eq!(bytewise, want, "{open:?}, byte by byte");
        same_as_vte_alone(output.as_bytes(), &mut [5, 1, 7, 3].into_iter().cycle());
    }
    // A string ended on its line is no cut.
    assert_eq!(clean_all(b"a\x1b]0;title\x07b\nc\n"), "ab\nc\n");
}

/// A colour sequence at a line's end is found whole, and only one `sgr` could have made: a
/// long run of digits before an `m` is text (each move left looks at a bounded tail).
#[test]
fn a_colour_sequence_at_the_end_is_found_and_only_one() {
    assert_eq!(sgr_tail_len("x\x1b[1;31m"), 7);
    assert_eq!(sgr_tail_len("\x1b[m"), 3);
    assert_eq!(sgr_tail_len("x\x1b[38:2:1:2:3m"), 13);
    assert_eq!(sgr_tail_len("plain m"), 0);
    assert_eq!(sgr_tail_len(&format!("\x1b[{}m", "1".repeat(5000))), 0);
    let mut cleaner = Cleaner::keeping_colours();
    let mut line = "\x1b[1m".to_owned() + &"1".repeat(3000) + "m";
    line.push_str(&"\x08".repeat(3000));
    line.push_str("done\n");
    let out = cleaner.feed(line.as_bytes()).to_owned();
    assert!(out.starts_with("\x1b[1m1done"), "{out:.40}");
}
