//! A job as the `task_*` tools report it, with what its output shows was refused.

use agentty_core::jobs::{Job, JobKind, JobState, READ_MAX_BYTES};

use super::{TaskInfo, TaskKind, TaskState};
use crate::confinement::Confinement;
use crate::confinement::Refused;
use crate::confinement::notice::Retry;
use crate::tools::timing::millis;

/// What an ended command job's output shows it was refused: a write the sandbox refused
/// (2008), or a read.
fn denial(job: &Job, confinement: &Confinement, retry: Retry) -> Option<Refused> {
    if !job.confined || job.kind != JobKind::Command {
        return None;
    }
    let exit = match job.state() {
        JobState::Running => return None,
        JobState::Exited(code) => Some(code),
        _ => None,
    };
    let tail = job.output.read(None, READ_MAX_BYTES).text;
    confinement.denial(false, exit, &tail, retry, &job.label, || {
        job.ends_in().map(ToOwned::to_owned)
    })
}

/// A job as the tools report it, and what its output shows it was refused.
pub(super) fn info(
    job: &Job,
    confinement: &Confinement,
    retry: Retry,
) -> (TaskInfo, Option<Refused>) {
    let refused = denial(job, confinement, retry);
    let state = job.state();
    let (task_state, exit_code, signal) = match &state {
        JobState::Running => (TaskState::Running, None, None),
        JobState::Exited(code) => (TaskState::Exited, Some(*code), None),
        JobState::Signalled(sig) => (
            TaskState::Killed,
            None,
            Some(agentty_core::signal_name(*sig)),
        ),
        JobState::Stopped => (TaskState::Stopped, None, None),
        JobState::Reaped => (TaskState::Reaped, None, None),
    };
    let info = TaskInfo {
        id: job.id.clone(),
        kind: match job.kind {
            JobKind::Command => TaskKind::Command,
            JobKind::Shell => TaskKind::Shell,
        },
        state: task_state,
        state_text: crate::job_words::job_state(job),
        exit_code,
        signal,
        age_ms: millis(job.started.elapsed()),
        command: job.label.clone(),
        workdir: job.workdir.display().to_string(),
        pid: job.pid,
        output_bytes: job.output.total(),
        leftovers_stopped: job.leftovers(),
        error_code: refused.as_ref().and_then(Refused::code),
        sandbox_denied: refused
            .as_ref()
            .and_then(Refused::write_sentence)
            .map(ToOwned::to_owned),
    };
    (info, refused)
}

/// Appends the 2008 line (or the refused read's note), when there is one, to a reply's text.
pub(super) fn push_denial(text: &mut String, refused: Option<&Refused>) {
    if let Some(refused) = refused {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&refused.line());
    }
}
