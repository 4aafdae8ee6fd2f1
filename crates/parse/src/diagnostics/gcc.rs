//! gcc and clang (`gcc`, `g++`, `cc`, `c++`, `clang`, `clang++`, versioned or cross names such
//! as `gcc-12` or `x86_64-linux-gnu-gcc`) compiling and linking: their messages as
//! `Diagnostics`.
//!
//! Both print one message per line on stderr, `file:line:column: severity: message [-Wflag]`,
//! and around it lines that are not messages: context (`a.c: In function 'main':`, `In file
//! included from`, `required from here`), the source excerpt with its caret, the linker's
//! lines (`/usr/bin/ld: x.o: in function `main':`, then `a.c:(.text+0x9): undefined reference
//! to `foo'`) and closing lines (`compilation terminated.`, clang's `2 errors generated.`).
//! Every line is classified by its shape; context becomes notes of the message it introduces,
//! and `note:` lines become notes of the message before them, since gcc and clang print a
//! note right after what it explains. The excerpt is source code, so anything may be in it:
//! gcc marks it with a `|` gutter, clang does not, which is why any line right after a located
//! message that has no known shape is taken as excerpt. Elsewhere an unknown line makes the
//! parser refuse. With `-fdiagnostics-format=json` (gcc 10+) each compilation prints its
//! messages as one JSON array on a line of its own, read as such; the linker still writes
//! text, read as above.

use serde::Deserialize;

use super::{Diagnostic, Diagnostics, MAX_NOTE_CHARS, Severity, clip};
use crate::{Context, Output, Parser, Stage, Typed};

/// Notes kept per message: the first ones say what matters; C++ candidate lists run long.
pub(super) const MAX_NOTES: usize = 10;

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let tool = compiler(&stage.program)?;
    let json = json_format(&stage.args)?;
    Some(Box::new(GccParser { tool, json }))
}

/// `gcc` or `clang` for a compiler driver's name, whatever its version suffix or target prefix.
fn compiler(program: &str) -> Option<&'static str> {
    let name = match program.rsplit_once('-') {
        Some((name, version))
            if !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.') =>
        {
            name
        }
        _ => program,
    };
    let base = name.rsplit('-').next().unwrap_or(name);
    match base {
        "clang" | "clang++" => Some("clang"),
        "gcc" | "g++" | "cc" | "c++" | "c89" | "c99" => Some("gcc"),
        _ => None,
    }
}

/// `Some(json)` when every flag leaves the messages in a format read here; `json` for
/// `-fdiagnostics-format=json`.
fn json_format(args: &[String]) -> Option<bool> {
    // They print something else (preprocessed source, dependencies, versions, statistics,
    // fix-it lines, a patch) or move the columns.
    const REFUSED: &str = "-E -M -MM -v --verbose -### --version --help -dumpversion \
        -dumpfullversion -dumpmachine -dumpspecs -Q -H -time -ftime-report -fmem-report \
        -fdiagnostics-parseable-fixits -fdiagnostics-print-source-range-info \
        -fdiagnostics-generate-patch -fdiagnostics-show-template-tree -fproc-stat-report";
    const REFUSED_PREFIXES: &str = "--help= -print- --print- -fopt-info \
        -fdiagnostics-add-output -fdiagnostics-set-output";
    let mut json = false;
    let mut previous = "";
    for arg in args.iter().map(String::as_str) {
        let linker_word = match previous {
            "-Xlinker" => Some(arg),
            _ => None,
        };
        if (previous == "-o" && arg == "-") || arg == "-o-" {
            return None;
        }
        previous = arg;
        if let Some(word) = linker_word {
            if chatty_linker_flag(word) {
                return None;
            }
            continue;
        }
        if let Some(format) = arg.strip_prefix("-fdiagnostics-format=") {
            json = match format {
                "text" | "clang" => false,
                "json" | "json-stderr" => true,
                _ => return None,
            };
            continue;
        }
        if let Some(words) = arg.strip_prefix("-Wl,") {
            if words.split(',').any(chatty_linker_flag) {
                return None;
            }
            continue;
        }
        let moved = arg
            .strip_prefix("-fdiagnostics-column-origin=")
            .is_some_and(|n| n != "1")
            || arg
                .strip_prefix("-fmessage-length=")
                .is_some_and(|n| n != "0")
            || (arg.starts_with("-fdump-")
                && (arg.ends_with("=stderr") || arg.ends_with("=stdout")));
        let refused = REFUSED.split_whitespace().any(|r| r == arg)
            || REFUSED_PREFIXES
                .split_whitespace()
                .any(|p| arg.starts_with(p));
        if moved || refused {
            return None;
        }
    }
    Some(json)
}

