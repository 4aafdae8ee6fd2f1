//! A finished run as its reader gets it: the text block for the model (head and tail of the
//! merged output, the spill hint, the status line, the typed data with `parse: true`, the
//! notes, the sandbox line) and `structuredContent` for programs (docs/BEHAVIOUR.md §2, §7, §8).

use agentty_core::run::{RunOutcome, RunStatus, Spill, Strays};
use agentty_core::{Exit, Shaped};

use super::{Prepared, Status, TerminalResult, notice, parsed};

/// What the sandbox says about one call: its line, and what the output shows was refused.
pub(super) struct SandboxReport {
    pub line: String,
    pub denial: Option<crate::confinement::Refused>,
    /// The 2010 line, when connections were refused.
    pub network: Option<String>,
}

/// Renders a run for the model (text) and for programs (structured). `path_notes`: what the
/// calling path adds (the PTY path's awaiting-input note), listed with the others, before the
/// sandbox line.
pub(super) fn render(
    prepared: &Prepared,
    outcome: &RunOutcome,
    sandbox: SandboxReport,
    path_notes: Vec<String>,
) -> (String, TerminalResult) {
    let ms = crate::tools::timing::millis(outcome.duration);
    let mut notes = path_notes;
    let (parsed, parse_note) = typed(prepared, outcome);
    notes.extend(parse_note);
    let mut text = match &parsed {
        // The status line first, then the data: the typed line is the whole answer.
        Some(_) => String::new(),
        None => shaped_text(&outcome.output),
    };
    if text.is_empty() && parsed.is_none() {
        text.push_str(crate::job_words::NO_OUTPUT);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let rescued = (parsed.is_none() && outcome.status == RunStatus::Failed)
        .then(|| stderr_left_out(outcome))
        .flatten();
    // The rescued stderr lines are the command's too.
    notes.extend(match &rescued {
        Some(lines) => crate::own_lines::note(&format!("{text}{lines}")),
        None => crate::own_lines::note(&text),
    });
    if let Some(lines) = rescued {
        text.push_str(&notice::stderr_tail(&lines));
        text.push('\n');
    }
    match &outcome.spill {
        Spill::NotNeeded => {}
        Spill::Written(path) => {
            text.push_str(&notice::spill_hint(
                path,
                outcome.output_bytes,
                outcome.output_lines,
            ));
            text.push('\n');
        }
        Spill::Failed(reason) => notes.push(notice::spill_failed(reason)),
    }
    let (exit_code, signal) = match outcome.exit {
        Some(Exit::Code(code)) => (Some(code), None),
        Some(Exit::Signal(sig)) => (None, Some(agentty_core::signal_name(sig))),
        None => (None, None),
    };
    let status_line = match outcome.status {
        RunStatus::Timeout => notice::timed_out(prepared.timeout_ms),
        RunStatus::Cancelled => notice::CANCELLED.to_owned(),
        RunStatus::Killed => notice::over_capture(),
        RunStatus::Success | RunStatus::Failed => match (&exit_code, &signal) {
            (Some(code), _) => notice::exited(*code, ms),
            (None, Some(sig)) => notice::signalled(sig, ms),
            (None, None) => notice::signalled("an unknown cause", ms),
        },
    };
    match outcome.strays {
        Some(Strays::HeldOutput(n)) => notes.push(notice::stray_held_output(n)),
        Some(Strays::Lingering(n)) => notes.push(notice::stray_lingering(n)),
        None => {}
    }
    if let Some(stopped) = outcome.stopped
        && stopped.stuck > 0
    {
        notes.push(notice::stuck(stopped.stuck));
    }
    // Only when the cd worked: after a failed one the shell's own error says what happened, and
    // "pass the workdir parameter" would point at a directory that is not there.
    if let Some(dir) = &prepared.bare_cd
        && exit_code == Some(0)
    {
        notes.push(notice::cd_note(dir));
    }
    let error_code = sandbox
        .denial
        .as_ref()
        .and_then(crate::confinement::Refused::code)
        .or(sandbox
            .network
            .as_ref()
            .map(|_| crate::network::notice::NETWORK_REFUSED));
    if let Some(denial) = &sandbox.denial {
        notes.push(denial.line());
    }
    if let Some(network) = &sandbox.network {
        notes.push(network.clone());
    }
    text.push_str(&status_line);
    if let Some((_, line)) = &parsed {
        text.push('\n');
        text.push_str(line);
    }
    for note in &notes {
        text.push('\n');
        text.push_str(note);
    }
    text.push('\n');
    text.push_str(&sandbox.line);
    let structured = TerminalResult {
        status: match outcome.status {
            RunStatus::Success => Status::Success,
            RunStatus::Failed => Status::Failed,
            RunStatus::Timeout => Status::Timeout,
            RunStatus::Cancelled => Status::Cancelled,
            RunStatus::Killed => Status::Killed,
        },
        exit_code,
        signal,
        stdout: shaped_text(&outcome.stdout),
        stderr: shaped_text(&outcome.stderr),
        duration_ms: ms,
        pid: outcome.pid,
        truncated: outcome.output.is_truncated()
            || outcome.stdout.is_truncated()
            || outcome.stderr.is_truncated()
            || outcome.status == RunStatus::Killed,
        spill_path: match &outcome.spill {
            Spill::Written(path) => Some(path.display().to_string()),
            _ => None,
        },
        notes,
        sandbox: sandbox.line,
        error_code,
        job_id: None,
        parsed: parsed.map(|(content, _)| content),
    };
    (text, structured)
}

/// Lines of stderr a failed command wrote last that the merged text does not show: its cut
/// dropped them into the omitted middle (stdout filled the budget after them). The error that
/// ended a failed build must reach the model whatever else the build printed.
fn stderr_left_out(outcome: &RunOutcome) -> Option<String> {
    let Shaped::HeadTail { tail, .. } = &outcome.output else {
        return None;
    };
    let stderr = match &outcome.stderr {
        Shaped::Whole(text) => text.as_str(),
        Shaped::HeadTail { tail, .. } => tail.as_str(),
    };
    let last: Vec<&str> = stderr
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(STDERR_TAIL_LINES)
        .collect();
    // Shown already when every one of those lines is a line of the tail, whole: a line of
    // stdout that merely holds the newest as a part (`retry on AssertionError is disabled`)
    // kept a traceback out of sight (review 35, F7).
    last.first()?;
    let tail_lines: std::collections::HashSet<&str> = tail.lines().collect();
    if last.iter().all(|line| tail_lines.contains(line)) {
        return None;
    }
    let mut lines: Vec<&str> = last.into_iter().rev().collect();
    let mut kept = lines.concat().len();
    while kept > STDERR_TAIL_CHARS && lines.len() > 1 {
        kept -= lines.remove(0).len();
    }
    Some(lines.join("\n"))
}

/// How much of stderr's end is shown when the cut left it out: the error and its context.
const STDERR_TAIL_LINES: usize = 10;
const STDERR_TAIL_CHARS: usize = 2000;

/// With `parse: true`: the typed result and its line for the model, or the note saying why
/// there is none.
fn typed(
    prepared: &Prepared,
    outcome: &RunOutcome,
) -> (Option<(parsed::ParsedContent, String)>, Option<String>) {
    let plan = match &prepared.parse {
        None => return (None, None),
        Some(Err(reason)) => return (None, Some(notice::not_parsed(reason))),
        Some(Ok(plan)) => plan,
    };
    let finished = matches!(outcome.status, RunStatus::Success | RunStatus::Failed);
    let Some(whole) = outcome.whole.as_ref().filter(|_| finished) else {
        return (
            None,
            Some(notice::not_parsed(notice::NOT_PARSED_UNFINISHED)),
        );
    };
    let exit_code = outcome.exit.and_then(Exit::code);
    let budget = agentty_core::limits::INLINE_LIMIT_BYTES;
    match parsed::parse(plan, whole, exit_code, budget) {
        Ok((result, cut)) => {
            let note = cut.map(|cut| {
                let records = agentty_parse::TYPES
                    .iter()
                    .find(|t| t.name == result.type_name)
                    .map_or("records", |t| t.records);
                notice::parsed_cut(&cut, records)
            });
            let (content, json) = parsed::answer(result, cut);
            let line = notice::parsed_line(&content.type_name, &json);
            (Some((content, line)), note)
        }
        Err(reason) => (None, Some(notice::not_parsed(&reason))),
    }
}

/// The merged output as the model reads it (head+tail when long), for denial detection.
pub(super) fn output_text(outcome: &RunOutcome) -> String {
    shaped_text(&outcome.output)
}

pub(crate) fn shaped_text(shaped: &Shaped) -> String {
    match shaped {
        Shaped::Whole(text) => text.clone(),
        Shaped::HeadTail {
            head,
            tail,
            omitted_bytes,
            omitted_lines,
        } => {
            let mut out = head.clone();
            out.push_str(&notice::omitted(*omitted_bytes, *omitted_lines));
            out.push_str(tail);
            out
        }
    }
}
