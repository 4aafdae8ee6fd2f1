//! The web view (docs/BEHAVIOUR.md §9): a page at `/` of the HTTP listener where a person
//! watches every session's jobs and shells live.
//!
//! - **Login:** the page posts a token of the token file (`POST /view/login`), or a one-time
//!   code that `agentty view` got for a token (`POST /view/code` with the token as a bearer,
//!   then the page opened at `/#code=…`). The answer is a key of its own for that login, bound
//!   to the token's caller: every state, stream, stop and secret call answers only for that
//!   caller's sessions (an operator's token sees every caller's). The page keeps the key in
//!   its memory only and sends it in an `X-Agentty-View` header; a reload logs in again. Not in
//!   the browser's storage: a profile's files are readable by any command (reads are not
//!   confined), and a key found there opened the view. Never a URL: a browser keeps those in
//!   its history (a code there is dead once used, or a minute after it was made). Never a
//!   cookie: a browser sends one to every port of the host, so a page a command serves on
//!   another port of 127.0.0.1 (a dev server the user opens) would receive it. The page, its
//!   script and its style hold nothing and are served to anyone who passes the checks below.
//! - **Origin and Host:** a request whose `Origin` is not the page's own (nor `--allow-origin`)
//!   gets 403, key or not; `Host` must be an accepted name (DNS rebinding).
//! - **Read-only by default:** nothing here types into a shell or starts a process; stopping a
//!   job or closing a shell needs `--view-control`.
//! - **Cost:** nothing is read or rendered for the view without a viewer. A viewer streams from
//!   the job's own output ring at a cursor of its own, at most ten updates a second; one that
//!   falls behind the ring gets a new snapshot. Each stream's channel holds a few events, so a
//!   slow viewer waits instead of buffering (`stream.rs`).

mod stream;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use agentty_server::Agentty;
use agentty_server::view::Viewer;

use super::body::Body;
use super::peers::Peers;
use super::token::Callers;

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("view.js");
const STYLE: &str = include_str!("view.css");
const SECRET_PAGE: &str = include_str!("secret.html");
const SECRET_SCRIPT: &str = include_str!("secret.js");

/// The header that carries the view's key.
const KEY_HEADER: &str = "x-agentty-view";

/// The page may load only what agentty serves, run no inline script and be framed by nobody.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Keys handed out at login and live at once; the oldest goes first. A page makes one per load.
const KEYS_MAX: usize = 64;
/// A key no request used for this long is forgotten (the page then logs in again).
const KEY_IDLE: Duration = Duration::from_secs(12 * 3600);
/// A login code lives this long, for one login.
const CODE_TTL: Duration = Duration::from_secs(60);
/// Codes waiting at once, at most.
const CODES_MAX: usize = 16;

/// Secrets a login hands out, each bound to its viewer: 256-bit keys (page memory only) and
/// 128-bit one-time codes (`agentty view`).
#[derive(Default)]
struct Logins {
    keys: Mutex<HashMap<String, (Viewer, Instant)>>,
    codes: Mutex<HashMap<String, (Viewer, Instant)>>,
}

impl Logins {
    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new key for `viewer`.
    fn key_for(&self, viewer: Viewer) -> String {
        let key = agentty_core::random::hex(32);
        let mut keys = Self::lock(&self.keys);
        let now = Instant::now();
        keys.retain(|_, (_, used)| now.duration_since(*used) < KEY_IDLE);
        while keys.len() >= KEYS_MAX {
            let oldest = keys
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => keys.remove(&k),
                None => break,
            };
        }
        keys.insert(key.clone(), (viewer, now));
        key
    }

    /// Who `key` was handed to, noting its use.
    fn viewer(&self, key: &str) -> Option<Viewer> {
        let mut keys = Self::lock(&self.keys);
        let (viewer, used) = keys.get_mut(key)?;
        if used.elapsed() >= KEY_IDLE {
            keys.remove(key);
            return None;
        }
        *used = Instant::now();
        Some(viewer.clone())
    }

    /// A new one-time code for `viewer`, or `None` when too many wait.
    fn code_for(&self, viewer: Viewer) -> Option<String> {
        let mut codes = Self::lock(&self.codes);
        let now = Instant::now();
        codes.retain(|_, (_, made)| now.duration_since(*made) < CODE_TTL);
        if codes.len() >= CODES_MAX {
            return None;
        }
        let code = agentty_core::random::hex(16);
        codes.insert(code.clone(), (viewer, now));
        Some(code)
    }

    /// The viewer of `code`, which is used up.
    fn take_code(&self, code: &str) -> Option<Viewer> {
        let (viewer, made) = Self::lock(&self.codes).remove(code)?;
        (made.elapsed() < CODE_TTL).then_some(viewer)
    }
}