/// Linker options that print maps, traces or versions among the messages.
fn chatty_linker_flag(word: &str) -> bool {
    const CHATTY: &str = "-v -V --verbose --version -t --trace -M --print-map --stats --cref \
        --print-memory-usage";
    CHATTY.split_whitespace().any(|flag| flag == word)
}

struct GccParser {
    tool: &'static str,
    json: bool,
}

impl Parser for GccParser {
    fn type_name(&self) -> &'static str {
        "Diagnostics"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        let mut reader = Reader::default();
        // Messages go to stderr; with `2>&1` they are all on stdout.
        for (n, line) in out.stdout.lines().chain(out.stderr.lines()).enumerate() {
            if self.json && line.starts_with('[') {
                reader
                    .json_line(line)
                    .map_err(|why| format!("line {}: {why}", n + 1))?;
            } else {
                reader.line(line).map_err(|()| {
                    format!(
                        "line {} is not a {} message: `{}`",
                        n + 1,
                        self.tool,
                        quote(line)
                    )
                })?;
            }
        }
        if reader.records.is_empty()
            && reader.summary.is_none()
            && let Some(why) = no_message(self.tool, out, filtered)
        {
            return Err(why);
        }
        let tool = if reader.clang { "clang" } else { self.tool };
        let mut result = Diagnostics::counted(tool, reader.records, reader.summary);
        // A filter may have dropped messages; clang's closing line still counts them all.
        if let (true, Some((errors, warnings))) = (filtered, reader.generated) {
            (result.summary.errors, result.summary.warnings) = (errors, warnings);
        }
        Ok(Typed::new(result))
    }
}

/// Why an output without a single message is not an empty `Diagnostics`, if it is not.
pub(super) fn no_message(tool: &str, out: &Output<'_>, filtered: bool) -> Option<String> {
    let first = out
        .stderr
        .lines()
        .chain(out.stdout.lines())
        .find(|l| !l.trim().is_empty())
        .map(quote);
    match (out.exit_code, first) {
        (Some(0), _) => None,
        _ if filtered => Some(format!(
            "the filter after `{tool}` left none of its messages"
        )),
        (Some(code), Some(first)) => {
            Some(format!("`{tool}` exited {code} without a message: {first}"))
        }
        (Some(code), None) => Some(format!("`{tool}` exited {code} without printing anything")),
        (None, _) => Some(format!("`{tool}` did not finish and printed no message")),
    }
}

/// At most 80 characters of a line, for a refusal.
pub(super) fn quote(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", line.get(..at).unwrap_or_default()),
        None => line.to_owned(),
    }
}

#[derive(Default)]
struct Reader {
    records: Vec<Diagnostic>,
    /// Context read before the message it introduces (`In function 'main'`).
    context: Vec<String>,
    /// An `In file included from` chain may continue on the next line.
    including: bool,
    /// The last line was a located message or note: unknown lines are its source excerpt.
    excerpt: bool,
    /// A linker line was read: `file:line: message` lines without severity are the linker's.
    linking: bool,
    summary: Option<String>,
    /// Clang's `N warnings and M errors generated.`, as (errors, warnings).
    generated: Option<(u64, u64)>,
    /// Clang's own lines were seen (`cc` may be clang).
    clang: bool,
}

