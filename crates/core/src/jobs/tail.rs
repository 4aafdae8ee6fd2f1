//! The newest bytes of a stream, up to a fixed capacity: the storage of [`OutputRing`].
//!
//! Why not `VecDeque<u8>`: pushing a chunk before draining the head made it grow past the
//! capacity (to at least twice it), and every flooding job kept that allocation. Here the buffer
//! grows with the data up to the capacity and no further, a push is at most two copies, and
//! dropping the head is moving an index. (8 jobs flooding 100 MB each: server peak RSS 19 MiB
//! with `VecDeque`, 13.5 MiB with this.)
//!
//! Why not the allocator, past [`HEAP_MAX`]: a ring outlives its job (32 ended jobs are kept), and
//! the job's transient buffers (two 256 KB pipe reads, the spill writer's) were freed around it.
//! The allocator keeps the pages a live block shares with freed ones, so each kept ring held its
//! neighbours' memory too: 32 kept jobs that printed 1 MB each cost the server 0.36–1.3 MB a job
//! (`cargo bench -p agentty --bench memory`). A ring past [`HEAP_MAX`] is instead a private
//! mapping of its whole capacity, never grown or copied: it costs the pages written and no more,
//! and goes back to the system the moment the ring is dropped. A small output stays on the heap,
//! so a call that prints a line costs no system call.
//!
//! [`OutputRing`]: super::ring::OutputRing

/// Bytes a tail keeps on the heap; a longer one moves to a mapping of its whole capacity.
const HEAP_MAX: usize = 64 * 1024;

pub(crate) struct Tail {
    buf: Buf,
    cap: usize,
    /// Index of the oldest byte (0 until the buffer first wraps).
    head: usize,
    len: usize,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        Self {
            buf: Buf::new(cap),
            cap,
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
            self.buf.fill_to_capacity();
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

/// A tail's storage: a `Vec` while it holds at most [`HEAP_MAX`] bytes (or the capacity is that
/// small), then an anonymous mapping of the whole capacity (zero pages until written, returned to
/// the system when dropped). Derefs to the bytes stored so far.
struct Buf {
    cap: usize,
    store: Store,
}

enum Store {
    Heap(Vec<u8>),
    /// The first `usize` bytes of the mapping are stored; the rest are zero pages not yet
    /// touched.
    Mapped(memmap2::MmapMut, usize),
}

impl Buf {
    fn new(cap: usize) -> Self {
        Self {
            cap,
            store: Store::Heap(Vec::new()),
        }
    }

    /// Makes room for `len` bytes (at most the capacity), moving to a mapping past [`HEAP_MAX`].
    fn room_for(&mut self, len: usize) {
        let Store::Heap(vec) = &mut self.store else {
            return;
        };
        // A failed mapping (no memory, too many mappings) leaves the tail on the heap.
        if len > HEAP_MAX
            && let Ok(mut map) = memmap2::MmapMut::map_anon(self.cap)
        {
            map[..vec.len()].copy_from_slice(vec);
            self.store = Store::Mapped(map, vec.len());
            return;
        }
        if vec.capacity() < len {
            // Doubling, but never past the capacity (a heap tail holds no byte it cannot use).
            let want = (vec.capacity() * 2).min(self.cap).max(len);
            vec.reserve_exact(want - vec.len());
        }
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.room_for(self.len() + bytes.len());
        match &mut self.store {
            Store::Heap(vec) => vec.extend_from_slice(bytes),
            Store::Mapped(map, len) => {
                map[*len..*len + bytes.len()].copy_from_slice(bytes);
                *len += bytes.len();
            }
        }
    }

    /// Grows to the whole capacity (the new bytes are zeros).
    fn fill_to_capacity(&mut self) {
        self.room_for(self.cap);
        match &mut self.store {
            Store::Heap(vec) => vec.resize(self.cap, 0),
            Store::Mapped(_, len) => *len = self.cap,
        }
    }

    fn clear(&mut self) {
        match &mut self.store {
            Store::Heap(vec) => vec.clear(),
            Store::Mapped(_, len) => *len = 0,
        }
    }
}

impl std::ops::Deref for Buf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.store {
            Store::Heap(vec) => vec,
            Store::Mapped(map, len) => &map[..*len],
        }
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.store {
            Store::Heap(vec) => vec,
            Store::Mapped(map, len) => &mut map[..*len],
        }
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
        // The last two move to a mapping (past `HEAP_MAX`); the others stay on the heap.
        for cap in [1, 7, 64, 1000, HEAP_MAX + 1000, 3 * HEAP_MAX] {
            let rounds = if cap > HEAP_MAX { 300 } else { 2000 };
            let mut tail = Tail::new(cap);
            let mut model: Vec<u8> = Vec::new();
            let mut total = 0;
            let mut dropped_total = 0;
            for round in 0..rounds {
                let n = (next() % (cap as u64 * 2 + 3)) as usize;
                let bytes: Vec<u8> = (0..n).map(|i| (round + i) as u8).collect();
                dropped_total += tail.push(&bytes);
                total += n;
                model.extend_from_slice(&bytes);
                model.drain(..model.len().saturating_sub(cap));
                let keep = model.len();
                assert_eq!(dropped_total, total - keep, "cap {cap}");
                let newest = &model[..];
                assert_eq!(tail.len(), keep);
                assert_eq!(tail.copy_out(0, keep), newest, "cap {cap} round {round}");
                let off = (next() % (keep as u64 + 1)) as usize;
                let len = (next() % (keep as u64 + 2)) as usize;
                let want = &newest[off..(off + len).min(keep)];
                assert_eq!(tail.copy_out(off, len), want, "cap {cap} round {round}");
            }
            assert_eq!(
                matches!(tail.buf.store, Store::Mapped(..)),
                cap > HEAP_MAX,
                "cap {cap}"
            );
            assert_eq!(tail.contiguous(), &model[..]);
        }
    }

    /// A heap tail never holds more than its capacity (the `Vec`'s doubling would).
    #[test]
    fn a_heap_tail_is_never_larger_than_its_capacity() {
        let mut tail = Tail::new(1000);
        for _ in 0..30 {
            tail.push(&[b'x'; 37]);
        }
        let Store::Heap(vec) = &tail.buf.store else {
            panic!("a 1000-byte tail is on the heap")
        };
        assert!(vec.capacity() <= 1000, "capacity {}", vec.capacity());
    }
}
