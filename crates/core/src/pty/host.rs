//! The shells of one client session: opening them into the job table, finding them again by id,
//! and closing those left idle.
//!
//! The job table is the registry (docs/BEHAVIOUR.md §3: one registration, so `task_list` and `task_output`
//! see shells with nothing extra). This map only keeps the typed handle of each *open* shell for
//! the `shell_*` verbs, and it is filled only after the table accepted the job. A shell that
//! ended stays in the table with its state (closed, reaped, exited), which is what lets a later
//! send say precisely why it is gone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use crate::jobs::{CapReached, Job, JobControl, JobKind, JobState, JobTable, NewJob, StopFuture};
use crate::pty::shell::{Hangup, OpenSpec, Shell};
use crate::pty::{PtyError, SHELL_IDLE_DEFAULT_MS};

/// Why `open` failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("shell cap reached")]
    Cap(CapReachedInfo),
    #[error(transparent)]
    Pty(#[from] PtyError),
}

/// [`CapReached`] without the trait objects, so the error is `Debug`.
pub struct CapReachedInfo(pub CapReached);

impl std::fmt::Debug for CapReachedInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CapReached(limit {})", self.0.limit)
    }
}

/// Why an id has no open shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gone {
    /// This session never had it (or it is another session's).
    Unknown,
    /// The id names a background command, not a shell.
    NotAShell,
    Closed,
    Reaped,
    Exited(i32),
    Signalled(i32),
}

/// Stops a shell for the job table (session end, shutdown).
struct ShellControl(Weak<Shell>);

impl JobControl for ShellControl {
    fn stop(&self) -> StopFuture {
        let shell = self.0.upgrade();
        Box::pin(async move {
            if let Some(shell) = shell {
                shell.close(Hangup::Closed).await;
            }
        })
    }
}

pub struct Shells {
    table: Arc<JobTable>,
    open: Mutex<HashMap<String, Arc<Shell>>>,
    idle: Duration,
    reaper: std::sync::Once,
}

impl Shells {
    /// `idle`: close a shell unused for this long (`None`: the 10-minute default).
    pub fn new(table: Arc<JobTable>, idle: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            table,
            open: Mutex::new(HashMap::new()),
            idle: idle.unwrap_or(Duration::from_millis(SHELL_IDLE_DEFAULT_MS)),
            reaper: std::sync::Once::new(),
        })
    }

    pub fn table(&self) -> &Arc<JobTable> {
        &self.table
    }

    pub fn idle_limit(&self) -> Duration {
        self.idle
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Shell>>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens a shell and registers it as `s<N>`; refused over the per-session cap.
    pub async fn open(
        self: &Arc<Self>,
        spec: OpenSpec,
        label: String,
    ) -> Result<(Arc<Job>, Arc<Shell>), OpenError> {
        // Check first so a refused open starts nothing; register re-checks under its lock.
        self.table
            .check_cap(JobKind::Shell)
            .map_err(|c| OpenError::Cap(CapReachedInfo(c)))?;
        let workdir = spec.spawn.cwd.clone();
        let output = spec.output.clone();
        let confined = spec.spawn.confine.is_some();
        let shell = Shell::open(spec).await?;
        let registered = self.table.register(NewJob {
            kind: JobKind::Shell,
            label,
            workdir,
            pid: shell.pid,
            output,
            control: Box::new(ShellControl(Arc::downgrade(&shell))),
            confined,
        });
        let job = match registered {
            Ok(job) => job,
            Err(cap) => {
                shell.close(Hangup::Closed).await;
                return Err(OpenError::Cap(CapReachedInfo(cap)));
            }
        };
        shell.attach(&job);
        self.lock().insert(job.id.clone(), shell.clone());
        self.start_reaper();
        Ok((job, shell))
    }

    /// The open shell `id`, or why there is none.
    pub fn get(&self, id: &str) -> Result<(Arc<Job>, Arc<Shell>), Gone> {
        let Some(job) = self.table.get(id) else {
            return Err(Gone::Unknown);
        };
        if job.kind != JobKind::Shell {
            return Err(Gone::NotAShell);
        }
        let shell = self.lock().get(id).cloned();
        match (job.state(), shell) {
            (JobState::Running, Some(shell)) if !shell.has_ended() => Ok((job, shell)),
            (state, _) => {
                self.lock().remove(id);
                Err(gone_for(&state))
            }
        }
    }

    /// The open shell `id`, without counting as use (the web view looks through this).
    pub fn peek(&self, id: &str) -> Option<Arc<Shell>> {
        self.lock().get(id).cloned()
    }

    /// Every shell of the session, open or not, in id order, with its handle when open.
    pub fn list(&self) -> Vec<(Arc<Job>, Option<Arc<Shell>>)> {
        let open = self.lock();
        self.table
            .list()
            .into_iter()
            .filter(|j| j.kind == JobKind::Shell)
            .map(|j| {
                let shell = open.get(&j.id).cloned().filter(|s| !s.has_ended());
                (j, shell)
            })
            .collect()
    }

    /// Closes `id`: hang up, stop the whole tree.
    pub async fn close(&self, id: &str) -> Result<Arc<Job>, Gone> {
        let (job, shell) = self.get(id)?;
        shell.close(Hangup::Closed).await;
        self.lock().remove(id);
        job.stop().await; // records Stopped if the exit was not seen in time; closes the ring
        Ok(job)
    }

    /// Closes every shell idle past the limit.
    pub async fn reap_idle(&self) -> usize {
        let idle: Vec<(String, Arc<Shell>)> = self
            .lock()
            .iter()
            .filter(|(_, s)| s.last_used().elapsed() >= self.idle && !s.has_ended())
            .map(|(id, s)| (id.clone(), s.clone()))
            .collect();
        for (id, shell) in &idle {
            tracing::info!(%id, "closing a shell idle past the limit");
            shell.close(Hangup::Idle).await;
            self.lock().remove(id);
            if let Some(job) = self.table.get(id)
                && job.state().is_running()
            {
                job.set_state(JobState::Reaped);
                job.output.close();
            }
        }
        idle.len()
    }

    fn start_reaper(self: &Arc<Self>) {
        self.reaper.call_once(|| {
            let weak = Arc::downgrade(self);
            // Check often enough that a shell lives at most a quarter of the limit past it.
            let tick = (self.idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(30));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(tick).await;
                    let Some(shells) = weak.upgrade() else {
                        return;
                    };
                    shells.reap_idle().await;
                }
            });
        });
    }
}

fn gone_for(state: &JobState) -> Gone {
    match state {
        JobState::Reaped => Gone::Reaped,
        JobState::Exited(code) => Gone::Exited(*code),
        JobState::Signalled(sig) => Gone::Signalled(*sig),
        JobState::Stopped | JobState::Running => Gone::Closed,
    }
}
