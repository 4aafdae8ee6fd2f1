//! Secrets the model never sees (docs/BEHAVIOUR.md §4): when a program in a shell asks for a
//! password (the terminal stops echoing), the model calls `shell_send({id, secret: "<what it
//! is>"})`. The user types it on a page of the web view (`/secret/<id>`), reached by URL-mode
//! elicitation where the client has it, or by the address the model is given to pass on; the
//! server types it into the terminal with echo off and answers only that it was entered. It is
//! never in a result, a log line, a spill file or an output buffer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use agentty_core::pty::{SecretRefused, Shell};
use tokio::sync::oneshot;

/// How long a request for a secret waits for the user.
pub const SECRET_WAIT: Duration = Duration::from_secs(300);

/// Requests for a secret not yet answered, by id (128 random bits).
#[derive(Default)]
pub struct Pending {
    requests: Mutex<HashMap<String, Request>>,
}

struct Request {
    shell: Weak<Shell>,
    shell_id: String,
    what: String,
    until: Instant,
    /// Told when the secret was typed (a `shell_send` waiting on it).
    entered: Option<oneshot::Sender<()>>,
}

/// What the page shows of a request.
pub struct Asked {
    pub shell_id: String,
    pub what: String,
}

/// Why a secret from the page was not typed.
#[derive(Debug, thiserror::Error)]
pub enum EnterRefused {
    #[error("no such request: it was answered already, or it expired")]
    Unknown,
    #[error("the shell has ended")]
    Closed,
    #[error("nothing in the shell asks for a password now, so it would show or go astray")]
    NotAsked,
}

impl Pending {
    /// A new request for `what`, for `shell`; returns its id and the receiver told on entry.
    pub fn ask(
        &self,
        shell: &Arc<Shell>,
        shell_id: &str,
        what: &str,
    ) -> (String, oneshot::Receiver<()>) {
        let id = agentty_core::random::hex(16);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut requests) = self.requests.lock() {
            let now = Instant::now();
            requests.retain(|_, r| r.until > now);
            requests.insert(
                id.clone(),
                Request {
                    shell: Arc::downgrade(shell),
                    shell_id: shell_id.to_owned(),
                    what: what.to_owned(),
                    until: now + SECRET_WAIT,
                    entered: Some(tx),
                },
            );
        }
        (id, rx)
    }

    /// What request `id` asks for, while it waits.
    pub fn asked(&self, id: &str) -> Option<Asked> {
        let requests = self.requests.lock().ok()?;
        let request = requests.get(id).filter(|r| r.until > Instant::now())?;
        Some(Asked {
            shell_id: request.shell_id.clone(),
            what: request.what.clone(),
        })
    }

    /// Types `secret` for request `id` (once), then wipes it.
    pub async fn enter(&self, id: &str, mut secret: String) -> Result<(), EnterRefused> {
        let request = self
            .requests
            .lock()
            .ok()
            .and_then(|mut requests| requests.remove(id))
            .filter(|r| r.until > Instant::now());
        let typed = match request.as_ref().and_then(|r| r.shell.upgrade()) {
            None if request.is_none() => Err(EnterRefused::Unknown),
            None => Err(EnterRefused::Closed),
            Some(shell) => shell
                .type_secret(secret.as_bytes())
                .await
                .map_err(|e| match e {
                    SecretRefused::Closed => EnterRefused::Closed,
                    SecretRefused::NotAsked => EnterRefused::NotAsked,
                }),
        };
        wipe(&mut secret);
        if typed.is_ok()
            && let Some(tx) = request.and_then(|mut r| r.entered.take())
        {
            let _ = tx.send(());
        }
        typed
    }
}

/// Overwrites a string's bytes before it is freed.
pub fn wipe(secret: &mut String) {
    // SAFETY: zero bytes are valid UTF-8.
    unsafe { secret.as_bytes_mut() }.fill(0);
    secret.clear();
}
