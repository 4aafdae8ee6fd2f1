//! The job table (docs/BEHAVIOUR.md §3): the single registry of every long-lived child of one client session.
//!
//! Background commands (`t1`, `t2`, …) and persistent shells (`s1`, …) live here and nowhere
//! else: one registration, so a missed registration cannot exist. Ids are never reused within the
//! table. A table belongs to one client session; another session has its own table and so cannot
//! see, read or stop these jobs (it gets the same answer as for an id that never existed).
//! Callers without a session get a table whose ids are unguessable handles ([`Ids`]).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::watch;

use crate::jobs::ring::OutputRing;

/// At most this many background commands run per session: each holds a process tree and a
/// buffer, and a model that starts more has usually lost track of them.
pub const MAX_RUNNING_COMMANDS: usize = 8;

/// At most this many shells per session: a PTY and a shell are heavier than a pipe.
pub const MAX_SHELLS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    Command,
    Shell,
}

impl JobKind {
    fn prefix(self) -> char {
        match self {
            JobKind::Command => 't',
            JobKind::Shell => 's',
        }
    }

    fn index(self) -> usize {
        match self {
            JobKind::Command => 0,
            JobKind::Shell => 1,
        }
    }
}

/// How a table names its jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ids {
    /// `t1`, `s2`: short, for a table one session owns whole.
    #[default]
    Sequential,
    /// `t-` or `s-` and 96 random bits in hex: for callers without a session, where holding the
    /// handle is what keeps one caller's job from another's, so it can be neither counted to
    /// nor guessed.
    Unguessable,
}

/// Random bits in an unguessable handle.
pub const HANDLE_BITS: usize = 96;

fn new_handle(kind: JobKind) -> String {
    format!("{}-{}", kind.prefix(), crate::random::hex(HANDLE_BITS / 8))
}

/// Where a job is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Running,
    Exited(i32),
    /// Ended by a signal it did not get from us.
    Signalled(i32),
    /// Stopped by `task_stop`, `shell_close`, session end or server shutdown.
    Stopped,
    /// Closed because it was idle too long (shells).
    Reaped,
}

impl JobState {
    pub fn is_running(&self) -> bool {
        matches!(self, JobState::Running)
    }
}

/// Why the server stopped a job on its own, when the job's state should say so (the words are
/// the server's). A job stopped by a caller (`task_stop`, `shell_close`) or by its session's
/// end has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// The server was shut down (a drain after SIGTERM).
    ServerShutDown,
}

pub type StopFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How the table stops a job: the kind-specific part (kill a tree, hang up a PTY).
pub trait JobControl: Send + Sync {
    /// Stops the job and everything it started; resolves when that is done.
    fn stop(&self) -> StopFuture;
}

/// One registered job.
pub struct Job {
    pub id: String,
    pub kind: JobKind,
    /// The command line, or the shell and its workdir.
    pub label: String,
    pub workdir: PathBuf,
    pub started: Instant,
    pub pid: i32,
    pub output: Arc<OutputRing>,
    /// Started under the sandbox: a "Permission denied" in its output may be the sandbox's.
    pub confined: bool,
    /// The web view's coloured copy of a command's output, from its first escape.
    pub view: crate::view_tap::ViewTap,
    state: watch::Sender<JobState>,
    control: Box<dyn JobControl>,
    /// Processes the job left behind when it ended, which were then stopped.
    leftovers: AtomicUsize,
    /// How far the caller has been shown this job's output: where the next wait picks up.
    delivered: std::sync::atomic::AtomicU64,
    /// When a request last named this job (see [`JobTable::get`]).
    used: Mutex<Instant>,
    /// When it stopped running.
    finished: std::sync::OnceLock<Instant>,
    /// Where the command ends up as far as its text shows (its `cd`s), when the caller worked
    /// it out at the start: a relative path in an error it prints is judged there.
    ends_in: std::sync::OnceLock<PathBuf>,
    /// Why the server stopped it on its own, when it did ([`Job::stop_for`]).
    cause: std::sync::OnceLock<StopCause>,
    /// What the server keeps with the job for its reports ([`Job::attach`]).
    attached: std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Job {
    /// Records how many processes the job left running when it ended (they were stopped).
    pub fn set_leftovers(&self, count: usize) {
        self.leftovers.store(count, Ordering::Relaxed);
    }

    pub fn leftovers(&self) -> usize {
        self.leftovers.load(Ordering::Relaxed)
    }

    /// Records where the command ends up, as far as its text shows (set once, at the start).
    pub fn note_ends_in(&self, dir: PathBuf) {
        let _ = self.ends_in.set(dir);
    }

    /// Where the command ends up, when [`Job::note_ends_in`] recorded it.
    pub fn ends_in(&self) -> Option<&std::path::Path> {
        self.ends_in.get().map(PathBuf::as_path)
    }

    /// Keeps `what` with the job, for as long as the job is kept, for its reports (the server's
    /// record of what its commands met on the network). Set once: a second is not kept.
    pub fn attach(&self, what: Arc<dyn std::any::Any + Send + Sync>) {
        let _ = self.attached.set(what);
    }

    /// What [`Job::attach`] kept, if it is a `T`.
    pub fn attached<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.attached.get()?.downcast_ref()
    }

