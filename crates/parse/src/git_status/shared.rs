//! What the `git status` and `git log` parsers share: finding the subcommand after git's
//! global options, a failed git's own reason, and paths as git quotes them.

use crate::{Output, Stage};

/// An object name: 4 to 64 hex digits (SHA-1 or SHA-256, maybe abbreviated).
pub(crate) fn hex(word: &str) -> Option<&str> {
    ((4..=64).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_hexdigit())).then_some(word)
}

/// Two paths separated by a tab (a porcelain v2 rename, a `--name-status` line): a path
/// holding a tab is quoted, so the first tab outside quotes separates them.
pub(crate) fn tab_pair(text: &str) -> Option<(String, String)> {
    let (first, rest) = if text.starts_with('"') {
        unquote(text)?
    } else {
        let (first, rest) = text.split_once('\t')?;
        return Some((first.to_owned(), path_token(rest)?));
    };
    Some((first, path_token(rest.strip_prefix('\t')?)?))
}

/// `ORIG -> PATH`. The porcelain and short formats quote any path with a space, so the arrow
/// is unambiguous there; the long format does not, so a second arrow makes the pair unknown.
pub(crate) fn rename_pair(text: &str) -> Option<(String, String)> {
    let (orig, to) = if text.starts_with('"') {
        let (orig, rest) = unquote(text)?;
        (orig, rest.strip_prefix(" -> ")?)
    } else {
        let (orig, to) = text.split_once(" -> ")?;
        (orig.to_owned(), to)
    };
    if !to.starts_with('"') && to.contains(" -> ") {
        return None;
    }
    Some((orig, path_token(to)?))
}

/// A whole path: quoted (then nothing may follow the closing quote) or taken as printed. Git
/// quotes every path holding a `"`, so a leading quote always opens one.
pub(crate) fn path_token(text: &str) -> Option<String> {
    if text.starts_with('"') {
        let (path, rest) = unquote(text)?;
        rest.is_empty().then_some(path)
    } else {
        (!text.is_empty()).then(|| text.to_owned())
    }
}

/// A path as git's `quote_c_style` writes it: `"a\tb"`, `"\303\251.txt"`. Returns it and the
/// text after the closing quote. Octal escapes are bytes, decoded together as UTF-8.
pub(crate) fn unquote(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut bytes = Vec::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let path = String::from_utf8_lossy(&bytes).into_owned();
                return Some((path, body.get(i + 1..)?));
            }
            '\\' => {
                let byte = match chars.next()?.1 {
                    'a' => 7,
                    'b' => 8,
                    't' => b'\t',
                    'n' => b'\n',
                    'v' => 11,
                    'f' => 12,
                    'r' => b'\r',
                    '"' => b'"',
                    '\\' => b'\\',
                    high @ '0'..='3' => {
                        let mut value = high.to_digit(8)?;
                        for _ in 0..2 {
                            value = value * 8 + chars.next()?.1.to_digit(8)?;
                        }
                        u8::try_from(value).ok()?
                    }
                    _ => return None,
                };
                bytes.push(byte);
            }
            _ => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    None
}

/// The arguments after `git`, its global options and the subcommand `name`; `None` for
/// another subcommand or a global option not known to leave the output alone.
pub(crate) fn git_subcommand<'a>(stage: &'a Stage, name: &str) -> Option<&'a [String]> {
    if stage.program != "git" {
        return None;
    }
    let mut i = 0;
    while let Some(arg) = stage.args.get(i) {
        let arg = arg.as_str();
        i += 1;
        match arg {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
            | "--attr-source" | "--shallow-file" => i += 1,
            "-p"
            | "--paginate"
            | "-P"
            | "--no-pager"
            | "--no-replace-objects"
            | "--no-lazy-fetch"
            | "--bare"
            | "--literal-pathspecs"
            | "--no-literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--no-advice" => {}
            _ if [
                "--git-dir=",
                "--work-tree=",
                "--namespace=",
                "--config-env=",
                "--attr-source=",
                "--exec-path=",
            ]
            .iter()
            .any(|p| arg.starts_with(p)) => {}
            _ if arg.starts_with('-') => return None,
            _ => return (arg == name).then(|| stage.args.get(i..).unwrap_or_default()),
        }
    }
    None
}

/// Refuses the output of a git that failed, with its own reason (`fatal: not a git
/// repository …`).
pub(crate) fn check_exit(out: &Output<'_>, command: &str) -> Result<(), String> {
    match out.exit_code {
        None | Some(0) => Ok(()),
        Some(code) => {
            let reason = out
                .stderr
                .lines()
                .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
                .or_else(|| out.stderr.lines().find(|l| !l.trim().is_empty()));
            Err(match reason {
                Some(reason) => format!(
                    "`{command}` failed (exit {code}): {}",
                    crate::text::clip(reason, 80)
                ),
                None => format!("`{command}` failed with exit code {code}"),
            })
        }
    }
}

/// "line N is not WHAT: `…`", the line clipped.
pub(crate) fn bad_line(n: usize, line: &str, what: &str) -> String {
    format!(
        "line {} is not {what}: `{}`",
        n + 1,
        crate::text::clip(line, 80)
    )
}
