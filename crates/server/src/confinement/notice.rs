//! Every word said about the sandbox in a result, whichever tool ran the command
//! (docs/BEHAVIOUR.md §5, §13): its error codes, the 2008, 2009 and 2010 sentences, how to run
//! a refused command again, the additions to the `[sandbox]` line, and what the network's proxy
//! and questions say.

use std::path::Path;

/// The sandbox line when the workspace itself is most of the system.
pub fn broad_root(line: &str, root: &Path) -> String {
    format!(
        "{line}; but the workspace is {}, so writes are allowed almost everywhere (start \
         agentty with --workspace set to the project)",
        root.display()
    )
}

pub fn git_dirs_writable(line: &str, dirs: &[std::path::PathBuf]) -> String {
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!(
        "{line}; also writable, for git commits: {} (this checkout's git dir)",
        dirs.join(", ")
    )
}

/// Changes to what runs code later listed in one warning at most (the user has them all in
/// the server's log).
const CHANGES_SAID: usize = 16;

/// What a command changed that runs outside the sandbox later (see `planted`), for the model.
pub(crate) fn planted(changes: &[super::planted::Change]) -> String {
    let mut listed: Vec<String> = changes
        .iter()
        .take(CHANGES_SAID)
        .map(|c| format!("{} ({})", c.path, c.what))
        .collect();
    if changes.len() > CHANGES_SAID {
        listed.push(format!("and {} more", changes.len() - CHANGES_SAID));
    }
    format!(
        "[warning] changed since the last command: {}. These run outside the sandbox later: git \
         runs hooks and what its config names (core.fsmonitor, core.hooksPath, `!` aliases) at \
         the user's next git command in this repository; direnv, editors, agents and shells \
         run .envrc, project settings and rc files. The user has been told (server log, web \
         view); say what this was for, or undo it if it was not meant",
        listed.join("; ")
    )
}

/// Names of protected paths, `max` at most.
fn some_names(names: &[String], max: usize) -> String {
    let mut said = names
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > max {
        said.push_str(&format!(" and {} more", names.len() - max));
    }
    said
}

/// The `[sandbox]` line's addition where the protected paths are read-only.
pub fn protected_read_only(names: &[String], max: usize) -> String {
    format!(
        "; read-only (they run code later): {}",
        some_names(names, max)
    )
}

/// The `[sandbox]` line's addition where no namespace could make them read-only.
pub fn protected_watched(names: &[String], max: usize, why: &str) -> String {
    format!(
        "; watched only (they run code later; no mount namespace: {why}): {}",
        some_names(names, max)
    )
}

/// The `[sandbox]` line's addition for what `writable_protected` opened.
pub fn protected_opened(names: &[String]) -> String {
    format!("; writable by configuration: {}", names.join(", "))
}

/// The 2008 sentence of a write refused because the path runs code later.
pub fn protected_refused(mode: agentty_sandbox::Mode, name: &str) -> String {
    format!(
        "[sandbox] {mode}: {name} is read-only to confined commands: it runs code outside the \
         sandbox later (git hooks and config, rc files, .envrc, editor and agent settings). \
         The user can leave it writable with `writable_protected = [\"{name}\"]` in the \
         [sandbox] section of agentty's config (or --writable-protected {name})."
    )
}

pub fn escalated_line(mode: agentty_sandbox::Mode) -> String {
    format!("[sandbox] {mode}: not confined for this call (escalation approved by the user)")
}

pub fn sandbox_failed(reason: &str) -> String {
    let code = crate::confinement::notice::SANDBOX_FAILED;
    format!("[error {code}] {reason}. The command did not run; do not change the command")
}

/// How a command the sandbox refused a write can be run again without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// `terminal` (foreground or background) takes `sandbox_permissions` per call.
    Terminal,
    /// A shell is confined for its whole life: escalation is asked when it is opened.
    Shell,
    /// The client cannot ask the user (no elicitation): escalation would be refused.
    Impossible,
}

