//! Head+tail shaping of one-shot output (docs/BEHAVIOUR.md §2, §7.2).
//!
//! Cleaned text up to [`INLINE_LIMIT_BYTES`] is kept whole. Past that, memory stays constant:
//! the first [`HEAD_CHARS`] characters (what ran), the last [`TAIL_CHARS`] (how it ended), and
//! exact counts of what lies between, so the notice can state what was left out. The full text is
//! the spill file's job, not this buffer's.

use crate::limits::{HEAD_CHARS, INLINE_LIMIT_BYTES, TAIL_CHARS};

/// The tail buffer is trimmed back to [`TAIL_CHARS`] once it grows past this many bytes, so
/// trimming is amortised over many appends.
const TAIL_TRIM_BYTES: usize = 64 * 1024;

/// The bytes that hold at least [`TAIL_CHARS`] characters, however wide.
const TAIL_KEEP_BYTES: usize = 4 * TAIL_CHARS;

/// What a shaped stream finally holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shaped {
    /// Everything, unabridged.
    Whole(String),
    /// Head and tail of an output that was too long to return whole.
    HeadTail {
        head: String,
        tail: String,
        omitted_bytes: u64,
        omitted_lines: u64,
    },
}

impl Shaped {
    pub fn is_truncated(&self) -> bool {
        matches!(self, Shaped::HeadTail { .. })
    }
}

/// Accumulates cleaned text for one stream.
#[derive(Debug, Default)]
pub struct Shaper {
    inline: String,
    overflowed: bool,
    head: String,
    tail: String,
    total_bytes: u64,
    total_lines: u64,
}

impl Shaper {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends text. Returns true exactly once: on the append that overflowed the inline limit.
    pub fn push(&mut self, text: &str) -> bool {
        if text.is_empty() {
            return false;
        }
        self.total_bytes += text.len() as u64;
        self.total_lines += bytecount_newlines(text);
        if self.overflowed {
            // A chunk this long holds the whole tail to keep (a character is at most 4 bytes):
            // only its end is copied, not all a flood prints.
            if text.len() >= TAIL_KEEP_BYTES {
                let mut cut = text.len() - TAIL_KEEP_BYTES;
                while !text.is_char_boundary(cut) {
                    cut += 1;
                }
                self.tail.clear();
                self.tail.push_str(&text[cut..]);
                return false;
            }
            self.tail.push_str(text);
            if self.tail.len() > TAIL_TRIM_BYTES {
                trim_to_last_chars(&mut self.tail, TAIL_CHARS);
            }
            return false;
        }
        if self.inline.len() + text.len() <= INLINE_LIMIT_BYTES {
            self.inline.push_str(text);
            return false;
        }
        self.overflowed = true;
        let mut all = std::mem::take(&mut self.inline);
        all.push_str(text);
        let head_end = char_boundary_after(&all, HEAD_CHARS);
        self.head = all[..head_end].to_owned();
        self.tail = all[head_end..].to_owned();
        trim_to_last_chars(&mut self.tail, TAIL_CHARS);
        true
    }

    /// Everything pushed so far, if it still fits inline.
    pub fn inline_text(&self) -> Option<&str> {
        (!self.overflowed).then_some(self.inline.as_str())
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    pub fn total_lines(&self) -> u64 {
        self.total_lines
    }

    pub fn finish(mut self) -> Shaped {
        if !self.overflowed {
            return Shaped::Whole(self.inline);
        }
        trim_to_last_chars(&mut self.tail, TAIL_CHARS);
        // Whole lines on both sides of the cut, when that costs at most half of either part: a
        // line cut in the middle reads as a different line.
        if let Some(end) = self.head.rfind('\n')
            && end + 1 >= self.head.len() / 2
        {
            self.head.truncate(end + 1);
        }
        if let Some(start) = self.tail.find('\n')
            && start < self.tail.len() / 2
            && start + 1 < self.tail.len()
        {
            self.tail.drain(..=start);
        }
        let kept_bytes = (self.head.len() + self.tail.len()) as u64;
        let kept_lines = bytecount_newlines(&self.head) + bytecount_newlines(&self.tail);
        Shaped::HeadTail {
            omitted_bytes: self.total_bytes.saturating_sub(kept_bytes),
            omitted_lines: self.total_lines.saturating_sub(kept_lines),
            head: self.head,
            tail: self.tail,
        }
    }
}

/// Newlines in `text`: every byte a command prints is counted, so this is on the flood path.
/// Counted in blocks of 255 bytes into a byte-wide sum the compiler turns into whole-vector
/// compares; a plain `filter().count()` took 43% of the server's time in a 100 MB flood (`perf`).
fn bytecount_newlines(text: &str) -> u64 {
    text.as_bytes()
        .chunks(255)
        .map(|block| {
            let in_block = block
                .iter()
                .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b'\n')));
            u64::from(in_block)
        })
        .sum()
}

