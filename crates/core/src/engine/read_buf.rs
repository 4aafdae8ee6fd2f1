//! One pipe's read buffer: on the heap for a one-shot call's reads, a private mapping for a
//! background job's quarter-megabyte reads.
//!
//! Why a mapping for a job: its buffers live as long as the job runs, pass between threads (its
//! pipes' thread reads into them, the drivers' thread takes their bytes) and are freed when it
//! ends, while its ring (and 31 others) stays. Allocated on one thread and freed on another,
//! the allocator kept what they freed:
//! with 32 finished jobs kept, eight of which had run at once, mimalloc's arena held 10.2–10.9
//! MiB resident (1.6 MiB idle) though 0.98 MiB of the heap was in use; 3.7–4.1 MiB since. A
//! mapping costs the pages the reads touched and goes back to the system when the job ends. A
//! one-shot call's 64 KB reads stay on the heap, which hands the same blocks to the next call
//! without a system call.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

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
        let mapped = (chunk > READ_CHUNK_BYTES)
            .then(|| memmap2::MmapMut::map_anon(chunk).ok())
            .flatten();
        let store = match mapped {
            Some(map) => Store::Mapped(map, 0),
            None => Store::Heap(Vec::with_capacity(chunk)),
        };
        Self { store }
    }

    fn clear(&mut self) {
        match &mut self.store {
            Store::Heap(vec) => vec.clear(),
            Store::Mapped(_, len) => *len = 0,
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.store {
            Store::Heap(vec) => vec,
            Store::Mapped(map, len) => &map[..*len],
        }
    }

    /// How many bytes one read may take.
    pub(crate) fn capacity(&self) -> usize {
        match &self.store {
            Store::Heap(vec) => vec.capacity(),
            Store::Mapped(map, _) => map.len(),
        }
    }

    /// Replaces the bytes with at most `want` read from `fd` (one `read`).
    pub(crate) fn read_fd(&mut self, fd: BorrowedFd<'_>, want: usize) -> io::Result<usize> {
        self.clear();
        let spare = match &mut self.store {
            Store::Heap(vec) => vec.spare_capacity_mut(),
            // SAFETY: a mapping's bytes are initialised (zero-filled by the kernel).
            Store::Mapped(map, _) => unsafe { map_as_uninit(map) },
        };
        let want = want.min(spare.len());
        // SAFETY: read writes at most `want` bytes into the spare capacity, which is that long.
        let n = unsafe { libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), want) };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        match &mut self.store {
            // SAFETY: the first `n` bytes of the spare capacity were just written by read.
            Store::Heap(vec) => unsafe { vec.set_len(n) },
            Store::Mapped(_, len) => *len = n,
        }
        Ok(n)
    }
}

/// A mapping's bytes as spare room to read into.
///
/// # Safety
/// The bytes are initialised already; the caller only writes through the result.
unsafe fn map_as_uninit(map: &mut memmap2::MmapMut) -> &mut [std::mem::MaybeUninit<u8>] {
    let len = map.len();
    // SAFETY: same memory, same length; MaybeUninit<u8> has u8's layout.
    unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr().cast(), len) }
}
