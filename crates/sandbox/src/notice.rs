//! Every sentence this crate shows to a model or a user, in one place.
//!
//! One module per family of wording (STYLE: one source of truth per fact) so that the distinct
//! sentences stay distinct: "disabled by configuration" and "no sandbox backend on this platform"
//! point to different fixes, and a reviewer can read them side by side here.

use std::fmt::Write as _;

use crate::denial::Denial;
use crate::enforcement::{Enforcement, NetEnforcement, NetHold, NotEnforcedWhy, PartialWhy, State};
use crate::mode::Mode;
use crate::probe::{ProbeOutcome, ProbeReport};

pub const DISABLED_BY_CONFIG: &str =
    "not confined: disabled by configuration (sandbox.terminal = false)";
pub const NO_BACKEND: &str = "not confined: no sandbox backend on this platform";
pub const KERNEL_LACKS_LANDLOCK: &str = "not confined: this kernel does not offer Landlock";
pub const FULL_ACCESS: &str = "danger-full-access: writes are not confined";
/// A spawn refused because its caller's filters hold the most listeners the network supervisor
/// keeps for one caller (`net/closer.rs` `OWNER_LISTENERS_MAX`).
pub const LISTENERS_FULL: &str =
    "too many of this caller's commands are supervised at once: let some end, then try again";

const PREFIX: &str = "[sandbox]";

fn partial_why(why: PartialWhy) -> &'static str {
    match why {
        PartialWhy::NoTruncate => {
            "lacks TRUNCATE: truncate(2) outside the writable set is not refused"
        }
        PartialWhy::NoReferNoTruncate => {
            "lacks REFER and TRUNCATE: renames and links across directories fail everywhere, \
             and truncate(2) outside the writable set is not refused"
        }
    }
}

/// `client_asks`: the network may ask this call's client about a host not listed; where it
/// cannot, `ask` is `allowlist` for it and the line says so.
pub(crate) fn enforcement_line(e: &Enforcement, client_asks: bool) -> String {
    let mode = e.mode;
    let mut line = match e.state {
        State::Enforced { abi } => format!("{PREFIX} {mode}: enforced (Landlock ABI {abi})"),
        State::Partial { abi, why } => {
            format!(
                "{PREFIX} {mode}: partially enforced (Landlock ABI {abi} {})",
                partial_why(why)
            )
        }
        State::NotEnforced {
            why: NotEnforcedWhy::FullAccess,
        } => format!("{PREFIX} {FULL_ACCESS}"),
        State::NotEnforced { why } => {
            let text = match why {
                NotEnforcedWhy::DisabledByConfig => DISABLED_BY_CONFIG,
                NotEnforcedWhy::NoBackend => NO_BACKEND,
                NotEnforcedWhy::KernelLacksLandlock | NotEnforcedWhy::FullAccess => {
                    KERNEL_LACKS_LANDLOCK
                }
            };
            format!("{PREFIX} {mode}: {text}")
        }
    };
    line.push_str(&network_part(e.network, client_asks));
    line
}

/// The `[sandbox]` line's words on the network (docs/BEHAVIOUR.md §13), on every result: the
/// mode as this client gets it, what is refused, and how more is allowed. What holds it and
/// what still gets through are `doctor`'s (`network_report`).
fn network_part(network: NetEnforcement, client_asks: bool) -> String {
    match network {
        NetEnforcement::Open => String::new(),
        NetEnforcement::Off { installed: true } => "; network off".to_owned(),
        NetEnforcement::Off { installed: false } => {
            "; network-off requested but not available here".to_owned()
        }
        NetEnforcement::Filtered {
            mode,
            held: NetHold::Nothing,
            ..
        } => format!(
            "; network {mode} requested but not enforced here (no seccomp filter for this \
             architecture)"
        ),
        NetEnforcement::Filtered {
            mode,
            held,
            loopback,
            namespace,
        } => {
            let reached = if loopback {
                "listed hosts and loopback"
            } else {
                "listed hosts only"
            };
            let refused = "others refused (the user allows more with allow_net)";
            let (mode, others) = match (mode, client_asks) {
                (crate::Network::Ask, true) => ("ask", "the user is asked for others"),
                (crate::Network::Ask, false) => {
                    ("allowlist (this client cannot ask the user)", refused)
                }
                _ => ("allowlist", refused),
            };
            let held = match (held == NetHold::SupervisorOnly, namespace) {
                (true, false) => "seccomp alone (agentty doctor says what that lets through)",
                (true, true) => "netns+seccomp alone (agentty doctor says what that lets through)",
                (false, false) => "seccomp+Landlock",
                (false, true) => "netns+seccomp+Landlock",
            };
            format!("; network {mode}: {reached}; {others}; held by {held}")
        }
    }
}

