//! One pipe's read buffer: on the heap for a one-shot call's reads, a private mapping for a
//! background job's quarter-megabyte reads.
//!
//! Why a mapping for a job: its buffers live as long as the job runs, on the drivers' thread,
//! and are freed when it ends, while its ring (and 31 others) stays. They were allocated on a
//! request worker and freed on the drivers' thread, and the allocator kept what they freed:
//! with 32 finished jobs kept, eight of which had run at once, mimalloc's arena held 10.2–10.9
//! MiB resident (1.6 MiB idle) though 0.98 MiB of the heap was in use; 3.7–4.1 MiB since. A
//! mapping costs the pages the reads touched and goes back to the system when the job ends. A
//! one-shot call's 64 KB reads stay on the heap, which hands the same blocks to the next call
//! without a system call.

use std::io;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use crate::limits::READ_CHUNK_BYTES;

/// The bytes of the last read, in a heap buffer or a mapping of a fixed capacity.
pub(crate) struct ReadBuf {
    store: Store,
}

enum Store {
    /// Never zero-filled: reads go into its spare capacity.
    Heap(Vec<u8>),
    /// The first `usize` bytes are the last read's.
    Mapped(memmap2::MmapMut, usize),
}

impl ReadBuf {
    /// A buffer for reads of `chunk` bytes: mapped past [`READ_CHUNK_BYTES`] (on the heap if
    /// the mapping fails: no memory, too many mappings).
    pub(crate) fn new(chunk: usize) -> Self {
        let mut buf = Self::empty();
        buf.reserve(chunk);
        buf
    }

    /// No buffer yet (a stderr chunk held back swaps its buffer in here).
    pub(crate) fn empty() -> Self {
        Self {
            store: Store::Heap(Vec::new()),
        }
    }

    /// Reads of `chunk` bytes from now on: never fewer than before.
    pub(crate) fn reserve(&mut self, chunk: usize) {
        let Store::Heap(vec) = &mut self.store else {
            return;
        };
        if chunk > READ_CHUNK_BYTES
            && let Ok(map) = memmap2::MmapMut::map_anon(chunk)
        {
            // Called before a read and never between a read and its use: nothing to carry.
            self.store = Store::Mapped(map, 0);
            return;
        }
        vec.reserve(chunk.saturating_sub(vec.len()));
    }

    pub(crate) fn clear(&mut self) {
        match &mut self.store {
            Store::Heap(vec) => vec.clear(),
            Store::Mapped(_, len) => *len = 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.store {
            Store::Heap(vec) => vec,
            Store::Mapped(map, len) => &map[..*len],
        }
    }

    /// Replaces the bytes with one read from `pipe`. Cancel-safe: a read that did not complete
    /// took no bytes.
    pub(crate) async fn read_from(&mut self, pipe: &mut pipe::Receiver) -> io::Result<usize> {
        self.clear();
        match &mut self.store {
            Store::Heap(vec) => pipe.read_buf(vec).await,
            Store::Mapped(map, len) => {
                let n = pipe.read(&mut map[..]).await?;
                *len = n;
                Ok(n)
            }
        }
    }

    /// Replaces the bytes with at most `want` already in `pipe`, without waiting.
    pub(crate) fn try_read_from(
        &mut self,
        pipe: &pipe::Receiver,
        want: usize,
    ) -> io::Result<usize> {
        self.clear();
        match &mut self.store {
            Store::Heap(vec) => {
                vec.resize(want.min(vec.capacity().max(1)), 0);
                let got = pipe.try_read(vec);
                vec.truncate(*got.as_ref().unwrap_or(&0));
                got
            }
            Store::Mapped(map, len) => {
                let want = want.clamp(1, map.len());
                let got = pipe.try_read(&mut map[..want]);
                *len = *got.as_ref().unwrap_or(&0);
                got
            }
        }
    }
}
