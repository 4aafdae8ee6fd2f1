//! Children lists held open: a process's children as the kernel lists them
//! (`/proc/<pid>/task/<tid>/children`), read again without opening the file again.
//!
//! The check for other readers of a shell's terminal reads the same few lists (the shell's,
//! the server's main thread's, each namespace init's) on every send at a prompt; opening and
//! closing a `/proc` file costs several times reading it (a path walk through `/proc`, the
//! file's release: in a `perf` profile of `shell_send`, 91 of 113 samples of reading those
//! lists were the open and the close).

/// The pids of a `children` file's text.
fn pids_in(text: &str) -> Vec<i32> {
    text.split_ascii_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// One thread's children list held open and read again from its start on each look (`pread`
/// at 0 restarts the kernel's listing).
///
/// The file stays bound to the thread it was opened for, not to its number: once that thread
/// is gone the list reads empty, and a later process given the same pid is never read through
/// it. So a list is opened only for a thread known to be alive (the server's own; a child not
/// yet waited for; a namespace init whose pidfd says it still runs after the open), and kept by
/// what owns that thread (the [`crate::pty::Shell`], the namespace).
#[derive(Debug)]
pub(crate) struct HeldChildren(std::fs::File);

impl HeldChildren {
    /// Opens the children list of thread `tid` of process `pid`.
    pub(crate) fn open(pid: i32, tid: i32) -> Option<Self> {
        std::fs::File::open(format!("/proc/{pid}/task/{tid}/children"))
            .ok()
            .map(Self)
    }

    /// The children now; none when the thread is gone or the list cannot be read.
    pub(crate) fn read(&self) -> Vec<i32> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; 4096];
        let mut len = 0;
        loop {
            match self.0.read_at(&mut buf[len..], len as u64) {
                Ok(0) => break,
                Ok(n) => {
                    len += n;
                    if len == buf.len() {
                        buf.resize(2 * len, 0);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Vec::new(),
            }
        }
        std::str::from_utf8(&buf[..len]).map_or_else(|_| Vec::new(), pids_in)
    }
}

/// The children list of the server's main thread, where the kernel puts the orphans it adopts
/// as subreaper: opened at [`crate::init`] (so its fd is among the server's from the start)
/// and held for the life of the process (see [`HeldChildren`]).
pub(crate) fn main_thread_list() -> Option<&'static HeldChildren> {
    static HELD: std::sync::OnceLock<Option<HeldChildren>> = std::sync::OnceLock::new();
    HELD.get_or_init(|| {
        let main = std::process::id().cast_signed();
        HeldChildren::open(main, main)
    })
    .as_ref()
}

/// The children of the server's main thread now (see [`main_thread_list`]).
pub(crate) fn main_thread_children() -> Vec<i32> {
    main_thread_list().map_or_else(Vec::new, HeldChildren::read)
}

/// The children of process `pid`, which has one thread, read by its path (where no list is
/// held for it).
pub(crate) fn of_single_threaded(pid: i32) -> Vec<i32> {
    HeldChildren::open(pid, pid).map_or_else(Vec::new, |list| list.read())
}

#[cfg(test)]
#[path = "children_tests.rs"]
mod tests;
