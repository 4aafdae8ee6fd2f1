//! Readers of one line of pytest's output each: a section title, a block header, a line inside
//! a failure's block, a short-summary or `-v` result line, the closing line. A leaf: what the
//! lines mean together is `reading`'s business.

/// The counts of pytest's closing line.
#[derive(Default)]
pub(super) struct Summary {
    pub(super) passed: u64,
    pub(super) failed: u64,
    pub(super) skipped: u64,
    pub(super) errors: u64,
    pub(super) seconds: f64,
}

/// One `___ name ___` block of the `FAILURES` or `ERRORS` section.
#[derive(Default)]
pub(super) struct Block<'a> {
    /// `E ` lines, as printed.
    pub(super) raised: Vec<&'a str>,
    /// The last `file:line:` line.
    pub(super) location: Option<(&'a str, u64)>,
    /// `File "path", line N` inside the `E ` lines (a syntax error's).
    pub(super) raised_at: Option<(&'a str, u64)>,
    /// Past the traceback: `--- Captured stdout call ---` and the test's own output follow.
    captured: bool,
}

/// A failure named by the short summary or `-v`: node id, whether it errored, its one-line
/// message.
pub(super) struct Named<'a> {
    pub(super) id: &'a str,
    pub(super) error: bool,
    pub(super) message: Option<&'a str>,
}

/// `=== FAILURES ===`, `=== short test summary info ===`, `!!! Interrupted: … !!!`: the title.
pub(super) fn section_title(line: &str) -> Option<&str> {
    let fence = line.chars().next().filter(|c| *c == '=' || *c == '!')?;
    let title = line.trim_matches(fence);
    let inner = title.strip_prefix(' ')?.strip_suffix(' ')?;
    (line.ends_with(fence) && !inner.is_empty()).then_some(inner)
}

/// `____ TestGroup.test_param[2] ____`: the name.
pub(super) fn block_header(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("___")?.trim_start_matches('_');
    let inner = inner.strip_suffix("___")?.trim_end_matches('_');
    let name = inner.strip_prefix(' ')?.strip_suffix(' ')?;
    (!name.is_empty()).then_some(name)
}

pub(super) fn read_block_line<'a>(block: &mut Block<'a>, line: &'a str) {
    if block.captured || (line.starts_with("---") && line.contains(" Captured ")) {
        block.captured = true;
    } else if let Some(raised) = line
        .strip_prefix('E')
        .filter(|r| r.is_empty() || r.starts_with(' '))
    {
        block.raised.push(raised);
        if let Some(at) = raised.trim_start().strip_prefix("File \"")
            && let Some((path, rest)) = at.split_once("\", line ")
        {
            let number = rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap_or("");
            if let Ok(number) = number.parse() {
                block.raised_at = Some((path, number));
            }
        }
    } else if let Some(location) = location(line) {
        block.location = Some(location);
    }
}

/// `test_x.py:10: AssertionError` or `test_x.py:10: in test_y`: file and line.
fn location(line: &str) -> Option<(&str, u64)> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (file_line, _) = line
        .split_once(": ")
        .or_else(|| line.strip_suffix(':').map(|l| (l, "")))?;
    let (file, number) = file_line.rsplit_once(':')?;
    let number = number.parse().ok()?;
    (!file.is_empty() && !file.contains(' ')).then_some((file, number))
}

/// `FAILED test_x.py::test_y - AssertionError: boom`, `ERROR test_x.py`.
pub(super) fn summary_entry(line: &str) -> Option<Named<'_>> {
    let (error, rest) = match line.strip_prefix("FAILED ") {
        Some(rest) => (false, rest),
        None => (true, line.strip_prefix("ERROR ")?),
    };
    let (id, message) = split_message(rest);
    Some(Named { id, error, message })
}

/// Splits `id - message` at the first ` - ` outside the brackets of a parametrized id.
fn split_message(text: &str) -> (&str, Option<&str>) {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 => {
                if let Some(message) = text.get(i..).and_then(|t| t.strip_prefix(" - ")) {
                    return (text.get(..i).unwrap_or(text), Some(message));
                }
            }
            _ => {}
        }
    }
    (text, None)
}

/// `-v`'s `test_x.py::test_y FAILED   [ 20%]`.
pub(super) fn verbose_result(line: &str) -> Option<Named<'_>> {
    let (id, error) = match line.split_once(" FAILED") {
        Some((id, _)) => (id, false),
        None => (line.split_once(" ERROR")?.0, true),
    };
    (id.contains("::") && !id.starts_with(char::is_whitespace)).then_some(Named {
        id,
        error,
        message: None,
    })
}

/// The closing line, with or without its `=` fence: `3 failed, 5 passed, 1 skipped, 1 xfailed,
/// 2 warnings in 0.12s`, `no tests ran in 0.01s`, `2 errors in 1.20s (0:00:01)`.
pub(super) fn closing_line(line: &str) -> Option<Summary> {
    let text = line.trim_matches('=').trim();
    let (counts, time) = text.rsplit_once(" in ")?;
    let seconds = time.split(' ').next()?.strip_suffix('s')?;
    let mut summary = Summary {
        seconds: seconds
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)?,
        ..Summary::default()
    };
    if counts == "no tests ran" {
        return Some(summary);
    }
    for part in counts.split(", ") {
        let (number, word) = part.split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match word {
            "passed" | "xpassed" => summary.passed += number,
            "failed" => summary.failed += number,
            "skipped" | "xfailed" => summary.skipped += number,
            "error" | "errors" => summary.errors += number,
            "deselected" | "warning" | "warnings" | "rerun" | "reruns" | "subtests passed" => {}
            _ => return None,
        }
    }
    Some(summary)
}
