//! The arguments and `structuredContent` of the four `task_*` tools: the contract a client
//! sees (each type's schema is published as the tool's input or output schema).

use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

/// Arguments of `task_list`: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskListParams {}

/// Arguments of `task_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskOutputParams {
    /// The job id (t1, s1, …).
    pub id: String,
    /// Byte cursor: the `next` of the previous read gives exactly what followed (no gap, no
    /// repeat). Omit it for the newest output.
    pub since: Option<i64>,
}

/// Arguments of `task_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskWaitParams {
    /// The job id (t1, …).
    pub id: String,
    /// Longest wait in milliseconds (default 30000). Reaching it never stops the job.
    #[schemars(range(min = 1, max = agentty_core::limits::TIMEOUT_MAX_MS))]
    pub timeout_ms: Option<u64>,
    /// Byte cursor to show output from (default: where the last task_output or task_wait of
    /// this job stopped; when more than 8 KB is unread, its last 8 KB).
    pub since: Option<u64>,
}

/// Arguments of `task_stop`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStopParams {
    /// The job id (t1, …).
    pub id: String,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    Command,
    Shell,
}

/// running | exited | killed (by a signal it did not get from us) | stopped (by agentty) |
/// reaped (a shell closed for inactivity)
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Running,
    Exited,
    Killed,
    Stopped,
    Reaped,
}

/// One job as `task_*` reports it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskInfo {
    pub id: String,
    pub kind: TaskKind,
    pub state: TaskState,
    /// The state in words ("exited 0", "killed by SIGKILL", …).
    pub state_text: String,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub age_ms: u64,
    /// The command line (or the shell).
    pub command: String,
    pub workdir: String,
    pub pid: i32,
    /// Bytes of cleaned output so far (the cursor of the end).
    pub output_bytes: u64,
    /// Processes still running when the command ended, which were stopped.
    pub leftovers_stopped: usize,
    /// 2008 when the command ran under the sandbox, ended, and its output shows a refused write.
    pub error_code: Option<u32>,
    /// What the sandbox refused, in words, with `error_code`.
    pub sandbox_denied: Option<String>,
}

/// `structuredContent` of `task_list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskListResult {
    pub jobs: Vec<TaskInfo>,
    /// Older ended jobs no longer listed (the table keeps the newest ended ones of each kind).
    pub forgotten: u64,
}

/// `structuredContent` of `task_output`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskOutputResult {
    pub job: TaskInfo,
    /// Cleaned output from `from` to `next`.
    pub text: String,
    pub from: u64,
    /// Pass this as `since` on the next read.
    pub next: u64,
    pub total: u64,
    /// Bytes available after `next` right now.
    pub remaining: u64,
    /// Bytes between the requested cursor and `from` that scrolled out of the buffer.
    pub dropped: u64,
    /// File holding the full output, once the buffer overflowed.
    pub spill_path: Option<String>,
    /// Why the full output could not be kept, when it could not.
    pub spill_error: Option<String>,
}

/// `structuredContent` of `task_wait`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskWaitResult {
    pub job: TaskInfo,
    /// True when the job has ended; false when the wait timed out (the job still runs).
    pub ended: bool,
    pub cancelled: bool,
    pub waited_ms: u64,
    /// The newest output (at most 8 KB).
    pub output: String,
    pub from: u64,
    /// Cursor after `output`, for task_output.
    pub next: u64,
    /// File holding the full output, once it outgrew the 256 KB buffer.
    pub spill_path: Option<String>,
}

/// `structuredContent` of `task_stop`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskStopResult {
    pub job: TaskInfo,
    /// False when the job had already ended.
    pub was_running: bool,
}
