//! The one-time escalation for clients of protocol 2026-07-28, which take no server-to-client
//! request: the first call answers `input_required` with the same yes/no question as an
//! elicitation and a `requestState` sealed with a key of this server run (HMAC, rmcp's
//! `RequestStateCodec`), bound to the exact call (tool and arguments) and the session, with a
//! short life. The client's retry carries the user's answer and the state back; the state opens
//! only for that same call, once: its nonce is struck out when it is redeemed.
//!
//! The handler asks through [`Slot`] (in the request's extensions) as it would elicit; the
//! server's `call_tool` turns a question left in the slot into the `input_required` answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ElicitRequest, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, RequestStateCodec,
    RequestStateError, SealOptions,
};
use serde_json::Value;

use super::Approval;
use super::notice;

/// How long the user has to answer.
pub const STATE_TTL: Duration = Duration::from_secs(300);
/// Questions waiting for an answer at most (older ones are forgotten first).
const OUTSTANDING_MAX: usize = 64;
/// A `requestState` longer than this is not one of ours.
const STATE_MAX_CHARS: usize = 4096;
/// The key of the answer in `inputRequests` / `inputResponses`.
const ANSWER: &str = "approve";
/// What a network question's state carries starts with this (an escalation's carries nothing,
/// a secret request's its id).
const NETWORK_EXTRA: &str = "network\n";

/// The sealing key of this server run and the questions not yet redeemed.
pub struct Sealer {
    codec: RequestStateCodec,
    ttl: Duration,
    outstanding: Mutex<HashMap<String, Instant>>,
}

impl Sealer {
    /// A sealer with a fresh key: states of an earlier run never open.
    pub fn new(ttl: Duration) -> Self {
        // 256 random bits: the codec's minimum length, met by construction.
        let mut key = [0u8; RequestStateCodec::MIN_KEY_LENGTH];
        agentty_core::random::fill(&mut key);
        let codec = RequestStateCodec::new_unchecked(key.to_vec());
        key.fill(0);
        Sealer {
            codec,
            ttl,
            outstanding: Mutex::default(),
        }
    }

    /// Seals a question for the call `binding`, carrying `extra` (a secret request's id) back.
    fn seal(&self, binding: &str, extra: &str) -> String {
        let nonce = agentty_core::random::hex(16);
        if let Ok(mut outstanding) = self.outstanding.lock() {
            let now = Instant::now();
            outstanding.retain(|_, until| *until > now);
            if outstanding.len() >= OUTSTANDING_MAX
                && let Some(oldest) = outstanding
                    .iter()
                    .min_by_key(|(_, until)| **until)
                    .map(|(n, _)| n.clone())
            {
                outstanding.remove(&oldest);
            }
            outstanding.insert(nonce.clone(), now + self.ttl);
        }
        let options = SealOptions::new()
            .associated_data(binding.as_bytes())
            .ttl(self.ttl);
        self.codec
            .seal_with(format!("{nonce}\n{extra}").as_bytes(), &options)
    }

    /// Opens `state` for the call `binding`, once: the `extra` it carries. The error is the
    /// refusal text.
    fn redeem(&self, state: &str, binding: &str) -> Result<String, String> {
        if state.len() > STATE_MAX_CHARS {
            return Err(notice::APPROVAL_STATE_INVALID.to_owned());
        }
        let payload = match self.codec.open_with(state, binding.as_bytes()) {
            Ok(payload) => String::from_utf8_lossy(&payload).into_owned(),
            Err(RequestStateError::Expired) => {
                return Err(notice::APPROVAL_STATE_EXPIRED.to_owned());
            }
            Err(_) => return Err(notice::APPROVAL_STATE_INVALID.to_owned()),
        };
        let (nonce, extra) = payload.split_once('\n').unwrap_or((&payload, ""));
        let fresh = self
            .outstanding
            .lock()
            .is_ok_and(|mut outstanding| outstanding.remove(nonce).is_some());
        if fresh {
            Ok(extra.to_owned())
        } else {
            Err(notice::APPROVAL_STATE_USED.to_owned())
        }
    }
}

/// What a call of a 2026-07-28 client carries to the escalation, and what comes back from it.
#[derive(Clone)]
pub struct Slot(Arc<Mutex<SlotState>>);

struct SlotState {
    sealer: Arc<Sealer>,
    /// The session and the exact call: what a state is bound to.
    binding: String,
    /// The client said, in this request, that it can show a form.
    can_ask: bool,
    /// ... and that it can open a page for the user (URL mode).
    can_open: bool,
    /// A retry's state, opened (what it carried), and its answer; or why it did not open.
    retry: Option<Result<(String, Option<Value>), String>>,
    /// The question to send back instead of a result.
    question: Option<InputRequiredResult>,
}

