//! Every word said about the sandbox in a result, whichever tool ran the command
//! (docs/BEHAVIOUR.md §5): its error codes, the 2008 and 2009 sentences, how to run a refused
//! command again and the additions to the `[sandbox]` line. What the network policy says (2010,
//! the proxy, the questions) is in `network/notice.rs`.

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

/// Said once a session when a confined `strace`, `gdb`, `ltrace` or `perf` was refused: they say
/// "Operation not permitted" and nothing of why.
pub const TRACE_REFUSED: &str = "[sandbox] confined commands may not trace or read another \
process (ptrace, process_vm_readv, perf on another process), their own children included: \
that keeps a secret the user types into a program of the shell from the agent. strace, gdb, \
ltrace and perf record or stat of a program fail here; run such a call with \
sandbox_permissions: \"require_escalated\" (the user approves it) if it is needed";

/// Said once a session when output shows a process or thread that could not be started while
/// confined commands' processes are bounded (`--max-processes`).
pub fn processes_bounded(per_caller: u32) -> String {
    format!(
        "[note] the output shows a process or thread that could not be started (EAGAIN): this \
         caller's confined commands may have at most {per_caller} processes and threads at \
         once; the user can raise that with --max-processes ([sandbox] max_processes)"
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

/// The 2008 sentence of a write to a path that runs code later, shown by the output of a
/// command whose line does not name it: said as what the output shows, with no way offered to
/// make it writable (the output is the command's to write).
pub fn protected_refused_unnamed(mode: agentty_sandbox::Mode, name: &str) -> String {
    format!(
        "[sandbox] {mode}: the output shows a write to {name} refused, which is read-only to \
         confined commands: it runs code outside the sandbox later. This call's command line \
         does not name it: find which program wrote there, and why, before asking the user \
         about it."
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

/// How a command refused a write to a path that runs code later can be run again: as
/// [`denial_retry`], but where nobody can be asked, not `--add-dir` (a protected path stays
/// read-only under it): the user's setting the sentence names.
pub fn protected_retry(retry: Retry) -> &'static str {
    match retry {
        Retry::Impossible => {
            "This MCP client cannot ask the user to lift the sandbox (no elicitation support): if \
             the write is needed, ask the user to run the command, or to leave the path writable \
             as said above."
        }
        other => denial_retry(other),
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
