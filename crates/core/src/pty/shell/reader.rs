//! Who reads a shell's terminal: its foreground process group as the person is shown it before
//! a secret is typed ([`Shell::foreground`]), and whether any other process could read a line
//! typed now before that group does; whether anything but the shell could take what is typed at
//! its prompt ([`Shell::lurker`]); what runs in the shell, for the model.
//!
//! Kept apart from the typing itself (`secret.rs`): this is all reading `/proc`, and what is
//! shown must name the reader truly even when a command line is crafted to mislead (`exec -a
//! sudo`, a right-to-left override), so each word is cut and quoted here.

use crate::pty::probe::Terminal;
use crate::pty::sys;
use crate::tree::{all_processes, read_stat};

use super::Shell;

/// At most this many processes of the foreground group are named to the person.
const MEMBERS_SHOWN: usize = 8;

/// Who reads the terminal: its foreground process group, its leader's start time (so a group
/// numbered alike later is another), and its other processes with theirs (a process of the
/// session may join the group later, `setpgid`, and read without being stopped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    pub(super) group: i32,
    started: Option<u64>,
    members: Vec<(i32, Option<u64>)>,
}

/// When `pid` started, in clock ticks after boot.
fn start_time(pid: i32) -> Option<u64> {
    read_stat(pid)?.started
}

/// The foreground of a terminal as the person is shown it.
#[derive(Debug, Clone)]
pub struct Foreground {
    pub reader: Reader,
    /// The leader's command line, then the other processes of its group: each with the file
    /// it runs where that is not what its first word names (`exec -a sudo`).
    pub described: String,
}

/// At most this many characters of each word of a command line are shown.
const WORD_SHOWN: usize = 60;

/// One word of a command line as shown: cut at [`WORD_SHOWN`] characters, and [`quoted`].
fn shown_word(word: &[u8]) -> String {
    let word = String::from_utf8_lossy(word);
    let cut: String = word.chars().take(WORD_SHOWN).collect();
    let shown = quoted(&cut);
    if word.chars().count() > WORD_SHOWN {
        format!("{shown}…")
    } else {
        shown
    }
}

/// `text` as it is, or quoted with its hidden characters escaped when it holds any: a space (a
/// run of them would vanish on the page), a control character (a newline), or a character that
/// is not printed as itself (a right-to-left override that shows `sudo` for `odus`, a zero-width
/// space), which Rust's debug form escapes, or one that prints as blank ([`looks_blank`]), which
/// it does not.
pub fn quoted(text: &str) -> String {
    let hides = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || looks_blank(c)
            || (!matches!(c, '"' | '\\' | '\'') && c.escape_debug().nth(1).is_some())
    };
    if !text.chars().any(hides) {
        return text.to_owned();
    }
    let mut shown = String::from('"');
    for c in text.chars() {
        if looks_blank(c) {
            shown.extend(c.escape_unicode());
        } else if c == '\'' {
            shown.push(c); // as a string's debug form has it
        } else {
            shown.extend(c.escape_debug());
        }
    }
    shown.push('"');
    shown
}

/// A character Rust prints as itself that shows as nothing or as a space: Unicode's default
/// ignorables (a Hangul filler, a variation selector) and the blank Braille pattern, with
/// which a name passes for words apart (`b⠀[open]`). The web view shows the same ones as their
/// code points (`view.js` `HIDING`).
pub fn looks_blank(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{2800}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}'
        | '\u{feff}' | '\u{ffa0}' | '\u{fff0}'..='\u{fff8}' | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}' | '\u{e0000}'..='\u{e0fff}')
}

/// `pid` as the person is shown it: the file it runs, first (a command line is the process's
/// own to set, `exec -a sudo`; a long one cannot push this out), then its command line.
fn process_line(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(shown_word)
        .collect();
    let line: String = words.join(" ").chars().take(4 * WORD_SHOWN).collect();
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(exe) => Some(format!("{} ({line})", quoted(&exe.to_string_lossy()))),
        Err(_) => (!line.is_empty()).then_some(line),
    }
}

/// The other processes of process group `group` than its leader, in pid order.
pub(super) fn group_members(group: i32) -> Vec<i32> {
    let mut members: Vec<i32> = all_processes()
        .into_iter()
        .filter(|p| p.pgid == group && p.pid != group)
        .map(|p| p.pid)
        .collect();
    members.sort_unstable();
    members
}

/// The processes of process group `group`: its other processes, then its leader.
pub(super) fn reading_group(group: i32) -> Vec<i32> {
    let mut readers = group_members(group);
    readers.push(group);
    readers
}

