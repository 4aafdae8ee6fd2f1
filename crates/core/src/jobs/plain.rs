//! A fast path in front of [`Cleaner`] for background jobs, whose output can be a flood.
//!
//! The cleaner parses every byte through `vte` (a few hundred MB/s per core), which is what
//! bounds a job's capture rate. But most floods (logs, `cat`, test runners writing to a pipe) are
//! plain: printable ASCII, newlines and tabs, which cleaning leaves exactly as they are. So while
//! a stream has carried nothing else, its completed lines are passed through as they are, and
//! the unterminated tail is kept as the cleaner would keep it (flushed in the same
//! [`PENDING_LINE_MAX_BYTES`] pieces). The first other byte (an escape, a `\r`, a backspace,
//! non-ASCII) hands the stream to a fresh cleaner for good, first feeding it the plain partial
//! line: a fresh parser fed plain text is in exactly the state the cleaner would have reached,
//! so the text produced is identical either way (a test checks this against the cleaner).
//!
//! It lives here, not in `clean`, only because of who owns which file today; it belongs beside
//! the cleaner.

use crate::clean::{Cleaner, PENDING_LINE_MAX_BYTES};

/// Bytes that cleaning leaves unchanged, in any context outside an escape sequence.
fn is_plain(b: u8) -> bool {
    matches!(b, b' '..=b'~' | b'\n' | b'\t')
}

/// A [`Cleaner`] with a pass-through for plain text.
pub(crate) struct StreamCleaner {
    /// Still on the fast path: every byte so far was plain.
    plain: bool,
    /// The fast path's unterminated last line.
    pending: Vec<u8>,
    out: String,
    cleaner: Cleaner,
}

impl StreamCleaner {
    pub(crate) fn new() -> Self {
        Self {
            plain: true,
            pending: Vec::new(),
            out: String::new(),
            cleaner: Cleaner::new(),
        }
    }

    /// Continues a cleaner that has already been fed (its state is unknown: no fast path).
    pub(crate) fn resume(cleaner: Cleaner) -> Self {
        Self {
            plain: false,
            pending: Vec::new(),
            out: String::new(),
            cleaner,
        }
    }

    /// Feeds raw bytes; returns the text of the lines completed by them.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> &str {
        if !self.plain {
            return self.cleaner.feed(bytes);
        }
        self.out.clear();
        if bytes.iter().all(|&b| is_plain(b)) {
            match bytes.iter().rposition(|&b| b == b'\n') {
                Some(end) => {
                    push_ascii(&mut self.out, &self.pending);
                    push_ascii(&mut self.out, &bytes[..=end]);
                    self.pending.clear();
                    self.pending.extend_from_slice(&bytes[end + 1..]);
                }
                None => self.pending.extend_from_slice(bytes),
            }
            while self.pending.len() >= PENDING_LINE_MAX_BYTES {
                push_ascii(&mut self.out, &self.pending[..PENDING_LINE_MAX_BYTES]);
                self.pending.drain(..PENDING_LINE_MAX_BYTES);
            }
            return &self.out;
        }
        self.plain = false;
        let carried = std::mem::take(&mut self.pending);
        self.out.push_str(self.cleaner.feed(&carried));
        self.out.push_str(self.cleaner.feed(bytes));
        &self.out
    }

    /// Ends the stream: returns the unterminated last line, if any.
    pub(crate) fn finish(&mut self) -> &str {
        if !self.plain {
            return self.cleaner.finish();
        }
        self.out.clear();
        push_ascii(&mut self.out, &self.pending);
        self.pending.clear();
        &self.out
    }
}

/// Appends plain bytes (ASCII by construction; anything else would be replaced, never unsafe).
fn push_ascii(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through_fast(chunks: &[&[u8]]) -> String {
        let mut c = StreamCleaner::new();
        let mut out = String::new();
        for chunk in chunks {
            out.push_str(c.feed(chunk));
        }
        out.push_str(c.finish());
        out
    }

    fn through_cleaner(chunks: &[&[u8]]) -> String {
        let mut c = Cleaner::new();
        let mut out = String::new();
        for chunk in chunks {
            out.push_str(c.feed(chunk));
        }
        out.push_str(c.finish());
        out
    }

    #[test]
    fn same_text_as_the_cleaner_whatever_the_chunking() {
        let long = "y".repeat(PENDING_LINE_MAX_BYTES * 2 + 17);
        let samples: Vec<Vec<u8>> = vec![
            b"plain line\nand a tab\there\npartial".to_vec(),
            b"half a line, then 50%\r100%\ndone\n".to_vec(),
            b"ok\nred \x1b[31merror\x1b[0m\nmore\n".to_vec(),
            "ascii then ünïcödé\nend".as_bytes().to_vec(),
            format!("{long}\nshort\n{long}").into_bytes(),
            format!("{long}\rover\n").into_bytes(),
            b"ab\x08c\n\xff\n".to_vec(),
        ];
        for sample in &samples {
            for size in [1, 2, 3, 7, 64, 4096, 65536, 1 << 20] {
                let chunks: Vec<&[u8]> = sample.chunks(size).collect();
                assert_eq!(
                    through_fast(&chunks),
                    through_cleaner(&chunks),
                    "chunk size {size}"
                );
            }
        }
    }

    #[test]
    fn lines_complete_only_at_their_newline() {
        let mut c = StreamCleaner::new();
        assert_eq!(c.feed(b"abc"), "");
        assert_eq!(c.feed(b"def\ngh"), "abcdef\n");
        assert_eq!(c.finish(), "gh");
    }
}