impl Reader {
    fn line(&mut self, line: &str) -> Result<(), ()> {
        if line.trim().is_empty() || is_gutter(line) {
            return Ok(());
        }
        let including = std::mem::take(&mut self.including);
        if let Some(from) = line.strip_prefix("In file included from ") {
            self.add_context(format!("In file included from {}", strip_end(from)));
            self.including = from.ends_with(',');
            return Ok(());
        }
        if let (true, Some(from)) = (including, line.trim_start().strip_prefix("from ")) {
            if let Some(chain) = self.context.last_mut().filter(|c| c.len() < MAX_NOTE_CHARS) {
                chain.push_str(", from ");
                chain.push_str(strip_end(from));
            }
            self.including = from.ends_with(',');
            return Ok(());
        }
        if self.closing(line) {
            self.excerpt = false;
            return Ok(());
        }
        if let Some(note) = line.strip_prefix(">>> ") {
            // lld and mold explain an error on the lines after it.
            self.note(note.trim());
            return Ok(());
        }
        if let Some((severity, message)) = severity(line) {
            // Unlocated: clang's `fatal error: too many errors emitted`. In an excerpt, such a
            // line is source code (a label named `error:`).
            if !self.excerpt || message.starts_with("too many errors emitted") {
                self.push(severity, message, None);
                return Ok(());
            }
        }
        if let Some((prefix, rest)) = line.split_once(": ") {
            if is_linker(prefix) {
                self.linker(rest);
                return Ok(());
            }
            if let (true, Some((severity, message))) = (is_tool(prefix), severity(rest)) {
                self.clang |= prefix.starts_with("clang");
                self.push(severity, message, None);
                return Ok(());
            }
            if let Some(context) = rest
                .strip_suffix(':')
                .filter(|r| r.starts_with("In ") || r.starts_with("At "))
            {
                self.add_context(context.to_owned());
                self.excerpt = false;
                return Ok(());
            }
        }
        if let Some(located) = located(line) {
            return self.located(located);
        }
        if let Some((file, rest)) = section_located(line) {
            self.linked(Some(file), None, rest);
            return Ok(());
        }
        if self.excerpt { Ok(()) } else { Err(()) }
    }

    /// `compilation terminated.`, clang's count, `cc1: all warnings being treated as errors`.
    fn closing(&mut self, line: &str) -> bool {
        if let Some(counts) = line.strip_suffix(" generated.") {
            let (mut errors, mut warnings) = (None, None);
            for part in counts.split(" and ") {
                let (n, what) = part.split_once(' ').unwrap_or((part, ""));
                let n = n.parse::<u64>().ok();
                match what {
                    "error" | "errors" => errors = n,
                    "warning" | "warnings" => warnings = n,
                    _ => return false,
                }
            }
            if errors.is_none() && warnings.is_none() {
                return false;
            }
            self.generated = Some((errors.unwrap_or(0), warnings.unwrap_or(0)));
            self.clang = true;
        } else if !(line == "compilation terminated."
            || line.split_once(": ").is_some_and(|(tool, rest)| {
                is_tool(tool) && rest.ends_with(" warnings being treated as errors")
            }))
        {
            return false;
        }
        self.summary = Some(line.to_owned());
        true
    }

    fn located(&mut self, (file, line, column, rest): Located<'_>) -> Result<(), ()> {
        if let Some((severity, message)) = severity(rest) {
            self.push(severity, message, Some((file, line, column)));
            self.excerpt = true;
        } else if rest.starts_with("  ") && !rest.trim().is_empty() {
            // `t.cpp:6:6:   required from here`: the chain that led to the next message.
            let at = place(file, Some(line), column);
            self.add_context(format!("{at}: {}", rest.trim()));
            self.excerpt = true;
        } else if self.linking {
            self.linked(Some(file), Some(line), rest);
        } else if !self.excerpt {
            return Err(());
        }
        Ok(())
    }

    /// A line of the linker's after its `ld: ` prefix.
    fn linker(&mut self, rest: &str) {
        self.linking = true;
        self.excerpt = false;
        if let Some((_object, function)) = rest
            .strip_suffix(':')
            .and_then(|r| r.split_once(": in function "))
        {
            self.add_context(format!("in function {function}"));
        } else if let Some((file, rest)) = section_located(rest) {
            self.linked(Some(file), None, rest);
        } else if let Some((file, line, _, rest)) =
            located(rest).filter(|l| severity(l.3).is_none())
        {
            self.linked(Some(file), Some(line), rest);
        } else {
            self.linked(None, None, rest);
        }
    }

