//! `cargo test` (libtest's human output) and `cargo nextest run`, read into a `TestReport`.
//!
//! libtest prints one block per test binary on stdout (`running N tests`, one line per test,
//! the captured output of each failure, `test result: …`), so the counts are the sum of every
//! `test result:` line: unit tests, integration tests and doc-tests alike. The names of the
//! failures come from three places because each mode keeps only some of them (`test x ...
//! FAILED`, `-q`'s `x --- FAILED`, the `failures:` list), and their messages from the
//! `---- x stdout ----` blocks, or, with `--nocapture`, from the `thread 'x' panicked at` lines
//! on stderr. A filter after `cargo test` may drop one binary's `test result:` line, and a sum
//! with a missing term is a guess, so filtered output is refused.
//!
//! nextest prints to stderr: one status line per test (`PASS [ 0.004s] (1/5) bin a::b`), the
//! output of each failure under it, and one `Summary` line that holds every count, so a filter
//! that keeps the `Summary` line is harmless. A test retried after a failure ends with its last
//! status line, so a failure is a test whose last status was a failing one.
//!
//! When nothing ran because the build failed, the outcome is `error` and the compiler's messages
//! are read by the diagnostics parser.

use std::collections::{HashMap, HashSet};

use super::{Failure, Outcome, TestReport};
use crate::diagnostics::{Diagnostic, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

/// At most this many lines of a failure's message are kept.
const MESSAGE_LINES: usize = 10;

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    match stage.program.as_str() {
        "cargo" => {
            let (sub, rest) = skip_cargo_options(&stage.args)?.split_first()?;
            match sub.as_str() {
                "test" | "t" => libtest_args_known(rest).then(|| Box::new(Libtest) as _),
                "nextest" => nextest_run(rest),
                _ => None,
            }
        }
        "cargo-nextest" => {
            let (sub, rest) = stage.args.split_first()?;
            (sub == "nextest").then(|| nextest_run(rest)).flatten()
        }
        _ => None,
    }
}

/// The arguments after cargo's own options (`+nightly`, `--offline`, `-C dir`), which change
/// nothing in the output.
fn skip_cargo_options(args: &[String]) -> Option<&[String]> {
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        let arg = first.as_str();
        if arg.starts_with('+')
            || matches!(
                arg,
                "--offline"
                    | "--locked"
                    | "--frozen"
                    | "-q"
                    | "--quiet"
                    | "-v"
                    | "-vv"
                    | "--verbose"
            )
            || arg.starts_with("--color=")
            || arg.starts_with("--config=")
        {
            rest = tail;
        } else if matches!(arg, "--color" | "--config" | "-C" | "-Z") {
            rest = tail.get(1..)?;
        } else if arg.starts_with('-') {
            return None;
        } else {
            return Some(rest);
        }
    }
    None
}

/// `cargo test` arguments whose output is libtest's human format. Refused: what prints no
/// results (`--no-run`, `--list`, `--help`), machine formats (`--message-format`, `--format
/// json`, `-Z`), benchmarks (`--bench` after `--`) and `--logfile`.
fn libtest_args_known(args: &[String]) -> bool {
    let (cargo, harness) = match args.iter().position(|a| a == "--") {
        Some(split) => (
            args.get(..split).unwrap_or(&[]),
            args.get(split + 1..).unwrap_or(&[]),
        ),
        None => (args, &[][..]),
    };
    let cargo_ok = !cargo.iter().any(|a| {
        matches!(
            a.as_str(),
            "--no-run" | "-h" | "--help" | "--unit-graph" | "--build-plan"
        ) || a.starts_with("--message-format")
    });
    let mut previous = "";
    let harness_ok = harness.iter().all(|a| {
        let arg = a.as_str();
        let machine_format = (previous == "--format" && arg != "pretty" && arg != "terse")
            || (arg.starts_with("--format=")
                && arg != "--format=pretty"
                && arg != "--format=terse");
        previous = arg;
        !machine_format
            && !matches!(arg, "--list" | "--bench" | "-h" | "--help")
            && !arg.starts_with("--logfile")
            && !arg.starts_with("-Z")
    });
    cargo_ok && harness_ok
}

