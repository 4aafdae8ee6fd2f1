//! The web view's copy of a command's output: cleaned like the model's (carriage returns
//! collapsed, escapes dropped) but keeping colours and bold, which the page renders.
//!
//! Why it starts at the first escape: before one, the coloured copy is the plain text the model
//! gets, byte for byte, so nothing is cleaned twice for output without colours (most of it, and
//! every flood of plain lines). Nor is it scanned twice: [`ViewTap::through`] feeds the model's
//! cleaner, which tells it of the stream's first ESC byte as it meets it ([`Emit::first_escape`]),
//! so output without one costs what it costs without a view. At the first escape the copy starts
//! from the plain text so far and the lines the model's cleaners are writing
//! ([`Cleaner::keeping_colours_from`]), and takes the raw bytes from the escape on.
//!
//! Why raw until read: a second cleaner keeping colours costs more than the model's own on
//! coloured output, and most outputs are never opened. So until the copy is first read
//! ([`ViewTap::ring`]) the raw chunks after the first escape are only kept, tagged with their
//! stream, in a tail of [`RAW_BYTES`] (a lock and a copy each); the first read cleans them, in
//! order, through the cleaners saved at the escape, which gives the copy a watched output gets
//! byte for byte, and from then on the copy is cleaned as it comes (it stays so once the viewer
//! leaves). Why a tail: a flood nobody watches must cost no memory past it; when its head was
//! dropped the copy says so in a line and the kept tail is cleaned from each stream's first
//! newline on (a dropped head leaves it mid-line, maybe mid-escape). An output that ends unread
//! keeps its tail until someone opens it: a late viewer (a reload, a shared link, a job opened
//! after it ended) sees its colours. What an unread output holds: the plain text up to its
//! first escape (a call's; at most the copy's [`RING_BYTES`]), the raw tail ([`RAW_BYTES`]),
//! the lines the saved cleaners had open (each at most a pending line's 64 KiB), and the runs
//! telling the streams apart (at most [`RUNS_MAX`], 64 KiB): about twice the copy it stands
//! for at worst, once in the usual case (a job, whose plain text is its own ring's).
//!
//! Why only where a view is served ([`serve_view`]: `--view`, `--http`): without one nothing
//! ever reads the copy, so a server without a view keeps nothing for it.
//!
//! A job keeps its plain text in its own ring, which the copy is started from; a call has no
//! ring, so its plain text goes into the copy's ([`ViewTap::plain`]), which the view streams.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::clean::{Cleaner, Emit};
use crate::jobs::ring::{OutputRing, RING_BYTES};
use crate::jobs::tail::Tail;

/// Raw bytes kept per output after its first escape until the copy is read: the copy's ring's
/// size, which the view opens on the last 64 KiB of.
pub const RAW_BYTES: usize = RING_BYTES;

/// Runs (stretches of one stream) kept per unread output: past it the oldest run's bytes count
/// as dropped. Without it a writer alternating stdout and stderr a byte at a time kept 16 bytes
/// of bookkeeping per byte of its tail; with it, at most 64 KiB.
const RUNS_MAX: usize = 4096;

/// Whether this process serves a web view: copies are made from [`serve_view`] on.
static SERVED: AtomicBool = AtomicBool::new(false);

/// This process serves a web view (`--view`, `--http`): the commands started from now on have
/// their output copied for it. Called once at start, before any command.
pub fn serve_view() {
    SERVED.store(true, Ordering::Relaxed);
}

/// One command's coloured copy for the view.
pub struct ViewTap {
    /// A view is served: without one, nothing is copied.
    on: bool,
    ring: OutputRing,
    state: Mutex<State>,
    /// An escape was seen: the copy differs from the plain text.
    started: AtomicBool,
}

struct State {
    /// The copy was read once: from the first escape on it is cleaned as it comes.
    read: bool,
    copy: Copy,
}

/// Where the copy is.
enum Copy {
    /// No escape yet: the copy is the plain text (a job's ring; a call's, in the copy's ring).
    Plain,
    /// An escape, and nobody read the copy yet: raw chunks kept, none cleaned.
    Unread(Box<Unread>),
    /// Cleaned as it comes, by the cleaners keeping colours (stdout, stderr).
    Live(Box<[Cleaner; 2]>),
}

