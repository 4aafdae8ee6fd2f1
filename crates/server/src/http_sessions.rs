//! The session an HTTP request belongs to, and the ends of HTTP sessions (docs/BEHAVIOUR.md
//! §9). rmcp makes a server per client session (`Mcp-Session-Id`), and one per request it
//! answers without a session; a request of a caller without a session (protocol 2026-07-28)
//! is served by that caller's own state. `DELETE /mcp` ends a client session: its calls in
//! flight first, then its jobs and shells.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ProtocolVersion;
use rmcp::service::RequestContext;

use crate::server::Agentty;
use crate::session::kept::Key;
use crate::session::{Caller, LazySession, Session, stop_and_log, stop_for_shutdown};

/// How long ending an HTTP session waits for its cancelled calls to return: each stops its
/// tree first (a grace, then SIGKILL rounds), more only for a process stuck in the kernel.
const END_WAIT: Duration = Duration::from_secs(5);

impl Agentty {
    /// Every session state made so far that still lives (the stdio one, HTTP sessions, callers
    /// without a session).
    pub(crate) fn live_sessions(&self) -> Vec<std::sync::Arc<LazySession>> {
        self.inner.registry.live()
    }

    /// Ends every HTTP session still alive and the sessionless callers' (the server stops):
    /// their jobs are stopped, one log line each, noting that the server was shut down. A
    /// session the state dir keeps keeps its table and spill directory there, for when it comes
    /// back after the restart (docs/BEHAVIOUR.md §14); another's spill directory is removed.
    /// Returns how many jobs and shells were stopped.
    pub async fn end_all_sessions(&self) -> usize {
        let mut stopped = 0;
        // Every made state is listed once in `live` (callers without a session included).
        for lazy in self.live_sessions() {
            if let Some(session) = lazy.state.get() {
                stopped += stop_for_shutdown(session).await;
            }
        }
        stopped
    }

    /// What the state dir keeps of HTTP sessions across a restart (the HTTP listener's rmcp
    /// session store and its gate read and write it).
    pub fn kept(&self) -> &crate::session::kept::Kept {
        &self.inner.kept
    }

    /// Keeps this session's job table in the state dir under `key` from now on, when the state
    /// dir keeps sessions (over HTTP).
    fn keep_as(&self, key: Key) {
        if self.inner.kept.enabled() {
            let _ = self.state().keep.set((self.inner.kept.clone(), key));
        }
    }

    /// A state just made for an HTTP caller without a session: its jobs from before a restart,
    /// as the state dir kept them, come back as such, and its table is kept from now on.
    pub(crate) fn restore_caller(&self, state: &Session) {
        let Some(caller) = self.session.caller.get() else {
            return;
        };
        if !self.inner.kept.enabled() || state.jobs.ids() != agentty_core::jobs::Ids::Unguessable {
            return;
        }
        let key = Key::Caller(caller.0.to_string());
        let before = self.inner.kept.load_jobs(&key);
        if state.keep.set((self.inner.kept.clone(), key)).is_ok() {
            let _ = state.before.set(before);
            state.save_jobs();
        }
    }

    /// This client session is the one `id` named before a restart (rmcp brought it back and
    /// replayed its `initialize`): its jobs from then come back as such, new jobs are numbered
    /// after them, and it is known by its id at once.
    pub(crate) fn resume(&self, id: &str) {
        let state = self.state();
        let key = Key::Session(id.to_owned());
        let before = self.inner.kept.load_jobs(&key);
        let last = |kind: crate::session::kept::RecordKind| {
            before
                .iter()
                .filter(|j| j.kind == kind)
                .filter_map(|j| j.id.get(1..)?.parse::<u64>().ok())
                .max()
                .unwrap_or(0)
        };
        state.jobs.continue_after(
            last(crate::session::kept::RecordKind::Command),
            last(crate::session::kept::RecordKind::Shell),
        );
        tracing::info!(
            jobs = before.len(),
            "a client session came back after a restart"
        );
        let _ = state.before.set(before);
        if self.session.http_id.set(id.to_owned()).is_ok() {
            self.inner.registry.note_http_id(id, &self.session);
        }
        self.keep_as(key);
        state.save_jobs();
    }

    /// Ends the HTTP client session `id` (its client sent `DELETE /mcp`): its tool calls in
    /// flight are cancelled and each stops its process tree, then its jobs and shells are
    /// stopped and its spill directory removed; returns once that is done (bounded for what
    /// is stuck in the kernel). Every DELETE of the session waits for the same end. A session
    /// no request has named since its `initialize` started nothing.
    pub async fn end_http_session(&self, id: &str) {
        let Some(lazy) = self.inner.registry.by_http_id(id) else {
            return;
        };
        lazy.ending
            .get_or_init(|| async {
                let all_returned = lazy.in_flight.end(END_WAIT).await;
                if !all_returned {
                    tracing::warn!("session {id}: a cancelled call did not return in time");
                }
                if let Some(session) = lazy.state.get() {
                    // Left unended while a call still runs: the session's drop stops what
                    // that call may still start.
                    session.ended.store(all_returned, Ordering::Relaxed);
                    stop_and_log(&session.jobs, &session.spill).await;
                }
            })
            .await;
        self.inner.registry.forget_http_id(id);
    }

    /// Notes the HTTP session id a request of this client session carries, the first time.
    /// A server rmcp made for one request is never noted: it is not the session the id names.
    pub(crate) fn note_http_id(&self, parts: &http::request::Parts) {
        if self.session.http_id.get().is_some() || !self.session.initialized.load(Ordering::Relaxed)
        {
            return;
        }
        let Some(id) = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        if self.session.http_id.set(id.to_owned()).is_ok() {
            self.inner.registry.note_http_id(id, &self.session);
            self.keep_as(Key::Session(id.to_owned()));
        }
    }

    /// Over HTTP, a job of a caller without a session is stopped once no request has named it
    /// for `grace` (set once, before serving).
    pub fn set_handle_grace(&self, grace: Duration) {
        self.inner.registry.set_handle_grace(grace);
    }

    /// Over HTTP, the caller (a token's name) a request came with: its confined commands run in
    /// a PID namespace of that caller's own (docs/BEHAVIOUR.md §9). `None` over stdio, whose one
    /// client is the only caller.
    pub(crate) fn caller_of(context: &RequestContext<RoleServer>) -> Option<std::sync::Arc<str>> {
        context
            .extensions
            .get::<http::request::Parts>()?
            .extensions
            .get::<Caller>()
            .map(|caller| caller.0.clone())
    }

    /// The server a request is served by: this one, or, for an HTTP request without a session
    /// (a 2026-07-28 client; rmcp makes a server for that request only), its caller's state.
    pub(crate) fn route(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> (Cow<'_, Self>, Option<Caller>) {
        let sessionless = context
            .extensions
            .get::<http::request::Parts>()
            .filter(|parts| {
                !parts.headers.contains_key("mcp-session-id")
                    || context
                        .protocol_version()
                        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
                    // rmcp answers some requests that name a session without it (per-request
                    // `_meta`): the server it made for the request was never initialized.
                    || !self.session.initialized.load(Ordering::Relaxed)
            })
            .map(|parts| {
                parts
                    .extensions
                    .get::<Caller>()
                    .cloned()
                    .unwrap_or_else(|| Caller("default".into()))
            });
        let this = match &sessionless {
            Some(caller) => {
                let state = self
                    .inner
                    .registry
                    .sessionless(caller.clone(), &self.inner.session);
                Cow::Owned(self.with_session(state))
            }
            None => Cow::Borrowed(self),
        };
        (this, sessionless)
    }
}
