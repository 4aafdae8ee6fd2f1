//! The gate: what every request to the listener goes through, one named step each, in order.
//!
//! 1. `/livez` and `/readyz` are answered at once, to anyone ([`health`](super::health)).
//! 2. The view's routes go to the view, which checks Host, Origin and its key its own way.
//! 3. The token names the caller ([`token`](super::token)): `Authorization: Bearer`, or the
//!    header `--token-header` names; without one: 401.
//! 4. The `Host` must be accepted ([`hosts`](super::hosts)): 403. `/metrics` is answered now.
//! 5. MCP is served at `/mcp` only, and only with `--http`: 404 elsewhere.
//! 6. A session that belongs to another caller answers as one that does not exist: 404. One
//!    this process does not hold but the state dir keeps for this caller (a restart) is marked
//!    [`Resuming`]: rmcp brings it back ([`resume`](super::resume)).
//! 7. The body is read whole, at most [`MAX_BODY_BYTES`]: 413 past that.
//! 8. An `initialize` while the server drains (SIGTERM), or that would open a session past
//!    the cap or past its caller's share of it ([`sessions`](super::sessions)): 503, with a
//!    JSON-RPC error that says which.
//! 9. A `DELETE` must name a live session (404), and stops all it runs before rmcp closes it;
//!    one of a kept session from before a restart forgets it.
//!
//! A token of the token file (step 2), or the view's key, proves the connection it came on
//! ([`conns`](super::conns)): it is not closed to make room for others.
//!
//! What passes goes to rmcp with its caller; a new session is recorded as its caller's, a
//! finished `DELETE` is answered 204, and a `POST`'s reply is held for one write ([`hold`]).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::http::request::Parts;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use agentty_server::view::Viewer;
use agentty_server::{Agentty, Caller, Resuming};

use super::body::Body;
use super::conns::Conn;
use super::hold;
use super::hosts::Hosts;
use super::options::HttpOptions;
use super::sessions::{NoRoom, Opening, Sessions};
use super::token::Callers;
use super::view::{self, View};

/// The largest request body read (rmcp's own limit).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The header that names a client session, in requests and in the reply that opens one.
const SESSION_HEADER: &str = "mcp-session-id";

/// What every connection's requests need.
pub struct Gate {
    callers: Arc<Callers>,
    /// `--token-header`: where the token may come instead of `Authorization`.
    token_header: Option<header::HeaderName>,
    /// The `Host` names accepted (MCP, `/metrics`, the view).
    hosts: Arc<Hosts>,
    view: View,
    /// MCP is served at `/mcp` (else only the view).
    mcp_on: bool,
    /// Which caller opened each client session, and the caps on opening more.
    owners: Sessions,
    mcp: StreamableHttpService<Agentty, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    /// Ends a client session's calls, jobs and shells before rmcp closes it.
    agentty: Agentty,
}

/// An MCP request that passed the checks, its body read.
struct Admitted<'a> {
    parts: Parts,
    body: Bytes,
    caller: Caller,
    /// The client session it names, if any.
    session: Option<String>,
    /// The place an `initialize` takes under the session caps.
    opening: Option<Opening<'a>>,
    /// It names a session from before a restart that rmcp is to bring back.
    resuming: bool,
}

impl Gate {
    /// The gate of the listener bound at `bound`, and behind it rmcp's service (a session ends
    /// after `options.grace` without a request, or when `stop` is cancelled) and the view;
    /// both accept the same Host names and Origins.
    pub fn new(
        agentty: Agentty,
        options: &HttpOptions,
        bound: SocketAddr,
        callers: Callers,
        stop: &CancellationToken,
    ) -> Self {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(options.grace);
        let sessions = Arc::new(manager);
        let hosts = Arc::new(Hosts::new(bound, &options.allow_hosts));
        // The Host is checked here, with wildcards rmcp's check has not (step 4).
        let mut config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_allowed_origins(options.allow_origins.clone())
            .enforce_origin_validation()
            .with_cancellation_token(stop.child_token());
        if options.mcp && agentty.kept().enabled() {
            config.session_store = Some(Arc::new(super::resume::Store(agentty.clone())));
        }
        let base = agentty.clone();
        let mcp =
            StreamableHttpService::new(move || Ok(base.new_session()), sessions.clone(), config);
        let owners = Sessions::new(
            options.max_sessions,
            options.max_sessions_per_caller,
            callers.len(),
        );
        let callers = Arc::new(callers);
        let view = View::new(
            agentty.clone(),
            callers.clone(),
            options.view_control,
            hosts.clone(),
            options.allow_origins.clone(),
            options.token_header.clone(),
        );
        Gate {
            callers,
            token_header: options.token_header.clone(),
            hosts,
            view,
            mcp_on: options.mcp,
            owners,
            mcp,
            sessions,
            agentty,
        }
    }