/// The raw output since the first escape, and where cleaning it starts from.
struct Unread {
    /// Clones of the model's cleaners at the first escape, keeping colours (stdout, stderr).
    cleaners: [Cleaner; 2],
    /// The newest raw bytes, both streams in the order printed.
    raw: Tail,
    /// Which stream each run of `raw` came from (true: stderr) and its length, oldest first;
    /// a chunk of the stream of the run before it lengthens that run. At most [`RUNS_MAX`].
    runs: VecDeque<(bool, usize)>,
    /// Bytes at the head of `raw` whose run went past [`RUNS_MAX`] (counted in `lost`).
    orphaned: usize,
    /// Bytes of each stream dropped from the head of `raw` (stdout, stderr).
    lost: [u64; 2],
    /// The command ended: the copy is closed once cleaned.
    ended: bool,
}

impl Default for ViewTap {
    /// A copy where this process serves a view ([`serve_view`]), none otherwise.
    fn default() -> Self {
        ViewTap::new(SERVED.load(Ordering::Relaxed))
    }
}

/// The model's cleaners, as one of them takes a chunk ([`ViewTap::through`]).
pub struct Streams<'a> {
    /// Stderr (true) or stdout.
    pub err: bool,
    /// This stream's cleaner, the model's.
    pub cleaner: &'a mut Cleaner,
    /// The other stream's, whose open line the copy starts from too.
    pub other: &'a Cleaner,
    /// A job's ring of plain text, which the copy starts from at the first escape; none for a
    /// call, whose plain text goes into the copy's own ring until then.
    pub plain: Option<&'a OutputRing>,
}

