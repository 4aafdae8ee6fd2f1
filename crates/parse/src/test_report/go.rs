//! `go test -json` (the machine format, read as such) and `go test -v`, into a `TestReport`.
//!
//! Go prints no totals: the counts are the tests and subtests with a `pass`, `fail` or `skip`
//! event (`-json`) or a `--- PASS/FAIL/SKIP:` line (`-v`), as `go test -json` consumers such as
//! gotestsum count them, so a failing table test counts its failed case and itself. Plain
//! `go test` prints only the failures, never what passed or was skipped, so its counts cannot
//! be known: it is refused with the fix (`-json`). A filter may drop result lines, and every
//! count is a sum of them, so filtered output is refused too.
//!
//! A failure is named `<package> <test>` (what `go test -run '^Test$' <package>` needs) and its
//! message is the test's own output, where `x_test.go:9:` says where it failed. In `-v` text a
//! line belongs to the test of the last `=== RUN/CONT/NAME` or `--- FAIL:` line (Go ≥ 1.14
//! streams output before the result line, older Go and plain mode after it), and the package
//! is known only at its `ok`/`FAIL` line, which closes the block of tests before it. A package
//! that failed with no failed test (a panic in `TestMain`, a timeout) is a failure of its own.
//!
//! A package that did not build makes the outcome `error`; the compiler's `file:line:col: msg`
//! lines (on stderr, in stdout with `2>&1`, or Go 1.24's `build-output` events) are read
//! minimally here as build errors. The duration is the sum of the packages' times (they may
//! have run in parallel: it is test time, not wall time).

use std::collections::HashMap;

use serde::Deserialize;

use super::{Failure, Outcome, TestReport};
use crate::diagnostics::{Diagnostic, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

/// At most this many lines of a failure's message are kept.
const MESSAGE_LINES: usize = 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Verbose,
    Plain,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    if stage.program != "go" {
        return None;
    }
    let (sub, args) = stage.args.split_first()?;
    if sub != "test" {
        return None;
    }
    let mut format = Format::Plain;
    for arg in args {
        if arg == "-args" || arg == "--args" {
            break;
        }
        // Go takes `-flag` and `--flag`, `-flag=value` too.
        let flag = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
        let Some(flag) = flag else { continue };
        let (name, value) = flag.split_once('=').unwrap_or((flag, "true"));
        match (name, value) {
            ("json", "true") => format = Format::Json,
            ("v" | "test.v", "true") if format != Format::Json => format = Format::Verbose,
            // No tests run, or benchmark and fuzz output, or the commands instead of a run.
            ("c" | "list" | "bench" | "fuzz" | "n" | "h" | "help" | "test.list", _) => return None,
            _ => {}
        }
    }
    Some(Box::new(GoTest(format)))
}

struct GoTest(Format);

impl Parser for GoTest {
    fn type_name(&self) -> &'static str {
        "TestReport"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        if self.0 == Format::Plain {
            return Err(
                "`go test` without -v or -json does not print the tests that passed or \
                        were skipped; add -json"
                    .into(),
            );
        }
        if filtered {
            return Err(
                "a filter after `go test` may have dropped result lines, and the counts \
                        are their sum; run it without the filter"
                    .into(),
            );
        }
        let run = match self.0 {
            Format::Json => read_json(out.stdout)?,
            _ => read_text(out.stdout),
        };
        Ok(Typed::new(run.into_report(out)?))
    }
}

/// What a run said, whichever format it came in.
#[derive(Default)]
struct Run {
    passed: u64,
    failed: u64,
    skipped: u64,
    seconds: f64,
    /// A package result (`ok`, `FAIL`, `?`) was seen.
    packages: usize,
    build_failed: bool,
    failures: Vec<Failure>,
    /// Compiler lines found in the stream itself (`build-output` events, `2>&1`).
    build_text: Vec<String>,
}

impl Run {
    fn into_report(self, out: &Output<'_>) -> Result<TestReport, String> {
        let mut build_errors: Vec<Diagnostic> = self
            .build_text
            .iter()
            .filter_map(|l| compiler_line(l))
            .chain(out.stderr.lines().filter_map(compiler_line))
            .collect();
        let nothing_ran = self.packages == 0 && self.passed + self.failed + self.skipped == 0;
        let broken = out.exit_code.is_some_and(|c| c != 0);
        if build_errors.is_empty() && nothing_ran && broken {
            // `go: cannot find main module`, `no packages to test`: go's own complaint.
            build_errors.extend(
                out.stderr
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| error(l.trim(), None)),
            );
        }
        if nothing_ran && !self.build_failed && build_errors.is_empty() {
            return Err("no `go test` results in the output".into());
        }
        let outcome = if self.build_failed || (nothing_ran && broken) {
            Outcome::Error
        } else if self.failed > 0 || broken {
            Outcome::Failed
        } else {
            Outcome::Passed
        };
        Ok(TestReport {
            tool: "go".into(),
            outcome,
            passed: self.passed,
            failed: self.failed,
            skipped: self.skipped,
            duration_seconds: (self.packages > 0).then_some(self.seconds),
            failures: self.failures,
            build_errors,
        })
    }
}

