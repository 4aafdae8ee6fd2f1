//! Is the foreground program waiting for the keyboard? Derived from process state, not text.
//!
//! A regex on `Password:` or `[y/N]` misses every prompt nobody thought of and fires on output
//! that merely contains the word. The kernel knows better: the terminal's foreground process
//! group (`tcgetpgrp` on the master) is the job that owns the keyboard, and a member blocked
//! waiting for the terminal to have input is waiting for the person. Measured on Linux 6.18: a
//! process in `read(0)` on a PTY sleeps (state S) with `/proc/<pid>/syscall` = `0 0x0 …`
//! (read, fd 0); readline and other line editors sleep in `pselect6`/`poll` on the terminal
//! instead, and event loops (node, asyncio) in `epoll_wait`. So a thread counts as waiting only
//! when the terminal is among what it waits on: the fd of a `read`; for `poll`/`ppoll` and
//! `select`/`pselect6` the fd set, read from the process's memory (`process_vm_readv`: the
//! server is its ancestor, not confined); for `epoll_wait` the fds the epoll instance watches
//! for input (`tfd:` lines of its `/proc/<pid>/fdinfo`). A server polling its socket, with the
//! terminal as its stdin, is running. When the set cannot be read (a setuid program's memory),
//! it does not count: input is never claimed to be awaited on a guess. The caller combines
//! this with "no new output for a short while", since a busy program pauses between reads.
//!
//! Limits: a program that watches the terminal *and* other input (an idle ssh client, a dev
//! server with keyboard shortcuts) counts as waiting once its output is quiet, which is true of
//! the terminal; a program reading the terminal through another fd number is recognised by the
//! fd's target (`/proc/<pid>/fd/N` → `/dev/pts/N`, then its device and inode: [`Terminal`]),
//! one reading `/dev/tty` the same way.

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

/// Linux syscall numbers that read a given fd.
pub(crate) const READ_CALLS: &[i64] = &[libc::SYS_read, libc::SYS_readv, libc::SYS_pread64];
/// Those that wait on an array of `pollfd`s: (fds, nfds, …).
#[cfg(target_arch = "x86_64")]
const POLL_CALLS: &[i64] = &[libc::SYS_poll, libc::SYS_ppoll];
#[cfg(not(target_arch = "x86_64"))]
const POLL_CALLS: &[i64] = &[libc::SYS_ppoll];
/// Those that wait on fd sets: (nfds, readfds, …).
#[cfg(target_arch = "x86_64")]
const SELECT_CALLS: &[i64] = &[libc::SYS_select, libc::SYS_pselect6];
#[cfg(not(target_arch = "x86_64"))]
const SELECT_CALLS: &[i64] = &[libc::SYS_pselect6];
/// Those that wait on an epoll instance: (epfd, …).
#[cfg(target_arch = "x86_64")]
const EPOLL_CALLS: &[i64] = &[
    libc::SYS_epoll_wait,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
];
#[cfg(not(target_arch = "x86_64"))]
const EPOLL_CALLS: &[i64] = &[libc::SYS_epoll_pwait, libc::SYS_epoll_pwait2];

/// Largest `pollfd` array or fd set read from a process: beyond it, not judged (not waiting).
const WAIT_SET_MAX_FDS: u64 = 65_536;

