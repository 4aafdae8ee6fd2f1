//! `pytest` (also `py.test`, `python -m pytest`) in its default terminal format, `-q` and `-v`.
//!
//! The counts come from pytest's one closing line (`=== 3 failed, 5 passed, 1 skipped in
//! 0.12s ===`, without the `=` under `-q`), the last line that reads as one, so a filter that
//! keeps it (`| tail`) loses nothing but failure details. The failures are named by the `short
//! test summary info` lines (`FAILED test_x.py::test_y - AssertionError: …`), which carry the
//! node id the model can rerun; without them (`-rN`) by `-v`'s result lines, else by the
//! `___ test_y ___` headers. Each failure's message and location come from its block in the
//! `FAILURES`/`ERRORS` sections: the `E ` lines, and the last `file:line:` line (the frame that
//! raised). A block is matched to its node id by the name pytest derives from it
//! (`TestGroup.test_param[2]` for `test_x.py::TestGroup::test_param[2]`), in order.
//!
//! Counting: xfailed tests are skipped ones and xpassed ones passed, as neither failed; an
//! error in a fixture (`ERROR at setup of …`) is a failure of that test. A module that could not
//! be collected is not a test: it is a build error, and the outcome is `error`.

use std::collections::{HashMap, VecDeque};

use super::{Failure, Outcome, TestReport};
use crate::diagnostics::{Diagnostic, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

/// At most this many lines of a failure's message are kept.
const MESSAGE_LINES: usize = 10;

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

/// The counts of pytest's closing line.
#[derive(Default)]
struct Summary {
    passed: u64,
    failed: u64,
    skipped: u64,
    errors: u64,
    seconds: f64,
}

/// One `___ name ___` block of the `FAILURES` or `ERRORS` section.
#[derive(Default)]
struct Block<'a> {
    /// `E ` lines, as printed.
    raised: Vec<&'a str>,
    /// The last `file:line:` line.
    location: Option<(&'a str, u64)>,
    /// `File "path", line N` inside the `E ` lines (a syntax error's).
    raised_at: Option<(&'a str, u64)>,
    /// Past the traceback: `--- Captured stdout call ---` and the test's own output follow.
    captured: bool,
}

/// A failure named by the short summary or `-v`: node id, whether it errored, its one-line
/// message.
struct Named<'a> {
    id: &'a str,
    error: bool,
    message: Option<&'a str>,
}

fn report(out: &Output<'_>, filtered: bool) -> Result<TestReport, String> {
    let mut summary = None;
    let mut section = "";
    let mut interrupted = false;
    let mut summary_names: Vec<Named> = Vec::new();
    let mut verbose_names: Vec<Named> = Vec::new();
    // Blocks by (is an error, name), in order; and the order of all headers.
    let mut blocks: HashMap<(bool, String), VecDeque<Block>> = HashMap::new();
    let mut headers: Vec<(bool, &str)> = Vec::new();
    let mut collection: Vec<(&str, Block)> = Vec::new();
    let mut current: Option<(bool, &str, Block)> = None;
    for line in out.stdout.lines() {
        let title = section_title(line);
        let header = block_header(line);
        if (title.is_some() || header.is_some())
            && let Some((error, name, block)) = current.take()
        {
            match name.strip_prefix("ERROR collecting ") {
                Some(module) => collection.push((module, block)),
                None => blocks
                    .entry((error, name.to_owned()))
                    .or_default()
                    .push_back(block),
            }
        }
        if let Some(counts) = closing_line(line) {
            summary = Some(counts);
        }
        if let Some(title) = title {
            section = title;
            if title.starts_with("Interrupted: ") {
                interrupted = true;
            }
            continue;
        }
        if line.starts_with('!') && line.contains("Interrupted: ") {
            interrupted = true;
        }
        if let Some(name) = header.filter(|_| section == "FAILURES" || section == "ERRORS") {
            let error = section == "ERRORS";
            let name = name
                .strip_prefix("ERROR at setup of ")
                .or_else(|| name.strip_prefix("ERROR at teardown of "))
                .unwrap_or(name);
            if !name.starts_with("ERROR collecting ") {
                headers.push((error, name));
            }
            current = Some((error, name, Block::default()));
        } else if let Some((_, _, block)) = current.as_mut() {
            read_block_line(block, line);
        } else if let Some(named) = summary_entry(line)
            // Out of its section (a filter dropped the title) only a node id is trusted.
            .filter(|n| section == "short test summary info" || n.id.contains("::"))
        {
            summary_names.push(named);
        } else if let Some(named) = verbose_result(line) {
            verbose_names.push(named);
        }
    }
    if let Some((error, name, block)) = current.take() {
        match name.strip_prefix("ERROR collecting ") {
            Some(module) => collection.push((module, block)),
            None => blocks
                .entry((error, name.to_owned()))
                .or_default()
                .push_back(block),
        }
    }
    let Some(summary) = summary else {
        return no_summary(out, filtered);
    };
    let mut build_errors: Vec<Diagnostic> = collection
        .iter()
        .map(|(module, block)| collection_error(module, block))
        .collect();
    // Collection errors are the ones without a test in their node id.
    let collection_errors = summary_names
        .iter()
        .filter(|n| n.error && !n.id.contains("::"))
        .count();
    let collection_errors = (collection_errors.max(collection.len())) as u64;
    summary_names.retain(|n| n.id.contains("::"));
    let named = if summary_names.is_empty() {
        verbose_names
    } else {
        summary_names
    };
    let mut failures: Vec<Failure> = Vec::new();
    if named.is_empty() {
        for (error, name) in headers {
            let block = blocks
                .get_mut(&(error, name.to_owned()))
                .and_then(VecDeque::pop_front);
            failures.push(failure(name, block.as_ref(), None));
        }
    } else {
        for entry in &named {
            let key = block_name(entry.id);
            let block = blocks
                .get_mut(&(entry.error, key))
                .and_then(VecDeque::pop_front);
            failures.push(failure(entry.id, block.as_ref(), entry.message));
        }
    }
    let abnormal = matches!(out.exit_code, Some(2..=4));
    let outcome = if interrupted || collection_errors > 0 || abnormal {
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

/// `=== FAILURES ===`, `=== short test summary info ===`, `!!! Interrupted: … !!!`: the title.
fn section_title(line: &str) -> Option<&str> {
    let fence = line.chars().next().filter(|c| *c == '=' || *c == '!')?;
    let title = line.trim_matches(fence);
    let inner = title.strip_prefix(' ')?.strip_suffix(' ')?;
    (line.ends_with(fence) && !inner.is_empty()).then_some(inner)
}

/// `____ TestGroup.test_param[2] ____`: the name.
fn block_header(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("___")?.trim_start_matches('_');
    let inner = inner.strip_suffix("___")?.trim_end_matches('_');
    let name = inner.strip_prefix(' ')?.strip_suffix(' ')?;
    (!name.is_empty()).then_some(name)
}

fn read_block_line<'a>(block: &mut Block<'a>, line: &'a str) {
    if block.captured || (line.starts_with("---") && line.contains(" Captured ")) {
        block.captured = true;
    } else if let Some(raised) = line
        .strip_prefix('E')
        .filter(|r| r.is_empty() || r.starts_with(' '))
    {
        block.raised.push(raised);
        if let Some(at) = raised.trim_start().strip_prefix("File \"")
            && let Some((path, rest)) = at.split_once("\", line ")
        {
            let number = rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap_or("");
            if let Ok(number) = number.parse() {
                block.raised_at = Some((path, number));
            }
        }
    } else if let Some(location) = location(line) {
        block.location = Some(location);
    }
}

/// `test_x.py:10: AssertionError` or `test_x.py:10: in test_y`: file and line.
fn location(line: &str) -> Option<(&str, u64)> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (file_line, _) = line
        .split_once(": ")
        .or_else(|| line.strip_suffix(':').map(|l| (l, "")))?;
    let (file, number) = file_line.rsplit_once(':')?;
    let number = number.parse().ok()?;
    (!file.is_empty() && !file.contains(' ')).then_some((file, number))
}

/// `FAILED test_x.py::test_y - AssertionError: boom`, `ERROR test_x.py`.
fn summary_entry(line: &str) -> Option<Named<'_>> {
    let (error, rest) = match line.strip_prefix("FAILED ") {
        Some(rest) => (false, rest),
        None => (true, line.strip_prefix("ERROR ")?),
    };
    let (id, message) = split_message(rest);
    Some(Named { id, error, message })
}

