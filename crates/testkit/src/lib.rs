//! Test support shared by agentty's suites: one `/proc` scan that the checks for leftovers,
//! zombies and escapees are built on, instead of a copy per test crate, and the state dirs of
//! the servers the suites start ([`state_dir`]).
//!
//! Linux only, like the behaviour these tests check. Every read tolerates a process that ends
//! while it is being read: it is simply not listed.

use std::fs;

/// A fresh state dir for a server under test, removed on drop: under
/// `$HOME/.local/state/agentty-tests`, outside every place a confined command may write. A
/// confining server refuses a state dir in a temp dir or a root, since it must not trust later
/// what its commands may write.
pub fn state_dir() -> tempfile::TempDir {
    use std::os::unix::fs::DirBuilderExt;
    let Some(home) = std::env::var_os("HOME") else {
        panic!("HOME is not set (the tests' state dirs are made there)");
    };
    let parent = std::path::Path::new(&home).join(".local/state/agentty-tests");
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&parent)
        .unwrap_or_else(|e| panic!("cannot make {}: {e}", parent.display()));
    tempfile::Builder::new()
        .prefix("state-")
        .tempdir_in(&parent)
        .unwrap_or_else(|e| panic!("cannot make a state dir in {}: {e}", parent.display()))
}

/// A program that tries to make agentty believe the shell it runs in is idle, by every trick
/// the issue lists (see its header); the PTY suites write it to a file and run it.
pub const FORGER_PY: &str = include_str!("forger.py");

/// Waits (at most `within`) until the file `ready` exists and a process with that path among
/// its arguments (the forger that wrote it) is blocked in a `read`; returns its pid. Found by
/// its arguments, not the pid it wrote: a confined one sees its pid in another PID namespace.
pub fn wait_reading(ready: &std::path::Path, within: std::time::Duration) -> i32 {
    let started = std::time::Instant::now();
    let read = libc::SYS_read.to_string();
    loop {
        if ready.exists() {
            let reading = processes_with_arg(&ready.to_string_lossy())
                .into_iter()
                .find(|pid| {
                    let call =
                        fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
                    call.split_whitespace().next() == Some(read.as_str())
                });
            if let Some(pid) = reading {
                return pid;
            }
        }
        assert!(
            started.elapsed() < within,
            "{} never started reading",
            ready.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// One row of `/proc/<pid>/stat`: what the checks need of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    pub ppid: i32,
    /// The process group.
    pub pgrp: i32,
    /// The state letter (`R`, `S`, `Z`, …).
    pub state: char,
}

impl Stat {
    pub fn zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// The value of field `name` (`SigBlk`, `voluntary_ctxt_switches`, …) in the text of a
/// `/proc/…/status` file, trimmed; panics when it is missing.
pub fn status_field<'a>(status: &'a str, name: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map_or_else(|| panic!("{name} missing in {status}"), str::trim)
}

/// A signal set field of a `/proc/…/status` text (`SigBlk`, `SigIgn`, `SigCgt`), as bits.
pub fn signal_set(status: &str, name: &str) -> u64 {
    u64::from_str_radix(status_field(status, name), 16)
        .unwrap_or_else(|_| panic!("{name} is not a signal set in {status}"))
}

/// `/proc/<pid>/stat`, parsed; `None` once the process is gone.
pub fn stat(pid: i32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself hold spaces and parentheses.
    let mut fields = text.get(text.rfind(')')? + 2..)?.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat {
        pid,
        ppid,
        pgrp,
        state,
    })
}

/// Whether a thread of a process in process group `group` sleeps in a read of a terminal, as
/// `wait_woken` (first in line) or `n_tty_read` (queued behind another reader).
pub fn group_reads_a_terminal(group: i32) -> bool {
    pids()
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|s| s.pgrp == group))
        .any(|pid| {
            fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
                tasks.flatten().any(|task| {
                    let wchan = fs::read_to_string(task.path().join("wchan")).unwrap_or_default();
                    matches!(wchan.trim(), "wait_woken" | "n_tty_read")
                })
            })
        })
}

/// Every pid in `/proc` now.
pub fn pids() -> Vec<i32> {
    fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Live (non-zombie) processes, each with the named `/proc/<pid>/` file read (`cmdline`,
/// `environ`, `stat`, …).
pub fn live_processes(file: &str) -> Vec<(i32, Vec<u8>)> {
    pids()
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|s| !s.zombie()))
        .map(|pid| {
            (
                pid,
                fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default(),
            )
        })
        .collect()
}

/// Live processes whose environment has exactly `var=value`.
pub fn processes_with_env(var: &str, value: &str) -> Vec<i32> {
    let wanted = format!("{var}={value}");
    with_env_entry(|entry| entry == wanted.as_bytes())
}

fn with_env_entry(matches: impl Fn(&[u8]) -> bool) -> Vec<i32> {
    live_processes("environ")
        .into_iter()
        .filter(|(_, env)| env.split(|&b| b == 0).any(&matches))
        .map(|(pid, _)| pid)
        .collect()
}

