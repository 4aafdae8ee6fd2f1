//! The secret page and its calls: the user types a secret a shell waits for, once; a request
//! the model knows of needs the key of a viewer of its session's caller.

use http_body_util::{BodyExt, Limited};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::{Body, STYLE, View, asset, query, text, unauthorized};

const SECRET_PAGE: &str = include_str!("secret.html");
const SECRET_SCRIPT: &str = include_str!("secret.js");

impl View {
    /// The secret page and its calls; `None` for any other path.
    pub(super) fn secret_route(
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
    pub(super) async fn enter_secret(
        &self,
        request: Request<hyper::body::Incoming>,
    ) -> Response<Body> {
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

    /// The other agent whose secret request the request is about (its id not one of this
    /// agent's), when this one serves the page for others.
    pub(super) async fn peer_of_secret(
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
}
