use std::sync::Arc;

use super::*;

/// Feeds `chunks` through one stream's masking, flushing at the end: what passes on.
fn through(masks: &Arc<Masks>, chunks: &[&[u8]]) -> Vec<u8> {
    let mut masking = Masking::new(masks.clone());
    let mut passed = Vec::new();
    for chunk in chunks {
        match masking.chunk(0, chunk) {
            None => passed.extend_from_slice(chunk),
            Some(out) => passed.extend_from_slice(out),
        }
    }
    passed.extend_from_slice(masking.flush(0));
    passed
}

fn masks(values: &[&[u8]]) -> Arc<Masks> {
    let masks = Arc::new(Masks::default());
    for value in values {
        masks.add(value);
    }
    masks
}

#[test]
fn nothing_entered_passes_every_chunk_untouched() {
    let masks = masks(&[]);
    let mut masking = Masking::new(masks);
    assert!(masking.chunk(0, b"hunter2 and more").is_none());
    assert!(masking.holding().is_none());
}

#[test]
fn an_echoed_value_is_masked_wherever_it_appears() {
    let masks = masks(&[b"hunter2-xyz"]);
    assert_eq!(
        through(
            &masks,
            &[b"you typed hunter2-xyz\r\nhunter2-xyzhunter2-xyz!\r\n"]
        ),
        b"you typed [secret]\r\n[secret][secret]!\r\n"
    );
    // Output without it passes untouched, in one piece.
    let mut masking = Masking::new(masks);
    assert!(masking.chunk(0, b"nothing here\r\n").is_none());
}

#[test]
fn a_value_split_across_reads_is_masked() {
    let masks = masks(&[b"hunter2-xyz"]);
    for cut in 1..11 {
        let line = b"<<hunter2-xyz>>";
        let (a, b) = line.split_at(2 + cut);
        assert_eq!(through(&masks, &[a, b]), b"<<[secret]>>", "cut at {cut}");
    }
    // In three pieces, one of them wholly inside it.
    assert_eq!(
        through(&masks, &[b"a hun", b"ter2", b"-xyz b"]),
        b"a [secret] b"
    );
}

#[test]
fn a_held_end_that_is_not_the_value_passes_on_as_it_was() {
    let masks = masks(&[b"hunter2-xyz"]);
    let mut masking = Masking::new(masks.clone());
    // `hun` could begin it: held back.
    assert_eq!(masking.chunk(0, b"the hun"), Some(&b"the "[..]));
    assert_eq!(masking.holding(), Some(0));
    // What followed makes it something else.
    assert_eq!(masking.chunk(0, b"gry cat"), Some(&b"hungry cat"[..]));
    assert!(masking.holding().is_none());
    // Nothing followed: it goes on alone.
    assert_eq!(masking.chunk(0, b"hunter"), Some(&b""[..]));
    assert_eq!(masking.flush(0), b"hunter");
    // The streams are apart: stderr holds nothing of stdout's.
    assert_eq!(masking.chunk(0, b"hunter2"), Some(&b""[..]));
    assert_eq!(masking.chunk(1, b"-xyz"), None);
    assert_eq!(through(&masks, &[b"hunter2", b"-xyz"]), b"[secret]");
}

#[test]
fn several_values_and_overlaps_are_one_mask_each() {
    let masks = masks(&[b"abcdef", b"defghi", b"pass"]);
    assert_eq!(through(&masks, &[b"xabcdefghix"]), b"x[secret]x");
    assert_eq!(through(&masks, &[b"pass pass"]), b"[secret] [secret]");
    // A repeated value found over itself.
    let masks = masks_of_repeats();
    assert_eq!(through(&masks, &[b"aaaaaa"]), b"[secret]");
}

fn masks_of_repeats() -> Arc<Masks> {
    masks(&[b"aaaa"])
}

#[test]
fn short_values_are_not_masked_and_the_list_is_bounded() {
    let masks = masks(&[b"abc"]);
    assert_eq!(through(&masks, &[b"abc"]), b"abc");
    let masks = Arc::new(Masks::default());
    for n in 0..MASKS_MAX + 2 {
        masks.add(format!("value-{n:04}").as_bytes());
    }
    // The oldest went first.
    assert_eq!(through(&masks, &[b"value-0000"]), b"value-0000");
    assert_eq!(
        through(&masks, &[format!("value-{:04}", MASKS_MAX + 1).as_bytes()]),
        b"[secret]"
    );
}
