//! One web view for every agent of the user on this machine (docs/BEHAVIOUR.md §12). Several
//! hosts each start `agentty serve --view`, one per agent, all wanting the same port: the first
//! to bind it serves the page (the hub); every agent, the hub too, also answers the view's calls
//! on a unix socket of its own in the state dir (`view-agents/<pid>.sock`, 0600 in a 0700
//! directory). The hub shows its own sessions and those of every agent whose socket answers,
//! each labelled, and passes a call about another agent's session (a stream, a stop, a secret)
//! on to that agent's socket. An agent that could not bind the port tries again every few
//! seconds, so when the hub ends another takes the port; meanwhile its secret requests are
//! served through the hub, and its model is told that address, which answers.
//!
//! The sockets are reached with a token of the token file as a bearer (the agents of one state
//! dir share it): a connection alone opens nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use tokio::net::UnixStream;

use super::body::Body;

/// The directory of the agents' sockets, in the state dir.
const AGENTS_DIR: &str = "view-agents";
/// How long the hub waits for one agent's state before showing the others without it.
const PEER_WAIT: Duration = Duration::from_millis(300);
/// How often an agent that could not bind the view's port tries again.
pub const RETRY_PORT_EVERY: Duration = Duration::from_secs(2);

/// The agents of one state dir, as one of them sees the others.
pub struct Peers {
    dir: PathBuf,
    own: PathBuf,
    /// A token of the shared token file: what the other agents' sockets ask for.
    token: String,
}

impl Peers {
    /// The agents of `state_dir`, this one's socket named by its pid.
    pub fn new(state_dir: &Path, token: String) -> Result<Self> {
        let dir = state_dir.join(AGENTS_DIR);
        super::private_dir(&dir)?;
        let own = dir.join(format!("{}.sock", std::process::id()));
        Ok(Peers { dir, own, token })
    }

    /// This agent's own socket, where the others reach it (`agent_socket.rs` serves it).
    pub fn own_socket(&self) -> &Path {
        &self.own
    }

    /// The other agents' sockets that are there now.
    fn others(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "sock") && *p != self.own)
            .collect()
    }

    /// Each other agent's view state (`GET /view/state`), with its socket; an agent that does
    /// not answer in time is left out this once, and a socket nobody listens on is removed.
    pub async fn states(&self) -> Vec<(PathBuf, Value)> {
        let mut out = Vec::new();
        for socket in self.others() {
            let asked = Request::get("/view/state")
                .header(hyper::header::HOST, "127.0.0.1")
                .header(
                    hyper::header::AUTHORIZATION,
                    format!("Bearer {}", self.token),
                )
                .body(Full::new(Bytes::new()));
            let Ok(asked) = asked else { continue };
            match tokio::time::timeout(PEER_WAIT, send(&socket, asked)).await {
                Ok(Ok(answer)) if answer.status().is_success() => {
                    let body = tokio::time::timeout(PEER_WAIT, answer.into_body().collect()).await;
                    if let Ok(Ok(body)) = body
                        && let Ok(state) = serde_json::from_slice::<Value>(&body.to_bytes())
                    {
                        out.push((socket, state));
                    }
                }
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    let _ = std::fs::remove_file(&socket);
                }
                _ => {}
            }
        }
        out
    }

    /// `state` (this agent's) with every other agent's sessions, secret requests and planted-code
    /// warnings added.
    pub async fn merge_into(&self, state: &mut Value) {
        for (_, other) in self.states().await {
            for key in ["sessions", "secrets", "warnings"] {
                if let (Some(Value::Array(mine)), Some(Value::Array(theirs))) =
                    (state.get_mut(key), other.get(key))
                {
                    mine.extend(theirs.iter().cloned());
                }
            }
        }
    }

    /// The other agent whose state holds the session `key`, or the secret request `id`.
    pub async fn owner(&self, session: Option<&str>, secret: Option<&str>) -> Option<PathBuf> {
        self.states().await.into_iter().find_map(|(socket, state)| {
            let has_session = session.is_some_and(|key| {
                state["sessions"]
                    .as_array()
                    .is_some_and(|all| all.iter().any(|s| s["key"] == key))
            });
            let has_secret = secret.is_some_and(|id| {
                state["secrets"]
                    .as_array()
                    .is_some_and(|all| all.iter().any(|s| s["id"] == id))
            });
            (has_session || has_secret).then_some(socket)
        })
    }

    /// Passes `request` (its body read) on to the agent at `socket`, and its answer back,
    /// streamed. `vouch`: this agent checked the viewer (a live key of its own), so the call goes
    /// with the shared token; else as it came, and the agent applies its own checks (a secret's
    /// page reached from the host's prompt needs none).
    pub async fn forward(
        &self,
        socket: &Path,
        request: Request<Incoming>,
        vouch: bool,
    ) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let Ok(body) = http_body_util::Limited::new(body, 64 * 1024)
            .collect()
            .await
        else {
            return plain(StatusCode::PAYLOAD_TOO_LARGE, "agentty: too large\n");
        };
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", hyper::http::uri::PathAndQuery::as_str);
        let kind = parts.headers.get(hyper::header::CONTENT_TYPE);
        self.pass(socket, &parts.method, path, kind, body.to_bytes(), vouch)
            .await
    }

    /// A call of `method` on `path` with `body`, to the agent at `socket` (see [`Self::forward`]).
    pub async fn pass(
        &self,
        socket: &Path,
        method: &hyper::Method,
        path: &str,
        kind: Option<&hyper::header::HeaderValue>,
        body: Bytes,
        vouch: bool,
    ) -> Response<Body> {
        let mut asked = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(hyper::header::HOST, "127.0.0.1");
        if vouch {
            asked = asked.header(
                hyper::header::AUTHORIZATION,
                format!("Bearer {}", self.token),
            );
        }
        if let Some(kind) = kind {
            asked = asked.header(hyper::header::CONTENT_TYPE, kind);
        }
        let Ok(asked) = asked.body(Full::new(body)) else {
            return plain(StatusCode::BAD_REQUEST, "agentty: cannot pass this on\n");
        };
        match send(socket, asked).await {
            Ok(answer) => {
                let (parts, body) = answer.into_parts();
                Response::from_parts(parts, relayed(body))
            }
            Err(_) => plain(
                StatusCode::BAD_GATEWAY,
                "agentty: the agent that holds this does not answer (it ended?)\n",
            ),
        }
    }
}

/// An answer's body passed on as it comes, frame by frame; it ends where the agent's ends or
/// breaks (the page sees a stream end, as when a job ends).
fn relayed(mut body: Incoming) -> Body {
    let (mut tx, relayed) =
        http_body_util::channel::Channel::<Bytes, std::convert::Infallible>::new(4);
    tokio::spawn(async move {
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data()
                && tx.send_data(data).await.is_err()
            {
                return;
            }
        }
    });
    relayed.boxed()
}

/// `request` over the unix socket `socket`.
async fn send(socket: &Path, request: Request<Full<Bytes>>) -> std::io::Result<Response<Incoming>> {
    let stream = UnixStream::connect(socket).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    sender
        .send_request(request)
        .await
        .map_err(std::io::Error::other)
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response
}
