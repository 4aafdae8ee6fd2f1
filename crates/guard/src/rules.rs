//! The dangerous-command table: one static slice, each rule with a stable kebab-case name (what
//! users put in the allow-list and what a block message names) and a one-line reason.
//!
//! A rule looks at the whole [`Analysis`] rather than one command, because some dangers live
//! between commands (`curl … | sh`, a function that pipes itself into itself). Each check returns
//! the text of the offending command. The table is a guardrail against slips, so every check
//! matches a specific destructive shape and leaves look-alikes alone (`rm -rf ./build`,
//! `dd if=a of=b`, `kill -9 12345`, `curl … | jq`).

use crate::command::{Analysis, SimpleCommand};
use crate::invocation::{code_arg, runs_stdin};
use crate::lex::Dialect;
use crate::powershell::ps_param_is;
use crate::targets::{Critical, critical_path, home_relative, is_block_device, windows_critical};
use crate::unwrap::program_name;

/// One entry of the table.
#[derive(Debug)]
pub struct Rule {
    /// Stable kebab-case name, used in the allow-list and in block messages.
    pub name: &'static str,
    /// One-line English reason, shown to the model when the rule fires.
    pub reason: &'static str,
    /// Returns the offending command's text when the rule fires.
    pub(crate) check: fn(&Analysis) -> Option<String>,
}

/// Every rule, in the order they are tried.
pub static RULES: &[Rule] = &[
    Rule {
        name: "rm-root",
        reason: "deletes (or moves away) the filesystem root, a drive, the home directory or a top-level system directory recursively",
        check: rm_root,
    },
    Rule {
        name: "find-delete-root",
        reason: "deletes files found under the filesystem root, the home directory or a system directory, or changes their permissions or owner",
        check: find_delete_root,
    },
    Rule {
        name: "format-disk",
        reason: "formats a disk or volume, destroying the data on it",
        check: format_disk,
    },
    Rule {
        name: "disk-overwrite",
        reason: "writes over a raw block device, destroying the filesystem on it",
        check: disk_overwrite,
    },
    Rule {
        name: "fork-bomb",
        reason: "defines a function that starts copies of itself without bound (a fork bomb)",
        check: fork_bomb,
    },
    Rule {
        name: "chmod-root",
        reason: "changes permissions or ownership recursively on the filesystem root, the home directory or a system directory",
        check: chmod_root,
    },
    Rule {
        name: "download-exec",
        reason: "runs code downloaded from the network without saving or reviewing it first",
        check: download_exec,
    },
    Rule {
        name: "shutdown",
        reason: "shuts down or reboots the machine",
        check: shutdown,
    },
    Rule {
        name: "kill-all",
        reason: "sends a signal to every process the user can reach (pid -1)",
        check: kill_all,
    },
    Rule {
        name: "too-deep",
        reason: "nests scripts (`sh -c`, `eval`) deeper than the guard reads, so what it runs cannot be checked; unnest it",
        check: too_deep,
    },
];

fn too_deep(a: &Analysis) -> Option<String> {
    a.too_deep.clone()
}

/// Looks a rule up by name.
pub fn rule(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.name == name)
}

fn first(a: &Analysis, pred: impl Fn(&SimpleCommand) -> bool) -> Option<String> {
    a.commands.iter().find(|c| pred(c)).map(|c| c.text.clone())
}

fn args(c: &SimpleCommand) -> &[String] {
    c.argv.get(1..).unwrap_or_default()
}

/// Operands (non-option words) of a GNU-style command, honouring `--`.
fn operands(c: &SimpleCommand) -> impl Iterator<Item = &String> {
    let mut done = false;
    args(c).iter().filter(move |a| {
        if done {
            return true;
        }
        if a.as_str() == "--" {
            done = true;
            return false;
        }
        !(a.starts_with('-') && a.len() > 1)
    })
}

/// Whether a GNU-style option is present: a long name, or a short letter inside a cluster.
fn has_flag(c: &SimpleCommand, short: &[char], long: &[&str]) -> bool {
    for a in args(c) {
        if a == "--" {
            break;
        }
        if let Some(name) = a.strip_prefix("--") {
            let name = name.split('=').next().unwrap_or(name);
            if long.contains(&name) {
                return true;
            }
        } else if let Some(cluster) = a.strip_prefix('-')
            && cluster.chars().any(|ch| short.contains(&ch))
        {
            return true;
        }
    }
    false
}

