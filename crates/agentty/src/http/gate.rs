//! The gate: what every request to the listener goes through, one named step each, in order.
//!
//! 1. The view's routes go to the view, which checks Host, Origin and its key its own way.
//! 2. The bearer token names the caller ([`token`](super::token)); without one: 401.
//! 3. MCP is served at `/mcp` only, and only with `--http`: 404 elsewhere.
//! 4. A session that belongs to another caller answers as one that does not exist: 404.
//! 5. The body is read whole, at most [`MAX_BODY_BYTES`]: 413 past that.
//! 6. An `initialize` that would open a session past the cap, or past its caller's share of
//!    it ([`sessions`](super::sessions)): 503, with a JSON-RPC error that says which.
//! 7. A `DELETE` must name a live session (404), and stops all it runs before rmcp closes it.
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

use agentty_server::{Agentty, Caller};

use super::body::Body;
use super::conns::Conn;
use super::hold;
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
        let hosts = accepted_hosts(bound, &options.allow_hosts);
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts.clone())
            .with_allowed_origins(options.allow_origins.clone())
            .enforce_origin_validation()
            .with_cancellation_token(stop.child_token());
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
            hosts,
            options.allow_origins.clone(),
        );
        Gate {
            callers,
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
        if view::serves(request.uri().path()) {
            if self.view.has_key(&request) {
                conn.prove();
            }
            return self.view.handle(request).await;
        }
        match self.admit(request, conn).await {
            Ok(admitted) => self.forward(admitted).await,
            Err(refusal) => refusal.reply(),
        }
    }

    /// The checks of an MCP request, in their order (see the module doc).
    async fn admit(
        &self,
        request: Request<Incoming>,
        conn: &Conn,
    ) -> Result<Admitted<'_>, Refusal> {
        let caller = self.caller(&request).ok_or(Refusal::NoToken)?;
        conn.prove();
        if request.uri().path() != "/mcp" || !self.mcp_on {
            return Err(Refusal::NotMcp);
        }
        let (parts, body) = request.into_parts();
        let session = session_id(&parts.headers);
        self.check_owner(session.as_deref(), &caller)?;
        let body = read_body(body).await?;
        let opening = if opens_session(&parts, &body) {
            Some(self.check_session_caps(&caller).await?)
        } else {
            None
        };
        if parts.method == Method::DELETE {
            self.check_live(session.as_deref()).await?;
        }
        Ok(Admitted {
            parts,
            body,
            caller,
            session,
            opening,
        })
    }

    /// rmcp answers the request as its caller's; the reply goes back as clients expect it.
    async fn forward(&self, admitted: Admitted<'_>) -> Response<Body> {
        let Admitted {
            mut parts,
            body,
            caller,
            session,
            opening,
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
            match opening {
                Some(opening) => opening.opened(made),
                None => self.owners.record(made, caller),
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

    /// The caller whose token the request bears (`Authorization: Bearer <token>`).
    fn caller(&self, request: &Request<Incoming>) -> Option<Caller> {
        request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .and_then(|given| self.callers.find(given))
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
        let live: Vec<String> = self
            .sessions
            .sessions
            .read()
            .await
            .keys()
            .map(ToString::to_string)
            .collect();
        self.owners.open(caller, &live).map_err(|full| {
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
        })
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
    /// No token, or none of the token file's: 401.
    NoToken,
    /// Not `/mcp`, or MCP is not served (`--view` alone): 404.
    NotMcp,
    /// Another caller's session, or a `DELETE` of one that is not live: 404.
    NoSuchSession,
    /// A body over [`MAX_BODY_BYTES`]: 413.
    TooLarge,
    /// The caller's share of the sessions, or all of them, are live: 503.
    Full(NoRoom),
}

impl Refusal {
    fn reply(self) -> Response<Body> {
        match self {
            Refusal::NoToken => {
                let mut response = reply(
                    StatusCode::UNAUTHORIZED,
                    "agentty: this endpoint needs `Authorization: Bearer <token>` (the token file \
                     named when the server started)\n",
                );
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                response
            }
            Refusal::NotMcp => reply(StatusCode::NOT_FOUND, "agentty: MCP is served at /mcp\n"),
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
                let why = serde_json::Value::from(why);
                reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":-32000,\
                         \"message\":{why}}}}}\n"
                    ),
                )
            }
        }
    }
}

fn reply(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

/// The Host names rmcp and the view accept: the loopback names, the address bound, and
/// `--allow-host`'s.
fn accepted_hosts(bound: SocketAddr, allow_hosts: &[String]) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        "[::1]".to_owned(),
        bound.ip().to_string(),
    ];
    hosts.extend(allow_hosts.iter().cloned());
    hosts
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
