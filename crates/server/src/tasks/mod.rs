//! The job-control family (docs/BEHAVIOUR.md §3): `task_list`, `task_output`, `task_wait`, `task_stop`, and
//! the two ways a command enters the job table from `terminal` (background start, and a
//! foreground command moved there at its timeout).
//!
//! The four tools run nothing, so they need no approval: they only read the session's
//! [`JobTable`](agentty_core::jobs::JobTable), or stop a job in it. The table is per session,
//! so an id of another session is simply absent and gets exactly the answer of an id that never
//! existed. Every refusal is a tool error (`isError`) whose text says what to do instead.

use std::sync::Arc;
use std::time::Duration;

use agentty_core::jobs::{Job, JobKind, READ_MAX_BYTES};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use crate::server::Agentty;
use crate::tools::reply;
use crate::tools::{input_schema, parse_args, tool_error};
use notice as say;
use report::{info, push_met};

mod ext;
pub(crate) mod notice;
mod report;
mod schema;
pub use schema::*;

use crate::tools::timing::millis;

/// `t1`, `s12`: a kind letter and a number without leading zeros; or, for callers without a
/// session, a kind letter, `-` and the handle's hex digits (`t-3f9c…`).
fn well_formed(id: &str) -> bool {
    let (kind, rest) = id.split_at_checked(1).unwrap_or(("", ""));
    if !matches!(kind, "t" | "s") {
        return false;
    }
    if let Some(hex) = rest.strip_prefix('-') {
        return hex.len() * 4 == agentty_core::jobs::HANDLE_BITS
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    }
    !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_digit())
        && !rest.starts_with('0')
        && rest.parse::<u64>().is_ok()
}

impl Agentty {
    /// This session's job with `id`, or the tool error that says why there is none.
    #[expect(
        clippy::result_large_err,
        reason = "the error is the tool's answer itself, made once on a failed call"
    )]
    fn job(&self, id: &str) -> Result<Arc<Job>, CallToolResult> {
        if !well_formed(id) {
            return Err(tool_error(say::malformed_id(id)));
        }
        self.jobs()
            .get(id)
            .ok_or_else(|| tool_error(self.earlier_job(id).unwrap_or_else(|| say::unknown_id(id))))
    }
}

