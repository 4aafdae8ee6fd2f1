//! Every word of the one-time escalation (docs/BEHAVIOUR.md §5, §11): the question the user
//! sees, and each way asking can end without running the command.

/// The question shown to the user. The command and the reason are the agent's text: every
/// control character (`\r`, `ESC[2K`, a newline that fakes the layout) and every bidirectional
/// override is shown escaped, so a host that renders them cannot show a different command.
pub fn escalation_question(what: &str, justification: &str) -> String {
    format!(
        "The agent asks to run this without the write sandbox, once:\n\n{}\n\nReason given: \
         {}\n\nApprove for this one command only?",
        crate::job_words::visible(what),
        crate::job_words::visible(justification)
    )
}

pub const ESCALATION_DECLINED: &str = "escalation declined by the user: the command did not run. \
Run it inside the sandbox, or ask the user to run it themselves";

pub const ESCALATION_UNSUPPORTED: &str = "escalation is not possible: this MCP client cannot ask \
the user (no elicitation support). The command did not run. Run it inside the sandbox, or ask the \
user to run it themselves";

pub const ESCALATION_OVER_HTTP: &str = "escalation is not offered over HTTP: a confined command \
can reach this endpoint itself (the token is in files it can read) and approve its own request. \
The command did not run. Run it inside the sandbox, or ask the user to run it themselves";

/// The handler's word when the question goes back as `input_required` (never shown: the
/// client gets the question instead).
pub const ESCALATION_ASKED: &str = "escalation asked: waiting for the user's answer";

pub const APPROVAL_STATE_INVALID: &str = "the approval (`requestState`) is not valid: altered, \
from an earlier run of this server, or for another command. The command did not run. Call again \
without `requestState` to ask the user";

pub const APPROVAL_STATE_EXPIRED: &str = "the approval (`requestState`) expired: the user has 5 \
minutes to answer. The command did not run. Call again without `requestState` to ask again";

pub const APPROVAL_STATE_USED: &str = "this approval (`requestState`) was already used: an approval \
runs one command once. The command did not run. Call again without `requestState` to ask again";

/// `sandbox_permissions` in the catalog of a client that cannot be asked (no elicitation, or
/// over HTTP).
pub const NO_ESCALATION_HERE: &str = "Leave unset: this client cannot ask the user, so \
\"require_escalated\" is refused here; for a write outside the sandbox, ask the user to run the \
command";

pub const JUSTIFICATION_REQUIRED: &str = "`sandbox_permissions: \"require_escalated\"` needs a `justification` saying why the command \
     must write outside the sandbox";

pub fn escalation_failed(error: &str) -> String {
    format!("escalation could not be asked ({error}): the command did not run")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command that hides itself from a host that renders control characters: it returns
    /// the cursor, erases the line, and writes a harmless one over it.
    #[test]
    fn the_approval_question_shows_control_characters_escaped() {
        let q = escalation_question(
            "rm -rf ~/work\r\u{1b}[2Kls -la\n\nReason given: read-only",
            "list\u{202e}txt.exe",
        );
        assert!(
            q.contains(r"rm -rf ~/work\r\u{1b}[2Kls -la\n\nReason given: read-only"),
            "{q}"
        );
        assert!(q.contains(r"list\u{202e}txt.exe"), "{q}");
        assert!(
            !q.contains('\r') && !q.contains('\u{1b}') && !q.contains('\u{202e}'),
            "{q}"
        );
        assert_eq!(q.matches("Reason given:").count(), 2, "{q}"); // one real, one escaped text
        assert_eq!(
            crate::job_words::visible("cargo test -- --nocapture"),
            "cargo test -- --nocapture"
        );
    }
}
