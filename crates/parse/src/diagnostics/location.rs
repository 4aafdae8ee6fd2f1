//! Where a message points: `file:line:column` (the column may be missing) as go, gcc-style
//! tools and rustc (its short format, its ` --> ` lines) print it. The go and rustc parsers
//! both read it; it lives here, below both, so that neither imports the other.

use crate::text::number;

/// `file:line:column: rest` or `file:line: rest` at the start of `line`, as go, gcc and
/// rustc's short format print it. The first `: ` after a `:number` ends the location, so a
/// file name may hold colons and spaces.
pub(crate) fn located(line: &str) -> Option<(&str, u64, Option<u64>, &str)> {
    if line.starts_with([' ', '\t']) {
        return None;
    }
    line.match_indices(": ").find_map(|(at, _)| {
        let (file, number, column) = file_line_column(line.get(..at)?)?;
        Some((file, number, column, line.get(at + 2..)?))
    })
}

/// `src/main.rs:4:9` or `main.go:4` (a file name may hold colons: numbers are read from the
/// right).
pub(crate) fn file_line_column(text: &str) -> Option<(&str, u64, Option<u64>)> {
    let (rest, last) = text.rsplit_once(':')?;
    let last = number(last)?;
    match rest.rsplit_once(':') {
        Some((file, line)) => match number(line) {
            Some(line) if !file.is_empty() => Some((file, line, Some(last))),
            Some(_) => None,
            // All digits but too large: not a file name either.
            None if is_digits(line) => None,
            None => Some((rest, last, None)),
        },
        None => (!rest.is_empty()).then_some((rest, last, None)),
    }
}

fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
#[path = "location_tests.rs"]
mod tests;
