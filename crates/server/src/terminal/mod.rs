//! The `terminal` tool contract (docs/BEHAVIOUR.md §2): parameters, validation, and the rendering of a run
//! into a text block for the model plus `structuredContent` for programs.
//!
//! Validation happens before anything starts and every refusal is a tool error the model can
//! read and act on, never a crash: the server stays up whatever the arguments.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentty_core::limits::COMMAND_MAX_BYTES;
use agentty_guard::{Analysis, GuardConfig, Verdict, Workspace};
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

mod background;
mod handler;
pub(crate) mod notice;
pub mod parsed;
mod render;

pub use crate::escalation::SandboxPermissions;
pub(crate) use render::shaped_text;

/// Arguments of `terminal`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalParams {
    /// Shell command line, run with $SHELL -c. Give this or `argv`, not both.
    pub command: Option<String>,
    /// Program and arguments, executed directly without a shell. Give this or `command`.
    pub argv: Option<Vec<String>>,
    /// Working directory: absolute, or relative to the workspace root (the default).
    pub workdir: Option<String>,
    /// Variables added to the environment.
    pub env: Option<BTreeMap<String, String>>,
    /// Text fed to the process's stdin, followed by end-of-file. Without it stdin is empty.
    /// With `pty`, it is typed into the terminal instead, and no end-of-file follows.
    pub stdin: Option<String>,
    /// Kill the whole process tree after this many milliseconds (default 120000).
    #[schemars(range(min = 1, max = agentty_core::limits::TIMEOUT_MAX_MS))]
    pub timeout_ms: Option<u64>,
    /// "require_escalated" asks the user to run this one call without the write sandbox
    /// (give a `justification`); default "use_default".
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why the command must write outside the sandbox (shown to the user).
    pub justification: Option<String>,
    /// Run in the background: return a job id (t1, …) at once; read it with task_output,
    /// wait with task_wait, stop with task_stop. No timeout applies.
    pub background: Option<bool>,
    /// What reaching `timeout_ms` does: "kill" (default) stops the process tree; "background"
    /// moves the still-running command into the background as a job, losing no output.
    pub on_timeout: Option<OnTimeout>,
    /// Run under a pseudo-terminal, for programs that behave only on a terminal. Stops early
    /// (and says so) when the command waits for keyboard input.
    pub pty: Option<bool>,
    // Described from the parse crate's one list of types (which commands each recognizes).
    #[schemars(description = agentty_parse::parse_param_description())]
    pub parse: Option<bool>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    Kill,
    Background,
}

/// `structuredContent` of `terminal`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TerminalResult {
    /// success | failed | timeout | cancelled | killed
    pub status: Status,
    /// The exit code, when the process exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended the process (e.g. "SIGKILL"), when one did.
    pub signal: Option<String>,
    /// Cleaned stdout (head and tail when over 50 KB).
    pub stdout: String,
    /// Cleaned stderr (head and tail when over 50 KB).
    pub stderr: String,
    pub duration_ms: u64,
    pub pid: i32,
    /// True when the output returned is not all of it.
    pub truncated: bool,
    /// File holding the full merged output, when it was too long to return.
    pub spill_path: Option<String>,
    /// Notes for the reader: strays stopped, cd not persisting, spill failures.
    pub notes: Vec<String>,
    /// The sandbox line: mode, and whether writes were confined.
    pub sandbox: String,
    /// 2008 when the sandbox refused a write (the command ran).
    pub error_code: Option<u32>,
    /// The job id when the command runs in the background (status "background").
    pub job_id: Option<String>,
    /// The typed output, with `parse: true` for a command agentty knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parsed: Option<parsed::ParsedContent>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Success,
    Failed,
    Timeout,
    Cancelled,
    Killed,
    /// Running in the background as job `job_id`.
    Background,
}

/// A validated call, ready to spawn.
#[derive(Debug)]
pub struct Prepared {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// What the model asked to run, for notices and logs.
    pub display: String,
    pub workdir: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub stdin: Option<Vec<u8>>,
    pub timeout_ms: u64,
    /// Set when the whole command is a bare `cd X`.
    pub bare_cd: Option<String>,
    /// The user's justification, when the call asks to run without the sandbox.
    pub escalation: Option<String>,
    /// Start as a background job.
    pub background: bool,
    /// At the timeout, move the command into the background instead of stopping it.
    pub hand_over: bool,
    /// Run under a pseudo-terminal (docs/BEHAVIOUR.md §4).
    pub pty: bool,
    /// `parse: true`: the parser chosen from the command line, or why there is none.
    pub parse: Option<Result<parsed::Plan, String>>,
    /// The command line as the guard read it, once: every question before the run and the
    /// refusal check after it are asked of this reading.
    pub line: Analysis,
}

pub(crate) use crate::tools::entry::Refused;

/// Checks the arguments; every error is a sentence for the model.
pub fn prepare(
    params: TerminalParams,
    shell: &Path,
    workspace: &Workspace,
    guard: &GuardConfig,
    default_timeout_ms: u64,
) -> Result<Prepared, String> {
    prepare_judged(params, shell, workspace, guard, default_timeout_ms).map_err(|r| r.text)
}