    /// Records that the caller was shown the output up to the cursor `next`.
    pub fn note_delivered(&self, next: u64) {
        self.delivered.fetch_max(next, Ordering::Relaxed);
    }

    /// The cursor up to which the caller has been shown the output.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Notes that a request used this job now (looking it up by id does).
    pub fn touch(&self) {
        *self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    /// How long since a request last used this job.
    pub fn unused_for(&self) -> std::time::Duration {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }

    pub fn state(&self) -> JobState {
        self.state.borrow().clone()
    }

    /// Sets the state (the job's own runner calls this when the process ends).
    pub fn set_state(&self, state: JobState) {
        if !state.is_running() {
            let _ = self.finished.set(Instant::now());
        }
        self.state.send_replace(state);
    }

    /// How long it ran: until it ended, or until now.
    pub fn ran_for(&self) -> std::time::Duration {
        self.finished
            .get()
            .map_or_else(|| self.started.elapsed(), |end| *end - self.started)
    }

    /// Resolves when the job is no longer running.
    pub async fn ended(&self) -> JobState {
        let mut rx = self.state.subscribe();
        match rx.wait_for(|s| !s.is_running()).await {
            Ok(state) => state.clone(),
            Err(_) => self.state(),
        }
    }

    /// Why the server stopped it on its own, when [`Job::stop_for`] did.
    pub fn stop_cause(&self) -> Option<StopCause> {
        self.cause.get().copied()
    }

    /// Stops it as [`Job::stop`] does, noting `cause` first when it is still running.
    pub async fn stop_for(&self, cause: StopCause) {
        if self.state().is_running() {
            let _ = self.cause.set(cause);
        }
        self.stop().await;
    }

    pub async fn stop(&self) {
        if self.state().is_running() {
            self.control.stop().await;
            if self.state().is_running() {
                self.set_state(JobState::Stopped);
            }
        }
        self.output.close();
    }
}

/// Why a job could not be registered.
#[derive(thiserror::Error)]
#[error("{limit} {kind:?} jobs already run in this session")]
pub struct CapReached {
    pub kind: JobKind,
    pub limit: usize,
    /// The running jobs of that kind, so "stop one first" is actionable.
    pub running: Vec<Arc<Job>>,
}

impl std::fmt::Debug for CapReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.running.iter().map(|j| j.id.as_str()).collect();
        f.debug_struct("CapReached")
            .field("kind", &self.kind)
            .field("limit", &self.limit)
            .field("running", &ids)
            .finish()
    }
}

/// Everything needed to register a job, except its id.
pub struct NewJob {
    pub kind: JobKind,
    pub label: String,
    pub workdir: PathBuf,
    pub pid: i32,
    pub output: Arc<OutputRing>,
    pub control: Box<dyn JobControl>,
    /// Started under the sandbox, so a refused write is the sandbox's.
    pub confined: bool,
}

/// Ended jobs kept for reading back, per kind; older ended ones are forgotten (their output
/// buffer and any spill file's name with them), so a long session's table stays bounded.
pub const ENDED_KEPT: usize = 32;

#[derive(Default)]
struct Inner {
    ids: Ids,
    next_command: u64,
    next_shell: u64,
    jobs: BTreeMap<(char, u64), Arc<Job>>,
    /// With [`Ids::Unguessable`]: each handle's key in `jobs`.
    handles: HashMap<String, (char, u64)>,
    /// With [`Ids::Unguessable`]: the handle the next job of each kind gets, drawn when first
    /// asked for (`peek_id`, `reserve`) and used by the registration.
    next_handle: [Option<String>; 2],
    /// Ended jobs forgotten to keep the table bounded.
    forgotten: u64,
}

