//! Every word the job-control family (`task_*`, and `terminal`'s background replies) says to a
//! model, in one place (docs/BEHAVIOUR.md §1, §3).
//!
//! Each reply states the fact and the next call that acts on it, with the exact arguments, so a
//! model never has to guess a cursor or an id. Numbers come from the engine's constants.

use std::path::Path;
use std::time::Duration;

use agentty_core::jobs::table::{MAX_RUNNING_COMMANDS, MAX_SHELLS};
use agentty_core::jobs::{JobKind, RING_BYTES};

/// Default `task_wait` timeout: long enough for a test run's tail, short enough that the model
/// gets control back to do something else.
pub const WAIT_DEFAULT_MS: u64 = 30_000;

pub const TASK_LIST_DESCRIPTION: &str = "List this session's jobs: background commands (t1, \
t2, …) and shells (s1, …), one line each with id, kind, state, age, command and output size. \
Runs nothing.";

pub const TASK_OUTPUT_DESCRIPTION: &str = "Read a job's output incrementally, at most 8 KB per \
call. `since` is a byte cursor: pass the `next` of the previous read to get exactly what \
followed, with no gap and no repeat; without it you get the newest 8 KB. Output is cleaned (no \
colours; a progress bar shows its final state). A job keeps its newest 256 KB; the reply says how \
much scrolled out and which file holds all of it. Runs nothing.";

pub const TASK_WAIT_DESCRIPTION: &str = "Wait for a background command to end, at most \
`timeout_ms` (default 30000, max 600000), then return its state and its newest output. Reaching \
the timeout never stops the job: it keeps running and you can wait again. A shell never ends on \
its own (use shell_send / shell_read). Runs nothing.";

pub const TASK_STOP_DESCRIPTION: &str = "Stop a background command and every process it started \
(SIGTERM, then SIGKILL after a 1 s grace). Its output stays readable with task_output. For a \
shell use shell_close.";

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

/// The life of a job of a caller without a session, told when it starts.
pub fn handle_rule(grace: Duration) -> String {
    format!(
        "[note] keep this id: without a session it is the only way back to this job, which is \
         stopped once no request has named it for {}",
        age(grace)
    )
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

/// One line per running job, for a refusal at the cap.
pub struct RunningJob<'a> {
    pub id: &'a str,
    pub age: Duration,
    pub label: &'a str,
}