impl ViewTap {
    /// A copy (`on`), or a tap that copies nothing (no view is served).
    pub fn new(on: bool) -> Self {
        ViewTap {
            on,
            ring: OutputRing::new(None),
            state: Mutex::new(State {
                read: false,
                copy: Copy::Plain,
            }),
            started: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Raw bytes of one stream through the model's cleaner, its text to `emit`; the copy takes
    /// them from the output's first escape on, which the cleaner reports as it meets it.
    pub fn through(&self, streams: Streams<'_>, bytes: &[u8], emit: &mut impl FnMut(&str)) {
        let Streams {
            err,
            cleaner,
            other,
            plain,
        } = streams;
        if !self.on || self.started.load(Ordering::Relaxed) {
            cleaner.feed_into(bytes, emit);
            if self.on {
                self.feed(err, bytes);
            }
            return;
        }
        cleaner.feed_to(
            bytes,
            &mut Watch {
                tap: self,
                err,
                other,
                plain,
                emit,
            },
        );
    }

    /// The output's first escape, met by the cleaner `at` of stream `err`: the copy starts from
    /// the plain text so far and the lines the model's cleaners have open, and takes `rest`.
    fn start(&self, err: bool, at: &Cleaner, other: &Cleaner, plain: Option<&OutputRing>) {
        let mut state = self.lock();
        if !matches!(state.copy, Copy::Plain) {
            return;
        }
        if let Some(ring) = plain {
            self.ring.push(&ring.read(None, RING_BYTES).text);
        }
        let (out, err_cleaner) = if err { (other, at) } else { (at, other) };
        let cleaners = [
            Cleaner::keeping_colours_from(out),
            Cleaner::keeping_colours_from(err_cleaner),
        ];
        state.copy = if state.read {
            Copy::Live(Box::new(cleaners))
        } else {
            Copy::Unread(Box::new(Unread {
                cleaners,
                raw: Tail::new(RAW_BYTES),
                runs: VecDeque::new(),
                orphaned: 0,
                lost: [0; 2],
                ended: false,
            }))
        };
        self.started.store(true, Ordering::Relaxed);
    }

    /// Raw bytes of stdout (`err` false) or stderr once the copy started.
    fn feed(&self, err: bool, bytes: &[u8]) {
        let mut state = self.lock();
        match &mut state.copy {
            Copy::Unread(unread) => unread.keep(err, bytes),
            Copy::Live(cleaners) => {
                let ring = &self.ring;
                cleaners[usize::from(err)].feed_into(bytes, &mut |text| ring.push(text));
            }
            Copy::Plain => {}
        }
    }

    /// Plain text the model's cleaners gave, for a copy with no ring of plain text beside it (a
    /// call's); nothing once the copy is coloured.
    pub fn plain(&self, text: &str) {
        if self.on && !self.started.load(Ordering::Relaxed) {
            self.ring.push(text);
        }
    }

    /// The command ended: the lines still open go in, and the copy is closed (an unread one
    /// once it is read).
    pub fn finish(&self) {
        let mut state = self.lock();
        match &mut state.copy {
            Copy::Plain => self.ring.close(),
            Copy::Unread(unread) => unread.ended = true,
            Copy::Live(cleaners) => self.close(cleaners),
        }
    }

    fn close(&self, cleaners: &mut [Cleaner; 2]) {
        for cleaner in cleaners {
            self.ring.push(cleaner.finish());
        }
        self.ring.close();
    }

    /// The copy, for a viewer: the first read cleans what was kept raw, and from then on the
    /// copy is cleaned as it comes.
    pub fn ring(&self) -> &OutputRing {
        let mut state = self.lock();
        state.read = true;
        if let Copy::Unread(_) = state.copy {
            state.copy = match std::mem::replace(&mut state.copy, Copy::Plain) {
                Copy::Unread(unread) => Copy::Live(Box::new(self.catch_up(*unread))),
                other => other,
            };
        }
        &self.ring
    }

    /// Cleans the kept raw output into the copy, through the cleaners saved at the first escape
    /// or, for a stream whose head was dropped, a new one from its first newline on.
    fn catch_up(&self, unread: Unread) -> [Cleaner; 2] {
        let Unread {
            mut cleaners,
            mut raw,
            runs,
            orphaned,
            lost,
            ended,
        } = unread;
        let ring = &self.ring;
        let lost_bytes = lost[0] + lost[1];
        if lost_bytes > 0 {
            ring.push(&format!(
                "[… {lost_bytes} earlier bytes not kept for the view (nobody was watching) …]\n"
            ));
        }
        let mut skip = lost.map(|n| n > 0);
        for (cleaner, _) in cleaners.iter_mut().zip(skip).filter(|(_, lost)| *lost) {
            *cleaner = Cleaner::keeping_colours();
        }
        let mut rest = &raw.contiguous()[orphaned..];
        for (err, len) in runs {
            let (mut run, after) = rest.split_at(len);
            rest = after;
            let stream = usize::from(err);
            if skip[stream] {
                let Some(newline) = memchr::memchr(b'\n', run) else {
                    continue;
                };
                run = &run[newline + 1..];
                skip[stream] = false;
            }
            cleaners[stream].feed_into(run, &mut |text| ring.push(text));
        }
        if ended {
            self.close(&mut cleaners);
        }
        cleaners
    }

    /// Whether the copy has colours (an escape was printed); before, a job's view reads the
    /// job's own ring, which is the same text.
    pub fn coloured(&self) -> bool {
        self.started.load(Ordering::Relaxed)
    }
}

/// The model's cleaner's text on its way, watched for the output's first escape.
struct Watch<'a, F> {
    tap: &'a ViewTap,
    err: bool,
    other: &'a Cleaner,
    plain: Option<&'a OutputRing>,
    emit: &'a mut F,
}

impl<F: FnMut(&str)> Emit for Watch<'_, F> {
    fn text(&mut self, text: &str) {
        if self.plain.is_none() {
            self.tap.plain(text);
        }
        (self.emit)(text);
    }

    fn first_escape(&mut self, at: &Cleaner, rest: &[u8]) {
        self.tap.start(self.err, at, self.other, self.plain);
        self.tap.feed(self.err, rest);
    }
}

impl Unread {
    /// Keeps a raw chunk; the oldest bytes go past [`RAW_BYTES`].
    fn keep(&mut self, err: bool, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut dropped = self.raw.push(bytes);
        match self.runs.back_mut() {
            Some((stream, len)) if *stream == err => *len += bytes.len(),
            _ => {
                // Room first, so the list never grows past its bound.
                if self.runs.len() == RUNS_MAX
                    && let Some((stream, len)) = self.runs.pop_front()
                {
                    self.lost[usize::from(stream)] += len as u64;
                    self.orphaned += len;
                }
                self.runs.push_back((err, bytes.len()));
            }
        }
        let orphans = dropped.min(self.orphaned);
        self.orphaned -= orphans;
        dropped -= orphans;
        while dropped > 0 {
            let Some((stream, len)) = self.runs.front_mut() else {
                break;
            };
            let gone = dropped.min(*len);
            self.lost[usize::from(*stream)] += gone as u64;
            *len -= gone;
            dropped -= gone;
            if *len == 0 {
                self.runs.pop_front();
            }
        }
    }
}

#[cfg(test)]
#[path = "view_tap_tests.rs"]
mod tests;