    /// The web view's half.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The tokens, each a caller.
    pub fn callers(&self) -> &Callers {
        &self.callers
    }

    /// The sessions one caller may hold.
    pub fn session_share(&self) -> usize {
        self.owners.share()
    }

    /// The answer to `request`, which came on the connection `conn`.
    pub async fn handle(&self, request: Request<Incoming>, conn: &Conn) -> Response<Body> {
        let path = request.uri().path();
        if super::health::open(path) {
            return super::health::probe(&self.agentty, request.method(), path);
        }
        if view::serves(path) {
            if let Some(viewer) = self.view.viewer_of(&request)
                && !conn.prove(&prover(&viewer))
            {
                return Refusal::Connections(conn.share()).reply();
            }
            return self.view.handle(request).await;
        }
        let Some(caller) = self.caller(request.headers()) else {
            return Refusal::NoToken(self.token_header.clone()).reply();
        };
        if !conn.prove(&caller.0) {
            return Refusal::Connections(conn.share()).reply();
        }
        if !self.host_accepted(request.headers()) {
            return Refusal::Host.reply();
        }
        if request.uri().path() == "/metrics" {
            return super::health::metrics(&self.agentty, request.method());
        }
        match self.admit(request, caller).await {
            Ok(admitted) => self.forward(admitted).await,
            Err(refusal) => refusal.reply(),
        }
    }

