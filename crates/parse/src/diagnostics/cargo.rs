//! `cargo build` / `check` / `clippy` and `rustc FILE`: rustc's messages as `Diagnostics`.
//!
//! With `--message-format=json` (or rustc's `--error-format=json`) each message is a JSON line
//! and is read as such: level, code, the primary span, the children as notes. Otherwise the
//! human format on stderr is read as blocks: a header (`error[E0308]: mismatched types`), the
//! primary location on the ` --> ` line right after it, `= note:` / `help:` lines as notes,
//! and a blank line closing the block. The `--message-format=short` header carries its
//! location in front (`src/main.rs:4:9: warning: ...`). Cargo's closing lines (`generated 1
//! warning`, `could not compile`) and rustc's (`aborting due to`) are the summary, not
//! messages, and its progress lines (`Compiling`, right-aligned to 12 columns) are skipped.
//! The two formats are read by one reader so that `2>&1` (JSON and cargo's own lines mixed on
//! one stream) and `json-render-diagnostics` (JSON on stdout, human on stderr) both work.
//! A line outside any block that is in neither format makes the parser refuse: rustc prints
//! nothing else, so such a line means the output is not what we think it is.
//!
//! The lint's name is the code: JSON gives it, the human format only in a note (which is
//! then dropped as said twice). Several closing lines (a lib's warnings, a bin's failure) are
//! joined by newlines in `summary.line`. A failed run with no error parsed is refused, since
//! a count of zero would be a lie; after a filter (`| grep`, `| tail`) the exit code may be the
//! filter's, so then only an output with nothing left of the build is refused.
//!
//! This module says which command lines are read and makes the result; `reader` reads both
//! formats, `lines` the shape of single human-format lines.

use super::flags::{has_value, listed};
use super::{Diagnostics, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

mod lines;
mod reader;

use lines::is_status;
use reader::Reader;

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let (tool, json) = match stage.program.as_str() {
        "cargo" => ("cargo", cargo_json(&stage.args)?),
        "rustc" => ("rustc", rustc_json(&stage.args)?),
        _ => return None,
    };
    Some(Box::new(RustParser { tool, json }))
}

/// `Some(json)` for a `cargo build|check|clippy` whose output we read; `json` when it asked
/// for JSON messages.
fn cargo_json(args: &[String]) -> Option<bool> {
    const GLOBAL_VALUE: &str = "--color --config -Z -C";
    const BOOL: &str = "--release -r --workspace --all --lib --bins --examples --tests \
        --benches --all-targets --all-features --no-default-features --keep-going --offline \
        --frozen --locked --ignore-rust-version --timings --no-deps";
    const VALUE: &str = "-p --package --exclude --bin --example --test --bench --features \
        -F --target --target-dir --manifest-path --profile -j --jobs --color --config -Z";
    let mut words = args.iter().map(String::as_str);
    let mut verbose = 0;
    // Options before the subcommand (`cargo +nightly -q build`).
    let clippy = loop {
        let word = words.next()?;
        match word {
            "build" | "b" | "check" | "c" | "clippy" => break word == "clippy",
            "-q" | "--quiet" | "--offline" | "--frozen" | "--locked" => {}
            "-v" | "--verbose" => verbose += 1,
            _ if word.starts_with('+') => {}
            _ if listed(GLOBAL_VALUE, word) => {
                words.next()?;
            }
            _ if has_value(word, GLOBAL_VALUE) => {}
            _ => return None,
        }
    };
    let mut json = false;
    while let Some(word) = words.next() {
        match word {
            "--" if clippy => return (verbose < 2 && lint_flags(words)).then_some(json),
            "-q" | "--quiet" => {}
            "-v" | "--verbose" => verbose += 1,
            "--message-format" => json |= message_format(words.next()?)?,
            _ if word.starts_with("--message-format=") => {
                json |= message_format(word.get("--message-format=".len()..)?)?;
            }
            _ if listed(BOOL, word) || word.starts_with("--timings=") => {}
            _ if listed(VALUE, word) => {
                words.next()?;
            }
            _ if has_value(word, VALUE) => {}
            _ => return None,
        }
    }
    // `-vv` adds build scripts' own output, in no format of ours.
    (verbose < 2).then_some(json)
}

