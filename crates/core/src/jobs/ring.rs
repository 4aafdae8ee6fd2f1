//! The output buffer of a long-lived job (docs/BEHAVIOUR.md §3): a ring that drops the head and keeps the tail,
//! read with absolute byte cursors, spilling lazily to a file.
//!
//! Why drop-head: the end of a build is what matters (the result, the error), so the newest
//! [`RING_BYTES`] are kept. Why absolute cursors: a reader says "from byte N" and gets exactly what
//! follows, with no gap and no duplicate, and is told precisely how much scrolled out if N is
//! gone. Why lazy spill: most jobs never overflow and should write no file; the first overflow
//! starts a spill file holding *everything* from byte 0, so what scrolled out is not lost.
//!
//! The ring holds cleaned text (§7.1): cursors count bytes of that text.
//!
//! Once the job has ended with its whole text in the spill file, the ring's bytes are a copy
//! of the file's tail: the ring lets its buffer go and reads that span from the file instead
//! (same cursors, same replies). A kept job that overflowed then costs the server a few hundred
//! bytes rather than its 256 KiB (32 are kept: `cargo bench -p agentty --bench memory`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::jobs::tail::Tail;
use crate::spill::{SpillFile, SpillHandle, SpillStore};

/// Bytes of cleaned output kept per job.
pub const RING_BYTES: usize = 256 * 1024;

/// Most bytes one read returns: small enough for a model to read in one go.
pub const READ_MAX_BYTES: usize = 8 * 1024;

/// A job's spill file stops growing at this size. A job that floods forever (a log loop, `yes`)
/// keeps running and keeps its ring (the tail), but must not fill the disk: a quarter gigabyte
/// is far beyond what anyone reads, and reads say where the file stopped.
pub const SPILL_MAX_BYTES: u64 = 256 * 1024 * 1024;

enum Spill {
    /// No store configured (tests) or no overflow yet.
    Idle(Option<(Arc<SpillStore>, String)>),
    Writing(SpillFile),
    /// The file reached [`SPILL_MAX_BYTES`]; it holds the start, the ring the tail.
    Full(SpillFile),
    Failed(String),
    /// The job ended: the file is complete and closed (no fd is kept for an ended job but its
    /// directory's, which the session holds anyway).
    Done {
        path: std::path::PathBuf,
        /// Where it stopped growing, when it reached [`SPILL_MAX_BYTES`].
        full_at: Option<u64>,
        /// How reads of a ring that let its buffer go open it ([`Inner::copy_out`]).
        handle: SpillHandle,
    },
}

struct Inner {
    buf: Tail,
    /// Absolute offset of the oldest byte in `buf`.
    start: u64,
    spill: Spill,
    /// Bytes in the spill file.
    spilled: u64,
    closed: bool,
    /// The job ended with every byte in its spill file and `buf` was let go: `[start, end)` is
    /// read from the file ([`Spill::Done`]'s path).
    released: bool,
}

/// What one read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub text: String,
    /// Absolute offset where `text` starts.
    pub from: u64,
    /// Cursor for the next read.
    pub next: u64,
    /// Bytes between the requested cursor and `from` that had scrolled out of the ring.
    pub dropped: u64,
    /// Total bytes ever written.
    pub total: u64,
    /// Bytes left after `next` (more to read at once).
    pub remaining: u64,
    /// File holding the full text, once the ring has overflowed.
    pub spill_path: Option<PathBuf>,
    /// Why the full text could not be kept, if it could not.
    pub spill_error: Option<String>,
    /// The spill file stopped growing at this many bytes ([`SPILL_MAX_BYTES`]).
    pub spill_full_at: Option<u64>,
}

pub struct OutputRing {
    inner: Mutex<Inner>,
    changed: Notify,
}

