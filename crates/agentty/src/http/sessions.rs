//! Client sessions and whose they are: the caller that opened each one, and the two caps on
//! opening more (docs/BEHAVIOUR.md §9).
//!
//! - `--max-sessions`: live sessions of all callers together.
//! - A caller's share: the sessions one caller may hold, `--max-sessions-per-caller`, by default
//!   `--max-sessions` divided equally among the token file's callers (at least 1). Equal parts
//!   add up to no more than the whole, so every caller can always open its share, whatever the
//!   others hold: that guarantee is the point (one caller filled the server, and the next one's
//!   `initialize` got 503). A larger floor ("at least a few") would break it once there are many
//!   callers, and a caller that needs more is given it by the flags. With one caller the share
//!   is the whole cap, as before.
//!
//! An `initialize` let through counts against both caps until its session is recorded (or it
//! failed), so two sent at once cannot both take the last place.

use std::collections::HashMap;
use std::sync::Mutex;

use agentty_server::Caller;

/// Who opened each live session, and the `initialize`s on their way.
#[derive(Default)]
struct Book {
    /// Which caller opened each client session (by `Mcp-Session-Id`).
    owners: HashMap<String, Caller>,
    /// `initialize`s let through and not yet answered, by caller.
    opening: HashMap<Caller, usize>,
    /// Sessions kept from before a restart whose first request back holds a place now: a
    /// second request for one at once takes none of its own.
    resuming: std::collections::HashSet<String>,
}

/// The client sessions of the listener, by owner, and their caps.
pub struct Sessions {
    book: Mutex<Book>,
    max: usize,
    share: usize,
}

/// Why a new session is refused.
pub enum NoRoom {
    /// The caller holds `held` sessions, its share.
    Share { caller: Caller, held: usize },
    /// `live` sessions of all callers, the cap.
    All { live: usize },
}

/// A place taken for an `initialize` on its way; given back when dropped, unless its session
/// was recorded ([`Opening::opened`]).
pub struct Opening<'a> {
    sessions: &'a Sessions,
    caller: Caller,
    held: bool,
    /// The kept session it brings back, if that is what it opens.
    resumes: Option<String>,
}

impl Sessions {
    /// At most `max` live sessions; each of `callers` callers may hold `per_caller`, or by
    /// default an equal share of `max`.
    pub fn new(max: usize, per_caller: Option<usize>, callers: usize) -> Self {
        let max = max.max(1);
        let share = per_caller.unwrap_or(max / callers.max(1)).clamp(1, max);
        Sessions {
            book: Mutex::default(),
            max,
            share,
        }
    }

    /// The sessions one caller may hold.
    pub fn share(&self) -> usize {
        self.share
    }

    /// The caller that opened the client session `id`, if it is known.
    pub fn owner(&self, id: &str) -> Option<Caller> {
        self.book.lock().ok()?.owners.get(id).cloned()
    }

    /// A place for a new session of `caller`, or why there is none. `live` are the sessions
    /// rmcp holds: the owners of those that ended are forgotten here.
    pub fn open(&self, caller: &Caller, live: &[String]) -> Result<Opening<'_>, NoRoom> {
        // A new session always takes a place: `None` comes only for a resume.
        self.open_or_resume(caller, live, None)?
            .ok_or(NoRoom::All { live: self.max })
    }

    /// As [`Sessions::open`], for the session `id` kept from before a restart; `None` when a
    /// request bringing it back holds its place already.
    pub fn resume(
        &self,
        caller: &Caller,
        live: &[String],
        id: &str,
    ) -> Result<Option<Opening<'_>>, NoRoom> {
        self.open_or_resume(caller, live, Some(id))
    }

    fn open_or_resume(
        &self,
        caller: &Caller,
        live: &[String],
        resumes: Option<&str>,
    ) -> Result<Option<Opening<'_>>, NoRoom> {
        let Ok(mut book) = self.book.lock() else {
            return Err(NoRoom::All { live: self.max });
        };
        if resumes.is_some_and(|id| book.resuming.contains(id)) {
            return Ok(None);
        }
        book.owners.retain(|id, _| live.contains(id));
        let opening = book.opening.get(caller).copied().unwrap_or(0);
        let held = opening + book.owners.values().filter(|c| *c == caller).count();
        let all = book.owners.len() + book.opening.values().sum::<usize>();
        // With one caller (or a share as large as the cap), the cap is the whole story.
        if held >= self.share && self.share < self.max {
            return Err(NoRoom::Share {
                caller: caller.clone(),
                held,
            });
        }
        if all >= self.max {
            return Err(NoRoom::All { live: all });
        }
        *book.opening.entry(caller.clone()).or_default() += 1;
        if let Some(id) = resumes {
            book.resuming.insert(id.to_owned());
        }
        Ok(Some(Opening {
            sessions: self,
            caller: caller.clone(),
            held: true,
            resumes: resumes.map(ToOwned::to_owned),
        }))
    }

    /// Records `caller` as the one that opened the session `id` (one that no cap counted).
    pub fn record(&self, id: String, caller: Caller) {
        if let Ok(mut book) = self.book.lock() {
            book.owners.insert(id, caller);
        }
    }
}

impl Book {
    fn give_back(&mut self, caller: &Caller, resumes: Option<&String>) {
        if let Some(id) = resumes {
            self.resuming.remove(id);
        }
        if let Some(n) = self.opening.get_mut(caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.opening.remove(caller);
            }
        }
    }
}

impl Opening<'_> {
    /// The session `id` was made: it is its caller's from now on, and counts as live.
    pub fn opened(mut self, id: String) {
        if let Ok(mut book) = self.sessions.book.lock() {
            book.owners.insert(id, self.caller.clone());
            book.give_back(&self.caller, self.resumes.as_ref());
            self.held = false;
        }
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if self.held
            && let Ok(mut book) = self.sessions.book.lock()
        {
            book.give_back(&self.caller, self.resumes.as_ref());
        }
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
