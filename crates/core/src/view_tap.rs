//! The web view's copy of a command's output: cleaned like the model's (carriage returns
//! collapsed, escapes dropped) but keeping colours and bold, which the page renders. It costs
//! nothing while nobody watches: [`ViewTap::feed`] looks at one atomic and returns, and the
//! copy is marked partial ([`ViewTap::whole`] false), so the view shows the model's text
//! instead. Somebody watches while a view's state was asked for within [`WATCHED_FOR_MS`]:
//! the page asks every half second while it is open, the hub asks other agents as often.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crate::clean::Cleaner;
use crate::jobs::ring::OutputRing;

/// How long after the last look at the view's state the output is still copied for it.
pub const WATCHED_FOR_MS: u64 = 5_000;

/// Milliseconds since [`epoch`] until which somebody is taken to watch; 0: never watched.
static WATCHED_UNTIL_MS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Somebody looked at the view's state: copy output for it for the next [`WATCHED_FOR_MS`].
pub fn mark_watched() {
    WATCHED_UNTIL_MS.fetch_max(now_ms().saturating_add(WATCHED_FOR_MS), Ordering::Relaxed);
}

/// Whether a view is open now.
pub fn watched() -> bool {
    let until = WATCHED_UNTIL_MS.load(Ordering::Relaxed);
    until != 0 && now_ms() < until
}

/// One command's coloured copy for the view.
pub struct ViewTap {
    ring: OutputRing,
    cleaners: Mutex<(Cleaner, Cleaner)>,
    /// Every byte the command printed went into the copy (a view was open all along).
    whole: AtomicBool,
}

impl Default for ViewTap {
    fn default() -> Self {
        ViewTap {
            ring: OutputRing::new(None),
            cleaners: Mutex::new((Cleaner::keeping_colours(), Cleaner::keeping_colours())),
            whole: AtomicBool::new(true),
        }
    }
}

impl ViewTap {
    /// Raw bytes of stdout (`err` false) or stderr, copied only while a view is open.
    pub fn feed(&self, err: bool, bytes: &[u8]) {
        if !watched() {
            if self.whole.load(Ordering::Relaxed) {
                self.whole.store(false, Ordering::Relaxed);
            }
            return;
        }
        let Ok(mut cleaners) = self.cleaners.lock() else {
            return;
        };
        let cleaner = if err {
            &mut cleaners.1
        } else {
            &mut cleaners.0
        };
        let ring = &self.ring;
        cleaner.feed_into(bytes, &mut |text| ring.push(text));
    }

    /// The command ended: the lines still open go in, and the copy is closed.
    pub fn finish(&self) {
        if let Ok(mut cleaners) = self.cleaners.lock() {
            let (out, err) = &mut *cleaners;
            if watched() {
                self.ring.push(out.finish());
                self.ring.push(err.finish());
            }
        }
        self.ring.close();
    }

    /// Bytes went by that the copy did not see (a command adopted from a call that timed out).
    pub fn mark_partial(&self) {
        self.whole.store(false, Ordering::Relaxed);
    }

    /// The copy, coloured.
    pub fn ring(&self) -> &OutputRing {
        &self.ring
    }

    /// Whether the copy holds everything the command printed (else the view shows the
    /// model's text, which does).
    pub fn whole(&self) -> bool {
        self.whole.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test that marks the view watched (it is process-wide), so the two halves run
    /// in this order.
    #[test]
    fn nothing_is_copied_unwatched_and_colours_are_kept_watched() {
        let unwatched = ViewTap::default();
        unwatched.feed(false, b"\x1b[31mred\x1b[0m\n");
        unwatched.finish();
        assert_eq!(unwatched.ring().total(), 0, "copied with nobody watching");
        assert!(!unwatched.whole());

        mark_watched();
        let tap = ViewTap::default();
        tap.feed(false, b"\x1b[31mred\x1b[0m\x1b]0;t\x07\n");
        tap.feed(true, b"half");
        tap.finish();
        assert!(tap.whole());
        assert_eq!(
            tap.ring().read(Some(0), 1024).text,
            "\x1b[31mred\x1b[0m\nhalf"
        );
    }
}
