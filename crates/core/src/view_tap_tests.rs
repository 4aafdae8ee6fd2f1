use super::*;

/// A job's sink: the model's cleaners into the job's ring, through the tap.
#[derive(Default)]
struct Job {
    out: Cleaner,
    err: Cleaner,
    ring: Option<OutputRing>,
}

impl Job {
    fn feed(&mut self, tap: &ViewTap, err: bool, bytes: &[u8]) {
        let ring = self.ring.get_or_insert_with(|| OutputRing::new(None));
        let (cleaner, other) = if err {
            (&mut self.err, &self.out)
        } else {
            (&mut self.out, &self.err)
        };
        let streams = Streams {
            err,
            cleaner,
            other,
            plain: Some(ring),
        };
        tap.through(streams, bytes, &mut |text| ring.push(text));
    }

    fn finish(&mut self, tap: &ViewTap) {
        let ring = self.ring.get_or_insert_with(|| OutputRing::new(None));
        ring.push(self.out.finish());
        ring.push(self.err.finish());
        tap.finish();
    }
}

/// Everything in a copy, read as a viewer does (the first read cleans what was kept).
fn copy(tap: &ViewTap) -> String {
    tap.ring().read(Some(0), 4 * RING_BYTES).text
}

fn unread(tap: &ViewTap) -> bool {
    matches!(tap.lock().copy, Copy::Unread(_))
}

/// Plain lines, an open line coloured on, stderr between, a carriage return, an escape and a
/// character split across chunks, a title, and a line left open at the end.
const CHUNKS: &[(bool, &[u8])] = &[
    (false, b"plain one\nhalf "),
    (true, b"warning: "),
    (false, b"line\n\x1b[31mred\x1b[0m\n50%\r"),
    (true, b"\x1b[33mdisk\x1b["),
    (false, b"100% \xe4\xb8"),
    (true, b"0m low\n"),
    (false, b"\x96\x8c done\n\x1b]0;title\x07\x1b[1mbold"),
    (false, b"\x1b[0m\ntail"),
];

/// The copy of a job read before it printed anything: cleaned as it comes.
fn eager() -> String {
    let (tap, mut job) = (ViewTap::new(true), Job::default());
    let _ = tap.ring();
    for &(err, bytes) in CHUNKS {
        job.feed(&tap, err, bytes);
    }
    job.finish(&tap);
    copy(&tap)
}

/// A job: nothing is copied before the first escape; at it, the copy starts from the job's
/// ring and the line the model's cleaner was writing, and keeps the colours after.
#[test]
fn the_copy_starts_at_the_first_escape_from_the_plain_text_so_far() {
    let (tap, mut job) = (ViewTap::new(true), Job::default());
    for chunk in [
        &b"plain one\nhalf "[..],
        b"line\n\x1b[31mred\x1b[0m\n",
        b"tail",
    ] {
        job.feed(&tap, false, chunk);
        if chunk.starts_with(b"plain") {
            assert!(
                !tap.coloured() && tap.ring.total() == 0,
                "copied before an escape"
            );
        }
    }
    job.finish(&tap);
    assert!(tap.coloured());
    assert_eq!(copy(&tap), "plain one\nhalf line\n\x1b[31mred\x1b[0m\ntail");
}

/// Nobody reads the copy: from the first escape on the output is kept raw and none of it is
/// cleaned; the first read cleans it all, and the copy goes on as it comes from then on.
#[test]
fn an_unread_copy_is_kept_raw_and_cleaned_when_first_read() {
    let (tap, mut job) = (ViewTap::new(true), Job::default());
    job.feed(&tap, false, b"plain\n");
    job.feed(&tap, false, b"\x1b[32mgreen\x1b[0m\n");
    let started = tap.ring.total();
    assert_eq!(
        started,
        "plain\n".len() as u64,
        "the copy starts from the plain text"
    );
    for _ in 0..100 {
        job.feed(&tap, false, b"\x1b[32mmore\x1b[0m\n");
        job.feed(&tap, true, b"\x1b[31merr\x1b[0m\n");
    }
    assert!(unread(&tap), "cleaned with nobody watching");
    assert_eq!(tap.ring.total(), started, "cleaned with nobody watching");
    let text = copy(&tap);
    assert!(!unread(&tap));
    assert!(text.starts_with("plain\n\x1b[32mgreen\x1b[0m\n\x1b[32mmore\x1b[0m\n\x1b[31merr"));
    job.feed(&tap, false, b"\x1b[1mlive\x1b[0m\n");
    let now = tap.ring.read(Some(0), 4 * RING_BYTES).text;
    assert!(
        now.ends_with("\x1b[1mlive\x1b[0m\n"),
        "not cleaned as it comes once read"
    );
}

