//! How a job is worded wherever it is shown, in one place: its state, its kind, its age and
//! output size, and the refusal at the job cap listing the running ones. The `task_*` and
//! `shell_*` families, `terminal`'s background replies, the tasks extension, the server's log
//! lines and the web view all say a job's state with these words (docs/BEHAVIOUR.md §3).

use std::path::Path;
use std::time::Duration;

use agentty_core::jobs::table::{MAX_RUNNING_COMMANDS, MAX_SHELLS};
use agentty_core::jobs::{CapReached, JobKind, JobState, RING_BYTES};

/// One line per running job, for a refusal at the cap.
pub struct RunningJob<'a> {
    pub id: &'a str,
    pub age: Duration,
    pub label: &'a str,
}

/// The refusal at the cap of `kind`, listing what runs.
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

/// A job's state in words, the same in every tool: running, exited 0, killed by SIGKILL,
/// stopped, closed for inactivity; a shell is "open" (then "closed"), a command "running"
/// (then "stopped").
pub fn state_words(kind: JobKind, state: &JobState) -> String {
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

/// A command line as a log line may show it: its program and no argument. Arguments and the
/// assignments before a program carry secrets (`--token=sk-…`, `GITHUB_TOKEN=… git push`), and
/// a log file is often readable by the very commands that ran them.
pub fn for_log(label: &str) -> String {
    const PROGRAM_MAX_CHARS: usize = 40;
    let mut shown = Vec::new();
    let mut words = label.split_whitespace();
    for word in words.by_ref() {
        match word.split_once('=') {
            Some((name, _))
                if !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                shown.push(format!("{name}=…"));
            }
            _ => {
                let program: String = word.chars().take(PROGRAM_MAX_CHARS).collect();
                shown.push(program);
                break;
            }
        }
    }
    if words.next().is_some() {
        shown.push("…".to_owned());
    }
    shown.join(" ")
}

/// A command on one line, shortened: a list is for scanning.
pub(crate) fn one_line(label: &str) -> String {
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

/// "850 ms", "42 s", "7 min": how long a shell was idle.
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 120_000 {
        format!("{} s", ms / 1000)
    } else {
        format!("{} min", ms / 60_000)
    }
}

/// The refusal at the cap, listing the running jobs.
pub fn cap_text(cap: &CapReached) -> String {
    let running: Vec<RunningJob<'_>> = cap
        .running
        .iter()
        .map(|j| RunningJob {
            id: &j.id,
            age: j.started.elapsed(),
            label: &j.label,
        })
        .collect();
    cap_reached(cap.kind, cap.limit, &running)
}

/// The life of a job of a caller without a session, told when it starts.
pub fn handle_rule(grace: Duration) -> String {
    format!(
        "[note] keep this id: without a session it is the only way back to this job, which is \
         stopped once no request has named it for {}",
        age(grace)
    )
}

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

pub const NO_OUTPUT: &str = "(no output)";

/// A job's state in words as the tools report it: [`state_words`], and for a job the server
/// stopped on its own, why (`stopped: the server was shut down`).
pub fn job_state(job: &agentty_core::jobs::Job) -> String {
    let state = job.state();
    match (job.stop_cause(), &state) {
        (Some(agentty_core::jobs::StopCause::ServerShutDown), JobState::Stopped) => {
            format!("{}: {SHUT_DOWN}", state_words(job.kind, &state))
        }
        _ => state_words(job.kind, &state),
    }
}

/// Why a job the drain stopped was stopped.
const SHUT_DOWN: &str = "the server was shut down";

/// A time as the model reads it: RFC 3339, UTC, to the second.
pub fn when(epoch_secs: u64) -> String {
    i64::try_from(epoch_secs)
        .ok()
        .and_then(|s| chrono::DateTime::<chrono::Utc>::from_timestamp(s, 0))
        .map_or_else(
            || format!("{epoch_secs} s after the epoch"),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )
}

/// A job from before a restart, as the state dir kept it (`session::kept`), for its words.
pub struct Earlier<'a> {
    pub id: &'a str,
    pub shell: bool,
    /// The command as the file keeps it (no argument).
    pub label: &'a str,
    /// Its state when last written.
    pub state: &'a str,
    /// A restart found it running: it was lost then.
    pub lost_at: Option<u64>,
    /// The drain stopped it then.
    pub shut_down_at: Option<u64>,
    pub spill: Option<&'a str>,
}

/// A job from before a restart, in `task_list`: `lost at the restart of <time>`, `stopped: the
/// server was shut down at <time>`, or its state then.
pub fn earlier_state(job: &Earlier<'_>) -> String {
    match (job.lost_at, job.shut_down_at) {
        (Some(at), _) => format!("lost at the restart of {}", when(at)),
        (None, Some(at)) => {
            let verb = if job.shell { "closed" } else { "stopped" };
            format!("{verb}: {SHUT_DOWN} at {}", when(at))
        }
        (None, None) => format!("{}, before the restart", job.state),
    }
}

/// The answer to a request naming a job from before a restart, instead of "no such job":
/// what became of it, and where its output is when a spill file of it is left. `restarted`:
/// when this server started.
pub fn earlier(job: &Earlier<'_>, restarted: u64) -> String {
    let id = job.id;
    let label = one_line(job.label);
    let again = if job.shell {
        "shell_open starts a new shell"
    } else {
        "start it again if it is still needed"
    };
    let mut text = match (job.lost_at, job.shut_down_at) {
        (Some(at), _) => format!(
            "{id} was lost when the server restarted at {}: `{label}` was running then, and \
             nothing of it runs now; {again}.",
            when(at)
        ),
        (None, Some(at)) => format!(
            "{id} was stopped when the server was shut down at {}: `{label}`; {again}.",
            when(at)
        ),
        (None, None) => format!(
            "{id} ended before the server restarted at {} ({}): `{label}`; its output is not kept \
             across a restart.",
            when(restarted),
            job.state
        ),
    };
    if let Some(spill) = job.spill.filter(|p| Path::new(p).exists()) {
        text.push_str(&format!(" Its output up to then is in {spill}."));
    }
    text
}

#[cfg(test)]
mod tests {
    /// A log line shows a command's program, never an argument or an assignment's value.
    #[test]
    fn a_command_in_a_log_line_keeps_no_argument_or_value() {
        for (label, shown) in [
            ("python3 -c 'x' --token=alice-secret", "python3 …"),
            ("GITHUB_TOKEN=ghp_secret git push", "GITHUB_TOKEN=… git …"),
            ("A=1 B=2 make", "A=… B=… make"),
            ("ls", "ls"),
            ("/usr/bin/env X=sk-1 prog", "/usr/bin/env …"),
        ] {
            let logged = super::for_log(label);
            assert_eq!(logged, shown, "{label}");
            assert!(!logged.contains("secret") && !logged.contains("sk-1"));
        }
    }
}
