//! gcc's and clang's output read line by line in context: context lines (`In function`, an
//! include chain, `required from here`) held for the message they introduce, `note:` lines
//! joined to the message before them, the excerpt after a located message skipped, the
//! linker's lines read as its messages, the closing lines kept as the summary; and the JSON
//! format (`-fdiagnostics-format=json`), one compilation's messages per line.

use serde::Deserialize;

use super::shapes::{
    Located, is_gutter, is_linker, is_tool, located, note_text, place, record, section_located,
    severity, strip_end,
};
use crate::diagnostics::shared::{MAX_NOTE_CHARS, MAX_NOTES, clip, quote};
use crate::diagnostics::{Diagnostic, Severity};

#[derive(Default)]
pub(super) struct Reader {
    pub(super) records: Vec<Diagnostic>,
    /// Context read before the message it introduces (`In function 'main'`).
    context: Vec<String>,
    /// An `In file included from` chain may continue on the next line.
    including: bool,
    /// The last line was a located message or note: unknown lines are its source excerpt.
    excerpt: bool,
    /// A linker line was read: `file:line: message` lines without severity are the linker's.
    linking: bool,
    pub(super) summary: Option<String>,
    /// Clang's `N warnings and M errors generated.`, as (errors, warnings).
    pub(super) generated: Option<(u64, u64)>,
    /// Clang's own lines were seen (`cc` may be clang).
    pub(super) clang: bool,
}

impl Reader {
    pub(super) fn line(&mut self, line: &str) -> Result<(), ()> {
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
    pub(super) fn json_line(&mut self, line: &str) -> Result<(), String> {
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
#[path = "reader_tests.rs"]
mod tests;
