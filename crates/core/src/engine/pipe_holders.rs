//! What holds a command's pipe once its loop let go: found and killed.
//!
//! A pipe thread still busy after its command's loop let go (the loop stopped the command's
//! tree) waits on a lock held from outside that tree: a process that got the pipe over a unix
//! socket from another of the caller's commands, or an escapee without the run marker. After
//! [`GRACE`], every process under the server that has one of the pipes open is killed: it
//! holds the output of a command that is over. That ends the wait, the thread is done, and its
//! caller's count goes down ([`super::left_behind`]).

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a thread may stay busy after its loop let go before what holds its pipes is
/// killed: its own close of the pipes takes microseconds when nothing holds them.
const GRACE: Duration = Duration::from_secs(2);

/// The pipe's inode number, `None` where it cannot be told.
pub(crate) fn inode(fd: BorrowedFd<'_>) -> Option<u64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a stat into the buffer on success; it takes no pipe's lock.
    if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so the stat is written.
    Some(unsafe { st.assume_init() }.st_ino)
}

/// After [`GRACE`], unless `done`, kills every process under this one that has a pipe of
/// `inodes` open. On a thread of the pool: the look through `/proc` takes a while.
pub(crate) fn kill_later(inodes: Vec<u64>, done: Arc<AtomicBool>) {
    if inodes.is_empty() {
        return;
    }
    let Ok(thread) = super::pipe_pool::reserve() else {
        return;
    };
    thread.run(Box::new(move || {
        std::thread::sleep(GRACE);
        if done.load(Ordering::Acquire) {
            return;
        }
        for pid in holders(&inodes) {
            tracing::warn!(
                pid,
                "killed: it held the output pipe of a command that is over"
            );
            // SAFETY: kill on a pid found under this process a moment ago.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }));
}

/// The processes under this one (not this one) with a pipe of `inodes` open.
fn holders(inodes: &[u64]) -> Vec<i32> {
    let names: Vec<String> = inodes.iter().map(|ino| format!("pipe:[{ino}]")).collect();
    descendants()
        .into_iter()
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|link| names.iter().any(|n| link.as_os_str() == n.as_str()))
                })
        })
        .collect()
}

/// Every live process whose chain of parents reaches this one.
fn descendants() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for p in crate::tree::all_processes() {
        if !p.zombie {
            children.entry(p.ppid).or_default().push(p.pid);
        }
    }
    // A set: a snapshot taken while pids are reused could loop.
    let mut found = std::collections::BTreeSet::new();
    let mut next = vec![me];
    while let Some(pid) = next.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            if child != me && found.insert(child) {
                next.push(child);
            }
        }
    }
    found.into_iter().collect()
}
