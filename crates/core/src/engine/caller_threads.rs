//! Pipe threads per caller: a bound on how many one caller's commands may hold at once.
//!
//! A thread waits past its command's end only when something still holds a pipe's lock: a
//! process outside the command's tree that got the pipe (passed over a unix socket to another
//! of the caller's commands, or an escapee that dropped the run marker). Each such thread keeps
//! its pipes and an eventfd open. Without a bound one caller could pile them up (at once, or one
//! after the other) until the server's descriptors ran out for every caller. So every thread of
//! a caller counts from its start until it is done, whether its command runs or ended; past
//! [`THREADS_MAX`] the caller's next pipe command is refused, until some are done.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Pipe threads one caller may have at once: far above what its commands use (a session runs
/// at most 8 jobs), far below the server's descriptors (four each).
pub(crate) const THREADS_MAX: usize = 64;

/// Callers (`None`: the one caller over stdio) and how many threads each has.
static THREADS: Mutex<BTreeMap<Option<Arc<str>>, usize>> = Mutex::new(BTreeMap::new());

fn threads() -> MutexGuard<'static, BTreeMap<Option<Arc<str>>, usize>> {
    THREADS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One thread counted for its caller until dropped.
pub(crate) struct Counted {
    caller: Option<Arc<str>>,
}

impl Counted {
    /// Counts a new thread of `caller`; refused while the caller has [`THREADS_MAX`].
    pub(crate) fn open(caller: Option<Arc<str>>) -> io::Result<Counted> {
        let mut threads = threads();
        let n = threads.entry(caller.clone()).or_insert(0);
        if *n >= THREADS_MAX {
            return Err(io::Error::other(format!(
                "{THREADS_MAX} of this caller's commands still have their output pipes open: \
                 they run, or a process outside them holds a pipe; end those first"
            )));
        }
        *n += 1;
        Ok(Counted { caller })
    }
}

impl Drop for Counted {
    /// The thread is done (its pipes closed), or it panicked.
    fn drop(&mut self) {
        let mut threads = threads();
        if let Some(n) = threads.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                threads.remove(&self.caller);
            }
        }
    }
}

/// How many threads `caller` has.
#[cfg(test)]
pub(crate) fn of(caller: Option<&Arc<str>>) -> usize {
    threads().get(&caller.cloned()).copied().unwrap_or(0)
}