#[tool_router(router = tasks_router, vis = "pub(crate)")]
impl Agentty {
    #[tool(
        name = "task_list",
        description = say::TASK_LIST_DESCRIPTION,
        input_schema = input_schema::<TaskListParams>(),
        output_schema = schema_for_output::<TaskListResult>(),
        annotations(title = "List jobs", read_only_hint = true, destructive_hint = false,
                    idempotent_hint = true, open_world_hint = false)
    )]
    async fn task_list(&self, args: JsonObject) -> CallToolResult {
        if let Err(e) = parse_args::<TaskListParams>(args) {
            return e;
        }
        let jobs = self.jobs().list();
        let mut text = String::new();
        for job in &jobs {
            // Listing a job names it (the idle rule of callers without a session).
            job.touch();
            let state = crate::job_words::job_state(job);
            let line = say::list_line(
                &job.id,
                job.kind,
                &state,
                job.started.elapsed(),
                &job.label,
                job.output.total(),
            );
            text.push_str(&line);
            text.push('\n');
        }
        let earlier = self.earlier_jobs();
        for job in earlier {
            let e = job.earlier();
            let kind = if e.shell {
                JobKind::Shell
            } else {
                JobKind::Command
            };
            text.push_str(&say::earlier_line(
                &job.id,
                kind,
                &crate::job_words::earlier_state(&e),
                &job.label,
            ));
            text.push('\n');
        }
        if jobs.is_empty() && earlier.is_empty() {
            text.push_str(say::NO_JOBS);
        }
        let forgotten = self.jobs().forgotten();
        if forgotten > 0 {
            text.push('\n');
            text.push_str(&say::forgotten(forgotten));
        }
        let structured = TaskListResult {
            forgotten,
            jobs: jobs
                .iter()
                .map(|j| info(j, self.confinement(), self.retry(false)).0)
                .collect(),
        };
        reply(text.trim_end().to_owned(), &structured)
    }

    #[tool(
        name = "task_output",
        description = say::task_output_description(),
        input_schema = input_schema::<TaskOutputParams>(),
        output_schema = schema_for_output::<TaskOutputResult>(),
        annotations(title = "Read a job's output", read_only_hint = true,
                    destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn task_output(&self, args: JsonObject) -> CallToolResult {
        let p: TaskOutputParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let job = match self.job(&p.id) {
            Ok(j) => j,
            Err(e) => return e,
        };
        let since = match p.since {
            Some(n) if n < 0 => return tool_error(say::negative_cursor(n)),
            Some(n) => Some(n.unsigned_abs()),
            None => None,
        };
        let total = job.output.total();
        if let Some(s) = since
            && s > total
        {
            return tool_error(say::cursor_past_end(&job.id, s, total));
        }
        let s = job.output.read(since, READ_MAX_BYTES);
        job.note_delivered(s.next);
        let (job_info, met) = info(&job, self.confinement(), self.retry(false));
        let mut text = String::new();
        if s.dropped > 0 {
            text.push_str(&crate::job_words::scrolled_out(
                s.dropped,
                s.spill_path.as_deref(),
                s.spill_error.as_deref(),
            ));
            text.push('\n');
        }
        text.push_str(if s.text.is_empty() {
            say::NO_NEW_OUTPUT
        } else {
            &s.text
        });
        if !text.ends_with('\n') {
            text.push('\n');
        }
        // A shell's job read to its end: a program there may wait for keys at a line the
        // stream does not hold yet (as `shell_read` says).
        if s.remaining == 0
            && let Some(shell) = self.shells().peek(&job.id)
            && let Some((_, line)) = crate::shells::awaiting_note(&shell, &job.id)
        {
            text.push_str(&line);
            text.push('\n');
        }
        let state = &job_info.state_text;
        text.push_str(&say::read_footer(
            &job.id,
            state,
            s.from,
            s.next,
            s.total,
            s.remaining,
        ));
        if let (Some(path), Some(bytes)) = (&s.spill_path, s.spill_full_at) {
            text.push('\n');
            text.push_str(&say::spill_stopped(path, bytes));
        }
        push_met(&mut text, &met);
        crate::own_lines::push_note(&mut text, &s.text);
        let structured = TaskOutputResult {
            job: job_info,
            from: s.from,
            next: s.next,
            total: s.total,
            remaining: s.remaining,
            dropped: s.dropped,
            spill_path: s.spill_path.map(|p| p.display().to_string()),
            spill_error: s.spill_error,
            text: s.text,
        };
        reply(text, &structured)
    }

    #[tool(
        name = "task_wait",
        description = say::TASK_WAIT_DESCRIPTION,
        input_schema = input_schema::<TaskWaitParams>(),
        output_schema = schema_for_output::<TaskWaitResult>(),
        annotations(title = "Wait for a job", read_only_hint = true, destructive_hint = false,
                    idempotent_hint = true, open_world_hint = false)
    )]
    async fn task_wait(&self, args: JsonObject, ctx: RequestContext<RoleServer>) -> CallToolResult {
        let p: TaskWaitParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let job = match self.job(&p.id) {
            Ok(j) => j,
            Err(e) => return e,
        };
        let timeout_ms = match crate::tools::timing::timeout_ms(
            p.timeout_ms,
            say::WAIT_DEFAULT_MS,
            say::WAIT_PAST_MAX,
        ) {
            Ok(ms) => ms,
            Err(e) => return tool_error(e),
        };
        let began = std::time::Instant::now();
        let (ended, cancelled) = if job.kind == JobKind::Shell {
            (false, false)
        } else {
            tokio::select! {
                _ = job.ended() => (true, false),
                () = tokio::time::sleep(Duration::from_millis(timeout_ms)) => (false, false),
                () = ctx.ct.cancelled() => (false, true),
            }
        };
        let waited_ms = millis(began.elapsed());
        if cancelled {
            tracing::debug!(job = %job.id, waited_ms, "task_wait ended by cancellation");
        }
        // From where the caller stopped reading; when more is unread than one reply holds, its
        // end (how it went), with a line saying what was skipped.
        let since = p.since.unwrap_or_else(|| job.delivered());
        let end = job.output.total();
        let start = since.max(end.saturating_sub(READ_MAX_BYTES as u64));
        let s = job.output.read(Some(start), READ_MAX_BYTES);
        job.note_delivered(s.next);
        let (job_info, met) = info(&job, self.confinement(), self.retry(false));
        let mut text = String::new();
        if s.from > since {
            text.push_str(&say::earlier_output(
                &job.id,
                since,
                s.from,
                s.spill_path.as_deref(),
            ));
            text.push('\n');
        }
        text.push_str(if s.total == 0 {
            crate::job_words::NO_OUTPUT
        } else if s.text.is_empty() {
            say::NO_NEW_OUTPUT
        } else {
            &s.text
        });
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let how = if job.kind == JobKind::Shell {
            say::shell_has_no_end(&job.id)
        } else if cancelled {
            say::wait_cancelled(&job.id)
        } else if ended {
            say::wait_ended(&job.id, &job_info.state_text, waited_ms)
        } else {
            say::wait_timed_out(&job.id, waited_ms)
        };
        // One footer: how the wait ended, then where the output stands.
        let running = job.state() == agentty_core::jobs::JobState::Running;
        text.push_str(&say::wait_footer(
            &how,
            &say::read_position(&job.id, running, s.from, s.next, s.total, s.remaining),
        ));
        if job.leftovers() > 0 && ended {
            text.push('\n');
            text.push_str(&say::leftovers(job.leftovers()));
        }
        push_met(&mut text, &met);
        crate::own_lines::push_note(&mut text, &s.text);
        let structured = TaskWaitResult {
            job: job_info,
            ended,
            cancelled,
            waited_ms,
            output: s.text,
            from: s.from,
            next: s.next,
            spill_path: s.spill_path.map(|p| p.display().to_string()),
        };
        reply(text, &structured)
    }

    #[tool(
        name = "task_stop",
        description = say::task_stop_description(),
        input_schema = input_schema::<TaskStopParams>(),
        output_schema = schema_for_output::<TaskStopResult>(),
        annotations(title = "Stop a job", read_only_hint = false, destructive_hint = true,
                    idempotent_hint = true, open_world_hint = false)
    )]
    async fn task_stop(&self, args: JsonObject) -> CallToolResult {
        let p: TaskStopParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let job = match self.job(&p.id) {
            Ok(j) => j,
            Err(e) => return e,
        };
        if job.kind == JobKind::Shell {
            return tool_error(say::shell_cannot_stop(&job.id));
        }
        let was_running = job.state().is_running();
        if was_running {
            job.stop().await;
        }
        let (job_info, _) = info(&job, self.confinement(), self.retry(false));
        let text = if was_running {
            say::stopped(&job.id, &job_info.state_text)
        } else {
            say::already_ended(&job.id, &job_info.state_text)
        };
        reply(
            text,
            &TaskStopResult {
                job: job_info,
                was_running,
            },
        )
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