/// The view's half of the listener.
pub struct View {
    agentty: Agentty,
    callers: Arc<Callers>,
    logins: Logins,
    /// The other agents of this state dir, once this one serves the page for them all.
    peers: std::sync::OnceLock<Arc<Peers>>,
    control: bool,
    hosts: Vec<String>,
    origins: Vec<String>,
}

/// Whether `path` is the view's (everything but `/mcp`).
pub fn serves(path: &str) -> bool {
    matches!(
        path,
        "/" | "/view.js" | "/view.css" | "/secret.js" | "/secret.css" | "/favicon.ico"
    ) || path.starts_with("/view/")
        || path.starts_with("/secret/")
}

impl View {
    pub fn new(
        agentty: Agentty,
        callers: Arc<Callers>,
        control: bool,
        hosts: Vec<String>,
        origins: Vec<String>,
    ) -> Self {
        View {
            agentty,
            callers,
            logins: Logins::default(),
            peers: std::sync::OnceLock::new(),
            control,
            hosts,
            origins,
        }
    }

    /// This agent serves the page: it shows `peers`' sessions too, and passes calls about them on.
    pub fn serve_peers(&self, peers: Arc<Peers>) {
        let _ = self.peers.set(peers);
    }

    pub async fn handle(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        let mut response = self.route(request).await;
        let headers = response.headers_mut();
        for (name, value) in [
            ("content-security-policy", CSP),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "no-referrer"),
            ("x-frame-options", "DENY"),
            ("cache-control", "no-store"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
        response
    }

    async fn route(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        let Some(host) = self.accepted_host(&request) else {
            return text(
                StatusCode::FORBIDDEN,
                "agentty: this Host is not accepted\n",
            );
        };
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let own = format!("http://{host}");
            let allowed = origin.as_bytes() == own.as_bytes()
                || self
                    .origins
                    .iter()
                    .any(|o| o.as_bytes() == origin.as_bytes());
            if !allowed {
                return text(
                    StatusCode::FORBIDDEN,
                    "agentty: requests from other pages are refused\n",
                );
            }
        }
        let path = request.uri().path().to_owned();
        // The icon every browser asks for: there is none (asked of the MCP endpoint, it was a
        // 401 in the console of every page).
        if path == "/favicon.ico" {
            return Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(Full::new(Bytes::new()).boxed())
                .unwrap_or_else(|_| text(StatusCode::NO_CONTENT, ""));
        }
        // A secret's page: the request's id (128 random bits, one use, five minutes) is what
        // lets it in, since the user may come from the host's prompt without the view's key. It
        // can only type into a terminal that waits for a password with echo off.
        if let Some(socket) = self.peer_of_secret(&request, &path).await
            && let Some(peers) = self.peers.get()
        {
            let vouch = self.viewer(&request).is_some();
            return peers.forward(&socket, request, vouch).await;
        }
        if let Some(response) = self.secret_route(&request, &path) {
            return response;
        }
        if request.method() == Method::POST && path == "/view/secret" {
            return self.enter_secret(request).await;
        }
        match (request.method(), path.as_str()) {
            (&Method::GET, "/") if query(&request, "token").is_some() => {
                return text(
                    StatusCode::BAD_REQUEST,
                    "agentty: a token does not go in an address (the browser keeps it in its \
                     history, which commands can read): open the view's address without it and \
                     enter the token in the page\n",
                );
            }
            (&Method::GET, "/") => return asset(PAGE, "text/html; charset=utf-8"),
            (&Method::GET, "/view.js") => return asset(SCRIPT, "text/javascript; charset=utf-8"),
            (&Method::GET, "/view.css") => return asset(STYLE, "text/css; charset=utf-8"),
            (&Method::POST, "/view/login") => return self.log_in(request).await,
            (&Method::POST, "/view/code") => return self.code(&request),
            _ => {}
        }
        let Some(viewer) = self.viewer(&request) else {
            return unauthorized();
        };
        match (request.method(), path.as_str()) {
            (&Method::GET, "/view/events") => stream::state(
                self.agentty.clone(),
                self.control,
                viewer,
                self.peers.get().cloned(),
            ),
            // One agent's state, once: what the hub shows of it (see `peers`).
            (&Method::GET, "/view/state") => {
                let mut response = text(
                    StatusCode::OK,
                    &self.agentty.view_state(&viewer).to_string(),
                );
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
            (&Method::GET, "/view/stream") => {
                let (Some(session), Some(id)) = (query(&request, "session"), query(&request, "id"))
                else {
                    return text(
                        StatusCode::BAD_REQUEST,
                        "agentty: session and id are needed\n",
                    );
                };
                match self.agentty.view_target(&viewer, &session, &id) {
                    Some(target) => stream::target(target),
                    None => match self.peer_of_session(&session).await {
                        Some((peers, socket)) => peers.forward(&socket, request, true).await,
                        None => text(StatusCode::NOT_FOUND, "agentty: no such job\n"),
                    },
                }
            }
            (&Method::POST, "/view/stop") => self.stop(request, &viewer).await,
            _ => text(StatusCode::NOT_FOUND, "agentty: not here\n"),
        }
    }

    /// The secret page and its calls; `None` for any other path.
    fn secret_route(
        &self,
        request: &Request<hyper::body::Incoming>,
        path: &str,
    ) -> Option<Response<Body>> {
        match (request.method(), path) {
            (&Method::GET, "/secret.js") => {
                Some(asset(SECRET_SCRIPT, "text/javascript; charset=utf-8"))
            }
            (&Method::GET, "/secret.css") => Some(asset(STYLE, "text/css; charset=utf-8")),
            (&Method::GET, "/view/secret") => {
                let asked = query(request, "id").and_then(|id| self.agentty.secret_asked(&id));
                Some(match asked {
                    Some(asked) if !self.may_answer(request, &asked) => unauthorized(),
                    Some(asked) => {
                        let body = serde_json::json!({"shell": asked.shell_id, "what": asked.what, "asker": asked.asker});
                        let mut response = text(StatusCode::OK, &body.to_string());
                        response.headers_mut().insert(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/json"),
                        );
                        response
                    }
                    None => text(StatusCode::NOT_FOUND, "no such request\n"),
                })
            }
            // The page holds nothing: what it shows and what it sends go through the calls
            // above, which ask for the view's key where the request needs it.
            (&Method::GET, p) if p.starts_with("/secret/") => {
                let id = &p["/secret/".len()..];
                Some(match self.agentty.secret_asked(id) {
                    Some(_) => asset(SECRET_PAGE, "text/html; charset=utf-8"),
                    None => text(
                        StatusCode::NOT_FOUND,
                        "agentty: this request was answered already, or it expired\n",
                    ),
                })
            }
            _ => None,
        }
    }

    /// `POST /view/secret {"id": …, "secret": …}`: types it, once. The body is never logged.
    async fn enter_secret(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        /// The page's post, read straight into its two strings (no copy of the secret kept).
        #[derive(serde::Deserialize)]
        struct Entry {
            id: String,
            secret: String,
        }
        let viewer = self.viewer(&request);
        let Ok(body) = Limited::new(request.into_body(), 8192).collect().await else {
            return text(StatusCode::PAYLOAD_TOO_LARGE, "agentty: too large\n");
        };
        let mut bytes = Vec::from(body.to_bytes());
        let parsed = serde_json::from_slice::<Entry>(&bytes);
        bytes.fill(0);
        let Ok(Entry { id, mut secret }) = parsed else {
            return text(
                StatusCode::BAD_REQUEST,
                "agentty: id and secret are needed\n",
            );
        };
        // Another agent's request (this one serves the page for them all): passed on to it,
        // and wiped here.
        if self.agentty.secret_asked(&id).is_none()
            && let Some(peers) = self.peers.get()
            && let Some(socket) = peers.owner(None, Some(&id)).await
        {
            let mut again = serde_json::json!({ "id": id, "secret": secret }).to_string();
            agentty_server::secrets::wipe(&mut secret);
            let body = bytes::Bytes::from(std::mem::take(&mut again));
            let json = HeaderValue::from_static("application/json");
            return peers
                .pass(
                    &socket,
                    &Method::POST,
                    "/view/secret",
                    Some(&json),
                    body,
                    viewer.is_some(),
                )
                .await;
        }
        let refused = self.agentty.secret_asked(&id).is_some_and(|asked| {
            asked.needs_login
                && !viewer
                    .as_ref()
                    .is_some_and(|v| v.sees(asked.caller.as_ref()))
        });
        if refused {
            agentty_server::secrets::wipe(&mut secret);
            return unauthorized();
        }
        match self.agentty.enter_secret(&id, secret).await {
            Ok(()) => text(StatusCode::OK, "entered\n"),
            Err(agentty_server::secrets::EnterRefused::Unknown) => text(
                StatusCode::NOT_FOUND,
                "agentty: this request was answered already, or it expired\n",
            ),
            Err(e) => text(StatusCode::CONFLICT, &format!("agentty: {e}\n")),
        }
    }

    /// The `Host` header, when it names an accepted host (any port).
    fn accepted_host(&self, request: &Request<hyper::body::Incoming>) -> Option<String> {
        let host = request.headers().get(header::HOST)?.to_str().ok()?;
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        };
        self.hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name))
            .then(|| host.to_owned())
    }

    /// `POST /view/login {"token": …}` or `{"code": …}` (JSON only: a form of another site
    /// cannot send it without the browser asking first): a new key, bound to the token's caller.
    async fn log_in(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Login {
            token: Option<String>,
            code: Option<String>,
        }
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
        if !json {
            return text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "agentty: post the token as JSON\n",
            );
        }
        let Ok(body) = Limited::new(request.into_body(), 4096).collect().await else {
            return text(StatusCode::PAYLOAD_TOO_LARGE, "agentty: too large\n");
        };
        let viewer = match serde_json::from_slice::<Login>(&body.to_bytes()) {
            Ok(Login {
                token: Some(token),
                code: None,
            }) => self.callers.viewer(token.as_bytes()),
            Ok(Login {
                token: None,
                code: Some(code),
            }) => self.logins.take_code(&code),
            _ => {
                return text(
                    StatusCode::BAD_REQUEST,
                    "agentty: a token or a code is needed\n",
                );
            }
        };
        let Some(viewer) = viewer else {
            return text(
                StatusCode::UNAUTHORIZED,
                "agentty: not a token of this server, or a code used or expired\n",
            );
        };
        let key = self.logins.key_for(viewer);
        let mut response = text(
            StatusCode::OK,
            &serde_json::json!({ "key": key }).to_string(),
        );
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }

    /// `POST /view/code` with `Authorization: Bearer <token>`: a one-time login code (128
    /// bits, a minute) for the token's caller, which `agentty view` puts in the page's address.
    fn code(&self, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        let viewer = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .and_then(|token| self.callers.viewer(token));
        let Some(viewer) = viewer else {
            return text(
                StatusCode::UNAUTHORIZED,
                "agentty: not a token of this server\n",
            );
        };
        let Some(code) = self.logins.code_for(viewer) else {
            return text(
                StatusCode::TOO_MANY_REQUESTS,
                "agentty: too many login codes wait; use one, or wait a minute\n",
            );
        };
        let mut response = text(
            StatusCode::OK,
            &serde_json::json!({ "code": code, "expires_ms": CODE_TTL.as_millis() }).to_string(),
        );
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }

    /// Whether the request carries a live key (the gate counts such a connection as proven).
    pub fn has_key(&self, request: &Request<hyper::body::Incoming>) -> bool {
        self.viewer(request).is_some()
    }

    /// Who the request's key was handed to, if it carries a live one; or, for another agent of
    /// this state dir (the hub passing a call on, see `peers`), the viewer of the token it sends.
    fn viewer(&self, request: &Request<hyper::body::Incoming>) -> Option<Viewer> {
        if let Some(given) = request.headers().get(KEY_HEADER) {
            return self.logins.viewer(given.to_str().ok()?);
        }
        let bearer = request
            .headers()
            .get(header::AUTHORIZATION)?
            .as_bytes()
            .strip_prefix(b"Bearer ")?;
        self.callers.viewer(bearer)
    }

    /// The other agent that holds session `key`, when this one serves the page for others.
    async fn peer_of_session(&self, key: &str) -> Option<(Arc<Peers>, std::path::PathBuf)> {
        let peers = self.peers.get()?;
        let socket = peers.owner(Some(key), None).await?;
        Some((peers.clone(), socket))
    }

    /// The other agent whose secret request the request is about (its id not one of this
    /// agent's), when this one serves the page for others.
    async fn peer_of_secret(
        &self,
        request: &Request<hyper::body::Incoming>,
        path: &str,
    ) -> Option<std::path::PathBuf> {
        let peers = self.peers.get()?;
        let id = match (request.method(), path) {
            (&Method::GET, "/view/secret") => query(request, "id")?,
            (&Method::GET, p) if p.starts_with("/secret/") => p["/secret/".len()..].to_owned(),
            _ => return None,
        };
        if self.agentty.secret_asked(&id).is_some() {
            return None;
        }
        peers.owner(None, Some(&id)).await
    }

    /// Whether the request may see and answer the secret request `asked`: one whose id the
    /// user got from the host needs nothing more; one the model knows of needs the key of a
    /// viewer of its session's caller.
    fn may_answer(
        &self,
        request: &Request<hyper::body::Incoming>,
        asked: &agentty_server::secrets::Asked,
    ) -> bool {
        !asked.needs_login
            || self
                .viewer(request)
                .is_some_and(|v| v.sees(asked.caller.as_ref()))
    }

    /// `POST /view/stop {"session": …, "id": …}`, with `--view-control` only.
    async fn stop(
        &self,
        request: Request<hyper::body::Incoming>,
        viewer: &Viewer,
    ) -> Response<Body> {
        if !self.control {
            return text(
                StatusCode::FORBIDDEN,
                "agentty: the view is read-only; start the server with --view-control to stop jobs\n",
            );
        }
        let Ok(body) = Limited::new(request.into_body(), 4096).collect().await else {
            return text(StatusCode::PAYLOAD_TOO_LARGE, "agentty: too large\n");
        };
        let body = body.to_bytes();
        let asked: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let (Some(session), Some(id)) = (asked["session"].as_str(), asked["id"].as_str()) else {
            return text(
                StatusCode::BAD_REQUEST,
                "agentty: session and id are needed\n",
            );
        };
        match self.agentty.view_stop(viewer, session, id).await {
            Ok(()) => text(StatusCode::OK, "stopped\n"),
            Err(agentty_server::view::StopRefused::Unknown) => {
                match self.peer_of_session(session).await {
                    Some((peers, socket)) => {
                        let json = HeaderValue::from_static("application/json");
                        peers
                            .pass(
                                &socket,
                                &Method::POST,
                                "/view/stop",
                                Some(&json),
                                body,
                                true,
                            )
                            .await
                    }
                    None => text(StatusCode::CONFLICT, "agentty: no such job\n"),
                }
            }
            Err(e) => text(StatusCode::CONFLICT, &format!("agentty: {e}\n")),
        }
    }
}

/// The answer without a live key.
fn unauthorized() -> Response<Body> {
    text(
        StatusCode::UNAUTHORIZED,
        "agentty: open the view's address and enter a token of the token file named when the \
         server started (or run `agentty view`); the page keeps its key in memory only\n",
    )
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn asset(body: &'static str, kind: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}

/// The value of `name` in the request's query, percent-decoded.
fn query(request: &Request<hyper::body::Incoming>, name: &str) -> Option<String> {
    request.uri().query()?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| percent_decode(value))?
    })
}

fn percent_decode(text: &str) -> Option<String> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'%' => {
                let hex = [bytes.next()?, bytes.next()?];
                let hex = std::str::from_utf8(&hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
    }
    String::from_utf8(out).ok()
}
