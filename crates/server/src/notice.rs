//! Every word the `terminal` family says to a model, in one place (docs/BEHAVIOUR.md §1).
//!
//! English, short, exact. Each sentence states a fact and, where there is one, the next action.
//! Numbers come from `agentty_core::limits`, so the text never disagrees with the engine.

use std::path::Path;

use agentty_core::limits::{CAPTURE_LIMIT_BYTES, COMMAND_MAX_BYTES, TIMEOUT_MAX_MS};

pub const TERMINAL_DESCRIPTION: &str = "Run one command to completion and return its output. \
Pass `command` (a shell command line, run with $SHELL -c) or `argv` (program and arguments, no \
shell). Non-interactive: stdin is empty unless `stdin` is given, there is no terminal (unless \
`pty: true`), pagers and git prompts are off. Runs in `workdir` (default: the workspace root); \
`cd` does not persist between calls (use shell_open for that). Output over 50 KB returns its head \
and tail and names a file holding all of it. Every process the command started is stopped when it \
ends, times out (`timeout_ms`, default 120000, max 600000) or is cancelled. For servers, watchers \
and long builds pass `background: true` (returns a job id for task_output/task_wait/task_stop), or \
`on_timeout: \"background\"` to keep a slow command running past its timeout.";

pub const INVALID_ARGS: &str = "invalid arguments";
pub const COMMAND_OR_ARGV: &str =
    "pass exactly one of `command` (a shell command line) or `argv` (program and arguments)";
pub const EMPTY_ARGV: &str = "`argv` must name a program: it is empty";
pub const EMPTY_COMMAND: &str = "`command` is empty";
pub const ZERO_TIMEOUT: &str = "`timeout_ms` must be at least 1";

/// `timeout_ms` past the bound every tool shares, with the tool's advice (`past_max`).
pub fn timeout_too_large(requested: u64, past_max: &str) -> String {
    format!(
        "`timeout_ms` {requested} is over the maximum {TIMEOUT_MAX_MS} (10 minutes); {past_max}"
    )
}

/// `terminal`'s advice past the bound.
pub const TIMEOUT_PAST_MAX: &str = "run longer commands with background: true";

/// `what`: "`command`", or "an `argv` element".
pub fn command_too_long(what: &str, bytes: usize) -> String {
    format!(
        "{what} is {bytes} bytes; one argument can be at most {COMMAND_MAX_BYTES} bytes \
         (the kernel's limit). Write the script or data to a file in the workspace and pass \
         the file instead"
    )
}

pub fn nul_byte(field: &str) -> String {
    format!("`{field}` contains a NUL byte, which no program argument, path or variable can hold")
}

pub fn shell_owned_env(name: &str) -> String {
    format!(
        "`env.{name}` cannot be set for shell_open: the shell integration sets it to know when \
         a command is done; set it inside the shell instead"
    )
}

/// A guard block for code that arrives through `field` (stdin, an env variable).
pub fn blocked_in(field: &str, message: &str) -> String {
    format!("{field} would be run as shell code: {message}")
}

pub fn sourced_unreadable(name: &str, path: &Path) -> String {
    format!(
        "`env.{name}` names {}, which a shell would source, but it could not be read (or is over \
         256 KB) to be checked",
        path.display()
    )
}

pub fn bad_env_name(name: &str) -> String {
    format!("`env` key {name:?} is not a valid variable name (empty, or contains '=' or NUL)")
}

/// `ENOEXEC`: the kernel does not recognise the file as a program it can run.
const EXEC_FORMAT_ERROR: i32 = 8;
/// Linux errnos of a spawn that ran out of something: EAGAIN, ENOMEM, ENFILE, EMFILE.
const OUT_OF_RESOURCES: [i32; 4] = [11, 12, 23, 24];

/// A program that could not be started. `workdir`: where a relative path was looked up.
pub fn spawn_failed(program: &str, workdir: &Path, error: &std::io::Error) -> String {
    let path_given = program.contains('/');
    match error.kind() {
        std::io::ErrorKind::NotFound if !path_given => {
            format!("cannot run {program:?}: no such program (not found in PATH)")
        }
        // The file is there, so what is missing is the interpreter its `#!` line names.
        std::io::ErrorKind::NotFound if workdir.join(program).is_file() => format!(
            "cannot run {program:?}: the interpreter named on its first line (#!) does not exist"
        ),
        std::io::ErrorKind::NotFound => format!("cannot run {program:?}: no such file"),
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot run {program:?}: permission denied (not executable?)")
        }
        _ if error.raw_os_error() == Some(EXEC_FORMAT_ERROR) => format!(
            "cannot run {program:?}: not a program this system can run (built for another \
             platform?)"
        ),
        _ if error
            .raw_os_error()
            .is_some_and(|e| OUT_OF_RESOURCES.contains(&e)) =>
        {
            format!(
                "cannot run {program:?}: {error}; nothing was started (the server is out of \
                 resources: retry later)"
            )
        }
        _ => format!("cannot run {program:?}: {error}"),
    }
}