/// However late the copy is first read, between any two chunks, it is the copy a viewer
/// watching from the start got, byte for byte.
#[test]
fn a_copy_read_late_is_the_copy_read_from_the_start() {
    let eager = eager();
    assert!(
        eager.contains("\x1b[31mred\x1b[0m") && eager.ends_with("tail"),
        "{eager:?}"
    );
    for read_at in 0..=CHUNKS.len() {
        let (tap, mut job) = (ViewTap::new(true), Job::default());
        for (i, &(err, bytes)) in CHUNKS.iter().enumerate() {
            if i == read_at {
                let _ = tap.ring();
            }
            job.feed(&tap, err, bytes);
        }
        job.finish(&tap);
        assert_eq!(copy(&tap), eager, "first read before chunk {read_at}");
    }
}

/// An output that ended unread: its copy is made, the open lines in, and closed when it is
/// first read.
#[test]
fn an_output_that_ended_unread_is_coloured_and_closed_when_read() {
    let (tap, mut job) = (ViewTap::new(true), Job::default());
    for &(err, bytes) in CHUNKS {
        job.feed(&tap, err, bytes);
    }
    job.finish(&tap);
    assert!(unread(&tap) && !tap.ring.is_closed());
    assert_eq!(copy(&tap), eager());
    assert!(tap.ring().is_closed());
}

/// More raw output than is kept: the copy says so, then goes on from the first whole line of
/// the kept tail; a stream that lost nothing (stderr here) goes on from where it was.
#[test]
fn an_unread_flood_keeps_its_tail_and_says_what_it_lost() {
    let (tap, mut job) = (ViewTap::new(true), Job::default());
    job.feed(&tap, false, b"before\n");
    job.feed(&tap, true, b"err-open ");
    // Cleaning drops a third of each line (cursor escapes), so the tail fits the copy's ring.
    let line = b"line \x1b[K\x1b[K\x1b[K\x1b[K\x1b[32mok\x1b[0m\n";
    let flood: Vec<u8> = line
        .iter()
        .copied()
        .cycle()
        .take(2 * RAW_BYTES / line.len() * line.len())
        .collect();
    let first = b"\x1b[32mfirst\x1b[0m\n";
    job.feed(&tap, false, first);
    for chunk in flood.chunks(1000) {
        job.feed(&tap, false, chunk);
    }
    let (warned, last) = (b"\x1b[33mwarned\x1b[0m\n", b"last");
    job.feed(&tap, true, warned);
    job.feed(&tap, false, last);
    job.finish(&tap);
    let lost = first.len() + flood.len() + warned.len() + last.len() - RAW_BYTES;
    assert_ne!(
        (lost - first.len()) % line.len(),
        0,
        "the tail starts mid-line"
    );
    let text = copy(&tap);
    let marker =
        format!("before\n[… {lost} earlier bytes not kept for the view (nobody was watching) …]\n");
    assert!(text.starts_with(&marker), "{:?}", &text[..200]);
    let after = &text[marker.len()..];
    assert!(
        after.starts_with("line \x1b[32mok\x1b[0m\n"),
        "{:?}",
        &after[..100]
    );
    assert!(
        after.lines().all(|l| l == "line \x1b[32mok\x1b[0m"
            || l == "err-open \x1b[33mwarned\x1b[0m"
            || l == "last"),
        "a line cut or uncoloured"
    );
    assert!(after.ends_with("line \x1b[32mok\x1b[0m\nerr-open \x1b[33mwarned\x1b[0m\nlast"));
    assert!(tap.ring().is_closed());
}