/// Whether a process started in the shell `shell` could take a line typed now before the
/// reading group: a thread of it waits in a read of the terminal (`tty`) while its process
/// is outside `group`, or a process of `group` is stopped.
pub(super) fn reader_could_be_overtaken(shell: i32, group: i32, tty: Terminal) -> bool {
    use crate::pty::probe::descendants;
    descendants(shell).into_iter().any(|pid| {
        let Some(stat) = read_stat(pid) else {
            return false;
        };
        if stat.pgid == group {
            return matches!(stat.state, 'T' | 't');
        }
        any_thread(pid, |task| reads_the_terminal(pid, task, tty) == Some(true))
    })
}

/// Whether the thread of `pid` whose `/proc` directory is `task` is in a read of the terminal
/// (`tty`) now; `None` when its system call cannot be read (a setuid program).
fn reads_the_terminal(pid: i32, task: &std::path::Path, tty: Terminal) -> Option<bool> {
    use crate::pty::probe::{READ_CALLS, Syscall, read_small};
    let text = read_small(&task.join("syscall"))?;
    Some(
        Syscall::parse(&text)
            .is_some_and(|call| READ_CALLS.contains(&call.nr) && reads_fd_of(pid, &call, tty)),
    )
}

/// Whether `call` of `pid`'s reads from the terminal `tty` (its first argument is an fd of it).
fn reads_fd_of(pid: i32, call: &crate::pty::probe::Syscall, tty: Terminal) -> bool {
    i64::try_from(call.args[0]).is_ok_and(|fd| tty.is_fd_of(pid, fd))
}

/// Where a thread asleep in a read of a terminal sleeps (`wchan`): the one reader that waits for
/// input holds the line discipline's read lock and sleeps in `wait_woken`; a reader queued behind
/// it sleeps on that lock, which `wchan` names by its caller, `n_tty_read`.
const WAITS_FIRST: &str = "wait_woken";
const WAITS_BEHIND: &str = "n_tty_read";

/// Where a process group stands among the readers of a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadOrder {
    /// A thread of it waits in a read of the terminal, holding its read lock: a line typed now
    /// goes to it.
    First,
    /// A thread of it waits in a read of the terminal behind another reader's, which started
    /// first (and may have closed its fd since: no fd table shows it): that one gets the line.
    Behind,
    /// None of it reads the terminal (yet).
    NotReading,
}

/// Where `readers` (a process group's processes) stand among the readers of the terminal
/// `tty`. A thread counts when its system call is a read of the terminal; one whose system
/// call cannot be read (a setuid program, such as `sudo`) by where it sleeps alone.
pub(super) fn read_order(readers: &[i32], tty: Terminal) -> ReadOrder {
    use crate::pty::probe::read_small;
    let mut order = ReadOrder::NotReading;
    for &pid in readers {
        any_thread(pid, |task| {
            let here = match read_small(&task.join("wchan")).as_deref() {
                Some(WAITS_FIRST) => ReadOrder::First,
                Some(WAITS_BEHIND) => ReadOrder::Behind,
                _ => return false,
            };
            if reads_the_terminal(pid, task, tty).unwrap_or(true) && order != ReadOrder::First {
                order = here;
            }
            order == ReadOrder::First
        });
        if order == ReadOrder::First {
            break;
        }
    }
    order
}

/// How many bytes the read takes at most in which a thread of `readers` waits first on the
/// terminal `tty` (holding its read lock, [`ReadOrder::First`]); `None` when none does, or when
/// its system call cannot be read (a setuid program) or counts no bytes (`readv`).
pub(super) fn first_read_count(readers: &[i32], tty: Terminal) -> Option<u64> {
    use crate::pty::probe::{Syscall, read_small};
    let mut count = None;
    for &pid in readers {
        any_thread(pid, |task| {
            if read_small(&task.join("wchan")).as_deref() != Some(WAITS_FIRST) {
                return false;
            }
            count = read_small(&task.join("syscall"))
                .and_then(|text| Syscall::parse(&text))
                .filter(|call| call.nr == libc::SYS_read && reads_fd_of(pid, call, tty))
                .map(|call| call.args[2]);
            count.is_some()
        });
        if count.is_some() {
            break;
        }
    }
    count
}

