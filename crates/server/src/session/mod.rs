//! A session's own state (jobs, shells, spill files, what the client can do), made at its
//! first use, and the callers without a session (protocol 2026-07-28 over HTTP): each caller
//! (a token of the HTTP listener) has a state of its own whose jobs are reached only by
//! unguessable handles, each stopped once no request has named it for the grace period.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use agentty_core::SpillStore;
use agentty_core::jobs::{Ids, JobTable};

use crate::settings::Settings;

mod ending;
mod in_flight;
pub mod kept;
mod registry;
mod task_index;

pub(crate) use ending::{log_stopped, stop_and_log, stop_for_shutdown};
pub(crate) use in_flight::InFlight;
pub(crate) use registry::Registry;
pub(crate) use task_index::{Entry as TaskEntry, TaskIndex};

/// Planted-code changes kept for a session's next result at most.
const PLANTED_KEPT: usize = 64;

pub use crate::caller::Caller;

/// A session's state, made at its first use: rmcp asks the HTTP service for a server per
/// request it answers itself (a tool's schema, a request without a session), and those must
/// cost nothing.
pub(crate) struct LazySession {
    pub(crate) name: String,
    ids: Ids,
    pub(crate) state: std::sync::OnceLock<Session>,
    /// The caller (HTTP token) whose session this is, once known: the web view shows a
    /// session only to its caller. The stdio session has none: it is the local user's.
    pub(crate) caller: std::sync::OnceLock<Caller>,
    /// For the web view: when it began, and its client and transport (set at first sight).
    pub(crate) started: std::time::SystemTime,
    pub(crate) about: std::sync::OnceLock<About>,
    /// What the person watching did to this session's jobs (`--view-control`), told to the
    /// model in its next result.
    pub(crate) user_notes: std::sync::Mutex<Vec<String>>,
    /// Planted code found by a look outside this session's calls (a job's end, the look between
    /// calls), for the model's next result.
    planted: std::sync::Mutex<Vec<crate::confinement::planted::Change>>,
    /// Its tool calls being answered (HTTP client sessions): ending the session cancels them.
    pub(crate) in_flight: InFlight,
    /// Its HTTP session id (`Mcp-Session-Id`), once a request has named it.
    pub(crate) http_id: std::sync::OnceLock<String>,
    /// A client initialized it: a client session (or the stdio one), not a server rmcp made
    /// for one request it answers without a session.
    pub(crate) initialized: AtomicBool,
    /// Set once the session has been ended by its client: every DELETE waits for the one end.
    pub(crate) ending: tokio::sync::OnceCell<()>,
}

/// Who is on the other end of a session, for the web view.
#[derive(Debug, Clone)]
pub(crate) struct About {
    pub(crate) client: String,
    pub(crate) transport: &'static str,
}

impl LazySession {
    /// Whether it is at work: a call being answered (over HTTP) or a job or shell running.
    pub(crate) fn busy(&self) -> bool {
        self.in_flight.any()
            || self
                .state
                .get()
                .is_some_and(|state| state.jobs.list().iter().any(|j| j.state().is_running()))
    }

    /// Its name and its caller, once known (`None`: the stdio session's local user).
    pub(crate) fn named(&self) -> (String, Option<Caller>) {
        (self.name.clone(), self.caller.get().cloned())
    }

    /// A client session's state: sequential ids (`t1`).
    pub(crate) fn new(name: String) -> Arc<Self> {
        Self::with_ids(name, Ids::Sequential)
    }

    /// A caller without a session: unguessable handles.
    pub(crate) fn sessionless(name: String) -> Arc<Self> {
        Self::with_ids(name, Ids::Unguessable)
    }

    fn with_ids(name: String, ids: Ids) -> Arc<Self> {
        Arc::new(LazySession {
            name,
            ids,
            state: std::sync::OnceLock::new(),
            caller: std::sync::OnceLock::new(),
            started: std::time::SystemTime::now(),
            about: std::sync::OnceLock::new(),
            user_notes: std::sync::Mutex::default(),
            planted: std::sync::Mutex::default(),
            in_flight: InFlight::default(),
            http_id: std::sync::OnceLock::new(),
            initialized: AtomicBool::new(false),
            ending: tokio::sync::OnceCell::new(),
        })
    }

    /// Notes who is on the other end, the first time it is known.
    pub(crate) fn describe(&self, client: impl FnOnce() -> String, transport: &'static str) {
        if self.about.get().is_none() {
            let _ = self.about.set(About {
                client: client(),
                transport,
            });
        }
    }

    /// The notes for the model gathered since its last result, emptied.
    pub(crate) fn take_user_notes(&self) -> Vec<String> {
        self.user_notes
            .lock()
            .map(|mut notes| std::mem::take(&mut *notes))
            .unwrap_or_default()
    }