    /// The checks of an MCP request after its token and Host, in their order (see the module
    /// doc).
    async fn admit(
        &self,
        request: Request<Incoming>,
        caller: Caller,
    ) -> Result<Admitted<'_>, Refusal> {
        if request.uri().path() != "/mcp" || !self.mcp_on {
            return Err(Refusal::NotMcp);
        }
        let (mut parts, body) = request.into_parts();
        let session = session_id(&parts.headers);
        self.check_owner(session.as_deref(), &caller)?;
        let resuming = self.resuming(session.as_deref(), &caller)?;
        let body = read_body(body).await?;
        let opening = if opens_session(&parts, &body) {
            if self.agentty.draining() {
                return Err(Refusal::Draining);
            }
            Some(self.check_session_caps(&caller).await?)
        } else {
            None
        };
        if resuming && self.agentty.draining() {
            return Err(Refusal::Draining);
        }
        // A session brought back counts against the caps as one opened does: uncounted, a
        // caller opened a session per restart and brought them all back, past its share and
        // the whole cap (review 36 M3). Refused, it stays kept for later.
        let opening = match (opening, &session) {
            (None, Some(id)) if resuming && parts.method != Method::DELETE => {
                self.check_resume_caps(&caller, id).await?
            }
            (opening, _) => opening,
        };
        if parts.method == Method::DELETE {
            if resuming {
                let id = session.unwrap_or_default();
                self.agentty
                    .kept()
                    .forget(&agentty_server::kept::Key::Session(id));
                return Err(Refusal::Forgotten);
            }
            self.check_live(session.as_deref()).await?;
        }
        if resuming && let Some(id) = &session {
            parts.extensions.insert(Resuming(id.clone()));
        }
        Ok(Admitted {
            parts,
            body,
            caller,
            session,
            opening,
            resuming,
        })
    }

    /// Whether the `Host` header names an accepted host (a request without one has none).
    fn host_accepted(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|host| self.hosts.accepts(host))
    }

    /// Whether the request names a session this process never held that the state dir keeps
    /// from before a restart: for its own caller, rmcp is to bring it back; for another, it
    /// is a session that does not exist.
    fn resuming(&self, session: Option<&str>, caller: &Caller) -> Result<bool, Refusal> {
        let Some(id) = session else { return Ok(false) };
        if self.owner(id).is_some() || !self.agentty.kept().enabled() {
            return Ok(false);
        }
        match self.agentty.kept().owner(id) {
            Some(owner) if *owner == *caller.0 => Ok(true),
            Some(_) => Err(Refusal::NoSuchSession),
            None => Ok(false),
        }
    }

    /// rmcp answers the request as its caller's; the reply goes back as clients expect it.
    async fn forward(&self, admitted: Admitted<'_>) -> Response<Body> {
        let Admitted {
            mut parts,
            body,
            caller,
            session,
            opening,
            resuming,
        } = admitted;
        let delete = parts.method == Method::DELETE;
        let post = parts.method == Method::POST;
        if delete {
            let id = session.as_deref().unwrap_or_default();
            // Everything the session runs is stopped before the DELETE is answered: its calls
            // in flight (rmcp would let them run on for its drain time), its jobs and shells.
            self.agentty.end_http_session(id).await;
        }
        parts.extensions.insert(caller.clone());
        let mut response = self
            .mcp
            .handle(Request::from_parts(parts, Full::new(body)))
            .await;
        if session.is_none()
            && let Some(made) = session_id(response.headers())
        {
            // Kept with the session, so that after a restart it comes back to this caller only.
            self.agentty.kept().note_owner(&made, &caller.0);
            match opening {
                Some(opening) => opening.opened(made),
                None => self.owners.record(made, caller),
            }
        } else if resuming
            && response.status().is_success()
            && let Some(id) = session
        {
            match opening {
                Some(opening) => opening.opened(id),
                None => self.owners.record(id, caller),
            }
        }
        // The session is ended: say so as clients expect it (rmcp answers 202 Accepted, which the
        // Python SDK logs as a failed termination).
        if delete && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        if post {
            // A reply that is ready soon goes out in one write (`hold`).
            response = hold::hold(response, hold::HOLD).await;
        }
        response
    }

    /// The caller whose token the request bears (`Authorization: Bearer <token>`, or the
    /// `--token-header`).
    fn caller(&self, headers: &HeaderMap) -> Option<Caller> {
        super::token::offered(headers, self.token_header.as_ref())
            .find_map(|given| self.callers.find(given))
            .cloned()
    }

    /// Another caller's session answers as one that does not exist.
    fn check_owner(&self, session: Option<&str>, caller: &Caller) -> Result<(), Refusal> {
        match session {
            Some(id) if self.owner(id).is_some_and(|owner| owner != *caller) => {
                Err(Refusal::NoSuchSession)
            }
            _ => Ok(()),
        }
    }

    /// A new session is refused while `--max-sessions` are live, or while its caller holds its
    /// share of them.
    async fn check_session_caps(&self, caller: &Caller) -> Result<Opening<'_>, Refusal> {
        let live = self.live_sessions().await;
        self.owners.open(caller, &live).map_err(Self::refused_full)
    }

    /// [`Gate::check_session_caps`] for the kept session `id` being brought back; `None` when
    /// another request bringing it back holds its place.
    async fn check_resume_caps(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Option<Opening<'_>>, Refusal> {
        let live = self.live_sessions().await;
        self.owners
            .resume(caller, &live, id)
            .map_err(Self::refused_full)
    }

    async fn live_sessions(&self) -> Vec<String> {
        self.sessions
            .sessions
            .read()
            .await
            .keys()
            .map(ToString::to_string)
            .collect()
    }

    /// A session refused for want of room, logged.
    fn refused_full(full: NoRoom) -> Refusal {
        match &full {
            NoRoom::Share { caller, held } => tracing::warn!(
                caller = &*caller.0,
                held,
                "refused a new session: the caller holds its share"
            ),
            NoRoom::All { live } => {
                tracing::warn!(live, "refused a new session: the cap is reached");
            }
        }
        Refusal::Full(full)
    }

    /// A `DELETE` names a session that is live.
    async fn check_live(&self, session: Option<&str>) -> Result<(), Refusal> {
        let id = session.unwrap_or_default();
        if !self.sessions.sessions.read().await.contains_key(id) {
            return Err(Refusal::NoSuchSession);
        }
        Ok(())
    }

    /// The caller that opened the client session `id`, if it is known.
    fn owner(&self, id: &str) -> Option<Caller> {
        self.owners.owner(id)
    }
}

