//! The `terminal` tool contract (docs/BEHAVIOUR.md §2): parameters, validation, and the rendering of a run
//! into a text block for the model plus `structuredContent` for programs.
//!
//! Validation happens before anything starts and every refusal is a tool error the model can
//! read and act on, never a crash: the server stays up whatever the arguments.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentty_core::Exit;
use agentty_core::Shaped;
use agentty_core::limits::COMMAND_MAX_BYTES;
use agentty_core::run::{RunOutcome, RunStatus, Spill, Strays};
use agentty_guard::{Analysis, GuardConfig, Verdict, Workspace};
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

mod background;
mod handler;
pub(crate) mod notice;
pub mod parsed;

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
    /// Kill the whole process tree after this many milliseconds (default 120000, max 600000).
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
    /// Typed JSON instead of text for known commands (ls -l, ps, df, free, git status/log,
    /// curl -I, cargo/gcc/tsc/eslint/go, cargo test/pytest/go test/jest): record tables, shared
    /// values in "same". Schemas: agentty://schema/<Type> resources. Others: text and a note.
    pub parse: Option<bool>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    Kill,
    Background,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPermissions {
    UseDefault,
    RequireEscalated,
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

/// Checks the arguments; every error is a sentence for the model.
pub fn prepare(
    params: TerminalParams,
    shell: &Path,
    workspace: &Workspace,
    guard: &GuardConfig,
    default_timeout_ms: u64,
) -> Result<Prepared, String> {
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
    let argv_given = params.argv.clone();
    let (program, args, display, bare_cd, line) = match (params.command, params.argv) {
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
            let line = Analysis::of_line(&command, Some(place));
            let bare_cd = bare_cd_target(&command);
            let args = vec![OsString::from("-c"), OsString::from(&command)];
            (shell.as_os_str().to_owned(), args, command, bare_cd, line)
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
            let line = Analysis::of_argv(&argv, Some(place));
            let display = argv.join(" ");
            let program = OsString::from(first);
            (
                program,
                argv[1..].iter().map(OsString::from).collect(),
                display,
                None,
                line,
            )
        }
        _ => return Err(notice::COMMAND_OR_ARGV.into()),
    };
    if let Verdict::Block(block) = line.verdict(guard) {
        return Err(block.message());
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
        return Err(notice::needs_terminal(&needs));
    }
    let parse = parse.then(|| parsed::recognize(&line, argv_given.as_deref()));
    let env = crate::tools::entry::check_env(params.env, &workdir, guard, false)?;
    crate::tools::entry::check_stdin(
        params.stdin.as_deref(),
        || line.reads_stdin_as_script(),
        &workdir,
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

/// What the sandbox says about one call: its line, and a denial sentence when it refused a write.
pub struct SandboxReport {
    pub line: String,
    pub denial: Option<String>,
}

/// Renders a run for the model (text) and for programs (structured). `path_notes`: what the
/// calling path adds (the PTY path's awaiting-input note), listed with the others, before the
/// sandbox line.
pub fn render(
    prepared: &Prepared,
    outcome: &RunOutcome,
    sandbox: SandboxReport,
    path_notes: Vec<String>,
) -> (String, TerminalResult) {
    let ms = crate::tools::timing::millis(outcome.duration);
    let mut notes = path_notes;
    let (parsed, parse_note) = typed(prepared, outcome);
    notes.extend(parse_note);
    let mut text = match &parsed {
        // The status line first, then the data: the typed line is the whole answer.
        Some(_) => String::new(),
        None => shaped_text(&outcome.output),
    };
    if text.is_empty() && parsed.is_none() {
        text.push_str(crate::job_words::NO_OUTPUT);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    match &outcome.spill {
        Spill::NotNeeded => {}
        Spill::Written(path) => {
            text.push_str(&notice::spill_hint(
                path,
                outcome.output_bytes,
                outcome.output_lines,
            ));
            text.push('\n');
        }
        Spill::Failed(reason) => notes.push(notice::spill_failed(reason)),
    }
    let (exit_code, signal) = match outcome.exit {
        Some(Exit::Code(code)) => (Some(code), None),
        Some(Exit::Signal(sig)) => (None, Some(agentty_core::signal_name(sig))),
        None => (None, None),
    };
    let status_line = match outcome.status {
        RunStatus::Timeout => notice::timed_out(prepared.timeout_ms),
        RunStatus::Cancelled => notice::CANCELLED.to_owned(),
        RunStatus::Killed => notice::over_capture(),
        RunStatus::Success | RunStatus::Failed => match (&exit_code, &signal) {
            (Some(code), _) => notice::exited(*code, ms),
            (None, Some(sig)) => notice::signalled(sig, ms),
            (None, None) => notice::signalled("an unknown cause", ms),
        },
    };
    match outcome.strays {
        Some(Strays::HeldOutput(n)) => notes.push(notice::stray_held_output(n)),
        Some(Strays::Lingering(n)) => notes.push(notice::stray_lingering(n)),
        None => {}
    }
    if let Some(stopped) = outcome.stopped
        && stopped.stuck > 0
    {
        notes.push(notice::stuck(stopped.stuck));
    }
    // Only when the cd worked: after a failed one the shell's own error says what happened, and
    // "pass the workdir parameter" would point at a directory that is not there.
    if let Some(dir) = &prepared.bare_cd
        && exit_code == Some(0)
    {
        notes.push(notice::cd_note(dir));
    }
    let error_code = sandbox
        .denial
        .as_ref()
        .map(|_| crate::confinement::notice::SANDBOX_DENIED);
    if let Some(denial) = &sandbox.denial {
        notes.push(crate::confinement::notice::sandbox_denied(denial));
    }
    text.push_str(&status_line);
    if let Some((_, line)) = &parsed {
        text.push('\n');
        text.push_str(line);
    }
    for note in &notes {
        text.push('\n');
        text.push_str(note);
    }
    text.push('\n');
    text.push_str(&sandbox.line);
    let structured = TerminalResult {
        status: match outcome.status {
            RunStatus::Success => Status::Success,
            RunStatus::Failed => Status::Failed,
            RunStatus::Timeout => Status::Timeout,
            RunStatus::Cancelled => Status::Cancelled,
            RunStatus::Killed => Status::Killed,
        },
        exit_code,
        signal,
        stdout: shaped_text(&outcome.stdout),
        stderr: shaped_text(&outcome.stderr),
        duration_ms: ms,
        pid: outcome.pid,
        truncated: outcome.output.is_truncated()
            || outcome.stdout.is_truncated()
            || outcome.stderr.is_truncated()
            || outcome.status == RunStatus::Killed,
        spill_path: match &outcome.spill {
            Spill::Written(path) => Some(path.display().to_string()),
            _ => None,
        },
        notes,
        sandbox: sandbox.line,
        error_code,
        job_id: None,
        parsed: parsed.map(|(content, _)| content),
    };
    (text, structured)
}

/// With `parse: true`: the typed result and its line for the model, or the note saying why
/// there is none.
fn typed(
    prepared: &Prepared,
    outcome: &RunOutcome,
) -> (Option<(parsed::ParsedContent, String)>, Option<String>) {
    let plan = match &prepared.parse {
        None => return (None, None),
        Some(Err(reason)) => return (None, Some(notice::not_parsed(reason))),
        Some(Ok(plan)) => plan,
    };
    let finished = matches!(outcome.status, RunStatus::Success | RunStatus::Failed);
    let Some(whole) = outcome.whole.as_ref().filter(|_| finished) else {
        return (
            None,
            Some(notice::not_parsed(notice::NOT_PARSED_UNFINISHED)),
        );
    };
    let exit_code = outcome.exit.and_then(Exit::code);
    let budget = agentty_core::limits::INLINE_LIMIT_BYTES;
    match parsed::parse(plan, whole, exit_code, budget) {
        Ok((result, cut)) => {
            let note = cut.map(|cut| {
                let records = agentty_parse::TYPES
                    .iter()
                    .find(|t| t.name == result.type_name)
                    .map_or("records", |t| t.records);
                notice::parsed_cut(cut.omitted as u64, (cut.kept + cut.omitted) as u64, records)
            });
            let (content, json) = parsed::answer(result, cut);
            let line = notice::parsed_line(&content.type_name, &json);
            (Some((content, line)), note)
        }
        Err(reason) => (None, Some(notice::not_parsed(&reason))),
    }
}

/// The merged output as the model reads it (head+tail when long), for denial detection.
pub fn output_text(outcome: &RunOutcome) -> String {
    shaped_text(&outcome.output)
}

pub(crate) fn shaped_text(shaped: &Shaped) -> String {
    match shaped {
        Shaped::Whole(text) => text.clone(),
        Shaped::HeadTail {
            head,
            tail,
            omitted_bytes,
            omitted_lines,
        } => {
            let mut out = head.clone();
            out.push_str(&notice::omitted(*omitted_bytes, *omitted_lines));
            out.push_str(tail);
            out
        }
    }
}

/// The timeout as a duration.
pub fn timeout(prepared: &Prepared) -> Duration {
    Duration::from_millis(prepared.timeout_ms)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
