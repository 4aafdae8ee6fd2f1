//! The persistent-shell family (docs/BEHAVIOUR.md §4): `shell_open`, `shell_send`, `shell_read`,
//! `shell_list`, `shell_close`.
//!
//! Contracts only: validation, the guard on typed command lines, the workspace boundary and
//! sandbox decided once at open (an escalation at open covers the whole shell), and rendering.
//! The engine is `agentty_core::pty`; every word is in [`crate::shell_notice`]. Shells are
//! registered in the session's one job table, so `task_list` / `task_output` see them too.

use std::sync::Arc;
use std::time::Duration;

use agentty_core::jobs::{Job, OutputRing, READ_MAX_BYTES};
use agentty_core::pty::integration::Flavor;
use agentty_core::pty::{
    COLS_DEFAULT, OpenError, OpenSpec, PtyError, ROWS_DEFAULT, Regex, SEND_TIMEOUT_DEFAULT_MS,
    SIZE_MAX, SendRequest, SendStatus, Shell,
};
use agentty_core::spawn::{SpawnSpec, StdinMode};
use agentty_guard::Verdict;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use serde::Serialize;

use crate::escalation;
use crate::server::{Agentty, input_schema, parse_args, tool_error};
use crate::shell_notice as say;
use crate::terminal::SandboxPermissions;

mod schema;
pub use schema::*;

/// The directory the shell is in now, as the kernel knows it.
fn shell_cwd(pid: i32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// How long, past the close grace, a send that saw its shell end waits for the exit status.
const SHELL_EXIT_WAIT_MS: u64 = 500;

fn success<T: Serialize>(text: String, structured: &T) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = serde_json::to_value(structured).ok();
    result
}

use crate::timing::millis as ms;

/// Both or neither of `cols`/`rows`, each in range.
fn size(cols: Option<u16>, rows: Option<u16>) -> Result<Option<(u16, u16)>, String> {
    match (cols, rows) {
        (None, None) => Ok(None),
        (Some(c), Some(r)) if (1..=SIZE_MAX).contains(&c) && (1..=SIZE_MAX).contains(&r) => {
            Ok(Some((c, r)))
        }
        (Some(c), Some(r)) => Err(say::bad_size(c, r)),
        _ => Err(say::half_size()),
    }
}

impl Agentty {
    fn open_shell_of(&self, id: &str) -> Result<(Arc<Job>, Arc<Shell>), CallToolResult> {
        self.shells()
            .get(id)
            .map_err(|why| tool_error(say::gone(id, &why, self.shells().idle_limit())))
    }
}