/// Why the gate answers a request itself, before rmcp sees it.
enum Refusal {
    /// No token, or none of the token file's: 401 (saying the `--token-header` too, if any).
    NoToken(Option<header::HeaderName>),
    /// A `Host` that is not accepted: 403.
    Host,
    /// An `initialize` (or a session coming back) while the server drains: 503.
    Draining,
    /// A `DELETE` of a session kept from before a restart: forgotten, 204.
    Forgotten,
    /// Not `/mcp`, or MCP is not served (`--view` alone): 404.
    NotMcp,
    /// Another caller's session, or a `DELETE` of one that is not live: 404.
    NoSuchSession,
    /// A body over [`MAX_BODY_BYTES`]: 413.
    TooLarge,
    /// The caller's share of the sessions, or all of them, are live: 503.
    Full(NoRoom),
    /// The caller holds its share of the connections (this many): 503, and this one closes.
    Connections(usize),
}

impl Refusal {
    fn reply(self) -> Response<Body> {
        match self {
            Refusal::NoToken(named) => {
                let also = named
                    .map(|name| format!(" or `{name}: <token>`"))
                    .unwrap_or_default();
                let mut response = reply(
                    StatusCode::UNAUTHORIZED,
                    &format!(
                        "agentty: this endpoint needs `Authorization: Bearer <token>`{also} (the \
                         token file named when the server started)\n"
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                response
            }
            Refusal::Host => reply(
                StatusCode::FORBIDDEN,
                "agentty: this Host is not accepted (--allow-host adds one)\n",
            ),
            Refusal::Draining => json_rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "agentty: the server is shutting down (SIGTERM) and opens no session; connect \
                 again once it is back",
            ),
            Refusal::Forgotten => reply(StatusCode::NO_CONTENT, ""),
            Refusal::NotMcp => reply(StatusCode::NOT_FOUND, "agentty: MCP is served at /mcp\n"),
            Refusal::Connections(share) => {
                let mut response = reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!(
                        "agentty: this caller holds {share} connections, its share of this \
                         server's (--max-connections): close one first\n"
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                response
            }
            Refusal::NoSuchSession => reply(StatusCode::NOT_FOUND, "agentty: no such session\n"),
            Refusal::TooLarge => reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                "agentty: the request body is over 4 MiB\n",
            ),
            Refusal::Full(full) => {
                let why = match full {
                    NoRoom::All { live } => format!(
                        "agentty: {live} sessions are live, the most this server takes \
                         (--max-sessions); end one (DELETE /mcp) or wait until one ends"
                    ),
                    // The caller's own name and count only: nothing of another caller's.
                    NoRoom::Share { caller, held } => format!(
                        "agentty: caller {} holds {held} live sessions, the most one caller may \
                         hold (--max-sessions-per-caller; by default an equal share of \
                         --max-sessions among the token file's callers); end one (DELETE /mcp) \
                         or wait until one ends",
                        caller.0
                    ),
                };
                json_rpc_error(StatusCode::SERVICE_UNAVAILABLE, &why)
            }
        }
    }
}

/// A JSON-RPC error answer (no request id) with `status`.
fn json_rpc_error(status: StatusCode, message: &str) -> Response<Body> {
    let why = serde_json::Value::from(message);
    reply(
        status,
        &format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":-32000,\"message\":{why}}}}}\n"
        ),
    )
}

/// Who a view key's connections count against: its caller, or the operator.
fn prover(viewer: &Viewer) -> Arc<str> {
    match viewer {
        Viewer::Caller(caller) => caller.0.clone(),
        Viewer::Operator => Arc::from(OPERATOR),
    }
}

/// The operator's view, as a prover of connections: no caller's name can be empty.
const OPERATOR: &str = "";

fn reply(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

/// The client session that headers name (`Mcp-Session-Id`), when it is readable.
fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The body, whole, unless it is over [`MAX_BODY_BYTES`] (or cannot be read).
async fn read_body(body: Incoming) -> Result<Bytes, Refusal> {
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(_) => Err(Refusal::TooLarge),
    }
}

/// Whether the request would open a session: a `POST` that names none, of an `initialize`.
fn opens_session(parts: &Parts, body: &[u8]) -> bool {
    parts.method == Method::POST
        && !parts.headers.contains_key(SESSION_HEADER)
        && is_initialize(body)
}

/// Whether a JSON-RPC body is an `initialize` request (the one that makes a session).
fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("method").and_then(|m| m.as_str()) == Some("initialize"))
}