/// Whether the `--message-format` values are all known; `Some(true)` if one is JSON.
fn message_format(value: &str) -> Option<bool> {
    let mut json = false;
    for part in value.split(',') {
        match part {
            "human" | "short" => {}
            "json"
            | "json-diagnostic-short"
            | "json-diagnostic-rendered-ansi"
            | "json-render-diagnostics" => json = true,
            _ => return None,
        }
    }
    Some(json)
}

/// The arguments after `cargo clippy --`: lint levels only, which change no format.
fn lint_flags<'a>(mut words: impl Iterator<Item = &'a str>) -> bool {
    const LEVELS: &str = "-D -W -A -F --deny --warn --allow --forbid";
    while let Some(word) = words.next() {
        if listed(LEVELS, word) || word == "--cap-lints" {
            if words.next().is_none() {
                return false;
            }
        } else if !(word == "--no-deps"
            || has_value(word, LEVELS)
            || has_value(word, "--cap-lints"))
        {
            return false;
        }
    }
    true
}

/// `Some(json)` for `rustc [options] FILE.rs` compiling one file.
fn rustc_json(args: &[String]) -> Option<bool> {
    const BOOL: &str = "-O -g --test";
    const VALUE: &str = "-o --out-dir --edition --crate-type --crate-name -C --codegen -L \
        -l --extern -W -A -D -F --warn --allow --deny --forbid --cfg --check-cfg --target \
        --cap-lints --emit --color --sysroot --json";
    let mut words = args.iter().map(String::as_str);
    let (mut json, mut files) = (false, 0);
    while let Some(word) = words.next() {
        let format = match word {
            "--error-format" => Some(words.next()?),
            _ => word.strip_prefix("--error-format="),
        };
        match format {
            Some("json") => json = true,
            Some("human" | "short") => {}
            Some(_) => return None,
            None if listed(BOOL, word) || has_value(word, VALUE) => {}
            None if listed(VALUE, word) => {
                words.next()?;
            }
            None if word.ends_with(".rs") && !word.starts_with('-') => files += 1,
            None => return None,
        }
    }
    (files == 1).then_some(json)
}

struct RustParser {
    tool: &'static str,
    json: bool,
}

impl Parser for RustParser {
    fn type_name(&self) -> &'static str {
        "Diagnostics"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        let mut reader = Reader::default();
        // One of the two is usually empty; with `2>&1` everything is on stdout.
        for (n, line) in out.stderr.lines().chain(out.stdout.lines()).enumerate() {
            if self.json && line.starts_with('{') {
                reader
                    .json_line(line)
                    .map_err(|why| format!("line {}: {why}", n + 1))?;
            } else {
                reader.human_line(n + 1, line);
            }
        }
        if let Some(n) = reader.unknown {
            return Err(format!("line {n} is not in rustc's message format"));
        }
        let failed = reader.finished == Some(false)
            || (!filtered && out.exit_code.is_some_and(|code| code != 0));
        let errors = reader.records.iter().any(|d| d.severity == Severity::Error);
        if failed && !errors {
            let mut lines = out.stderr.lines().chain(out.stdout.lines());
            let first = lines.find(|l| !l.trim().is_empty() && !is_status(l));
            let first: String = first.unwrap_or("").trim().chars().take(120).collect();
            return Err(format!(
                "`{}` failed without a compiler error: {first}",
                self.tool
            ));
        }
        if filtered
            && reader.records.is_empty()
            && reader.summary.is_empty()
            && !reader.saw_finished
        {
            return Err("the filter after the command left no compiler message".into());
        }
        let line = (!reader.summary.is_empty()).then(|| reader.summary.join("\n"));
        Ok(Typed::new(Diagnostics::counted(
            self.tool,
            reader.records,
            line,
        )))
    }
}

/// The diagnostics in rustc's human format (what `cargo build` and `cargo test` print on
/// stderr), for the test runner's report of a build that failed.
pub(crate) fn human_diagnostics(stderr: &str) -> Vec<super::Diagnostic> {
    let mut reader = Reader::default();
    for (n, line) in stderr.lines().enumerate() {
        reader.human_line(n + 1, line);
    }
    reader.records
}

#[cfg(test)]
#[path = "cargo_tests.rs"]
mod tests;
