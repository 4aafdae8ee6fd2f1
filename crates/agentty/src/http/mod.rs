//! `agentty serve --http`: MCP streamable HTTP at `/mcp`, for several clients at once
//! (docs/BEHAVIOUR.md §9).
//!
//! rmcp's `StreamableHttpService` speaks the protocol and checks `Host` and `Origin`; this
//! module puts it on a loopback listener (hyper, HTTP/1.1) behind what rmcp does not do:
//! - a bearer token on every request, compared in constant time; without it: 401 and nothing
//!   else happens. Each token of the token file is a caller ([`token`]): a client session
//!   belongs to the caller that opened it, and callers without a session are kept apart by it;
//! - only `/mcp` (404 elsewhere), bodies of at most 4 MiB (413);
//! - a cap on live sessions (503 with a JSON-RPC error that says why).
//!
//! Each client session gets its own [`Agentty`] session (jobs, shells, spill files, caps), made by
//! rmcp through [`Agentty::new_session`]; it ends when the client sends `DELETE /mcp`, when it
//! has sent nothing for the grace period, or when the server stops, and its jobs are stopped
//! then.

mod hold;
mod token;
mod view;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use agentty_server::{Agentty, Caller};
use token::Callers;

/// The listener's tokens, read or made before anything is served.
pub struct Tokens {
    callers: Callers,
    file: PathBuf,
    made: bool,
}

impl Tokens {
    /// The token file of `options` (`--token-file`, or the state dir's, made if missing).
    pub fn load(options: &HttpOptions) -> Result<Self> {
        let (callers, file, made) =
            token::load_or_make(options.token_file.as_deref(), &options.default_token_file)?;
        Ok(Tokens {
            callers,
            file,
            made,
        })
    }

    /// The file as confined commands would reach it (symlinks resolved), to cover it there.
    pub fn file_to_hide(&self) -> Option<PathBuf> {
        std::fs::canonicalize(&self.file).ok()
    }
}

/// The largest request body read (rmcp's own limit).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How the HTTP listener is set up (from `serve`'s flags).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Serve MCP at `/mcp` (`--http`); without it only the web view is served (`--view`).
    pub mcp: bool,
    /// `--view-control`: the view may stop jobs and close shells.
    pub view_control: bool,
    pub listen: SocketAddr,
    /// `--token-file`: must exist.
    pub token_file: Option<PathBuf>,
    /// Where the token is kept when no file is given: `<state dir>/token`.
    pub default_token_file: PathBuf,
    pub allow_hosts: Vec<String>,
    pub allow_origins: Vec<String>,
    pub grace: Duration,
    pub max_sessions: usize,
}

type Body = BoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

/// What every connection's requests need.
struct Gate {
    callers: Arc<Callers>,
    view: view::View,
    /// MCP is served at `/mcp` (else only the view).
    mcp_on: bool,
    /// Which caller opened each client session (by `Mcp-Session-Id`).
    owners: Mutex<HashMap<String, Caller>>,
    mcp: StreamableHttpService<Agentty, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    max_sessions: usize,
    /// Ends a client session's calls, jobs and shells before rmcp closes it.
    agentty: Agentty,
}

