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
