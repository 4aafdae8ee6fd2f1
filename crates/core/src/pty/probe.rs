//! Is the foreground program waiting for the keyboard? Derived from process state, not text.
//!
//! A regex on `Password:` or `[y/N]` misses every prompt nobody thought of and fires on output
//! that merely contains the word. The kernel knows better: the terminal's foreground process
//! group (`tcgetpgrp` on the master) is the job that owns the keyboard, and a member blocked in
//! `read` on the terminal is waiting for a line. Measured on Linux 6.18: a process in `read(0)`
//! on a PTY sleeps (state S) with `/proc/<pid>/syscall` = `0 0x0 …` (read, fd 0) and `wchan`
//! `wait_woken`; readline and other line editors sleep in `pselect6`/`poll` on the terminal
//! instead (`wchan` `poll_schedule_timeout…`); a process reading a pipe shows `anon_pipe_read`,
//! one in `sleep` shows `hrtimer_nanosleep`. The caller combines this with "no new output for a
//! short while", because a program that is busy between two reads is not waiting for anyone.
//!
//! Limits: a program that polls the terminal *and* a socket (an ssh client) counts as waiting
//! when it is idle; a program reading the terminal through another fd number is recognised by
//! the fd's target (`/proc/<pid>/fd/N` → `/dev/pts/N`), one reading `/dev/tty` the same way.

use std::fs;

/// Who in the terminal's foreground job is blocked on the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputWait {
    /// Nobody: the foreground job is running, sleeping on something else, or gone.
    No,
    /// The shell itself (at its prompt, a continuation prompt, or the `read` builtin).
    Shell,
    /// A program the shell started (`sudo`, `read` in a script, a REPL, `cat`).
    Program,
}

/// Linux syscall numbers that read a given fd, and those that wait on a set of fds.
pub(crate) const READ_CALLS: &[i64] = &[libc::SYS_read, libc::SYS_readv, libc::SYS_pread64];
#[cfg(target_arch = "x86_64")]
const POLL_CALLS: &[i64] = &[
    libc::SYS_poll,
    libc::SYS_select,
    libc::SYS_ppoll,
    libc::SYS_pselect6,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_pwait,
];
#[cfg(not(target_arch = "x86_64"))]
const POLL_CALLS: &[i64] = &[libc::SYS_ppoll, libc::SYS_pselect6, libc::SYS_epoll_pwait];

/// Checks the foreground group `fg` of the terminal `tty_path` whose session leader is `shell`.
pub fn input_wait(shell: i32, fg: Option<i32>, tty_path: &str) -> InputWait {
    let Some(fg) = fg else {
        return InputWait::No;
    };
    if fg == shell {
        return if blocked_on_tty(shell, tty_path) {
            InputWait::Shell
        } else {
            InputWait::No
        };
    }
    let waiting = descendants(shell)
        .into_iter()
        .filter(|&pid| pgid_of(pid) == Some(fg))
        .any(|pid| blocked_on_tty(pid, tty_path));
    if waiting {
        InputWait::Program
    } else {
        InputWait::No
    }
}

/// Shells whose line editor edits what is typed at their prompt (a shell started in the shell
/// edits its lines as the shell does).
const LINE_EDITING_SHELLS: &[&str] = &[
    "bash", "zsh", "sh", "dash", "ksh", "ksh93", "mksh", "oksh", "ash", "yash", "fish", "tcsh",
    "csh", "rbash", "posh", "busybox",
];

/// Who takes keys typed into a shell's terminal now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyReader {
    /// A shell's line editor: the shell owns the foreground, or a shell started in it reads.
    LineEditor,
    /// A foreground job that is busy, not reading: what it does not read waits for whoever
    /// reads next, which may be the shell. Signal keys (Ctrl+Z) are for the job.
    Busy,
    /// A program other than a shell blocked reading the terminal (an editor, a pager, a
    /// REPL): the keys are its own.
    Program,
}

/// Who takes keys typed now into the terminal `tty_path` of the shell `shell`, whose
/// foreground group is `fg` (see [`KeyReader`]).
pub fn key_reader(shell: i32, fg: Option<i32>, tty_path: &str) -> KeyReader {
    let Some(fg) = fg else {
        return KeyReader::LineEditor;
    };
    if fg == shell {
        return KeyReader::LineEditor;
    }
    let readers: Vec<i32> = descendants(shell)
        .into_iter()
        .filter(|&pid| pgid_of(pid) == Some(fg) && blocked_on_tty(pid, tty_path))
        .collect();
    if readers.is_empty() {
        KeyReader::Busy
    } else if readers.iter().any(|&pid| runs_a_shell(pid)) {
        KeyReader::LineEditor
    } else {
        KeyReader::Program
    }
}

/// Whether process `pid` is one of the [`LINE_EDITING_SHELLS`] (a login shell's `-bash` too).
fn runs_a_shell(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| {
        let name = comm.trim_end().trim_start_matches('-');
        LINE_EDITING_SHELLS.contains(&name)
    })
}

/// Every descendant of `root`, through the kernel's per-thread children lists.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            let Ok(text) = fs::read_to_string(path) else {
                continue;
            };
            for child in text.split_ascii_whitespace().filter_map(|s| s.parse().ok()) {
                out.push(child);
                queue.push(child);
            }
        }
    }
    out
}

/// State letter and process group from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.get(text.rfind(')')? + 2..)?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

fn pgid_of(pid: i32) -> Option<i32> {
    stat(pid).map(|(_, pgid)| pgid)
}

pub(crate) fn fd_is_tty(pid: i32, fd: i64, tty_path: &str) -> bool {
    fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .is_ok_and(|target| target.as_os_str() == tty_path || target.as_os_str() == "/dev/tty")
}

/// Sleeping in a read of the terminal, or in a poll while its stdin is the terminal.
fn blocked_on_tty(pid: i32, tty_path: &str) -> bool {
    if !matches!(stat(pid), Some(('S', _))) {
        return false;
    }
    let Ok(syscall) = fs::read_to_string(format!("/proc/{pid}/syscall")) else {
        // No access to the syscall (a setuid program such as sudo): fall back to the wait
        // channel of the terminal's line discipline.
        return fs::read_to_string(format!("/proc/{pid}/wchan"))
            .is_ok_and(|w| w == "wait_woken" || w == "n_tty_read");
    };
    let mut fields = syscall.split_ascii_whitespace();
    let Some(nr) = fields.next().and_then(|s| s.parse::<i64>().ok()) else {
        return false; // "running" or unknown
    };
    let first_arg = fields
        .next()
        .and_then(|s| i64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
    if READ_CALLS.contains(&nr) {
        return first_arg.is_some_and(|fd| fd_is_tty(pid, fd, tty_path));
    }
    POLL_CALLS.contains(&nr) && fd_is_tty(pid, 0, tty_path)
}
