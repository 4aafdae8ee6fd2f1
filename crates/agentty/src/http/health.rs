//! The operator's paths (docs/BEHAVIOUR.md §14): `GET /livez`, `GET /readyz` and
//! `GET /metrics`.
//!
//! - `/livez`: 200 `ok` while the process serves requests. It checks nothing else: a server
//!   that answers it is alive, and restarting it would lose every session.
//! - `/readyz`: 200 `ok` when the server takes sessions and its sandbox is in force as
//!   configured; 503 with one short reason otherwise (`draining: …` from SIGTERM on,
//!   `degraded: …` when the sandbox asked for is not in force), so a Service sends no new
//!   client to it.
//! - Neither needs a token, and both answer whatever the `Host`: they say only the words above,
//!   which tell a page that rebinds a name to this address nothing a port scan would not, and a
//!   kubelet's probe sends `Host: <pod IP>:<port>`, unknown when the flags are written. Only
//!   `GET` and `HEAD`.
//! - `/metrics`: the Prometheus text format ([`agentty_server::metrics`]), behind a token of the
//!   token file and the Host check like `/mcp`: the counts are the callers' business.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Response, StatusCode};

use agentty_server::Agentty;

use super::body::Body;

/// Whether `path` is answered without a token and whatever the Host.
pub fn open(path: &str) -> bool {
    matches!(path, "/livez" | "/readyz")
}

/// The answer of `/livez` or `/readyz`.
pub fn probe(agentty: &Agentty, method: &Method, path: &str) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "agentty: GET only\n");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    if path == "/livez" {
        return plain(StatusCode::OK, "ok\n");
    }
    match agentty.readiness() {
        Ok(()) => plain(StatusCode::OK, "ok\n"),
        Err(why) => plain(StatusCode::SERVICE_UNAVAILABLE, &format!("{why}\n")),
    }
}

/// The answer of `/metrics`, the token and Host already checked.
pub fn metrics(agentty: &Agentty, method: &Method) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "agentty: GET only\n");
    }
    let mut response = plain(StatusCode::OK, &agentty.metrics_text());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
