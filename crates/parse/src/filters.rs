//! The later stages of a pipeline that keep the producer's format: they drop, keep or reorder
//! whole lines, and change none. `ps aux | grep nginx` is still `ps aux` output, without its
//! header; `ls -l | head` is still `ls -l`. Anything that rewrites lines (`awk`, `cut`, `sed`,
//! `grep -c`, `grep -n`, `head -c`) makes the output unknown, and unknown is never guessed at.

use crate::Stage;

/// `Ok(true)`: lines may be dropped or reordered. `Ok(false)`: the stage passes every line as
/// it is. `Err`: the stage changes the format; the sentence says how.
pub(crate) fn keeps_format(stage: &Stage) -> Result<bool, String> {
    let program = stage.program.as_str();
    let refuse = |what: &str| {
        Err(format!(
            "`{program}{what}` after the command changes its output format"
        ))
    };
    match program {
        "grep" | "egrep" | "fgrep" => match first_flag(&stage.args, GREP_KEEPS, GREP_TAKES_VALUE) {
            Some(bad) => refuse(&format!(" {bad}")),
            None => Ok(true),
        },
        "head" | "tail" => {
            for arg in &stage.args {
                let flag = arg.as_str();
                let by_lines = flag.starts_with("-n")
                    || flag.starts_with("--lines")
                    || flag
                        .strip_prefix('-')
                        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty())
                    || !flag.starts_with('-')
                    || flag == "-q"
                    || flag == "--quiet";
                if !by_lines {
                    return refuse(&format!(" {flag}"));
                }
            }
            Ok(true)
        }
        "sort" => match stage.args.iter().find(|a| {
            a.starts_with("-o")
                || a.starts_with("--output")
                || *a == "-z"
                || *a == "--zero-terminated"
        }) {
            Some(bad) => refuse(&format!(" {bad}")),
            None => Ok(true),
        },
        "uniq" => match stage.args.iter().find(|a| a.starts_with('-')) {
            Some(bad) => refuse(&format!(" {bad}")),
            None => Ok(true),
        },
        "cat" | "tee" => match stage
            .args
            .iter()
            .find(|a| a.starts_with('-') && *a != "-" && *a != "-a")
        {
            Some(bad) => refuse(&format!(" {bad}")),
            None => Ok(false),
        },
        _ => Err(format!(
            "`{program}` after the command may rewrite its output; only grep, head, tail, sort, uniq, cat and tee keep it parseable"
        )),
    }
}

/// Single-letter grep options that keep each line as it is.
const GREP_KEEPS: &str = "viEFGPwxsaIUy";
/// Single-letter grep options that take a value (which keeps the lines too).
const GREP_TAKES_VALUE: &str = "efm";

/// The first option in `args` outside `keeps` and `takes_value`, as written.
fn first_flag(args: &[String], keeps: &str, takes_value: &str) -> Option<String> {
    let mut skip_value = false;
    for arg in args {
        if skip_value {
            skip_value = false;
            continue;
        }
        if arg == "--" {
            return None;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            let fine = matches!(
                name,
                "invert-match"
                    | "ignore-case"
                    | "extended-regexp"
                    | "fixed-strings"
                    | "basic-regexp"
                    | "perl-regexp"
                    | "word-regexp"
                    | "line-regexp"
                    | "no-messages"
                    | "text"
                    | "color"
                    | "colour"
                    | "line-buffered"
                    | "regexp"
                    | "max-count"
                    | "file"
            );
            if !fine {
                return Some(arg.clone());
            }
            if !long.contains('=') && matches!(name, "regexp" | "max-count" | "file") {
                skip_value = true;
            }
            continue;
        }
        let Some(short) = arg.strip_prefix('-').filter(|s| !s.is_empty()) else {
            continue;
        };
        for (i, c) in short.char_indices() {
            if takes_value.contains(c) {
                // `-e PAT` or `-ePAT`: the rest of the word, or the next word, is the value.
                skip_value = i + c.len_utf8() == short.len();
                break;
            }
            if c.is_ascii_digit() || !keeps.contains(c) {
                return Some(arg.clone());
            }
        }
    }
    None
}

#[cfg(test)]
#[path = "filters_tests.rs"]
mod tests;