impl Slot {
    /// The slot of `request` in `session`: a retry's state and answer are checked now, so a
    /// state is used up even if the call then goes no further.
    /// `meta`: the request's `_meta` (rmcp moves it into the request context).
    pub fn for_call(
        sealer: Arc<Sealer>,
        session: &str,
        request: &CallToolRequestParams,
        meta: &rmcp::model::RequestMetaObject,
    ) -> Self {
        let binding = binding(session, request);
        let elicitation = meta.client_capabilities().and_then(|c| c.elicitation);
        let can_ask = elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        let can_open = elicitation.as_ref().is_some_and(|e| e.url.is_some());
        let retry = request.request_state.as_deref().map(|state| {
            let extra = sealer.redeem(state, &binding)?;
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(ANSWER))
                .cloned();
            Ok((extra, answer))
        });
        Slot(Arc::new(Mutex::new(SlotState {
            sealer,
            binding,
            can_ask,
            can_open,
            retry,
            question: None,
        })))
    }

    /// The escalation's answer for this call: a retry's checked answer; else the question is
    /// left for the reply (`Err` with nothing to show: the caller answers `input_required`).
    pub fn ask(&self, question: String) -> Result<(), String> {
        let Ok(mut slot) = self.0.lock() else {
            return Err(notice::escalation_failed("internal lock"));
        };
        if let Some(retry) = slot.retry.clone() {
            let (_, answer) = retry?;
            return if approved(answer.as_ref()) {
                Ok(())
            } else {
                Err(notice::ESCALATION_DECLINED.to_owned())
            };
        }
        if !slot.can_ask {
            return Err(notice::ESCALATION_UNSUPPORTED.to_owned());
        }
        let schema = ElicitationSchema::from_type::<Approval>()
            .map_err(|e| notice::escalation_failed(&e.to_string()))?;
        let request = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question,
            requested_schema: schema,
        });
        let requests: InputRequests =
            [(ANSWER.to_owned(), InputRequest::Elicitation(request))].into();
        let state = slot.sealer.seal(&slot.binding, "");
        slot.question = Some(InputRequiredResult::new(Some(requests), Some(state)));
        Err(notice::ESCALATION_ASKED.to_owned())
    }

    /// A retry's answer to a page the user was asked to open: the id it was asked for, and
    /// whether the user accepted. `None` when this call is no retry.
    pub fn opened(&self) -> Option<Result<(String, bool), String>> {
        let slot = self.0.lock().ok()?;
        let retry = slot.retry.clone()?;
        Some(retry.map(|(extra, answer)| {
            let accepted = answer
                .and_then(|a| serde_json::from_value::<ElicitationAction>(a["action"].clone()).ok())
                .is_some_and(|a| a == ElicitationAction::Accept);
            (extra, accepted)
        }))
    }

    /// Whether the client said, in this request, that it can show the user a form.
    pub fn can_ask(&self) -> bool {
        self.0.lock().is_ok_and(|slot| slot.can_ask)
    }

    /// Leaves a question about hosts a command was refused (network `ask`): the user's
    /// decision comes back with the retry, with `extra` (see [`Self::network_answer`]).
    pub fn ask_network(&self, question: String, extra: &str) -> Result<(), String> {
        let Ok(mut slot) = self.0.lock() else {
            return Err(notice::escalation_failed("internal lock"));
        };
        let schema = ElicitationSchema::from_type::<crate::network::ask::NetApproval>()
            .map_err(|e| notice::escalation_failed(&e.to_string()))?;
        let request = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question,
            requested_schema: schema,
        });
        let requests: InputRequests =
            [(ANSWER.to_owned(), InputRequest::Elicitation(request))].into();
        let state = slot
            .sealer
            .seal(&slot.binding, &format!("{NETWORK_EXTRA}{extra}"));
        slot.question = Some(InputRequiredResult::new(Some(requests), Some(state)));
        Ok(())
    }

    /// A retry's answer to a network question: what it carried back (after [`NETWORK_EXTRA`])
    /// and the user's decision (a decline or cancel is a deny). `None` when this call is no
    /// such retry, or its state did not open (the call then runs as a new one, under the
    /// list).
    pub fn network_answer(&self) -> Option<(String, crate::network::Choice)> {
        let slot = self.0.lock().ok()?;
        let Some(Ok((extra, answer))) = slot.retry.clone() else {
            return None;
        };
        let carried = extra.strip_prefix(NETWORK_EXTRA)?.to_owned();
        let answer = answer.unwrap_or(Value::Null);
        let accepted = serde_json::from_value::<ElicitationAction>(answer["action"].clone())
            .is_ok_and(|a| a == ElicitationAction::Accept);
        let decision = serde_json::from_value::<crate::network::ask::Decision>(
            answer["content"]["decision"].clone(),
        );
        let choice = match decision {
            Ok(decision) if accepted => decision.into(),
            _ => crate::network::Choice::Deny,
        };
        Some((carried, choice))
    }

    /// Whether the client can open a page for the user (URL-mode elicitation).
    pub fn can_open(&self) -> bool {
        self.0.lock().is_ok_and(|slot| slot.can_open)
    }

    /// Leaves a question asking the user to open `url`, for request `id` (carried back).
    pub fn ask_to_open(&self, message: String, url: &str, id: &str) {
        let Ok(mut slot) = self.0.lock() else { return };
        let request = ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url: url.to_owned(),
            elicitation_id: id.to_owned(),
        });
        let requests: InputRequests =
            [(ANSWER.to_owned(), InputRequest::Elicitation(request))].into();
        let state = slot.sealer.seal(&slot.binding, id);
        slot.question = Some(InputRequiredResult::new(Some(requests), Some(state)));
    }

    /// The question to answer the call with, if the escalation left one.
    pub fn take_question(&self) -> Option<InputRequiredResult> {
        self.0.lock().ok()?.question.take()
    }
}

