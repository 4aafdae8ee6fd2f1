//! Every word the job-control family (`task_*` and the tasks extension) says to a
//! model, in one place (docs/BEHAVIOUR.md §1, §3).
//!
//! Each reply states the fact and the next call that acts on it, with the exact arguments, so a
//! model never has to guess a cursor or an id. Numbers come from the engine's constants.

use std::path::Path;
use std::time::Duration;

use agentty_core::jobs::{JobKind, READ_MAX_BYTES, RING_BYTES};

use crate::job_words::{age, kind_words, not_shown, one_line, size};

/// Default `task_wait` timeout: long enough for a test run's tail, short enough that the model
/// gets control back to do something else.
pub const WAIT_DEFAULT_MS: u64 = 30_000;

pub const TASK_LIST_DESCRIPTION: &str = "List this session's jobs: background commands (t1, …) \
and shells (s1, …), with state, age, command and output size. Runs nothing.";

pub fn task_output_description() -> String {
    format!(
        "Read a job's output, at most {} KB per call, cleaned (no colours; a progress bar shows \
         its final state). A job keeps its newest {} KB; the reply says how much scrolled out \
         and which file holds all of it. Runs nothing.",
        READ_MAX_BYTES / 1024,
        RING_BYTES / 1024
    )
}

pub const TASK_WAIT_DESCRIPTION: &str = "Wait for a background command to end, then return its \
state and its newest output. Reaching `timeout_ms` never stops the job: wait again. A shell \
never ends on its own (use shell_send / shell_read). Runs nothing.";

pub fn task_stop_description() -> String {
    format!(
        "Stop a background command and every process it started (SIGTERM, then SIGKILL after \
         {} ms). Its output stays readable with task_output. For a shell use shell_close.",
        agentty_core::limits::KILL_GRACE_MS
    )
}

pub fn malformed_id(id: &str) -> String {
    format!(
        "{id:?} is not a job id: ids look like t1 (a background command) or s1 (a shell), or \
         t-/s- and 24 hex digits for callers without a session. task_list shows your jobs"
    )
}

/// The answer for an id this session does not have (whether or not another session does).
pub fn unknown_id(id: &str) -> String {
    format!("no job {id} in this session; task_list shows this session's jobs")
}

/// A job the person watching stopped in the web view, told in the model's next result.
pub fn stopped_by_user(id: &str, kind: JobKind) -> String {
    let what = if kind == JobKind::Shell {
        "closed shell"
    } else {
        "stopped"
    };
    format!("[note] the user {what} {id} from the web view; do not start it again unless asked")
}

pub fn negative_cursor(since: i64) -> String {
    format!("`since` is a byte cursor and cannot be negative ({since}); 0 is the start")
}

pub fn cursor_past_end(id: &str, since: u64, total: u64) -> String {
    format!(
        "`since` {since} is past the end of {id}'s output ({total} bytes so far); pass \
         since: {total} to read what comes next"
    )
}

/// `task_wait`'s advice past the `timeout_ms` bound.
pub const WAIT_PAST_MAX: &str = "wait again after it returns (waiting never stops the job)";

pub fn shell_cannot_stop(id: &str) -> String {
    format!(
        "{id} is a shell: task_stop only stops background commands. Close it with \
         shell_close({{\"id\": \"{id}\"}})"
    )
}

pub fn shell_has_no_end(id: &str) -> String {
    format!(
        "[{id} is a shell: a shell has no finished state, so there is nothing to wait for. Run a \
         command with shell_send (it waits for the command), or read with shell_read]"
    )
}

pub const NO_JOBS: &str = "No jobs in this session. Start one with terminal({\"command\": …, \
\"background\": true}).";

pub fn list_line(
    id: &str,
    kind: JobKind,
    state: &str,
    age_: Duration,
    label: &str,
    bytes: u64,
) -> String {
    format!(
        "{id} {} {state} · {} · {} · {}",
        kind_words(kind),
        age(age_),
        size(bytes),
        one_line(label)
    )
}