impl Shell {
    /// Processes agentty started (every spawn's, [`agentty_processes`]) other than `readers`
    /// with a thread queued behind another reader of a terminal (`WAITS_BEHIND`). Which terminal
    /// cannot be told (a queued reader may have closed its fd): any. Such a thread takes the
    /// next line of that terminal should the first reader's read end without one (a signal it
    /// handles), before that reader reads again.
    pub(super) fn queued_readers(&self, readers: &[i32]) -> Vec<i32> {
        use crate::pty::probe::read_small;
        agentty_processes(self)
            .into_iter()
            .filter(|pid| !readers.contains(pid))
            .filter(|&pid| {
                any_thread(pid, |task| {
                    read_small(&task.join("wchan")).as_deref() == Some(WAITS_BEHIND)
                })
            })
            .collect()
    }
}

/// Processes outside session `session` (and other than this server) that hold the terminal
/// (`tty`: its device and inode) open. A process of the terminal's session that is not in its
/// foreground group is stopped (`SIGTTIN`) or refused (`EIO`) when it reads; one outside has no
/// such bar. Compared by file, not path: a confined command's mount namespace may name another
/// terminal `/dev/pts/N`.
pub(super) fn outside_holders(tty: Terminal, session: i32) -> Vec<i32> {
    let own = std::process::id().cast_signed();
    all_processes()
        .into_iter()
        .filter(|p| p.pid != own && p.sid != session)
        .map(|p| p.pid)
        .filter(|&pid| {
            // Each thread's fd table: a thread may have one of its own (`unshare(CLONE_FILES)`).
            any_thread(pid, |task| holds(&task.join("fd"), tty))
        })
        .collect()
}

/// Every process agentty started, and their descendants: the children its spawns registered,
/// the orphans it adopted as subreaper (children of its main thread, where the kernel puts
/// them), and what the namespaces' inits adopted (the orphans of confined commands; the
/// init itself is agentty's own and runs nothing else). Found from these roots rather than
/// through every thread of the server, whose children lists cost a read each on every send;
/// the shell, single-threaded, has its one list read directly, through the file it holds
/// open, as is the main thread's.
fn agentty_processes(shell: &Shell) -> Vec<i32> {
    use crate::children::main_thread_children;
    use crate::pty::probe::{descendants, descendants_of_single_threaded, with_descendants};
    let mut roots = crate::reaper::spawned();
    roots.extend(main_thread_children());
    // agentty's own processes run nothing else: what the inits adopted is looked at below them.
    let own = crate::spawn::OwnProcesses::now();
    roots.retain(|&pid| !own.contains(pid));
    roots.sort_unstable();
    roots.dedup();
    let mut all = roots.clone();
    for root in roots {
        all.extend(match &shell.children {
            Some(children) if root == shell.pid => with_descendants(children.read()),
            _ if root == shell.pid => descendants_of_single_threaded(root),
            _ => descendants(root),
        });
    }
    for children in crate::namespace::inits_children() {
        all.extend(with_descendants(children));
    }
    all.sort_unstable();
    all.dedup();
    all
}

/// The processes that could read the memory of a program of shell `shell` that reads the
/// terminal as group `group` (docs/BEHAVIOUR.md §4 *Sealed entry*): every other process started
/// in the shell (its descendants: those of its own Landlock domain, which may read each other's
/// memory through `/proc/<pid>/mem`), the orphans agentty adopted (as subreaper, or the
/// namespaces' inits), whose spawn is no longer known: one may have left the shell's tree
/// (`setsid`, then its parent ended), and the commands of other spawns that run unconfined. Not
/// in reach: the commands of other confined spawns (another shell, a `terminal` call, a
/// background job), each in a Landlock domain of its own, which the kernel keeps from reading
/// into this one's. The shell itself and the reading job (`group`, [`of_the_job`]) are the ones
/// the person was shown. Zombies are past reading anything, unless a thread of theirs runs on.
pub(super) fn within_reach(shell: i32, group: i32) -> Vec<i32> {
    use crate::children::main_thread_children;
    use crate::pty::probe::{descendants, descendants_of_single_threaded};
    let spawned = crate::reaper::spawned();
    let own = crate::spawn::OwnProcesses::now();
    let mut all = descendants_of_single_threaded(shell);
    for orphan in main_thread_children()
        .into_iter()
        .filter(|&pid| !spawned.contains(&pid) && !own.contains(pid))
    {
        all.push(orphan);
        all.extend(descendants(orphan));
    }
    // Another spawn's commands run unconfined (`auto` mode, an approved escalation): no Landlock
    // domain keeps them out.
    for root in spawned
        .iter()
        .copied()
        .filter(|&pid| pid != shell && unconfined(pid))
    {
        all.push(root);
        all.extend(descendants(root));
    }
    for &init in own.inits() {
        all.extend(
            descendants_of_single_threaded(init)
                .into_iter()
                .filter(|&pid| !own.contains(pid)),
        );
    }
    all.sort_unstable();
    all.dedup();
    let leader = read_stat(group);
    all.retain(|&pid| {
        pid != shell
            && read_stat(pid).is_some_and(|s| {
                (!s.zombie || threads_run(pid)) && !of_the_job(&s, leader.as_ref())
            })
    });
    all
}

