//! The tool calls of an HTTP client session being answered: ending the session (`DELETE
//! /mcp`) cancels them and waits for each to stop what it runs (docs/BEHAVIOUR.md §9).

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
    open: std::collections::HashMap<u64, CancellationToken>,
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
        calls.open.insert(key, ct.clone());
        Flight {
            in_flight: self,
            key: Some(key),
        }
    }

    /// Whether a call is being answered.
    pub(crate) fn any(&self) -> bool {
        !self.lock().open.is_empty()
    }

    /// Cancels every call in flight, and every later one, then waits (at most `within`) until
    /// all have returned: each has stopped its process tree by then. True when all returned.
    pub(crate) async fn end(&self, within: Duration) -> bool {
        let cancelled: Vec<CancellationToken> = {
            let mut calls = self.lock();
            calls.ended = true;
            calls.open.values().cloned().collect()
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
