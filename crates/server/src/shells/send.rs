//! `shell_send`: keystrokes into a shell, and the wait for the command to finish, for its
//! prompt, a `wait_for` match, or for keyboard input the program is waiting on.
//!
//! In steps: the arguments are checked ([`Send::checked`]); a secret, when one is asked for,
//! is typed by the user first; the line the input completes is judged by the guard; the keys
//! are typed and the shell waited on; what came back is read as the model should see it
//! (the secret's command, a full-screen program's screen, the shell's end); then it is said.

use std::sync::Arc;
use std::time::Duration;

use agentty_core::jobs::Job;
use agentty_core::pty::line_editor::editing_key;
use agentty_core::pty::probe::KeyReader;
use agentty_core::pty::{
    PtyError, Regex, SEND_TIMEOUT_DEFAULT_MS, SendOutcome, SendRequest, SendStatus, Shell,
};
use agentty_guard::Verdict;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;

use super::notice as say;
use crate::server::Agentty;
use crate::tools::{parse_args, tool_error};

use super::*;

/// A `shell_send` whose arguments were checked, with the shell it types into.
struct Send {
    input: String,
    /// `secret`: what the program asks for, which the user types instead of the model.
    secret: Option<String>,
    timeout_ms: u64,
    resize: Option<(u16, u16)>,
    wait_for: Option<Regex>,
    job: Arc<Job>,
    shell: Arc<Shell>,
}

/// A typed secret: the note for the model and the output cursor where what follows it starts.
struct Entered {
    note: String,
    from: u64,
}

/// What the send ended in, as the reply states it.
struct Said {
    status: SendState,
    exit_code: Option<i32>,
    prompt: Option<String>,
    line: String,
}

#[expect(
    clippy::result_large_err,
    reason = "the error is the tool's answer itself, made once on a failed call"
)]
impl Send {
    /// The arguments checked, in the order a model fixes them, and the shell found.
    fn checked(agentty: &Agentty, args: JsonObject) -> Result<Self, CallToolResult> {
        let mut p: ShellSendParams = parse_args(args)?;
        let (input, secret) = match (p.input.take(), p.secret.take()) {
            (Some(input), None) => (input, None),
            (None, Some(what)) => (String::new(), Some(what)),
            (Some(_), Some(_)) => return Err(tool_error(say::INPUT_OR_SECRET.into())),
            (None, None) => return Err(tool_error(say::INPUT_NEEDED.into())),
        };
        let timeout_ms = crate::tools::timing::timeout_ms(
            p.timeout_ms,
            SEND_TIMEOUT_DEFAULT_MS,
            say::SEND_PAST_MAX,
        )
        .map_err(tool_error)?;
        let resize = size(p.cols, p.rows).map_err(tool_error)?;
        let wait_for = p
            .wait_for
            .as_deref()
            .map(Regex::new)
            .transpose()
            .map_err(|e| tool_error(say::bad_regex(&e.to_string())))?;
        let (job, shell) = agentty.open_shell_of(&p.id)?;
        Ok(Send {
            input,
            secret,
            timeout_ms,
            resize,
            wait_for,
            job,
            shell,
        })
    }
}

impl Agentty {
    pub(super) async fn send_shell(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let send = match Send::checked(self, args) {
            Ok(send) => send,
            Err(refusal) => return refusal,
        };
        // The person watching holds its keyboard (web view, `--view-control`).
        let held = self
            .state()
            .held_by_user
            .lock()
            .is_ok_and(|held| held.contains_key(&send.job.id));
        if held {
            return tool_error(say::held_by_user(&send.job.id));
        }
        // A secret: the user types it (web view); then this send waits on what follows, as a
        // send with no input does.
        let entered = match &send.secret {
            Some(what) => match self.ask_secret(&send.job.id, &send.shell, what, &ctx).await {
                Ok(super::secret::SecretAsk::Entered(note, from)) => Some(Entered { note, from }),
                Ok(super::secret::SecretAsk::Later(address)) => {
                    return self.secret_later(&send.job.id, &send.shell, what, &address);
                }
                Err(refusal) => return tool_error(refusal),
            },
            None => None,
        };
        let command = match self.judge_typed(&send) {
            Ok(command) => command,
            Err(refusal) => return refusal,
        };
        // The shell's registration with the network policy (a confined shell's, while open):
        // a new command line is what its questions name.
        let net = self.egress().call_of(&send.shell.marker);
        if let (Some(net), Some(line)) = (&net, &command) {
            net.next_command(line);
        }
        let outcome = match self.type_and_wait(&send, &ctx).await {
            Ok(outcome) => outcome,
            Err(refusal) => return refusal,
        };
        let outcome = read_back(&send, outcome, entered.as_ref());
        let said = self.said(&send, &outcome).await;
        // The connections refused since the last reply: this command's, and those of one
        // still running when an earlier send returned.
        let (refused, unreached) = net
            .map(|n| (n.take_refusals(), n.take_unreached()))
            .unwrap_or_default();
        self.reply_sent(&send, outcome, said, entered, (&refused, &unreached))
    }

