//! `tsc` (TypeScript 5 and the native TypeScript 7, directly, as `npx tsc` or from
//! `node_modules/.bin`): its errors as `Diagnostics`.
//!
//! tsc writes its messages to stdout. On a pipe (how commands run here) it prints one line per
//! message, `file(line,col): error TS2322: message`, with the rest of a chained message on the
//! lines after it, indented by two spaces per level; those lines become notes (the message is
//! its first line, as for every tool). On a terminal, or with `--pretty`, it prints
//! `file:line:col - error TS2322: message`, the chain, a blank line, the source excerpt, a
//! blank line, the related locations (`  file:l:c - message` in tsc 7; the location alone and
//! the message after its excerpt in tsc 5), and closes with `Found 2 errors in 2 files.` and a
//! table of files. Both layouts are read by one reader, which knows from the first message's
//! shape which one it is: the pretty excerpt is source code and can only be recognised by its
//! place between blank lines. Watch mode, `--listFiles`, `--showConfig` and the like print
//! something else and are not recognised.

use super::shared::{MAX_NOTES, clip, no_message, number, quote};
use super::{Diagnostic, Diagnostics, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let args = run_by_name(stage, "tsc")?;
    const REFUSED: &[&str] = &[
        "-w",
        "--watch",
        "-h",
        "--help",
        "-?",
        "--all",
        "-v",
        "--version",
        "--init",
        "--showConfig",
        "--listFiles",
        "--listFilesOnly",
        "--listEmittedFiles",
        "--explainFiles",
        "--traceResolution",
        "--diagnostics",
        "--extendedDiagnostics",
        "--verbose",
        "--dry",
    ];
    let build = args.iter().any(|a| a == "-b" || a == "--build");
    let refused = args.iter().any(|arg| {
        let name = arg.split('=').next().unwrap_or(arg);
        REFUSED.iter().any(|r| r.eq_ignore_ascii_case(name)) || (build && name == "-d")
    });
    (!refused).then(|| Box::new(TscParser) as Box<dyn Parser>)
}

/// The arguments of `program` run as itself or through `npx [-y|--yes|--no-install]
/// program[@version]`.
pub(super) fn run_by_name<'a>(stage: &'a Stage, program: &str) -> Option<&'a [String]> {
    if stage.program == program {
        return Some(&stage.args);
    }
    if stage.program != "npx" {
        return None;
    }
    let skip = stage
        .args
        .iter()
        .take_while(|a| {
            matches!(
                a.as_str(),
                "-y" | "--yes" | "--no-install" | "--no" | "-q" | "--quiet"
            )
        })
        .count();
    let (name, args) = stage.args.get(skip..)?.split_first()?;
    // `npx eslint@9` asks for a version of the same program.
    let name = name
        .split_once('@')
        .map_or(name.as_str(), |(name, _version)| name);
    (name == program).then_some(args)
}

struct TscParser;

impl Parser for TscParser {
    fn type_name(&self) -> &'static str {
        "Diagnostics"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        let mut reader = Reader::default();
        for (n, line) in out.stdout.lines().enumerate() {
            reader
                .line(line, filtered)
                .map_err(|()| format!("line {} is not a tsc message: `{}`", n + 1, quote(line)))?;
        }
        reader.close_related();
        if reader.records.is_empty()
            && reader.summary.is_none()
            && let Some(why) = no_message("tsc", out, filtered)
        {
            return Err(why);
        }
        let mut result = Diagnostics::counted("tsc", reader.records, reader.summary);
        // A filter may have dropped messages; the closing line still counts them all.
        if let (true, Some(errors)) = (filtered, reader.found) {
            result.summary.errors = errors;
        }
        Ok(Typed::new(result))
    }
}

/// Where the pretty layout is, relative to the last message.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// No message yet, or the plain layout: indented lines continue the last message.
    #[default]
    Chain,
    /// Between the blank lines around the excerpt.
    Excerpt,
    /// After the excerpt: related locations, or the next message.
    AfterExcerpt,
    /// Inside a related location's block.
    Related,
    /// The table of files after `Found N errors in M files.`
    Table,
}

#[derive(Default)]
struct Reader {
    records: Vec<Diagnostic>,
    place: Place,
    /// A message in the pretty layout was read.
    pretty: bool,
    /// tsc 5's related location, waiting for its message (the last line of its block).
    related: Option<(String, Option<String>)>,
    summary: Option<String>,
    /// The `N` of `Found N errors`.
    found: Option<u64>,
}

