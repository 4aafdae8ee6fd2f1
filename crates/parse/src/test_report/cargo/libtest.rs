//! `cargo test`: libtest's human output, read into a `TestReport`.
//!
//! libtest prints one block per test binary on stdout (`running N tests`, one line per test,
//! the captured output of each failure, `test result: …`), so the counts are the sum of every
//! `test result:` line: unit tests, integration tests and doc-tests alike. The names of the
//! failures come from three places because each mode keeps only some of them (`test x ...
//! FAILED`, `-q`'s `x --- FAILED`, the `failures:` list), and their messages from the
//! `---- x stdout ----` blocks, or, with `--nocapture`, from the `thread 'x' panicked at` lines
//! on stderr. A filter after `cargo test` may drop one binary's `test result:` line, and a sum
//! with a missing term is a guess, so filtered output is refused.

use super::shared::{Counts, Failures, build_failure};
use crate::test_report::{Outcome, TestReport};
use crate::{Context, Output, Parser, Typed};

pub(super) struct Libtest;

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

fn libtest_report(out: &Output<'_>) -> Result<TestReport, String> {
    let mut run = Run::default();
    for line in out.stdout.lines().chain(out.stderr.lines()) {
        run.read(line)?;
    }
    if let Some((name, lines)) = run.block.take() {
        run.failures.message(&name, &lines);
    }
    if run.running == 0 && run.results == 0 {
        return build_failure("cargo", out);
    }
    let total = run.total;
    let outcome = if run.running > run.results {
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
        duration_seconds: (run.results > 0).then_some(total.seconds),
        failures: run.failures.into_records(|_| true),
        build_errors: Vec::new(),
    })
}

/// What the lines of a run add up to so far, read one at a time.
#[derive(Default)]
struct Run<'a> {
    /// The sum of the `test result:` lines.
    total: Counts,
    /// `running N tests` lines: one per test binary started.
    running: usize,
    /// `test result:` lines: one per test binary finished.
    results: usize,
    failures: Failures,
    /// The test whose captured output (or streamed panic) is being read, and its lines so far.
    block: Option<(String, Vec<&'a str>)>,
    /// Inside a `failures:` list of names.
    in_names: bool,
}

impl<'a> Run<'a> {
    fn read(&mut self, line: &'a str) -> Result<(), String> {
        if let Some((name, lines)) = self.block.as_mut() {
            let streamed = lines.first().is_some_and(|l| l.starts_with("thread '"));
            if !ends_block(line, streamed) {
                lines.push(line);
                return Ok(());
            }
            self.failures.message(name, lines);
            self.block = None;
        }
        if let Some(name) = line.strip_prefix("---- ").and_then(|l| {
            l.strip_suffix(" stdout ----")
                .or_else(|| l.strip_suffix(" stderr ----"))
        }) {
            self.block = Some((name.to_owned(), Vec::new()));
        } else if let Some(name) = panicking_thread(line) {
            self.block = Some((name.to_owned(), vec![line]));
        } else if line == "failures:" {
            self.in_names = true;
        } else if let Some(name) = line.strip_prefix("    ").filter(|_| self.in_names) {
            self.failures.name(name.trim());
        } else if let Some(rest) = line.strip_prefix("test result: ") {
            let counts = result_counts(rest)
                .ok_or_else(|| format!("`{line}` is not libtest's result line"))?;
            self.total.passed += counts.passed;
            self.total.failed += counts.failed;
            self.total.skipped += counts.skipped;
            self.total.seconds += counts.seconds;
            self.results += 1;
            self.in_names = false;
        } else if (line.starts_with("running ") && line.ends_with(" tests"))
            || line == "running 1 test"
        {
            self.running += 1;
            self.in_names = false;
        } else if let Some(name) = line.strip_suffix(" --- FAILED") {
            self.failures.name(name);
        } else if let Some((name, status)) = line
            .strip_prefix("test ")
            .and_then(|l| l.rsplit_once(" ... "))
        {
            if status.starts_with("FAILED") {
                self.failures.name(name);
            }
        } else if line.is_empty() {
            self.in_names = false;
        }
        Ok(())
    }
}

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
