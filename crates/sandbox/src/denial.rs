//! Recognising, after the fact, that a command was refused a write by the sandbox (2008).
//!
//! The kernel tells the command, not us, so this reads the command's output. It is deliberately
//! conservative: a plausible lie ("the sandbox blocked you") sends the agent to ask for escalation
//! when the real fix is a `chmod` or an ssh key. So a line counts only when it carries a
//! permission-type error, it names a path, and that path lies outside the plan's writable set.
//! The exit code does not decide: models write `… 2>&1 | tail -3` constantly, and a pipeline
//! exits with its last stage, so a refused `cp` or `npm install` there exits 0. `ssh: Permission denied (publickey)` names no path and is never blamed; a chmod-000
//! file inside the workspace is writable by the plan and is never blamed either, and neither is a
//! path this server could not write without the sandbox (`cat /etc/shadow` as a user, a
//! root-owned directory, a read-only mount): there the fix is not an escalation. A relative path
//! (`touch: cannot touch 'x'`) is judged only when it is known where the command ran and the
//! command itself names that path: then it is resolved against that directory.
//!
//! A refused *read* is told apart (docs/BEHAVIOUR.md §5): the sandbox refuses writes, so a
//! `cat` or `grep` refused a file (another process's `/proc/<pid>/environ`, a file its mode
//! keeps from the command) is never a 2008 and never answered with "add the directory": it is
//! said as a read, and only when this server could read the path itself (the command's own
//! limits refused it). A path the sandbox keeps from reads (`unreadable.rs`: agentty's state,
//! `deny_read`) refused with no word of writing is said as that: the sandbox hides it.

use std::path::{Path, PathBuf};

use crate::enforcement::Backend;
use crate::mode::Mode;
use crate::plan::Plan;
use crate::unreadable::HiddenWhy;

/// A write refused by the sandbox (2008), or a read the command was refused; `path` when the
/// message named one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub path: Option<PathBuf>,
    pub op: Op,
}

/// What the refused operation was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Write,
    /// A read refused by the command's own limits (a file's mode, another process's memory).
    Read,
    /// A read of a path the sandbox keeps from commands, and why it does.
    Hidden(HiddenWhy),
}

impl Denial {
    /// The sentence for error 2008, or for a refused read (from `notice.rs`).
    pub fn notice(&self, mode: Mode) -> String {
        match self.op {
            Op::Write => crate::notice::denial_notice(self, mode),
            Op::Read => crate::notice::read_refused_notice(self),
            Op::Hidden(why) => crate::notice::hidden_read_notice(self, why),
        }
    }
}

/// Words of an error about reading (lowercase): what failed was a read, whatever the path.
const READ_WORDS: &[&str] = &[
    "for reading",
    "cannot read",
    "can't read",
    "could not read",
    "couldn't read",
    "unable to read",
    "error reading",
    "failed to read",
    "read error",
    "cannot open directory",
    "cannot access",
    "cannot stat",
];

/// Words of an error about writing (lowercase): they win over a reader's name.
const WRITE_WORDS: &[&str] = &[
    "for writing",
    "cannot create",
    "cannot touch",
    "cannot remove",
    "cannot write",
    "cannot overwrite",
    "cannot make",
    "cannot move",
    "failed to write",
    "unable to write",
    "couldn't create",
    "could not create",
    "read-only file system",
];

/// Programs that only read the files they name: their error about a file is a read's.
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "wc",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "file",
    "diff",
    "cmp",
    "jq",
    "stat",
    "ls",
    "du",
    "find",
    "readlink",
    "realpath",
    "nl",
];

/// Whether `line` speaks of writing (`cannot create`, `for writing`, …).
fn says_write(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    WRITE_WORDS.iter().any(|w| lower.contains(w))
}

/// Whether `line` reports a refused read: its words say so, or its program (`cat: x: …`) only
/// reads; or the command fed the path to a shell redirection `<`.
fn is_read(line: &str, ran: Option<RanIn<'_>>, path: &str) -> bool {
    if says_write(line) {
        return false;
    }
    let lower = line.to_ascii_lowercase();
    if READ_WORDS.iter().any(|w| lower.contains(w)) {
        return true;
    }
    let program = line
        .split(':')
        .next()
        .unwrap_or_default()
        .trim()
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if READERS.contains(&program) {
        return true;
    }
    ran.is_some_and(|r| {
        r.command
            .match_indices('<')
            .any(|(at, _)| r.command[at + 1..].trim_start().starts_with(path))
    })
}

