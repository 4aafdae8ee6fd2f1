//! Every session state of this process, as the server finds them again: the ones made so far
//! that still live (for ending them all, and for the web view), HTTP client sessions by their
//! `Mcp-Session-Id` (for `DELETE`), and one state per caller without a session (protocol
//! 2026-07-28 over HTTP). It holds weak references: a session lives as long as its server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use super::{Caller, LazySession};

#[derive(Default)]
pub(crate) struct Registry {
    /// Sessions made so far, to name their spill directories.
    made: AtomicU64,
    /// The session states made so far, while they live.
    live: Mutex<Vec<Weak<LazySession>>>,
    /// HTTP client sessions by their `Mcp-Session-Id`, once a request after `initialize` has
    /// named it.
    by_http_id: Mutex<HashMap<String, Weak<LazySession>>>,
    /// The jobs and shells of HTTP callers without a session, per caller.
    sessionless: Mutex<HashMap<Caller, Arc<LazySession>>>,
    /// How long a caller without a session's job lives with no request naming it (HTTP's
    /// `--session-grace`); unset over stdio.
    handle_grace: OnceLock<Duration>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Registry {
    /// The name of the next HTTP client session of the process session `process`.
    pub(crate) fn next_name(&self, process: &str) -> String {
        let n = self.made.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{process}-h{n}")
    }

    /// Lists `session` among the live ones, once its state is made (it then has something to
    /// end).
    pub(crate) fn note_live(&self, session: &Arc<LazySession>) {
        let mut live = lock(&self.live);
        live.retain(|s| s.strong_count() > 0);
        live.push(Arc::downgrade(session));
    }

    /// Every session state made so far that still lives.
    pub(crate) fn live(&self) -> Vec<Arc<LazySession>> {
        lock(&self.live).iter().filter_map(Weak::upgrade).collect()
    }

    /// Notes that HTTP session `id` is `session`, the first time it is named.
    pub(crate) fn note_http_id(&self, id: &str, session: &Arc<LazySession>) {
        let mut ids = lock(&self.by_http_id);
        ids.retain(|_, weak| weak.strong_count() > 0);
        ids.entry(id.to_owned())
            .or_insert_with(|| Arc::downgrade(session));
    }

    /// The HTTP client session `id`, while it lives.
    pub(crate) fn by_http_id(&self, id: &str) -> Option<Arc<LazySession>> {
        lock(&self.by_http_id).get(id).and_then(Weak::upgrade)
    }

    pub(crate) fn forget_http_id(&self, id: &str) {
        lock(&self.by_http_id).remove(id);
    }

    /// The state of `caller`, an HTTP caller without a session, made at its first request.
    pub(crate) fn sessionless(&self, caller: Caller, process: &str) -> Arc<LazySession> {
        let mut callers = lock(&self.sessionless);
        let n = callers.len() + 1;
        callers
            .entry(caller.clone())
            .or_insert_with(|| {
                let session = LazySession::sessionless(format!("{process}-caller{n}"));
                crate::metrics::METRICS.session_opened(crate::metrics::Transport::Sessionless);
                let _ = session.caller.set(caller);
                session
            })
            .clone()
    }

    /// Over HTTP, a job of a caller without a session is stopped once no request has named it
    /// for `grace` (set once, before serving).
    pub(crate) fn set_handle_grace(&self, grace: Duration) {
        let _ = self.handle_grace.set(grace);
    }

    pub(crate) fn handle_grace(&self) -> Option<Duration> {
        self.handle_grace.get().copied()
    }
}
