//! Tool calls being answered: those of an HTTP client session, which ending the session
//! (`DELETE /mcp`) cancels, waiting for each to stop what it runs (docs/BEHAVIOUR.md §9); and
//! every call of the process, which the drain after SIGTERM waits for, then cancels (§14).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The tool calls of a session being answered, each by its request's cancellation token. A
/// session that ends (`DELETE /mcp`) cancels them all: each stops what it runs before it
/// returns, as for `notifications/cancelled`. A call that comes once it has ended is cancelled
/// as it comes.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: std::sync::Mutex<Calls>,
}

#[derive(Default)]
struct Calls {
    next: u64,
    /// Each call's token, and whether it only waits (`task_wait`: it waits for what the drain
    /// itself ends, so the drain does not wait for it).
    open: std::collections::HashMap<u64, (CancellationToken, bool)>,
    ended: bool,
}

/// One call in flight; leaving it (the call returned or was dropped) takes it off the list.
pub(crate) struct Flight<'s> {
    in_flight: &'s InFlight,
    key: Option<u64>,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lists the call that `ct` cancels, until the returned [`Flight`] is dropped.
    pub(crate) fn enter(&self, ct: &CancellationToken) -> Flight<'_> {
        self.enter_as(ct, false)
    }

    /// Lists the call as [`InFlight::enter`] does; `waits`: it only waits for a job.
    pub(crate) fn enter_as(&self, ct: &CancellationToken, waits: bool) -> Flight<'_> {
        let mut calls = self.lock();
        if calls.ended {
            ct.cancel();
            return Flight {
                in_flight: self,
                key: None,
            };
        }
        calls.next += 1;
        let key = calls.next;
        calls.open.insert(key, (ct.clone(), waits));
        Flight {
            in_flight: self,
            key: Some(key),
        }
    }

    /// Whether a call is being answered.
    pub(crate) fn any(&self) -> bool {
        !self.lock().open.is_empty()
    }

    /// How many calls are being answered.
    pub(crate) fn count(&self) -> usize {
        self.lock().open.len()
    }

    /// Waits (at most `within`) until every call that does more than wait has returned; new
    /// calls may come meanwhile. True when none is left.
    pub(crate) async fn settled(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.lock().open.values().all(|(_, waits)| *waits) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Cancels every call in flight, and every later one, then waits (at most `within`) until
    /// all have returned: each has stopped its process tree by then. True when all returned.
    pub(crate) async fn end(&self, within: Duration) -> bool {
        let cancelled: Vec<CancellationToken> = {
            let mut calls = self.lock();
            calls.ended = true;
            calls.open.values().map(|(ct, _)| ct.clone()).collect()
        };
        cancelled.iter().for_each(CancellationToken::cancel);
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.lock().open.is_empty() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.in_flight.lock().open.remove(&key);
        }
    }
}
