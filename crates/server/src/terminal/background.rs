//! `terminal`'s two ways into the job table: `background: true` starts a job at once, and
//! `on_timeout: "background"` hands a run that reached its timeout over to one, losing no
//! output. Both answer in `terminal`'s result shape.

use agentty_core::jobs::Job;
use agentty_core::jobs::command::{self, CommandStart, StartError};
use agentty_core::run::{Handover, RunRequest};
use rmcp::RoleServer;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;

use super::notice as say;
use super::{Prepared, Status, TerminalResult, shaped_text};
use crate::job_words::cap_text;
use crate::server::Agentty;
use crate::tools::reply;
use crate::tools::timing::millis;
use crate::tools::tool_error;

impl Agentty {
    /// `terminal({…, background: true})`: starts the prepared (guarded, confined) request as a
    /// job and returns its id at once.
    pub(crate) fn start_background(
        &self,
        prepared: &Prepared,
        request: RunRequest,
        sandbox: String,
        ctx: &RequestContext<RoleServer>,
        net: Option<crate::network::NetCall>,
    ) -> CallToolResult {
        let start = CommandStart {
            spec: request.spec,
            stdin: request.stdin,
            label: prepared.display.clone(),
        };
        // The clone waits for the child's exec under the job table's lock: off the worker's
        // other tasks.
        let started = agentty_core::blocking::section(|| {
            command::start(self.jobs(), start, Some(self.spill_store().clone()))
        });
        match started {
            Ok(job) => {
                note_ends_in(&job, prepared);
                self.watch_job(&job);
                crate::network::keep_while_running(&job, net);
                let notes: Vec<String> = self
                    .handle_rule()
                    .into_iter()
                    .chain(self.planted_warning())
                    .collect();
                let mut text = say::started(&job.id, job.pid, &prepared.display);
                for note in &notes {
                    text.push_str(&format!("\n{note}"));
                }
                text.push_str(&format!("\n{sandbox}"));
                reply(text, &background_result(job.pid, &job.id, sandbox, notes))
            }
            Err(StartError::Cap(cap)) => tool_error(cap_text(&cap)),
            Err(StartError::Spawn(e)) => super::handler::not_started(prepared, ctx, &e),
        }
    }

    /// `terminal({…, on_timeout: "background"})` reached its timeout: the command becomes a
    /// job with everything captured so far, or, over the cap, is stopped like any timeout.
    pub(crate) async fn adopt_timed_out(
        &self,
        prepared: &Prepared,
        handover: Box<Handover>,
        sandbox: String,
        net: Option<crate::network::NetCall>,
    ) -> CallToolResult {
        let mut text = shaped_text(&handover.output);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let (stdout, stderr) = (shaped_text(&handover.stdout), shaped_text(&handover.stderr));
        let truncated = handover.output.is_truncated();
        let (pid, cursor) = (handover.pid, handover.cursor);
        let duration_ms = millis(handover.started.elapsed());
        let spill_path = handover.spill_path.clone();
        let (status, job_id, line) =
            match command::adopt(self.jobs(), *handover, prepared.display.clone()) {
                Ok(job) => {
                    note_ends_in(&job, prepared);
                    self.watch_job(&job);
                    crate::network::keep_while_running(&job, net);
                    if let Some(path) = &spill_path {
                        text.push_str(&say::spill_so_far(path));
                        text.push('\n');
                    }
                    let line = say::moved_to_background(prepared.timeout_ms, &job.id, cursor);
                    (Status::Background, Some(job.id.clone()), line)
                }
                Err((handover, cap)) => {
                    command::abandon(handover).await;
                    let line = say::not_moved(prepared.timeout_ms, &cap_text(&cap));
                    (Status::Timeout, None, line)
                }
            };
        text.push_str(&line);
        text.push('\n');
        let mut notes = vec![line];
        if job_id.is_some()
            && let Some(rule) = self.handle_rule()
        {
            text.push_str(&format!("{rule}\n"));
            notes.push(rule);
        }
        if let Some(warning) = self.planted_warning() {
            text.push_str(&format!("{warning}\n"));
            notes.push(warning);
        }
        text.push_str(&sandbox);
        let structured = TerminalResult {
            status,
            exit_code: None,
            signal: None,
            stdout,
            stderr,
            duration_ms,
            pid,
            truncated,
            spill_path: spill_path.map(|p| p.display().to_string()),
            notes,
            sandbox,
            error_code: None,
            job_id,
            parsed: None,
        };
        reply(text, &structured)
    }
}

/// `terminal`'s reply for a command that runs in the background.
pub(crate) fn background_result(
    pid: i32,
    id: &str,
    sandbox: String,
    notes: Vec<String>,
) -> TerminalResult {
    TerminalResult {
        status: Status::Background,
        exit_code: None,
        signal: None,
        stdout: String::new(),
        stderr: String::new(),
        duration_ms: 0,
        pid,
        truncated: false,
        spill_path: None,
        notes,
        sandbox,
        error_code: None,
        job_id: Some(id.to_owned()),
        parsed: None,
    }
}

/// Where the job's command ends up, from the reading of its line the call already made: what a
/// refused write in its output is judged against once it ends (see `tasks`).
fn note_ends_in(job: &Job, prepared: &Prepared) {
    if let Some(dir) = prepared.line.cwd_after() {
        job.note_ends_in(dir.into());
    }
}
