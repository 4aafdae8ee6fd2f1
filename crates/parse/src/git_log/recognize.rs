//! Which `git log` command lines print a format read here. An allow-list: options that only
//! choose or order commits pass, options that change what is printed (`--graph`, `--stat`,
//! `-p`, `--format=%H`, `--parents`, `--date=relative`) make the command unknown, and an
//! option not listed is unknown too, since a new one could change the format.

use super::{Files, LogParser, date};
use crate::git_status::shared::git_subcommand;
use crate::{Parser, Stage};

/// Options whose value may be the next word (`--author X`, `-n 5`).
#[rustfmt::skip]
const TAKES_VALUE: &[&str] = &[
    "-n", "--max-count", "--skip", "--since", "--after", "--until", "--before", "--max-age",
    "--min-age", "--since-as-filter", "--author", "--committer", "--grep", "--grep-reflog",
    "--encoding", "--glob", "--exclude", "--exclude-hidden", "-S", "-G", "--find-object",
];

/// Options that choose commits, order them or tune rename detection: the format stays.
#[rustfmt::skip]
const KEEPS_FORMAT: &[&str] = &[
    "--all", "--branches", "--tags", "--remotes", "--no-merges", "--merges", "--first-parent",
    "--reverse", "--topo-order", "--date-order", "--author-date-order", "--follow", "--no-walk",
    "--do-walk", "--ancestry-path", "--simplify-by-decoration", "--full-history", "--dense",
    "--sparse", "--simplify-merges", "--show-pulls", "--regexp-ignore-case", "-i",
    "--basic-regexp", "--extended-regexp", "-E", "--fixed-strings", "-F", "--perl-regexp", "-P",
    "--all-match", "--invert-grep", "--mailmap", "--use-mailmap", "--no-mailmap",
    "--no-use-mailmap", "--abbrev-commit", "--no-abbrev-commit", "--abbrev", "--no-abbrev",
    "--clear-decorations", "--color", "--no-color", "--expand-tabs", "--no-expand-tabs",
    "--no-notes", "--no-show-signature", "--not", "--left-only", "--right-only", "--cherry-pick",
    "--exclude-first-parent-only", "--ignore-missing", "--no-min-parents", "--no-max-parents",
    "--remove-empty", "--full-diff", "-M", "-C", "--find-renames", "--find-copies",
    "--find-copies-harder", "--no-renames", "--relative", "--no-relative",
];

/// Prefixes of `--option=value` forms that keep the format.
#[rustfmt::skip]
const KEEPS_FORMAT_WITH_VALUE: &[&str] = &[
    "--max-count=", "--skip=", "--since=", "--after=", "--until=", "--before=", "--max-age=",
    "--min-age=", "--since-as-filter=", "--author=", "--committer=", "--grep=", "--grep-reflog=",
    "--encoding=", "--glob=", "--exclude=", "--exclude-hidden=", "--branches=", "--tags=",
    "--remotes=", "--decorate-refs=", "--decorate-refs-exclude=", "--abbrev=", "--min-parents=",
    "--max-parents=", "--diff-filter=", "--find-renames=", "--find-copies=", "--color=",
    "--expand-tabs=", "--no-walk=", "--ancestry-path=", "--find-object=", "--relative=", "-S",
    "-G", "-M", "-n",
];

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let args = git_subcommand(stage, "log")?;
    let mut parser = LogParser {
        oneline: false,
        decorations: true,
        files: Files::None,
    };
    let mut no_patch = false;
    let mut words = args.iter().map(String::as_str);
    while let Some(arg) = words.next() {
        if arg == "--" {
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            continue; // a revision or a path
        }
        if TAKES_VALUE.contains(&arg) {
            words.next()?;
            continue;
        }
        if arg == "--date" {
            date::readable(words.next()?).then_some(())?;
            continue;
        }
        if let Some(style) = arg.strip_prefix("--date=") {
            date::readable(style).then_some(())?;
            continue;
        }
        let format = arg
            .strip_prefix("--pretty=")
            .or_else(|| arg.strip_prefix("--format="));
        match (arg, format) {
            (_, Some("medium")) | ("--pretty", _) => parser.oneline = false,
            (_, Some("oneline")) | ("--oneline", _) => parser.oneline = true,
            (_, Some(_)) => return None,
            ("--decorate" | "--decorate=short" | "--decorate=full" | "--decorate=auto", _) => {
                parser.decorations = true;
            }
            ("--no-decorate" | "--decorate=no", _) => parser.decorations = false,
            ("--name-only", _) => parser.files = Files::Names,
            ("--name-status", _) => parser.files = Files::NameStatus,
            ("-s" | "--no-patch", _) => no_patch = true,
            _ if KEEPS_FORMAT.contains(&arg) => {}
            _ if KEEPS_FORMAT_WITH_VALUE.iter().any(|p| arg.starts_with(p)) => {}
            // `-5`: a commit count.
            _ if arg
                .get(1..)
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())) => {}
            _ => return None,
        }
    }
    // `--oneline --name-only` puts bare paths right under one-line commits: a path can look
    // like `abc1234 subject`. And how `-s` combines with a file list changed across versions.
    if (parser.oneline && parser.files == Files::Names) || (no_patch && parser.files != Files::None)
    {
        return None;
    }
    Some(Box::new(parser))
}