    /// A linker message: an error unless it says otherwise.
    fn linked(&mut self, file: Option<&str>, line: Option<u64>, message: &str) {
        self.linking = true;
        self.excerpt = false;
        let (severity, message) = severity(message).unwrap_or((Severity::Error, message.trim()));
        let mut record = record(
            severity,
            message,
            file.map(|f| (f, line.unwrap_or(0), None)),
        );
        record.line = line;
        record.notes = self.take_context();
        self.records.push(record);
    }

    fn push(&mut self, severity: Severity, message: &str, at: Option<(&str, u64, Option<u64>)>) {
        self.excerpt = false;
        let parent = self
            .records
            .last_mut()
            .filter(|p| severity == Severity::Note && p.severity != Severity::Note);
        if let Some(parent) = parent {
            // The context before a note (an include chain) was the note's own; its location
            // says as much.
            self.context.clear();
            let text = note_text(parent, "note", message, at);
            if parent.notes.len() < MAX_NOTES {
                parent.notes.push(clip(&text));
            }
            return;
        }
        let mut record = record(severity, message, at);
        record.notes = self.take_context();
        self.records.push(record);
    }

    /// Context for the next message; past [`MAX_NOTES`] it would be cut anyway.
    fn add_context(&mut self, context: String) {
        if self.context.len() < MAX_NOTES {
            self.context.push(context);
        }
    }

    fn take_context(&mut self) -> Vec<String> {
        let context = std::mem::take(&mut self.context);
        context.iter().map(String::as_str).map(clip).collect()
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

    /// One compilation's messages in gcc's JSON format.
    fn json_line(&mut self, line: &str) -> Result<(), String> {
        let messages: Vec<JsonMessage> =
            serde_json::from_str(line).map_err(|e| format!("not gcc's JSON messages: {e}"))?;
        for message in messages {
            let (severity, _) = severity(&format!("{}: ", message.kind))
                .ok_or_else(|| format!("unknown message kind `{}`", quote(&message.kind)))?;
            let text = match &message.option {
                Some(option) => format!("{} [{option}]", message.message),
                None => message.message.clone(),
            };
            self.push(severity, &text, first_caret(&message.locations));
            for child in &message.children {
                if let Some(parent) = self
                    .records
                    .last_mut()
                    .filter(|p| p.notes.len() < MAX_NOTES)
                {
                    let at = first_caret(&child.locations);
                    let note = note_text(parent, &child.kind, &child.message, at);
                    parent.notes.push(clip(&note));
                }
            }
        }
        Ok(())
    }
}

/// A message with its `[-Wflag]` moved into `code`.
fn record(severity: Severity, message: &str, at: Option<(&str, u64, Option<u64>)>) -> Diagnostic {
    let message = message.trim();
    let (message, code) = match message
        .strip_suffix(']')
        .and_then(|m| m.rsplit_once(" ["))
        .filter(|(_, code)| code.starts_with('-') && !code.contains(' '))
    {
        Some((message, code)) => (message.trim_end(), Some(code.to_owned())),
        None => (message, None),
    };
    Diagnostic {
        severity,
        message: message.to_owned(),
        code,
        file: at.map(|(file, _, _)| file.to_owned()),
        line: at.map(|(_, line, _)| line),
        column: at.and_then(|(_, _, column)| column),
        notes: Vec::new(),
    }
}

/// `note: message`, with the note's own location in front when it is elsewhere.
fn note_text(
    parent: &Diagnostic,
    kind: &str,
    message: &str,
    at: Option<(&str, u64, Option<u64>)>,
) -> String {
    let message = message.trim();
    match at {
        Some((file, line, column))
            if parent.file.as_deref() != Some(file) || parent.line != Some(line) =>
        {
            format!("{}: {kind}: {message}", place(file, Some(line), column))
        }
        _ => format!("{kind}: {message}"),
    }
}

fn place(file: &str, line: Option<u64>, column: Option<u64>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!("{file}:{line}:{column}"),
        (Some(line), None) => format!("{file}:{line}"),
        _ => file.to_owned(),
    }
}

/// The severity a message starts with, and the message after it.
fn severity(text: &str) -> Option<(Severity, &str)> {
    const WORDS: [(&str, Severity); 9] = [
        ("fatal error", Severity::Error),
        ("internal compiler error", Severity::Error),
        ("sorry, unimplemented", Severity::Error),
        ("error", Severity::Error),
        ("warning", Severity::Warning),
        ("note", Severity::Note),
        ("remark", Severity::Info),
        ("anachronism", Severity::Warning),
        ("debug", Severity::Info),
    ];
    WORDS.iter().find_map(|(word, severity)| {
        let rest = text.strip_prefix(word)?.strip_prefix(':')?;
        Some((*severity, rest.trim_start()))
    })
}