/// `nextest run` with its human output; `--message-format` (libtest-json) and stress runs
/// (counted in iterations, not tests) are refused.
fn nextest_run(args: &[String]) -> Option<Box<dyn Parser>> {
    let (sub, rest) = args.split_first()?;
    let known = sub == "run"
        && !rest.iter().any(|a| {
            matches!(a.as_str(), "-h" | "--help" | "--no-run")
                || a.starts_with("--message-format")
                || a.starts_with("--stress-")
        });
    known.then(|| Box::new(Nextest) as _)
}

struct Libtest;

impl Parser for Libtest {
    fn type_name(&self) -> &'static str {
        "TestReport"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        if filtered {
            return Err(
                "a filter after `cargo test` may have dropped a test binary's \
                        `test result:` line; run it without the filter"
                    .into(),
            );
        }
        Ok(Typed::new(libtest_report(out)?))
    }
}

/// What one `test result:` line or the whole run counts.
#[derive(Default)]
struct Counts {
    passed: u64,
    failed: u64,
    skipped: u64,
    seconds: f64,
}

/// The failures in the order they were named, each once, with the message found for it.
#[derive(Default)]
struct Failures {
    /// What the runner puts before each line of a test's output (nextest: four spaces).
    indent: &'static str,
    order: Vec<String>,
    seen: HashSet<String>,
    messages: HashMap<String, Message>,
}

impl Failures {
    fn name(&mut self, name: &str) {
        if !name.is_empty() && self.seen.insert(name.to_owned()) {
            self.order.push(name.to_owned());
        }
    }

    /// Keeps the first message found for `name`; a later, empty one is no better.
    fn message(&mut self, name: &str, lines: &[&str]) {
        if !self.messages.contains_key(name)
            && let Some(message) = failure_message(lines, self.indent)
        {
            self.messages.insert(name.to_owned(), message);
        }
    }

