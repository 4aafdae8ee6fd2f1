//! `jest` and `vitest run` (also through `npx`, `pnpm`, `yarn`, `bunx`): the summary and the
//! failures, into a `TestReport`.
//!
//! Both runners close with a summary that holds every count (`Tests:       1 failed, 2
//! passed, 3 total`; vitest's `      Tests  1 failed | 2 passed (3)`), so the counts are read
//! there and a filter that keeps it loses only failure details. Each failure has a header:
//! jest's `  ● Suite › test` under the ` FAIL  file` line of its file, vitest's ` FAIL  file >
//! suite > test` in its failed-tests section; the lines under it, up to the code frame or the
//! stack, are its message, and the first stack frame outside `node_modules` is where it failed.
//! jest writes everything to stderr; vitest its summary to stdout and its failures to stderr:
//! both streams are read, stderr first.
//!
//! A test file that could not even load (jest's `● Test suite failed to run`, vitest's failed
//! suites) holds no tests: it is a build error and the outcome is `error`. Bare `vitest` is
//! watch mode unless CI is set, which a parser cannot see, so only `vitest run` (or `--run`)
//! is recognised; machine reporters (`--json`, `--reporter=json`) and watch modes are refused.

use super::{Failure, Outcome, TestReport};
use crate::diagnostics::{Diagnostic, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

/// At most this many lines of a failure's message are kept.
const MESSAGE_LINES: usize = 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Runner {
    Jest,
    Vitest,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let mut args = stage.args.as_slice();
    let mut program = stage.program.as_str();
    // `npx jest`, `pnpm exec vitest run`, `yarn jest`, `bunx vitest run`.
    if matches!(program, "npx" | "pnpx" | "bunx" | "pnpm" | "yarn") {
        let rest = match args.split_first() {
            Some((exec, rest)) if exec == "exec" && program != "npx" => rest,
            _ => args,
        };
        let (runner, rest) = rest.split_first()?;
        program = runner.as_str();
        args = rest;
    }
    let runner = match program {
        "jest" => Runner::Jest,
        "vitest" => {
            let (mode, rest) = args.split_first()?;
            match mode.as_str() {
                "run" => args = rest,
                _ if args.iter().any(|a| a == "--run") => {}
                _ => return None,
            }
            Runner::Vitest
        }
        _ => return None,
    };
    let mut previous = "";
    let refused = args.iter().any(|a| {
        let a = a.as_str();
        let reporter = a
            .strip_prefix("--reporter=")
            .or((previous == "--reporter").then_some(a));
        previous = a;
        let machine =
            reporter.is_some_and(|r| !matches!(r, "default" | "verbose" | "basic" | "dot"));
        machine
            || matches!(
                a,
                "--json"
                    | "--watch"
                    | "--watchAll"
                    | "--listTests"
                    | "--showConfig"
                    | "--help"
                    | "-h"
                    | "--version"
                    | "-v"
                    | "--init"
                    | "--clearCache"
                    | "--reporters"
                    | "-w"
            )
            || a.starts_with("--outputFile")
            || a.starts_with("--reporters=")
    });
    (!refused).then(|| Box::new(JsRunner(runner)) as _)
}

struct JsRunner(Runner);

impl Parser for JsRunner {
    fn type_name(&self) -> &'static str {
        "TestReport"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, _filtered: bool) -> Result<Typed, String> {
        Ok(Typed::new(report(self.0, out)?))
    }
}

#[derive(Default)]
struct Counts {
    passed: u64,
    failed: u64,
    skipped: u64,
}

/// A failure or a suite that did not load, as its lines are read.
struct Open<'a> {
    name: &'a str,
    /// The test file it is in, when the runner said (jest's ` FAIL  file`).
    suite: &'a str,
    lines: Vec<&'a str>,
}

fn report(runner: Runner, out: &Output<'_>) -> Result<TestReport, String> {
    let mut reading = Reading {
        runner,
        tests: None,
        seconds: None,
        failures: Vec::new(),
        build_errors: Vec::new(),
        suite: "",
        open: None,
    };
    for line in out.stderr.lines().chain(out.stdout.lines()) {
        reading.line(line)?;
    }
    reading.close();
    let Reading {
        tests,
        seconds,
        mut failures,
        build_errors,
        ..
    } = reading;
    dedup(&mut failures);
    let tool = match runner {
        Runner::Jest => "jest",
        Runner::Vitest => "vitest",
    };
    let Some(tests) = tests else {
        return Err(format!("no {tool} summary (`Tests:`) in the output"));
    };
    let outcome = if !build_errors.is_empty() {
        Outcome::Error
    } else if tests.failed > 0 {
        Outcome::Failed
    } else if out.exit_code.is_some_and(|c| c != 0) {
        Outcome::Error
    } else {
        Outcome::Passed
    };
    Ok(TestReport {
        tool: tool.into(),
        outcome,
        passed: tests.passed,
        failed: tests.failed,
        skipped: tests.skipped,
        duration_seconds: seconds,
        failures,
        build_errors,
    })
}

