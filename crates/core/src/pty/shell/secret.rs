//! Typing a secret (a password a person entered in the web view) into a shell's terminal, for
//! the program that asks for it and for nothing else: the agent that drives the shell must not
//! get it, nor steer it to a reader of its own.
//!
//! The person is shown who reads the terminal ([`Shell::foreground`]) and judges; what is typed
//! then must reach that reader, as the whole of the line it reads, and must not outlive that
//! read. So, with the shell's send lock held (no send types meanwhile; TIOCSTI is refused to
//! commands):
//! - the reader must be the one the person was shown (same process group, same leader), and
//!   no process outside the shell's session may hold the terminal open (job control does not
//!   stop its reads);
//! - the terminal must read a password as `getpass` leaves it: lines edited by the terminal,
//!   echo off, Enter ending the line; and no character of the secret may be one of the keys the
//!   terminal acts on (`stty eol a` would cut the line at an `a`);
//! - no whole line may wait to be read before it (it would go to whoever reads after them),
//!   and a partial one is dropped first (`echo ` would become its start), as password readers
//!   do (`TCSAFLUSH`);
//! - what is left in the input queue once the program has read the line, or once
//!   [`SECRET_TYPE_MS`] has passed (or the typing is dropped), is taken back out.
//!
//! The input queue is seen from the terminal's slave side ([`sys::Peer`]), opened from the
//! master for the moment of the typing.

use std::time::Duration;

use tokio::time::Instant;

use crate::pty::sys::{self, Peer};
use crate::tree::{all_processes, read_stat};

use super::*;

/// Why a secret was not typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretRefused {
    /// The shell has ended.
    Closed,
    /// No program reads a password now as `getpass` asks (the terminal echoes, reads key by
    /// key, or Enter would not end the line): the secret could show, or go to the wrong reader.
    NotAsked,
    /// Another program reads the terminal now than the one the person was shown.
    Changed,
    /// A character of the secret is one of the keys the terminal acts on (`stty -a`).
    SpecialKey,
    /// Lines typed earlier wait to be read: the program would read them first, and the secret
    /// would go to whoever reads after them (the shell, which runs and shows it).
    Pending,
    /// The terminal refuses to be opened (`TIOCEXCL`), so the secret's read cannot be watched.
    Locked,
    /// The shell itself reads the line (a `read -s` at its prompt, a command substitution): the
    /// value would land where the agent reads it (a shell variable).
    ShellItself,
    /// Another process than the one shown could read the line first: it holds the terminal
    /// open outside the shell's session (`setsid`, unhindered by job control), or waits in a
    /// read of it outside the reading group (it started the read in that group, then left),
    /// or a process of the reading group is stopped (its read would wait while another joins).
    OtherReader,
    /// The program did not read it within [`SECRET_TYPE_MS`]: it was taken back out of the
    /// input queue, so no later reader (the shell, once the program ends) gets it.
    NotTaken,
}

/// How long a secret may wait to be read: a program that asks for a password reads it at
/// once, so only one that does not waits this long.
pub const SECRET_TYPE_MS: u64 = 5_000;

/// Between two looks at whether the program has read the secret.
const SECRET_READ_POLL: Duration = Duration::from_millis(5);

/// At most this many processes of the foreground group are named to the person.
const MEMBERS_SHOWN: usize = 8;

/// Who reads the terminal: its foreground process group, its leader's start time (so a group
/// numbered alike later is another), and its other processes with theirs (a process of the
/// session may join the group later, `setpgid`, and read without being stopped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    group: i32,
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

/// The terminal's settings, read through the master (they are the slave's).
pub(super) fn settings(master: std::os::fd::RawFd) -> Option<libc::termios> {
    // SAFETY: tcgetattr writes one termios into the zeroed struct given.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(master, &raw mut t) == 0).then_some(t)
    }
}

/// Whether the terminal waits for a password: a line read by the terminal itself (canonical)
/// with echo off, as `getpass`, `sudo`, `ssh` and `read -s` ask. A line editor at a shell
/// prompt (readline) and full-screen programs turn echo off too, but read key by key.
fn asks_password(t: &libc::termios) -> bool {
    t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO == 0
}

