//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for clients that declare it:
//! a `terminal` call that goes to the background (`background: true`, or `on_timeout:
//! "background"` at its timeout) answers with a task, and that task is the job of the job table
//! (one table, docs/BEHAVIOUR.md §3): the `task_*` tools keep working on it. `tasks/get` reports
//! it (working, with the last line printed; then completed, with the result in `terminal`'s
//! shape); `tasks/cancel` stops its whole tree. A task id is 128 random bits, known only to the
//! session (or caller without a session) whose call made it: any other id, or another's, gets
//! the answer of an id that never existed.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use agentty_core::jobs::{Job, JobState, READ_MAX_BYTES};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult, Task, TaskPayload,
    TaskStatus,
};

use crate::server::Agentty;
use crate::session::TaskEntry as Entry;
use crate::terminal::notice;
use crate::terminal::{Status, TerminalResult};

/// How often a client is asked to poll.
const POLL_MS: u64 = 1000;

fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The answer for an id this session has no task for.
fn unknown(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task {task_id}"), None)
}

impl Agentty {
    /// A task for a `terminal` result that went to the background, for a client that declared
    /// the extension; `None` for any other result.
    pub(crate) fn as_task(&self, result: &CallToolResult) -> Option<CreateTaskResult> {
        let structured = result.structured_content.as_ref()?;
        if structured["status"] != "background" {
            return None;
        }
        let job = structured["job_id"].as_str()?.to_owned();
        let message = format!("started as job {job} (the task_* tools reach it by that id too)");
        let task_id = agentty_core::random::hex(16);
        let created = SystemTime::now();
        let mut entries = self.task_index().entries.lock().ok()?;
        // Tasks whose job the table has forgotten are forgotten too: the index stays bounded.
        let jobs = self.jobs();
        entries.retain(|_, e| jobs.peek(&e.job).is_some());
        entries.insert(
            task_id.clone(),
            Entry {
                job,
                created,
                cancelled: false,
            },
        );
        let task = Task::new(
            task_id,
            TaskStatus::Working,
            rfc3339(created),
            rfc3339(created),
        )
        .with_poll_interval_ms(POLL_MS)
        .with_status_message(message);
        Some(CreateTaskResult::new(task))
    }

    /// `tasks/get`.
    pub(crate) fn get_task_state(&self, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let (job_id, created, cancelled) = {
            let entries = self
                .task_index()
                .entries
                .lock()
                .map_err(|_| unknown(task_id))?;
            let entry = entries.get(task_id).ok_or_else(|| unknown(task_id))?;
            (entry.job.clone(), entry.created, entry.cancelled)
        };
        let job = self.jobs().get(&job_id).ok_or_else(|| unknown(task_id))?;
        let now = rfc3339(SystemTime::now());
        let task = Task::new(task_id, TaskStatus::Working, rfc3339(created), now)
            .with_poll_interval_ms(POLL_MS);
        let (task, payload) = if cancelled {
            (
                task.with_status_message(crate::tasks::notice::TASK_CANCELLED),
                TaskPayload::Cancelled,
            )
        } else if job.state().is_running() {
            let line = last_line(&job);
            (task.with_status_message(line), TaskPayload::Working)
        } else {
            let result = self.final_result(&job);
            let result = match serde_json::to_value(result) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => serde_json::Map::new(),
            };
            let state = crate::job_words::job_state(&job);
            (
                task.with_status_message(state),
                TaskPayload::Completed { result },
            )
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/cancel`: stops the job's whole tree.
    pub(crate) async fn cancel_task_by_id(&self, task_id: &str) -> Result<(), ErrorData> {
        let job_id = {
            let mut entries = self
                .task_index()
                .entries
                .lock()
                .map_err(|_| unknown(task_id))?;
            let entry = entries.get_mut(task_id).ok_or_else(|| unknown(task_id))?;
            if self
                .jobs()
                .peek(&entry.job)
                .is_some_and(|j| j.state().is_running())
            {
                entry.cancelled = true;
            }
            entry.job.clone()
        };
        if let Some(job) = self.jobs().get(&job_id) {
            job.stop().await;
        }
        Ok(())
    }

    /// A job's end in `terminal`'s result shape: the newest output, the status line, the
    /// sandbox line.
    fn final_result(&self, job: &Job) -> CallToolResult {
        let tail = job.output.read(None, READ_MAX_BYTES * 6);
        let ms = u64::try_from(job.ran_for().as_millis()).unwrap_or(u64::MAX);
        let (status, exit_code, signal, line) = match job.state() {
            JobState::Exited(code) => (
                if code == 0 {
                    Status::Success
                } else {
                    Status::Failed
                },
                Some(code),
                None,
                notice::exited(code, ms),
            ),
            JobState::Signalled(sig) => {
                let name = agentty_core::signal_name(sig);
                let line = notice::signalled(&name, ms);
                (Status::Failed, None, Some(name), line)
            }
            _ => (Status::Cancelled, None, None, notice::CANCELLED.to_owned()),
        };
        let asks = self.state().client_can_ask.load(Ordering::Relaxed);
        let sandbox = self
            .confinement()
            .line(!job.confined && self.confines(), asks);
        let mut text = tail.text.clone();
        if text.is_empty() {
            text.push_str(crate::job_words::NO_OUTPUT);
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let mut notes = vec![crate::tasks::notice::TASK_MERGED.to_owned()];
        if tail.from > 0 {
            notes.push(crate::tasks::notice::task_tail(
                tail.from,
                tail.spill_path.as_deref(),
            ));
        }
        for note in &notes {
            text.push_str(note);
            text.push('\n');
        }
        text.push_str(&line);
        text.push('\n');
        text.push_str(&sandbox);
        let structured = TerminalResult {
            status,
            exit_code,
            signal,
            stdout: tail.text,
            stderr: String::new(),
            duration_ms: ms,
            pid: job.pid,
            truncated: tail.from > 0,
            spill_path: tail.spill_path.map(|p| p.display().to_string()),
            notes,
            sandbox,
            error_code: None,
            job_id: Some(job.id.clone()),
            parsed: None,
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.is_error = Some(status != Status::Success);
        result.structured_content = serde_json::to_value(structured).ok();
        result
    }
}

/// The last line the job printed, for the status message.
fn last_line(job: &Job) -> String {
    let tail = job.output.read(None, 1024);
    let line = tail
        .text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    if line.is_empty() {
        format!("running {} (no output yet)", job.id)
    } else {
        format!(
            "running {}: {}",
            job.id,
            line.chars().take(200).collect::<String>()
        )
    }
}
