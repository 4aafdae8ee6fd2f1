//! The web view (docs/BEHAVIOUR.md §9): a page at `/` of the HTTP listener where a person
//! watches every session's jobs and shells live.
//!
//! - **Login:** the page asks for a token of the token file and posts it (`POST /view/login`);
//!   the answer is the view's key, a random value of this process (not the token), which the
//!   page keeps in its origin's storage and sends in an `X-Agentty-View` header with every
//!   state, stream and control request. Never a URL: a browser keeps those in its history, a
//!   file any command can read, and the token lets its holder approve its own escalations.
//!   Never a cookie: a browser sends one to every port of the host, so a page a command serves
//!   on another port of 127.0.0.1 (a dev server the user opens) would receive it. The page, its
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

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use agentty_server::Agentty;

use super::body::Body;
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

/// The view's half of the listener.
pub struct View {
    agentty: Agentty,
    callers: Arc<Callers>,
    /// The view's key: 256 random bits of this process.
    key: String,
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
            key: agentty_core::random::hex(32),
            control,
            hosts,
            origins,
        }
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
            _ => {}
        }
        if !self.has_key(&request) {
            return unauthorized();
        }
        match (request.method(), path.as_str()) {
            (&Method::GET, "/view/events") => stream::state(self.agentty.clone(), self.control),
            (&Method::GET, "/view/stream") => {
                let (Some(session), Some(id)) = (query(&request, "session"), query(&request, "id"))
                else {
                    return text(
                        StatusCode::BAD_REQUEST,
                        "agentty: session and id are needed\n",
                    );
                };
                match self.agentty.view_target(&session, &id) {
                    Some(target) => stream::target(target),
                    None => text(StatusCode::NOT_FOUND, "agentty: no such job\n"),
                }
            }
            (&Method::POST, "/view/stop") => self.stop(request).await,
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
                    Some(asked) if asked.needs_login && !self.has_key(request) => unauthorized(),
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
        let logged_in = self.has_key(&request);
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
        if self
            .agentty
            .secret_asked(&id)
            .is_some_and(|asked| asked.needs_login && !logged_in)
        {
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

    /// `POST /view/login {"token": …}` (JSON only: a form of another site cannot send it
    /// without the browser asking first): the view's key for a token of the token file.
    async fn log_in(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        #[derive(serde::Deserialize)]
        struct Login {
            token: String,
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
        let Ok(Login { token }) = serde_json::from_slice::<Login>(&body.to_bytes()) else {
            return text(StatusCode::BAD_REQUEST, "agentty: a token is needed\n");
        };
        if self.callers.find(token.as_bytes()).is_none() {
            return text(StatusCode::UNAUTHORIZED, "agentty: wrong token\n");
        }
        let mut response = text(
            StatusCode::OK,
            &serde_json::json!({ "key": self.key }).to_string(),
        );
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }

    /// Whether the request carries the view's key.
    pub fn has_key(&self, request: &Request<hyper::body::Incoming>) -> bool {
        request
            .headers()
            .get(KEY_HEADER)
            .is_some_and(|given| super::token::same_secret(given.as_bytes(), self.key.as_bytes()))
    }

    /// `POST /view/stop {"session": …, "id": …}`, with `--view-control` only.
    async fn stop(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        if !self.control {
            return text(
                StatusCode::FORBIDDEN,
                "agentty: the view is read-only; start the server with --view-control to stop jobs\n",
            );
        }
        let Ok(body) = Limited::new(request.into_body(), 4096).collect().await else {
            return text(StatusCode::PAYLOAD_TOO_LARGE, "agentty: too large\n");
        };
        let asked: serde_json::Value = serde_json::from_slice(&body.to_bytes()).unwrap_or_default();
        let (Some(session), Some(id)) = (asked["session"].as_str(), asked["id"].as_str()) else {
            return text(
                StatusCode::BAD_REQUEST,
                "agentty: session and id are needed\n",
            );
        };
        match self.agentty.view_stop(session, id).await {
            Ok(()) => text(StatusCode::OK, "stopped\n"),
            Err(e) => text(StatusCode::CONFLICT, &format!("agentty: {e}\n")),
        }
    }
}

/// The answer without the view's key.
fn unauthorized() -> Response<Body> {
    text(
        StatusCode::UNAUTHORIZED,
        "agentty: open the view's address and enter a token of the token file named when the \
         server started; the page then remembers it until the server stops\n",
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
