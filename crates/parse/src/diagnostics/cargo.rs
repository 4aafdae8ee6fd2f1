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

use serde_json::Value;

use super::flags::{has_value, listed};
use super::location::{file_line_column, located};
use super::shared::clip;
use super::{Diagnostic, Diagnostics, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

/// Notes kept per message: the first ones say what matters; trait-bound chains can run long.
const MAX_NOTES: usize = 10;

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

#[derive(Default)]
struct Reader {
    records: Vec<Diagnostic>,
    /// Cargo's and rustc's closing lines, in order.
    summary: Vec<String>,
    /// A human block is open: its header was read and no blank line came since.
    open: bool,
    /// The open block's primary location was read, or a child (`help:`) began.
    located: bool,
    /// After cargo's `Caused by:`: indented lines explain the last message.
    caused_by: bool,
    saw_finished: bool,
    /// `build-finished`'s `success`, in JSON.
    finished: Option<bool>,
    /// The first line (1-based) in neither format.
    unknown: Option<usize>,
}

impl Reader {
    fn human_line(&mut self, n: usize, line: &str) {
        if line.trim().is_empty() {
            self.open = false;
            return;
        }
        if is_status(line) {
            self.saw_finished |= line.trim_start().starts_with("Finished ");
            self.open = false;
            return;
        }
        if line.starts_with([' ', '\t']) {
            self.indented(line.trim());
            return;
        }
        if let Some(summary) = summary_line(line) {
            self.summary.push(summary.to_owned());
            (self.open, self.caused_by) = (false, false);
            return;
        }
        if is_chatter(line) {
            self.open = false;
            return;
        }
        if let Some(diagnostic) = header(line) {
            let child = self.open && diagnostic.file.is_none();
            if child && matches!(diagnostic.severity, Severity::Help | Severity::Note) {
                let word = if diagnostic.severity == Severity::Help {
                    "help"
                } else {
                    "note"
                };
                self.note(&format!("{word}: {}", diagnostic.message));
                self.located = true;
            } else {
                (self.open, self.caused_by) = (true, false);
                self.located = diagnostic.file.is_some();
                self.records.push(diagnostic);
            }
        } else if line == "Caused by:" {
            (self.open, self.caused_by) = (false, true);
        } else if line == "--" {
            // `grep -A`'s group separator.
            self.open = false;
        } else if !self.open {
            // Inside a block, column-0 lines are snippet lines (`3 |     let x = 5;`).
            self.unknown.get_or_insert(n);
        }
    }

    fn indented(&mut self, text: &str) {
        if !self.open {
            if self.caused_by {
                self.note(&format!("caused by: {text}"));
            }
            return;
        }
        if let Some(location) = text.strip_prefix("--> ") {
            if self.located {
                return;
            }
            self.located = true;
            if let (Some(last), Some((file, line, Some(column)))) =
                (self.records.last_mut(), file_line_column(location))
            {
                (last.file, last.line, last.column) =
                    (Some(file.to_owned()), Some(line), Some(column));
            }
        } else if let Some(note) = text.strip_prefix("= ") {
            match (self.records.last_mut(), lint_name(note)) {
                // The note only named the lint, which `code` now says.
                (Some(last), Some(code)) => _ = last.code.get_or_insert(code),
                _ => self.note(note),
            }
        }
    }

    fn note(&mut self, note: &str) {
        if let Some(last) = self
            .records
            .last_mut()
            .filter(|d| d.notes.len() < MAX_NOTES)
        {
            last.notes.push(clip(note));
        }
    }

    /// One JSON line: cargo's `{"reason": ...}` or rustc's own `{"$message_type": ...}`.
    fn json_line(&mut self, line: &str) -> Result<(), String> {
        let value: Value =
            serde_json::from_str(line).map_err(|_| "not a JSON message".to_owned())?;
        let message = match value.get("reason").and_then(Value::as_str) {
            Some("compiler-message") => value
                .get("message")
                .ok_or("a compiler-message without its message")?,
            Some("build-finished") => {
                self.finished = value.get("success").and_then(Value::as_bool);
                return Ok(());
            }
            Some(_) => return Ok(()),
            None if value.get("$message_type").and_then(Value::as_str) == Some("diagnostic") => {
                &value
            }
            None => return Ok(()),
        };
        let level = text(message, "level").ok_or("a message without a level")?;
        let severity = match level {
            "error" | "error: internal compiler error" => Severity::Error,
            "warning" => Severity::Warning,
            "note" => Severity::Note,
            "help" => Severity::Help,
            "failure-note" => return Ok(()),
            _ => return Err(format!("unknown message level `{level}`")),
        };
        let body = text(message, "message").unwrap_or_default();
        let spans = message
            .get("spans")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if let Some(summary) =
            summary_line(&format!("{level}: {body}")).filter(|_| spans.is_empty())
        {
            self.summary.push(summary.to_owned());
            return Ok(());
        }
        let primary = spans
            .iter()
            .find(|s| s.get("is_primary").and_then(Value::as_bool) == Some(true));
        let primary = primary.map(user_span);
        let number = |key: &str| primary.and_then(|s| s.get(key)).and_then(Value::as_u64);
        let children = message
            .get("children")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let notes = children.iter().filter_map(|child| {
            let note = text(child, "message").filter(|m| !m.is_empty())?;
            let note = format!("{}: {note}", text(child, "level").unwrap_or("note"));
            lint_name(&note).is_none().then(|| clip(&note))
        });
        self.records.push(Diagnostic {
            severity,
            message: body.to_owned(),
            code: message
                .get("code")
                .and_then(|c| text(c, "code"))
                .map(str::to_owned),
            file: primary
                .and_then(|s| text(s, "file_name"))
                .map(str::to_owned),
            line: number("line_start"),
            column: number("column_start"),
            notes: notes.take(MAX_NOTES).collect(),
        });
        Ok(())
    }
}

/// The span the human format shows: a span inside the standard library's macros is replaced
/// by the macro's call site, as rustc does for its ` --> ` line.
fn user_span(mut span: &Value) -> &Value {
    for _ in 0..16 {
        let file = span
            .get("file_name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !(file.starts_with("/rustc/") || file.starts_with('<')) {
            break;
        }
        match span.get("expansion").and_then(|e| e.get("span")) {
            Some(call_site) => span = call_site,
            None => break,
        }
    }
    span
}

/// The first line of a string field.
fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    let text = value.get(key).and_then(Value::as_str)?;
    Some(text.lines().next().unwrap_or_default())
}

