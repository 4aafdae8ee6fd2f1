//! Secrets masked in output (docs/BEHAVIOUR.md §4 *Secrets*): a value the user typed into a
//! program of the agent's shell is replaced by [`MASK`] wherever it appears afterwards in the
//! output of the session's commands (a program that echoes it back, a file it wrote and a later
//! command prints), before that output is cleaned, buffered, spilled, shown or streamed. Every
//! path reads its command through one [`Source`](crate::engine::Source), so this happens there,
//! once: a shell's ring, raw tail, screen and sends, `task_output`, spill files and the web
//! view all get the masked bytes.
//!
//! The cost is bounded: one atomic load per chunk until a value is entered; then, per chunk,
//! a `memmem` search for each value ([`MASKS_MAX`] at most) and a look at its last bytes for
//! the start of a value. A value split across two reads is found: an end of a chunk that could
//! begin a value is held back until the next read, or [`HOLD_MS`] without one. Not found: a
//! value split by a longer pause (a program writing a byte a second), or changed on its way out
//! (reversed, encoded, a character each line): masking catches an echo, not a program set on
//! showing it, which is why the user is shown the program before typing.
//!
//! The values live in the server's memory only, zeroed when dropped, until the session ends,
//! [`MASKS_MAX`] at most (the oldest goes first). A value shorter than [`MASK_MIN_BYTES`] is not
//! masked: replacing every `ab` in the output would garble it and hide nothing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// What a secret is replaced by.
pub const MASK: &[u8] = b"[secret]";
/// Values kept for masking per session, the newest.
pub const MASKS_MAX: usize = 16;
/// Shorter values are not masked.
pub const MASK_MIN_BYTES: usize = 4;
/// How long an end of a chunk that could begin a value waits for the rest.
pub(crate) const HOLD_MS: u64 = 20;

/// The secrets entered in one session, to be masked in its output.
#[derive(Default)]
pub struct Masks {
    values: RwLock<VecDeque<Value>>,
    /// How many were added: 0 means nothing to mask (no lock taken).
    added: AtomicU64,
}

/// One value, zeroed when dropped.
struct Value(Vec<u8>);

impl Drop for Value {
    fn drop(&mut self) {
        self.0.fill(0);
    }
}

impl Masks {
    /// Masks `value` in all output read from now on (a value too short is not: see the module
    /// header). Call before the value can come back out: before it is typed.
    pub fn add(&self, value: &[u8]) {
        if value.len() < MASK_MIN_BYTES {
            return;
        }
        let mut values = self.values.write().unwrap_or_else(PoisonError::into_inner);
        if values.iter().any(|v| v.0 == value) {
            return;
        }
        values.push_back(Value(value.to_vec()));
        if values.len() > MASKS_MAX {
            values.pop_front();
        }
        self.added.fetch_add(1, Ordering::Release);
    }

    fn any(&self) -> bool {
        self.added.load(Ordering::Acquire) > 0
    }
}

/// The masking of one command's output, stream by stream (stdout and stderr are apart; a
/// terminal is one stream).
pub(crate) struct Masking {
    masks: Arc<Masks>,
    /// Per stream, an end of its last chunk that could begin a value.
    held: [Vec<u8>; 2],
    /// What the last chunk passes on when it is not the source's own bytes.
    out: Vec<u8>,
}

impl Masking {
    pub(crate) fn new(masks: Arc<Masks>) -> Self {
        Masking {
            masks,
            held: [Vec::new(), Vec::new()],
            out: Vec::new(),
        }
    }

    /// A chunk of stream `which` (0 or 1) was read: `None` when it passes on as it is, else
    /// what passes on instead ([`Masking::out`], maybe empty: all of it is held back).
    pub(crate) fn chunk(&mut self, which: usize, bytes: &[u8]) -> Option<&[u8]> {
        let held = &mut self.held[which];
        if !self.masks.any() && held.is_empty() {
            return None;
        }
        let values = self
            .masks
            .values
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let values: Vec<&[u8]> = values.iter().map(|v| v.0.as_slice()).collect();
        self.out.clear();
        let changed = mask_into(&values, held, bytes, &mut self.out);
        changed.then_some(self.out.as_slice())
    }

    /// The stream holding an end back, if one is.
    pub(crate) fn holding(&self) -> Option<usize> {
        self.held.iter().position(|h| !h.is_empty())
    }

    /// Passes on what stream `which` holds back, as it is (nothing followed that makes it a
    /// value): [`Masking::out`] then holds it.
    pub(crate) fn flush(&mut self, which: usize) -> &[u8] {
        self.out.clear();
        self.out.append(&mut self.held[which]);
        &self.out
    }

    /// The bytes the last [`Masking::chunk`] or [`Masking::flush`] passes on.
    pub(crate) fn out(&self) -> &[u8] {
        &self.out
    }
}

/// Masks `values` in what `held` kept of the stream followed by `chunk`: appends to `out` what
/// can pass on, and leaves in `held` the end that could begin a value. Returns false when
/// `chunk` passes on untouched (nothing held, nothing found: `out` is left empty).
fn mask_into(values: &[&[u8]], held: &mut Vec<u8>, chunk: &[u8], out: &mut Vec<u8>) -> bool {
    let joined;
    let data: &[u8] = if held.is_empty() {
        chunk
    } else {
        held.extend_from_slice(chunk);
        joined = std::mem::take(held);
        &joined
    };
    let mut found: Vec<(usize, usize)> = Vec::new();
    for value in values {
        // Overlapping finds too (`aaaa` in `aaaaaa`): each is masked, merged below.
        let finder = memchr::memmem::Finder::new(value);
        let mut from = 0;
        while let Some(at) = finder.find(&data[from..]) {
            found.push((from + at, from + at + value.len()));
            from += at + 1;
        }
    }
    found.sort_unstable();
    let last_end = found.iter().map(|&(_, end)| end).max().unwrap_or(0);
    let keep = data.len() - value_start_at_end(values, data, last_end);
    if found.is_empty() && keep == data.len() && std::ptr::eq(data, chunk) {
        return false;
    }
    let mut at = 0;
    let mut ranges = found.into_iter().peekable();
    while let Some((start, mut end)) = ranges.next() {
        // Overlapping finds (two values, or a value found twice over itself) are one mask.
        while let Some(&(next, next_end)) = ranges.peek()
            && next < end
        {
            end = end.max(next_end);
            ranges.next();
        }
        if start >= at {
            out.extend_from_slice(&data[at..start]);
            out.extend_from_slice(MASK);
            at = end;
        } else {
            at = at.max(end);
        }
    }
    out.extend_from_slice(&data[at..keep]);
    held.extend_from_slice(&data[keep..]);
    true
}

/// How many bytes at the end of `data`, after `from`, could be the start of one of `values`
/// (a proper prefix of it): the longest such end.
fn value_start_at_end(values: &[&[u8]], data: &[u8], from: usize) -> usize {
    values
        .iter()
        .filter_map(|value| {
            let first = data.len().saturating_sub(value.len() - 1).max(from);
            (first..data.len())
                .filter(|&i| data[i] == value[0])
                .find(|&i| value.starts_with(&data[i..]))
                .map(|i| data.len() - i)
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "mask_tests.rs"]
mod tests;