/// What the lines read so far say.
struct Reading<'a> {
    runner: Runner,
    /// The summary's counts.
    tests: Option<Counts>,
    seconds: Option<f64>,
    failures: Vec<Failure>,
    build_errors: Vec<Diagnostic>,
    /// jest: the test file of the failures that follow (` FAIL  file`).
    suite: &'a str,
    /// The failure (or suite that did not load) whose lines are being read.
    open: Option<Open<'a>>,
}

impl<'a> Reading<'a> {
    fn line(&mut self, line: &'a str) -> Result<(), String> {
        let runner = self.runner;
        let trimmed = line.trim();
        let jest_file = trimmed
            .strip_prefix("FAIL  ")
            .or_else(|| trimmed.strip_prefix("PASS  "));
        let ends = jest_file.is_some()
            || trimmed.starts_with('⎯')
            || trimmed.starts_with("Test Suites:")
            || trimmed.starts_with("Test Files ")
            || trimmed.starts_with("Summary of all failing tests")
            || (runner == Runner::Jest && line.starts_with("  ● "));
        if ends {
            self.close();
        }
        if let Some(rest) = trimmed.strip_prefix("Tests:") {
            self.tests = Some(
                jest_counts(rest).ok_or_else(|| format!("`{trimmed}` is not jest's summary"))?,
            );
        } else if let Some(rest) = trimmed
            .strip_prefix("Tests ")
            .filter(|_| runner == Runner::Vitest)
        {
            self.tests = Some(
                vitest_counts(rest)
                    .ok_or_else(|| format!("`{trimmed}` is not vitest's summary"))?,
            );
        } else if let Some(rest) = trimmed.strip_prefix("Time:") {
            self.seconds = duration(rest.split(',').next().unwrap_or(rest));
        } else if let Some(rest) = trimmed
            .strip_prefix("Duration ")
            .filter(|_| runner == Runner::Vitest)
        {
            self.seconds = duration(rest.split(" (").next().unwrap_or(rest));
        } else if let Some(name) = line.strip_prefix("  ● ").filter(|_| runner == Runner::Jest) {
            self.open = Some(Open {
                name: name.trim(),
                suite: self.suite,
                lines: Vec::new(),
            });
        } else if let Some(file) = jest_file {
            if runner == Runner::Jest {
                self.suite = file.split(" (").next().unwrap_or(file).trim();
            } else if let Some(name) = trimmed.strip_prefix("FAIL  ") {
                self.open = Some(Open {
                    name,
                    suite: "",
                    lines: Vec::new(),
                });
            }
        } else if let Some(open) = self.open.as_mut() {
            open.lines.push(line);
        }
        Ok(())
    }

    /// Records the open failure, if any.
    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            record(open, &mut self.failures, &mut self.build_errors);
        }
    }
}

/// A closed header: a failed test, or a test file that could not load.
fn record(open: Open<'_>, failures: &mut Vec<Failure>, errors: &mut Vec<Diagnostic>) {
    let (message, place) = message(&open.lines);
    // vitest: ` FAIL  src/x.test.ts [ src/x.test.ts ]` names a file, not a test.
    let suite_path = open
        .name
        .strip_suffix(" ]")
        .and_then(|n| n.rsplit_once(" [ "))
        .map(|(_, p)| p);
    if open.name == "Test suite failed to run" || suite_path.is_some() {
        errors.push(Diagnostic {
            severity: Severity::Error,
            message: message
                .lines()
                .next()
                .unwrap_or("the test file could not be loaded")
                .to_owned(),
            code: None,
            file: Some(suite_path.unwrap_or(open.suite).to_owned()).filter(|f| !f.is_empty()),
            line: None,
            column: None,
            notes: Vec::new(),
        });
        return;
    }
    let file = place
        .map(|(file, _)| file)
        .or(Some(open.suite).filter(|s| !s.is_empty()));
    failures.push(Failure {
        name: open.name.to_owned(),
        file: file.map(str::to_owned),
        line: place.map(|(_, line)| line),
        message,
    });
}