/// Splits `id - message` at the first ` - ` outside the brackets of a parametrized id.
fn split_message(text: &str) -> (&str, Option<&str>) {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 => {
                if let Some(message) = text.get(i..).and_then(|t| t.strip_prefix(" - ")) {
                    return (text.get(..i).unwrap_or(text), Some(message));
                }
            }
            _ => {}
        }
    }
    (text, None)
}

/// `-v`'s `test_x.py::test_y FAILED   [ 20%]`.
fn verbose_result(line: &str) -> Option<Named<'_>> {
    let (id, error) = match line.split_once(" FAILED") {
        Some((id, _)) => (id, false),
        None => (line.split_once(" ERROR")?.0, true),
    };
    (id.contains("::") && !id.starts_with(char::is_whitespace)).then_some(Named {
        id,
        error,
        message: None,
    })
}

/// The header pytest prints for a node id: the part after the module, `::` as `.`.
fn block_name(id: &str) -> String {
    id.split_once("::")
        .map_or(id, |(_, name)| name)
        .replace("::", ".")
}

fn failure(name: &str, block: Option<&Block>, summary_message: Option<&str>) -> Failure {
    let raised = block.map(|b| raised_text(&b.raised)).unwrap_or_default();
    let message = if raised.is_empty() {
        summary_message.unwrap_or_default().to_owned()
    } else {
        raised
    };
    let location = block.and_then(|b| b.location);
    Failure {
        name: name.to_owned(),
        file: location.map(|(file, _)| file.to_owned()),
        line: location.map(|(_, line)| line),
        message,
    }
}

