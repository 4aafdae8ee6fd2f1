//! How a session's jobs end when nobody stops them one by one: the session ends (its client's
//! `DELETE`, the grace after it vanished, the server stopping) or, for a caller without a
//! session, a job no request named for the grace period (docs/BEHAVIOUR.md §3, §9). Each job
//! stopped this way gets one log line saying why.

use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agentty_core::SpillStore;
use agentty_core::jobs::{Job, JobTable, StopCause};

use super::Session;
use crate::job_words;

impl Drop for Session {
    /// A session that ends without `end_session` (an HTTP client's DELETE, or one that
    /// vanished past the grace period) still stops its jobs and removes its spill directory,
    /// and its table kept in the state dir. One the server kept for a restart keeps both.
    fn drop(&mut self) {
        if self.kept_for_restart.load(Ordering::Relaxed) {
            return;
        }
        if let Some((kept, key)) = self.keep.get() {
            kept.forget(key);
        }
        if self.ended.load(Ordering::Relaxed) || self.jobs.list().is_empty() {
            if self.spill.dir().exists() {
                let _ = self.spill.remove();
            }
            return;
        }
        let (jobs, spill) = (self.jobs.clone(), self.spill.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                stop_and_log(&jobs, &spill).await;
            });
        }
    }
}

/// Stops, one log line each, the jobs of `jobs` that no request has named for `grace`: a caller
/// without a session that vanished leaves nothing running past it. Ends with the table.
pub(super) fn stop_unused(jobs: Weak<JobTable>, grace: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let tick = (grace / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(tick).await;
            let Some(table) = jobs.upgrade() else { return };
            for job in table.unused(grace) {
                job.stop().await;
                log_stopped(
                    &job,
                    &format!("no request named it for {}", job_words::age(grace)),
                );
            }
        }
    });
}

/// Stops every job of `jobs` (one log line each, at INFO: a session's end stops its jobs by
/// design), then removes the spill directory; returns how many were stopped.
pub(crate) async fn stop_and_log(jobs: &JobTable, spill: &SpillStore) -> usize {
    let stopped = jobs.stop_all().await;
    for job in &stopped {
        log_stopped(job, "its session ended");
    }
    if let Err(e) = spill.remove() {
        tracing::warn!("cannot remove the session's spill directory: {e}");
    }
    stopped.len()
}

/// Ends `session` because the server is shutting down: every job and shell is stopped, noting
/// that cause (the session's next result says it, after a restart too), one log line each.
/// A session the state dir keeps keeps its files (spill directory, kept table) for when it
/// comes back; another's spill directory is removed. Returns how many were stopped.
pub(crate) async fn stop_for_shutdown(session: &Session) -> usize {
    session.ended.store(true, Ordering::Relaxed);
    let stopped = session.jobs.stop_all_for(StopCause::ServerShutDown).await;
    for job in &stopped {
        log_stopped(job, "the server was shut down");
    }
    if session.keep.get().is_some() {
        session.kept_for_restart.store(true, Ordering::Relaxed);
        session.save_jobs();
    } else if let Err(e) = session.spill.remove() {
        tracing::warn!("cannot remove the session's spill directory: {e}");
    }
    stopped.len()
}

/// The log line of a job the server stopped on its own, and why. INFO: every such stop is one
/// the server means to make (its session ended, nobody named it for the grace, the user
/// stopped it); the command line is shown without its arguments (`job_words::for_log`).
pub(crate) fn log_stopped(job: &Job, why: &str) {
    tracing::info!(
        "stopped job {} {} (pid {}, ran {}, {} of output): {}: {why}",
        job.id,
        job_words::kind_words(job.kind),
        job.pid,
        job_words::age(job.started.elapsed()),
        job_words::size(job.output.total()),
        job_words::for_log(&job.label)
    );
}
