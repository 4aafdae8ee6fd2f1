//! Asking the user about a host that is not on the allowlist (network `ask`,
//! docs/BEHAVIOUR.md §13), by MCP elicitation while the command waits at the proxy: allow it
//! for this command, for the whole session, or not. A second connection to the same host
//! while the question is open waits for the same answer. No answer within [`ASK_WAIT`] is a
//! refusal. (A 2026-07-28 client, which takes no server-to-client request, is asked with the
//! call's result instead: `escalation/mrtr.rs`.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::elicit_safe;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

use super::{CallNet, Choice, Egress, Target};

/// How long a connection waits at the proxy for the user's answer.
const ASK_WAIT: Duration = Duration::from_secs(120);

/// The user's answer about one host.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Allow it for this command only.
    Once,
    /// Allow it for every command of this session.
    Session,
    /// Refuse it.
    Deny,
}

/// The form the user answers: one choice of [`Decision`]'s names. (A string with its `enum`
/// rather than the enum itself: schemars writes an enum as a reference to a definition, which
/// an elicitation's flat schema does not take.)
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct NetApproval {
    /// once: this command only; session: every command of this session; deny: refuse it.
    #[schemars(extend("enum" = ["once", "session", "deny"]))]
    pub decision: String,
}

impl NetApproval {
    /// The decision it carries; anything else is a deny.
    pub fn decision(&self) -> Decision {
        serde_json::from_value(serde_json::Value::String(self.decision.clone()))
            .unwrap_or(Decision::Deny)
    }
}

elicit_safe!(NetApproval);

impl From<Decision> for Choice {
    fn from(d: Decision) -> Choice {
        match d {
            Decision::Once => Choice::Once,
            Decision::Session => Choice::Session,
            Decision::Deny => Choice::Deny,
        }
    }
}

/// Where an open question's answer comes: `Some(answer)` once asked, the answer `None` when
/// none came.
type Answer = tokio::sync::watch::Receiver<Option<Option<Choice>>>;

/// Questions open now, by session and host.
#[derive(Default)]
pub(crate) struct Pending(Mutex<HashMap<(String, Target), Answer>>);

impl Egress {
    /// Asks the user, through `call`'s client, whether its command may reach `target`; `None`
    /// when no answer came (or the client could not be asked after all).
    pub(super) async fn ask(&self, call: &Arc<CallNet>, target: &Target) -> Option<Choice> {
        let peer = call.asker.clone()?;
        let key = (call.session.clone(), target.clone());
        let mut answer = {
            let mut open = self.asking.0.lock().unwrap_or_else(PoisonError::into_inner);
            match open.get(&key) {
                Some(rx) => rx.clone(),
                None => {
                    let (tx, rx) = tokio::sync::watch::channel(None);
                    open.insert(key.clone(), rx.clone());
                    let question = crate::network::notice::network_question(&call.what(), target);
                    tokio::spawn(async move {
                        let asked =
                            tokio::time::timeout(ASK_WAIT, peer.elicit::<NetApproval>(question))
                                .await;
                        let choice = match asked {
                            Ok(Ok(Some(approval))) => Some(approval.decision().into()),
                            // Declined or cancelled: a no.
                            Ok(Err(rmcp::service::ElicitationError::UserDeclined))
                            | Ok(Err(rmcp::service::ElicitationError::UserCancelled)) => {
                                Some(Choice::Deny)
                            }
                            _ => None,
                        };
                        let _ = tx.send(Some(choice));
                    });
                    rx
                }
            }
        };
        let choice = loop {
            if let Some(choice) = *answer.borrow() {
                break choice;
            }
            if answer.changed().await.is_err() {
                break None;
            }
        };
        self.asking
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        choice
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_form_is_a_valid_elicitation_schema() {
        let schema = rmcp::model::ElicitationSchema::from_type::<super::NetApproval>();
        let schema = schema.unwrap();
        let json = serde_json::to_value(&schema).unwrap();
        assert_eq!(
            json["properties"]["decision"]["enum"],
            serde_json::json!(["once", "session", "deny"]),
            "{json}"
        );
    }
}
