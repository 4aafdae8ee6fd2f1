//! What the watch found, told to the user and not only to the model (the party a planted hook
//! is aimed at may be the model's own doing): one WARN line of the server's log per change, and
//! a bounded list kept for the web view, whose state carries it as `warnings` (`view.rs`).

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::Change;
use crate::caller::Caller;

/// Reports kept per session for the view, newest last; older ones of that session go first.
const KEPT_PER_SESSION: usize = 16;
/// Reports kept in all; the oldest go first.
const KEPT: usize = 128;

#[derive(Debug, Clone)]
struct Told {
    /// The sessions it followed, each with its caller (`None`: the stdio session's user).
    sessions: Vec<(String, Option<Caller>)>,
    /// Those sessions' names joined, the key of the per-session bound.
    session: String,
    /// Seconds since the Unix epoch.
    time: u64,
    path: String,
    what: String,
}

/// The reports of this process, for the web view.
#[derive(Default)]
pub(crate) struct Record {
    kept: Mutex<VecDeque<Told>>,
}

impl Record {
    /// Tells the user of `changes`, seen after a call or job of `sessions` (each a session's
    /// name and its caller).
    pub(crate) fn tell(&self, sessions: &[(String, Option<Caller>)], changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        let session = sessions
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let session = session.as_str();
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for change in changes {
            tracing::warn!(
                "possibly planted code (it runs outside the sandbox later), session {session}: \
                 {}: {}",
                change.path,
                change.what
            );
            if kept.iter().filter(|t| t.session == session).count() >= KEPT_PER_SESSION
                && let Some(i) = kept.iter().position(|t| t.session == session)
            {
                kept.remove(i);
            }
            if kept.len() >= KEPT {
                kept.pop_front();
            }
            kept.push_back(Told {
                sessions: sessions.to_vec(),
                session: session.to_owned(),
                time,
                path: change.path.clone(),
                what: change.what.clone(),
            });
        }
    }

    /// `[{session, time, path, what}]` of what followed a session of a caller the viewer `sees`
    /// (`None`: the stdio session's user), oldest first; `session` names only those sessions
    /// (another caller's stay unnamed).
    pub(crate) fn as_json(&self, sees: impl Fn(Option<&Caller>) -> bool) -> Vec<Value> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter_map(|t| {
                let seen: Vec<&str> = t
                    .sessions
                    .iter()
                    .filter(|(_, caller)| sees(caller.as_ref()))
                    .map(|(name, _)| name.as_str())
                    .collect();
                (!seen.is_empty()).then(|| {
                    json!({"session": seen.join(", "), "time": t.time, "path": t.path, "what": t.what})
                })
            })
            .collect()
    }
}