pub fn denial_retry(retry: Retry) -> &'static str {
    match retry {
        Retry::Terminal => {
            "If the write is needed, retry with sandbox_permissions: \"require_escalated\" and a \
             justification."
        }
        Retry::Shell => {
            "If the write is needed, run the command with terminal, or in a new shell_open, with \
             sandbox_permissions: \"require_escalated\" and a justification."
        }
        Retry::Impossible => {
            "This MCP client cannot ask the user to lift the sandbox (no elicitation support): if \
             the write is needed, ask the user to run the command, or to add the directory with \
             --add-dir."
        }
    }
}

pub fn sandbox_denied(sentence: &str) -> String {
    format!(
        "[error {}] {sentence}",
        crate::confinement::notice::SANDBOX_DENIED
    )
}

/// Error code: the command ran and a write was refused by the sandbox.
pub const SANDBOX_DENIED: u32 = 2008;

/// Error code: the sandbox failed to start; the command did not run.
pub const SANDBOX_FAILED: u32 = 2009;

/// The 2009 reason when the supervisor of connections could not start.
pub fn supervisor_failed(why: &str) -> String {
    format!(
        "the sandbox failed to start: the network supervisor (seccomp user notification) could \
         not start: {why}; network = \"on\" or \"off\" in the [sandbox] section needs none"
    )
}

/// Error code: the command ran and a connection was refused by the network policy
/// (docs/BEHAVIOUR.md §13).
pub const NETWORK_REFUSED: u32 = 2010;

/// The proxy's answer to a request without the call's credentials (407).
pub const PROXY_NO_CREDENTIALS: &str = "agentty's proxy: this request has no valid credentials. \
Confined commands get them in HTTP_PROXY/HTTPS_PROXY; a command that changed those variables \
cannot use the proxy.\n";

/// The rule of a connection the user approved, in the log and the web view.
pub const APPROVED_ONCE: &str = "approved by the user for this command";
pub const APPROVED_FOR_SESSION: &str = "approved by the user for this session";

/// Refusals named in one result at most (the log has them all).
const REFUSALS_SAID: usize = 4;

/// What was refused: a host and port, or a socket.
fn network_subject(refusal: &crate::network::Refusal) -> String {
    match &refusal.why {
        crate::network::Why::Socket { what } => (*what).to_owned(),
        _ => refusal.target.to_string(),
    }
}

/// Why a connection was refused, in a few words: the log line, the web view, the list in a
/// result.
pub fn network_why_short(why: &crate::network::Why) -> String {
    use crate::network::{Asked, Why};
    match why {
        Why::NotListed {
            asked: Asked::Never | Asked::Later,
        } => "not on the allowlist".to_owned(),
        Why::NotListed {
            asked: Asked::CannotAsk,
        } => "not on the allowlist, and this MCP client cannot ask the user".to_owned(),
        Why::NotListed {
            asked: Asked::Unanswered,
        } => "not on the allowlist, and the user did not answer".to_owned(),
        Why::Declined => "the user declined it".to_owned(),
        Why::Inside { kind, ip } => format!("it resolves to {} ({ip})", kind.word()),
        Why::Direct => "a direct connection, not through agentty's proxy".to_owned(),
        Why::LoopbackClosed => "loopback is closed".to_owned(),
        Why::LocalDns => "DNS through a resolver on loopback".to_owned(),
        Why::Socket { .. } => "only plain TCP is allowed".to_owned(),
    }
}

/// The sentence that lets one refused connection through, or says what to do instead.
fn network_remedy(refusal: &crate::network::Refusal) -> String {
    use crate::network::{Asked, Why};
    let allow = |what: &str| {
        format!(
            "the user can allow {what} with allow_net = [\"{what}\"] in the [sandbox] section \
             of agentty's config (or --allow-net {what})"
        )
    };
    let target = refusal.target.to_string();
    match &refusal.why {
        Why::NotListed {
            asked: Asked::Never,
        } => format!(
            "{}, or have such hosts asked with network = \"ask\".",
            capital(&allow(&target))
        ),
        Why::NotListed { .. } => format!("{}.", capital(&allow(&target))),
        Why::Declined => "Do not try it again unless the user says so.".to_owned(),
        Why::Inside { ip, .. } => {
            let address = crate::network::Target {
                host: ip.to_string(),
                port: refusal.target.port,
            };
            format!(
                "A listed name may not lead to inside addresses (loopback, private, link-local, \
                 metadata, this machine's); if this one is meant, {}.",
                allow(&address.to_string())
            )
        }
        Why::Direct => format!(
            "Confined commands reach other hosts through agentty's proxy (HTTPS_PROXY and \
             HTTP_PROXY are set; for ssh, -o ProxyCommand='agentty proxy-connect %h %p'); for \
             a direct connection {}.",
            allow(&target)
        ),
        Why::LoopbackClosed => "The user can open loopback with loopback = true in the \
             [sandbox] section of agentty's config."
            .to_owned(),
        Why::LocalDns | Why::Socket { .. } => "Names are resolved by agentty's proxy: a \
             program that looks names up itself fails here (\"Could not resolve host\", \
             ENOTFOUND, EAI_AGAIN); use its proxy support (HTTPS_PROXY is set)."
            .to_owned(),
    }
}

fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The result's line for the connections a command was refused (error 2010), whatever it
/// printed and whatever its exit code.
pub fn network_refused(refusals: &[crate::network::Refusal]) -> String {
    let code = NETWORK_REFUSED;
    let said: Vec<String> = refusals
        .iter()
        .take(REFUSALS_SAID)
        .map(|r| format!("{} ({})", network_subject(r), network_why_short(&r.why)))
        .collect();
    let mut more = String::new();
    if refusals.len() > REFUSALS_SAID {
        more = format!(
            " and {} more (the server's log has them)",
            refusals.len() - REFUSALS_SAID
        );
    }
    // One remedy per kind of refusal (the first of each), in order.
    let mut remedies: Vec<String> = Vec::new();
    for refusal in refusals.iter().take(REFUSALS_SAID) {
        let remedy = network_remedy(refusal);
        if !remedies.contains(&remedy) {
            remedies.push(remedy);
        }
    }
    let all_declined = refusals
        .iter()
        .all(|r| r.why == crate::network::Why::Declined);
    let off = if all_declined {
        ""
    } else {
        " (network = \"on\" in the [sandbox] section turns the filter off.)"
    };
    format!(
        "[error {code}] network: the sandbox refused {}{more}. {}{off}",
        said.join("; "),
        remedies.join(" ")
    )
}

/// The body of the proxy's 403: what a program shows of it (`curl -v`, a package manager's
/// error).
pub fn network_refused_body(target: &crate::network::Target, why: &crate::network::Why) -> String {
    let refusal = crate::network::Refusal {
        target: target.clone(),
        why: why.clone(),
    };
    format!(
        "agentty refused {target} (error {NETWORK_REFUSED}): {}. {}\n",
        network_why_short(why),
        network_remedy(&refusal)
    )
}

pub fn proxy_unresolved(target: &crate::network::Target) -> String {
    format!("agentty's proxy could not resolve {}.\n", target.host)
}

pub fn proxy_unreachable(target: &crate::network::Target) -> String {
    format!("agentty's proxy could not connect to {target}.\n")
}

/// The question the user answers while a command waits at the proxy (network `ask`).
pub fn network_question(what: &str, target: &crate::network::Target) -> String {
    format!(
        "A command the agent runs wants to connect to {target}, which is not on agentty's \
         network allowlist:\n\n{}\n\nAllow it? once: this command only; session: every command \
         of this session; deny: refuse it.",
        crate::escalation::notice::visible(what)
    )
}

/// The question that goes back with a 2026-07-28 client's result: the command ran, and the
/// hosts it was refused may be allowed for a run again.
pub fn network_question_after(what: &str, targets: &[crate::network::Target]) -> String {
    let listed: Vec<String> = targets.iter().map(ToString::to_string).collect();
    format!(
        "A command the agent ran was refused {}, not on agentty's network allowlist:\n\n{}\n\n\
         Allow and run the command again? once: for that run only; session: every command of \
         this session; deny: keep the refusal.",
        listed.join(", "),
        crate::escalation::notice::visible(what)
    )
}

/// The 2010 line when the user declined the hosts a 2026-07-28 client's command was refused.
pub fn network_declined_after(targets: &[crate::network::Target]) -> String {
    let listed: Vec<String> = targets.iter().map(ToString::to_string).collect();
    format!(
        "[error {NETWORK_REFUSED}] network: the user declined {}: the command was not run again. \
         Do not try these hosts again unless the user says so.",
        listed.join(", ")
    )
}