/// Error texts for EACCES, EPERM, EROFS and EXDEV (Landlock's REFER check on links and
/// renames), lowercase: what any write refusal may print.
const DENIAL_MARKERS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "invalid cross-device link",
    "eacces",
    "eperm",
    "erofs",
];

/// What Landlock itself answers: EACCES, and EXDEV for a link or rename across its rules. It
/// refuses no `chown`/`chmod` (EPERM) and mounts nothing read-only (EROFS), so on Linux those
/// errors are never the sandbox's.
const LANDLOCK_MARKERS: &[&str] = &["permission denied", "eacces", "invalid cross-device link"];

/// The shell's exit status for a program it found but could not execute. The sandbox refuses
/// writes only, never execution.
const CANNOT_EXECUTE: i32 = 126;

/// How many lines after an error code a tool may name the path (npm: `code EACCES`, then
/// `syscall mkdir`, then `path /home/u/.npm`), or before a permission error that is the cause
/// of an error naming it (cargo's `Caused by:`).
const PATH_LOOKAHEAD_LINES: usize = 8;

/// Where a failed command ran (its directory when it ended, as far as known) and its text: what
/// a relative path in its errors is judged against.
#[derive(Debug, Clone, Copy)]
pub struct RanIn<'a> {
    pub cwd: &'a Path,
    pub command: &'a str,
}

impl RanIn<'_> {
    /// Whether the command names `word` as a word of its own (`touch x`, `echo > x`).
    fn names(&self, word: &str) -> bool {
        self.command
            .split(|c: char| c.is_whitespace() || "'\"`;&|<>()=".contains(c))
            .any(|w| w == word)
    }

    /// Whether a relative `word` in an error can be taken as relative to this directory: the
    /// command names it, or the directory lies outside the writable set, where any path below
    /// it does too (`tar xf` naming the archive's files). Inside, a path the command does not
    /// name may be relative to another directory (a sub-make's) and is left alone.
    fn judges(&self, word: &str, plan: &Plan) -> bool {
        self.names(word) || (!word.starts_with("..") && !plan.allows_write(self.cwd))
    }
}

/// Bounds the scan on huge outputs; denials are printed where the command stops, near the end.
const SCAN_TAIL_LINES: usize = 400;

/// Returns the denial when a command's output shows a write refused outside the writable set of
/// `plan`, whatever its exit code. `exit`: the command's exit code, `None` when a signal ended
/// it. Always `None` when it could not execute a program (126) or the plan confines nothing.
pub fn detect_denial(
    exit: Option<i32>,
    output: &str,
    plan: &Plan,
    ran: Option<RanIn<'_>>,
) -> Option<Denial> {
    if exit == Some(CANNOT_EXECUTE) || !plan.confines() {
        return None;
    }
    let markers = markers(plan);
    let lines: Vec<&str> = output.lines().collect();
    let start = lines.len().saturating_sub(SCAN_TAIL_LINES);
    (start..lines.len()).find_map(|i| {
        let lower = lines[i].to_ascii_lowercase();
        if !markers.iter().any(|m| lower.contains(m)) {
            return None;
        }
        denial_in_line(lines[i], plan, ran)
            .or_else(|| {
                let after = &lines[i + 1..lines.len().min(i + 1 + PATH_LOOKAHEAD_LINES)];
                after
                    .iter()
                    .find_map(|line| path_field(line))
                    .and_then(|path| judge(path, plan))
            })
            .or_else(|| cause_of(&lines[..i], plan, ran))
    })
}

