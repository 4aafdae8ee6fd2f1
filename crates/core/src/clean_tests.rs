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

/// The definition of what cleaning produces, written apart from the implementation's own
/// line handling: `vte` fed one byte at a time (fed larger slices, `vte` 0.15 skips valid
/// characters after a split one when an invalid byte comes within three; the bulk path never
/// hands it such a slice) into this model of one terminal line:
/// - a printed character (C1 controls U+0080–U+009F dropped) starts the line over after a
///   `\r`, and a line that reaches the pending limit is handed over without a newline;
/// - `\n` ends the line, `\r` returns to its start, `\t` prints, backspace erases the
///   last character; every escape sequence and other control is dropped.
struct Reference {
    parser: vte::Parser,
    line: Model,
}

#[derive(Default)]
struct Model {
    pending: String,
    at_start: bool,
    done: String,
}

impl Model {
    fn write(&mut self, c: char) {
        if ('\u{80}'..='\u{9f}').contains(&c) {
            return;
        }
        if std::mem::take(&mut self.at_start) {
            self.pending = String::new();
        }
        self.pending.push(c);
        if self.pending.len() >= PENDING_LINE_MAX_BYTES {
            let line = std::mem::take(&mut self.pending);
            self.done += &line;
        }
    }
}

impl vte::Perform for Model {
    fn print(&mut self, c: char) {
        self.write(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                let line = std::mem::take(&mut self.pending);
                self.done += &line;
                self.done.push('\n');
                self.at_start = false;
            }
            b'\r' => self.at_start = true,
            b'\t' => self.write('\t'),
            0x08 => {
                let _ = self.pending.pop();
            }
            _ => {}
        }
    }
}

impl Reference {
    fn feed(&mut self, bytes: &[u8]) -> String {
        for byte in bytes {
            self.parser
                .advance(&mut self.line, std::slice::from_ref(byte));
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
        assert_eq!(
            fast.pending_line(),
            reference.line.pending,
            "input {input:?}"
        );
        rest = tail;
    }
    assert_eq!(fast.finish(), reference.line.pending, "input {input:?}");
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
        b"\x1b(B",
        b"\x1b]0;title\x07",
        b"\x1b]8;;http://x\x1b\\",
        b"\x1bP1$r0m\x1b\\",
        b"\x1b_apc\x1b\\",
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