/// Cargo's progress lines: a capitalised verb right-aligned to column 12 (`   Compiling x`).
fn is_status(line: &str) -> bool {
    let text = line.trim_start_matches(' ');
    let verb = text.split(' ').next().unwrap_or_default();
    let indent = line.len() - text.len();
    indent > 0
        && indent + verb.len() == 12
        && text.len() > verb.len()
        && verb.starts_with(|c: char| c.is_ascii_uppercase())
        && verb.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
}

/// The closing lines of cargo, rustc and cargo's test runner: counts, not messages.
fn summary_line(line: &str) -> Option<&str> {
    let cargo_warnings =
        line.starts_with("warning: `") && line.contains(" generated ") && line.contains(" warning");
    let closing = cargo_warnings
        || line.starts_with("error: could not compile `")
        || line.starts_with("error: aborting due to ")
        || line.starts_with("error: test failed, to rerun pass")
        || (line.starts_with("error: ") && line.ends_with(" failed:") && line.contains(" target"))
        || (line.starts_with("warning: ")
            && (line.ends_with(" warning emitted") || line.ends_with(" warnings emitted")));
    closing.then_some(line)
}

/// Column-0 lines that are neither a message nor its summary.
fn is_chatter(line: &str) -> bool {
    line.starts_with("warning: build failed, waiting for other jobs")
        || line.starts_with("For more information about")
        || line.starts_with("Some errors have detailed explanations")
}

/// `error[E0308]: mismatched types`, or the short format's `src/a.rs:4:9: warning: ...`.
fn header(line: &str) -> Option<Diagnostic> {
    if let Some(diagnostic) = bare_header(line) {
        return Some(diagnostic);
    }
    let (file, line, column, rest) = located(line)?;
    let mut diagnostic = bare_header(rest)?;
    (diagnostic.file, diagnostic.line, diagnostic.column) =
        (Some(file.to_owned()), Some(line), column);
    Some(diagnostic)
}

fn bare_header(line: &str) -> Option<Diagnostic> {
    const LEVELS: [(&str, Severity); 4] = [
        ("error", Severity::Error),
        ("warning", Severity::Warning),
        ("note", Severity::Note),
        ("help", Severity::Help),
    ];
    let (rest, severity) = LEVELS
        .iter()
        .find_map(|(word, s)| Some((line.strip_prefix(word)?, *s)))?;
    let (code, rest) = match rest.strip_prefix('[') {
        Some(coded) => {
            let (code, rest) = coded.split_once(']')?;
            let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-');
            if code.is_empty() || code.len() > 64 || !code.chars().all(valid) {
                return None;
            }
            (Some(code.to_owned()), rest)
        }
        None => (None, rest),
    };
    let message = rest.strip_prefix(": ")?;
    Some(Diagnostic {
        severity,
        message: message.to_owned(),
        code,
        file: None,
        line: None,
        column: None,
        notes: Vec::new(),
    })
}

/// The lint a note names: `` `#[warn(unused_variables)]` on by default ``, `` `-D
/// clippy::needless-return` implied by `-D warnings` ``, or clippy's link to its lint page.
/// JSON gives the lint as the code; in the human format only these notes say it (and rustc
/// prints the `#[warn(..)]` note on the first message of each lint only). Such a note is not
/// kept: `code` says it.
fn lint_name(note: &str) -> Option<String> {
    let note = note
        .strip_prefix("note: ")
        .or_else(|| note.strip_prefix("help: "))?;
    if let Some(attribute) = note.strip_prefix("`#[") {
        let (_level, rest) = attribute.split_once('(')?;
        let (name, _) = rest.split_once(")]`")?;
        return Some(name.to_owned()).filter(|n| !n.is_empty() && !n.contains(' '));
    }
    if let Some(flag) = note
        .strip_prefix("`-D ")
        .or_else(|| note.strip_prefix("`-W "))
    {
        let (name, _) = flag.split_once("` implied by")?;
        return Some(name.replace('-', "_")).filter(|n| !n.is_empty() && !n.contains(' '));
    }
    let page = note
        .strip_prefix("for further information visit https://rust-lang.github.io/rust-clippy/")?;
    let (_, name) = page.rsplit_once('#')?;
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| format!("clippy::{name}"))
}

#[cfg(test)]
#[path = "cargo_tests.rs"]
mod tests;