/// The `E ` lines without the `E` and the indent of the first one.
fn raised_text(raised: &[&str]) -> String {
    let indent = raised.first().map_or(0, |l| l.len() - l.trim_start().len());
    let lines: Vec<&str> = raised
        .iter()
        .take(MESSAGE_LINES)
        .map(|l| {
            let spaces = l.len() - l.trim_start().len();
            l.get(spaces.min(indent)..).unwrap_or(l).trim_end()
        })
        .collect();
    lines.join("\n")
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

/// The closing line, with or without its `=` fence: `3 failed, 5 passed, 1 skipped, 1 xfailed,
/// 2 warnings in 0.12s`, `no tests ran in 0.01s`, `2 errors in 1.20s (0:00:01)`.
fn closing_line(line: &str) -> Option<Summary> {
    let text = line.trim_matches('=').trim();
    let (counts, time) = text.rsplit_once(" in ")?;
    let seconds = time.split(' ').next()?.strip_suffix('s')?;
    let mut summary = Summary {
        seconds: seconds
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)?,
        ..Summary::default()
    };
    if counts == "no tests ran" {
        return Some(summary);
    }
    for part in counts.split(", ") {
        let (number, word) = part.split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match word {
            "passed" | "xpassed" => summary.passed += number,
            "failed" => summary.failed += number,
            "skipped" | "xfailed" => summary.skipped += number,
            "error" | "errors" => summary.errors += number,
            "deselected" | "warning" | "warnings" | "rerun" | "reruns" | "subtests passed" => {}
            _ => return None,
        }
    }
    Some(summary)
}

#[cfg(test)]
#[path = "pytest_tests.rs"]
mod tests;