/// Live processes with `arg` as one of their arguments.
pub fn processes_with_arg(arg: &str) -> Vec<i32> {
    live_processes("cmdline")
        .into_iter()
        .filter(|(_, cmd)| cmd.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
        .map(|(pid, _)| pid)
        .collect()
}

/// Kills every process with the argument it holds when dropped: a test that fails, wherever
/// it panics, leaves nothing running (nor a lock such a process held).
pub struct KillOnDrop(pub String);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in processes_with_arg(&self.0) {
            // SAFETY: kill takes a pid and a signal number; at worst the pid is gone already.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Live processes with `needle` anywhere in their command line.
pub fn processes_naming(needle: &str) -> Vec<i32> {
    live_processes("cmdline")
        .into_iter()
        .filter(|(_, cmd)| String::from_utf8_lossy(cmd).contains(needle))
        .map(|(pid, _)| pid)
        .collect()
}

/// A terminal held by the test, as the user's other terminals are: the master (non-blocking)
/// and the slave's path, which a command under test may find and must not type into.
pub fn open_terminal() -> (std::os::fd::OwnedFd, String) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on a fd owned from here on; ptsname's buffer is copied at once.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(fd))
            .to_string_lossy()
            .into_owned();
        libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
        (std::os::fd::OwnedFd::from_raw_fd(fd), name)
    }
}

/// Children of `pid` (of any of its threads), zombies included.
pub fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|s| s.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// Children of `pid` that exited and were never reaped.
pub fn zombie_children(pid: i32) -> Vec<i32> {
    children(pid)
        .into_iter()
        .filter(|&child| stat(child).is_some_and(|s| s.zombie()))
        .collect()
}

/// A pipe whose lock a thread holds, splicing an idle socket into it, until dropped (also when
/// a test fails: the process could not exit while a thread waits on the lock): what a command
/// that splices into its output does. `files` are files of its read end of their own (each its
/// own last reference, to let go of), opened before the lock was taken (an open waits for it
/// too).
pub struct HeldPipe {
    pub read: Option<std::os::fd::OwnedFd>,
    pub files: Vec<std::os::fd::OwnedFd>,
    feed: std::os::unix::net::UnixStream,
    splicer: Option<std::thread::JoinHandle<isize>>,
}

impl HeldPipe {
    /// A held pipe with `files` files of its read end.
    pub fn new(files: usize) -> Self {
        use std::os::fd::AsRawFd;
        let (read, write) = std::io::pipe().unwrap_or_else(|e| panic!("pipe: {e}"));
        let read = std::os::fd::OwnedFd::from(read);
        let files = (0..files)
            .map(|_| {
                std::fs::File::open(format!("/proc/self/fd/{}", read.as_raw_fd()))
                    .unwrap_or_else(|e| panic!("a file of the pipe's read end: {e}"))
                    .into()
            })
            .collect();
        let (idle, feed) =
            std::os::unix::net::UnixStream::pair().unwrap_or_else(|e| panic!("socketpair: {e}"));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let splicer = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            let _ = tid_tx.send(unsafe { libc::gettid() });
            // SAFETY: splice between two fds this thread holds; null offsets (a socket, a pipe).
            unsafe {
                libc::splice(
                    idle.as_raw_fd(),
                    std::ptr::null_mut(),
                    write.as_raw_fd(),
                    std::ptr::null_mut(),
                    4096,
                    0,
                )
            }
        });
        let tid = tid_rx
            .recv()
            .unwrap_or_else(|e| panic!("the splicer did not start: {e}"));
        let splice = libc::SYS_splice.to_string();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
            .map_or(true, |s| s.split_whitespace().next() != Some(&splice))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the splicer is not in its splice"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        HeldPipe {
            read: Some(read),
            files,
            feed,
            splicer: Some(splicer),
        }
    }
}

impl Drop for HeldPipe {
    /// A byte for the splice: it ends, and the lock is let go.
    fn drop(&mut self) {
        let _ = std::io::Write::write_all(&mut &self.feed, b"x");
        if let Some(splicer) = self.splicer.take() {
            let spliced = splicer.join();
            if !std::thread::panicking() {
                assert!(
                    matches!(spliced, Ok(1)),
                    "the splice did not end with the byte"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_child_by_argument_then_its_zombie_then_nothing() {
        let arg = format!("30.{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg(&arg)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn sleep: {e}"));
        let pid = child.id() as i32;
        // The spawn returns once the child is in `exec`, before the kernel has set up its
        // arguments: its cmdline reads empty for that moment (a fresh clone's `scripts/test`
        // once caught it so). Polled, bounded.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while processes_with_arg(&arg).is_empty() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(processes_with_arg(&arg), vec![pid]);
        assert!(children(std::process::id() as i32).contains(&pid));
        let _ = child.kill();
        // Killed, not reaped: a zombie child, and no longer live.
        while stat(pid).is_some_and(|s| !s.zombie()) {
            std::thread::yield_now();
        }
        assert!(zombie_children(std::process::id() as i32).contains(&pid));
        assert!(processes_with_arg(&arg).is_empty());
        let _ = child.wait();
        assert_eq!(stat(pid), None);
    }
}