pub fn workdir_missing(path: &Path) -> String {
    format!("workdir {} does not exist", path.display())
}

pub fn workdir_not_dir(path: &Path) -> String {
    format!("workdir {} is not a directory", path.display())
}

/// The head+tail omission marker.
pub fn omitted(bytes: u64, lines: u64) -> String {
    format!("\n[... {bytes} bytes in {lines} lines omitted ...]\n")
}

pub fn spill_hint(path: &Path, bytes: u64, lines: u64) -> String {
    let p = shell_quote(&path.display().to_string());
    format!(
        "[full output ({bytes} bytes, {lines} lines) saved to {p}; read a slice with: \
         sed -n '1,200p' {p}]"
    )
}

pub fn spill_failed(reason: &str) -> String {
    format!("[the full output could not be saved ({reason}); only the head and tail above remain]")
}

/// One wording for every path that hits the capture cap.
pub fn over_capture() -> String {
    format!(
        "[output passed {} MB: capture stopped and the process tree was killed. Redirect the \
         output to a file and read parts of it, or filter it (grep, tail)]",
        CAPTURE_LIMIT_BYTES / (1024 * 1024)
    )
}

pub fn exited(code: i32, ms: u64) -> String {
    format!("[exit {code} · {ms} ms]")
}

pub fn signalled(signal: &str, ms: u64) -> String {
    format!("[killed by {signal} · {ms} ms]")
}

pub fn timed_out(timeout_ms: u64) -> String {
    format!(
        "[timed out after {timeout_ms} ms: the process tree was stopped. Raise timeout_ms \
         (max {TIMEOUT_MAX_MS}) or run it with background: true]"
    )
}

pub const CANCELLED: &str = "[cancelled: the process tree was stopped]";

/// `parse: true` where no output could be typed: the reason, and the text follows as usual.
pub fn not_parsed(reason: &str) -> String {
    format!("[note] not parsed: {reason}; the output is plain text")
}

pub const NOT_PARSED_EMPTY: &str = "there is no command whose output could be parsed";
pub const NOT_PARSED_UNCLEAR: &str = "the command line did not parse cleanly";
pub const NOT_PARSED_SHAPE: &str = "only one command, or one pipeline of a command and filters \
(grep, head, tail, sort), is parsed";
pub const NOT_PARSED_REDIRECTED: &str = "its output is redirected away from the result";
pub const NOT_PARSED_UNFINISHED: &str = "the command did not finish";

/// Why an output over the parse limit is text.
pub fn not_parsed_too_big() -> String {
    format!(
        "the output is over {} MB; narrow the command (grep, head) to parse it",
        agentty_core::limits::PARSE_INPUT_MAX_BYTES / (1024 * 1024)
    )
}
pub const PARSE_NOT_HERE: &str = "`parse` applies to a foreground call without `pty`: drop \
`background`/`pty`, or drop `parse`";

/// The typed result's line: its type, then its data as compact JSON.
pub fn parsed_line(type_name: &str, json: &str) -> String {
    format!("{type_name} {json}")
}

/// A typed result cut to fit: how many records were left out, and how to see them.
pub fn parsed_cut(omitted: u64, total: u64, records: &str) -> String {
    format!(
        "[note] {omitted} of {total} {records} left out to fit {} KB: narrow the command \
         (grep, head) or run it without parse",
        agentty_core::limits::INLINE_LIMIT_BYTES / 1024
    )
}

/// The program was started, then the server could not follow its output and stopped it.
pub fn stopped_after_start(program: &str, error: &std::io::Error) -> String {
    format!(
        "{program:?} was started, then stopped at once: the server could not read its output \
         ({error}). It may have begun to run; its process group was killed"
    )
}

pub const CANCELLED_BEFORE_START: &str = "cancelled before it started: nothing ran";

pub const NO_OUTPUT: &str = "(no output)";

/// `tasks/get` of a task cancelled with `tasks/cancel`.
pub const TASK_CANCELLED: &str = "cancelled: the process tree was stopped";

/// A task's final result holds the job's output, stdout and stderr merged as they came.
pub const TASK_MERGED: &str = "[note] stdout and stderr are merged, in the order they came";

