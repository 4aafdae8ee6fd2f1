//! The open connections: how many there may be, and which one goes when room is needed
//! (docs/BEHAVIOUR.md §9).
//!
//! Each connection holds a file descriptor, and the server needs descriptors for its work too
//! (each command's pipes or terminal, spill files). So at most [`Conns::cap`] connections are
//! open (`--max-connections`, by default [`default_cap`]: half of what the process may hold).
//!
//! A connection is *unproven* until one of its requests has shown a token of the token file or
//! the view's key. An unproven connection is closed when it has not proven itself within
//! [`PROVE_WITHIN`] (hyper's header timeout of 30 s stays for those that have), and, oldest
//! first, whenever room is needed: when a connection arrives at the cap, or when the process
//! runs out of descriptors (then, until the trouble has passed, the cap is held a little below
//! the connections open when they ran out, so the work keeps the descriptors freed). Why close the oldest unproven one rather than the newcomer, or
//! leave the newcomer in the kernel's backlog: a flood of half-sent requests would then hold
//! every place, and a real client, which shows its token in its first packet, would be refused,
//! or would wait behind the whole flood. A proven connection is never closed to make room; when
//! every open connection is proven, new ones wait in the backlog until one closes.
//!
//! So each caller proves at most its *share* of the places ([`Conns::share`]: the cap split
//! among the token file's callers and the operator's view, never below [`SHARE_FLOOR`]): a
//! request that would prove one more is refused (503, and the connection closed), as one past
//! its share of the sessions is. Without it one caller's never-ending view streams held every
//! place, and every other caller's requests waited in the backlog for as long as it liked
//! (review 36, H1). The shares add up to the cap, so a caller below its own finds room.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A connection that has not shown a token (or the view's key) by then is closed. A client
/// sends its headers at once; a few seconds leave room for a slow link.
pub const PROVE_WITHIN: Duration = Duration::from_secs(5);

/// The cap without `--max-connections`: half the descriptors the process may hold (the other
/// half is for the work), and never more than [`MAX_CONNECTIONS_DEFAULT`] nor fewer than 8.
pub fn default_cap() -> usize {
    (agentty_core::limits::descriptors_most() / 2).clamp(8, MAX_CONNECTIONS_DEFAULT)
}

/// The most connections by default, however many descriptors there are: a server of one
/// workspace has a few clients, each with a connection or two.
const MAX_CONNECTIONS_DEFAULT: usize = 1024;

/// A caller's share of the places is never below this, however small the cap: a client's
/// connection or two, and its view's page with a stream or two.
pub const SHARE_FLOOR: usize = 8;

/// Connections closed to make room still hold their descriptors until their tasks have run.
/// Past the cap by this many, the accept loop waits for them rather than run ahead of them
/// (it did, measured, and ran the process out of descriptors at half the limit).
const CLOSING_AT_MOST: usize = 16;

/// Every open connection, counted, the unproven ones by age.
pub struct Conns {
    cap: usize,
    /// The places one caller may prove.
    share: usize,
    inner: Mutex<Inner>,
    /// A connection closed: the accept loop may be waiting for room.
    closed: Notify,
}

#[derive(Default)]
struct Inner {
    open: usize,
    /// The cap while descriptors are short, below `Conns::cap`.
    lowered: Option<usize>,
    next: u64,
    /// The unproven connections, oldest first, each with what closes it.
    unproven: BTreeMap<u64, CancellationToken>,
    /// Proven connections, by who proved them.
    proven_by: HashMap<Arc<str>, usize>,
}

/// One open connection's place; dropping it gives the place back.
pub struct Conn {
    id: u64,
    conns: Arc<Conns>,
    proven: AtomicBool,
    /// Who proved it, counted against their share until it closes.
    prover: Mutex<Option<Arc<str>>>,
    /// Cancelled when the connection is closed to make room.
    evicted: CancellationToken,
}

impl Conns {
    /// `cap` places, shared among `provers`: the callers there may be (see the module doc).
    pub fn new(cap: usize, provers: usize) -> Arc<Self> {
        let cap = cap.max(1);
        Arc::new(Conns {
            cap,
            share: (cap / provers.max(1)).max(SHARE_FLOOR),
            inner: Mutex::default(),
            closed: Notify::new(),
        })
    }

    /// The cap in effect (lowered while descriptors are short).
    pub fn cap(&self) -> usize {
        self.cap_of(&self.inner())
    }