impl Gate {
    async fn handle(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        if view::serves(request.uri().path()) {
            return self.view.handle(request).await;
        }
        let caller = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .and_then(|given| self.callers.find(given))
            .cloned();
        let Some(caller) = caller else {
            let mut response = reply(
                StatusCode::UNAUTHORIZED,
                "agentty: this endpoint needs `Authorization: Bearer <token>` (the token file \
                 named when the server started)\n",
            );
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return response;
        };
        if request.uri().path() != "/mcp" || !self.mcp_on {
            return reply(StatusCode::NOT_FOUND, "agentty: MCP is served at /mcp\n");
        }
        let (mut parts, body) = request.into_parts();
        let session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Another caller's session answers as one that does not exist.
        if let Some(id) = &session
            && self.owner(id).is_some_and(|owner| owner != caller)
        {
            return reply(StatusCode::NOT_FOUND, "agentty: no such session\n");
        }
        let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return reply(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "agentty: the request body is over 4 MiB\n",
                );
            }
        };
        if parts.method == hyper::Method::POST
            && !parts.headers.contains_key("mcp-session-id")
            && is_initialize(&body)
        {
            let live = self.sessions.sessions.read().await.len();
            if live >= self.max_sessions {
                tracing::warn!(live, "refused a new session: the cap is reached");
                return reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":-32000,\"message\":\
                         \"agentty: {live} sessions are live, the most this server takes \
                         (--max-sessions); end one (DELETE /mcp) or wait until one ends\"}}}}\n"
                    ),
                );
            }
        }
        let delete = parts.method == hyper::Method::DELETE;
        let post = parts.method == hyper::Method::POST;
        if delete {
            let id = session.as_deref().unwrap_or_default();
            if !self.sessions.sessions.read().await.contains_key(id) {
                return reply(StatusCode::NOT_FOUND, "agentty: no such session\n");
            }
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
            && let Some(made) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            let made = made.to_owned();
            let live: Vec<String> = self
                .sessions
                .sessions
                .read()
                .await
                .keys()
                .map(ToString::to_string)
                .collect();
            if let Ok(mut owners) = self.owners.lock() {
                owners.retain(|id, _| live.contains(id));
                owners.insert(made, caller);
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
}

impl Gate {
    /// The caller that opened the client session `id`, if it is known.
    fn owner(&self, id: &str) -> Option<Caller> {
        self.owners.lock().ok()?.get(id).cloned()
    }
}

/// Whether a JSON-RPC body is an `initialize` request (the one that makes a session).
fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("method").and_then(|m| m.as_str()) == Some("initialize"))
}

/// Serves `agentty` over HTTP until `shutdown` resolves; then every session ends (its jobs are
/// stopped).
pub async fn serve(
    agentty: Agentty,
    options: HttpOptions,
    tokens: Tokens,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let Tokens {
        callers,
        file: token_file,
        made,
    } = tokens;
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("cannot listen on {}", options.listen))?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() {
        tracing::warn!(
            "listening on {bound}, which is not loopback: plain HTTP; TLS termination (a reverse \
             proxy) is yours to set up"
        );
    }
    let url = format!("http://{bound}/mcp");
    let tokens = match callers.len() {
        1 => "token".to_owned(),
        n => format!("{n} tokens (one per caller)"),
    };
    let origin = format!("http://{bound}");
    if options.mcp {
        eprintln!(
            "agentty: serving MCP over HTTP at {url}\n\
             agentty: {tokens} {} {} (send it as `Authorization: Bearer <token>`)\n\
             agentty: e.g. claude mcp add --transport http agentty {url} --header \
             \"Authorization: Bearer {}\"",
            if made { "written to" } else { "read from" },
            token_file.display(),
            callers.first_token(),
        );
        agentty.set_handle_grace(options.grace);
    }
    eprintln!(
        "agentty: web view at {origin}/ (open it and enter a token once; {tokens} in {})",
        token_file.display()
    );
    agentty.set_view_url(origin.clone());

    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(options.grace);
    let sessions = Arc::new(manager);
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        "[::1]".to_owned(),
        bound.ip().to_string(),
    ];
    hosts.extend(options.allow_hosts.iter().cloned());
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(options.allow_origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(stop.child_token());
    let base = agentty.clone();
    let mcp = StreamableHttpService::new(move || Ok(base.new_session()), sessions.clone(), config);
    let callers = Arc::new(callers);
    let view = view::View::new(
        agentty.clone(),
        callers.clone(),
        options.view_control,
        hosts.clone(),
        options.allow_origins.clone(),
    );
    let gate = Arc::new(Gate {
        callers,
        view,
        mcp_on: options.mcp,
        owners: Mutex::default(),
        mcp,
        sessions,
        max_sessions: options.max_sessions,
        agentty: agentty.clone(),
    });

    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Replies go out in several writes (headers, then events): without this, Nagle's
        // algorithm and the client's delayed ACK hold each reply ~40 ms (measured).
        let _ = stream.set_nodelay(true);
        let gate = gate.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let gate = gate.clone();
                async move { Ok::<_, Infallible>(gate.handle(request).await) }
            });
            // A client that sends its headers slowly (or never) is dropped after 30 s.
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                () = stop.cancelled() => {}
            }
        });
    }
    // Every session ends: rmcp closes them, each one's jobs are stopped as it goes.
    stop.cancel();
    Ok(())
}
