//! Logging in to the view: a key per login (page memory only), or a one-time code that
//! `agentty view` asks for, each bound to the token's caller (see `mod.rs`).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Limited};
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};

use agentty_server::view::Viewer;

use super::{Body, View, text};

/// Keys handed out at login and live at once, per viewer (a caller, or the operator); that
/// viewer's oldest goes first. A page makes one per load. Per viewer, so that one caller's
/// logins cannot log another caller's pages out (review 36 M2).
const KEYS_PER_VIEWER: usize = 16;
/// Keys live at once in all, whoever's: a bound on memory only (the oldest goes first).
const KEYS_MAX: usize = 1024;
/// A key no request used for this long is forgotten (the page then logs in again).
const KEY_IDLE: Duration = Duration::from_secs(12 * 3600);
/// A login code lives this long, for one login.
const CODE_TTL: Duration = Duration::from_secs(60);
/// Codes waiting at once per viewer, and in all.
const CODES_PER_VIEWER: usize = 4;
const CODES_MAX: usize = 256;

/// Secrets a login hands out, each bound to its viewer: 256-bit keys (page memory only) and
/// 128-bit one-time codes (`agentty view`).
#[derive(Default)]
pub(super) struct Logins {
    keys: Mutex<HashMap<String, (Viewer, Instant)>>,
    codes: Mutex<HashMap<String, (Viewer, Instant)>>,
}

impl Logins {
    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new key for `viewer`.
    pub(super) fn key_for(&self, viewer: Viewer) -> String {
        let key = agentty_core::random::hex(32);
        let mut keys = Self::lock(&self.keys);
        let now = Instant::now();
        keys.retain(|_, (_, used)| now.duration_since(*used) < KEY_IDLE);
        loop {
            let own = keys.values().filter(|(v, _)| *v == viewer).count();
            if own < KEYS_PER_VIEWER && keys.len() < KEYS_MAX {
                break;
            }
            let oldest = keys
                .iter()
                .filter(|(_, (v, _))| own < KEYS_PER_VIEWER || *v == viewer)
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
    pub(super) fn viewer(&self, key: &str) -> Option<Viewer> {
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
    pub(super) fn code_for(&self, viewer: Viewer) -> Option<String> {
        let mut codes = Self::lock(&self.codes);
        let now = Instant::now();
        codes.retain(|_, (_, made)| now.duration_since(*made) < CODE_TTL);
        let own = codes.values().filter(|(v, _)| *v == viewer).count();
        if own >= CODES_PER_VIEWER || codes.len() >= CODES_MAX {
            return None;
        }
        let code = agentty_core::random::hex(16);
        codes.insert(code.clone(), (viewer, now));
        Some(code)
    }

    /// The viewer of `code`, which is used up.
    pub(super) fn take_code(&self, code: &str) -> Option<Viewer> {
        let (viewer, made) = Self::lock(&self.codes).remove(code)?;
        (made.elapsed() < CODE_TTL).then_some(viewer)
    }
}

impl View {
    /// `POST /view/login {"token": …}` or `{"code": …}` (JSON only: a form of another site
    /// cannot send it without the browser asking first): a new key, bound to the token's caller.
    pub(super) async fn log_in(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
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
    pub(super) fn code(&self, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        let viewer = self.token_viewer(request);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(name: &str) -> Viewer {
        Viewer::Caller(agentty_server::Caller(name.into()))
    }

    /// Review 36, M2: alice's 64 logins logged bob's page out, and her 16 codes made bob's
    /// `agentty view` answer 429. Keys and codes are bounded per viewer now.
    #[test]
    fn one_viewers_logins_and_codes_leave_another_viewers_alone() {
        let logins = Logins::default();
        let bob = logins.key_for(caller("bob"));
        let alice: Vec<String> = (0..100).map(|_| logins.key_for(caller("alice"))).collect();
        assert_eq!(
            logins.viewer(&bob),
            Some(caller("bob")),
            "bob was logged out"
        );
        assert_eq!(logins.viewer(&alice[99]), Some(caller("alice")));
        assert_eq!(
            logins.viewer(&alice[0]),
            None,
            "alice keeps her newest keys only"
        );
        let alive = alice.iter().filter(|k| logins.viewer(k).is_some()).count();
        assert_eq!(alive, KEYS_PER_VIEWER);
        for _ in 0..CODES_PER_VIEWER {
            assert!(logins.code_for(caller("alice")).is_some());
        }
        assert!(logins.code_for(caller("alice")).is_none(), "past her share");
        let code = logins
            .code_for(caller("bob"))
            .expect("bob still gets a code");
        assert_eq!(logins.take_code(&code), Some(caller("bob")));
    }
}
