//! `go build` and `go vet`: the compiler's and vet's reports on stderr as `Diagnostics`.
//!
//! Both print nothing on success and, on failure, `# package` headers followed by
//! `./main.go:5:2: message` lines (the column may be missing), with continuation lines
//! indented by a tab (`have (int)` / `want (string)`), kept as notes.
//!
//! Severity: every report is an error, vet's included. `go vet` exits 1 on a finding and
//! `go test` fails on the same checks, so the toolchain treats them as failures; and vet
//! passes on the compiler's errors for the packages it has to build in the same shape
//! (`sub/sub.go:4:2: x declared but not used`, no `vet:` prefix), so calling vet's findings
//! warnings would call some compile errors warnings too. When vet cannot type-check the
//! package it vets it says `vet: ./x.go:3:1: ...`: the prefix is dropped.
//!
//! Lines of the go command itself (`go: go.mod file not found ...`) are errors without a
//! file; its progress (`go: downloading ...`) is skipped. Any other line is the go command's
//! own explanation of a failure (`package x is not in std`): an error when the run failed,
//! and a reason to refuse when it did not (or when a filter hides whether it did), because
//! then the output is not go's.

use super::flags::listed;
use super::location::located;
use super::shared::clip;
use super::{Diagnostic, Diagnostics, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

/// Notes kept per message, and the longest note kept whole (a linker's command line is
/// several kilobytes, and the model pays for every byte).
const MAX_NOTES: usize = 10;

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    if stage.program != "go" {
        return None;
    }
    let (command, args) = stage.args.split_first()?;
    let vet = match command.as_str() {
        "build" => false,
        "vet" => true,
        _ => return None,
    };
    flags_known(args, vet).then(|| Box::new(GoParser { vet }) as Box<dyn Parser>)
}

/// Whether every flag keeps the format: build flags that only change what is built, and for
/// vet the analyzer switches (`-printf=false`, `-shadow`). Flags that print more (`-v`, `-x`,
/// `-n`, `-json`, vet's `-c=N` context lines, a `-vettool`) are refused.
fn flags_known(args: &[String], vet: bool) -> bool {
    const BOOL: &str = "-a -race -msan -asan -cover -trimpath -linkshared -modcacherw \
        -buildvcs -i";
    const VALUE: &str = "-o -p -tags -mod -modfile -overlay -pgo -buildmode -compiler \
        -installsuffix -coverpkg -covermode -C -ldflags -gcflags -asmflags";
    const NOT_VET_ANALYZERS: &str = "-json -c -n -x -v -V -flags -help -h -vettool -work \
        -toolexec -debug -cpuprofile -memprofile -trace -fix -diff";
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        if word == "--" {
            return true;
        }
        // Packages and files: `./...`, `.`, `main.go`.
        if !word.starts_with('-') || word == "-" {
            continue;
        }
        // Go's flag package takes `--flag` as `-flag`.
        let flag = word
            .strip_prefix('-')
            .filter(|f| f.starts_with('-'))
            .unwrap_or(word);
        let (name, attached) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (flag, None),
        };
        if listed(VALUE, name) {
            let Some(value) = attached.or_else(|| words.next()) else {
                return false;
            };
            if !tool_flags_known(name, value) {
                return false;
            }
        } else if listed(BOOL, name) {
            continue;
        } else if !(vet && !listed(NOT_VET_ANALYZERS, name) && is_analyzer_flag(name)) {
            return false;
        }
    }
    true
}

/// `-gcflags` and `-asmflags` may make the compiler print (`-m` inlining decisions, `-S`
/// assembly): only flags known to print nothing pass. `-ldflags`: the linker's printing flags
/// are refused.
fn tool_flags_known(name: &str, value: &str) -> bool {
    // `all=-N -l`, `pkg/...=-l`: a package pattern may come first.
    let flags = match value.split_once('=') {
        Some((pattern, flags)) if !pattern.starts_with('-') => flags,
        _ => value,
    };
    let mut tokens = flags.split_whitespace();
    match name {
        "-ldflags" => !tokens.any(|t| {
            matches!(
                t,
                "-v" | "-n" | "-c" | "-h" | "-dumpdep" | "-cpuprofile" | "-memprofile"
            )
        }),
        "-gcflags" | "-asmflags" => {
            tokens.all(|t| matches!(t, "-N" | "-l" | "-B" | "-C" | "-e" | "-std"))
        }
        _ => true,
    }
}

/// `-printf`, `-printf.funcs`, `-unusedresult`: a lower-case name with dots.
fn is_analyzer_flag(name: &str) -> bool {
    name.strip_prefix('-').is_some_and(|n| {
        n.starts_with(|c: char| c.is_ascii_lowercase())
            && n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.')
    })
}

struct GoParser {
    vet: bool,
}

impl Parser for GoParser {
    fn type_name(&self) -> &'static str {
        "Diagnostics"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        // After a filter the exit code may be the filter's (`grep` finding nothing exits 1).
        let failed = !filtered && out.exit_code.is_some_and(|code| code != 0);
        let mut records: Vec<Diagnostic> = Vec::new();
        let mut summary = None;
        // Whether an indented line continues the last record (not across a `# pkg` header).
        let mut continues = false;
        for (n, line) in out.stderr.lines().chain(out.stdout.lines()).enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if line.starts_with("# ") {
                continues = false;
                continue;
            }
            if line.starts_with([' ', '\t']) {
                if let Some(last) = records
                    .last_mut()
                    .filter(|d| continues && d.notes.len() < MAX_NOTES)
                {
                    last.notes.push(clip(line.trim()));
                }
                continue;
            }
            let progress = ["downloading ", "finding ", "extracting ", "found "];
            if progress
                .iter()
                .any(|p| line.strip_prefix("go: ").is_some_and(|l| l.starts_with(p)))
            {
                continue;
            }
            let text = line.strip_prefix("vet: ").unwrap_or(line);
            let vet_failed = text.len() < line.len();
            let mut record = Diagnostic {
                severity: Severity::Error,
                message: text.to_owned(),
                code: None,
                file: None,
                line: None,
                column: None,
                notes: Vec::new(),
            };
            if let Some((file, number, column, message)) = located(text) {
                if message == "too many errors" {
                    summary = Some(message.to_owned());
                    continue;
                }
                (record.file, record.line, record.column) =
                    (Some(file.to_owned()), Some(number), column);
                record.message = message.to_owned();
            } else if text.starts_with("go: warning: ") {
                record.severity = Severity::Warning;
            } else if let Some(note) = text.strip_prefix("note: ") {
                (record.severity, record.message) = (Severity::Note, note.to_owned());
            } else if !(vet_failed || failed || text.starts_with("go: ")) {
                return Err(format!("line {} is not in go's message format", n + 1));
            }
            records.push(record);
            continues = true;
        }
        if failed && records.is_empty() {
            let tool = if self.vet { "go vet" } else { "go build" };
            return Err(format!("`{tool}` failed without a message in go's format"));
        }
        Ok(Typed::new(Diagnostics::counted("go", records, summary)))
    }
}

#[cfg(test)]
#[path = "go_tests.rs"]
mod tests;