/// Byte index just after the first `chars` characters (or the end).
fn char_boundary_after(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// Keeps only the last `chars` characters of `text`.
fn trim_to_last_chars(text: &mut String, chars: usize) {
    if let Some((start, _)) = text.char_indices().rev().nth(chars.saturating_sub(1))
        && start > 0
    {
        text.drain(..start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However the text comes in (small pieces, chunks longer than the tail, wide characters),
    /// the shape is the same.
    #[test]
    fn the_shape_does_not_depend_on_how_the_text_was_chunked() {
        let text: String = (0..40_000)
            .map(|i| format!("line {i} é€😀 {}\n", "x".repeat(i % 50)))
            .collect();
        let whole = {
            let mut s = Shaper::new();
            s.push(&text);
            s.finish()
        };
        for sizes in [
            &[1usize, 7, 300][..],
            &[8_001, 3],
            &[65_536],
            &[9_000, 100_000, 5],
        ] {
            let mut s = Shaper::new();
            let mut at = 0;
            for &size in sizes.iter().cycle() {
                if at == text.len() {
                    break;
                }
                let mut end = (at + size).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                s.push(&text[at..end]);
                at = end;
            }
            assert_eq!(s.finish(), whole, "chunks {sizes:?}");
        }
    }

    #[test]
    fn newlines_are_counted_in_every_block() {
        for len in [0, 1, 254, 255, 256, 511, 10_000] {
            for every in [1, 2, 7, 300] {
                let text: String = (0..len)
                    .map(|i| if i % every == 0 { '\n' } else { 'x' })
                    .collect();
                let want = text.bytes().filter(|&b| b == b'\n').count() as u64;
                assert_eq!(bytecount_newlines(&text), want, "len {len} every {every}");
            }
        }
    }

    /// One huge line has no line end to cut at: the character budget still holds.
    #[test]
    fn a_single_long_line_is_cut_by_characters() {
        let mut s = Shaper::new();
        s.push(&"x".repeat(200_000));
        let Shaped::HeadTail { head, tail, .. } = s.finish() else {
            panic!("expected head+tail")
        };
        assert_eq!(head.chars().count(), HEAD_CHARS);
        assert_eq!(tail.chars().count(), TAIL_CHARS);
    }

    #[test]
    fn small_output_is_whole() {
        let mut s = Shaper::new();
        assert!(!s.push("hello\n"));
        assert_eq!(s.finish(), Shaped::Whole("hello\n".into()));
    }

    #[test]
    fn long_output_keeps_exact_head_tail_and_counts() {
        let mut s = Shaper::new();
        let mut all = String::new();
        let mut overflows = 0;
        for i in 0..20_000 {
            let line = format!("line {i} é\n");
            all.push_str(&line);
            overflows += usize::from(s.push(&line));
        }
        assert_eq!(overflows, 1);
        let Shaped::HeadTail {
            head,
            tail,
            omitted_bytes,
            omitted_lines,
        } = s.finish()
        else {
            panic!("expected head+tail")
        };
        // Cut at line ends, within the budget and losing less than a line on each side.
        assert!(head.chars().count() <= HEAD_CHARS);
        assert!(head.chars().count() > HEAD_CHARS - 20);
        assert!(tail.chars().count() <= TAIL_CHARS);
        assert!(tail.chars().count() > TAIL_CHARS - 20);
        assert!(head.ends_with('\n'), "{head:?}");
        assert!(tail.starts_with("line "), "{tail:?}");
        assert!(all.starts_with(&head));
        assert!(all.ends_with(&format!("\n{tail}")));
        assert_eq!(omitted_bytes as usize, all.len() - head.len() - tail.len());
        let kept = head.matches('\n').count() + tail.matches('\n').count();
        assert_eq!(omitted_lines as usize, 20_000 - kept);
    }
}