/// One `go test -json` event (`go doc test2json`), with Go 1.24's build events.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    #[serde(default)]
    package: String,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    elapsed: Option<f64>,
    #[serde(default)]
    failed_build: Option<String>,
}

fn read_json(stdout: &str) -> Result<Run, String> {
    let mut run = Run::default();
    let mut events = 0usize;
    // Output lines of each test and of each package outside its tests.
    let mut outputs: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut failed_tests: HashMap<String, usize> = HashMap::new();
    for (number, line) in stdout.lines().enumerate() {
        let trimmed = line.trim();
        if !trimmed.starts_with('{') {
            // Before Go 1.24 build errors and `FAIL pkg [build failed]` came as plain text.
            if trimmed.ends_with("[build failed]") || trimmed.ends_with("[setup failed]") {
                run.build_failed = true;
            }
            run.build_text.push(line.to_owned());
            continue;
        }
        let event: Event = serde_json::from_str(trimmed)
            .map_err(|_| format!("line {} is not a `go test -json` event", number + 1))?;
        events += 1;
        let test = event.test.unwrap_or_default();
        match event.action.as_str() {
            "output" => {
                let text = event.output.unwrap_or_default();
                if text.contains("[build failed]") || text.contains("[setup failed]") {
                    run.build_failed = true;
                }
                let lines = outputs.entry((event.package, test)).or_default();
                if lines.len() < 200 {
                    lines.push(text.trim_end_matches('\n').to_owned());
                }
            }
            "build-output" => run.build_text.push(event.output.unwrap_or_default()),
            "build-fail" => run.build_failed = true,
            "pass" | "fail" | "skip" if !test.is_empty() => {
                let key = (event.package, test);
                match event.action.as_str() {
                    "pass" => run.passed += 1,
                    "skip" => run.skipped += 1,
                    _ => {
                        run.failed += 1;
                        *failed_tests.entry(key.0.clone()).or_default() += 1;
                        let lines = outputs.remove(&key).unwrap_or_default();
                        run.failures.push(failure(&key.0, &key.1, &lines));
                    }
                }
                outputs.remove(&key);
            }
            "pass" | "fail" | "skip" => {
                run.packages += 1;
                run.seconds += event
                    .elapsed
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .unwrap_or(0.0);
                let built = event.failed_build.is_none();
                run.build_failed |= !built;
                let lines = outputs
                    .remove(&(event.package.clone(), String::new()))
                    .unwrap_or_default();
                let crashed = !lines
                    .iter()
                    .any(|l| l.contains("[build failed]") || l.contains("[setup failed]"));
                if event.action == "fail"
                    && built
                    && crashed
                    && !failed_tests.contains_key(&event.package)
                {
                    run.failed += 1;
                    run.failures.push(failure(&event.package, "", &lines));
                }
            }
            _ => {}
        }
    }
    if events == 0 && !run.build_failed {
        return Err("no `go test -json` events in the output".into());
    }
    Ok(run)
}

/// `go test -v`'s text.
fn read_text(stdout: &str) -> Run {
    let mut run = Run::default();
    let mut outputs: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut target: Option<&str> = None;
    // Failed tests of the package whose block is being read, and its output outside them.
    let mut pending: Vec<&str> = Vec::new();
    let mut package_lines: Vec<&str> = Vec::new();
    for line in stdout.lines() {
        let trimmed = line.trim_start();
        if let Some(name) = ["=== RUN", "=== CONT", "=== NAME"]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
        {
            target = Some(name.trim());
        } else if let Some((status, name)) = result_line(trimmed) {
            target = Some(name);
            match status {
                "PASS" => run.passed += 1,
                "SKIP" => run.skipped += 1,
                _ => {
                    run.failed += 1;
                    pending.push(name);
                }
            }
        } else if let Some((failed, package, seconds)) = package_line(line) {
            run.packages += 1;
            run.seconds += seconds;
            if line.ends_with("[build failed]") || line.ends_with("[setup failed]") {
                run.build_failed = true;
            } else if failed && pending.is_empty() {
                run.failed += 1;
                run.failures.push(failure(package, "", &package_lines));
            }
            for test in pending.drain(..) {
                let lines = outputs.remove(test).unwrap_or_default();
                run.failures.push(failure(package, test, &lines));
            }
            outputs.clear();
            package_lines.clear();
            target = None;
        } else if line.starts_with(char::is_whitespace) || line.starts_with("panic: ") {
            match target {
                Some(test) => outputs.entry(test).or_default().push(line),
                None => package_lines.push(line),
            }
        } else if compiler_line(line).is_some() {
            run.build_text.push(line.to_owned());
        } else if !matches!(line, "PASS" | "FAIL" | "") && package_lines.len() < 200 {
            package_lines.push(line);
        }
    }
    // Without a package line (output cut short) the failures are named by test alone.
    for test in pending {
        let lines = outputs.remove(test).unwrap_or_default();
        run.failures.push(failure("", test, &lines));
    }
    run
}

