//! What the diagnostics parsers share when they read and refuse: how long a note and how many
//! notes are kept, a line quoted in a refusal, leading digits, and why an output without a
//! message is not an empty result. A leaf, so that no parser imports another for these.

use crate::Output;

/// Notes kept per message: the first ones say what matters; C++ candidate lists run long.
pub(crate) const MAX_NOTES: usize = 10;

/// The longest note kept, in characters: a linker's command line can run to kilobytes.
pub(crate) const MAX_NOTE_CHARS: usize = 500;

/// A note no longer than [`MAX_NOTE_CHARS`], marked with `…` when cut.
pub(crate) fn clip(note: &str) -> String {
    crate::text::clip(note, MAX_NOTE_CHARS)
}

/// Why an output without a single message is not an empty `Diagnostics`, if it is not.
pub(crate) fn no_message(tool: &str, out: &Output<'_>, filtered: bool) -> Option<String> {
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
pub(crate) fn quote(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", line.get(..at).unwrap_or_default()),
        None => line.to_owned(),
    }
}

/// Leading decimal digits as a number, and what follows them.
pub(crate) fn number(text: &str) -> Option<(u64, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let value = text.get(..end)?.parse().ok()?;
    Some((value, text.get(end..)?))
}

#[cfg(test)]
#[path = "shared_tests.rs"]
mod tests;