#[tool_router(router = shells_router, vis = "pub(crate)")]
impl Agentty {
    #[tool(
        name = "shell_open",
        description = say::SHELL_OPEN_DESCRIPTION,
        input_schema = input_schema::<ShellOpenParams>(),
        output_schema = schema_for_output::<ShellOpenResult>(),
        annotations(
            title = "Open a shell",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn shell_open(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let p: ShellOpenParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (cols, rows) = match size(p.cols, p.rows) {
            Ok(s) => s.unwrap_or((COLS_DEFAULT, ROWS_DEFAULT)),
            Err(e) if p.cols.is_some() != p.rows.is_some() => {
                // One of the two alone is fine at open: the other keeps its default.
                let c = p.cols.unwrap_or(COLS_DEFAULT);
                let r = p.rows.unwrap_or(ROWS_DEFAULT);
                if !(1..=SIZE_MAX).contains(&c) || !(1..=SIZE_MAX).contains(&r) {
                    return tool_error(e);
                }
                (c, r)
            }
            Err(e) => return tool_error(e),
        };
        let workdir = match self.workspace().resolve_workdir(p.workdir.as_deref()) {
            Ok(dir) => dir,
            Err(e) => return tool_error(e.to_string()),
        };
        let env = match crate::entry::check_env(p.env, &workdir, &self.settings().guard, true) {
            Ok(env) => env,
            Err(e) => return tool_error(e),
        };
        let shell_path = self.settings().shell.clone();
        // Over the cap the open would be refused after the user approved it: say so first (the
        // open checks again).
        if p.sandbox_permissions == Some(SandboxPermissions::RequireEscalated)
            && let Err(cap) = self.jobs().check_cap(agentty_core::jobs::JobKind::Shell)
        {
            return tool_error(say::cap_reached(&cap.running));
        }
        let escalated = match (p.sandbox_permissions, p.justification) {
            (Some(SandboxPermissions::RequireEscalated), Some(j)) if !j.trim().is_empty() => {
                let what = format!("an interactive shell ({})", shell_path.display());
                match escalation::ask(&ctx.peer, &what, &j).await {
                    Ok(()) => true,
                    Err(refusal) => return tool_error(refusal),
                }
            }
            (Some(SandboxPermissions::RequireEscalated), _) => {
                return tool_error(crate::notice::JUSTIFICATION_REQUIRED.into());
            }
            _ => false,
        };
        let confine = match self.confinement().confine(escalated) {
            Ok(l) => l,
            Err(reason) => return tool_error(crate::notice::sandbox_failed(&reason)),
        };
        let (call, marker) = self.next_call();
        let output = Arc::new(OutputRing::new(Some((
            self.spill_store().clone(),
            format!("shell-{call}"),
        ))));
        let spec = OpenSpec {
            spawn: SpawnSpec {
                program: shell_path.clone().into_os_string(),
                args: Vec::new(),
                cwd: workdir.clone(),
                env,
                stdin: StdinMode::Null,
                marker,
                confine,
            },
            cols,
            rows,
            output,
        };
        let label = shell_path.display().to_string();
        if self.cancelled_already(&ctx) {
            return tool_error(say::CANCELLED_BEFORE_OPEN.into());
        }
        let (job, shell) = match self.shells().open(spec, label.clone()).await {
            Ok(opened) => opened,
            Err(OpenError::Cap(cap)) => return tool_error(say::cap_reached(&cap.0.running)),
            Err(OpenError::Pty(PtyError::NoPrompt(waited))) => {
                return tool_error(say::no_prompt(waited));
            }
            Err(OpenError::Pty(PtyError::EndedAtStart(text))) => {
                return tool_error(say::ended_at_start(&text));
            }
            Err(OpenError::Pty(e)) => return tool_error(say::open_failed(&e.to_string())),
        };
        let marked = shell.flavor != Flavor::Unknown;
        let sandbox = self.confinement().line(escalated);
        let workdir = workdir.display().to_string();
        let text = format!(
            "{}\n{sandbox}",
            say::opened(&job.id, &label, &workdir, cols, rows, marked)
        );
        success(
            text,
            &ShellOpenResult {
                id: job.id.clone(),
                pid: shell.pid,
                shell: label,
                workdir,
                cols,
                rows,
                integration: marked,
                sandbox,
            },
        )
    }

    #[tool(
        name = "shell_send",
        description = say::SHELL_SEND_DESCRIPTION,
        input_schema = input_schema::<ShellSendParams>(),
        output_schema = schema_for_output::<ShellSendResult>(),
        annotations(
            title = "Type into a shell",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn shell_send(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let p: ShellSendParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let timeout_ms = match crate::timing::timeout_ms(
            p.timeout_ms,
            SEND_TIMEOUT_DEFAULT_MS,
            say::SEND_PAST_MAX,
        ) {
            Ok(ms) => ms,
            Err(e) => return tool_error(e),
        };
        let resize = match size(p.cols, p.rows) {
            Ok(r) => r,
            Err(e) => return tool_error(e),
        };
        let wait_for = match p.wait_for.as_deref().map(Regex::new).transpose() {
            Ok(re) => re,
            Err(e) => return tool_error(say::bad_regex(&e.to_string())),
        };
        let (job, shell) = match self.open_shell_of(&p.id) {
            Ok(found) => found,
            Err(e) => return e,
        };
        // A typed line is a command line: the guard applies as in `terminal`, judged in the
        // directory the shell is in now, whole even when typed over several sends.
        if let Some(line) = crate::entry::completed_lines(&shell.pending_line(), &p.input) {
            let verdict = match shell_cwd(shell.pid) {
                Some(cwd) => agentty_guard::check_at(
                    &line,
                    &self.settings().guard,
                    agentty_guard::Place::at(&cwd),
                ),
                None => agentty_guard::check(&line, &self.settings().guard),
            };
            if let Verdict::Block(block) = verdict {
                return tool_error(block.message());
            }
        }
        if let Some((cols, rows)) = resize
            && let Err(e) = shell.resize(cols, rows)
        {
            return tool_error(say::open_failed(&e.to_string()));
        }
        let request = SendRequest {
            input: &p.input,
            timeout: Duration::from_millis(timeout_ms),
            wait_for: wait_for.as_ref(),
        };
        if self.cancelled_already(&ctx) {
            return tool_error(say::CANCELLED_BEFORE_TYPING.into());
        }
        let max = agentty_core::limits::COMMAND_MAX_BYTES;
        if let Err(len) = shell.check_typed(&p.input, max) {
            return tool_error(say::line_too_long(len, max));
        }
        // Cancellation returns at once; the shell keeps whatever is running (like a timeout).
        let outcome = tokio::select! {
            r = shell.send(request) => r,
            () = ctx.ct.cancelled() => return tool_error("cancelled; the shell keeps running".into()),
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(PtyError::Closed) => {
                let why = self
                    .shells()
                    .get(&job.id)
                    .err()
                    .unwrap_or(agentty_core::pty::Gone::Closed);
                return tool_error(say::gone(&job.id, &why, self.shells().idle_limit()));
            }
            Err(PtyError::Busy) => return tool_error(say::busy(&job.id, timeout_ms)),
            Err(e) => return tool_error(say::open_failed(&e.to_string())),
        };
        let elapsed = ms(outcome.elapsed);
        let mut outcome = outcome;
        // A full-screen program (vim, less, top) draws with cursor moves: its stream, flattened,
        // is a wall of spaces and `~`. What it shows is the rendered screen, and the line it
        // waits at is the whole screen, not a prompt.
        let full_screen = outcome.full_screen;
        if full_screen {
            outcome.output = shell.screen().text;
            outcome.dropped = 0;
            if let SendStatus::AwaitingInput { prompt, .. } = &mut outcome.status {
                prompt.clear();
            }
        }
        // The terminal closed first; the exit status follows within moments. Wait for it, so
        // this reply and a shell_list right after it agree that the shell is gone.
        let ended = if matches!(outcome.status, SendStatus::ShellEnded) {
            let wait =
                Duration::from_millis(agentty_core::pty::CLOSE_GRACE_MS + SHELL_EXIT_WAIT_MS);
            tokio::time::timeout(wait, job.ended())
                .await
                .ok()
                .map(|state| say::state_word(&state))
        } else {
            None
        };
        let (status, exit_code, prompt, line) = match &outcome.status {
            SendStatus::Done(code) => (
                SendState::Done,
                Some(*code),
                None,
                say::done(*code, elapsed),
            ),
            SendStatus::AtPrompt => (SendState::AtPrompt, None, None, say::AT_PROMPT.into()),
            SendStatus::AwaitingInput { .. } if full_screen => (
                SendState::AwaitingInput,
                None,
                None,
                say::full_screen(&job.id),
            ),
            SendStatus::AwaitingInput { prompt, by_shell } => {
                let prompt = say::short_prompt(prompt);
                let line = say::awaiting_input(&prompt, *by_shell);
                (SendState::AwaitingInput, None, Some(prompt), line)
            }
            SendStatus::Matched => (SendState::Matched, None, None, say::matched(elapsed)),
            SendStatus::Quiet => (SendState::Quiet, None, None, say::quiet(elapsed)),
            SendStatus::Running => (
                SendState::Running,
                None,
                None,
                say::running(elapsed, &job.id, outcome.cursor_next),
            ),
            SendStatus::ShellEnded => (
                SendState::ShellEnded,
                None,
                None,
                say::shell_ended(&job.id, ended.as_deref()),
            ),
        };
        // A command that finished under the sandbox, and whose output shows a refused write.
        let sandbox_denied = match exit_code {
            // Whatever the exit code: `cp x ~/y 2>&1 | tail -3` exits 0 and still was refused.
            Some(code) if job.confined => {
                // The shell is where the command left it: its cwd now is exact.
                let cwd = shell_cwd(shell.pid);
                let ran = cwd.as_deref().map(|cwd| agentty_sandbox::RanIn {
                    cwd,
                    command: &p.input,
                });
                self.confinement()
                    .denial(false, Some(code), &outcome.output, self.retry(true), ran)
            }
            _ => None,
        };
        let mut text = String::new();
        if !outcome.ended_before.is_empty() {
            text.push_str(&say::ended_before(&outcome.ended_before));
            text.push('\n');
        }
        if outcome.dropped > 0 {
            // Where the left-out head is: still in the ring, or only in the spill file.
            let head = job.output.read(Some(outcome.cursor_from), 0);
            let spill = head.spill_path.filter(|_| head.dropped > 0);
            text.push_str(&say::dropped(
                outcome.dropped,
                &job.id,
                outcome.cursor_from,
                spill.as_deref(),
            ));
            text.push('\n');
        }
        text.push_str(&outcome.output);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&line);
        if let Some(sentence) = &sandbox_denied {
            text.push('\n');
            text.push_str(&crate::notice::sandbox_denied(sentence));
        }
        if let Some(warning) = self.planted_warning() {
            text.push('\n');
            text.push_str(&warning);
        }
        success(
            text,
            &ShellSendResult {
                id: job.id.clone(),
                status,
                exit_code,
                prompt,
                output: outcome.output,
                dropped_bytes: outcome.dropped,
                cursor_from: outcome.cursor_from,
                cursor: outcome.cursor_next,
                elapsed_ms: elapsed,
                error_code: sandbox_denied
                    .as_ref()
                    .map(|_| crate::confinement::SANDBOX_DENIED),
                sandbox_denied,
                earlier_exit_codes: outcome.ended_before,
            },
        )
    }

    #[tool(
        name = "shell_read",
        description = say::SHELL_READ_DESCRIPTION,
        input_schema = input_schema::<ShellReadParams>(),
        output_schema = schema_for_output::<ShellReadResult>(),
        annotations(
            title = "Read a shell",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn shell_read(&self, args: JsonObject) -> CallToolResult {
        let p: ShellReadParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (want_screen, want_raw) = (p.screen.unwrap_or(false), p.raw.unwrap_or(false));
        if want_screen && want_raw {
            return tool_error(say::SCREEN_AND_RAW.into());
        }
        let resize = match size(p.cols, p.rows) {
            Ok(r) => r,
            Err(e) => return tool_error(e),
        };
        // A closed shell's output stays readable; only screen, raw and resize need it open.
        let (job, shell) = match self.shells().get(&p.id) {
            Ok((job, shell)) => (job, Some(shell)),
            Err(why) => match self.jobs().get(&p.id) {
                Some(job) if why != agentty_core::pty::Gone::NotAShell => (job, None),
                _ => return tool_error(say::gone(&p.id, &why, self.shells().idle_limit())),
            },
        };
        let state = say::state_word(&job.state());
        if want_screen || want_raw || resize.is_some() {
            let Some(shell) = &shell else {
                return tool_error(say::NO_SCREEN.into());
            };
            if let Some((cols, rows)) = resize
                && let Err(e) = shell.resize(cols, rows)
            {
                return tool_error(say::open_failed(&e.to_string()));
            }
            if want_screen {
                let screen = shell.screen();
                return success(
                    screen.text.clone(),
                    &ShellReadResult {
                        id: job.id.clone(),
                        state,
                        text: screen.text,
                        from: None,
                        next: None,
                        dropped: 0,
                        remaining: 0,
                        total: job.output.total(),
                        spill_path: None,
                        spill_error: None,
                        screen: Some(ScreenInfo {
                            cols: screen.cols,
                            rows: screen.rows,
                            cursor_row: screen.cursor_row,
                            cursor_col: screen.cursor_col,
                            alternate: screen.alternate,
                        }),
                    },
                );
            }
            if want_raw {
                let raw = shell.raw_tail(READ_MAX_BYTES);
                return success(
                    raw.escape_debug().to_string(),
                    &ShellReadResult {
                        id: job.id.clone(),
                        state,
                        text: raw,
                        from: None,
                        next: None,
                        dropped: 0,
                        remaining: 0,
                        total: job.output.total(),
                        spill_path: None,
                        spill_error: None,
                        screen: None,
                    },
                );
            }
        }
        if let Some(shell) = &shell {
            shell.touch_read();
        }
        let total = job.output.total();
        if let Some(since) = p.since
            && since > total
        {
            return tool_error(say::cursor_past_end(since, total));
        }
        let slice = job.output.read(p.since, READ_MAX_BYTES);
        let mut text = String::new();
        if slice.dropped > 0 {
            // One wording with task_output: the buffer is the same kind, and so is its spill.
            text.push_str(&crate::task_notice::scrolled_out(
                slice.dropped,
                slice.spill_path.as_deref(),
                slice.spill_error.as_deref(),
            ));
            text.push('\n');
        }
        text.push_str(if slice.text.is_empty() {
            crate::notice::NO_OUTPUT
        } else {
            &slice.text
        });
        if !text.ends_with('\n') {
            text.push('\n');
        }
        // Always the cursor: a host that shows only the text still lets the model read on.
        if slice.remaining > 0 {
            text.push_str(&say::more(slice.next, slice.remaining, &job.id));
        } else if shell.is_some() {
            text.push_str(&say::read_on(slice.next, &job.id));
        } else {
            text.push_str(say::END_OF_OUTPUT);
        }
        success(
            text,
            &ShellReadResult {
                id: job.id.clone(),
                state,
                text: slice.text,
                from: Some(slice.from),
                next: Some(slice.next),
                dropped: slice.dropped,
                remaining: slice.remaining,
                total: slice.total,
                spill_path: slice.spill_path.map(|p| p.display().to_string()),
                spill_error: slice.spill_error,
                screen: None,
            },
        )
    }

    #[tool(
        name = "shell_list",
        description = say::SHELL_LIST_DESCRIPTION,
        input_schema = input_schema::<ShellListParams>(),
        output_schema = schema_for_output::<ShellListResult>(),
        annotations(
            title = "List shells",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn shell_list(&self, args: JsonObject) -> CallToolResult {
        if let Err(e) = parse_args::<ShellListParams>(args) {
            return e;
        }
        let mut lines = Vec::new();
        let mut shells = Vec::new();
        for (job, shell) in self.shells().list() {
            let state = say::state_word(&job.state());
            let size = shell.as_ref().map(|s| s.size());
            let idle = shell.as_ref().map(|s| s.last_used().elapsed());
            let mut line = format!(
                "{} [{state}] {} in {}",
                job.id,
                job.label,
                job.workdir.display()
            );
            if let (Some((c, r)), Some(idle)) = (size, idle) {
                line.push_str(&format!(" · {c}x{r} · idle {}", say::human_duration(idle)));
            }
            line.push_str(&format!(" · {} bytes of output", job.output.total()));
            lines.push(line);
            shells.push(ShellEntry {
                id: job.id.clone(),
                state,
                shell: job.label.clone(),
                workdir: job.workdir.display().to_string(),
                pid: job.pid,
                cols: size.map(|s| s.0),
                rows: size.map(|s| s.1),
                idle_ms: idle.map(ms),
                age_ms: ms(job.started.elapsed()),
                output_bytes: job.output.total(),
            });
        }
        let text = if lines.is_empty() {
            say::NO_SHELLS.to_owned()
        } else {
            lines.join("\n")
        };
        success(text, &ShellListResult { shells })
    }

    #[tool(
        name = "shell_close",
        description = say::SHELL_CLOSE_DESCRIPTION,
        input_schema = input_schema::<ShellCloseParams>(),
        output_schema = schema_for_output::<ShellCloseResult>(),
        annotations(
            title = "Close a shell",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn shell_close(&self, args: JsonObject) -> CallToolResult {
        let p: ShellCloseParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        match self.shells().close(&p.id).await {
            Ok(job) => success(
                say::closed(&job.id),
                &ShellCloseResult {
                    id: job.id.clone(),
                    state: say::state_word(&job.state()),
                },
            ),
            Err(why) => tool_error(say::gone(&p.id, &why, self.shells().idle_limit())),
        }
    }
}
