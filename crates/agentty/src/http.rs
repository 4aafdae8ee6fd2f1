//! `agentty serve --http`: MCP streamable HTTP at `/mcp`, for several clients at once
//! (docs/BEHAVIOUR.md §9).
//!
//! rmcp's `StreamableHttpService` speaks the protocol and checks `Host` and `Origin`; this
//! module puts it on a loopback listener (hyper, HTTP/1.1) behind what rmcp does not do:
//! - a bearer token on every request, compared in constant time; without it: 401 and nothing
//!   else happens;
//! - only `/mcp` (404 elsewhere), bodies of at most 4 MiB (413);
//! - a cap on live sessions (503 with a JSON-RPC error that says why).
//!
//! Each client session gets its own [`Agentty`] session (jobs, shells, spill files, caps), made by
//! rmcp through [`Agentty::new_session`]; it ends when the client sends `DELETE /mcp`, when it
//! has sent nothing for the grace period, or when the server stops, and its jobs are stopped
//! then.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use agentty_server::Agentty;

/// The largest request body read (rmcp's own limit).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How the HTTP listener is set up (from `serve`'s flags).
#[derive(Debug, Clone)]
pub struct HttpOptions {
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

/// Equal in time that does not depend on where the first difference is.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    let diff = given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | std::hint::black_box(a ^ b));
    diff == 0
}

/// The token. `given` (`--token-file`) must exist and be private; it may be a symlink (a
/// Kubernetes secret is one). Otherwise `default` (`<state dir>/token`) is read if it is there
/// and private, or made (256 random bits) and written there, 0600, created exclusively, no
/// symlink followed. Returns it, its file, and whether it is new.
pub fn load_or_make_token(given: Option<&Path>, default: &Path) -> Result<(String, PathBuf, bool)> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(file) = given {
        let token = read_private(file, 0)
            .with_context(|| format!("cannot use the token file {}", file.display()))?;
        return Ok((token, file.to_owned(), false));
    }
    let file = default;
    if let Some(dir) = file.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    match read_private(file, libc::O_NOFOLLOW) {
        Ok(token) => Ok((token, file.to_owned(), false)),
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
        {
            let token = new_token()?;
            let mut created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(file)
                .with_context(|| format!("cannot create the token file {}", file.display()))?;
            created.write_all(format!("{token}\n").as_bytes())?;
            Ok((token, file.to_owned(), true))
        }
        Err(e) => Err(e.context(format!("cannot use the token file {}", file.display()))),
    }
}

/// The token in `file`: a regular file of this user's that nobody else may read or write (0600
/// or 0400), of at least 32 characters.
fn read_private(file: &Path, flags: libc::c_int) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(file)?;
    let meta = opened.metadata()?;
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    if !meta.is_file() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        bail!("not a private file of this user (mode 0600 or 0400): remove it or fix it");
    }
    let mut token = String::new();
    opened.read_to_string(&mut token)?;
    let token = token.trim().to_owned();
    if token.len() < 32 {
        bail!("the token in it is shorter than 32 characters");
    }
    Ok(token)
}

/// 256 random bits from the kernel, as 64 hex digits.
fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    // SAFETY: getrandom fills the buffer of the size given.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        bail!("the kernel gave no random bytes for the token");
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What every connection's requests need.
struct Gate {
    token: String,
    mcp: StreamableHttpService<Agentty, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    max_sessions: usize,
}

impl Gate {
    async fn handle(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        let authorized = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .is_some_and(|given| same_secret(given, self.token.as_bytes()));
        if !authorized {
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
        }
        if request.uri().path() != "/mcp" {
            return reply(StatusCode::NOT_FOUND, "agentty: MCP is served at /mcp\n");
        }
        let (parts, body) = request.into_parts();
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
        if delete {
            let id = parts
                .headers
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            if !self.sessions.sessions.read().await.contains_key(id) {
                return reply(StatusCode::NOT_FOUND, "agentty: no such session\n");
            }
        }
        let mut response = self
            .mcp
            .handle(Request::from_parts(parts, Full::new(body)))
            .await;
        // The session is ended: say so as clients expect it (rmcp answers 202 Accepted, which the
        // Python SDK logs as a failed termination).
        if delete && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        response
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
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let (token, token_file, made) =
        load_or_make_token(options.token_file.as_deref(), &options.default_token_file)?;
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
    eprintln!(
        "agentty: serving MCP over HTTP at {url}\n\
         agentty: token {} {} (send it as `Authorization: Bearer <token>`)\n\
         agentty: e.g. claude mcp add --transport http agentty {url} --header \
         \"Authorization: Bearer {token}\"",
        if made { "written to" } else { "read from" },
        token_file.display(),
    );

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
        .with_allowed_hosts(hosts)
        .with_allowed_origins(options.allow_origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(stop.child_token());
    let base = agentty.clone();
    let mcp = StreamableHttpService::new(move || Ok(base.new_session()), sessions.clone(), config);
    let gate = Arc::new(Gate {
        token,
        mcp,
        sessions,
        max_sessions: options.max_sessions,
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
            let connection = hyper::server::conn::http1::Builder::new()
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