    /// A typed line is a command line: the guard applies as in `terminal`, judged in the
    /// directory the shell is in now, whole even when typed over several sends, and as the
    /// shell's line editor leaves it. The line the input completes at the shell's prompt, if
    /// any: the command it starts.
    #[expect(
        clippy::result_large_err,
        reason = "the error is the tool's answer itself, made once on a failed call"
    )]
    fn judge_typed(&self, send: &Send) -> Result<Option<String>, CallToolResult> {
        // A key the shell's line editor edits with (Ctrl+A, an arrow, Tab) would make it run
        // another line than the one judged here: refused while the editor may read it. A
        // program that reads the keyboard itself (vim, less, a REPL) gets every key; a busy
        // job gets its signal keys (Ctrl+Z).
        let editing = match send.shell.key_reader() {
            KeyReader::LineEditor => editing_key(&send.input, false),
            KeyReader::Busy => editing_key(&send.input, true),
            KeyReader::Program => None,
        };
        if let Some(key) = editing {
            return Err(tool_error(say::editing_key(&key)));
        }
        let at_prompt = send.shell.key_reader() == KeyReader::LineEditor;
        let pending = send.shell.pending_line();
        let Some(line) = crate::tools::entry::completed_lines(&pending, &send.input) else {
            return Ok(None);
        };
        let guard = &self.settings().guard;
        let verdict = match shell_cwd(send.shell.pid) {
            Some(cwd) => agentty_guard::check_at(&line, guard, agentty_guard::Place::at(&cwd)),
            None => agentty_guard::check(&line, guard),
        };
        match verdict {
            Verdict::Block(block) => {
                crate::metrics::METRICS.guard_blocked(block.rule);
                let said = block.message();
                self.record_blocked(&format!("{}: {line}", send.job.id), &said);
                Err(tool_error(said))
            }
            Verdict::Allow { .. } => Ok(at_prompt.then_some(line)),
        }
    }

    /// Resizes, types the keys and waits for what they start. Cancellation returns at once;
    /// the shell keeps whatever is running (as at a timeout).
    async fn type_and_wait(
        &self,
        send: &Send,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<SendOutcome, CallToolResult> {
        let (job, shell) = (&send.job, &send.shell);
        if let Some((cols, rows)) = send.resize
            && let Err(e) = shell.resize(cols, rows)
        {
            return Err(tool_error(say::open_failed(&e.to_string())));
        }
        let request = SendRequest {
            input: &send.input,
            timeout: Duration::from_millis(send.timeout_ms),
            wait_for: send.wait_for.as_ref(),
        };
        if self.cancelled_already(ctx) {
            return Err(tool_error(say::CANCELLED_BEFORE_TYPING.into()));
        }
        let max = agentty_core::limits::COMMAND_MAX_BYTES;
        if let Err(len) = shell.check_typed(&send.input, max) {
            return Err(tool_error(say::line_too_long(len, max)));
        }
        let outcome = tokio::select! {
            r = shell.send(request) => r,
            () = ctx.ct.cancelled() => return Err(tool_error(say::SEND_CANCELLED.into())),
        };
        outcome.map_err(|e| match e {
            PtyError::Closed => {
                let why = self
                    .shells()
                    .get(&job.id)
                    .err()
                    .unwrap_or(agentty_core::pty::Gone::Closed);
                tool_error(say::gone(&job.id, &why, self.shells().idle_limit()))
            }
            PtyError::Busy => tool_error(say::busy(&job.id, send.timeout_ms)),
            PtyError::StopsSealed => tool_error(say::STOPS_SEALED.into()),
            e => tool_error(say::open_failed(&e.to_string())),
        })
    }

    /// The state the send ended in, in words. A shell that ended is waited on for its exit
    /// status: the terminal closed first, the status follows within moments, and this reply
    /// and a `shell_list` right after it must agree that the shell is gone.
    async fn said(&self, send: &Send, outcome: &SendOutcome) -> Said {
        let id = &send.job.id;
        let elapsed = ms(outcome.elapsed);
        let (status, exit_code, prompt, line) = match &outcome.status {
            SendStatus::Done(code) => (
                SendState::Done,
                Some(*code),
                None,
                say::done(*code, elapsed),
            ),
            SendStatus::AtPrompt => (SendState::AtPrompt, None, None, say::AT_PROMPT.into()),
            SendStatus::AwaitingInput { .. } if outcome.full_screen => {
                (SendState::AwaitingInput, None, None, say::full_screen(id))
            }
            SendStatus::AwaitingInput { prompt, by_shell } => {
                let (prompt, line) = awaiting_line(&send.shell, prompt, *by_shell, id);
                (SendState::AwaitingInput, None, Some(prompt), line)
            }
            SendStatus::Matched => (SendState::Matched, None, None, say::matched(elapsed)),
            SendStatus::Quiet => (SendState::Quiet, None, None, say::quiet(elapsed)),
            SendStatus::Running => (
                SendState::Running,
                None,
                None,
                say::running(elapsed, id, outcome.cursor_next, outcome.running.as_deref()),
            ),
            SendStatus::Held { by } => (SendState::Running, None, None, say::held(by, id)),
            SendStatus::ShellEnded => {
                let wait =
                    Duration::from_millis(agentty_core::pty::CLOSE_GRACE_MS + SHELL_EXIT_WAIT_MS);
                let ended = tokio::time::timeout(wait, send.job.ended())
                    .await
                    .ok()
                    .map(|state| say::state_word(&state));
                let line = say::shell_ended(id, ended.as_deref());
                (SendState::ShellEnded, None, None, line)
            }
        };
        Said {
            status,
            exit_code,
            prompt,
            line,
        }
    }

    /// The reply: the secret's note, earlier commands' ends, what was left out, the output,
    /// the state line, untyped keys, a refused write, refused connections (error 2010,
    /// whatever the exit code), allowed hosts not reached, planted code.
    fn reply_sent(
        &self,
        send: &Send,
        outcome: SendOutcome,
        said: Said,
        entered: Option<Entered>,
        (refused, unreached): (&[crate::network::Refusal], &[crate::network::Unreached]),
    ) -> CallToolResult {
        let (job, shell) = (&send.job, &send.shell);
        // A command that finished under the sandbox, and whose output shows a refused write,
        // whatever the exit code: `cp x ~/y 2>&1 | tail -3` exits 0 and still was refused.
        let sandbox_denied = match said.exit_code {
            // The shell is where the command left it: its cwd now is exact.
            Some(code) if job.confined => self.confinement().denial(
                false,
                Some(code),
                &outcome.output,
                self.retry(true),
                &send.input,
                || shell_cwd(shell.pid),
            ),
            _ => None,
        };
        if let Some(refused) = &sandbox_denied {
            refused.count();
        }
        let mut text = String::new();
        if let Some(entered) = entered {
            text.push_str(&entered.note);
            text.push('\n');
        }
        if !outcome.ended_before.is_empty() {
            text.push_str(&say::ended_before(&outcome.ended_before));
            text.push('\n');
        }
        if outcome.read_by_earlier {
            text.push_str(say::READ_BY_EARLIER);
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
        text.push_str(&said.line);
        if outcome.untyped > 0 && !matches!(outcome.status, SendStatus::Held { .. }) {
            text.push('\n');
            text.push_str(&say::untyped(outcome.untyped, &job.id));
        }
        if let Some(refused) = &sandbox_denied {
            text.push('\n');
            text.push_str(&refused.line());
        }
        if !refused.is_empty() {
            text.push('\n');
            text.push_str(&crate::network::notice::network_refused(refused));
        }
        if !unreached.is_empty() {
            text.push('\n');
            text.push_str(&crate::network::notice::network_unreached(unreached));
        }
        crate::own_lines::push_note(&mut text, &outcome.output);
        if let Some(warning) = self.planted_warning() {
            text.push('\n');
            text.push_str(&warning);
        }
        success(
            text,
            &ShellSendResult {
                id: job.id.clone(),
                status: said.status,
                exit_code: said.exit_code,
                prompt: said.prompt,
                output: outcome.output,
                dropped_bytes: outcome.dropped,
                cursor_from: outcome.cursor_from,
                cursor: outcome.cursor_next,
                elapsed_ms: ms(outcome.elapsed),
                error_code: sandbox_denied
                    .as_ref()
                    .and_then(crate::confinement::Refused::code)
                    .or((!refused.is_empty()).then_some(crate::network::notice::NETWORK_REFUSED)),
                sandbox_denied: sandbox_denied
                    .as_ref()
                    .and_then(crate::confinement::Refused::write_sentence)
                    .map(ToOwned::to_owned),
                earlier_exit_codes: outcome.ended_before,
                untyped_bytes: outcome.untyped as u64,
                running: match &outcome.status {
                    SendStatus::Held { by } => Some(by.clone()),
                    _ => outcome.running,
                },
            },
        )
    }
}

/// What the program at a prompt asks for, as the reply words it: a password when it reads a
/// line with echo off, or when its prompt reads like one; never for the shell's own read (a
/// `secret` would be refused there: the value would land in a variable the agent reads).
/// What a reply says of a shell waiting for keys at `prompt`: the prompt as shown (its end) and
/// the bracketed line saying how to answer (a send's `awaiting_input`, and a read's).
pub(super) fn awaiting_line(
    shell: &Shell,
    prompt: &str,
    by_shell: bool,
    id: &str,
) -> (String, String) {
    let prompt = say::short_prompt(prompt);
    let asks = asks(shell, &prompt, by_shell);
    let reader = (asks == say::Asks::Password && !by_shell)
        .then(|| shell.foreground())
        .flatten()
        .map(|f| f.described);
    let line = say::awaiting_input(&prompt, by_shell, asks, id, reader.as_deref());
    (prompt, line)
}

fn asks(shell: &Shell, prompt: &str, by_shell: bool) -> say::Asks {
    if by_shell || shell.reads_itself() {
        say::Asks::Input
    } else if shell.asks_password() {
        say::Asks::Password
    } else if agentty_core::pty::reads_like_password(prompt) {
        say::Asks::PasswordEchoed
    } else {
        say::Asks::Input
    }
}

/// What came back, as the model should read it.
/// - The program that took the secret may have finished before this wait began: its output
///   and exit code are then what followed the secret.
/// - A full-screen program (vim, less, top) draws with cursor moves: its stream, flattened, is
///   a wall of spaces and `~`. What it shows is the rendered screen, and the line it waits at
///   is the whole screen, not a prompt.
fn read_back(send: &Send, mut outcome: SendOutcome, entered: Option<&Entered>) -> SendOutcome {
    if let Some(entered) = entered
        && matches!(outcome.status, SendStatus::AtPrompt)
        && let Some(code) = outcome.ended_before.pop()
    {
        let slice = send
            .job
            .output
            .read(Some(entered.from), agentty_core::jobs::READ_MAX_BYTES);
        outcome.status = SendStatus::Done(code);
        outcome.output = slice.text;
        outcome.cursor_from = slice.from;
    }
    if outcome.full_screen {
        outcome.output = send.shell.screen().text;
        outcome.dropped = 0;
        if let SendStatus::AwaitingInput { prompt, .. } = &mut outcome.status {
            prompt.clear();
        }
    }
    outcome
}