    fn cap_of(&self, inner: &Inner) -> usize {
        inner.lowered.unwrap_or(self.cap)
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // The counts stay right through a panic elsewhere: nothing is left half-done under it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns once a connection may be accepted: below the cap, or with an unproven one that
    /// can make room (and not too many still closing).
    pub async fn room(&self) {
        loop {
            {
                let inner = self.inner();
                let cap = self.cap_of(&inner);
                if inner.open < cap
                    || (!inner.unproven.is_empty() && inner.open < cap + CLOSING_AT_MOST)
                {
                    return;
                }
            }
            // A close between the check and here is not lost: `notify_one` keeps a permit.
            self.closed.notified().await;
        }
    }

    /// The place of a connection just accepted; at the cap, the oldest unproven connection is
    /// closed for it. Also says whether one was.
    pub fn admit(self: &Arc<Self>) -> (Arc<Conn>, bool) {
        let evicted = CancellationToken::new();
        let mut inner = self.inner();
        let made_room = inner.open >= self.cap_of(&inner) && evict_oldest(&mut inner, 1) == 1;
        inner.open += 1;
        inner.next += 1;
        let id = inner.next;
        inner.unproven.insert(id, evicted.clone());
        drop(inner);
        let conn = Arc::new(Conn {
            id,
            conns: self.clone(),
            proven: AtomicBool::new(false),
            prover: Mutex::new(None),
            evicted,
        });
        (conn, made_room)
    }

    /// The process ran out of descriptors: closes up to `n` of the oldest unproven connections,
    /// and holds the cap `n` below the connections open until [`Conns::restore_cap`], so that
    /// newcomers take the places of unproven ones rather than the descriptors freed. How many
    /// it closed.
    pub fn short_of_fds(&self, n: usize) -> usize {
        let mut inner = self.inner();
        let lowered = inner.open.saturating_sub(n).max(1);
        inner.lowered = Some(inner.lowered.map_or(lowered, |was| was.min(lowered)));
        evict_oldest(&mut inner, n)
    }

    /// The trouble has passed: the cap is the whole one again. Whether it was held lower.
    pub fn restore_cap(&self) -> bool {
        let restored = self.inner().lowered.take().is_some();
        self.closed.notify_one();
        restored
    }

    /// Waits (at most `within`) until no connection is open.
    pub async fn all_closed(&self, within: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while self.open() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    fn open(&self) -> usize {
        self.inner().open
    }
}

fn evict_oldest(inner: &mut Inner, n: usize) -> usize {
    let mut closed = 0;
    while closed < n
        && let Some((_, evicted)) = inner.unproven.pop_first()
    {
        evicted.cancel();
        closed += 1;
    }
    closed
}

impl Conn {
    /// One of its requests showed a token or the view's key, which `who` holds: it is never
    /// closed to make room, nor for taking long. False, and it stays unproven, when `who`
    /// proved its share already (see the module doc); the request is then refused.
    pub fn prove(&self, who: &Arc<str>) -> bool {
        let mut inner = self.conns.inner();
        if self.proven.load(Ordering::Relaxed) {
            return true;
        }
        let held = inner.proven_by.entry(who.clone()).or_default();
        if *held >= self.conns.share {
            return false;
        }
        *held += 1;
        self.proven.store(true, Ordering::Relaxed);
        inner.unproven.remove(&self.id);
        *self.prover.lock().unwrap_or_else(PoisonError::into_inner) = Some(who.clone());
        true
    }

    /// The places one caller may prove here.
    pub fn share(&self) -> usize {
        self.conns.share
    }

    pub fn is_proven(&self) -> bool {
        self.proven.load(Ordering::Relaxed)
    }

    /// Resolves when the connection is closed to make room.
    pub async fn evicted(&self) {
        self.evicted.cancelled().await;
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let mut inner = self.conns.inner();
        inner.open -= 1;
        inner.unproven.remove(&self.id);
        let prover = self
            .prover
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(prover) = prover
            && let Some(held) = inner.proven_by.get_mut(&prover)
        {
            *held -= 1;
            if *held == 0 {
                inner.proven_by.remove(&prover);
            }
        }
        drop(inner);
        self.conns.closed.notify_one();
    }
}

#[cfg(test)]
#[path = "conns_tests.rs"]
mod tests;