/// Whether `stat` is a process of the reading job, the group the person was shown: the group's
/// leader (the program the shell started) or a process it started, and theirs, down a line of
/// parents all in the group. Not a process that joined the group (`setpgid` is open to any
/// process of the shell's session: an attacker's background job did so to read the secret, and
/// so can one started after the reader, while it is stopped, before `fg`), nor another program
/// of a pipeline (the shell's child too, as a thief piped to is): the secret goes to a program
/// alone in its job.
fn of_the_job(stat: &crate::tree::ProcStat, leader: Option<&crate::tree::ProcStat>) -> bool {
    let Some(leader) = leader.filter(|l| l.pgid == l.pid) else {
        return false;
    };
    let mut at = *stat;
    // A line of parents is as long as the tree is deep; a bound against a cycle read mid-change.
    for _ in 0..64 {
        if at.pgid != leader.pid {
            return false;
        }
        if at.pid == leader.pid {
            return at.started == leader.started;
        }
        match read_stat(at.ppid) {
            Some(parent) => at = parent,
            None => return false,
        }
    }
    false
}

/// Whether a process its `stat` shows a zombie still has a thread running: one whose main
/// thread ended on its own (`SYS_exit`, not `exit_group`) stays a zombie leader while its other
/// threads go on, reading what they like (an attacker's pass read a secret so). A thread that
/// cannot be read is taken for running.
fn threads_run(pid: i32) -> bool {
    any_thread(pid, |task| {
        crate::pty::probe::read_small(&task.join("stat")).is_none_or(|stat| {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, after)| after.trim_start().chars().next());
            !matches!(state, Some('Z' | 'X'))
        })
    })
}

/// Variables that make a program load code or config from where its caller chose: the dynamic
/// loader's, the interpreters' and runtimes' that ask for a password (`getpass`, …), OpenSSL's
/// (a provider module), git's (a credential helper), the config homes. The agent sets the
/// shell's environment, so the program the person is shown could run the agent's code:
/// attackers' passes preloaded a `read()`, loaded an OpenSSL provider, set a git credential
/// helper by `GIT_CONFIG_*`, and moved `HOME` to a `usercustomize.py`, each copying the password.
/// A tripwire, not a wall: code so loaded can remove the variable from its own environment
/// before the entry is checked (BEHAVIOUR §4).
const CODE_LOADING: &[&str] = &[
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",
    "GCONV_PATH",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "BASH_ENV",
    "ENV",
    "OPENSSL_CONF",
    "OPENSSL_MODULES",
    "OPENSSL_ENGINES",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_EXEC_PATH",
    "XDG_CONFIG_HOME",
    // Home selects the user's config and Python's user site: only where agentty has one.
    "HOME",
];

/// A variable of [`CODE_LOADING`] set (not empty) in the environment of one of `pids` to
/// another value than agentty's own (a user's `PYTHONPATH`, which agentty and its shells
/// inherited, is the user's). An environment this server cannot read is of a program that
/// runs with more privilege than it (`sudo`, setuid), whose loader ignores such variables
/// (secure execution): taken to have none.
pub(super) fn code_loading_variable(pids: &[i32]) -> Option<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    pids.iter().find_map(|&pid| {
        crate::tree::with_environ(pid, |environ| {
            environ.split(|&b| b == 0).find_map(|entry| {
                CODE_LOADING.iter().copied().find(|name| {
                    entry
                        .strip_prefix(name.as_bytes())
                        .and_then(|rest| rest.strip_prefix(b"="))
                        .is_some_and(|value| {
                            let own = std::env::var_os(name);
                            !value.is_empty()
                                && own.as_ref().is_none_or(|own| own.as_bytes() != value)
                                && (*name != "HOME" || own.is_some())
                        })
                })
            })
        })
        .flatten()
    })
}

/// Whether `pid` runs without a seccomp filter, so unconfined: every confined command has one.
fn unconfined(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Seccomp:"))
            .is_some_and(|mode| mode.trim() == "0")
    })
}