/// A task's final result shows the newest output only.
pub fn task_tail(from: u64, spill: Option<&std::path::Path>) -> String {
    match spill {
        Some(path) => format!(
            "[note] the first {from} bytes are not shown; the full output is in {}",
            path.display()
        ),
        None => format!("[note] the first {from} bytes are not shown (they left the buffer)"),
    }
}

pub fn stray_held_output(count: usize) -> String {
    format!(
        "[note] the command exited but {count} process(es) it started in the background kept \
         its output open; they were stopped. Run servers and watchers with background: true"
    )
}

pub fn stray_lingering(count: usize) -> String {
    format!(
        "[note] {count} process(es) the command left running were stopped: a one-shot call \
         cleans up everything it started. Run servers and watchers with background: true"
    )
}

pub fn stuck(count: usize) -> String {
    format!(
        "[note] {count} process(es) ignored SIGKILL (uninterruptible sleep); the call returned \
         without them"
    )
}

pub fn cd_note(dir: &str) -> String {
    format!(
        "[note] cd only takes effect inside this subshell; the next call still runs in the \
         original working directory. If the following commands have to run in {dir}, pass the \
         workdir parameter, or write it as \"cd {dir} && <command>\"."
    )
}

/// Quotes a path for a POSIX shell when it needs it.
fn shell_quote(text: &str) -> String {
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%".contains(&b));
    if plain && !text.is_empty() {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

pub const SERVER_INSTRUCTIONS: &str = "agentty gives you a real terminal. Use `terminal` for \
one-shot commands (each call starts fresh in its workdir and cleans up every process it started), \
`terminal` with `background: true` plus the task_* tools for servers and long builds, and \
shell_open/shell_send for a shell that keeps its cwd, environment, venv or REPL between calls.";

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

/// Git files a command changed that git runs (or obeys) unconfined at the user's next git.
pub fn planted(paths: &[String]) -> String {
    format!(
        "[warning] changed since the last command: {}. git runs hooks (and what core.hooksPath, \
         core.fsmonitor or aliases in config name) outside the sandbox, at the user's next git \
         command in this repository; tell the user if this was not meant",
        paths.join(", ")
    )
}

pub fn escalated_line(mode: agentty_sandbox::Mode) -> String {
    format!("[sandbox] {mode}: not confined for this call (escalation approved by the user)")
}

/// The question shown to the user. The command and the reason are the agent's text: every
/// control character (`\r`, `ESC[2K`, a newline that fakes the layout) and every bidirectional
/// override is shown escaped, so a host that renders them cannot show a different command.
pub fn escalation_question(what: &str, justification: &str) -> String {
    format!(
        "The agent asks to run this without the write sandbox, once:\n\n{}\n\nReason given: \
         {}\n\nApprove for this one command only?",
        visible(what),
        visible(justification)
    )
}

/// `text` with control characters and bidirectional formatting characters escaped.
pub fn visible(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if hidden(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
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

pub fn sandbox_failed(reason: &str) -> String {
    let code = crate::confinement::SANDBOX_FAILED;
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

/// A program that needs a terminal, refused before it starts (it would wait until the timeout).
pub fn needs_terminal(needs: &agentty_guard::NeedsTerminal) -> String {
    use agentty_guard::TerminalKind;
    let p = &needs.program;
    match needs.kind {
        TerminalKind::Editor => format!(
            "`{p}` is an interactive editor and needs a terminal; on this call it would wait for \
             keys until the timeout, so it was not started. To change a file, write it (`cat > \
             FILE <<'EOF'`, `sed -i`, `patch`); to drive the editor, open a shell with shell_open \
             and type into it, or pass `pty: true` with the keys in `stdin`."
        ),
        TerminalKind::Monitor => format!(
            "`{p}` is a full-screen program and needs a terminal, so it was not started. For one \
             snapshot use its batch mode (`top -b -n 1`) or `ps aux --sort=-%cpu | head`; to watch \
             it live, open a shell with shell_open, or pass `pty: true`."
        ),
        TerminalKind::Watch => "`watch` repeats a command forever on a terminal, so it was not \
             started. Run the command once, or loop it in the background (`background: true`, \
             `while true; do CMD; sleep 2; done`) and read it with task_output."
            .to_owned(),
    }
}

pub fn sandbox_denied(sentence: &str) -> String {
    format!("[error {}] {sentence}", crate::confinement::SANDBOX_DENIED)
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
            visible("cargo test -- --nocapture"),
            "cargo test -- --nocapture"
        );
    }
}
