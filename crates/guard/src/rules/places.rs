//! What a command's words point at where it runs: the directories the parser followed it into
//! ([`SimpleCommand::cwd`]), and its operands read there (`..`, `*`, `$PWD/..`).

use super::*;

/// Whether a directory `c` may run in is one `critical` judges so (after the caller's home is
/// written `~`): `cd / && rm -rf *`.
pub(super) fn cwd_critical(
    c: &SimpleCommand,
    home: Option<&str>,
    critical: &impl Fn(&str) -> bool,
) -> bool {
    c.cwd.iter().flatten().any(|dir| {
        let shown = if dir.starts_with('/') {
            home_relative(dir, home)
        } else {
            dir.clone()
        };
        critical(&shown) || (!dir.starts_with(['/', '~']) && windows_critical(dir))
    })
}

/// Whether operand `o` of `c` names a directory `critical` judges so: as written, as a
/// wildcard or `.` inside such a directory, or relative to a directory `c` may run in.
pub(super) fn hits(
    c: &SimpleCommand,
    o: &str,
    home: Option<&str>,
    critical: &impl Fn(&str) -> bool,
) -> bool {
    let in_critical = cwd_critical(c, home, critical);
    crate::targets::brace_expansions(o).iter().any(|o| {
        critical(o)
            || (in_critical && names_everything_here(o))
            || c.cwd
                .iter()
                .flatten()
                .any(|cwd| in_dir(Some(cwd), o).is_some_and(|p| critical(&home_relative(&p, home))))
    })
}

/// `.`, `./`, `*`, `.*`, `.[a-z]*`, `./*`: the directory itself or everything in it.
fn names_everything_here(o: &str) -> bool {
    let o = o.strip_prefix("./").unwrap_or(o);
    o.is_empty() || o == "." || crate::targets::covers_all(o)
}

/// Where `word` points when used in `cwd`: an absolute path (or one under `~`) for a relative
/// word (`..`, `build`, `$PWD/..`), `None` when that cannot be known (no `cwd`, another
/// variable, a home path, which the targets already judge as written).
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