/// Whether the client's answer is the user's "yes".
fn approved(answer: Option<&Value>) -> bool {
    let Some(answer) = answer else { return false };
    let accepted = serde_json::from_value::<ElicitationAction>(answer["action"].clone())
        .is_ok_and(|a| a == ElicitationAction::Accept);
    accepted && answer["content"]["approve"] == Value::Bool(true)
}

/// The session, the tool and its arguments, keys sorted: a state opens only for this call.
fn binding(session: &str, request: &CallToolRequestParams) -> String {
    let arguments = request
        .arguments
        .as_ref()
        .map(|a| canonical(&Value::Object(a.clone())))
        .unwrap_or_default();
    format!(
        "agentty-escalation\n{session}\n{}\n{arguments}",
        request.name
    )
}

fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(args: Value) -> CallToolRequestParams {
        let Value::Object(args) = args else { panic!() };
        CallToolRequestParams::new("terminal").with_arguments(args)
    }

    #[test]
    fn a_state_opens_once_only_for_its_call_and_session_and_not_after_its_life() {
        let sealer = Sealer::new(STATE_TTL);
        let one =
            call(json!({"command": "make install", "sandbox_permissions": "require_escalated"}));
        let state = sealer.seal(&binding("s1", &one), "");
        // Keys in another order are the same call; another command, session or key is not.
        let same =
            call(json!({"sandbox_permissions": "require_escalated", "command": "make install"}));
        let other =
            call(json!({"command": "rm -rf /", "sandbox_permissions": "require_escalated"}));
        assert_eq!(
            sealer.redeem(&state, &binding("s2", &one)),
            Err(notice::APPROVAL_STATE_INVALID.into())
        );
        assert_eq!(
            sealer.redeem(&state, &binding("s1", &other)),
            Err(notice::APPROVAL_STATE_INVALID.into())
        );
        let next_run = Sealer::new(STATE_TTL);
        assert_eq!(
            next_run.redeem(&state, &binding("s1", &one)),
            Err(notice::APPROVAL_STATE_INVALID.into())
        );
        assert_eq!(
            sealer.redeem(&state, &binding("s1", &same)),
            Ok(String::new())
        );
        assert_eq!(
            sealer.redeem(&state, &binding("s1", &one)),
            Err(notice::APPROVAL_STATE_USED.into())
        );

        let short = Sealer::new(Duration::from_millis(1));
        let state = short.seal(&binding("s1", &one), "");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            short.redeem(&state, &binding("s1", &one)),
            Err(notice::APPROVAL_STATE_EXPIRED.into())
        );
        assert_eq!(
            sealer.redeem("garbage", "x"),
            Err(notice::APPROVAL_STATE_INVALID.into())
        );
        assert_eq!(
            sealer.redeem(&"a".repeat(100_000), "x"),
            Err(notice::APPROVAL_STATE_INVALID.into())
        );
    }

    #[test]
    fn only_an_accepted_yes_approves() {
        assert!(approved(Some(
            &json!({"action": "accept", "content": {"approve": true}})
        )));
        for no in [
            json!({"action": "accept", "content": {"approve": false}}),
            json!({"action": "decline"}),
            json!({"action": "cancel", "content": {"approve": true}}),
            json!({"action": "accept", "content": {"approve": "true"}}),
            json!({"action": "accept"}),
            json!("yes"),
        ] {
            assert!(!approved(Some(&no)), "{no}");
        }
        assert!(!approved(None));
    }
}