/// Input flags that change what is typed on its way to the reader: the 8th bit stripped, and
/// (Linux) upper case made lower.
#[cfg(target_os = "linux")]
const ALTERING: libc::tcflag_t = libc::ISTRIP | libc::IUCLC;
#[cfg(not(target_os = "linux"))]
const ALTERING: libc::tcflag_t = libc::ISTRIP;

/// Whether a secret typed with Enter (`\r`) is one line the terminal hands over whole and as
/// typed: it asks for a password, edits lines itself (no `EXTPROC`), turns Enter into a line's
/// end (`ICRNL`, without `IGNCR` or `INLCR`) and alters nothing ([`ALTERING`]), as `getpass`
/// leaves it.
fn takes_a_line(t: &libc::termios) -> bool {
    asks_password(t)
        && t.c_lflag & libc::EXTPROC == 0
        && t.c_iflag & libc::ICRNL != 0
        && t.c_iflag & (libc::IGNCR | libc::INLCR | ALTERING) == 0
}

/// Whether a byte of `secret` is a key the terminal acts on rather than types: a line's end,
/// an erase, a kill, a signal, a literal-next, flow control (0 turns one off).
fn has_special_key(t: &libc::termios, secret: &[u8]) -> bool {
    [
        libc::VEOF,
        libc::VEOL,
        libc::VEOL2,
        libc::VERASE,
        libc::VWERASE,
        libc::VKILL,
        libc::VREPRINT,
        libc::VLNEXT,
        libc::VDISCARD,
        libc::VINTR,
        libc::VQUIT,
        libc::VSUSP,
        libc::VSTART,
        libc::VSTOP,
    ]
    .iter()
    .map(|&key| t.c_cc[key])
    .any(|c| c != 0 && secret.contains(&c))
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
/// space), which Rust's debug form escapes.
fn quoted(text: &str) -> String {
    let hides = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || (!matches!(c, '"' | '\\' | '\'') && c.escape_debug().nth(1).is_some())
    };
    if text.chars().any(hides) {
        format!("{text:?}")
    } else {
        text.to_owned()
    }
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
fn group_members(group: i32) -> Vec<i32> {
    let mut members: Vec<i32> = all_processes()
        .into_iter()
        .filter(|p| p.pgid == group && p.pid != group)
        .map(|p| p.pid)
        .collect();
    members.sort_unstable();
    members
}

/// Whether a process started in the shell `shell` could take a line typed now before the
/// reading group: a thread of it waits in a read of the terminal (`tty_path`) while its process
/// is outside `group`, or a process of `group` is stopped.
fn reader_could_be_overtaken(shell: i32, group: i32, tty_path: &str) -> bool {
    use crate::pty::probe::{READ_CALLS, descendants, fd_is_tty};
    descendants(shell).into_iter().any(|pid| {
        let Some(stat) = read_stat(pid) else {
            return false;
        };
        if stat.pgid == group {
            return matches!(stat.state, 'T' | 't');
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return false;
        };
        tasks.filter_map(Result::ok).any(|task| {
            let Ok(syscall) = std::fs::read_to_string(task.path().join("syscall")) else {
                return false;
            };
            let mut fields = syscall.split_ascii_whitespace();
            let nr = fields.next().and_then(|s| s.parse::<i64>().ok());
            let fd = fields
                .next()
                .and_then(|s| i64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
            nr.is_some_and(|nr| READ_CALLS.contains(&nr))
                && fd.is_some_and(|fd| fd_is_tty(pid, fd, tty_path))
        })
    })
}

/// Processes outside session `session` (and other than this server) that hold the terminal
/// (`tty`: its device and inode) open. A process of the terminal's session that is not in its
/// foreground group is stopped (`SIGTTIN`) or refused (`EIO`) when it reads; one outside has no
/// such bar. Compared by file, not path: a confined command's mount namespace may name another
/// terminal `/dev/pts/N`.
fn outside_holders(tty: (u64, u64), session: i32) -> Vec<i32> {
    let own = std::process::id().cast_signed();
    all_processes()
        .into_iter()
        .filter(|p| p.pid != own && p.sid != session)
        .map(|p| p.pid)
        .filter(|&pid| {
            // Each thread's fd table: a thread may have one of its own (`unshare(CLONE_FILES)`).
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                return false;
            };
            tasks
                .filter_map(Result::ok)
                .any(|task| holds(&task.path().join("fd"), tty))
        })
        .collect()
}

/// Whether an fd in the fd directory `fds` is the terminal `tty`. Only fds whose link names a
/// terminal are looked at (a `stat` through any other could hang on a stalled network mount).
fn holds(fds: &std::path::Path, tty: (u64, u64)) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = std::fs::read_dir(fds) else {
        return false;
    };
    fds.filter_map(Result::ok).any(|fd| {
        let names_a_terminal = std::fs::read_link(fd.path())
            .is_ok_and(|to| to.starts_with("/dev/pts/") || to.starts_with("/dev/tty"));
        names_a_terminal && std::fs::metadata(fd.path()).is_ok_and(|m| (m.dev(), m.ino()) == tty)
    })
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
    fn reader(&self) -> Option<Reader> {
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

    /// Whether the shell's own process group reads the terminal: the shell itself (a builtin
    /// such as `read`) or what runs in its group (a command substitution), not a program it
    /// started as a job.
    pub fn reads_itself(&self) -> bool {
        self.master()
            .and_then(|m| sys::foreground_group(m.raw()))
            .is_some_and(|group| group == self.pid)
    }

    /// Whether a program waits for a password: a line with echo off.
    pub fn asks_password(&self) -> bool {
        self.master()
            .and_then(|m| settings(m.raw()))
            .is_some_and(|t| asks_password(&t))
    }

    /// Types `secret` and Enter for `reader` (the foreground the person was shown; `None`:
    /// whoever reads now), within [`SECRET_TYPE_MS`] (see the module header). It is not
    /// recorded as typed text nor captured as a send's input; with echo off, nothing of it
    /// reaches the output either.
    pub async fn type_secret(
        &self,
        secret: &[u8],
        reader: Option<&Reader>,
    ) -> Result<(), SecretRefused> {
        self.type_secret_within(secret, reader, Duration::from_millis(SECRET_TYPE_MS))
            .await
    }

    /// [`Shell::type_secret`] with the program given `bound` to read it (tests shorten it).
    #[doc(hidden)]
    pub async fn type_secret_within(
        &self,
        secret: &[u8],
        reader: Option<&Reader>,
        bound: Duration,
    ) -> Result<(), SecretRefused> {
        let _one_at_a_time = self.send_lock.lock().await;
        let master = self.master().ok_or(SecretRefused::Closed)?;
        let t = settings(master.raw()).ok_or(SecretRefused::Closed)?;
        if !takes_a_line(&t) {
            return Err(SecretRefused::NotAsked);
        }
        if reader.is_some_and(|shown| self.reader().as_ref() != Some(shown)) {
            return Err(SecretRefused::Changed);
        }
        if has_special_key(&t, secret) {
            return Err(SecretRefused::SpecialKey);
        }
        if self.reads_itself() {
            return Err(SecretRefused::ShellItself);
        }
        let peer = Peer::open(master.raw(), &self.tty_path).map_err(|e| {
            if e.raw_os_error() == Some(libc::EBUSY) {
                SecretRefused::Locked
            } else {
                SecretRefused::Closed
            }
        })?;
        if peer.line_waiting() {
            return Err(SecretRefused::Pending);
        }
        // Full `/proc` scans: off the worker's other tasks.
        let tty = peer.file_id().map_err(|_| SecretRefused::Closed)?;
        let group = reader.map_or_else(|| self.reader().map(|r| r.group), |r| Some(r.group));
        let overtaken = crate::blocking::section(|| {
            !outside_holders(tty, self.pid).is_empty()
                || group.is_none_or(|g| reader_could_be_overtaken(self.pid, g, &self.tty_path))
        });
        if overtaken {
            return Err(SecretRefused::OtherReader);
        }
        // From here on, whatever happens (this future dropped included), what is left in the
        // input queue is taken back and the prompt owed for the secret is given back.
        let mut typing = Typing {
            peer,
            shell: self,
            owed_here: false,
            done: false,
        };
        typing
            .peer
            .discard_input()
            .map_err(|_| SecretRefused::Closed)?;
        lock(&self.typed).clear();
        // The program that asked finishes with the shell's next prompt: owed, so its exit code
        // is told by the next send. Owed before it can read (it may end at once), and once: a
        // send that returned while it ran (before it was seen asking) owes that prompt
        // already, and no line waits behind the secret.
        typing.owed_here = {
            let mut live = lock(&self.live);
            let owed_here = live.owed_prompts == 0;
            live.owed_prompts = live.owed_prompts.max(1);
            owed_here
        };
        let mut keys = Keys(Vec::with_capacity(secret.len() + 1));
        keys.0.extend_from_slice(secret);
        keys.0.push(b'\r');
        let bound = Instant::now() + bound;
        let written = master.write_until(&keys.0, bound).await;
        let whole = keys.0.len();
        drop(keys);
        self.touch();
        let read = match written {
            Err(_) => return Err(SecretRefused::Closed),
            Ok(taken) if taken < whole => false,
            Ok(_) => loop {
                if !typing.peer.line_waiting() {
                    break true;
                }
                if Instant::now() >= bound {
                    break false;
                }
                tokio::time::sleep(SECRET_READ_POLL).await;
            },
        };
        typing.done = read;
        drop(typing);
        if read {
            Ok(())
        } else {
            Err(SecretRefused::NotTaken)
        }
    }
}

/// A secret being typed: on drop, what is left of it in the input queue is taken back (the
/// program read its line, or did not: nothing legitimate is left there, since the send lock is
/// held), and when it was not read the prompt owed for it is given back.
struct Typing<'s> {
    peer: Peer,
    shell: &'s Shell,
    owed_here: bool,
    /// The program read the line.
    done: bool,
}