/// A `task_list` line for a job from before a restart.
pub fn earlier_line(id: &str, kind: JobKind, state: &str, label: &str) -> String {
    format!("{id} {} {state} · {}", kind_words(kind), one_line(label))
}

pub fn leftovers(count: usize) -> String {
    format!(
        "[note] when the command ended, {count} process(es) it had started were still running \
         and were stopped: a job ends with its command"
    )
}

/// The footer of a read: where it was, and the exact next call.
pub fn read_footer(
    id: &str,
    state: &str,
    from: u64,
    next: u64,
    total: u64,
    remaining: u64,
) -> String {
    let running = state == "running" || state == "open";
    let position = read_position(id, running, from, next, total, remaining);
    format!("[{id} {state} · {position}]")
}

/// Where a read left the output, and the next read: `bytes 0..40 of 40 · end of output`.
pub fn read_position(
    id: &str,
    running: bool,
    from: u64,
    next: u64,
    total: u64,
    remaining: u64,
) -> String {
    let position = format!("bytes {from}..{next} of {total}");
    if remaining > 0 {
        format!(
            "{position} · {remaining} more now: task_output({{\"id\": \"{id}\", \"since\": \
             {next}}})"
        )
    } else if running {
        format!(
            "{position} · nothing more yet; next read: task_output({{\"id\": \"{id}\", \
             \"since\": {next}}})"
        )
    } else {
        format!("{position} · end of output")
    }
}

/// `task_wait`'s one footer: how the wait ended (`how`, a bracketed notice), then `position`.
pub fn wait_footer(how: &str, position: &str) -> String {
    let how = how.strip_prefix('[').unwrap_or(how);
    let how = how.strip_suffix(']').unwrap_or(how);
    format!("[{how} · {position}]")
}

pub const NO_NEW_OUTPUT: &str = "(no new output)";

pub fn spill_stopped(path: &Path, bytes: u64) -> String {
    format!(
        "[note] {} stopped growing at {bytes} bytes (the per-job limit); the newest output is \
         still read here",
        path.display()
    )
}

/// Above the newest output `task_wait` shows: where the `from` bytes before it are.
pub fn earlier_output(id: &str, since: u64, from: u64, spill: Option<&Path>) -> String {
    not_shown("task_output", id, since, from - since, spill)
}

pub fn wait_ended(id: &str, state: &str, waited_ms: u64) -> String {
    format!("[{id} {state} · waited {waited_ms} ms]")
}

pub fn wait_timed_out(id: &str, waited_ms: u64) -> String {
    format!(
        "[{id} still running after waiting {waited_ms} ms; it was not stopped. Wait again with \
         task_wait, read with task_output, or stop it with task_stop]"
    )
}

pub fn forgotten(count: u64) -> String {
    format!(
        "[{count} older ended jobs are no longer listed: only the newest {} ended ones of each \
         kind are kept]",
        agentty_core::jobs::ENDED_KEPT
    )
}

pub fn wait_cancelled(id: &str) -> String {
    format!("[wait cancelled; {id} keeps running]")
}

pub fn stopped(id: &str, state: &str) -> String {
    format!("[{id} {state}: the command and every process it started were stopped]")
}

pub fn already_ended(id: &str, state: &str) -> String {
    format!("[{id} had already ended ({state}); nothing to stop]")
}

/// `tasks/get` of a task cancelled with `tasks/cancel`.
pub const TASK_CANCELLED: &str = "cancelled: the process tree was stopped";

/// A task's final result holds the job's output, stdout and stderr merged as they came.
pub const TASK_MERGED: &str = "[note] stdout and stderr are merged, in the order they came";

/// A task's final result shows the newest output only.
pub fn task_tail(from: u64, spill: Option<&std::path::Path>) -> String {
    match spill {
        Some(path) => format!(
            "[note] the first {from} bytes are not shown; the full output is in {}",
            path.display()
        ),
        None => format!("[note] the first {from} bytes are not shown (they left the buffer)"),
    }
}
