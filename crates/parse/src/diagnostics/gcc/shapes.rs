//! The shapes of gcc's and clang's lines, each read on its own: a located message, a linker's
//! section location, a severity word, a tool or linker prefix, the excerpt's gutter; and the
//! record a message becomes (its `[-Wflag]` as the code, a note placed when it is elsewhere).
//! A leaf: which shape means what in context is the reader's business.

use crate::diagnostics::shared::number;
use crate::diagnostics::{Diagnostic, Severity};

/// A message with its `[-Wflag]` moved into `code`.
pub(super) fn record(
    severity: Severity,
    message: &str,
    at: Option<(&str, u64, Option<u64>)>,
) -> Diagnostic {
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
pub(super) fn note_text(
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

pub(super) fn place(file: &str, line: Option<u64>, column: Option<u64>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!("{file}:{line}:{column}"),
        (Some(line), None) => format!("{file}:{line}"),
        _ => file.to_owned(),
    }
}

/// The severity a message starts with, and the message after it.
pub(super) fn severity(text: &str) -> Option<(Severity, &str)> {
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
pub(super) fn is_tool(word: &str) -> bool {
    !word.is_empty() && word.len() <= 40 && !word.contains(['.', '/', ' ', ':', '\\'])
}

/// `/usr/bin/ld`, `ld.gold`, `ld.lld`, `x86_64-linux-gnu-ld`, `mold`.
pub(super) fn is_linker(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    !word.contains(' ')
        && (base == "ld"
            || base.starts_with("ld.")
            || base.ends_with("-ld")
            || base == "mold"
            || base == "lld")
}

/// gcc's excerpt gutter: `    5 |     x = 1;`, `      |     ^`, `  +++ |+#include <stdio.h>`.
pub(super) fn is_gutter(line: &str) -> bool {
    let rest = line.trim_start();
    let rest = rest
        .strip_prefix("+++")
        .unwrap_or_else(|| rest.trim_start_matches(|c: char| c.is_ascii_digit()));
    rest.trim_start_matches(' ').starts_with('|')
        && (rest.starts_with(' ') || rest.starts_with('|'))
}

pub(super) fn strip_end(text: &str) -> &str {
    text.trim_end().trim_end_matches([',', ':'])
}

/// (file, line, column, rest) of `file:line:column: rest` or `file:line: rest`.
pub(super) type Located<'a> = (&'a str, u64, Option<u64>, &'a str);

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
pub(super) fn section_located(line: &str) -> Option<(&str, &str)> {
    let (file, rest) = line.split_once(":(")?;
    let (_section, message) = rest.split_once("): ")?;
    (!file.is_empty() && !file.contains(": ") && !file.starts_with(' ')).then_some((file, message))
}
