//! rustc's messages read in either format, line by line: human blocks (a header, its ` --> `
//! location, `= note:` and `help:` lines as notes, a blank line closing it; cargo's `Caused by:`
//! explanations) and JSON lines (level, code, the primary span, the children as notes). One
//! reader for both, so that `2>&1` and `json-render-diagnostics` (the formats mixed) work.

use serde_json::Value;

use super::lines::{header, is_chatter, is_status, lint_name, summary_line};
use crate::diagnostics::location::file_line_column;
use crate::diagnostics::shared::clip;
use crate::diagnostics::{Diagnostic, Severity};

/// Notes kept per message: the first ones say what matters; trait-bound chains can run long.
const MAX_NOTES: usize = 10;

#[derive(Default)]
pub(super) struct Reader {
    pub(super) records: Vec<Diagnostic>,
    /// Cargo's and rustc's closing lines, in order.
    pub(super) summary: Vec<String>,
    /// A human block is open: its header was read and no blank line came since.
    open: bool,
    /// The open block's primary location was read, or a child (`help:`) began.
    located: bool,
    /// After cargo's `Caused by:`: indented lines explain the last message.
    caused_by: bool,
    pub(super) saw_finished: bool,
    /// `build-finished`'s `success`, in JSON.
    pub(super) finished: Option<bool>,
    /// The first line (1-based) in neither format.
    pub(super) unknown: Option<usize>,
}

impl Reader {
    pub(super) fn human_line(&mut self, n: usize, line: &str) {
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
    pub(super) fn json_line(&mut self, line: &str) -> Result<(), String> {
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

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