/// `--- FAIL: TestX (0.00s)` (trimmed): the status and the test.
fn result_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("--- ")?;
    let (status, rest) = rest.split_once(": ")?;
    if !matches!(status, "PASS" | "FAIL" | "SKIP") {
        return None;
    }
    let name = rest.rsplit_once(" (").map_or(rest, |(name, _)| name);
    Some((status, name.trim()))
}

/// `ok  \tpkg\t0.004s`, `FAIL\tpkg\t0.010s`, `FAIL\tpkg [build failed]`, `?   \tpkg\t[no test
/// files]`: whether it failed, the package, its time.
fn package_line(line: &str) -> Option<(bool, &str, f64)> {
    let (status, rest) = line.split_once('\t')?;
    let failed = match status.trim_end() {
        "ok" | "?" => false,
        "FAIL" => true,
        _ => return None,
    };
    let mut fields = rest.split('\t');
    let package = fields
        .next()?
        .trim_end_matches(" [build failed]")
        .trim_end_matches(" [setup failed]");
    let seconds = fields
        .next()
        .and_then(|t| t.strip_suffix('s'))
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(0.0);
    Some((failed, package, seconds))
}

/// A failure from the lines printed for it: `x_test.go:9:` gives the place, and the lines
/// without the runner's own (`=== RUN`, `--- FAIL:`, `FAIL`) are the message.
fn failure<S: AsRef<str>>(package: &str, test: &str, lines: &[S]) -> Failure {
    let own: Vec<&str> = lines
        .iter()
        .map(AsRef::as_ref)
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("=== ")
                || result_line(t).is_some()
                || package_line(l).is_some()
                || matches!(t.trim_end(), "FAIL" | "PASS" | ""))
        })
        .take(MESSAGE_LINES)
        .collect();
    let indent = own.first().map_or(0, |l| l.len() - l.trim_start().len());
    let message: Vec<&str> = own
        .iter()
        .map(|l| {
            l.get(indent.min(l.len() - l.trim_start().len())..)
                .unwrap_or(l)
                .trim_end()
        })
        .collect();
    let place = own.iter().find_map(|l| {
        let (file_line, _) = l.trim_start().split_once(": ")?;
        let (file, line) = file_line.rsplit_once(':')?;
        Some((file, line.parse::<u64>().ok()?)).filter(|(f, _)| f.ends_with(".go"))
    });
    let name = match (package, test) {
        ("", test) => test.to_owned(),
        (package, "") => package.to_owned(),
        (package, test) => format!("{package} {test}"),
    };
    Failure {
        name,
        file: place.map(|(file, _)| file.to_owned()),
        line: place.map(|(_, line)| line),
        message: message.join("\n"),
    }
}

/// `./x.go:3:2: undefined: y` (the column is optional): a compiler error.
fn compiler_line(line: &str) -> Option<Diagnostic> {
    let line = line.trim_end();
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (place, message) = line.split_once(": ")?;
    let mut parts = place.split(':');
    let file = parts.next().filter(|f| f.ends_with(".go"))?;
    let number: u64 = parts.next()?.parse().ok()?;
    let column = match parts.next() {
        Some(column) => Some(column.parse().ok()?),
        None => None,
    };
    Some(Diagnostic {
        column,
        file: Some(file.to_owned()),
        ..error(message, Some(number))
    })
}

fn error(message: &str, line: Option<u64>) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        message: message.to_owned(),
        code: None,
        file: None,
        line,
        column: None,
        notes: Vec::new(),
    }
}

#[cfg(test)]
#[path = "go_tests.rs"]
mod tests;
