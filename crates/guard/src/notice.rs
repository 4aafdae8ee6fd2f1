//! Every sentence this crate says to an AI model, in one place, so wording stays consistent and
//! reviewable. (Each rule's one-line reason lives beside its check in the rules table, because a
//! reason is part of the rule's definition; the sentences that carry it are here.)
//!
//! Style: short, exact, true; say what IS allowed and what to do next, never hint at ways around
//! the guard.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// "blocked by guard rule `rm-root`: <reason>. …"
pub fn blocked(rule: &str, reason: &str, command: &str) -> String {
    format!(
        "blocked by guard rule `{rule}`: {reason}. Command: `{}`. Nothing was run. \
         This guard catches slips; if the user really wants this, they can allow the rule in \
         agentty's configuration (`allow = [\"{rule}\"]` under `[guard]`, or --allow-rule {rule}). Do not rewrite the command to get \
         around the guard.",
        clip(command, COMMAND_IN_MESSAGE_CHARS)
    )
}

/// Longest command text quoted in a block message; the model already has the full text.
const COMMAND_IN_MESSAGE_CHARS: usize = 300;

fn clip(text: &str, max_chars: usize) -> String {
    let one_line = text.replace('\n', "\\n");
    if one_line.chars().count() <= max_chars {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max_chars).collect();
    out.push('…');
    out
}

/// Lists the allowed roots for boundary messages: "/work/proj, /tmp/extra".
pub fn roots(allowed: &[PathBuf]) -> String {
    let mut out = String::new();
    for (i, p) in allowed.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}", p.display());
    }
    out
}

/// `workdir` resolves outside every root.
pub fn workdir_outside(path: &Path, allowed: &[PathBuf]) -> String {
    format!(
        "workdir {} is outside the workspace; allowed: {} (pass a directory inside one of them, \
         or omit workdir)",
        path.display(),
        roots(allowed)
    )
}

/// `workdir` does not exist.
pub fn workdir_missing(path: &Path, allowed: &[PathBuf]) -> String {
    format!(
        "workdir {} does not exist; allowed: an existing directory inside {} (create it first, \
         or omit workdir)",
        path.display(),
        roots(allowed)
    )
}

/// `workdir` is a file or something else that is not a directory.
pub fn workdir_not_directory(path: &Path) -> String {
    format!(
        "workdir {} is not a directory; pass the directory that contains it, or omit workdir",
        path.display()
    )
}

/// `workdir` contains a NUL byte.
pub fn workdir_nul() -> String {
    "workdir contains a NUL byte; pass a plain directory path inside the workspace, or omit workdir"
        .to_string()
}

/// A configured root (workspace root or `--add-dir`) is unusable; said to the operator at startup.
pub fn root_unusable(which: &str, path: &Path, problem: &str) -> String {
    format!("{which} {} {problem}", path.display())
}

/// The allow-list names rules that do not exist.
pub fn unknown_rules(unknown: &[String], known: &[&str]) -> String {
    format!(
        "unknown guard rule name(s) in allow: {}; known rules: {}",
        unknown.join(", "),
        known.join(", ")
    )
}
