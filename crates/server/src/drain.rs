//! The end of an HTTP server after SIGTERM (docs/BEHAVIOUR.md §14), in its order:
//!
//! 1. **Draining**, at once: `/readyz` answers 503, a new session is refused with a reason, and
//!    a call that would start something new (`terminal`, `shell_open`) is refused; every other
//!    call is answered as usual.
//! 2. The calls in flight get the grace (`--drain-grace`) to answer. A `task_wait` is not
//!    waited for: it waits for a job, and the next step ends that job.
//! 3. **Stopping**: every job and shell of every session is stopped, noting why, so a
//!    `task_wait` in flight answers "stopped: the server was shut down", and so does the
//!    session's `task_list` after a restart (its table is kept in the state dir).
//! 4. What is still in flight is cancelled: each call stops its process tree and answers.
//!
//! The binary then stops listening and exits 0. Stdio does not drain: its host sent the signal
//! and reads no more answers, so it ends at once as before; a second signal, or the watchdog's
//! death, ends an HTTP server at once too.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::server::Agentty;

/// How long the calls cancelled at the end of the drain get to stop their trees and answer.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// What `/readyz` says while the server drains.
pub const DRAINING: &str = "draining: the server is shutting down";

/// The phases of `Shared::drain_phase`.
const SERVING: u8 = 0;
const DRAINING_PHASE: u8 = 1;
const STOPPING: u8 = 2;

/// How a drain went, for its log line.
#[derive(Debug, Clone, Copy)]
pub struct Drained {
    /// Every call that did more than wait answered within the grace.
    pub settled: bool,
    /// Jobs and shells stopped.
    pub stopped: usize,
    /// Calls still in flight at the end, cancelled.
    pub cancelled: usize,
}

impl Agentty {
    /// Starts draining (step 1); false when it had started already.
    pub fn begin_drain(&self) -> bool {
        self.inner
            .drain_phase
            .compare_exchange(SERVING, DRAINING_PHASE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Whether the server is draining or stopping.
    pub fn draining(&self) -> bool {
        self.inner.drain_phase.load(Ordering::SeqCst) != SERVING
    }

    /// Whether the drain has reached its stop (step 3): what answers now was cut short.
    pub(crate) fn stopping(&self) -> bool {
        self.inner.drain_phase.load(Ordering::SeqCst) == STOPPING
    }

    /// Whether the server is ready for sessions, or the short reason it is not: draining, or a
    /// sandbox that is not in force as configured. Says nothing else.
    pub fn readiness(&self) -> Result<(), &'static str> {
        if self.draining() {
            return Err(DRAINING);
        }
        match self.confinement().not_in_force() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Steps 2 to 4 (see the module doc), `begin_drain` having run: returns once every job is
    /// stopped and every call has answered (or [`CANCEL_WAIT`] passed).
    pub async fn drain(&self, grace: Duration) -> Drained {
        self.begin_drain();
        let settled = self.inner.calls.settled(grace).await;
        self.inner.drain_phase.store(STOPPING, Ordering::SeqCst);
        let stopped = self.end_all_sessions().await;
        let cancelled = self.inner.calls.count();
        if !self.inner.calls.end(CANCEL_WAIT).await {
            tracing::warn!("a call cancelled at shutdown did not answer in time");
        }
        Drained {
            settled,
            stopped,
            cancelled,
        }
    }
}
