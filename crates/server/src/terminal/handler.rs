//! The `terminal` tool's handler: one call from its arguments to its result, on each of its
//! paths (pipe, `pty`, `background`, a timeout handed over to the job table). Everything a
//! call is refused for is checked in [`super::prepare`] before anyone is asked anything.

use agentty_core::pty::once::{self, PtyRunRequest};
use agentty_core::pty::{COLS_DEFAULT, ROWS_DEFAULT};
use agentty_core::run::{self, Progress, RunEnd, RunOutcome, RunRequest};
use agentty_core::spawn::SpawnSpec;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use super::notice;
use super::{Prepared, TerminalParams, TerminalResult};
use crate::escalation;
use crate::escalation::mrtr::Slot;
use crate::network::{Choice, NetCall};
use crate::server::Agentty;
use crate::tools::{input_schema, parse_args, tool_error};
use crate::view_calls::{Ending, Running};

#[tool_router(router = terminal_router, vis = "pub(crate)")]
impl Agentty {
    #[tool(
        name = "terminal",
        description = notice::terminal_description(),
        input_schema = input_schema::<TerminalParams>(),
        output_schema = schema_for_output::<TerminalResult>(),
        annotations(
            title = "Run a command",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn terminal(&self, args: JsonObject, ctx: RequestContext<RoleServer>) -> CallToolResult {
        let params: TerminalParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        // For the web view's history, should the guard refuse it.
        let asked = params
            .command
            .clone()
            .or_else(|| params.argv.as_ref().map(|argv| argv.join(" ")))
            .unwrap_or_default();
        let prepared = match super::prepare_judged(
            params,
            &self.settings().shell,
            self.workspace(),
            &self.settings().guard,
            self.settings().default_timeout_ms,
        ) {
            Ok(p) => p,
            Err(refused) => {
                if refused.by_guard {
                    self.record_blocked(&asked, &refused.text);
                }
                return tool_error(refused.text);
            }
        };
        // A background job over the cap would be refused after the user approved it: say so
        // first (the start checks again; a job that ended meanwhile only frees a place).
        if prepared.background
            && prepared.escalation.is_some()
            && let Err(cap) = self.jobs().check_cap(agentty_core::jobs::JobKind::Command)
        {
            return tool_error(crate::job_words::cap_text(&cap));
        }
        let escalated = match &prepared.escalation {
            Some(justification) => {
                match escalation::ask(&ctx, &prepared.display, justification).await {
                    Ok(()) => true,
                    Err(refusal) => return tool_error(refusal),
                }
            }
            None => false,
        };
        let confine = match self.confine_for(escalated, Agentty::caller_of(&ctx).as_deref()) {
            Ok(l) => l,
            Err(reason) => return tool_error(crate::confinement::notice::sandbox_failed(&reason)),
        };
        // A 2026-07-28 client's answer to the question about hosts this same call was refused.
        let slot = ctx.extensions.get::<Slot>().cloned();
        let mut granted = Vec::new();
        if let Some((carried, choice)) = slot.as_ref().and_then(Slot::network_answer) {
            let (key, targets) = crate::network::read_carried(&carried);
            match choice {
                Choice::Deny => return self.egress().declined(&key, &targets),
                Choice::Once => granted = targets,
                Choice::Session => self
                    .egress()
                    .approve_for_session(&self.session.name, &targets),
            }
        }
        if self.cancelled_already(&ctx) {
            return tool_error(notice::CANCELLED_BEFORE_START.into());
        }
        let (call, marker) = self.next_call();
        let net = self.network_call(
            &marker,
            &call,
            &prepared.display,
            &ctx,
            confine.is_some(),
            granted,
        );
        // The proxy's variables first: the call's own `env` may set them otherwise.
        let mut env = net.as_ref().map(NetCall::env).unwrap_or_default();
        env.extend(prepared.env.iter().cloned());
        tracing::debug!(
            %call,
            command = %crate::job_words::for_log(&prepared.display),
            escalated,
            "terminal"
        );
        let request = RunRequest {
            spec: SpawnSpec {
                program: prepared.program.clone(),
                args: prepared.args.clone(),
                cwd: prepared.workdir.clone(),
                env,
                stdin: agentty_core::spawn::StdinMode::Null,
                marker,
                confine,
                caller: Agentty::caller_of(&ctx),
                pass_fds: Vec::new(),
                masks: Some(self.masks()),
            },
            stdin: prepared.stdin.clone(),
            timeout: super::timeout(&prepared),
            spill: Some((self.spill_store().clone(), call.clone())),
            keep_whole: prepared.parse.as_ref().is_some_and(Result::is_ok),
            view: None,
        };
        if prepared.background {
            let line = self.later_sandbox_line_for(escalated, &ctx);
            return self.start_background(&prepared, request, line, &ctx, net);
        }
        // Shown in the web view while it runs, and in its history after.
        let record = self.state().view_calls.begin(&call, &prepared.display);
        if prepared.pty {
            return self
                .terminal_pty(&prepared, request, escalated, &ctx, net, record)
                .await;
        }
        let request = RunRequest {
            view: record.view(),
            ..request
        };
        let mut progress = ctx.meta.get_progress_token().map(|token| {
            let peer = ctx.peer.clone();
            move |p: Progress| {
                let param = ProgressNotificationParam::new(token.clone(), p.elapsed.as_secs_f64())
                    .with_message(format!("{}s {}", p.elapsed.as_secs(), p.line));
                let peer = peer.clone();
                tokio::spawn(async move {
                    let _ = peer.notify_progress(param).await;
                });
            }
        });
        let on_progress = progress
            .as_mut()
            .map(|f| f as &mut (dyn FnMut(Progress) + Send));
        let ran = run::run_until(request, prepared.hand_over, ctx.ct.cancelled(), on_progress);
        let outcome = match ran.await {
            Ok(RunEnd::Finished(o)) => o,
            Ok(RunEnd::TimedOut(handover)) => {
                let line = self.later_sandbox_line_for(escalated, &ctx);
                let result = self.adopt_timed_out(&prepared, handover, line, net).await;
                record.other(Ending::Backgrounded, &result);
                return result;
            }
            Err(e) => {
                let result = not_started(&prepared, &ctx, &e);
                record.other(Ending::NotStarted, &result);
                return result;
            }
        };
        let tracked = (net, record);
        self.finish_foreground(&prepared, &outcome, escalated, Vec::new(), &ctx, tracked)
    }
    /// `terminal({command, pty: true})`: one command under a PTY (docs/BEHAVIOUR.md §4), rendered like the
    /// pipe path plus the awaiting-input note.
    pub(crate) async fn terminal_pty(
        &self,
        prepared: &Prepared,
        request: RunRequest,
        escalated: bool,
        ctx: &RequestContext<RoleServer>,
        net: Option<NetCall>,
        record: Running<'_>,
    ) -> CallToolResult {
        let pty_request = PtyRunRequest {
            spec: request.spec,
            input: request
                .stdin
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
            timeout: request.timeout,
            spill: request.spill,
            cols: COLS_DEFAULT,
            rows: ROWS_DEFAULT,
            view: record.view(),
        };
        let outcome = match once::run(pty_request, ctx.ct.cancelled()).await {
            Ok(o) => o,
            Err(e) => {
                let result = not_started(prepared, ctx, &e);
                record.other(Ending::NotStarted, &result);
                return result;
            }
        };
        let awaiting = outcome.awaiting_input.is_some();
        let full_screen = outcome.full_screen;
        let notes = outcome
            .awaiting_input
            .as_deref()
            .map(|prompt| {
                if full_screen {
                    notice::PTY_FULL_SCREEN.to_owned()
                } else {
                    let password =
                        outcome.awaiting_password || agentty_core::pty::reads_like_password(prompt);
                    notice::pty_awaiting_input(prompt, password)
                }
            })
            .into_iter()
            .collect();
        let tracked = (net, record.awaiting(awaiting));
        self.finish_foreground(prepared, &outcome.run, escalated, notes, ctx, tracked)
    }

    /// The end of every foreground run, pipe or PTY: where the command ended up, whether the
    /// sandbox refused a write (whatever the exit code: `cp x ~/y 2>&1 | tail -3` exits 0) or
    /// a connection (error 2010, likewise), the planted-code warning, and the rendering.
    /// `notes`: what the path itself has to say. A 2026-07-28 client in `ask` mode gets a
    /// question about the hosts refused instead, with this result kept for a "deny". The call's
    /// network watch comes with its record for the web view: both end here.
    fn finish_foreground(
        &self,
        prepared: &Prepared,
        outcome: &RunOutcome,
        escalated: bool,
        mut notes: Vec<String>,
        ctx: &RequestContext<RoleServer>,
        (net, record): (Option<NetCall>, Running<'_>),
    ) -> CallToolResult {
        let refused = net.as_ref().map(NetCall::take_refusals).unwrap_or_default();
        let network =
            (!refused.is_empty()).then(|| crate::network::notice::network_refused(&refused));
        let unreached = net.as_ref().map(NetCall::take_unreached);
        if let Some(unreached) = unreached.filter(|u| !u.is_empty()) {
            notes.push(crate::network::notice::network_unreached(&unreached));
        }
        let denial = self.confinement().denial(
            escalated,
            outcome.exit.and_then(agentty_core::Exit::code),
            &super::render::output_text(outcome),
            self.retry(false),
            &prepared.display,
            || prepared.line.cwd_after().map(std::path::PathBuf::from),
        );
        // For the web view: a write or a connection the sandbox refused.
        let sandbox_refused = denial.is_some() || !refused.is_empty();
        if let Some(denied) = &denial {
            denied.count();
        }
        let sandbox = super::render::SandboxReport {
            line: self.sandbox_line_for(escalated, ctx),
            denial,
            network,
        };
        notes.extend(self.planted_warning());
        let (text, mut structured) = super::render::render(prepared, outcome, sandbox, notes);
        record.ran(outcome, sandbox_refused, &text);
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        // A typed result's data is moved in, not copied through `to_value` (for a 1 MB
        // listing that copy was a third tree of the same data).
        let parsed = structured.parsed.take();
        let mut value = serde_json::to_value(structured).ok();
        if let (Some(parsed), Some(serde_json::Value::Object(map))) = (parsed, value.as_mut()) {
            map.insert("parsed".into(), parsed.into_value());
        }
        result.structured_content = value;
        match (net, ctx.extensions.get::<Slot>()) {
            (Some(net), Some(slot)) if net.may_ask_later() => {
                self.ask_after(result, &refused, slot, &prepared.display)
            }
            _ => result,
        }
    }

    /// For a 2026-07-28 client in `ask` mode: the hosts the command was refused for not being
    /// listed go back as a question (`input_required`); the retry runs the call again with
    /// them allowed, or answers a "deny" with `result`.
    fn ask_after(
        &self,
        result: CallToolResult,
        refused: &[crate::network::Refusal],
        slot: &Slot,
        what: &str,
    ) -> CallToolResult {
        let targets = crate::network::askable(refused);
        if targets.is_empty() {
            return result;
        }
        let key = self.egress().keep_result(result.clone());
        let question = crate::network::notice::network_question_after(what, &targets);
        match slot.ask_network(question, &crate::network::carried(&key, &targets)) {
            // The handler's word is replaced by the question (`call_tool`).
            Ok(()) => tool_error(crate::escalation::notice::ESCALATION_ASKED.to_owned()),
            Err(_) => self.egress().take_result(&key).unwrap_or(result),
        }
    }
}

/// The answer to a command that could not be started. A call cancelled meanwhile (the client
/// gave up, or the server is shutting down and its sessions' namespaces with it) is answered
/// as cancelled: that is the cause, not what the start ran into then. Nothing ran either way,
/// unless the error came after the program's start: then it is said to have been stopped.
pub(crate) fn not_started(
    prepared: &Prepared,
    ctx: &RequestContext<RoleServer>,
    error: &std::io::Error,
) -> CallToolResult {
    let program = prepared.program.to_string_lossy();
    if let Some(error) = agentty_core::spawn::AfterStart::of(error) {
        return tool_error(notice::stopped_after_start(&program, error));
    }
    if ctx.ct.is_cancelled() {
        return tool_error(notice::CANCELLED_BEFORE_START.into());
    }
    crate::metrics::METRICS.spawn_failed();
    tool_error(notice::spawn_failed(&program, &prepared.workdir, error))
}
