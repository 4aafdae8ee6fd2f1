//! What the libtest and nextest readers share: the counts, the failures in the order they were
//! named with the message found for each, and the reading of a run in which no test ran (a
//! build that failed). A leaf below both readers, so neither imports the other or the module
//! that picks between them.

use std::collections::{HashMap, HashSet};

use crate::Output;
use crate::diagnostics::{Diagnostic, Severity};
use crate::test_report::{Failure, Outcome, TestReport};

/// At most this many lines of a failure's message are kept.
const MESSAGE_LINES: usize = 10;

/// What one `test result:` line or the whole run counts.
#[derive(Default)]
pub(super) struct Counts {
    pub(super) passed: u64,
    pub(super) failed: u64,
    pub(super) skipped: u64,
    pub(super) seconds: f64,
}

/// The failures in the order they were named, each once, with the message found for it.
#[derive(Default)]
pub(super) struct Failures {
    /// What the runner puts before each line of a test's output (nextest: four spaces).
    indent: &'static str,
    order: Vec<String>,
    seen: HashSet<String>,
    messages: HashMap<String, Message>,
}

impl Failures {
    /// For a runner that puts `indent` before each line of a test's output.
    pub(super) fn indented(indent: &'static str) -> Failures {
        Failures {
            indent,
            ..Failures::default()
        }
    }

    pub(super) fn name(&mut self, name: &str) {
        if !name.is_empty() && self.seen.insert(name.to_owned()) {
            self.order.push(name.to_owned());
        }
    }

    /// Keeps the first message found for `name`; a later, empty one is no better.
    pub(super) fn message(&mut self, name: &str, lines: &[&str]) {
        if !self.messages.contains_key(name)
            && let Some(message) = failure_message(lines, self.indent)
        {
            self.messages.insert(name.to_owned(), message);
        }
    }

    pub(super) fn into_records(mut self, failing: impl Fn(&str) -> bool) -> Vec<Failure> {
        let order = std::mem::take(&mut self.order);
        order
            .into_iter()
            .filter(|name| failing(name))
            .map(|name| {
                let message = self.messages.remove(&name).unwrap_or_default();
                Failure {
                    name,
                    file: message.file,
                    line: message.line,
                    message: message.text,
                }
            })
            .collect()
    }
}

#[derive(Default)]
struct Message {
    file: Option<String>,
    line: Option<u64>,
    text: String,
}

/// The message of a failure from the lines of its output: the panic's message and location
/// when it panicked, else its first lines (a test returning `Err` prints `Error: …`).
fn failure_message(lines: &[&str], indent: &str) -> Option<Message> {
    let mut lines = lines.iter().map(|&l| l.strip_prefix(indent).unwrap_or(l));
    let mut skipped = Vec::new();
    for line in lines.by_ref() {
        if let Some(location) = line
            .trim_start()
            .strip_prefix("thread '")
            .and_then(panic_location)
        {
            let (file, line_number, inline) = location;
            let mut text: Vec<&str> = inline.into_iter().collect();
            text.extend(
                lines
                    .take_while(|l| !l.starts_with("note: ") && !l.starts_with("stack backtrace:"))
                    .take(MESSAGE_LINES),
            );
            return Some(Message {
                file: Some(file.to_owned()),
                line: line_number,
                text: joined(&text),
            });
        }
        if skipped.len() < MESSAGE_LINES && !is_framing(line) {
            skipped.push(line);
        }
    }
    let text = joined(&skipped);
    (!text.is_empty()).then_some(Message {
        text,
        ..Message::default()
    })
}

/// From the text after `thread '`: the panic's file and line, and the message when the old
/// (before Rust 1.73) form printed it on the same line: `panicked at 'msg', src/lib.rs:3:5`.
fn panic_location(rest: &str) -> Option<(&str, Option<u64>, Option<&str>)> {
    let (_, at) = rest.split_once(" panicked at ")?;
    let (inline, location) = match at.strip_prefix('\'').and_then(|m| m.rsplit_once("', ")) {
        Some((message, location)) => (Some(message), location),
        None => (None, at.strip_suffix(':').unwrap_or(at)),
    };
    let (file_line, _column) = location.rsplit_once(':')?;
    let (file, line) = file_line.rsplit_once(':')?;
    Some((file, line.parse().ok(), inline))
}

/// Lines libtest or nextest print around a failure's own output.
fn is_framing(line: &str) -> bool {
    let line = line.trim();
    line.is_empty()
        || line.starts_with("running ")
        || line.starts_with("test ")
        || line == "failures:"
        || line.starts_with("--- STDOUT:")
        || line.starts_with("--- STDERR:")
        || line.ends_with(" ───")
}

/// The lines, blank ones at either end dropped, at most [`MESSAGE_LINES`].
fn joined(lines: &[&str]) -> String {
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let kept: Vec<&str> = lines
        .iter()
        .skip(start)
        .take(MESSAGE_LINES)
        .copied()
        .collect();
    let end = kept
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    kept.get(..end).unwrap_or(&[]).join("\n")
}

/// No test ran: the build failed (its messages read as diagnostics), or the command failed
/// some other way, or this is not test output at all.
pub(super) fn build_failure(tool: &str, out: &Output<'_>) -> Result<TestReport, String> {
    let mut errors = crate::diagnostics::cargo::human_diagnostics(out.stderr);
    if errors.is_empty() {
        errors = crate::diagnostics::cargo::human_diagnostics(out.stdout);
    }
    if errors.is_empty() {
        errors = error_lines(out.stderr);
        errors.extend(error_lines(out.stdout));
    }
    if errors.is_empty() {
        return Err(format!(
            "no test results in the output of `{tool}` and no error either"
        ));
    }
    Ok(TestReport {
        tool: tool.into(),
        outcome: Outcome::Error,
        passed: 0,
        failed: 0,
        skipped: 0,
        duration_seconds: None,
        failures: Vec::new(),
        build_errors: errors,
    })
}

/// rustc's and cargo's `error…:` lines with the ` --> file:line:col` under them: a minimal
/// reading used only when the diagnostics parser finds nothing.
fn error_lines(text: &str) -> Vec<Diagnostic> {
    let mut errors: Vec<Diagnostic> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("error") {
            let (code, message) = match rest.strip_prefix('[').and_then(|r| r.split_once("]: ")) {
                Some((code, message)) => (Some(code.to_owned()), message),
                None => match rest.strip_prefix(": ") {
                    Some(message) => (None, message),
                    None => continue,
                },
            };
            errors.push(Diagnostic {
                severity: Severity::Error,
                message: message.to_owned(),
                code,
                file: None,
                line: None,
                column: None,
                notes: Vec::new(),
            });
        } else if let (Some(last), Some(location)) =
            (errors.last_mut(), line.trim_start().strip_prefix("--> "))
            && last.file.is_none()
        {
            let mut parts = location.rsplitn(3, ':');
            let column = parts.next().and_then(|c| c.parse().ok());
            let line_number = parts.next().and_then(|l| l.parse().ok());
            if let (Some(file), Some(_)) = (parts.next(), line_number) {
                last.file = Some(file.to_owned());
                last.line = line_number;
                last.column = column;
            }
        }
    }
    errors
}