/// Checks the foreground group `fg` of the terminal `tty` whose session leader is `shell`.
pub fn input_wait(shell: i32, fg: Option<i32>, tty: Terminal) -> InputWait {
    let Some(fg) = fg else {
        return InputWait::No;
    };
    if fg == shell && blocked_on_tty(shell, tty) {
        return InputWait::Shell;
    }
    // A program of the foreground group; in the shell's own group too (one that joined it).
    let waiting = descendants(shell)
        .into_iter()
        .filter(|&pid| pgid_of(pid) == Some(fg))
        .any(|pid| blocked_on_tty(pid, tty));
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

/// Who takes keys typed now into the terminal `tty` of the shell `shell`, whose
/// foreground group is `fg` (see [`KeyReader`]).
pub fn key_reader(shell: i32, fg: Option<i32>, tty: Terminal) -> KeyReader {
    let Some(fg) = fg else {
        return KeyReader::LineEditor;
    };
    if fg == shell {
        return KeyReader::LineEditor;
    }
    let readers: Vec<i32> = descendants(shell)
        .into_iter()
        .filter(|&pid| pgid_of(pid) == Some(fg) && blocked_on_tty(pid, tty))
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
            let Some(text) = read_small(&task.path().join("children")) else {
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

/// [`descendants`] of a process with one thread (a shell, agentty's namespace init): its
/// children are read from its one list, with no look at its thread directory first.
pub(crate) fn descendants_of_single_threaded(root: i32) -> Vec<i32> {
    with_descendants(crate::children::of_single_threaded(root))
}

/// `children`, each followed by its [`descendants`].
pub(crate) fn with_descendants(children: Vec<i32>) -> Vec<i32> {
    let mut out = children.clone();
    for child in children {
        out.extend(descendants(child));
    }
    out
}

/// A small `/proc` file in one `read` (the kernel fills a buffer this size at once: a shorter
/// read is the whole file), without the `stat` `fs::read_to_string` makes to size its buffer:
/// the probes run on every send. A file of 4 KiB or more is read on to its end.
pub(crate) fn read_small(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let mut file = fs::File::open(path).ok()?;
    let mut buf = vec![0u8; 4096];
    let n = file.read(&mut buf).ok()?;
    if n == buf.len() {
        let mut rest = Vec::new();
        file.read_to_end(&mut rest).ok()?;
        buf.extend_from_slice(&rest);
    } else {
        buf.truncate(n);
    }
    String::from_utf8(buf).ok()
}

/// State letter and process group from a `stat` file's text.
fn stat(text: &str) -> Option<(char, i32)> {
    let rest = text.get(text.rfind(')')? + 2..)?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

fn pgid_of(pid: i32) -> Option<i32> {
    stat(&read_small(std::path::Path::new(&format!(
        "/proc/{pid}/stat"
    )))?)
    .map(|(_, pgid)| pgid)
}

/// A terminal as a process's fds show it: the text their links read (`/dev/pts/N`; `/N` for
/// one named by no path) and its device and inode. The text alone does not tell terminals
/// apart: each PTY spawn's terminal is the first of a devpts instance of its own, so all read
/// alike (`/dev/pts/0`, or `/0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal<'a> {
    pub path: &'a str,
    pub id: (u64, u64),
}

impl Terminal<'_> {
    /// Whether fd `fd` of `pid` is this terminal, or `/dev/tty` (its controlling terminal: this
    /// one for the processes of the terminal's session, where this is asked).
    pub(crate) fn is_fd_of(&self, pid: i32, fd: i64) -> bool {
        let link = std::path::PathBuf::from(format!("/proc/{pid}/fd/{fd}"));
        fs::read_link(&link)
            .is_ok_and(|target| target.as_os_str() == "/dev/tty" || self.is_file(&link, &target))
    }

    /// Whether the fd whose `/proc` link is `link` is this terminal.
    pub(crate) fn is_at(&self, link: &std::path::Path) -> bool {
        fs::read_link(link).is_ok_and(|target| self.is_file(link, &target))
    }

    /// Whether the fd whose `/proc` link is `link`, reading `target`, is this terminal: its
    /// text first (no call into another file's file system), then its device and inode.
    fn is_file(&self, link: &std::path::Path, target: &std::path::Path) -> bool {
        (target.as_os_str() == self.path || target.starts_with("/dev/pts/"))
            && file_id_at(link) == Some(self.id)
    }
}

/// The device and inode of the file at `path`, as the kernel last knew them: a file system
/// that asks a process for them (FUSE, which a command could serve in a user namespace of its
/// own) is not asked, so a process that never answers cannot hold the caller.
fn file_id_at(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed statx is a valid value for the kernel to fill.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stx` a buffer of the right type, both
    // alive for the call.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_STATX_DONT_SYNC,
            libc::STATX_INO,
            &mut stx,
        )
    };
    (rc == 0).then(|| {
        (
            libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            stx.stx_ino,
        )
    })
}

/// Whether a thread of `pid` sleeps waiting for the terminal to have input.
pub(crate) fn blocked_on_tty(pid: i32, tty: Terminal) -> bool {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        task.file_name()
            .to_str()
            .is_some_and(|tid| thread_waits_on_tty(pid, tid, tty))
    })
}

/// A thread's system call as its `/proc/<pid>/task/<tid>/syscall` says: the number and the six
/// arguments.
pub(crate) struct Syscall {
    pub nr: i64,
    pub args: [u64; 6],
}

impl Syscall {
    /// `None` when the thread runs (`running`) or the text is not a call.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut fields = text.split_ascii_whitespace();
        let nr = fields.next()?.parse().ok()?;
        let mut args = [0; 6];
        for (arg, field) in args.iter_mut().zip(fields) {
            *arg = u64::from_str_radix(field.trim_start_matches("0x"), 16).unwrap_or(0);
        }
        Some(Self { nr, args })
    }
}

/// Whether thread `tid` of `pid` sleeps in a call that waits for input on the terminal.
fn thread_waits_on_tty(pid: i32, tid: &str, tty: Terminal) -> bool {
    let dir = format!("/proc/{pid}/task/{tid}");
    let sleeping = read_small(std::path::Path::new(&format!("{dir}/stat")))
        .and_then(|text| stat(&text))
        .is_some_and(|(state, _)| state == 'S');
    if !sleeping {
        return false;
    }
    let Some(text) = read_small(std::path::Path::new(&format!("{dir}/syscall"))) else {
        // No access to the syscall (a setuid program such as sudo): fall back to the wait
        // channel of the terminal's line discipline, which only a read of a terminal sleeps in.
        return fs::read_to_string(format!("{dir}/wchan"))
            .is_ok_and(|w| w == "wait_woken" || w == "n_tty_read");
    };
    let Some(Syscall { nr, args }) = Syscall::parse(&text) else {
        return false; // "running" or unknown
    };
    let arg = |i: usize| args[i];
    let is_tty = |fd: u64| i64::try_from(fd).is_ok_and(|fd| tty.is_fd_of(pid, fd));
    if READ_CALLS.contains(&nr) {
        is_tty(arg(0))
    } else if POLL_CALLS.contains(&nr) {
        polled_for_input(pid, arg(0), arg(1))
            .into_iter()
            .any(is_tty)
    } else if SELECT_CALLS.contains(&nr) {
        selected_for_input(pid, arg(0), arg(1))
            .into_iter()
            .any(is_tty)
    } else if EPOLL_CALLS.contains(&nr) {
        epoll_input_fds(pid, arg(0)).into_iter().any(is_tty)
    } else {
        false
    }
}

/// `len` bytes at `addr` in the memory of `pid`; `None` when they cannot all be read.
fn memory_of(pid: i32, addr: u64, len: usize) -> Option<Vec<u8>> {
    if addr == 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: process_vm_readv writes at most `len` bytes into `buf`, which we own; the remote
    // address is only read by the kernel, on the other process's behalf.
    let n = unsafe { libc::process_vm_readv(pid, &raw const local, 1, &raw const remote, 1, 0) };
    (usize::try_from(n).ok() == Some(len)).then_some(buf)
}

/// The fds of the `pollfd` array (`fds`, `nfds` entries) that `pid` polls for input.
fn polled_for_input(pid: i32, fds: u64, nfds: u64) -> Vec<u64> {
    const POLLFD_BYTES: usize = size_of::<libc::pollfd>();
    const INPUT: i16 = libc::POLLIN | libc::POLLPRI | libc::POLLRDNORM;
    if nfds > WAIT_SET_MAX_FDS {
        return Vec::new();
    }
    let Some(bytes) = memory_of(pid, fds, nfds as usize * POLLFD_BYTES) else {
        return Vec::new();
    };
    bytes
        .chunks_exact(POLLFD_BYTES)
        .filter_map(|entry| {
            let fd = i32::from_ne_bytes(entry[0..4].try_into().ok()?);
            let events = i16::from_ne_bytes(entry[4..6].try_into().ok()?);
            (fd >= 0 && events & INPUT != 0).then_some(fd as u64)
        })
        .collect()
}

/// The fds set in the read set (`readfds`, `nfds` bits) that `pid` selects on.
fn selected_for_input(pid: i32, nfds: u64, readfds: u64) -> Vec<u64> {
    const WORD_BYTES: usize = size_of::<libc::c_ulong>();
    const WORD_BITS: u64 = WORD_BYTES as u64 * 8;
    if nfds > WAIT_SET_MAX_FDS {
        return Vec::new();
    }
    let words = nfds.div_ceil(WORD_BITS) as usize;
    let Some(bytes) = memory_of(pid, readfds, words * WORD_BYTES) else {
        return Vec::new();
    };
    let mut set = Vec::new();
    for (i, word) in bytes.chunks_exact(WORD_BYTES).enumerate() {
        let mut bits = [0u8; 8];
        bits[..WORD_BYTES].copy_from_slice(word);
        let word = u64::from_ne_bytes(bits);
        for bit in 0..WORD_BITS {
            let fd = i as u64 * WORD_BITS + bit;
            if fd < nfds && word & (1 << bit) != 0 {
                set.push(fd);
            }
        }
    }
    set
}

/// The fds the epoll instance `epfd` of `pid` watches for input, from its `fdinfo`
/// (`tfd: 0 events: 19 data: …`).
fn epoll_input_fds(pid: i32, epfd: u64) -> Vec<u64> {
    const INPUT: u64 = (libc::EPOLLIN | libc::EPOLLPRI | libc::EPOLLRDNORM) as u64;
    let Ok(info) = fs::read_to_string(format!("/proc/{pid}/fdinfo/{epfd}")) else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| {
            let mut words = line.split_ascii_whitespace();
            let (Some("tfd:"), Some(fd), Some("events:"), Some(events)) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                return None;
            };
            let events = u64::from_str_radix(events, 16).ok()?;
            (events & INPUT != 0).then(|| fd.parse().ok()).flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's own wait sets, read back through its memory as another process's are.
    #[test]
    fn wait_sets_are_read_from_memory() {
        let me = std::process::id().cast_signed();
        let fds = [
            libc::pollfd {
                fd: 7,
                events: libc::POLLOUT,
                revents: 0,
            },
            libc::pollfd {
                fd: 9,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        assert_eq!(polled_for_input(me, fds.as_ptr() as u64, 2), vec![9]);
        // SAFETY: a zeroed fd_set is empty; FD_SET sets bits within it.
        let set = unsafe {
            let mut set: libc::fd_set = std::mem::zeroed();
            libc::FD_SET(0, &raw mut set);
            libc::FD_SET(70, &raw mut set);
            set
        };
        let at = (&raw const set) as u64;
        assert_eq!(selected_for_input(me, 71, at), vec![0, 70]);
        assert_eq!(selected_for_input(me, 70, at), vec![0]);
        assert!(polled_for_input(me, 0, 2).is_empty());
    }

    /// A terminal is known among a process's fds by its file, not its name alone: every PTY
    /// spawn's terminal is the first of a devpts instance of its own, so all are named alike.
    #[test]
    fn a_terminal_is_known_by_its_file_not_its_name() {
        let pair = crate::pty::sys::open_pair(80, 24).expect("a pty");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::process::Stdio::from(pair.slave.try_clone().unwrap()))
            .spawn()
            .expect("sleep");
        let pid = child.id().cast_signed();
        let own = Terminal {
            path: &pair.tty_path,
            id: pair.tty_id,
        };
        let alike = Terminal {
            id: (pair.tty_id.0, pair.tty_id.1 + 1),
            ..own
        };
        let link = std::path::PathBuf::from(format!("/proc/{pid}/fd/0"));
        let seen = (
            own.is_fd_of(pid, 0),
            own.is_at(&link),
            alike.is_fd_of(pid, 0),
            alike.is_at(&link),
            own.is_fd_of(pid, 1),
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(seen, (true, true, false, false, false));
    }
}
