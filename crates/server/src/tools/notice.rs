//! Every word said about a call's arguments, whichever tool it is for, and the server's own
//! instructions (docs/BEHAVIOUR.md §1): what every family shares so no family words it twice.
//!
//! English, short, exact. Each sentence states a fact and, where there is one, the next action.

use std::path::Path;

use agentty_core::limits::TIMEOUT_MAX_MS;

pub const INVALID_ARGS: &str = "invalid arguments";

/// A call that would start something while the server drains (docs/BEHAVIOUR.md §14).
pub const DRAINING: &str = "refused: the server is shutting down (it got SIGTERM), so nothing \
new starts; its jobs and shells stop soon. Run this again once the server is back.";

/// Added to a result that was cut short by the end of the drain.
pub const SHUT_DOWN: &str =
    "[note] the server was shut down while this call ran; its jobs and shells were stopped.";

pub const ZERO_TIMEOUT: &str = "`timeout_ms` must be at least 1";

/// `timeout_ms` past the bound every tool shares, with the tool's advice (`past_max`).
pub fn timeout_too_large(requested: u64, past_max: &str) -> String {
    format!(
        "`timeout_ms` {requested} is over the maximum {TIMEOUT_MAX_MS} (10 minutes); {past_max}"
    )
}

pub fn nul_byte(field: &str) -> String {
    format!("`{field}` contains a NUL byte, which no program argument, path or variable can hold")
}

pub fn shell_function_env(name: &str) -> String {
    format!(
        "`env.{name}` cannot be set for shell_open: an exported function could stand in for a \
         builtin the shell integration uses; define the function inside the shell instead"
    )
}

pub fn shell_owned_env(name: &str) -> String {
    format!(
        "`env.{name}` cannot be set for shell_open: the shell integration sets it to know when \
         a command is done; set it inside the shell instead"
    )
}

/// `stdin` typed into a shell's line editor (`pty`) holding a key it edits the line with.
pub fn editing_key_in_stdin(key: &agentty_core::pty::line_editor::EditingKey) -> String {
    format!(
        "refused: `stdin` is typed into a shell on a terminal, and it holds {} (\\u{:04x}), \
         which the shell's line editor uses to edit the line ({}); the guard judges the lines \
         as typed, so an edited line could run something other than what it judged. Nothing \
         was run. Send the lines plainly: their text, Backspace (\\u007f) or Ctrl+U \
         (\\u0015) to correct them, and \\n to end each.",
        key.name,
        u32::from(key.code),
        key.does
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

pub const SERVER_INSTRUCTIONS: &str = "agentty gives you a real terminal. Use `terminal` for \
one-shot commands (each call starts fresh in its workdir and cleans up every process it started), \
`terminal` with `background: true` plus the task_* tools for servers and long builds, and \
shell_open/shell_send for a shell that keeps its cwd, environment, venv or REPL between calls.";
