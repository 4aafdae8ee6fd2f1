//! Every word the network policy says (docs/BEHAVIOUR.md §13): error 2010 in a result, the
//! proxy's answers, the user's questions, and the few words the log and the web view give a
//! refusal.

/// Error code: the command ran and a connection was refused by the network policy
/// (docs/BEHAVIOUR.md §13).
pub const NETWORK_REFUSED: u32 = 2010;

/// The proxy's answer to a request without the call's credentials (407).
pub const PROXY_NO_CREDENTIALS: &str = "agentty's proxy: this request has no valid credentials. \
Confined commands get them in HTTP_PROXY/HTTPS_PROXY; a command that changed those variables \
cannot use the proxy.\n";

/// The proxy's answer to a request with credentials of another caller's call, or on a
/// connection not shown to be of their caller (407).
pub const PROXY_OTHERS_CREDENTIALS: &str = "agentty's proxy: these credentials are not this \
command's; a command may use only those in its own HTTP_PROXY/HTTPS_PROXY, on a connection of \
its own.\n";

/// The proxy's answer when a caller has as many requests open through it as it may (503).
pub const PROXY_TOO_MANY_OPEN: &str = "agentty's proxy: this caller has as many connections \
open through the proxy as it may; close some (a tunnel ends when its command closes it).\n";

/// The rule of a connection the user approved, in the log and the web view.
pub const APPROVED_ONCE: &str = "approved by the user for this command";
pub const APPROVED_FOR_SESSION: &str = "approved by the user for this session";

/// The rule of a unix socket reached with loopback closed, in the log and the web view.
pub const UNIX_OWN: &str = "a unix socket a confined command listens on";

/// A unix datagram socket, refused with loopback closed, as a refusal names it.
pub const UNIX_DATAGRAM: &str = "unix: a datagram socket (syslog's and journald's kind)";

/// The sockets the filter refuses, as a refusal names them.
pub const SOCKET_UDP: &str = "a UDP socket (a DNS lookup of the program's own, most often)";
pub const SOCKET_ICMP: &str = "an ICMP socket (ping, most often)";
pub const SOCKET_ICMPV6: &str = "an ICMPv6 socket (ping, most often)";
pub const SOCKET_RAW: &str = "a raw IP socket (ping, most often)";
pub const SOCKET_OTHER_IP: &str = "an IP socket that is not plain TCP";
pub const SOCKET_PACKET: &str = "a packet socket";
pub const SOCKET_OTHER_FAMILY: &str = "a socket of another network family";

/// Refusals named in one result at most (the log has them all).
const REFUSALS_SAID: usize = 4;

/// What was refused: a host and port, or a socket.
fn network_subject(refusal: &super::Refusal) -> String {
    match &refusal.why {
        super::Why::Socket { what } => (*what).to_owned(),
        _ => refusal.target.to_string(),
    }
}

/// Why a connection was refused, in a few words: the log line, the web view, the list in a
/// result.
pub fn network_why_short(why: &super::Why) -> String {
    use super::{Asked, Why};
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
        Why::UnixService => {
            "a service of this machine on a unix socket, and loopback is closed".to_owned()
        }
        Why::LocalDns => "DNS through a resolver on loopback".to_owned(),
        Why::Socket { .. } => "only plain TCP is allowed".to_owned(),
        Why::OthersCredentials => "with another caller's proxy credentials".to_owned(),
        Why::ProxyItself => "agentty's proxy itself".to_owned(),
    }
}

