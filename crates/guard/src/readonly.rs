//! The read-only classifier: does a command line change nothing (no files written, no processes
//! signalled, no state outside the shell)? Approval policies use it to run such lines without
//! asking.
//!
//! It errs towards "not read-only": a line is read-only only when it parsed cleanly, every simple
//! command in it (inner `$(…)` ones included) is on the list below with harmless arguments, and no
//! redirection writes a file (`> /dev/null` and `2>&1` are fine). Unknown programs are not
//! read-only, whatever they are called.

use crate::command::{Analysis, SimpleCommand};

/// Programs that only read, whatever their arguments (short of redirections).
const ALWAYS: &[&str] = &[
    "ls",
    "ll",
    "dir",
    "cat",
    "tac",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    ":",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "stat",
    "file",
    "which",
    "whereis",
    "type",
    "du",
    "df",
    "ps",
    "pgrep",
    "tree",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "cut",
    "tr",
    "paste",
    "column",
    "fold",
    "fmt",
    "expand",
    "unexpand",
    "rev",
    "comm",
    "join",
    "diff",
    "cmp",
    "nl",
    "od",
    "hexdump",
    "strings",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "base64",
    "base32",
    "jq",
    "whoami",
    "id",
    "groups",
    "uname",
    "uptime",
    "free",
    "nproc",
    "arch",
    "tty",
    "locale",
    "printenv",
    "env",
    "test",
    "[",
    "[[",
    "sleep",
    "seq",
    "lsblk",
    "lscpu",
    "lsof",
    "cd",
    "pushd",
    "popd",
    "dirs",
    "set",
    "export",
    "shopt",
    "wait",
    "jobs",
    "look",
    "zcat",
    "zgrep",
    "bzcat",
    "xzcat",
    "lsattr",
    "getfacl",
    "namei",
    "less",
    "more",
    "man",
    "help",
    "numfmt",
    "getconf",
    "vmstat",
    "iostat",
    "w",
    "who",
    "last",
    "hostnamectl",
    "timedatectl",
    "cal",
];

/// Git subcommands that only read.
const GIT_READ: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "shortlog",
    "describe",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "cat-file",
    "grep",
    "whatchanged",
    "show-ref",
    "for-each-ref",
    "merge-base",
    "name-rev",
    "rev-list",
    "count-objects",
    "help",
    "version",
    "check-ignore",
    "annotate",
];

/// Whether the whole line is read-only.
pub fn line_is_read_only(a: &Analysis) -> bool {
    a.exact && a.commands.iter().all(command_is_read_only)
}

/// Whether one simple command (after unwrapping) is read-only.
pub fn command_is_read_only(c: &SimpleCommand) -> bool {
    if c.redirects
        .iter()
        .any(|r| r.writes() && !is_harmless_sink(&r.target))
    {
        return false;
    }
    let args = c.argv.get(1..).unwrap_or_default();
    let has = |flags: &[&str]| args.iter().any(|a| flags.contains(&a.as_str()));
    let positional = || args.iter().filter(|a| !a.starts_with('-')).count();
    match c.program.as_str() {
        "" => true,
        "git" => git_is_read_only(args),
        "find" => !has(&[
            "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ]),
        "fd" | "fdfind" => !has(&["-x", "--exec", "-X", "--exec-batch"]),
        "sort" => !args
            .iter()
            .any(|a| a.starts_with("-o") || a.starts_with("--output")),
        "uniq" => positional() <= 1,
        "xxd" => !has(&["-r", "-revert"]) && positional() <= 1,
        "date" => !has(&["-s", "--set"]) && args.iter().all(|a| a.starts_with(['-', '+'])),
        "hostname" => args.is_empty() || args.iter().all(|a| a.starts_with('-')),
        "command" => has(&["-v", "-V"]),
        "yq" => !args.iter().any(|a| a == "-i" || a.starts_with("--inplace")),
        "top" | "htop" => has(&["-b", "-n"]),
        p => ALWAYS.contains(&p),
    }
}

/// Redirect targets that are not files on disk.
fn is_harmless_sink(target: &str) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "&1" | "&2" | "-"
    ) || target.starts_with("/dev/fd/")
}

fn git_is_read_only(args: &[String]) -> bool {
    let mut words = args.iter();
    // Global options before the subcommand; `-C dir` and `-c k=v` take a value.
    let sub = loop {
        match words.next() {
            None => return true,
            Some(w) if w == "-C" || w == "-c" || w == "--git-dir" || w == "--work-tree" => {
                words.next();
            }
            Some(w) if w.starts_with('-') => {}
            Some(w) => break w.as_str(),
        }
    };
    let rest: Vec<&str> = words.map(String::as_str).collect();
    let no_output_file = !rest.iter().any(|a| a.starts_with("--output"));
    let only_flags = |allowed_positional: bool| {
        rest.iter()
            .all(|a| a.starts_with('-') || allowed_positional)
    };
    match sub {
        s if GIT_READ.contains(&s) => no_output_file,
        "branch" => {
            const WRITES: &[&str] = &[
                "-d",
                "-D",
                "-m",
                "-M",
                "-c",
                "-C",
                "-f",
                "-u",
                "--delete",
                "--move",
                "--copy",
                "--force",
                "--set-upstream-to",
                "--unset-upstream",
                "--edit-description",
            ];
            let listing = rest.iter().any(|a| {
                matches!(
                    *a,
                    "--list" | "-l" | "--contains" | "--merged" | "--no-merged" | "--points-at"
                )
            });
            !rest
                .iter()
                .any(|a| WRITES.contains(a) || a.starts_with("--set-upstream"))
                && (only_flags(false) || listing)
        }
        "tag" => rest.is_empty() || rest.iter().any(|a| *a == "-l" || *a == "--list"),
        "remote" => {
            rest.is_empty()
                || rest.iter().all(|a| *a == "-v" || *a == "--verbose")
                || matches!(rest.first().copied(), Some("show" | "get-url"))
        }
        "stash" => matches!(rest.first().copied(), Some("list" | "show")),
        "config" => rest
            .iter()
            .any(|a| matches!(*a, "--get" | "--get-all" | "--list" | "-l" | "--get-regexp")),
        "reflog" => rest.is_empty() || matches!(rest.first().copied(), Some("show")),
        "worktree" => matches!(rest.first().copied(), Some("list")),
        _ => false,
    }
}