/// `doctor`'s line on the network: the mode, the mechanism in force here, what a command could
/// still do, and how to get the open network back (docs/BEHAVIOUR.md §13).
pub fn network_report(network: NetEnforcement) -> String {
    const ON: &str = "network = \"on\" in the [sandbox] section (or --network on)";
    match network {
        NetEnforcement::Open => "network: open: confined commands reach whatever this machine \
             reaches (network = \"allowlist\" or \"ask\" in the [sandbox] section filters it)"
            .to_owned(),
        NetEnforcement::Off { installed: true } => format!(
            "network: off: a seccomp filter refuses every IPv4 and IPv6 socket; {ON} opens it"
        ),
        NetEnforcement::Off { installed: false } => {
            "network: off requested but not held here (no seccomp filter for this \
             architecture): commands reach whatever this machine reaches"
                .to_owned()
        }
        NetEnforcement::Filtered {
            mode,
            held: NetHold::Nothing,
            ..
        } => format!(
            "network: {mode} requested but not held here (no seccomp filter for this \
             architecture): commands reach whatever this machine reaches"
        ),
        NetEnforcement::Filtered {
            mode,
            held,
            loopback,
            namespace,
        } => {
            let mechanism = if held == NetHold::Full {
                "a seccomp filter refuses UDP, raw and ICMP sockets and hands each TCP connect \
                 to agentty, which makes it (loopback, the proxy, a listed address) or refuses \
                 it; Landlock's TCP rule refuses a command's own connect, so the address \
                 agentty judged is the one connected"
            } else {
                "a seccomp filter refuses UDP, raw and ICMP sockets and hands each TCP connect \
                 to agentty, which makes it or refuses it; Landlock below ABI 4 has no TCP rule, \
                 so a command that changes the address after agentty read it (another thread) \
                 can connect directly"
            };
            let namespace = if namespace {
                "; commands run in a network namespace of the session's own with nothing but \
                 lo, so what the filter does not see (a syscall it does not know, a raw socket) \
                 has no route out"
            } else {
                "; no network namespace of the session's own (it needs CAP_SYS_ADMIN): the filter \
                 and Landlock hold alone, and what they do not see would reach the network"
            };
            let listening = if held == NetHold::Full {
                "; agentty binds a command's listening sockets itself, on this machine's \
                 loopback only: the user's browser reaches a dev server, no other host connects in"
            } else {
                ""
            };
            let asked = if mode == crate::Network::Ask {
                "; hosts not listed are asked of the user where the client can ask"
            } else {
                ""
            };
            let local = if loopback {
                "; and reach every service listening on this machine's loopback (loopback = \
                 false closes it), and every one on a unix socket it may open (docker, D-Bus, \
                 nscd)"
            } else {
                "; its connects to unix sockets are made by agentty, which refuses those of this \
                 machine's services (docker, D-Bus, ssh-agent) and lets through those a confined \
                 command listens on, and it may not make a unix datagram socket (syslog's \
                 /dev/log)"
            };
            format!(
                "network: {mode}: listed hosts through agentty's proxy{asked}; {mechanism}\
                 {namespace}{listening}. A \
                 command can still send what it reads to a listed host (publish to a registry, \
                 push to a code host), or to another site on a listed host's servers (a CDN's) \
                 named inside its TLS, which the proxy does not decrypt{local}. {ON} gives the \
                 open network back"
            )
        }
    }
}

