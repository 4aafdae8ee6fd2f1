//! The newest bytes of a stream, up to a fixed capacity: the storage of [`OutputRing`].
//!
//! Why not `VecDeque<u8>`: pushing a chunk before draining the head made it grow past the
//! capacity (to at least twice it), and every flooding job kept that allocation. Here the buffer
//! grows with the data up to the capacity and no further, a push is at most two copies, and
//! dropping the head is moving an index. (8 jobs flooding 100 MB each: server peak RSS 19 MiB
//! with `VecDeque`, 13.5 MiB with this.)
//!
//! [`OutputRing`]: super::ring::OutputRing

pub(crate) struct Tail {
    buf: Vec<u8>,
    cap: usize,
    /// Index of the oldest byte (0 until the buffer first wraps).
    head: usize,
    len: usize,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            cap: cap.max(1),
            head: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `bytes`; returns how many of the oldest bytes were dropped to make room.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> usize {
        let cap = self.cap;
        if self.buf.len() < cap && self.len + bytes.len() <= cap {
            // Not full yet: the data is `buf[..len]`, in order.
            self.buf.extend_from_slice(bytes);
            self.len += bytes.len();
            return 0;
        }
        let total = self.len + bytes.len();
        if bytes.len() >= cap {
            self.buf.clear();
            self.buf.extend_from_slice(&bytes[bytes.len() - cap..]);
            self.head = 0;
            self.len = cap;
            return total - cap;
        }
        if self.buf.len() < cap {
            self.buf.resize(cap, 0);
        }
        let at = (self.head + self.len) % cap;
        let first = bytes.len().min(cap - at);
        self.buf[at..at + first].copy_from_slice(&bytes[..first]);
        self.buf[..bytes.len() - first].copy_from_slice(&bytes[first..]);
        let dropped = total.saturating_sub(cap);
        self.head = (self.head + dropped) % cap;
        self.len = total - dropped;
        dropped
    }

    /// Copies `len` bytes starting `offset` bytes after the oldest one.
    pub(crate) fn copy_out(&self, offset: usize, len: usize) -> Vec<u8> {
        let len = len.min(self.len.saturating_sub(offset));
        let start = (self.head + offset) % self.cap;
        let first = len.min(self.buf.len().saturating_sub(start));
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&self.buf[start..start + first]);
        out.extend_from_slice(&self.buf[..len - first]);
        out
    }

    /// Everything held, oldest first, in one slice (rotates the buffer when it has wrapped).
    pub(crate) fn contiguous(&mut self) -> &[u8] {
        if self.head != 0 {
            self.buf.rotate_left(self.head);
            self.head = 0;
        }
        &self.buf[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same stream through a `Tail` and through a plain `Vec` kept to its last `cap` bytes.
    #[test]
    fn holds_exactly_the_newest_bytes_whatever_the_push_sizes() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for cap in [1, 7, 64, 1000] {
            let mut tail = Tail::new(cap);
            let mut model: Vec<u8> = Vec::new();
            let mut dropped_total = 0;
            for round in 0..2000 {
                let n = (next() % (cap as u64 * 2 + 3)) as usize;
                let bytes: Vec<u8> = (0..n).map(|i| (round + i) as u8).collect();
                dropped_total += tail.push(&bytes);
                model.extend_from_slice(&bytes);
                let keep = model.len().min(cap);
                assert_eq!(dropped_total, model.len() - keep, "cap {cap}");
                let newest = &model[model.len() - keep..];
                assert_eq!(tail.len(), keep);
                assert_eq!(tail.copy_out(0, keep), newest, "cap {cap} round {round}");
                let off = (next() % (keep as u64 + 1)) as usize;
                let len = (next() % (keep as u64 + 2)) as usize;
                let want = &newest[off..(off + len).min(keep)];
                assert_eq!(tail.copy_out(off, len), want, "cap {cap} round {round}");
            }
            let all = model[model.len() - tail.len()..].to_vec();
            assert_eq!(tail.contiguous(), &all[..]);
        }
    }
}