impl OutputRing {
    /// `spill`: the store and file name used on the first overflow.
    pub fn new(spill: Option<(Arc<SpillStore>, String)>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                buf: Tail::new(RING_BYTES),
                start: 0,
                spill: Spill::Idle(spill),
                spilled: 0,
                closed: false,
                released: false,
            }),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends cleaned text.
    pub fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut inner = self.lock();
        if inner.released {
            return; // ended: nothing more comes
        }
        let overflow = inner.buf.len() + text.len() > RING_BYTES;
        if overflow && let Spill::Idle(Some((store, name))) = &inner.spill {
            let (store, name) = (store.clone(), name.clone());
            // Before the first overflow nothing was dropped, so the buffer is everything from
            // byte 0 and holds whole characters; made contiguous so no character is split.
            let everything = inner.buf.contiguous();
            let opened = store.create(&name).and_then(|mut file| {
                file.write(&String::from_utf8_lossy(everything))?;
                Ok(file)
            });
            inner.spilled = inner.buf.len() as u64;
            inner.spill = match opened {
                Ok(file) => Spill::Writing(file),
                Err(e) => Spill::Failed(e.to_string()),
            };
        }
        inner.spill_text(text);
        let dropped = inner.buf.push(text.as_bytes());
        inner.start += dropped as u64;
        drop(inner);
        self.changed.notify_waiters();
    }

    /// Continues an already-open spill file holding every byte pushed so far (a foreground
    /// command moved into the background keeps writing the file its capture started).
    pub(crate) fn continue_spill(&self, file: SpillFile, bytes: u64) {
        let mut inner = self.lock();
        inner.spilled = bytes;
        inner.spill = Spill::Writing(file);
    }

    /// Sets where the first overflow spills (before anything overflowed).
    pub(crate) fn spill_to(&self, spill: Option<(Arc<SpillStore>, String)>) {
        let mut inner = self.lock();
        if let Spill::Idle(_) = inner.spill {
            inner.spill = Spill::Idle(spill);
        }
    }

    /// Records that the full text could not be kept.
    pub(crate) fn spill_failed(&self, reason: String) {
        self.lock().spill = Spill::Failed(reason);
    }

    /// Removes the spill file of an ended job (the job table forgot it: nothing names it any
    /// more, and a long session's forgotten jobs must not keep up to 256 MiB each on disk).
    pub fn discard_spill(&self) {
        let mut inner = self.lock();
        if let Spill::Done { handle, .. } = &inner.spill {
            handle.remove();
            inner.spill = Spill::Failed("the job was forgotten and its spill file removed".into());
        }
    }

    /// Marks the end of output (the job ended); flushes the spill file.
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        let spilled = inner.spilled;
        let done = |file: SpillFile, full_at| {
            let handle = file.handle();
            match file.finish() {
                Ok(path) => Spill::Done {
                    path,
                    full_at,
                    handle,
                },
                Err(e) => Spill::Failed(e.to_string()),
            }
        };
        inner.spill = match std::mem::replace(&mut inner.spill, Spill::Idle(None)) {
            Spill::Writing(file) => done(file, None),
            Spill::Full(file) => done(file, Some(spilled)),
            other => other,
        };
        let complete = matches!(inner.spill, Spill::Done { full_at: None, .. })
            && inner.spilled == inner.end();
        if complete {
            inner.buf = Tail::new(RING_BYTES);
            inner.released = true;
        }
        drop(inner);
        self.changed.notify_waiters();
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Total bytes written so far.
    pub fn total(&self) -> u64 {
        self.lock().end()
    }

    /// Reads at most `max` bytes from `since`, or the newest `max` bytes when `since` is `None`.
    /// A cursor past the end is the caller's error to report; here it reads nothing.
    pub fn read(&self, since: Option<u64>, max: usize) -> Slice {
        let mut inner = self.lock();
        // A reply that names the spill file must not name a file lagging behind the buffer.
        if let Spill::Writing(file) = &mut inner.spill
            && let Err(e) = file.write_out()
        {
            inner.spill = Spill::Failed(e.to_string());
        }
        let end = inner.end();
        let wanted = since.unwrap_or_else(|| end.saturating_sub(max as u64));
        let from_abs = wanted.clamp(inner.start, end);
        let dropped = from_abs.saturating_sub(wanted);
        let len = usize::try_from(end - from_abs)
            .unwrap_or(usize::MAX)
            .min(max);
        let (bytes, unreadable) = match inner.copy_out(from_abs, len) {
            Ok(bytes) => (bytes, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        // Cut at character boundaries: skip a partial character at the start (it scrolled out
        // or was split by the caller's cursor) and leave a partial one at the end for next time.
        let mut lead = bytes.iter().take_while(|&&b| is_continuation(b)).count();
        let mut cut = lead + complete_prefix_len(&bytes[lead..]);
        // And at lines, where a line goes on past the read and little is left out for it: the
        // newest bytes start after a newline unless their first line is whole or more than a
        // quarter of them (a long last line is what a failed build printed last), and a read
        // that more output follows ends after its last newline where that keeps at least half
        // of it. Otherwise the read is cut where it ends, as a line longer than it is.
        let mid_line = || {
            from_abs > 0
                && (from_abs == inner.start
                    || inner.copy_out(from_abs - 1, 1).ok().as_deref() != Some(b"\n".as_slice()))
        };
        if since.is_none()
            && mid_line()
            && let Some(at) = bytes[lead..cut].iter().position(|&b| b == b'\n')
            && (at + 1) * 4 <= cut - lead
        {
            lead += at + 1;
        }
        if from_abs + (len as u64) < end
            && let Some(at) = bytes[lead..cut].iter().rposition(|&b| b == b'\n')
            && (at + 1) * 2 >= cut - lead
        {
            cut = lead + at + 1;
        }
        let text = String::from_utf8_lossy(&bytes[lead..cut]).into_owned();
        let from = from_abs + lead as u64;
        let next = from_abs + cut as u64;
        let (spill_path, spill_error, spill_full_at) = match &inner.spill {
            Spill::Writing(file) => (Some(file.path().to_owned()), None, None),
            Spill::Full(file) => (Some(file.path().to_owned()), None, Some(inner.spilled)),
            Spill::Failed(e) => (None, Some(e.clone()), None),
            Spill::Idle(_) => (None, None, None),
            Spill::Done { path, full_at, .. } => (Some(path.clone()), unreadable, *full_at),
        };
        Slice {
            text,
            from,
            next,
            dropped,
            total: end,
            remaining: end - next,
            spill_path,
            spill_error,
            spill_full_at,
        }
    }

    /// Resolves the next time output is pushed or the ring is closed.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }
}

impl Inner {
    /// Absolute offset after the newest byte.
    fn end(&self) -> u64 {
        if self.released {
            self.spilled
        } else {
            self.start + self.buf.len() as u64
        }
    }

    /// Copies `len` bytes from absolute offset `from` (within `[start, end)`): from the buffer,
    /// or from the spill file once the buffer was let go.
    fn copy_out(&self, from: u64, len: usize) -> Result<Vec<u8>, String> {
        if !self.released {
            return Ok(self.buf.copy_out((from - self.start) as usize, len));
        }
        let Spill::Done { handle, .. } = &self.spill else {
            return Err("the spill file was removed".to_owned());
        };
        read_at(handle, from, len).map_err(|e| format!("the spill file could not be read: {e}"))
    }

    /// Appends to the spill file, up to [`SPILL_MAX_BYTES`] (cut at a character boundary).
    fn spill_text(&mut self, text: &str) {
        let Spill::Writing(file) = &mut self.spill else {
            return;
        };
        let room = usize::try_from(SPILL_MAX_BYTES.saturating_sub(self.spilled)).unwrap_or(0);
        let mut take = text.len().min(room);
        while !text.is_char_boundary(take) {
            take -= 1;
        }
        if let Err(e) = file.write(&text[..take]) {
            self.spill = Spill::Failed(e.to_string());
            return;
        }
        self.spilled += take as u64;
        if take < text.len() {
            let full = std::mem::replace(&mut self.spill, Spill::Idle(None));
            if let Spill::Writing(mut file) = full {
                let _ = file.flush();
                self.spill = Spill::Full(file);
            }
        }
    }
}

/// `len` bytes of the spill file `handle` opens, from `offset`.
fn read_at(handle: &SpillHandle, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut bytes = vec![0; len];
    handle.open()?.read_exact_at(&mut bytes, offset)?;
    Ok(bytes)
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Length of the longest prefix of `bytes` that does not end inside a character.
fn complete_prefix_len(bytes: &[u8]) -> usize {
    let Some(last_start) = bytes.iter().rposition(|&b| !is_continuation(b)) else {
        return bytes.len();
    };
    let width = match bytes[last_start] {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    };
    if last_start + width <= bytes.len() {
        bytes.len()
    } else {
        last_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rebuild(ring: &OutputRing) -> String {
        let mut cursor = 0;
        let mut out = String::new();
        loop {
            let s = ring.read(Some(cursor), READ_MAX_BYTES);
            assert_eq!(s.from, cursor, "no gap");
            if s.text.is_empty() {
                return out;
            }
            out.push_str(&s.text);
            cursor = s.next;
        }
    }

    #[test]
    fn cursors_rebuild_the_stream_exactly() {
        let ring = OutputRing::new(None);
        let mut all = String::new();
        for i in 0..3000 {
            let line = format!("line {i} — ünïcödé\n");
            all.push_str(&line);
            ring.push(&line);
        }
        assert!(all.len() < RING_BYTES);
        assert_eq!(rebuild(&ring), all);
    }

    #[test]
    fn overflow_drops_the_head_and_says_how_much() {
        let ring = OutputRing::new(None);
        let chunk = "x".repeat(1000) + "\n";
        for _ in 0..400 {
            ring.push(&chunk);
        }
        let total = 400 * chunk.len() as u64;
        let s = ring.read(Some(0), READ_MAX_BYTES);
        assert_eq!(s.dropped, total - RING_BYTES as u64);
        assert_eq!(s.from, total - RING_BYTES as u64);
        let newest = ring.read(None, 100);
        assert_eq!(newest.next, total);
        assert_eq!(newest.text.len(), 100);
    }

    #[test]
    fn reads_cut_at_lines_where_a_line_goes_on_past_them() {
        let ring = OutputRing::new(None);
        ring.push("aaa\nbbb\nccc\nddd\neee\n");
        // The newest bytes start at a line: `b\n` is the end of a line they do not hold.
        let newest = ring.read(None, 14);
        assert_eq!((newest.text.as_str(), newest.from), ("ccc\nddd\neee\n", 8));
        // Whole lines already: kept.
        assert_eq!(ring.read(None, 16).text, "bbb\nccc\nddd\neee\n");
        // A read more output follows ends after its last newline, and the next goes on there.
        let first = ring.read(Some(0), 10);
        assert_eq!((first.text.as_str(), first.next), ("aaa\nbbb\n", 8));
        assert_eq!(ring.read(Some(first.next), 10).text, "ccc\nddd\n");
        // The end of the output is read as it is, a line still being written included.
        ring.push("ff");
        assert_eq!(ring.read(Some(16), 6).text, "eee\nff");
        // A line longer than the read is cut as it is.
        let long = OutputRing::new(None);
        long.push(&"x".repeat(20));
        assert_eq!(long.read(Some(0), 4).text, "xxxx");
        assert_eq!(long.read(None, 4).text, "xxxx");
        // A long last line is kept with what follows it: only a short head is left out.
        let tail = OutputRing::new(None);
        tail.push(&format!("head\n{}\nok\n", "F".repeat(100)));
        let newest = tail.read(None, 60);
        assert!(newest.text.starts_with("FFF"), "{:?}", newest.text);
        assert!(newest.text.ends_with("\nok\n"), "{:?}", newest.text);
        // A read that would keep less than half of itself is not cut back to a newline.
        let paged = OutputRing::new(None);
        paged.push(&format!("{}\n{}\n", "a".repeat(3), "b".repeat(30)));
        assert_eq!(paged.read(Some(0), 20).next, 20);
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let ring = OutputRing::new(None);
        ring.push(&"é".repeat(10_000));
        for max in [1, 2, 3, 7, 8191] {
            let mut cursor = 1; // inside a character
            loop {
                let s = ring.read(Some(cursor), max);
                assert!(s.text.chars().all(|c| c == 'é'), "max {max}");
                if s.next == cursor {
                    break;
                }
                cursor = s.next;
            }
        }
    }

    /// Reads at a spread of cursors, each as a reader would see it.
    fn reads(ring: &OutputRing) -> Vec<Slice> {
        let total = ring.total();
        let mut cursors: Vec<Option<u64>> = vec![None, Some(0), Some(total), Some(total + 5)];
        cursors.extend((0..40).map(|i| Some(total * i / 40 + i)));
        cursors
            .into_iter()
            .flat_map(|since| [ring.read(since, READ_MAX_BYTES), ring.read(since, 3)])
            .collect()
    }

    #[test]
    fn an_ended_job_reads_the_same_once_its_buffer_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SpillStore::new(dir.path(), "session"));
        let ring = OutputRing::new(Some((store, "job".to_owned())));
        for i in 0..30_000 {
            ring.push(&format!("line {i} — ünïcödé\n"));
        }
        assert!(ring.total() > 2 * RING_BYTES as u64);
        let before = reads(&ring);
        ring.close();
        assert!(ring.lock().released, "the buffer was kept");
        assert_eq!(ring.lock().buf.len(), 0);
        assert_eq!(reads(&ring), before);
    }

    /// A ring spilling under `dir` that overflowed by a few bytes of `x` and ended; with its
    /// spill file's path.
    fn ended_with_a_spill_file(dir: &std::path::Path) -> (OutputRing, PathBuf) {
        let store = Arc::new(SpillStore::new(dir, "session"));
        let ring = OutputRing::new(Some((store, "job".to_owned())));
        ring.push(&"x".repeat(RING_BYTES + 10));
        ring.close();
        let path = ring.read(None, 10).spill_path.unwrap();
        (ring, path)
    }

    #[test]
    fn an_ended_job_whose_spill_file_is_gone_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let (ring, path) = ended_with_a_spill_file(dir.path());
        std::fs::remove_file(&path).unwrap();
        let s = ring.read(Some(RING_BYTES as u64), 10);
        assert_eq!(s.text, "");
        assert!(s.spill_error.unwrap().contains("could not be read"));
    }

    /// Reads of an ended job open its file in the directory held since it was made: a directory
    /// on its path swapped meanwhile (another one with a file of the same name) is not read.
    #[test]
    fn an_ended_job_reads_its_own_file_whatever_its_path_names_now() {
        let dir = tempfile::tempdir().unwrap();
        let (ring, path) = ended_with_a_spill_file(dir.path());
        let session = path.parent().unwrap();
        std::fs::rename(session, dir.path().join("moved")).unwrap();
        std::fs::create_dir(session).unwrap();
        std::fs::write(&path, "y".repeat(RING_BYTES + 10)).unwrap();
        let s = ring.read(Some(RING_BYTES as u64), 10);
        assert_eq!(s.text, "xxxxxxxxxx");
    }

    #[test]
    fn a_job_without_a_complete_spill_file_keeps_its_buffer() {
        // No store: nothing spilled, the ring is all there is.
        let ring = OutputRing::new(None);
        ring.push(&"y".repeat(RING_BYTES + 10));
        let before = reads(&ring);
        ring.close();
        assert!(!ring.lock().released);
        assert_eq!(reads(&ring), before);
    }
}