/// A program's name in front of its message (`gcc`, `cc1plus`, `collect2`, `clang-14`), not a
/// file's: no dot, no slash, no space.
fn is_tool(word: &str) -> bool {
    !word.is_empty() && word.len() <= 40 && !word.contains(['.', '/', ' ', ':', '\\'])
}

/// `/usr/bin/ld`, `ld.gold`, `ld.lld`, `x86_64-linux-gnu-ld`, `mold`.
fn is_linker(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    !word.contains(' ')
        && (base == "ld"
            || base.starts_with("ld.")
            || base.ends_with("-ld")
            || base == "mold"
            || base == "lld")
}

/// gcc's excerpt gutter: `    5 |     x = 1;`, `      |     ^`, `  +++ |+#include <stdio.h>`.
fn is_gutter(line: &str) -> bool {
    let rest = line.trim_start();
    let rest = rest
        .strip_prefix("+++")
        .unwrap_or_else(|| rest.trim_start_matches(|c: char| c.is_ascii_digit()));
    rest.trim_start_matches(' ').starts_with('|')
        && (rest.starts_with(' ') || rest.starts_with('|'))
}

fn strip_end(text: &str) -> &str {
    text.trim_end().trim_end_matches([',', ':'])
}

/// (file, line, column, rest) of `file:line:column: rest` or `file:line: rest`.
type Located<'a> = (&'a str, u64, Option<u64>, &'a str);

/// The first `:digits:` in the line ends the file name. A file name with `: ` in it is not
/// taken (that is a program's prefix, as in `gcc: error: x.c:3: ...`).
pub(super) fn located(line: &str) -> Option<Located<'_>> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    for (at, _) in line.match_indices(':') {
        let file = line.get(..at)?;
        let after = line.get(at + 1..)?;
        if file.is_empty() || after.starts_with(' ') {
            // Every later candidate would hold this `: ` in its file name.
            return None;
        }
        let Some((line_no, rest)) = number(after) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        if let Some((column, after_column)) = number(rest)
            && let Some(message) = after_column.strip_prefix(':')
        {
            let message = message.strip_prefix(' ').unwrap_or(message);
            return Some((file, line_no, Some(column), message));
        }
        if rest.is_empty() || rest.starts_with(' ') {
            return Some((file, line_no, None, rest.strip_prefix(' ').unwrap_or(rest)));
        }
    }
    None
}

/// The linker's `a.c:(.text+0x20): undefined reference to `foo'`.
fn section_located(line: &str) -> Option<(&str, &str)> {
    let (file, rest) = line.split_once(":(")?;
    let (_section, message) = rest.split_once("): ")?;
    (!file.is_empty() && !file.contains(": ") && !file.starts_with(' ')).then_some((file, message))
}

/// Leading decimal digits as a number, and what follows them.
pub(super) fn number(text: &str) -> Option<(u64, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let value = text.get(..end)?.parse().ok()?;
    Some((value, text.get(end..)?))
}

#[derive(Deserialize)]
struct JsonMessage {
    kind: String,
    message: String,
    #[serde(default)]
    option: Option<String>,
    #[serde(default)]
    locations: Vec<JsonLocation>,
    #[serde(default)]
    children: Vec<JsonChild>,
}

#[derive(Deserialize)]
struct JsonChild {
    kind: String,
    message: String,
    #[serde(default)]
    locations: Vec<JsonLocation>,
}

#[derive(Deserialize)]
struct JsonLocation {
    caret: Option<JsonPoint>,
}

#[derive(Deserialize)]
struct JsonPoint {
    file: String,
    line: u64,
    column: Option<u64>,
}

fn first_caret(locations: &[JsonLocation]) -> Option<(&str, u64, Option<u64>)> {
    let caret = locations.first()?.caret.as_ref()?;
    Some((caret.file.as_str(), caret.line, caret.column))
}

#[cfg(test)]
#[path = "gcc_tests.rs"]
mod tests;
