//! Where a command runs, as far as the line shows (the caller's directory moved by each
//! `cd`), and what its words expand to there (`$VAR`, `~`, relative paths).

use super::*;

/// A command of the line with where it runs, as far as the line shows: the caller's directory,
/// then each `cd` before it.
pub(super) struct Located<'a> {
    pub(super) command: &'a SimpleCommand,
    pub(super) cwd: Option<String>,
    /// The directory is itself critical (`cd / && rm -rf *`), judged as `critical` says.
    pub(super) cwd_critical: bool,
}

/// Every command of `a` but the `cd`s, each with its directory. `critical` judges a directory
/// (after `~` is expanded against the caller's home).
pub(super) fn located<'a>(a: &'a Analysis, critical: impl Fn(&str) -> bool) -> Vec<Located<'a>> {
    walk_cds(a, critical).0
}

/// Where the line leaves its shell, as far as the line shows: the caller's directory moved by
/// each `cd`. `None` without a place, after a `cd` to an unknown directory (`cd $X`), or when a
/// subshell or substitution could have kept a `cd` to itself.
pub(crate) fn cwd_after(a: &Analysis, line: &str) -> Option<String> {
    if !a.exact || line.contains(['(', '`']) {
        return None;
    }
    walk_cds(a, |_| false).1
}

/// [`located`], and the directory after the last command.
pub(super) fn walk_cds<'a>(
    a: &'a Analysis,
    critical: impl Fn(&str) -> bool,
) -> (Vec<Located<'a>>, Option<String>) {
    let mut cwd = a.place.as_ref().map(|p| p.cwd.clone());
    let home = a.place.as_ref().and_then(|p| p.home.as_deref());
    let is_critical = |path: &str| critical(&home_relative(path, home));
    let mut cwd_critical = cwd.as_deref().is_some_and(is_critical);
    let mut out = Vec::new();
    for c in &a.commands {
        if matches!(
            c.program.as_str(),
            "cd" | "pushd" | "set-location" | "sl" | "chdir"
        ) {
            let dir = operands(c).next();
            cwd = match dir {
                None => home.map(ToOwned::to_owned),
                Some(dir) if dir == "-" => None, // the previous directory: not known here
                Some(dir) => in_dir(cwd.as_deref(), &expand_home(dir, home)),
            };
            cwd_critical = match dir {
                None => c.dialect == Dialect::Posix && critical("~"),
                Some(dir) => {
                    critical(dir)
                        || windows_critical(dir)
                        || cwd.as_deref().is_some_and(is_critical)
                }
            };
            continue;
        }
        out.push(Located {
            command: c,
            cwd: cwd.clone(),
            cwd_critical,
        });
    }
    (out, cwd)
}

/// Whether operand `o` of a command located at `l` names a directory `critical` judges so:
/// as written, as a wildcard or `.` inside such a directory, or relative to the directory.
pub(super) fn hits(
    a: &Analysis,
    l: &Located<'_>,
    o: &str,
    home: Option<&str>,
    critical: &impl Fn(&str) -> bool,
) -> bool {
    let mut words = crate::targets::brace_expansions(o);
    // As the shell will expand it, when the environment is known: `"$UNSET/"*` is `/*`.
    let expanded: Vec<String> = words.iter().filter_map(|w| expand_vars(a, w)).collect();
    words.extend(expanded);
    words.iter().any(|o| {
        critical(o)
            || (l.cwd_critical && matches!(o.as_str(), "*" | "." | "./" | "./*" | ".*"))
            || in_dir(l.cwd.as_deref(), o).is_some_and(|p| critical(&home_relative(&p, home)))
    })
}

/// Words that make any `$VAR` of a line unknowable from its text: the line sets or reads
/// variables itself (or runs code that may).
pub(super) const SETS_VARIABLES: &[&str] = &[
    "read",
    "for",
    "select",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "getopts",
    "mapfile",
    "readarray",
    "let",
    "eval",
    "source",
    ".",
    "set",
    "shift",
    "case",
];

/// `word` with its variables expanded as the shell will, when the line's environment is known
/// ([`Place::env`]) and the line sets none itself; `None` when that cannot be told (or there
/// is nothing to expand). Unset is empty: `"$STEAMROOT/"*` with it unset is `/*`.
pub(super) fn expand_vars(a: &Analysis, word: &str) -> Option<String> {
    if !word.contains('$') || word.contains("$(") || word.contains('`') {
        return None;
    }
    let place = a.place.as_ref()?;
    place.env.as_ref()?;
    let assigns = a.source.contains('=')
        || a.source
            .split(|c: char| c.is_whitespace() || ";&|(){}".contains(c))
            .any(|w| SETS_VARIABLES.contains(&w));
    if assigns {
        return None;
    }
    let lookup = |name: &str| -> Option<Option<String>> {
        if name == "HOME" {
            return Some(place.home.clone());
        }
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid { place.var(name) } else { None }
    };
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(body) = after.strip_prefix('{') {
            let close = body.find('}')?;
            let inner = &body[..close];
            let name_len = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            let (name, op) = inner.split_at(name_len);
            let value = lookup(name)?;
            let set = value.as_deref().is_some_and(|v| !v.is_empty());
            let text = match op {
                "" => value.unwrap_or_default(),
                _ if op.starts_with(":-") || op.starts_with(":=") => {
                    if set {
                        value.unwrap_or_default()
                    } else {
                        op[2..].to_owned()
                    }
                }
                _ if op.starts_with('-') || op.starts_with('=') => {
                    value.unwrap_or_else(|| op[1..].to_owned())
                }
                // `${X:?}`: the line stops when unset; when set, it is the value.
                _ if op.starts_with(":?") || op.starts_with('?') => value?,
                _ if op.starts_with(":+") => {
                    if set {
                        op[2..].to_owned()
                    } else {
                        String::new()
                    }
                }
                _ => return None,
            };
            out.push_str(&text);
            rest = &body[close + 1..];
        } else {
            let name_len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if name_len == 0 {
                return None; // `$1`, `$@`, `$?`: not the environment's
            }
            out.push_str(&lookup(&after[..name_len])?.unwrap_or_default());
            rest = &after[name_len..];
        }
    }
    out.push_str(rest);
    Some(out)
}

/// `~` and `~/x` with the caller's home put in, when it is known.
pub(super) fn expand_home(word: &str, home: Option<&str>) -> String {
    match (word.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{}{rest}", home.trim_end_matches('/'))
        }
        _ => word.to_owned(),
    }
}

/// Where `word` points when used in `cwd`: an absolute path for a relative word (`..`, `build`,
/// `$PWD/..`), `None` when that cannot be known (no `cwd`, another variable, a home path, which
/// the targets already judge as written).
pub(super) fn in_dir(cwd: Option<&str>, word: &str) -> Option<String> {
    let cwd = cwd?;
    for pwd in ["$PWD", "${PWD}", "$(pwd)", "`pwd`"] {
        if let Some(rest) = word.strip_prefix(pwd)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some(format!("{cwd}{rest}"));
        }
    }
    if word.starts_with('/') {
        return Some(word.to_owned());
    }
    if word.starts_with(['~', '$', '`']) || word.contains('$') {
        return None;
    }
    Some(format!("{cwd}/{word}"))
}
