//! `shell_send`: keystrokes into a shell, and the wait for the command to finish, for its
//! prompt, a `wait_for` match, or for keyboard input the program is waiting on.

use std::time::Duration;

use agentty_core::pty::{PtyError, Regex, SEND_TIMEOUT_DEFAULT_MS, SendRequest, SendStatus};
use agentty_guard::Verdict;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;

use super::notice as say;
use crate::server::Agentty;
use crate::tools::{parse_args, tool_error};

use super::*;

impl Agentty {
    pub(super) async fn send_shell(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let mut p: ShellSendParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (input, secret) = match (p.input.take(), p.secret.take()) {
            (Some(input), None) => (input, None),
            (None, Some(what)) => (String::new(), Some(what)),
            (Some(_), Some(_)) => return tool_error(say::INPUT_OR_SECRET.into()),
            (None, None) => return tool_error(say::INPUT_NEEDED.into()),
        };
        let timeout_ms = match crate::tools::timing::timeout_ms(
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
        // A secret: the user types it (web view); then this send waits on what follows, as a
        // send with no input does.
        let mut entered = None;
        let mut secret_from = 0;
        if let Some(what) = &secret {
            match self.ask_secret(&job.id, &shell, what, &ctx).await {
                Ok(super::secret::SecretAsk::Entered(note, from)) => {
                    entered = Some(note);
                    secret_from = from;
                }
                Ok(super::secret::SecretAsk::Later(address)) => {
                    return self.secret_later(&job.id, &shell, what, &address);
                }
                Err(refusal) => return tool_error(refusal),
            }
        }
        // A typed line is a command line: the guard applies as in `terminal`, judged in the
        // directory the shell is in now, whole even when typed over several sends.
        if let Some(line) = crate::tools::entry::completed_lines(&shell.pending_line(), &input) {
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
            input: &input,
            timeout: Duration::from_millis(timeout_ms),
            wait_for: wait_for.as_ref(),
        };
        if self.cancelled_already(&ctx) {
            return tool_error(say::CANCELLED_BEFORE_TYPING.into());
        }
        let max = agentty_core::limits::COMMAND_MAX_BYTES;
        if let Err(len) = shell.check_typed(&input, max) {
            return tool_error(say::line_too_long(len, max));
        }
        // Cancellation returns at once; the shell keeps whatever is running (like a timeout).
        let outcome = tokio::select! {
            r = shell.send(request) => r,
            () = ctx.ct.cancelled() => return tool_error(say::SEND_CANCELLED.into()),
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
        // The program that took the secret may have finished before this wait began: its
        // output and exit code are then what followed the secret.
        if entered.is_some()
            && matches!(outcome.status, SendStatus::AtPrompt)
            && let Some(code) = outcome.ended_before.pop()
        {
            let slice = job
                .output
                .read(Some(secret_from), agentty_core::jobs::READ_MAX_BYTES);
            outcome.status = SendStatus::Done(code);
            outcome.output = slice.text;
            outcome.cursor_from = slice.from;
        }
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
                self.confinement().denial(
                    false,
                    Some(code),
                    &outcome.output,
                    self.retry(true),
                    &input,
                    || shell_cwd(shell.pid),
                )
            }
            _ => None,
        };
        let mut text = String::new();
        if let Some(note) = entered {
            text.push_str(&note);
            text.push('\n');
        }
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
        if outcome.untyped > 0 {
            text.push('\n');
            text.push_str(&say::untyped(outcome.untyped, &job.id));
        }
        if let Some(sentence) = &sandbox_denied {
            text.push('\n');
            text.push_str(&crate::confinement::notice::sandbox_denied(sentence));
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
                    .map(|_| crate::confinement::notice::SANDBOX_DENIED),
                sandbox_denied,
                earlier_exit_codes: outcome.ended_before,
                untyped_bytes: outcome.untyped as u64,
            },
        )
    }
}