impl Drop for Typing<'_> {
    fn drop(&mut self) {
        let _ = self.peer.discard_input();
        if !self.done && self.owed_here {
            let mut live = lock(&self.shell.live);
            live.owed_prompts = live.owed_prompts.saturating_sub(1);
        }
    }
}

/// The keys of a secret, zeroed when dropped.
struct Keys(Vec<u8>);

impl Drop for Keys {
    fn drop(&mut self) {
        self.0.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::{has_special_key, takes_a_line};

    fn password_prompt() -> libc::termios {
        // SAFETY: a zeroed termios is a valid value; fields are set below.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        t.c_lflag = libc::ICANON | libc::ISIG | libc::IEXTEN;
        t.c_iflag = libc::ICRNL;
        t.c_cc[libc::VINTR] = 3;
        t.c_cc[libc::VEOF] = 4;
        t.c_cc[libc::VERASE] = 0x7f;
        t
    }

    #[test]
    fn a_line_is_taken_only_as_getpass_leaves_the_terminal() {
        let t = password_prompt();
        assert!(takes_a_line(&t));
        for (flag, on_lflag) in [
            (libc::ECHO, true),
            (libc::EXTPROC, true),
            (libc::IGNCR, false),
            (libc::INLCR, false),
            (libc::ISTRIP, false),
            (libc::IUCLC, false),
        ] {
            let mut odd = t;
            if on_lflag {
                odd.c_lflag |= flag;
            } else {
                odd.c_iflag |= flag;
            }
            assert!(!takes_a_line(&odd), "{flag:#x}");
        }
        let mut no_icrnl = t;
        no_icrnl.c_iflag &= !libc::ICRNL;
        assert!(!takes_a_line(&no_icrnl));
        let mut raw = t;
        raw.c_lflag &= !libc::ICANON;
        assert!(!takes_a_line(&raw));
    }

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
        assert_eq!(super::quoted("it's \"x\""), "\"it's \\\"x\\\"\"");
        assert_eq!(super::quoted("don't"), "don't");
        let long = "y".repeat(100);
        assert_eq!(
            super::shown_word(long.as_bytes()),
            format!("{}…", &long[..60])
        );
    }

    #[test]
    fn a_secret_with_a_key_the_terminal_acts_on_is_found() {
        let mut t = password_prompt();
        assert!(!has_special_key(&t, b"hunter2"));
        t.c_cc[libc::VEOL] = b'n';
        assert!(has_special_key(&t, b"hunter2"));
        t.c_cc[libc::VEOL] = 0;
        t.c_cc[libc::VKILL] = b'2';
        assert!(has_special_key(&t, b"hunter2"));
    }
}