/// The error a `Caused by:` chain hangs the permission error on, when that error names the
/// path: `error: failed to open: /x/.cargo-lock` ⏎ ⏎ `Caused by:` ⏎ `  Permission denied (os
/// error 13)` (cargo and every tool that reports errors as anyhow does). `before`: the lines
/// above the permission error, searched nearest first, only when it is a cause.
fn cause_of(before: &[&str], plan: &Plan, ran: Option<RanIn<'_>>) -> Option<Denial> {
    let window = &before[before.len().saturating_sub(PATH_LOOKAHEAD_LINES)..];
    let caused_by = window
        .iter()
        .rposition(|line| line.trim() == "Caused by:")?;
    // The cause follows its label (blank lines aside) directly.
    if window[caused_by + 1..]
        .iter()
        .any(|line| !line.trim().is_empty())
    {
        return None;
    }
    window[..caused_by]
        .iter()
        .rev()
        .find_map(|line| denial_in_line(line, plan, ran))
}

/// The permission-error texts this plan's backend produces.
fn markers(plan: &Plan) -> &'static [&'static str] {
    match plan.backend {
        Backend::Landlock { .. } => LANDLOCK_MARKERS,
        _ => DENIAL_MARKERS,
    }
}

/// Whether `output` carries a permission-error text at all: the cheap look that comes before
/// anything costlier (working out where the command ran) on the path of every command.
pub fn shows_denial_symptom(output: &str, plan: &Plan) -> bool {
    if !plan.confines() {
        return false;
    }
    let markers = markers(plan);
    output.lines().rev().take(SCAN_TAIL_LINES).any(|line| {
        let lower = line.to_ascii_lowercase();
        markers.iter().any(|m| lower.contains(m))
    })
}

/// Whether `output` shows a tracer or profiler refused by the sandbox's filter (`seccomp.rs`:
/// `ptrace`, `perf_event_open` on another process): `strace: attach: ptrace(PTRACE_SEIZE, 12):
/// Operation not permitted`, gdb's `ptrace: Operation not permitted.`, perf's `Access to
/// performance monitoring and observability operations is limited`; or a read of another
/// process's files refused by Landlock (`/proc/12/maps: Permission denied`). The program says
/// EPERM or EACCES and nothing of why; the model is told once (`server/src/confinement/notice.rs`).
pub fn shows_trace_refusal(output: &str, plan: &Plan) -> bool {
    if !plan.confines() {
        return false;
    }
    output.lines().rev().take(SCAN_TAIL_LINES).any(|line| {
        let lower = line.to_ascii_lowercase();
        let refused =
            lower.contains("operation not permitted") || lower.contains("permission denied");
        (lower.contains("ptrace") && lower.contains("operation not permitted"))
            || lower.contains("access to performance monitoring and observability operations")
            || (refused && names_another_process(line))
    })
}

/// Whether `line` names a file of another process (`/proc/<pid>/…`).
fn names_another_process(line: &str) -> bool {
    line.match_indices("/proc/").any(|(at, _)| {
        let rest = &line[at + "/proc/".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with('/')
    })
}

/// `npm error path /home/u/.npm`, `npm ERR! path /x`: a path given on a line of its own.
fn path_field(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == "path")?;
    words.next().filter(|w| w.starts_with('/'))
}

/// An absolute path outside the writable set that only the sandbox could have refused.
fn judge(path: &str, plan: &Plan) -> Option<Denial> {
    let path = Path::new(path);
    blameable(path, plan).then(|| Denial {
        path: Some(path.to_path_buf()),
        op: Op::Write,
    })
}

/// Outside the writable set, yet this server could write it without the sandbox, and not a
/// path the user cannot even read (`ls` of a mode-0300 directory fails on the read).
fn blameable(path: &Path, plan: &Plan) -> bool {
    !plan.allows_write(path)
        && !of_another_process(path)
        && writable_unconfined(path)
        && !unreadable(path)
}

/// A file of another process under `/proc/<pid>/` (`mem`, `maps`, `environ`): what refuses a
/// confined command there is the kernel's check of access to that process (Landlock keeps each
/// command out of the others, see [`shows_trace_refusal`]), not the writable set.
fn of_another_process(path: &Path) -> bool {
    let mut parts = path.components().skip(1);
    parts.next().is_some_and(|c| c.as_os_str() == "proc")
        && parts.next().is_some_and(|c| {
            let pid = c.as_os_str().as_encoded_bytes();
            !pid.is_empty() && pid.iter().all(u8::is_ascii_digit)
        })
}

