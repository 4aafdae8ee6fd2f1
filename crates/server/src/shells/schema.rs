//! The arguments and `structuredContent` of the five `shell_*` tools: the contract a client
//! sees (each type's schema is published as the tool's input or output schema).

use std::collections::BTreeMap;

use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

use crate::escalation::SandboxPermissions;

/// Arguments of `shell_open`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellOpenParams {
    /// Working directory: absolute, or relative to the workspace root (the default).
    pub workdir: Option<String>,
    /// Terminal width in columns (default 120).
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub cols: Option<u16>,
    /// Terminal height in rows (default 40).
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub rows: Option<u16>,
    /// Variables added to the shell's environment.
    pub env: Option<BTreeMap<String, String>>,
    /// "require_escalated" asks the user to run this whole shell without the write sandbox
    /// (give a `justification`); default "use_default".
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why the shell must write outside the sandbox (shown to the user).
    pub justification: Option<String>,
}

/// Arguments of `shell_send`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellSendParams {
    /// The shell id (s1, …).
    pub id: String,
    /// Keystrokes; a command ends with \n.
    pub input: Option<String>,
    /// Instead of `input`, when a program waits for a password with echo off: what it asks
    /// for (e.g. "sudo password"). The user types it in agentty's web view; you never see it.
    pub secret: Option<String>,
    /// Longest wait in milliseconds (default 30000).
    #[schemars(range(min = 1, max = agentty_core::limits::TIMEOUT_MAX_MS))]
    pub timeout_ms: Option<u64>,
    /// Return as soon as the output since this send matches this regex.
    pub wait_for: Option<String>,
    /// Resize the terminal to this many columns first (with `rows`).
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub cols: Option<u16>,
    /// Resize the terminal to this many rows first (with `cols`).
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub rows: Option<u16>,
}

/// Arguments of `shell_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellReadParams {
    /// The shell id (s1, …).
    pub id: String,
    /// Byte cursor: the `next` of the previous read (or a send's `cursor`). Omit for the newest.
    pub since: Option<u64>,
    /// The rendered screen (full-screen programs: top, less, vim) instead of the stream.
    pub screen: Option<bool>,
    /// The newest raw bytes, escape sequences included.
    pub raw: Option<bool>,
    /// Resize the terminal to this many columns first (with `rows`).
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub cols: Option<u16>,
    /// Resize the terminal to this many rows first (with `cols`).
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub rows: Option<u16>,
}

/// Arguments of `shell_list`: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellListParams {}

/// Arguments of `shell_close`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellCloseParams {
    /// The shell id (s1, …).
    pub id: String,
}

/// `structuredContent` of `shell_open`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShellOpenResult {
    pub id: String,
    pub pid: i32,
    pub shell: String,
    pub workdir: String,
    pub cols: u16,
    pub rows: u16,
    /// True when prompt markers tell when each command finished (bash, zsh, sh).
    pub integration: bool,
    /// The sandbox line, decided for the whole shell.
    pub sandbox: String,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SendState {
    Done,
    // A new prompt, and no command ran: nothing to report an exit code for (a plain comment: a
    // doc comment would split the schema's enum in two).
    AtPrompt,
    AwaitingInput,
    Matched,
    Quiet,
    Running,
    ShellEnded,
}

/// `structuredContent` of `shell_send`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShellSendResult {
    pub id: String,
    /// done | at_prompt | awaiting_input | matched | quiet | running | shell_ended
    pub status: SendState,
    /// The finished command's exit code (status done).
    pub exit_code: Option<i32>,
    /// The line the program waits on (status awaiting_input).
    pub prompt: Option<String>,
    /// Cleaned output of this send, without the echoed input or the next prompt.
    pub output: String,
    /// Bytes omitted from the start of `output`.
    pub dropped_bytes: u64,
    /// shell_read cursors: this send's output starts at `cursor_from`; continue at `cursor`.
    pub cursor_from: u64,
    pub cursor: u64,
    pub elapsed_ms: u64,
    /// 2008 when the finished command's output shows a write the sandbox refused; else 2010
    /// when the network policy refused a connection of the shell's since the last reply.
    pub error_code: Option<u32>,
    /// What the sandbox refused, in words, with `error_code`.
    pub sandbox_denied: Option<String>,
    /// Exit codes of earlier commands that were still running when their sends returned and
    /// ended since the last reply, before this send or during it (oldest first).
    pub earlier_exit_codes: Vec<i32>,
    /// Bytes of the input the terminal had not taken by the timeout: they were not typed.
    pub untyped_bytes: u64,
    /// Status running: what runs in the shell (its program, command line and pid); or, when
    /// nothing was typed, what else could read the terminal.
    pub running: Option<String>,
}

/// The screen part of `shell_read`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenInfo {
    pub cols: u16,
    pub rows: u16,
    pub cursor_row: u16,
    pub cursor_col: u16,
    /// True while a full-screen program uses the alternate screen.
    pub alternate: bool,
}

/// `structuredContent` of `shell_read`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShellReadResult {
    pub id: String,
    /// open | closed | closed for inactivity | exited N | killed by SIG…
    pub state: String,
    /// Cleaned output from `from` (or the screen, or raw bytes).
    pub text: String,
    pub from: Option<u64>,
    /// Cursor for the next read.
    pub next: Option<u64>,
    /// Bytes that had scrolled out before the requested cursor.
    pub dropped: u64,
    /// Bytes after `next` (read again at once to get them).
    pub remaining: u64,
    pub total: u64,
    pub spill_path: Option<String>,
    /// Why the full output could not be saved, when it could not.
    pub spill_error: Option<String>,
    pub screen: Option<ScreenInfo>,
    /// The line a program waits at for keys ("" if none shown).
    pub awaiting_input: Option<String>,
}

/// One row of `shell_list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShellEntry {
    pub id: String,
    pub state: String,
    pub shell: String,
    /// Where it is: an open shell's current directory (empty when the kernel cannot tell it),
    /// else where it opened.
    pub workdir: String,
    pub pid: i32,
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub cols: Option<u16>,
    #[schemars(range(min = 1, max = agentty_core::pty::SIZE_MAX))]
    pub rows: Option<u16>,
    /// Time since the model last used it (it is closed after a while unused).
    pub idle_ms: Option<u64>,
    /// What it is doing (open shells): at its prompt, or running a program (named).
    pub activity: Option<String>,
    pub age_ms: u64,
    pub output_bytes: u64,
}

/// `structuredContent` of `shell_list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShellListResult {
    pub shells: Vec<ShellEntry>,
}

/// `structuredContent` of `shell_close`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShellCloseResult {
    pub id: String,
    pub state: String,
}