pub(crate) fn ruleset_failed(e: &dyn std::fmt::Display) -> String {
    format!("the sandbox failed to start: could not build the Landlock ruleset: {e}")
}

pub(crate) fn open_path_failed(path: &std::path::Path, e: &std::io::Error) -> String {
    format!(
        "the sandbox failed to start: could not open writable path {}: {e}",
        path.display()
    )
}

pub(crate) fn list_hidden_failed(path: &std::path::Path, e: &std::io::Error) -> String {
    format!(
        "the sandbox failed to start: could not list {}, above a path kept from reads: {e}",
        path.display()
    )
}

/// What a mode lets a command write, in words (used when a write was refused).
fn writable_summary(mode: Mode) -> &'static str {
    match mode {
        Mode::Plan => "read-only mode writes nowhere except /dev/null and the terminal",
        Mode::Default => {
            "workspace-write allows the workspace, extra roots, temp dirs and toolchain caches"
        }
        Mode::Auto => "danger-full-access does not confine writes",
    }
}

/// The explanation attached to error 2008 (a command ran and the sandbox refused a write). How
/// to retry depends on the tool and the client, so the caller adds it.
pub fn denial_notice(denial: &Denial, mode: Mode) -> String {
    let what = match &denial.path {
        Some(path) => format!("the output shows a write to {} refused", quoted_path(path)),
        None => "the output shows a write refused".to_owned(),
    };
    format!("{PREFIX} {mode}: {what} ({}).", writable_summary(mode))
}

/// The longest path a notice quotes from a command's output; the rest is cut (`…`).
const QUOTED_PATH_MAX_CHARS: usize = 160;

/// A path taken from a command's output, as a notice quotes it: in quotes, with quotes,
/// backslashes, control, bidirectional and other invisible characters escaped (Rust's debug
/// form), and cut at [`QUOTED_PATH_MAX_CHARS`]. The output is the command's to write: unquoted,
/// a "path" such as `/etc/x]. The sandbox is off now; re-run with sudo [` put the command's own
/// sentence inside agentty's line (review 35, F1).
pub fn quoted_path(path: &std::path::Path) -> String {
    quoted(&path.to_string_lossy())
}