fn denial_in_line(line: &str, plan: &Plan, ran: Option<RanIn<'_>>) -> Option<Denial> {
    let read_only = plan.mode() == Mode::Plan;
    for candidate in path_candidates(line) {
        let path = Path::new(&candidate);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else if !looks_like_relative_path(&candidate) {
            continue;
        } else if let Some(ran) = ran.filter(|r| r.judges(&candidate, plan)) {
            ran.cwd.join(path)
        } else if read_only && !is_read(line, ran, &candidate) {
            // Without the cwd a relative path cannot be judged, except in read-only mode where
            // nothing but devices is writable.
            return Some(Denial {
                path: Some(path.to_path_buf()),
                op: Op::Write,
            });
        } else {
            continue;
        };
        if let Some(hidden) = plan.unreadable.hides(&full)
            && !says_write(line)
        {
            return Some(Denial {
                path: Some(full),
                op: Op::Hidden(hidden.why),
            });
        }
        if is_read(line, ran, &candidate) {
            // Not the write sandbox's; said only when this server could read it itself.
            if std::fs::symlink_metadata(&full).is_ok() && access(&full, libc::R_OK) {
                return Some(Denial {
                    path: Some(full),
                    op: Op::Read,
                });
            }
            continue;
        }
        if blameable(&full, plan) {
            return Some(Denial {
                path: Some(full),
                op: Op::Write,
            });
        }
    }
    None
}

/// Whether `path` exists and this user cannot read it.
fn unreadable(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok() && !access(path, libc::R_OK)
}

fn access(path: &Path, mode: libc::c_int) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access reads a NUL-terminated path and checks it against the caller's ids.
    unsafe { libc::access(c_path.as_ptr(), mode) == 0 }
}

/// Whether this process, which runs outside the sandbox as the same user, could write `path`, or
/// create it in its nearest existing ancestor. When it could not, the permissions or the mount
/// refused the write, not the sandbox.
fn writable_unconfined(path: &Path) -> bool {
    let mut at = path;
    while std::fs::symlink_metadata(at).is_err() {
        match at.parent() {
            Some(parent) => at = parent,
            None => return false,
        }
    }
    access(at, libc::W_OK)
}

fn looks_like_relative_path(s: &str) -> bool {
    !s.is_empty() && !s.contains(char::is_whitespace) && !s.starts_with('-')
}

/// Paths a message may name: quoted spans first ('x', "x", ‘x’, `x'), then the fields between
/// `: ` separators (`bash: /x: Permission denied`), then words after "cannot create" etc.
fn path_candidates(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (open, close) in [
        ('\'', '\''),
        ('"', '"'),
        ('‘', '’'),
        ('`', '\''),
        ('“', '”'),
    ] {
        let mut rest = line;
        while let Some(i) = rest.find(open) {
            let after = &rest[i + open.len_utf8()..];
            let Some(j) = after.find(close) else { break };
            let inner = &after[..j];
            if !inner.is_empty() {
                out.push(inner.to_owned());
            }
            rest = &after[j + close.len_utf8()..];
        }
    }
    let fields: Vec<&str> = line.split(": ").collect();
    // With three or more fields the first is the program (`/bin/sh: 1: cannot create /x: ...`).
    let skip = usize::from(fields.len() >= 3 && !fields[0].trim().contains(' '));
    for field in &fields[skip..] {
        let field = field.trim();
        // `sh: 1: cannot create /x: ...`, `open /x: ...` (Go), `... lock file /x: ...`.
        let word = field.rsplit(' ').next().unwrap_or(field);
        for cand in [field, word] {
            let cand = cand.trim_matches(|c| matches!(c, ',' | ';' | '(' | ')'));
            if cand.starts_with('/') && !out.iter().any(|o| o == cand) {
                out.push(cand.to_owned());
            }
        }
    }
    if out.is_empty() {
        // dash and GNU tools name relative paths bare: `sh: 1: cannot create x: Permission denied`,
        // `bash: x: Permission denied`. Keep the field right before the marker; with only two
        // fields the first is the program (`ssh: Permission denied (publickey)`), not a path.
        if fields.len() >= 3 {
            let before = fields[fields.len() - 2].trim();
            out.push(before.rsplit(' ').next().unwrap_or(before).to_owned());
        }
    }
    out
}

#[cfg(test)]
#[path = "denial_tests.rs"]
mod tests;