/// The sentence that lets one refused connection through, or says what to do instead.
fn network_remedy(refusal: &super::Refusal) -> String {
    use super::{Asked, Why};
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
            let address = super::Target {
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
        Why::UnixService => "The user can open loopback, and with it the unix sockets of this \
             machine's services, with loopback = true in the [sandbox] section of agentty's \
             config."
            .to_owned(),
        Why::LocalDns | Why::Socket { what: SOCKET_UDP } => {
            "Names are resolved by agentty's proxy: a program that looks names up itself \
             fails here (\"Could not resolve host\", ENOTFOUND, EAI_AGAIN); use its proxy \
             support (HTTPS_PROXY is set)."
                .to_owned()
        }
        Why::OthersCredentials => "Use the proxy credentials in this command's own HTTPS_PROXY \
             and HTTP_PROXY."
            .to_owned(),
        Why::ProxyItself => {
            "Go through agentty's proxy once: ask it for the host itself.".to_owned()
        }
        Why::Socket { .. } => "Only plain TCP leaves confined commands (to listed hosts \
             through HTTPS_PROXY); to see whether a host answers, use curl through the proxy, \
             not ping."
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
pub fn network_refused(refusals: &[super::Refusal]) -> String {
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
    let all_declined = refusals.iter().all(|r| r.why == super::Why::Declined);
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
pub fn network_refused_body(target: &super::Target, why: &super::Why) -> String {
    let refusal = super::Refusal {
        target: target.clone(),
        why: why.clone(),
    };
    format!(
        "agentty refused {target} (error {NETWORK_REFUSED}): {}. {}\n",
        network_why_short(why),
        network_remedy(&refusal)
    )
}

/// What failed on the way to an allowed host, in a few words: the log line, the note.
pub fn unreach_words(why: super::Unreach) -> String {
    match why {
        super::Unreach::Unresolved => "the name does not resolve here".to_owned(),
        super::Unreach::Connect(kind) => format!("connecting failed: {kind}"),
    }
}

/// The note of a result whose command was let through to hosts agentty's proxy could not
/// reach: the sandbox did not refuse them, so allowing them again would change nothing.
pub fn network_unreached(unreached: &[super::Unreached]) -> String {
    let said: Vec<String> = unreached
        .iter()
        .take(REFUSALS_SAID)
        .map(|u| format!("{} ({})", u.target, unreach_words(u.why)))
        .collect();
    let more = match unreached.len().saturating_sub(REFUSALS_SAID) {
        0 => String::new(),
        n => format!(" and {n} more (the server's log has them)"),
    };
    format!(
        "[network] allowed, but agentty's proxy could not reach {}{more}. Not a sandbox \
         refusal: allowing it changes nothing.",
        said.join("; ")
    )
}

pub fn proxy_unresolved(target: &super::Target) -> String {
    format!("agentty's proxy could not resolve {}.\n", target.host)
}

pub fn proxy_unreachable(target: &super::Target) -> String {
    format!("agentty's proxy could not connect to {target}.\n")
}

/// The question the user answers while a command waits at the proxy (network `ask`).
pub fn network_question(what: &str, target: &super::Target) -> String {
    format!(
        "A command the agent runs wants to connect to {target}, which is not on agentty's \
         network allowlist:\n\n{}\n\nAllow it? once: this command only; session: every command \
         of this session; deny: refuse it.",
        crate::job_words::visible(what)
    )
}

/// The question that goes back with a 2026-07-28 client's result: the command ran, and the
/// hosts it was refused may be allowed for a run again.
pub fn network_question_after(what: &str, targets: &[super::Target]) -> String {
    let listed: Vec<String> = targets.iter().map(ToString::to_string).collect();
    format!(
        "A command the agent ran was refused {}, not on agentty's network allowlist:\n\n{}\n\n\
         Allow and run the command again? once: for that run only; session: every command of \
         this session; deny: keep the refusal.",
        listed.join(", "),
        crate::job_words::visible(what)
    )
}

/// The 2010 line when the user declined the hosts a 2026-07-28 client's command was refused.
pub fn network_declined_after(targets: &[super::Target]) -> String {
    let listed: Vec<String> = targets.iter().map(ToString::to_string).collect();
    format!(
        "[error {NETWORK_REFUSED}] network: the user declined {}: the command was not run again. \
         Do not try these hosts again unless the user says so.",
        listed.join(", ")
    )
}
