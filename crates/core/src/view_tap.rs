//! The web view's copy of a command's output: cleaned like the model's (carriage returns
//! collapsed, escapes dropped) but keeping colours and bold, which the page renders.
//!
//! Why it starts at the first escape: before one, the coloured copy is the plain text the model
//! gets, byte for byte, so nothing is cleaned twice for output without colours (most of it, and
//! every flood of plain lines): [`ViewTap::feed`] looks for an ESC byte and returns. At the first
//! escape the copy starts from the plain text so far and the lines the model's cleaners are
//! writing ([`Cleaner::keeping_colours_from`]), and from then on a second cleaner keeps the
//! colours. Why always, not only while a view is open: a person who opens a job after it began
//! (the usual case) sees its colours too. Why only where a view is served ([`serve_view`]:
//! `--view`, `--http`): without one nothing ever reads the copy, so a server without a view
//! pays nothing for it.
//!
//! A job keeps its plain text in its own ring, which the copy is started from; a call has no
//! ring, so its plain text goes into the copy's ([`ViewTap::plain`]), which the view streams.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::clean::Cleaner;
use crate::jobs::ring::{OutputRing, RING_BYTES};

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
    /// The cleaners keeping colours (stdout, stderr), from the first escape on.
    colour: Mutex<Option<(Cleaner, Cleaner)>>,
    /// An escape was seen: the copy differs from the plain text and is made by `colour`.
    started: AtomicBool,
}

impl Default for ViewTap {
    /// A copy where this process serves a view ([`serve_view`]), none otherwise.
    fn default() -> Self {
        ViewTap::new(SERVED.load(Ordering::Relaxed))
    }
}

/// Where the copy starts from at the first escape: the model's cleaners (their open lines),
/// and the plain text so far when the copy's ring does not hold it (a job's ring).
pub struct Before<'a> {
    pub out: &'a Cleaner,
    pub err: &'a Cleaner,
    pub plain: Option<&'a OutputRing>,
}

impl ViewTap {
    /// A copy (`on`), or a tap that copies nothing (no view is served).
    pub fn new(on: bool) -> Self {
        ViewTap {
            on,
            ring: OutputRing::new(None),
            colour: Mutex::new(None),
            started: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<(Cleaner, Cleaner)>> {
        self.colour
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Raw bytes of stdout (`err` false) or stderr, before the model's cleaners have them.
    pub fn feed(&self, err: bool, bytes: &[u8], before: Before<'_>) {
        let started = self.started.load(Ordering::Relaxed);
        if !self.on || !started && memchr::memchr(0x1b, bytes).is_none() {
            return;
        }
        let mut colour = self.lock();
        let (out, errs) = colour.get_or_insert_with(|| {
            if let Some(ring) = before.plain {
                self.ring.push(&ring.read(None, RING_BYTES).text);
            }
            self.started.store(true, Ordering::Relaxed);
            (
                Cleaner::keeping_colours_from(before.out),
                Cleaner::keeping_colours_from(before.err),
            )
        });
        let cleaner = if err { errs } else { out };
        let ring = &self.ring;
        cleaner.feed_into(bytes, &mut |text| ring.push(text));
    }

    /// Plain text the model's cleaners gave, for a copy with no ring of plain text beside it (a
    /// call's); nothing once the copy is coloured.
    pub fn plain(&self, text: &str) {
        if self.on && !self.started.load(Ordering::Relaxed) {
            self.ring.push(text);
        }
    }

    /// The command ended: the lines still open go in, and the copy is closed.
    pub fn finish(&self) {
        if let Some((out, err)) = self.lock().as_mut() {
            self.ring.push(out.finish());
            self.ring.push(err.finish());
        }
        self.ring.close();
    }

    /// The copy.
    pub fn ring(&self) -> &OutputRing {
        &self.ring
    }

    /// Whether the copy has colours (an escape was printed); before, a job's view reads the
    /// job's own ring, which is the same text.
    pub fn coloured(&self) -> bool {
        self.started.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn before<'a>(out: &'a Cleaner, err: &'a Cleaner, plain: Option<&'a OutputRing>) -> Before<'a> {
        Before { out, err, plain }
    }

    /// A job: nothing is copied before the first escape; at it, the copy starts from the job's
    /// ring and the line the model's cleaner was writing, and keeps the colours after.
    #[test]
    fn the_copy_starts_at_the_first_escape_from_the_plain_text_so_far() {
        let (mut out, err) = (Cleaner::new(), Cleaner::new());
        let job_ring = OutputRing::new(None);
        let tap = ViewTap::new(true);
        for chunk in [
            &b"plain one\nhalf "[..],
            b"line\n\x1b[31mred\x1b[0m\n",
            b"tail",
        ] {
            tap.feed(false, chunk, before(&out, &err, Some(&job_ring)));
            out.feed_into(chunk, &mut |text| job_ring.push(text));
            if chunk.starts_with(b"plain") {
                assert!(
                    !tap.coloured() && tap.ring().total() == 0,
                    "copied before an escape"
                );
            }
        }
        tap.finish();
        assert!(tap.coloured());
        assert_eq!(
            tap.ring().read(Some(0), 1024).text,
            "plain one\nhalf line\n\x1b[31mred\x1b[0m\ntail"
        );
    }

    /// A call: its plain text is the copy until the first escape, then the colours.
    #[test]
    fn a_calls_copy_is_its_plain_text_then_its_colours() {
        let (mut out, err) = (Cleaner::new(), Cleaner::new());
        let tap = ViewTap::new(true);
        for chunk in [&b"a\rb\n"[..], b"\x1b]0;title\x07\x1b[1mbold\x1b[0m\n"] {
            tap.feed(false, chunk, before(&out, &err, None));
            let text = out.feed(chunk).to_owned();
            tap.plain(&text);
        }
        tap.finish();
        assert_eq!(
            tap.ring().read(Some(0), 1024).text,
            "b\n\x1b[1mbold\x1b[0m\n"
        );
    }

    /// Where no view is served, nothing is copied, coloured or not.
    #[test]
    fn without_a_view_nothing_is_copied() {
        let (out, err) = (Cleaner::new(), Cleaner::new());
        let tap = ViewTap::new(false);
        tap.feed(false, b"\x1b[31mred\x1b[0m\n", before(&out, &err, None));
        tap.plain("red\n");
        tap.finish();
        assert!(!tap.coloured() && tap.ring().total() == 0);
    }
}