/// A process among `pids` a tracer is attached to (`TracerPid` of any of its threads), with
/// that tracer: `strace -p`, `gdb -p`, from wherever it runs (a command run unconfined too).
pub(super) fn traced(pids: &[i32]) -> Option<(i32, i32)> {
    pids.iter().find_map(|&pid| {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        tasks.filter_map(Result::ok).find_map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).ok()?;
            let tracer: i32 = field(&status, "TracerPid:")?;
            (tracer != 0).then_some((pid, tracer))
        })
    })
}

/// How many bytes `pids` have read so far, all together (`rchar` in `/proc/<pid>/io`); `None`
/// when one's cannot be read (a setuid program).
pub(super) fn bytes_read(pids: &[i32]) -> Option<u64> {
    pids.iter().try_fold(0u64, |sum, pid| {
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
        Some(sum + field::<u64>(&io, "rchar:")?)
    })
}

/// The number on the line of `text` (a `/proc` file of `name: value` lines) that starts with
/// `name`.
fn field<T: std::str::FromStr>(text: &str, name: &str) -> Option<T> {
    text.lines()
        .find_map(|line| line.strip_prefix(name))?
        .trim()
        .parse()
        .ok()
}

/// Whether a thread of `pid` has the terminal `tty` among its fds.
fn holds_terminal_fd(pid: i32, tty: Terminal) -> bool {
    any_thread(pid, |task| holds(&task.join("fd"), tty))
}

/// Whether `test` holds for a thread of `pid` (its `/proc/<pid>/task/<tid>` directory); false
/// when they cannot be listed (the process is gone).
fn any_thread(pid: i32, mut test: impl FnMut(&std::path::Path) -> bool) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .is_ok_and(|tasks| tasks.filter_map(Result::ok).any(|task| test(&task.path())))
}

/// `pid` as the model is told of it: what it runs, and its pid as the shell sees it (a
/// confined shell runs in a PID namespace of its own: the innermost of `NSpid`), the one a
/// `kill` typed there takes.
fn named(pid: i32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let seen = status
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))
        .and_then(|pids| pids.split_whitespace().last()?.parse::<i32>().ok())
        .unwrap_or(pid);
    let pids = if seen == pid {
        format!("pid {pid}")
    } else {
        format!("pid {seen} in the shell, {pid} on the host")
    };
    match process_line(pid) {
        Some(line) => format!("{line} ({pids})"),
        None => pids,
    }
}

/// Whether an fd in the fd directory `fds` is the terminal `tty`. Only fds whose link names a
/// terminal are looked at ([`Terminal::is_at`]: a `stat` through any other could hang on a
/// stalled network mount).
fn holds(fds: &std::path::Path, tty: Terminal) -> bool {
    std::fs::read_dir(fds)
        .is_ok_and(|fds| fds.filter_map(Result::ok).any(|fd| tty.is_at(&fd.path())))
}

impl Shell {
    /// Who reads the terminal now, and how the person is shown it.
    pub fn foreground(&self) -> Option<Foreground> {
        let reader = self.reader()?;
        let mut described =
            process_line(reader.group).unwrap_or_else(|| "a program whose leader ended".into());
        let members = &reader.members;
        let shown: Vec<String> = members
            .iter()
            .take(MEMBERS_SHOWN)
            .filter_map(|&(pid, _)| process_line(pid))
            .collect();
        if !members.is_empty() {
            // The count first: a long list cannot hide how many there are.
            described.push_str(&format!(
                "; in its process group too ({}): {}",
                members.len(),
                shown.join(", ")
            ));
            if members.len() > MEMBERS_SHOWN {
                described.push_str(&format!(" and {} more", members.len() - MEMBERS_SHOWN));
            }
        }
        let described = described.chars().take(600).collect();
        Some(Foreground { reader, described })
    }

    /// The terminal's foreground process group and its leader's start time.
    pub(super) fn reader(&self) -> Option<Reader> {
        let master = self.master()?;
        let group = sys::foreground_group(master.raw())?;
        let started = start_time(group);
        // A full `/proc` scan: off the worker's other tasks.
        let members = crate::blocking::section(|| group_members(group))
            .into_iter()
            .map(|pid| (pid, start_time(pid)))
            .collect();
        Some(Reader {
            group,
            started,
            members,
        })
    }