/// A call's chunks through the tap as `run` feeds them: the model's text, one string a chunk.
fn call(tap: &ViewTap, chunks: &[&[u8]]) -> String {
    let (mut out, err) = (Cleaner::new(), Cleaner::new());
    let mut model = String::new();
    for chunk in chunks {
        let streams = Streams {
            err: false,
            cleaner: &mut out,
            other: &err,
            plain: None,
        };
        tap.through(streams, chunk, &mut |text| model.push_str(text));
    }
    let tail = out.finish();
    tap.plain(tail);
    model.push_str(tail);
    tap.finish();
    model
}

/// A call: its plain text is the copy until the first escape, then the colours.
#[test]
fn a_calls_copy_is_its_plain_text_then_its_colours() {
    let tap = ViewTap::new(true);
    let model = call(&tap, &[b"a\rb\n", b"\x1b]0;title\x07\x1b[1mbold\x1b[0m\n"]);
    assert_eq!(model, "b\nbold\n");
    assert_eq!(copy(&tap), "b\n\x1b[1mbold\x1b[0m\n");
}

/// The first escape in the middle of a chunk, after whole lines and in an open line: the copy
/// has the lines before it once, the open line, then the colours; the model's text is the same
/// as without a view.
#[test]
fn a_first_escape_inside_a_chunk_starts_the_copy_there() {
    let chunk: &[u8] = b"one\ntwo\rtoo\nopen \x1b[31mred\x1b[0m\nafter\n";
    for on in [true, false] {
        let tap = ViewTap::new(on);
        let _ = tap.ring();
        let model = call(&tap, &[chunk, b"\x1b[1mmore\x1b[0m"]);
        assert_eq!(model, "one\ntoo\nopen red\nafter\nmore");
        let copy = copy(&tap);
        if on {
            assert_eq!(
                copy,
                "one\ntoo\nopen \x1b[31mred\x1b[0m\nafter\n\x1b[1mmore\x1b[0m"
            );
        } else {
            assert_eq!(copy, "", "copied without a view");
        }
    }
    // A job: the same, from its ring, read late or watched from the start.
    for read_first in [true, false] {
        let (tap, mut job) = (ViewTap::new(true), Job::default());
        if read_first {
            let _ = tap.ring();
        }
        job.feed(&tap, true, b"err open ");
        job.feed(&tap, false, chunk);
        job.feed(&tap, true, b"\x1b[33mwarn\x1b[0m\n");
        job.finish(&tap);
        assert_eq!(
            copy(&tap),
            "one\ntoo\nopen \x1b[31mred\x1b[0m\nafter\nerr open \x1b[33mwarn\x1b[0m\n"
        );
    }
}

/// An escape right after a character cut by the chunk's end, where the parser holds part of
/// it and takes one byte at a time, is met too: the copy starts there, with the U+FFFD the
/// model's parser printed for the cut character when the ESC ended it; so in one chunk.
#[test]
fn a_first_escape_after_a_cut_character_starts_the_copy() {
    for chunks in [
        &[&b"caf\xc3"[..], b"\x1b[32mok\x1b[0m\n"][..],
        &[b"caf\xc3\x1b[32mok\x1b[0m\n"],
    ] {
        let tap = ViewTap::new(true);
        let model = call(&tap, chunks);
        assert!(tap.coloured(), "the escape went unseen");
        assert_eq!(model, "caf\u{fffd}ok\n");
        assert_eq!(copy(&tap), "caf\u{fffd}\x1b[32mok\x1b[0m\n");
    }
}

