//! The web view (docs/BEHAVIOUR.md §12): a page at `/` of the HTTP listener where a person
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

mod logins;
mod secret;
mod stream;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use agentty_server::Agentty;
use agentty_server::view::Viewer;

use super::body::Body;
use super::hosts::Hosts;
use super::peers::Peers;
use super::token::Callers;
use logins::Logins;

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("view.js");
const STYLE: &str = include_str!("view.css");

/// The header that carries the view's key.
const KEY_HEADER: &str = "x-agentty-view";

/// The page may load only what agentty serves, run no inline script and be framed by nobody.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The view's half of the listener.
pub struct View {
    agentty: Agentty,
    callers: Arc<Callers>,
    logins: Logins,
    /// The other agents of this state dir, once this one serves the page for them all.
    peers: std::sync::OnceLock<Arc<Peers>>,
    control: bool,
    hosts: Arc<Hosts>,
    origins: Vec<String>,
    /// `--token-header`: where a token may come instead of `Authorization`.
    token_header: Option<header::HeaderName>,
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
        hosts: Arc<Hosts>,
        origins: Vec<String>,
        token_header: Option<header::HeaderName>,
    ) -> Self {
        View {
            agentty,
            callers,
            logins: Logins::default(),
            peers: std::sync::OnceLock::new(),
            control,
            hosts,
            origins,
            token_header,
        }
    }

    /// The viewer of the token the request's headers offer (`Authorization: Bearer`, or the
    /// `--token-header`), if it is one of the token file's.
    fn token_viewer(&self, request: &Request<hyper::body::Incoming>) -> Option<Viewer> {
        super::token::offered(request.headers(), self.token_header.as_ref())
            .find_map(|given| self.callers.viewer(given))
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
            (&Method::GET, "/view/spill") => self.spill(request, &viewer).await,
            (&Method::POST, "/view/stop") => self.stop(request, &viewer).await,
            (&Method::POST, "/view/keyboard") => self.keyboard(request, &viewer).await,
            _ => text(StatusCode::NOT_FOUND, "agentty: not here\n"),
        }
    }

    /// The `Host` header, when it names an accepted host (any port).
    fn accepted_host(&self, request: &Request<hyper::body::Incoming>) -> Option<String> {
        let host = request.headers().get(header::HOST)?.to_str().ok()?;
        self.hosts.accepts(host).then(|| host.to_owned())
    }

    /// Whether the request carries a live key (the gate counts such a connection as proven).
    /// Who holds the key (or token) the request carries, if it carries a live one.
    pub fn viewer_of(&self, request: &Request<hyper::body::Incoming>) -> Option<Viewer> {
        self.viewer(request)
    }

    /// Who the request's key was handed to, if it carries a live one; or, for another agent of
    /// this state dir (the hub passing a call on, see `peers`), the viewer of the token it sends.
    fn viewer(&self, request: &Request<hyper::body::Incoming>) -> Option<Viewer> {
        if let Some(given) = request.headers().get(KEY_HEADER) {
            return self.logins.viewer(given.to_str().ok()?);
        }
        self.token_viewer(request)
    }

    /// The other agent that holds session `key`, when this one serves the page for others.
    async fn peer_of_session(&self, key: &str) -> Option<(Arc<Peers>, std::path::PathBuf)> {
        let peers = self.peers.get()?;
        let socket = peers.owner(Some(key), None).await?;
        Some((peers.clone(), socket))
    }

    /// `GET /view/spill?session=K&id=cN`: the full output of a call that ended, while its spill
    /// file exists (as text: the page offers it as a download).
    async fn spill(
        &self,
        request: Request<hyper::body::Incoming>,
        viewer: &Viewer,
    ) -> Response<Body> {
        let (Some(session), Some(id)) = (query(&request, "session"), query(&request, "id")) else {
            return text(
                StatusCode::BAD_REQUEST,
                "agentty: session and id are needed\n",
            );
        };
        let Some(path) = self.agentty.view_spill(viewer, &session, &id) else {
            return match self.peer_of_session(&session).await {
                Some((peers, socket)) => peers.forward(&socket, request, true).await,
                None => text(
                    StatusCode::NOT_FOUND,
                    "agentty: no full output kept for this call (it fit in the result, or its \
                     file was removed)\n",
                ),
            };
        };
        match tokio::fs::read(&path).await {
            Ok(bytes) => {
                let mut response = Response::new(Full::new(Bytes::from(bytes)).boxed());
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                response
            }
            Err(_) => text(StatusCode::NOT_FOUND, "agentty: the file was removed\n"),
        }
    }

    /// `POST /view/keyboard {"session", "id", "action": "take" | "type" | "give", "keys"}`, with
    /// `--view-control` only: the person's hand on a shell's keyboard
    /// (`agentty_server::view_keyboard`).
    async fn keyboard(
        &self,
        request: Request<hyper::body::Incoming>,
        viewer: &Viewer,
    ) -> Response<Body> {
        use agentty_server::view_keyboard::{Keyboard, KeyboardRefused};
        if !self.control {
            return text(
                StatusCode::FORBIDDEN,
                "agentty: the view is read-only; start the server with --view-control to type into shells\n",
            );
        }
        let Ok(body) = Limited::new(request.into_body(), 8192).collect().await else {
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
        let action = match (asked["action"].as_str(), asked["keys"].as_str()) {
            (Some("take"), _) => Keyboard::Take,
            (Some("give"), _) => Keyboard::GiveBack,
            (Some("type"), Some(keys)) if !keys.is_empty() => Keyboard::Type(keys.to_owned()),
            _ => {
                return text(
                    StatusCode::BAD_REQUEST,
                    "agentty: action is take, type (with keys) or give\n",
                );
            }
        };
        match self
            .agentty
            .view_keyboard(viewer, session, id, action)
            .await
        {
            Ok(()) => text(StatusCode::OK, "done\n"),
            Err(KeyboardRefused::Unknown) => {
                self.pass_to_peer(session, "/view/keyboard", body, "agentty: no such shell\n")
                    .await
            }
            Err(e) => text(StatusCode::CONFLICT, &format!("agentty: {e}\n")),
        }
    }

    /// A control request (`POST path`, its JSON `body`) about a session this server does not
    /// hold, passed to the agentty on this machine that does; `missing` when none does.
    async fn pass_to_peer(
        &self,
        session: &str,
        path: &str,
        body: Bytes,
        missing: &str,
    ) -> Response<Body> {
        match self.peer_of_session(session).await {
            Some((peers, socket)) => {
                let json = HeaderValue::from_static("application/json");
                peers
                    .pass(&socket, &Method::POST, path, Some(&json), body, true)
                    .await
            }
            None => text(StatusCode::CONFLICT, missing),
        }
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
                self.pass_to_peer(session, "/view/stop", body, "agentty: no such job\n")
                    .await
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
