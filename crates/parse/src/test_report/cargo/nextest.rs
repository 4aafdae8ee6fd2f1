//! `cargo nextest run`: nextest's human output, read into a `TestReport`.
//!
//! nextest prints to stderr: one status line per test (`PASS [ 0.004s] (1/5) bin a::b`), the
//! output of each failure under it, and one `Summary` line that holds every count, so a filter
//! that keeps the `Summary` line is harmless. A test retried after a failure ends with its last
//! status line, so a failure is a test whose last status was a failing one.

use std::collections::HashMap;

use super::shared::{Counts, Failures, build_failure};
use crate::test_report::{Outcome, TestReport};
use crate::{Context, Output, Parser, Typed};

pub(super) struct Nextest;

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
    let mut failures = Failures::indented("    ");
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
