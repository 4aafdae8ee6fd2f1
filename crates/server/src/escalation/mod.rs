//! One-time escalation (docs/BEHAVIOUR.md §5): a call asks to run without the sandbox, the user decides.
//!
//! The question goes to the user through MCP elicitation. Approval covers this one call (or, for
//! a shell, the whole shell) and is never cached; the form offers no "always". When the client
//! cannot ask the user, the call is refused with a sentence that says so.

use rmcp::schemars::{self, JsonSchema};
use rmcp::service::{ElicitationError, RequestContext};
use rmcp::{RoleServer, elicit_safe};
use serde::{Deserialize, Serialize};

pub mod mrtr;
pub mod notice;

/// The user's answer. A single yes/no: there is deliberately no "always" field.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    /// Run this one command without the write sandbox?
    pub approve: bool,
}

elicit_safe!(Approval);

/// Whether the request came over HTTP. A confined command can connect to the HTTP endpoint
/// itself, with a token it reads from the token file or the host's config, open a session that
/// claims elicitation, and approve its own question: over HTTP nothing is escalated.
pub fn over_http(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.extensions.get::<http::request::Parts>().is_some()
}

/// Asks the user; `Ok(())` means approved for this one call. The error is the refusal text.
pub async fn ask(
    ctx: &RequestContext<RoleServer>,
    what: &str,
    justification: &str,
) -> Result<(), String> {
    if over_http(ctx) {
        return Err(notice::ESCALATION_OVER_HTTP.to_owned());
    }
    // A client of 2026-07-28: the question goes back as `input_required` (see `mrtr`).
    if let Some(slot) = ctx.extensions.get::<mrtr::Slot>() {
        return slot.ask(notice::escalation_question(what, justification));
    }
    match ctx
        .peer
        .elicit::<Approval>(notice::escalation_question(what, justification))
        .await
    {
        Ok(Some(Approval { approve: true })) => Ok(()),
        Ok(_) | Err(ElicitationError::UserDeclined) | Err(ElicitationError::UserCancelled) => {
            Err(notice::ESCALATION_DECLINED.to_owned())
        }
        Err(ElicitationError::CapabilityNotSupported) => {
            Err(notice::ESCALATION_UNSUPPORTED.to_owned())
        }
        Err(e) => Err(notice::escalation_failed(&e.to_string())),
    }
}

// `sandbox_permissions` of `terminal` and `shell_open`: ask the user to run without the
// sandbox, once (`RequireEscalated`, with a justification), or not. (A plain comment: a doc
// comment would be a description in every tool schema that uses it.)
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPermissions {
    UseDefault,
    RequireEscalated,
}