/// [`prepare`], saying whether a refusal is the guard's.
pub(crate) fn prepare_judged(
    params: TerminalParams,
    shell: &Path,
    workspace: &Workspace,
    guard: &GuardConfig,
    default_timeout_ms: u64,
) -> Result<Prepared, Refused> {
    let timeout_ms = crate::tools::timing::timeout_ms(
        params.timeout_ms,
        default_timeout_ms,
        notice::TIMEOUT_PAST_MAX,
    )?;
    let workdir = workspace
        .resolve_workdir(params.workdir.as_deref())
        .map_err(|e| e.to_string())?;
    // The environment the command runs with: a `$VAR` unset there is judged as empty.
    let call_env: Vec<(String, String)> = params
        .env
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let place = agentty_guard::Place::at(&workdir).with_env(call_env);
    // A script on a shell's stdin runs with the same environment: judged at the same place.
    let stdin_place = place.clone();
    let argv_given = params.argv.clone();
    let Runs {
        program,
        args,
        display,
        bare_cd,
        line,
    } = what_runs(params.command, params.argv, shell, place)?;
    if let Verdict::Block(block) = line.verdict(guard) {
        crate::metrics::METRICS.guard_blocked(block.rule);
        return Err(Refused {
            text: block.message(),
            by_guard: true,
        });
    }
    // Every argument is checked before anything asks the user: a refusal after an approval
    // form would have asked for nothing.
    let pty = params.pty.unwrap_or(false);
    let background = params.background.unwrap_or(false);
    let hand_over = params.on_timeout == Some(OnTimeout::Background);
    if pty && (background || hand_over) {
        return Err(notice::PTY_NOT_BACKGROUND.into());
    }
    let parse = params.parse.unwrap_or(false);
    if parse && (pty || background) {
        return Err(notice::PARSE_NOT_HERE.into());
    }
    let escalation = match (params.sandbox_permissions, params.justification) {
        (Some(SandboxPermissions::RequireEscalated), Some(j)) if !j.trim().is_empty() => Some(j),
        (Some(SandboxPermissions::RequireEscalated), _) => {
            return Err(crate::escalation::notice::JUSTIFICATION_REQUIRED.into());
        }
        _ => None,
    };
    // A program that needs a terminal, on a pipe with no input, waits until the timeout.
    if !pty
        && params.stdin.is_none()
        && let Some(needs) = line.needs_terminal()
    {
        return Err(notice::needs_terminal(&needs).into());
    }
    let parse = parse.then(|| parsed::recognize(&line, argv_given.as_deref()));
    let env = crate::tools::entry::check_env(params.env, &workdir, guard, false)?;
    crate::tools::entry::check_stdin(
        params.stdin.as_deref(),
        || line.reads_stdin_as_script(),
        pty,
        &stdin_place,
        guard,
    )?;
    Ok(Prepared {
        program,
        args,
        display,
        workdir,
        env,
        stdin: params.stdin.map(String::into_bytes),
        timeout_ms,
        bare_cd,
        escalation,
        background,
        hand_over,
        pty,
        parse,
        line,
    })
}

/// What a call runs: the program and its arguments, the line as the model gave it, and the
/// guard's one reading of it.
struct Runs {
    program: OsString,
    args: Vec<OsString>,
    display: String,
    bare_cd: Option<String>,
    line: Analysis,
}

/// `command` (run by `shell -c`) or `argv` (run directly), exactly one, checked for what no
/// program can take (empty, NUL bytes, past the kernel's argument limit) and read once.
fn what_runs(
    command: Option<String>,
    argv: Option<Vec<String>>,
    shell: &Path,
    place: agentty_guard::Place,
) -> Result<Runs, String> {
    match (command, argv) {
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(notice::EMPTY_COMMAND.into());
            }
            if command.contains('\0') {
                return Err(crate::tools::notice::nul_byte("command"));
            }
            if command.len() > COMMAND_MAX_BYTES {
                return Err(notice::command_too_long("`command`", command.len()));
            }
            Ok(Runs {
                program: shell.as_os_str().to_owned(),
                args: vec![OsString::from("-c"), OsString::from(&command)],
                bare_cd: bare_cd_target(&command),
                line: Analysis::of_line(&command, Some(place)),
                display: command,
            })
        }
        (None, Some(argv)) => {
            let Some(first) = argv.first() else {
                return Err(notice::EMPTY_ARGV.into());
            };
            if first.is_empty() {
                return Err(notice::EMPTY_ARGV.into());
            }
            if argv.iter().any(|a| a.contains('\0')) {
                return Err(crate::tools::notice::nul_byte("argv"));
            }
            if let Some(long) = argv.iter().find(|a| a.len() > COMMAND_MAX_BYTES) {
                return Err(notice::command_too_long("an `argv` element", long.len()));
            }
            Ok(Runs {
                program: OsString::from(first),
                args: argv[1..].iter().map(OsString::from).collect(),
                display: argv.join(" "),
                bare_cd: None,
                line: Analysis::of_argv(&argv, Some(place)),
            })
        }
        _ => Err(notice::COMMAND_OR_ARGV.into()),
    }
}

/// `cd X` (or bare `cd`) and nothing else: the one case where the model may believe the
/// directory changed for the next call.
fn bare_cd_target(command: &str) -> Option<String> {
    let trimmed = command.trim();
    if trimmed.contains(|c: char| ";&|<>()$`\n\\\"'".contains(c)) {
        return None;
    }
    let mut words = trimmed.split_whitespace();
    if words.next() != Some("cd") {
        return None;
    }
    let target = words.next().unwrap_or("~").to_owned();
    words.next().is_none().then_some(target)
}

/// The timeout as a duration.
pub fn timeout(prepared: &Prepared) -> Duration {
    Duration::from_millis(prepared.timeout_ms)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
