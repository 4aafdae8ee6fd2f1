//! The shapes of single lines of rustc's and cargo's human format: a message header (with the
//! short format's location in front), cargo's progress and closing lines, the chatter between
//! them, and the note that only names a lint. A leaf: what a line means in its block is the
//! reader's business.

use crate::diagnostics::location::located;
use crate::diagnostics::{Diagnostic, Severity};

/// Cargo's progress lines: a capitalised verb right-aligned to column 12 (`   Compiling x`).
pub(super) fn is_status(line: &str) -> bool {
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
pub(super) fn summary_line(line: &str) -> Option<&str> {
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
pub(super) fn is_chatter(line: &str) -> bool {
    line.starts_with("warning: build failed, waiting for other jobs")
        || line.starts_with("For more information about")
        || line.starts_with("Some errors have detailed explanations")
}

/// `error[E0308]: mismatched types`, or the short format's `src/a.rs:4:9: warning: ...`.
pub(super) fn header(line: &str) -> Option<Diagnostic> {
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
pub(super) fn lint_name(note: &str) -> Option<String> {
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
#[path = "lines_tests.rs"]
mod tests;