impl Inner {
    /// The id the `n`th job of `kind` gets.
    fn id_for(&mut self, kind: JobKind, n: u64) -> String {
        match self.ids {
            Ids::Sequential => format!("{}{n}", kind.prefix()),
            Ids::Unguessable => self.next_handle[kind.index()]
                .get_or_insert_with(|| new_handle(kind))
                .clone(),
        }
    }

    /// The key in `jobs` of the job called `id`.
    fn key_of(&self, id: &str) -> Option<(char, u64)> {
        match self.ids {
            Ids::Sequential => {
                let mut chars = id.chars();
                let prefix = chars.next()?;
                let n: u64 = chars.as_str().parse().ok()?;
                Some((prefix, n))
            }
            Ids::Unguessable => self.handles.get(id).copied(),
        }
    }

    fn remove(&mut self, key: (char, u64)) -> Option<Arc<Job>> {
        let job = self.jobs.remove(&key)?;
        self.handles.remove(&job.id);
        Some(job)
    }

    /// Forgets the oldest ended jobs of `kind` past [`ENDED_KEPT`].
    fn forget_old(&mut self, kind: JobKind) {
        let ended: Vec<(char, u64)> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.kind == kind && !j.state().is_running())
            .map(|(key, _)| *key)
            .collect();
        for key in ended.iter().take(ended.len().saturating_sub(ENDED_KEPT)) {
            if let Some(job) = self.remove(*key) {
                job.output.discard_spill();
            }
            self.forgotten += 1;
        }
    }
}

/// The jobs of one client session.
#[derive(Default)]
pub struct JobTable {
    inner: Mutex<Inner>,
}

impl JobTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// A table whose ids are unguessable handles (callers without a session).
    pub fn unguessable() -> Self {
        let table = Self::default();
        table.lock().ids = Ids::Unguessable;
        table
    }

    pub fn ids(&self) -> Ids {
        self.lock().ids
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The id the next job of `kind` will get (so a spill file can be named before registering).
    pub fn peek_id(&self, kind: JobKind) -> String {
        let mut inner = self.lock();
        let n = match kind {
            JobKind::Command => inner.next_command,
            JobKind::Shell => inner.next_shell,
        };
        inner.id_for(kind, n + 1)
    }

    /// Checks the cap for `kind` without registering.
    pub fn check_cap(&self, kind: JobKind) -> Result<(), CapReached> {
        check_cap(&self.lock(), kind)
    }

    /// Registers a job, or refuses when the session already runs the maximum of its kind.
    pub fn register(&self, new: NewJob) -> Result<Arc<Job>, CapReached> {
        Ok(self.reserve(new.kind)?.register(new))
    }

    /// Checks the cap and holds the table until the job is registered (or the reservation is
    /// dropped), so the id is known before the job starts and no concurrent start can take the
    /// last slot in between. Spawn and register while holding it; do not await.
    pub fn reserve(&self, kind: JobKind) -> Result<Reserved<'_>, CapReached> {
        let mut inner = self.lock();
        check_cap(&inner, kind)?;
        let n = match kind {
            JobKind::Command => inner.next_command,
            JobKind::Shell => inner.next_shell,
        } + 1;
        Ok(Reserved {
            id: inner.id_for(kind, n),
            kind,
            n,
            inner,
        })
    }

    /// The job with this id, if this session has one; a request naming a job uses it
    /// ([`Job::touch`]).
    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        let inner = self.lock();
        let job = inner.jobs.get(&inner.key_of(id)?).cloned()?;
        job.touch();
        Some(job)
    }

    /// The job with this id, without counting as use (the web view looks through this).
    pub fn peek(&self, id: &str) -> Option<Arc<Job>> {
        let inner = self.lock();
        inner.jobs.get(&inner.key_of(id)?).cloned()
    }

    /// The running jobs no request has used for `idle` or longer.
    pub fn unused(&self, idle: std::time::Duration) -> Vec<Arc<Job>> {
        self.lock()
            .jobs
            .values()
            .filter(|j| j.state().is_running() && j.unused_for() >= idle)
            .cloned()
            .collect()
    }

    /// Every job, commands first, in id order.
    pub fn list(&self) -> Vec<Arc<Job>> {
        let mut jobs: Vec<Arc<Job>> = self.lock().jobs.values().cloned().collect();
        jobs.sort_by_key(|j| j.kind == JobKind::Shell);
        jobs
    }

    /// How many ended jobs were forgotten to keep the table bounded (see [`ENDED_KEPT`]).
    pub fn forgotten(&self) -> u64 {
        self.lock().forgotten
    }

    /// Numbers the next jobs after `commands` and `shells` (sequential ids): a session that
    /// came back after a restart never gives a new job the id of one it had before.
    pub fn continue_after(&self, commands: u64, shells: u64) {
        let mut inner = self.lock();
        inner.next_command = inner.next_command.max(commands);
        inner.next_shell = inner.next_shell.max(shells);
    }

    /// Forgets a job (its id is still never reused).
    pub fn remove(&self, id: &str) -> Option<Arc<Job>> {
        let mut inner = self.lock();
        let key = inner.key_of(id)?;
        inner.remove(key)
    }

    /// Stops every running job (session end, shutdown), all at once so a slow tree does not
    /// delay the others; returns the ones it stopped.
    pub async fn stop_all(&self) -> Vec<Arc<Job>> {
        self.stop_running(None).await
    }

    /// Stops every running job as [`JobTable::stop_all`] does, each noting `cause`.
    pub async fn stop_all_for(&self, cause: StopCause) -> Vec<Arc<Job>> {
        self.stop_running(Some(cause)).await
    }

    async fn stop_running(&self, cause: Option<StopCause>) -> Vec<Arc<Job>> {
        let running: Vec<Arc<Job>> = self
            .list()
            .into_iter()
            .filter(|j| j.state().is_running())
            .collect();
        let mut stops = tokio::task::JoinSet::new();
        for job in &running {
            let job = job.clone();
            stops.spawn(async move {
                match cause {
                    Some(cause) => job.stop_for(cause).await,
                    None => job.stop().await,
                }
            });
        }
        while stops.join_next().await.is_some() {}
        running
    }
}