/// A command of the line with where it runs, as far as the line shows: the caller's directory,
/// then each `cd` before it.
struct Located<'a> {
    command: &'a SimpleCommand,
    cwd: Option<String>,
    /// The directory is itself critical (`cd / && rm -rf *`), judged as `critical` says.
    cwd_critical: bool,
}

/// Every command of `a` but the `cd`s, each with its directory. `critical` judges a directory
/// (after `~` is expanded against the caller's home).
fn located<'a>(a: &'a Analysis, critical: impl Fn(&str) -> bool) -> Vec<Located<'a>> {
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
fn walk_cds<'a>(
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
fn hits(
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

fn rm_root(a: &Analysis) -> Option<String> {
    let home = a.place.as_ref().and_then(|p| p.home.as_deref());
    let critical = |path: &str| critical_path(path).is_some();
    for l in located(a, critical) {
        let c = l.command;
        let posix = c.program == "rm"
            && has_flag(
                c,
                &['r', 'R', 'f'],
                &["recursive", "force", "no-preserve-root"],
            )
            && operands(c).any(|o| hits(a, &l, o, home, &critical));
        // `mv ~ /tmp/old`, `mv /usr /x`: moving it away takes it as surely as deleting it.
        let moved = c.program == "mv" && {
            let ops: Vec<&String> = operands(c).collect();
            // With -t DIR every operand is a source; otherwise the last one is the target.
            let sources = if has_flag(c, &['t'], &["target-directory"]) {
                &ops[..]
            } else {
                ops.split_last().map_or(&[][..], |(_, sources)| sources)
            };
            sources.iter().any(|o| {
                critical(o)
                    || in_dir(l.cwd.as_deref(), o)
                        .is_some_and(|p| critical(&home_relative(&p, home)))
            })
        };
        // `rsync -a --delete empty/ ~/`: the destination ends up as empty as the source.
        let synced = c.program == "rsync"
            && args(c).iter().any(|w| {
                w == "--del" || (w.starts_with("--delete") && !w.starts_with("--delete-missing"))
            })
            && operands(c)
                .last()
                .is_some_and(|o| hits(a, &l, o, home, &critical));
        if posix
            || moved
            || synced
            || git_clean_all(a, c, &l, home, &critical)
            || powershell_remove_root(a, c)
        {
            return Some(c.text.clone());
        }
    }
    None
}

/// `git clean -fdx` (or `-fd`, `-fX`) where the work tree is the home directory or a system
/// directory: every untracked file there goes.
fn git_clean_all(
    a: &Analysis,
    c: &SimpleCommand,
    l: &Located<'_>,
    home: Option<&str>,
    critical: &impl Fn(&str) -> bool,
) -> bool {
    if c.program != "git" {
        return false;
    }
    let mut words = args(c).iter();
    let mut dir: Option<&String> = None;
    let mut verb = None;
    while let Some(w) = words.next() {
        match w.as_str() {
            "-C" => dir = words.next(),
            "-c" | "--git-dir" | "--work-tree" | "--namespace" => {
                words.next();
            }
            o if o.starts_with('-') => {}
            v => {
                verb = Some(v);
                break;
            }
        }
    }
    if verb != Some("clean") {
        return false;
    }
    let rest: Vec<&String> = words.collect();
    let flag = |ch: char, long: &str| {
        rest.iter().any(|w| {
            w.as_str() == long || (w.starts_with('-') && !w.starts_with("--") && w.contains(ch))
        })
    };
    let forced = flag('f', "--force");
    let wide = flag('d', "-d") || flag('x', "-x") || flag('X', "-X");
    let here_critical = match dir {
        Some(d) => hits(a, l, d, home, critical),
        None => l.cwd_critical,
    };
    forced && wide && here_critical
}

/// Words that make any `$VAR` of a line unknowable from its text: the line sets or reads
/// variables itself (or runs code that may).
const SETS_VARIABLES: &[&str] = &[
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
fn expand_vars(a: &Analysis, word: &str) -> Option<String> {
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
fn expand_home(word: &str, home: Option<&str>) -> String {
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
fn in_dir(cwd: Option<&str>, word: &str) -> Option<String> {
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

/// `Remove-Item -Recurse C:\` and its aliases (`rm -r`, `ri`, `del`, … inside PowerShell), also
/// when the items are piped in from `Get-ChildItem C:\`.
fn powershell_remove_root(a: &Analysis, c: &SimpleCommand) -> bool {
    let cmdlet = c.program == "remove-item";
    let alias = c.dialect == Dialect::PowerShell
        && matches!(
            c.program.as_str(),
            "rm" | "ri" | "del" | "erase" | "rd" | "rmdir"
        );
    if !(cmdlet || alias) {
        return false;
    }
    let words = args(c);
    let recurse = words.iter().any(|w| ps_param_is(w, "Recurse", 1));
    if !recurse {
        return false;
    }
    if let Some((id, stage)) = c.pipeline.filter(|p| p.1 > 0) {
        let listed_root = a.commands.iter().any(|o| {
            o.pipeline.is_some_and(|(oid, os)| oid == id && os < stage)
                && matches!(o.program.as_str(), "get-childitem" | "gci" | "ls" | "dir")
                && args(o)
                    .iter()
                    .any(|w| !w.starts_with('-') && windows_critical(w))
        });
        if listed_root {
            return true;
        }
    }
    /// Parameters whose value is not a path to delete.
    const NOT_PATHS: &[(&str, usize)] = &[
        ("Filter", 2),
        ("Include", 1),
        ("Exclude", 1),
        ("Credential", 1),
        ("Stream", 1),
    ];
    let mut skip_next = false;
    for w in words {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        if w.starts_with('-') {
            skip_next = NOT_PATHS.iter().any(|&(p, min)| ps_param_is(w, p, min));
            if let Some((_, value)) = w.split_once(':')
                && (ps_param_is(w, "Path", 1) || ps_param_is(w, "LiteralPath", 1))
                && value.split(',').any(windows_critical)
            {
                return true;
            }
            continue;
        }
        if w.split(',').any(windows_critical) {
            return true;
        }
    }
    false
}

/// Whether a `find` starts at the root, a system directory, or the home directory unfiltered
/// (`find ~ -name '*.pyc' -delete` is routine cleanup; an unfiltered `find ~ -delete` is not).
fn find_starts_critical(c: &SimpleCommand) -> bool {
    let mut words = args(c).iter().peekable();
    // Leading `-H -L -P -D opts -O3` options come before the starting points.
    while let Some(w) = words.peek() {
        match w.as_str() {
            "-H" | "-L" | "-P" => {}
            "-D" => {
                words.next();
            }
            o if o.starts_with("-O") => {}
            _ => break,
        }
        words.next();
    }
    let mut system_root = false;
    let mut home_root = false;
    for w in words.by_ref() {
        if w.starts_with(['-', '(', '!', ')']) {
            break;
        }
        match critical_path(w) {
            Some(Critical::Home) => home_root = true,
            Some(_) => system_root = true,
            None => {}
        }
    }
    let filtered = args(c).iter().any(|w| {
        matches!(
            w.as_str(),
            "-name"
                | "-iname"
                | "-path"
                | "-ipath"
                | "-wholename"
                | "-iwholename"
                | "-regex"
                | "-iregex"
                | "-lname"
                | "-ilname"
        )
    });
    system_root || (home_root && !filtered)
}

/// Programs that destroy or take over what they are given, one file at a time.
fn destroys_each(program: &str) -> bool {
    matches!(
        program,
        "rm" | "shred" | "unlink" | "rmdir" | "chmod" | "chown" | "chgrp"
    )
}

fn find_delete_root(a: &Analysis) -> Option<String> {
    let found = first(a, |c| {
        if c.program != "find" || !find_starts_critical(c) {
            return false;
        }
        let expr: Vec<&String> = args(c).iter().collect();
        expr.iter().enumerate().any(|(i, w)| {
            w.as_str() == "-delete"
                || (matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                    && expr
                        .get(i + 1)
                        .is_some_and(|n| destroys_each(&program_name(n))))
        })
    });
    // `find / … | xargs rm`: what the find lists, the next stage destroys.
    found.or_else(|| {
        a.commands.iter().find_map(|c| {
            let (pipeline, stage) = c.pipeline?;
            let before = stage.checked_sub(1)?;
            let fed = c.wrappers.iter().any(|w| w == "xargs") && destroys_each(&c.program);
            let from_find = fed
                && a.commands.iter().any(|f| {
                    f.program == "find"
                        && f.pipeline == Some((pipeline, before))
                        && find_starts_critical(f)
                });
            from_find.then(|| c.text.clone())
        })
    })
}

/// `mkfs` of a regular image file (`mkfs.ext4 -F ./disk.img`) is ordinary image building; only a
/// target that may be a device counts: one under `/dev`, an expansion, or no target at all.
fn formats_a_device(c: &SimpleCommand) -> bool {
    let mut targets = operands(c).peekable();
    targets.peek().is_none()
        || targets.any(|o| o.starts_with("/dev") || o.contains('$') || o.contains('`'))
}

fn format_disk(a: &Analysis) -> Option<String> {
    first(a, |c| {
        let p = c.program.as_str();
        let mkfs = p == "mkfs"
            || p.starts_with("mkfs.")
            || p.starts_with("mkfs_")
            || matches!(p, "mke2fs" | "mkdosfs" | "mkntfs")
            || p == "newfs"
            || p.starts_with("newfs_");
        let verb = operands(c).next().map(|v| v.to_ascii_lowercase());
        (mkfs && formats_a_device(c))
            || (p == "mkswap" && formats_a_device(c))
            // A new partition table, zapped GPT, or encryption: the data on the disk is gone.
            || (matches!(p, "parted" | "parted.static")
                && args(c).iter().any(|w| matches!(w.as_str(), "mklabel" | "mktable")))
            || (p == "sgdisk"
                && args(c).iter().any(|w| {
                    matches!(w.as_str(), "--zap-all" | "--zap" | "--clear" | "-Z" | "-z" | "-o")
                }))
            || (p == "cryptsetup"
                && matches!(verb.as_deref(), Some("luksformat" | "erase" | "lukserase")))
            || matches!(p, "format-volume" | "clear-disk")
            || (p == "diskutil"
                && args(c).first().is_some_and(|verb| {
                    let v = verb.to_ascii_lowercase();
                    v.starts_with("erase")
                        || matches!(
                            v.as_str(),
                            "zerodisk"
                                | "randomdisk"
                                | "secureerase"
                                | "partitiondisk"
                                | "reformat"
                        )
                }))
    })
}

fn disk_overwrite(a: &Analysis) -> Option<String> {
    first(a, |c| {
        let to_device = c
            .redirects
            .iter()
            .any(|r| r.writes() && is_block_device(&r.target));
        let by_program = match c.program.as_str() {
            "dd" => args(c)
                .iter()
                .any(|w| w.strip_prefix("of=").is_some_and(is_block_device)),
            "shred" | "blkdiscard" | "tee" | "truncate" => operands(c).any(|o| is_block_device(o)),
            "cp" | "pv" => operands(c).last().is_some_and(|o| is_block_device(o)),
            "wipefs" => {
                has_flag(c, &['a', 'o'], &["all", "offset"])
                    && operands(c).any(|o| is_block_device(o))
            }
            "sgdisk" => {
                has_flag(c, &['Z', 'z', 'o'], &["zap", "zap-all", "clear"])
                    && operands(c).any(|o| is_block_device(o))
            }
            _ => false,
        };
        to_device || by_program
    })
}

fn fork_bomb(a: &Analysis) -> Option<String> {
    for (id, name) in a.functions.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        let calls: Vec<&SimpleCommand> = a
            .commands
            .iter()
            .filter(|c| c.function == Some(id) && c.argv.first() == Some(name))
            .collect();
        if calls.len() >= 2 && calls.iter().any(|c| c.pipeline.is_some() || c.background) {
            return calls
                .first()
                .map(|c| format!("{name}() {{ … {} … }}", c.text));
        }
    }
    a.scanned
        .iter()
        .find(|t| fork_bomb_text(t))
        .cloned()
        .or_else(|| fork_loop(&a.source))
}

/// An endless loop that starts a process in the background on every turn and never waits or
/// pauses: `while true; do bash & done`, `while :; do ./a.out & done`, `for ((;;)); do x & done`.
/// The number of processes grows without bound, as with a fork bomb.
fn fork_loop(source: &str) -> Option<String> {
    let compact: String = source.split_whitespace().collect::<Vec<_>>().join(" ");
    let heads = [
        "while true; do ",
        "while :; do ",
        "while [ 1 ]; do ",
        "until false; do ",
        "for ((;;)); do ",
        "for (( ; ; )); do ",
    ];
    for head in heads {
        let mut rest = compact.as_str();
        while let Some(at) = rest.find(head) {
            let body_start = &rest[at + head.len()..];
            let body = body_start.split("done").next().unwrap_or(body_start);
            let bytes = body.as_bytes();
            let backgrounds = bytes.iter().enumerate().any(|(i, &b)| {
                b == b'&'
                    && bytes.get(i + 1) != Some(&b'&')
                    && (i == 0 || bytes[i - 1] != b'&')
                    && bytes.get(i + 1) != Some(&b'>')
                    && (i == 0 || !matches!(bytes[i - 1], b'>' | b'<'))
            });
            let paced = ["sleep", "wait", "break", "exit", "read", "return"]
                .iter()
                .any(|w| {
                    body.split(|c: char| !c.is_ascii_alphanumeric())
                        .any(|t| t == *w)
                });
            if backgrounds && !paced {
                return Some(format!("{head}{body}done"));
            }
            rest = &body_start[body.len().min(body_start.len())..];
        }
    }
    None
}

/// Text-level fork-bomb check for lines that did not parse: `NAME(){ … NAME|NAME … }` or
/// `NAME&` inside NAME's own body.
fn fork_bomb_text(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut from = 0;
    while let Some(pos) = compact.get(from..).and_then(|s| s.find("(){")) {
        let at = from + pos;
        from = at + 3;
        let head = compact.get(..at).unwrap_or_default();
        let name_start = head
            .rfind([';', '&', '|', '{', '}', '(', ')', '\n'])
            .map_or(0, |i| i + 1);
        let name = head.get(name_start..).unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        let body = compact.get(from..).unwrap_or_default();
        let body = body.split('}').next().unwrap_or(body);
        let piped = format!("{name}|{name}");
        let backgrounded = format!("{name}&");
        if body.contains(&piped) || body.matches(name).count() >= 2 && body.contains(&backgrounded)
        {
            return true;
        }
    }
    false
}

/// `chmod -R`/`chown -R` on `/`, the home directory or a top-level system directory: every
/// file below loses its permissions (`~/.ssh` stops working, `sudo` breaks). A directory one
/// level down (`/usr/local`) is left alone: recursive fixes there are routine.
fn chmod_root(a: &Analysis) -> Option<String> {
    let home = a.place.as_ref().and_then(|p| p.home.as_deref());
    let critical = |path: &str| {
        matches!(
            critical_path(path),
            Some(Critical::Root | Critical::Home | Critical::System)
        )
    };
    located(a, critical).into_iter().find_map(|l| {
        let c = l.command;
        let hit = matches!(c.program.as_str(), "chmod" | "chown" | "chgrp")
            && has_flag(c, &['R'], &["recursive"])
            && operands(c).any(|o| hits(a, &l, o, home, &critical));
        hit.then(|| c.text.clone())
    })
}

/// Programs that fetch from the network to stdout.
fn is_downloader(c: &SimpleCommand) -> bool {
    matches!(
        c.program.as_str(),
        "curl"
            | "wget"
            | "wget2"
            | "fetch"
            | "http"
            | "https"
            | "xh"
            | "lwp-request"
            | "iwr"
            | "irm"
            | "invoke-webrequest"
            | "invoke-restmethod"
    ) || mentions_webclient(&c.text)
}

fn mentions_webclient(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("downloadstring") || lower.contains("net.webclient")
}

/// Whether `text` contains a downloader invocation (for `$(curl …)`-style code arguments).
fn mentions_download(text: &str) -> bool {
    mentions_webclient(text)
        || text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .any(|t| {
                matches!(
                    t.to_ascii_lowercase().as_str(),
                    "curl"
                        | "wget"
                        | "wget2"
                        | "fetch"
                        | "iwr"
                        | "irm"
                        | "invoke-webrequest"
                        | "invoke-restmethod"
                        | "lwp-request"
                        | "xh"
                )
            })
}

fn download_exec(a: &Analysis) -> Option<String> {
    first(a, |c| {
        // `curl … | sh`: a later pipeline stage runs what an earlier one downloaded.
        if let Some((id, stage)) = c.pipeline
            && stage > 0
            && runs_stdin(c)
            && a.commands.iter().any(|o| {
                o.pipeline.is_some_and(|(oid, os)| oid == id && os < stage)
                    && (is_downloader(o)
                        || o.inner
                            .iter()
                            .any(|&i| a.commands.get(i).is_some_and(is_downloader)))
            })
        {
            return true;
        }
        // `sh <(curl …)`, `python -c "$(curl …)"`, `iex (iwr …)`, and `$(curl …)` run as a command.
        let substituted = |w: &str| w.starts_with(['$', '<', '`', '(']) && mentions_download(w);
        if c.argv.first().is_some_and(|w| substituted(w)) {
            return true;
        }
        code_arg(c).is_some_and(substituted)
    })
}

fn shutdown(a: &Analysis) -> Option<String> {
    first(a, |c| {
        let first_operand = operands(c).next().map(String::as_str);
        match c.program.as_str() {
            "shutdown" | "reboot" | "halt" | "poweroff" => !args(c)
                .iter()
                .any(|w| matches!(w.as_str(), "-c" | "--help" | "--version")),
            "init" | "telinit" => matches!(first_operand, Some("0" | "6")),
            "systemctl" | "loginctl" => {
                let mut words = args(c).iter();
                let mut verb = None;
                while let Some(w) = words.next() {
                    if matches!(
                        w.as_str(),
                        "-H" | "-M" | "--host" | "--machine" | "-t" | "-p"
                    ) {
                        words.next();
                    } else if !w.starts_with('-') {
                        verb = Some(w.as_str());
                        break;
                    }
                }
                matches!(
                    verb,
                    Some("poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot")
                )
            }
            "stop-computer" | "restart-computer" => true,
            // The magic SysRq key: `b` reboots, `o` powers off, `c` crashes the kernel.
            _ if c
                .redirects
                .iter()
                .any(|r| r.writes() && r.target.ends_with("sysrq-trigger")) =>
            {
                true
            }
            "tee" => operands(c).any(|o| o.ends_with("sysrq-trigger")),
            _ => false,
        }
    })
}

fn kill_all(a: &Analysis) -> Option<String> {
    first(a, |c| {
        if c.program == "killall5" || signals_every_process_of_a_user(c) {
            return true;
        }
        if c.program != "kill" {
            return false;
        }
        let mut words = args(c).iter();
        let mut signal_seen = false;
        let mut signal = String::new();
        while let Some(w) = words.next() {
            match w.as_str() {
                "-l" | "-L" | "--list" | "--table" => return false,
                "-s" | "-n" | "--signal" => {
                    signal = words.next().cloned().unwrap_or_default();
                    signal_seen = true;
                }
                "--" => return words.any(|p| p == "-1") && signal != "0",
                "-1" if signal_seen => return signal != "0",
                s if s.starts_with('-') && !signal_seen => {
                    signal = s.trim_start_matches('-').to_string();
                    signal_seen = true;
                }
                _ => {}
            }
        }
        false
    })
}

/// `pkill -9 -u $USER`, `pkill -KILL .`, `killall -u me`: no name, or a pattern matching every
/// name, so every process of the user (the agent's host and the user's session included) goes.
fn signals_every_process_of_a_user(c: &SimpleCommand) -> bool {
    let takes_value = |w: &str| {
        matches!(
            w,
            "-u" | "-U"
                | "-g"
                | "-G"
                | "-P"
                | "-s"
                | "-t"
                | "-F"
                | "--euid"
                | "--uid"
                | "--group"
                | "--pgroup"
                | "--parent"
                | "--session"
                | "--terminal"
                | "--pidfile"
                | "--signal"
                | "--ns"
                | "--nslist"
                | "-o"
                | "-y"
                | "--older-than"
                | "--younger-than"
                | "-n"
        )
    };
    let mut words = args(c).iter();
    let mut patterns = Vec::new();
    let mut query = false;
    while let Some(w) = words.next() {
        if matches!(
            w.as_str(),
            "-l" | "--list" | "-V" | "--version" | "-h" | "--help" | "-0"
        ) {
            query = true;
        } else if takes_value(w) {
            words.next();
        } else if !w.starts_with('-') {
            patterns.push(w.as_str());
        }
    }
    let matches_all = |p: &str| matches!(p, "" | "." | ".*" | "^" | "$" | "^.*" | ".+" | "^.*$");
    match c.program.as_str() {
        "pkill" => !query && (patterns.is_empty() || patterns.iter().all(|p| matches_all(p))),
        "killall" => {
            !query
                && args(c)
                    .iter()
                    .any(|w| matches!(w.as_str(), "-u" | "--user"))
                && (patterns.is_empty() || patterns.iter().all(|p| matches_all(p)))
        }
        _ => false,
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