/// An invalid byte after a cut character, then a control: the parser is back on the ground but
/// the cleaner off its bulk path, taking many bytes at once; the first escape among them is
/// still met where it is (a command can print this on purpose).
#[test]
fn a_first_escape_after_invalid_bytes_and_a_control_starts_the_copy() {
    for chunks in [
        &[&b"\xf0"[..], b"\xff\nx\x1b[31mred\x1b[0m\n"][..],
        &[b"\xf0", b"\xff\n", b"x\x1b[31mred\x1b[0m\n"],
    ] {
        let tap = ViewTap::new(true);
        let model = call(&tap, chunks);
        assert_eq!(model, "\u{fffd}\u{fffd}\nxred\n");
        assert_eq!(
            copy(&tap),
            "\u{fffd}\u{fffd}\nx\x1b[31mred\x1b[0m\n",
            "{chunks:?}"
        );
    }
}

/// For any output of one stream in any chunks, the copy is what a cleaner keeping colours
/// makes of the whole output, and the model's text what the plain cleaner makes of it: the
/// copy started at the first escape is the copy made from the start.
#[test]
fn any_output_in_any_chunks_is_copied_as_a_colour_cleaner_reads_it_whole() {
    use crate::clean::tests::{Rng, fragments, random_output};
    let fragments = fragments();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let rounds = std::env::var("CLEAN_FUZZ_ROUNDS").map_or(800, |v| v.parse().unwrap_or(800));
    for _ in 0..rounds {
        let (input, sizes) = random_output(&mut rng, &fragments);
        if input.len() > RAW_BYTES / 2 {
            // Past what an unread copy keeps raw: its head is dropped, as tested above.
            continue;
        }
        let mut chunks = Vec::new();
        let mut rest = &input[..];
        for size in sizes {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            chunks.push(chunk);
            rest = tail;
        }
        let whole = |mut cleaner: Cleaner| {
            let mut text = cleaner.feed(&input).to_owned();
            text.push_str(cleaner.finish());
            text
        };
        let tap = ViewTap::new(true);
        if rng.below(2) == 0 {
            let _ = tap.ring();
        }
        let model = call(&tap, &chunks);
        assert_eq!(
            model,
            whole(Cleaner::new()),
            "input {input:?} in {chunks:?}"
        );
        let expected = whole(Cleaner::keeping_colours());
        assert_eq!(copy(&tap), expected, "input {input:?} in {chunks:?}");
    }
}

/// Where no view is served, nothing is copied, coloured or not.
#[test]
fn without_a_view_nothing_is_copied() {
    let tap = ViewTap::new(false);
    call(&tap, &[b"plain\n", b"\x1b[31mred\x1b[0m\n"]);
    assert!(!tap.coloured() && tap.ring().total() == 0);
}

/// A writer alternating stdout and stderr a byte at a time keeps at most `RUNS_MAX` runs of
/// bookkeeping: the oldest runs' bytes count as dropped, and the copy says how many.
#[test]
fn alternating_streams_keep_their_bookkeeping_bounded() {
    let (tap, mut job) = (ViewTap::new(true), Job::default());
    let start = b"\x1b[1mstart\x1b[0m ";
    job.feed(&tap, false, start);
    for i in 0..3 * RUNS_MAX {
        job.feed(&tap, i % 2 == 1, if i % 2 == 0 { b"o" } else { b"e" });
    }
    {
        let state = tap.lock();
        let Copy::Unread(unread) = &state.copy else {
            panic!("read before it was read")
        };
        // The first "o" lengthened the run of `start`, of the same stream.
        assert_eq!(unread.runs.len(), RUNS_MAX);
        assert!(
            unread.runs.capacity() <= RUNS_MAX,
            "{}",
            unread.runs.capacity()
        );
    }
    job.feed(&tap, false, b"\nafter\n");
    job.finish(&tap);
    let lost = start.len() + 2 * RUNS_MAX + 1;
    let text = copy(&tap);
    assert!(
        text.starts_with(&format!(
            "[… {lost} earlier bytes not kept for the view (nobody was watching) …]\nafter\n"
        )),
        "{:?}",
        &text[..text.len().min(200)]
    );
}