    /// Keeps `changes` for the model's next result (at most [`PLANTED_KEPT`]: the user has
    /// them all in the log).
    pub(crate) fn note_planted(&self, changes: &[crate::confinement::planted::Change]) {
        if let Ok(mut kept) = self.planted.lock() {
            let room = PLANTED_KEPT.saturating_sub(kept.len());
            kept.extend(changes.iter().take(room).cloned());
        }
    }

    /// The planted code kept for the model, emptied.
    pub(crate) fn take_planted(&self) -> Vec<crate::confinement::planted::Change> {
        self.planted
            .lock()
            .map(|mut kept| std::mem::take(&mut *kept))
            .unwrap_or_default()
    }

    /// The state, made now if it is not yet. `handle_grace`: for unguessable handles, how long a
    /// job may go without a request naming it before it is stopped.
    /// `spill_dir`: the server's spill directory, where this session's is made.
    pub(crate) fn state(
        &self,
        settings: &Settings,
        spill_dir: &std::path::Path,
        handle_grace: Option<Duration>,
    ) -> &Session {
        self.state.get_or_init(|| {
            let session = Session::new(settings, spill_dir, &self.name, self.ids);
            if let (Ids::Unguessable, Some(grace)) = (self.ids, handle_grace) {
                ending::stop_unused(Arc::downgrade(&session.jobs), grace);
            }
            session
        })
    }
}

/// One session's own state.
pub(crate) struct Session {
    pub(crate) spill: Arc<SpillStore>,
    /// Per-call ids (`c1`, `c2`, …): they name spill files and run markers.
    pub(crate) calls: AtomicU64,
    /// This session's background commands and shells (docs/BEHAVIOUR.md §3).
    pub(crate) jobs: Arc<JobTable>,
    /// Handles of this session's open shells (registered in `jobs`), and their idle reaper.
    pub(crate) shells: Arc<agentty_core::pty::Shells>,
    /// The client said at `initialize` that it can show the user a form (elicitation), so an
    /// escalation can be asked.
    pub(crate) client_can_ask: AtomicBool,
    /// `end_session` ran: nothing is left for the drop to stop.
    pub(crate) ended: AtomicBool,
    /// Tasks (the tasks extension) made of this session's jobs.
    pub(crate) tasks: TaskIndex,
    /// Its foreground calls, running and lately ended, for the web view.
    pub(crate) view_calls: crate::view_calls::Calls,
    /// The jobs and shells the person watching stopped (`--view-control`), for the view.
    pub(crate) stopped_by_user: std::sync::Mutex<Vec<String>>,
    /// The shells the person watching holds the keyboard of, with the lines typed so far.
    pub(crate) held_by_user: std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
    /// Where the state dir keeps this session's job table across a restart (HTTP client
    /// sessions and callers without one), once known.
    pub(crate) keep: std::sync::OnceLock<(Arc<kept::Kept>, kept::Key)>,
    /// Its jobs from before a restart, as the state dir kept them (set once, when the session
    /// came back).
    pub(crate) before: std::sync::OnceLock<Vec<kept::JobRecord>>,
    /// The server is shutting down and will keep this session's files for it to come back to:
    /// its end removes neither its spill directory nor its kept table.
    pub(crate) kept_for_restart: AtomicBool,
    /// The secrets the user entered in this session's shells, masked in all its commands'
    /// output from then on (docs/BEHAVIOUR.md §4 *Sealed entry*).
    pub(crate) masks: Arc<agentty_core::mask::Masks>,
}

impl Session {
    /// Writes this session's job table to the state dir, when it is kept there.
    pub(crate) fn save_jobs(&self) {
        if let Some((kept, key)) = self.keep.get() {
            let before = self.before.get().map_or(&[][..], Vec::as_slice);
            kept.save_jobs(key, before, &self.jobs.list());
        }
    }

    /// Its job `id` from before a restart, if the state dir kept one.
    pub(crate) fn before_restart(&self, id: &str) -> Option<&kept::JobRecord> {
        self.before.get()?.iter().find(|j| j.id == id)
    }
}

impl Session {
    fn new(settings: &Settings, spill_dir: &std::path::Path, name: &str, ids: Ids) -> Self {
        let jobs = Arc::new(match ids {
            Ids::Sequential => JobTable::new(),
            Ids::Unguessable => JobTable::unguessable(),
        });
        let shell_idle = settings.shell_idle_ms.map(Duration::from_millis);
        Session {
            spill: Arc::new(SpillStore::new(spill_dir, name)),
            calls: AtomicU64::new(0),
            shells: agentty_core::pty::Shells::new(jobs.clone(), shell_idle),
            jobs,
            client_can_ask: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            tasks: TaskIndex::default(),
            view_calls: crate::view_calls::Calls::default(),
            stopped_by_user: std::sync::Mutex::default(),
            held_by_user: std::sync::Mutex::default(),
            keep: std::sync::OnceLock::new(),
            before: std::sync::OnceLock::new(),
            kept_for_restart: AtomicBool::new(false),
            masks: Arc::default(),
        }
    }
}