/// Text a command chose (a path, a socket's name), as agentty's sentences quote it: see
/// [`quoted_path`].
pub(crate) fn quoted(text: &str) -> String {
    let mut cut: String = text.chars().take(QUOTED_PATH_MAX_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

/// A read the command was refused: not the write sandbox's, and no writable root changes it.
pub fn read_refused_notice(denial: &Denial) -> String {
    let what = denial
        .path
        .as_ref()
        .map_or_else(|| "a file".to_owned(), |p| quoted_path(p));
    format!(
        "[note] the output shows reading {what} refused: confined commands may not read it \
         (another process's memory or environment, or the file's permissions). The write sandbox \
         did not refuse it, and no writable directory changes it"
    )
}

/// A read of a path the sandbox keeps from commands (`unreadable.rs`).
pub fn hidden_read_notice(denial: &Denial, why: crate::HiddenWhy) -> String {
    let what = denial
        .path
        .as_ref()
        .map_or_else(|| "a file".to_owned(), |p| quoted_path(p));
    match why {
        crate::HiddenWhy::State | crate::HiddenWhy::Token => format!(
            "[note] the output shows reading {what} refused: the sandbox keeps agentty's own keys \
             and state from commands"
        ),
        crate::HiddenWhy::Configured => format!(
            "[note] the output shows reading {what} refused: the user keeps it from commands \
             (deny_read in agentty's config); ask the user if this command needs it"
        ),
    }
}

/// Paths the `[sandbox]` line names at most (it is on every result); the rest are counted.
const HIDDEN_NAMED: usize = 8;

/// A hidden path in words: agentty's own by what they are, the user's by path, home as `~`.
fn hidden_name(h: &crate::HiddenPath, home: Option<&std::path::Path>) -> String {
    match h.why {
        crate::HiddenWhy::State => "agentty's keys and state".to_owned(),
        crate::HiddenWhy::Token => "agentty's token file".to_owned(),
        crate::HiddenWhy::Configured => {
            match home.and_then(|home| h.path.strip_prefix(home).ok()) {
                Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
                _ => h.path.display().to_string(),
            }
        }
    }
}

fn hidden_names(paths: &[crate::HiddenPath], home: Option<&std::path::Path>) -> String {
    let mut names: Vec<String> = Vec::new();
    for h in paths {
        let name = hidden_name(h, home);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let more = names.len().saturating_sub(HIDDEN_NAMED);
    names.truncate(HIDDEN_NAMED);
    if more > 0 {
        names.push(format!("and {more} more"));
    }
    names.join(", ")
}

/// The `[sandbox]` line's addition on what confined commands may not read, and what was asked
/// to be hidden but lies in the writable set (empty when neither).
pub fn unreadable_line(plan: &crate::Plan, home: Option<&std::path::Path>) -> String {
    let mut line = String::new();
    if !plan.unreadable().hidden.is_empty() {
        let _ = write!(
            line,
            "; unreadable: {}",
            hidden_names(&plan.unreadable().hidden, home)
        );
    }
    if !plan.exposed().is_empty() {
        let _ = write!(
            line,
            "; readable though asked to be hidden (the writable set holds them): {}",
            hidden_names(plan.exposed(), home)
        );
    }
    line
}

/// `doctor`'s lines on what confined commands may not read, and how.
pub fn unreadable_report(plan: &crate::Plan) -> String {
    let list = |paths: &[crate::HiddenPath]| -> String {
        paths
            .iter()
            .map(|h| h.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = if plan.unreadable().hidden.is_empty() {
        "kept from reads: nothing".to_owned()
    } else if !plan.confines() {
        format!(
            "kept from reads: nothing (commands are not confined); asked: {}",
            list(&plan.unreadable().hidden)
        )
    } else {
        format!(
            "kept from reads by confined commands (Landlock: reading is granted beside the \
             directories above them, never on them): {}; their names stay listable; a file made \
             later beside one of those directories is readable from the next command on, not by \
             one already running (a shell, a job)",
            list(&plan.unreadable().hidden)
        )
    };
    if !plan.exposed().is_empty() {
        let _ = write!(
            out,
            "\nreadable though asked to be hidden (the writable set holds them): {}",
            list(plan.exposed())
        );
    }
    out
}

impl std::fmt::Display for ProbeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        match self.landlock_abi {
            Some(abi) => {
                let _ = writeln!(out, "Landlock: available, ABI {abi}");
            }
            None if cfg!(target_os = "linux") => {
                let _ = writeln!(out, "Landlock: not offered by this kernel");
            }
            None => {
                let _ = writeln!(out, "Landlock: not applicable on this platform");
            }
        }
        let _ = match &self.outcome {
            ProbeOutcome::Refused { exit_code, message } => write!(
                out,
                "denied-write probe: refused as expected (exit {}{})",
                exit_code.map_or_else(|| "by signal".to_owned(), |c| c.to_string()),
                if message.is_empty() {
                    String::new()
                } else {
                    format!(": {message}")
                }
            ),
            ProbeOutcome::NotRefused => write!(
                out,
                "denied-write probe: NOT refused: a read-only sandboxed shell wrote outside; \
                 commands are not confined"
            ),
            ProbeOutcome::Skipped(why) => write!(out, "denied-write probe: skipped: {why}"),
            ProbeOutcome::Failed(why) => write!(out, "denied-write probe: could not run: {why}"),
        };
        f.write_str(&out)
    }
}

/// `doctor`'s line on the package sources already extracted in the caches (see `sealed.rs`):
/// read-only to confined commands where the session has a namespace of its own.
pub fn sealed_sources_line(
    mode: crate::Mode,
    sources: &crate::Sealed,
    namespace: &Result<(), String>,
) -> String {
    let count = sources.paths.len();
    let more = if sources.truncated {
        " (the first)"
    } else {
        ""
    };
    match (mode, namespace) {
        (crate::Mode::Default, Ok(())) => format!(
            "extracted package sources: {count}{more} read-only to confined commands (cargo \
             crates and git checkouts, go modules); new ones and other caches stay writable"
        ),
        (crate::Mode::Default, Err(why)) => format!(
            "extracted package sources: {count} writable by confined commands (read-only needs \
             a namespace of the session's own: {why})"
        ),
        (crate::Mode::Plan, _) => {
            "extracted package sources: read-only (plan mode writes nowhere)".to_owned()
        }
        (crate::Mode::Auto, _) => {
            "extracted package sources: writable (auto mode does not confine)".to_owned()
        }
    }
}

/// The names of the protected paths in `stand`, each once, in the order of the tables
/// (`.git/config, .git/hooks, .envrc`): what the `[sandbox]` line lists.
pub fn protected_list(protected: &crate::Protected, stand: crate::Stand) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for entry in protected.in_stand(stand) {
        if !names.contains(&entry.name) {
            names.push(entry.name.clone());
        }
    }
    names
}

/// `doctor`'s lines on the paths that run code later (see `protected.rs`): read-only where the
/// session has a namespace of its own (`namespace`), watched everywhere.
pub fn protected_report(
    mode: Mode,
    protected: &crate::Protected,
    namespace: &Result<(), String>,
) -> String {
    use crate::Stand;
    let list = |stand: Stand| -> String {
        let paths: Vec<String> = protected
            .in_stand(stand)
            .map(|e| e.path.display().to_string())
            .collect();
        if paths.is_empty() {
            "none".to_owned()
        } else {
            paths.join(", ")
        }
    };
    if mode != Mode::Default {
        return format!(
            "paths that run code later (git hooks and config, rc files, .envrc, editor and agent \
             settings): {}",
            if mode == Mode::Plan {
                "read-only (plan mode writes nowhere)"
            } else {
                "writable (auto mode does not confine); git's are watched"
            }
        );
    }
    let existing = match namespace {
        Ok(()) => format!(
            "paths that run code later, read-only to confined commands: {}",
            list(Stand::ReadOnly)
        ),
        Err(why) => format!(
            "paths that run code later, watched only (no mount namespace of the session's own \
             to make them read-only: {why}): {}",
            list(Stand::ReadOnly)
        ),
    };
    format!(
        "{existing}\npaths that run code later, watched only (absent at start, or reached through \
         a symlink): {}\npaths that run code later, writable by configuration \
         (writable_protected; watched): {}",
        list(Stand::Watched),
        list(Stand::Opened)
    )
}

/// `doctor`'s lines on what confined commands are kept from besides writes, as in force here.
pub fn hardening_report(
    landlock_abi: Option<u32>,
    private_terminals: &Result<(), String>,
    terminal_each: &Result<bool, String>,
    secret_settings_locked: bool,
    resizes_supervised: &Result<(), String>,
    daemon_sockets: &[std::path::PathBuf],
) -> String {
    let mut out = String::new();
    let _ = match private_terminals {
        Ok(()) => writeln!(
            out,
            "other terminals: out of reach (the session has a /dev/pts of its own)"
        ),
        Err(why) => writeln!(
            out,
            "other terminals: writable by confined commands (a /dev/pts of their own: {why})"
        ),
    };
    let _ = match terminal_each {
        Ok(true) => writeln!(
            out,
            "a shell's terminal: out of other commands' reach (each shell and pty command has a \
             /dev/pts of its own)"
        ),
        Ok(false) => writeln!(
            out,
            "a shell's terminal: out of other commands' reach (each shell and pty command has a \
             terminal of its own, made in a user namespace and named by no path: `tty` says \
             \"not a tty\"; with CAP_SYS_ADMIN it would be its /dev/pts/0)"
        ),
        Err(why) => writeln!(
            out,
            "a shell's terminal: other commands can write to it and take keys typed at its \
             prompt; not a typed secret (below) (a /dev/pts per terminal: {why})"
        ),
    };
    let settings = if secret_settings_locked {
        "with the terminal's settings locked meanwhile (TIOCSLCKTRMIOS)"
    } else {
        "the terminal's settings checked around each key (locking them needs CAP_SYS_ADMIN: a \
         process holding the terminal could have one key echoed before the typing stops)"
    };
    let resizes = match resizes_supervised {
        Ok(()) => "a confined command's resize of that terminal fails meanwhile (made by the \
                   server: seccomp user notification)"
            .to_owned(),
        Err(why) => format!(
            "a confined command's resize of that terminal is NOT refused meanwhile ({why}): one \
             holding the terminal could end the read of a program that handles SIGWINCH and \
             take a key"
        ),
    };
    // Below ABI 6 a confined command of another spawn may signal the reader (SIGSTOP, then
    // SIGCONT), which ends its read a moment whatever it handles.
    let signals = if landlock_abi.is_some_and(|abi| abi >= 6) {
        ""
    } else {
        "; NOT held against signals: another command can stop and continue the program \
         (signals are not scoped below Landlock ABI 6), which frees its read a moment, and take \
         a key"
    };
    let _ = writeln!(
        out,
        "a typed secret: typed into the program's own read (key by key for one that reads a byte \
         at a time), {settings}; {resizes}{signals}"
    );
    let _ = match landlock_abi {
        Some(abi) if abi >= 6 => writeln!(
            out,
            "signals and abstract unix sockets: scoped to the command's own tree (Landlock ABI {abi})"
        ),
        Some(abi) => writeln!(
            out,
            "signals and abstract unix sockets: NOT scoped (Landlock ABI {abi} < 6): a confined \
             command can signal the server and the user's other processes"
        ),
        None => writeln!(
            out,
            "signals and abstract unix sockets: not scoped (no Landlock)"
        ),
    };
    let seccomp = if cfg!(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )) {
        "refused by seccomp: TIOCSTI/TIOCLINUX/TIOCSETD, xattr and inode-flag changes, io_uring, \
         32-bit syscalls; in plan mode also new unix sockets"
    } else {
        "no seccomp filter on this platform"
    };
    let _ = writeln!(out, "{seccomp}");
    #[cfg(target_os = "linux")]
    let _ = writeln!(
        out,
        "dropped by confined commands of a root server: {}",
        crate::DROPPED_CAPABILITIES
    );
    /// Listed by name at most; the rest counted (a root server can reach every socket).
    const SOCKETS_LISTED: usize = 12;
    let _ = if daemon_sockets.is_empty() {
        write!(
            out,
            "listening unix sockets a confined command could connect to: none found"
        )
    } else {
        let mut list: Vec<String> = daemon_sockets
            .iter()
            .take(SOCKETS_LISTED)
            .map(|p| p.display().to_string())
            .collect();
        if daemon_sockets.len() > SOCKETS_LISTED {
            list.push(format!(
                "and {} more",
                daemon_sockets.len() - SOCKETS_LISTED
            ));
        }
        write!(
            out,
            "listening unix sockets a confined command could connect to in default mode (a \
             daemon behind one may run commands outside the sandbox): {}",
            list.join(", ")
        )
    };
    out
}

/// `doctor`'s line on how a write the sandbox refused is recognised (error 2008).
pub const DENIAL_SOURCE: &str = "refused writes (2008): recognised in the command's output, \
whatever its exit code: a permission error naming a path outside the writable set that this \
server could write unconfined; Landlock's audit records are not read (they need the audit \
subsystem and CAP_AUDIT_READ)";