pub fn cap_reached(kind: JobKind, limit: usize, running: &[RunningJob<'_>]) -> String {
    let (what, stop) = match kind {
        JobKind::Command => ("background commands", "task_stop"),
        JobKind::Shell => ("shells", "shell_close"),
    };
    let mut text = format!(
        "refused: this session already runs {limit} {what}, the maximum \
         ({MAX_RUNNING_COMMANDS} commands, {MAX_SHELLS} shells). Running now:"
    );
    for job in running {
        text.push_str(&format!(
            "\n  {} {} {}",
            job.id,
            age(job.age),
            one_line(job.label)
        ));
    }
    text.push_str(&format!(
        "\nStop one first with {stop}, or wait for one with task_wait"
    ));
    text
}

pub fn started(id: &str, pid: i32, display: &str) -> String {
    format!(
        "Started {id} in the background (pid {pid}): {}\nIt runs until it ends or is stopped; \
         no timeout applies. Read its output with task_output({{\"id\": \"{id}\"}}), wait for \
         it with task_wait({{\"id\": \"{id}\", \"timeout_ms\": 30000}}), stop it with \
         task_stop({{\"id\": \"{id}\"}}).",
        one_line(display)
    )
}

pub fn moved_to_background(timeout_ms: u64, id: &str, cursor: u64) -> String {
    format!(
        "[timed out after {timeout_ms} ms: moved to the background as {id}, nothing was \
         stopped. The output above ends at byte {cursor}; continue with \
         task_output({{\"id\": \"{id}\", \"since\": {cursor}}}), wait with task_wait, stop \
         with task_stop]"
    )
}

pub fn not_moved(timeout_ms: u64, refusal: &str) -> String {
    format!(
        "[timed out after {timeout_ms} ms and could not move to the background, so the process \
         tree was stopped. {refusal}]"
    )
}

pub fn spill_so_far(path: &Path) -> String {
    format!(
        "[the full output so far is in {}; the job keeps writing to it]",
        path.display()
    )
}

/// A job's state in words: running, exited 0, killed by SIGKILL, stopped, closed for inactivity.
/// A job's state in words, the same in every tool: a shell is "open" (then "closed"), a
/// command "running" (then "stopped").
pub fn state_words(kind: JobKind, state: &agentty_core::jobs::JobState) -> String {
    use agentty_core::jobs::JobState;
    match state {
        JobState::Running if kind == JobKind::Shell => "open".into(),
        JobState::Stopped if kind == JobKind::Shell => "closed".into(),
        JobState::Running => "running".into(),
        JobState::Exited(code) => format!("exited {code}"),
        JobState::Signalled(sig) => {
            format!("killed by {}", agentty_core::signal_name(*sig))
        }
        JobState::Stopped => "stopped".into(),
        JobState::Reaped => "closed for inactivity".into(),
    }
}

pub fn kind_words(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Command => "[command]",
        JobKind::Shell => "[shell]",
    }
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

/// What scrolled out between the requested cursor and the text returned.
pub fn scrolled_out(dropped: u64, spill: Option<&Path>, error: Option<&str>) -> String {
    let kept = RING_BYTES / 1024;
    match (spill, error) {
        (Some(path), _) => format!(
            "[{dropped} bytes before this point scrolled out of the {kept} KB buffer; the full \
             output is in {}]",
            path.display()
        ),
        (None, Some(reason)) => format!(
            "[{dropped} bytes before this point scrolled out of the {kept} KB buffer and could \
             not be saved ({reason})]"
        ),
        (None, None) => format!(
            "[{dropped} bytes before this point scrolled out of the {kept} KB buffer and were \
             not kept]"
        ),
    }
}

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

/// Output left out of a reply that is still there to read, in one wording for every tool:
/// `skipped` bytes from cursor `since`, readable with `tool` (or in the spill file).
pub fn not_shown(tool: &str, id: &str, since: u64, skipped: u64, spill: Option<&Path>) -> String {
    match spill {
        Some(path) => format!(
            "[{skipped} earlier bytes are not shown; the full output is in {}]",
            path.display()
        ),
        None => format!(
            "[{skipped} earlier bytes are not shown; read them with {tool}({{\"id\": \"{id}\", \
             \"since\": {since}}})]"
        ),
    }
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

/// "12s", "3m04s", "2h05m".
pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// "812 B", "3.4 KB", "1.2 MB".
pub fn size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if b < KB * KB {
        format!("{:.1} KB", b / KB)
    } else {
        format!("{:.1} MB", b / (KB * KB))
    }
}

/// A command on one line, shortened: a list is for scanning.
fn one_line(label: &str) -> String {
    const LABEL_MAX_CHARS: usize = 120;
    let flat: String = label
        .chars()
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect();
    if flat.chars().count() > LABEL_MAX_CHARS {
        let cut: String = flat.chars().take(LABEL_MAX_CHARS).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

#[cfg(test)]
mod suggested_calls {
    /// Every `tool({…})` a notice suggests, in every notice of both families.
    fn calls(text: &str) -> Vec<&str> {
        let mut found = Vec::new();
        for (at, _) in text.match_indices("({") {
            let rest = &text[at + 1..];
            let end = rest.find("})").map_or(rest.len(), |e| e + 1);
            found.push(&rest[..end]);
        }
        found
    }

    /// The calls a model is told to make are written one way, as the JSON arguments it sends.
    #[test]
    fn every_suggested_call_is_written_as_json() {
        let path = std::path::Path::new("/tmp/x.log");
        let texts = [
            super::started("t1", 42, "make"),
            super::moved_to_background(1000, "t1", 21),
            super::read_footer("t1", "running", 0, 21, 100, 79),
            super::read_footer("t1", "running", 0, 21, 21, 0),
            super::earlier_output("t1", 0, 21, None),
            super::earlier_output("t1", 0, 21, Some(path)),
            crate::shell_notice::opened("s1", "bash", "/w", 80, 24, true),
            crate::shell_notice::full_screen("s1"),
            crate::shell_notice::running(1000, "s1", 21),
            crate::shell_notice::dropped(10, "s1", 21, None),
            crate::shell_notice::read_on(21, "s1"),
            crate::shell_notice::more(21, 10, "s1"),
        ];
        let mut seen = 0;
        for text in &texts {
            for call in calls(text) {
                seen += 1;
                assert!(
                    serde_json::from_str::<serde_json::Value>(call).is_ok(),
                    "not JSON: {call} in {text}"
                );
            }
        }
        assert!(seen >= 12, "only {seen} calls found");
    }
}
