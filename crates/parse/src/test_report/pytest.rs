//! `pytest` (also `py.test`, `python -m pytest`) in its default terminal format, `-q` and `-v`.
//!
//! The counts come from pytest's one closing line (`=== 3 failed, 5 passed, 1 skipped in
//! 0.12s ===`, without the `=` under `-q`), the last line that reads as one, so a filter that
//! keeps it (`| tail`) loses nothing but failure details. The failures are named by the `short
//! test summary info` lines (`FAILED test_x.py::test_y - AssertionError: …`), which carry the
//! node id the model can rerun; without them (`-rN`) by `-v`'s result lines, else by the
//! `___ test_y ___` headers. Each failure's message and location come from its block in the
//! `FAILURES`/`ERRORS` sections: the `E ` lines, and the last `file:line:` line (the frame that
//! raised).
//!
//! Counting: xfailed tests are skipped ones and xpassed ones passed, as neither failed; an
//! error in a fixture (`ERROR at setup of …`) is a failure of that test. A module that could not
//! be collected is not a test: it is a build error, and the outcome is `error`.
//!
//! This module says which command lines are pytest's and makes the report; `reading` is the
//! pass over the output, `lines` the readers of single lines.

use super::{Outcome, TestReport};
use crate::diagnostics::{Diagnostic, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

mod lines;
mod reading;

use lines::Block;
use reading::Reading;

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let program = stage.program.as_str();
    let args = match program {
        "pytest" | "py.test" | "pytest-3" => stage.args.as_slice(),
        _ if is_python(program) => match stage.args.as_slice() {
            [m, pytest, rest @ ..] if m == "-m" && pytest == "pytest" => rest,
            _ => return None,
        },
        _ => return None,
    };
    args_known(args).then(|| Box::new(Pytest) as _)
}

/// `python`, `python3`, `python3.12`.
fn is_python(program: &str) -> bool {
    program
        .strip_prefix("python")
        .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Refused: what runs no tests (`--collect-only`, `--fixtures`, `--help`), what waits for a
/// human (`--pdb`, `--trace`), `-qq` (no closing line) and the terminal reporter turned off.
fn args_known(args: &[String]) -> bool {
    let mut verbosity = 0i32;
    let mut previous = "";
    for arg in args {
        let arg = arg.as_str();
        if arg == "--" {
            break;
        }
        let refused = matches!(
            arg,
            "--co"
                | "--collect-only"
                | "--collectonly"
                | "-h"
                | "--help"
                | "--version"
                | "-V"
                | "--fixtures"
                | "--funcargs"
                | "--fixtures-per-test"
                | "--markers"
                | "--setup-plan"
                | "--setup-only"
                | "--pdb"
                | "--trace"
                | "-p=no:terminal"
        ) || (previous == "-p" && arg == "no:terminal");
        if refused {
            return false;
        }
        if arg == "--quiet" {
            verbosity -= 1;
        } else if arg == "--verbose" {
            verbosity += 1;
        } else if let Some(short) = arg.strip_prefix('-').filter(|s| !s.starts_with('-')) {
            // Only runs of flags count: `-qq`, `-vv`, not `-k` or `-p` with their value.
            if short
                .chars()
                .all(|c| c == 'q' || c == 'v' || c == 'x' || c == 's' || c == 'l')
            {
                verbosity += short.matches('v').count() as i32;
                verbosity -= short.matches('q').count() as i32;
            }
        }
        previous = arg;
    }
    verbosity > -2
}

struct Pytest;

impl Parser for Pytest {
    fn type_name(&self) -> &'static str {
        "TestReport"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        Ok(Typed::new(report(out, filtered)?))
    }
}

fn report(out: &Output<'_>, filtered: bool) -> Result<TestReport, String> {
    let mut reading = Reading::of(out.stdout);
    let Some(summary) = reading.summary.take() else {
        return no_summary(out, filtered);
    };
    let mut build_errors: Vec<Diagnostic> = reading
        .collection
        .iter()
        .map(|(module, block)| collection_error(module, block))
        .collect();
    let collection_errors = reading.collection_errors();
    let failures = reading.failures();
    let abnormal = matches!(out.exit_code, Some(2..=4));
    let outcome = if reading.interrupted || collection_errors > 0 || abnormal {
        Outcome::Error
    } else if summary.failed + summary.errors > 0 {
        Outcome::Failed
    } else {
        Outcome::Passed
    };
    if outcome == Outcome::Error && build_errors.is_empty() {
        build_errors = stderr_errors(out.stderr);
    }
    Ok(TestReport {
        tool: "pytest".into(),
        outcome,
        passed: summary.passed,
        failed: summary.failed + summary.errors.saturating_sub(collection_errors),
        skipped: summary.skipped,
        duration_seconds: Some(summary.seconds),
        failures,
        build_errors,
    })
}

/// No closing line: pytest stopped before it (a usage error, a broken `conftest.py`: exit
/// code 4), or this is not pytest's output.
fn no_summary(out: &Output<'_>, filtered: bool) -> Result<TestReport, String> {
    if filtered {
        return Err(
            "pytest's closing line (`N passed in Xs`) is not in the filtered output".into(),
        );
    }
    let errors = stderr_errors(out.stderr);
    if !matches!(out.exit_code, Some(2..=4)) || errors.is_empty() {
        return Err("no pytest closing line (`N passed in Xs`) in the output".into());
    }
    Ok(TestReport {
        tool: "pytest".into(),
        outcome: Outcome::Error,
        passed: 0,
        failed: 0,
        skipped: 0,
        duration_seconds: None,
        failures: Vec::new(),
        build_errors: errors,
    })
}

/// A module that could not be imported: its last `E ` line (the exception), where it is.
fn collection_error(module: &str, block: &Block) -> Diagnostic {
    let message = block
        .raised
        .last()
        .map_or("could not be collected", |l| l.trim());
    let line = block
        .raised_at
        .filter(|(path, _)| path.ends_with(module))
        .or(block.location.filter(|(path, _)| path.ends_with(module)))
        .map(|(_, line)| line);
    Diagnostic {
        severity: Severity::Error,
        message: message.to_owned(),
        code: None,
        file: Some(module.to_owned()),
        line,
        column: None,
        notes: Vec::new(),
    }
}

/// What pytest says on stderr when it stops before running anything: `ERROR: …` lines, a
/// usage error, or a `conftest.py` that raised (its last `E ` line).
fn stderr_errors(stderr: &str) -> Vec<Diagnostic> {
    let mut messages: Vec<&str> = Vec::new();
    let mut last_raised = None;
    for line in stderr.lines() {
        if let Some(message) = line
            .strip_prefix("ERROR: ")
            .filter(|m| !m.starts_with("usage:"))
        {
            messages.push(message);
        } else if let Some((_, message)) = line.split_once(": error: ") {
            messages.push(message);
        } else if let Some(raised) = line.strip_prefix("E ") {
            last_raised = Some(raised.trim());
        }
    }
    let first = stderr.lines().map(str::trim).find(|l| !l.is_empty());
    if let Some(raised) = last_raised {
        messages.extend(first.filter(|f| f.contains("conftest")));
        messages.push(raised);
    }
    messages
        .into_iter()
        .map(|message| Diagnostic {
            severity: Severity::Error,
            message: message.to_owned(),
            code: None,
            file: None,
            line: None,
            column: None,
            notes: Vec::new(),
        })
        .collect()
}

#[cfg(test)]
#[path = "pytest_tests.rs"]
mod tests;
