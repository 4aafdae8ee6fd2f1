//! Pipe threads left behind: the command's loop let go of them (it ended, timed out, was
//! cancelled) while they still wait, counted per caller.
//!
//! A thread waits past its command's end only when something still holds a pipe's lock: a
//! process outside the command's tree that got the pipe (passed over a unix socket to another
//! of the caller's commands, or an escapee that dropped the run marker). Each such thread keeps
//! its pipes and an eventfd open. Without a bound one caller could pile them up until the
//! server's descriptors ran out for every caller; past [`LEFT_BEHIND_MAX`] the caller's next
//! pipe command is refused instead, until some of them are let go.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Threads one caller may have left behind before its pipe commands are refused.
pub(crate) const LEFT_BEHIND_MAX: usize = 16;

/// The thread and its loop: both still at work.
const WORKING: u8 = 0;
/// The loop let go; the thread is still at work.
const LET_GO: u8 = 1;
/// The thread is done.
const DONE: u8 = 2;

/// Callers (`None`: the one caller over stdio) and how many threads each left behind.
static LEFT: Mutex<BTreeMap<Option<Arc<str>>, usize>> = Mutex::new(BTreeMap::new());

fn left() -> MutexGuard<'static, BTreeMap<Option<Arc<str>>, usize>> {
    LEFT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One pipe thread's account, shared by the thread and its loop.
pub(crate) struct Account {
    caller: Option<Arc<str>>,
    state: AtomicU8,
}

impl Account {
    /// An account for a new thread of `caller`; refused while the caller has left
    /// [`LEFT_BEHIND_MAX`] threads behind.
    pub(crate) fn open(caller: Option<Arc<str>>) -> io::Result<Arc<Account>> {
        if left().get(&caller).copied().unwrap_or(0) >= LEFT_BEHIND_MAX {
            return Err(io::Error::other(format!(
                "{LEFT_BEHIND_MAX} of this caller's finished commands still have their output \
                 pipes held by a process (one holding a pipe's lock); stop those processes first"
            )));
        }
        Ok(Arc::new(Account {
            caller,
            state: AtomicU8::new(WORKING),
        }))
    }

    /// The loop lets go: the thread counts as left behind until it is done.
    pub(crate) fn let_go(&self) {
        if self
            .state
            .compare_exchange(WORKING, LET_GO, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            *left().entry(self.caller.clone()).or_insert(0) += 1;
        }
    }

    /// The thread is done (its pipes are closed).
    pub(crate) fn done(&self) {
        if self.state.swap(DONE, Ordering::AcqRel) == LET_GO {
            let mut left = left();
            if let Some(n) = left.get_mut(&self.caller) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    left.remove(&self.caller);
                }
            }
        }
    }
}

/// How many threads `caller` has left behind.
#[cfg(test)]
pub(crate) fn of(caller: Option<&Arc<str>>) -> usize {
    left().get(&caller.cloned()).copied().unwrap_or(0)
}
