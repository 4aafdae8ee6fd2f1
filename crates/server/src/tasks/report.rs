//! A job as the `task_*` tools report it, with what it met: what its output shows was refused,
//! and the connections the network policy refused or could not make.

use agentty_core::jobs::{Job, JobKind, JobState, READ_MAX_BYTES};

use super::{TaskInfo, TaskKind, TaskState};
use crate::confinement::Confinement;
use crate::confinement::Refused;
use crate::confinement::notice::Retry;
use crate::network::notice;
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

/// What an ended job met: a write or read its output shows refused, and the connections the
/// network policy refused (error 2010) or could not make. Worded only where a reply says it
/// ([`push_met`]); `task_list` needs no more than the code.
pub(super) struct JobMet {
    denial: Option<Refused>,
    refused: Vec<crate::network::Refusal>,
    unreached: Vec<crate::network::Unreached>,
}

/// A job as the tools report it, and what it met.
pub(super) fn info(job: &Job, confinement: &Confinement, retry: Retry) -> (TaskInfo, JobMet) {
    let denial = denial(job, confinement, retry);
    let state = job.state();
    // An ended command job's connections, whatever it printed and whatever the exit code.
    let (refused, unreached) = if job.kind == JobKind::Command && state != JobState::Running {
        crate::network::met_by_job(job)
    } else {
        Default::default()
    };
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
        error_code: denial
            .as_ref()
            .and_then(Refused::code)
            .or((!refused.is_empty()).then_some(notice::NETWORK_REFUSED)),
        sandbox_denied: denial
            .as_ref()
            .and_then(Refused::write_sentence)
            .map(ToOwned::to_owned),
    };
    (
        info,
        JobMet {
            denial,
            refused,
            unreached,
        },
    )
}

/// Appends what the job met, when anything, to a reply's text: the 2008 line (or the refused
/// read's note), then the 2010 line and the note of hosts not reached.
pub(super) fn push_met(text: &mut String, met: &JobMet) {
    let lines = [
        met.denial.as_ref().map(Refused::line),
        (!met.refused.is_empty()).then(|| notice::network_refused(&met.refused)),
        (!met.unreached.is_empty()).then(|| notice::network_unreached(&met.unreached)),
    ];
    for line in lines.into_iter().flatten() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&line);
    }
}