    fn into_records(mut self, failing: impl Fn(&str) -> bool) -> Vec<Failure> {
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

fn libtest_report(out: &Output<'_>) -> Result<TestReport, String> {
    let mut total = Counts::default();
    let (mut running, mut results) = (0usize, 0usize);
    let mut failures = Failures::default();
    // The test whose captured output (or streamed panic) is being read, and its lines so far.
    let mut block: Option<(String, Vec<&str>)> = None;
    let mut in_names = false;
    for line in out.stdout.lines().chain(out.stderr.lines()) {
        if let Some((name, lines)) = block.as_mut() {
            let streamed = lines.first().is_some_and(|l| l.starts_with("thread '"));
            if !ends_block(line, streamed) {
                lines.push(line);
                continue;
            }
            failures.message(name, lines);
            block = None;
        }
        if let Some(name) = line.strip_prefix("---- ").and_then(|l| {
            l.strip_suffix(" stdout ----")
                .or_else(|| l.strip_suffix(" stderr ----"))
        }) {
            block = Some((name.to_owned(), Vec::new()));
        } else if let Some(name) = panicking_thread(line) {
            block = Some((name.to_owned(), vec![line]));
        } else if line == "failures:" {
            in_names = true;
        } else if let Some(name) = line.strip_prefix("    ").filter(|_| in_names) {
            failures.name(name.trim());
        } else if let Some(rest) = line.strip_prefix("test result: ") {
            let counts = result_counts(rest)
                .ok_or_else(|| format!("`{line}` is not libtest's result line"))?;
            total.passed += counts.passed;
            total.failed += counts.failed;
            total.skipped += counts.skipped;
            total.seconds += counts.seconds;
            results += 1;
            in_names = false;
        } else if (line.starts_with("running ") && line.ends_with(" tests"))
            || line == "running 1 test"
        {
            running += 1;
            in_names = false;
        } else if let Some(name) = line.strip_suffix(" --- FAILED") {
            failures.name(name);
        } else if let Some((name, status)) = line
            .strip_prefix("test ")
            .and_then(|l| l.rsplit_once(" ... "))
        {
            if status.starts_with("FAILED") {
                failures.name(name);
            }
        } else if line.is_empty() {
            in_names = false;
        }
    }
    if let Some((name, lines)) = block {
        failures.message(&name, &lines);
    }
    if running == 0 && results == 0 {
        return build_failure("cargo", out);
    }
    let outcome = if running > results {
        // A test binary started and never printed its result: it crashed or was killed.
        Outcome::Error
    } else if total.failed > 0 {
        Outcome::Failed
    } else if out.exit_code.is_some_and(|code| code != 0) {
        Outcome::Error
    } else {
        Outcome::Passed
    };
    Ok(TestReport {
        tool: "cargo".into(),
        outcome,
        passed: total.passed,
        failed: total.failed,
        skipped: total.skipped,
        duration_seconds: (results > 0).then_some(total.seconds),
        failures: failures.into_records(|_| true),
        build_errors: Vec::new(),
    })
}

/// Whether `line` ends a failure's captured output: the next block or section, or, for a panic
/// streamed to stderr (`--nocapture`), the note after it or a blank line.
fn ends_block(line: &str, streamed: bool) -> bool {
    let next_section = (line.starts_with("---- ") && line.ends_with(" ----"))
        || line == "failures:"
        || line == "successes:"
        || line.starts_with("test result: ");
    next_section
        || (streamed
            && (line.is_empty()
                || line.starts_with("note: ")
                || line.starts_with("stack backtrace:")
                || line.starts_with("error: ")
                || panicking_thread(line).is_some()))
}

/// `thread 'a::b' (1234) panicked at src/lib.rs:10:5:` (recent Rust prints the thread id;
/// older, none): the thread's name, which libtest sets to the test's.
fn panicking_thread(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("thread '")?;
    let (name, after) = rest.split_once('\'')?;
    after.contains(" panicked at ").then_some(name)
}

/// `ok. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s`.
fn result_counts(text: &str) -> Option<Counts> {
    let (_status, counts) = text.split_once(". ")?;
    let mut out = Counts::default();
    for part in counts.split("; ") {
        if let Some(seconds) = part
            .strip_prefix("finished in ")
            .and_then(|s| s.strip_suffix('s'))
        {
            out.seconds = seconds.parse().ok().filter(|s: &f64| s.is_finite())?;
            continue;
        }
        let (number, what) = part.split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match what {
            "passed" => out.passed = number,
            "failed" => out.failed = number,
            "ignored" => out.skipped = number,
            "measured" | "filtered out" => {}
            _ => return None,
        }
    }
    Some(out)
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
fn build_failure(tool: &str, out: &Output<'_>) -> Result<TestReport, String> {
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

struct Nextest;

impl Parser for Nextest {
    fn type_name(&self) -> &'static str {
        "TestReport"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        Ok(Typed::new(nextest_report(out, filtered)?))
    }
}

fn nextest_report(out: &Output<'_>, filtered: bool) -> Result<TestReport, String> {
    let mut summary: Option<Counts> = None;
    let mut failures = Failures {
        indent: "    ",
        ..Failures::default()
    };
    let mut last_failed: HashMap<String, bool> = HashMap::new();
    let mut block: Option<(String, Vec<&str>)> = None;
    // nextest writes to stderr; with `2>&1` it is all on stdout.
    for line in out.stderr.lines().chain(out.stdout.lines()) {
        let status = status_line(line);
        let trimmed = line.trim_start();
        let ends = status.is_some()
            || trimmed.starts_with("────")
            || trimmed.starts_with("Summary [")
            || trimmed.starts_with("Cancelling ")
            || line.starts_with("error: ")
            || line.starts_with("warning: ");
        if let Some((name, lines)) = block.as_mut() {
            if !ends {
                lines.push(line);
                continue;
            }
            failures.message(name, lines);
            block = None;
        }
        if let Some((failed, name)) = status {
            last_failed.insert(name.to_owned(), failed);
            if failed {
                failures.name(name);
                block = Some((name.to_owned(), Vec::new()));
            }
        } else if let Some(rest) = trimmed.strip_prefix("Summary [") {
            summary = Some(
                summary_counts(rest)
                    .ok_or_else(|| format!("`{trimmed}` is not nextest's summary line"))?,
            );
        }
    }
    if let Some((name, lines)) = block {
        failures.message(&name, &lines);
    }
    let Some(total) = summary else {
        if filtered {
            return Err("nextest's `Summary` line is not in the filtered output".into());
        }
        return build_failure("nextest", out);
    };
    let outcome = if total.failed > 0 {
        Outcome::Failed
    } else if out.exit_code.is_some_and(|code| code != 0) {
        Outcome::Error
    } else {
        Outcome::Passed
    };
    Ok(TestReport {
        tool: "nextest".into(),
        outcome,
        passed: total.passed,
        failed: total.failed,
        skipped: total.skipped,
        duration_seconds: Some(total.seconds),
        failures: failures.into_records(|name| last_failed.get(name).copied().unwrap_or(true)),
        build_errors: Vec::new(),
    })
}

/// A test's status line, `FAIL [   0.006s] (3/5) demo tests::fails`: whether the status is a
/// failing one, and the test's name (binary id and test). Progress-only statuses (`START`,
/// `SLOW [>60s]`, `TERMINATING`, setup scripts) are `None`.
fn status_line(line: &str) -> Option<(bool, &str)> {
    let (status, rest) = line.split_once(" [")?;
    let status = status.trim_start();
    let (duration, rest) = rest.split_once("] ")?;
    let is_status = !status.is_empty()
        && status
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || " +-/".contains(c));
    if !is_status || duration.starts_with('>') || !duration.trim().ends_with('s') {
        return None;
    }
    let name = match rest.strip_prefix('(') {
        Some(counter) => counter.split_once(") ")?.1,
        None => rest,
    }
    .trim();
    // `TRY 2 FAIL`: the status of that attempt.
    let word = status
        .strip_prefix("TRY ")
        .map_or(status, |s| s.split_once(' ').map_or(s, |(_, w)| w));
    let passed = [
        "PASS",
        "LEAK",
        "SLOW",
        "FLAKY",
        "TIMEOUT-PASS",
        "SLOW + LEAK",
        "SLOW+TMPASS",
    ];
    let failed = !passed
        .iter()
        .any(|p| word == *p || word.starts_with("FLAKY "));
    let progress = matches!(word, "START" | "SETUP" | "TRMNTG" | "TERMINATING" | "SKIP");
    (!progress && name.contains(' ')).then_some((failed, name))
}

/// `[   0.028s] 5 tests run: 3 passed, 2 failed, 2 skipped` (after `Summary [`), also with
/// `4/5 tests run`, `(1 slow, 1 flaky)`, `1 exec failed`, `1 timed out`.
fn summary_counts(text: &str) -> Option<Counts> {
    let (seconds, rest) = text.split_once("s] ")?;
    let seconds: f64 = seconds
        .trim()
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite())?;
    let (_run, counts) = rest.split_once(" run: ")?;
    let counts = counts.split(';').next().unwrap_or(counts);
    let mut out = Counts {
        seconds,
        ..Counts::default()
    };
    let mut depth = 0usize;
    let mut plain = String::with_capacity(counts.len());
    for c in counts.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    for part in plain.split(',') {
        let (number, what) = part.trim().split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match what.trim() {
            "passed" => out.passed += number,
            "failed" | "exec failed" | "timed out" => out.failed += number,
            "skipped" => out.skipped += number,
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "cargo_tests.rs"]
mod tests;