fn check_cap(inner: &Inner, kind: JobKind) -> Result<(), CapReached> {
    let limit = match kind {
        JobKind::Command => MAX_RUNNING_COMMANDS,
        JobKind::Shell => MAX_SHELLS,
    };
    let running: Vec<Arc<Job>> = inner
        .jobs
        .values()
        .filter(|j| j.kind == kind && j.state().is_running())
        .cloned()
        .collect();
    if running.len() >= limit {
        Err(CapReached {
            kind,
            limit,
            running,
        })
    } else {
        Ok(())
    }
}

/// A slot in the table, held between the cap check and the registration (see
/// [`JobTable::reserve`]). Dropping it releases the slot; the id is then not used.
pub struct Reserved<'a> {
    id: String,
    kind: JobKind,
    n: u64,
    inner: MutexGuard<'a, Inner>,
}

impl Reserved<'_> {
    /// The id the job will have.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Registers the job under the reserved id (its `kind` must be the reserved kind).
    pub fn register(self, new: NewJob) -> Arc<Job> {
        self.register_since(new, Instant::now())
    }

    /// Like [`Reserved::register`] for a process that was already running since `started`
    /// (a foreground command moved into the background keeps its age).
    pub fn register_since(mut self, new: NewJob, started: Instant) -> Arc<Job> {
        debug_assert_eq!(new.kind, self.kind, "reserved for another kind");
        match self.kind {
            JobKind::Command => self.inner.next_command = self.n,
            JobKind::Shell => self.inner.next_shell = self.n,
        }
        let (state, _) = watch::channel(JobState::Running);
        let job = Arc::new(Job {
            id: self.id,
            kind: self.kind,
            label: new.label,
            workdir: new.workdir,
            started,
            pid: new.pid,
            output: new.output,
            confined: new.confined,
            view: crate::view_tap::ViewTap::default(),
            state,
            control: new.control,
            leftovers: AtomicUsize::new(0),
            delivered: std::sync::atomic::AtomicU64::new(0),
            used: Mutex::new(Instant::now()),
            finished: std::sync::OnceLock::new(),
            ends_in: std::sync::OnceLock::new(),
            cause: std::sync::OnceLock::new(),
            attached: std::sync::OnceLock::new(),
        });
        let key = (self.kind.prefix(), self.n);
        if self.inner.ids == Ids::Unguessable {
            self.inner.next_handle[self.kind.index()] = None;
            self.inner.handles.insert(job.id.clone(), key);
        }
        self.inner.jobs.insert(key, job.clone());
        self.inner.forget_old(self.kind);
        job
    }
}