impl Reader {
    fn line(&mut self, line: &str, filtered: bool) -> Result<(), ()> {
        if line.trim().is_empty() {
            self.close_related();
            self.place = match self.place {
                Place::Chain if self.pretty => Place::Excerpt,
                Place::Excerpt | Place::Related => Place::AfterExcerpt,
                place => place,
            };
            return Ok(());
        }
        let indented = line.starts_with(' ');
        if !indented {
            if let Some(found) = line.strip_prefix("Found ") {
                let (n, rest) = number(found).ok_or(())?;
                if !(rest.starts_with(" error") || rest.starts_with(" warning")) {
                    return Err(());
                }
                self.found = Some(n);
                self.summary = Some(line.to_owned());
                self.place = Place::AfterExcerpt;
                return Ok(());
            }
            if line.starts_with("Errors ") && line.trim_end().ends_with(" Files") {
                self.place = Place::Table;
                return Ok(());
            }
            if let Some(record) = header(line, &mut self.pretty) {
                self.close_related();
                self.records.push(record);
                self.place = Place::Chain;
                return Ok(());
            }
        }
        match self.place {
            Place::Excerpt => Ok(()),
            Place::Table if is_table_row(line) => Ok(()),
            Place::Chain if indented => {
                if self.records.is_empty() && !filtered {
                    return Err(());
                }
                self.note(line.trim());
                Ok(())
            }
            Place::AfterExcerpt if line.starts_with("  ") && !line.starts_with("   ") => {
                self.related(line.trim());
                Ok(())
            }
            Place::Related if indented => {
                if let Some((_, last)) = &mut self.related {
                    *last = Some(line.trim().to_owned());
                }
                Ok(())
            }
            _ => Err(()),
        }
    }

    /// `file:l:c - message` (tsc 7), or `file:l:c` alone (tsc 5, message after the excerpt).
    fn related(&mut self, text: &str) {
        self.place = Place::Related;
        if text.contains(" - ") {
            self.note(text);
        } else {
            self.related = Some((text.to_owned(), None));
        }
    }

    fn close_related(&mut self) {
        if let Some((at, message)) = self.related.take() {
            match message {
                Some(message) => self.note(&format!("{at} - {message}")),
                None => self.note(&at),
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
}

/// A row of the pretty layout's closing table: `     4  src/a.ts:1`.
fn is_table_row(line: &str) -> bool {
    number(line.trim_start()).is_some_and(|(_, rest)| rest.starts_with("  "))
}

/// A message's first line in either layout; sets `pretty` when it is the pretty one.
fn header(line: &str, pretty: &mut bool) -> Option<Diagnostic> {
    if let Some(record) = body(line, None) {
        return Some(record);
    }
    if let Some((at, rest)) = plain_location(line) {
        return body(rest, Some(at));
    }
    let (at, rest) = line.split_once(" - ")?;
    let (file, rest_at) = at.rsplit_once(':')?;
    let (file, row) = file.rsplit_once(':')?;
    let line_no = number(row).filter(|(_, r)| r.is_empty())?.0;
    let column = number(rest_at).filter(|(_, r)| r.is_empty())?.0;
    let record = body(rest, Some((file, line_no, column)))?;
    *pretty = true;
    Some(record)
}

/// `file(line,col): ` at the start of a plain-layout line, and what follows.
fn plain_location(line: &str) -> Option<((&str, u64, u64), &str)> {
    let (at, rest) = line.split_once("): ")?;
    let (file, numbers) = at.rsplit_once('(')?;
    let (row, column) = numbers.split_once(',')?;
    let row = number(row).filter(|(_, r)| r.is_empty())?.0;
    let column = number(column).filter(|(_, r)| r.is_empty())?.0;
    (!file.is_empty()).then_some(((file, row, column), rest))
}

/// `error TS2322: message`, at `at`.
fn body(text: &str, at: Option<(&str, u64, u64)>) -> Option<Diagnostic> {
    let (word, rest) = text.split_once(" TS")?;
    let severity = match word {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        "message" => Severity::Info,
        "suggestion" => Severity::Help,
        _ => return None,
    };
    let (code, rest) = number(rest)?;
    let message = rest.strip_prefix(':')?.trim();
    Some(Diagnostic {
        severity,
        message: message.to_owned(),
        code: Some(format!("TS{code}")),
        file: at.map(|(file, _, _)| file.to_owned()),
        line: at.map(|(_, line, _)| line),
        column: at.map(|(_, _, column)| column),
        notes: Vec::new(),
    })
}

#[cfg(test)]
#[path = "tsc_tests.rs"]
mod tests;