/// jest prints each failure again in its closing "Summary of all failing tests".
fn dedup(failures: &mut Vec<Failure>) {
    let mut seen = std::collections::HashSet::new();
    failures.retain(|f| seen.insert((f.name.clone(), f.file.clone(), f.line)));
}

/// The lines under a header up to the code frame or the stack, dedented, and the first stack
/// frame outside `node_modules` (jest's `at fn (file:line:col)`, vitest's ` ❯ file:line:col`).
fn message<'a>(lines: &[&'a str]) -> (String, Option<(&'a str, u64)>) {
    let mut text: Vec<&str> = Vec::new();
    let mut place = None;
    let mut in_text = true;
    for line in lines {
        let trimmed = line.trim();
        let frame = trimmed
            .strip_prefix("at ")
            .or_else(|| trimmed.strip_prefix("❯ "));
        if let Some(frame) = frame {
            in_text = false;
            if place.is_none() {
                place = frame_place(frame);
            }
            continue;
        }
        if is_code_frame(trimmed) {
            in_text = false;
        }
        if in_text && text.len() < MESSAGE_LINES {
            text.push(line);
        }
    }
    let start = text
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(text.len());
    let kept = text.get(start..).unwrap_or(&[]);
    let end = kept
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let kept = kept.get(..end).unwrap_or(&[]);
    let indent = kept.first().map_or(0, |l| l.len() - l.trim_start().len());
    let dedented: Vec<&str> = kept
        .iter()
        .map(|l| {
            l.get(indent.min(l.len() - l.trim_start().len())..)
                .unwrap_or(l)
                .trim_end()
        })
        .collect();
    (dedented.join("\n"), place)
}

/// `  9 |     expect(…)`, `> 9 | …`, `    |   ^` (jest) and `  9|  …` (vitest).
fn is_code_frame(trimmed: &str) -> bool {
    let rest = trimmed.strip_prefix('>').unwrap_or(trimmed).trim_start();
    let digits = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    digits.trim_start().starts_with('|') && (digits.len() < rest.len() || rest.starts_with('|'))
}

/// `Object.toBe (src/x.test.js:9:23)` (jest), `sum src/sum.ts:3:31` or `src/x.test.ts:9:23`
/// (vitest): the file and line, unless it is the runner's or node's own.
fn frame_place(frame: &str) -> Option<(&str, u64)> {
    let location = match frame.rsplit_once(" (") {
        Some((_, inside)) => inside.strip_suffix(')')?,
        // vitest names the function first, when there is one.
        None => frame
            .rsplit_once(' ')
            .map_or(frame, |(_, location)| location),
    };
    let (file_line, _column) = location.rsplit_once(':')?;
    let (file, line) = file_line.rsplit_once(':')?;
    let line = line.parse().ok()?;
    let own = file.contains("node_modules") || file.starts_with("node:") || file.contains(' ');
    (!own && !file.is_empty()).then_some((file, line))
}

/// jest: ` 1 failed, 1 skipped, 1 todo, 3 passed, 6 total`.
fn jest_counts(text: &str) -> Option<Counts> {
    let mut counts = Counts::default();
    for part in text.split(',') {
        let (number, word) = part.trim().split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match word {
            "passed" => counts.passed += number,
            "failed" => counts.failed += number,
            "skipped" | "todo" | "pending" => counts.skipped += number,
            _ if word == "total" || word.starts_with("of ") => {}
            _ => return None,
        }
    }
    Some(counts)
}

/// vitest: ` 1 failed | 2 passed | 1 skipped | 1 todo (5)`, or `no tests`.
fn vitest_counts(text: &str) -> Option<Counts> {
    let text = text.trim();
    if text == "no tests" {
        return Some(Counts::default());
    }
    let (parts, _total) = text.rsplit_once(" (")?;
    let mut counts = Counts::default();
    for part in parts.split('|') {
        let (number, word) = part.trim().split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match word {
            "passed" => counts.passed += number,
            "failed" => counts.failed += number,
            "skipped" | "todo" => counts.skipped += number,
            _ => return None,
        }
    }
    Some(counts)
}

/// `0.634 s`, `1.2s`, `412ms`, `2.50s` in seconds.
fn duration(text: &str) -> Option<f64> {
    let text = text.trim();
    let (number, scale) = match text.strip_suffix("ms") {
        Some(ms) => (ms, 1000.0),
        None => (text.strip_suffix('s')?, 1.0),
    };
    let value: f64 = number.trim().parse().ok()?;
    Some(value / scale).filter(|s| s.is_finite() && *s >= 0.0)
}

#[cfg(test)]
#[path = "jest_tests.rs"]
mod tests;