    /// Who takes keys typed now (see [`crate::pty::probe::KeyReader`]).
    pub fn key_reader(&self) -> crate::pty::probe::KeyReader {
        let Some(master) = self.master() else {
            return crate::pty::probe::KeyReader::LineEditor;
        };
        let fg = sys::foreground_group(master.raw());
        crate::pty::probe::key_reader(self.pid, fg, self.terminal())
    }

    /// Whether the shell's own process group reads the terminal: the shell itself (a builtin
    /// such as `read`) or what runs in its group (a command substitution), not a program it
    /// started as a job.
    pub fn reads_itself(&self) -> bool {
        self.holds_terminal()
    }

    /// Whether the terminal's foreground group is the shell's own (`tcgetpgrp` on the master).
    pub(super) fn holds_terminal(&self) -> bool {
        self.master()
            .and_then(|m| sys::foreground_group(m.raw()))
            .is_some_and(|group| group == self.pid)
    }

    /// Another process than the shell that could take what is typed at the shell's prompt now,
    /// said in words; `None` when only the shell can. Looked for: the terminal's foreground
    /// group other than the shell's (a program took the terminal); among the processes agentty
    /// started (its descendants, the orphans it adopted as subreaper included), one in the
    /// shell's session that is in the shell's own process group (it joined: it reads
    /// unhindered) or waits on the terminal (a read or a poll, whichever group it is in: it
    /// began the read in the foreground group, or will join it once input comes), and one
    /// outside the session that holds the terminal open (job control does not stop its reads).
    /// Not looked at: processes agentty did not start (a daemon that runs commands for a
    /// confined one, `systemd-run`, tmux): a full `/proc` scan on every send costs too much.
    pub(super) fn lurker(&self) -> Option<String> {
        let master = self.master()?;
        let fg = sys::foreground_group(master.raw());
        drop(master);
        if fg != Some(self.pid) {
            let who = fg.map_or_else(|| "no process group".to_owned(), named);
            return Some(format!("the terminal's foreground is {who}, not the shell"));
        }
        agentty_processes(self)
            .into_iter()
            .filter(|&pid| pid != self.pid)
            .find_map(|pid| {
                let stat = read_stat(pid).filter(|s| !s.zombie)?;
                let why = if stat.sid == self.pid {
                    if stat.pgid == self.pid {
                        "joined the shell's process group, so it reads the terminal as the shell does"
                    } else if crate::pty::probe::blocked_on_tty(pid, self.terminal()) {
                        "waits to read the terminal"
                    } else {
                        return None;
                    }
                } else if holds_terminal_fd(pid, self.terminal()) {
                    "holds the terminal open from outside the shell's session, where job control \
                     does not stop its reads"
                } else {
                    return None;
                };
                Some(format!("{} {why}", named(pid)))
            })
    }

    /// What runs in the shell now, as the model is told: the terminal's foreground group's
    /// leader when that is not the shell, else the shell's first child (what it waits for).
    pub(super) fn running_program(&self) -> Option<String> {
        let fg = self.master().and_then(|m| sys::foreground_group(m.raw()))?;
        if fg != self.pid {
            return Some(named(fg));
        }
        let children =
            std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.pid)).ok()?;
        let child = children.split_whitespace().next()?.parse().ok()?;
        Some(named(child))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_word_shown_is_cut_and_quoted_when_it_could_hide_text() {
        assert_eq!(super::shown_word(b"ssh"), "ssh");
        assert_eq!(super::shown_word(b"a  b"), "\"a  b\"");
        assert_eq!(super::shown_word(b"x\ny"), "\"x\\ny\"");
        // A right-to-left override, or a zero-width space, would show other text than it is.
        assert_eq!(
            super::shown_word("x\u{202e}odus".as_bytes()),
            "\"x\\u{202e}odus\""
        );
        assert_eq!(super::quoted("su\u{200b}do"), "\"su\\u{200b}do\"");
        assert_eq!(super::quoted("/usr/bin/sudo"), "/usr/bin/sudo");
        // What prints as blank is escaped too: a name cannot pass for words apart.
        assert_eq!(
            super::quoted("b\u{2800}\u{3164}[open]\u{ffa0}bash"),
            "\"b\\u{2800}\\u{3164}[open]\\u{ffa0}bash\""
        );
        assert_eq!(super::quoted("it's \"x\""), "\"it's \\\"x\\\"\"");
        assert_eq!(super::quoted("don't"), "don't");
        let long = "y".repeat(100);
        assert_eq!(
            super::shown_word(long.as_bytes()),
            format!("{}…", &long[..60])
        );
    }
}
