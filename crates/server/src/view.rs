//! What the web view (`agentty/src/http/view/`) reads of the sessions: the sessions of the
//! caller who logged in (an operator sees every caller's) with their jobs and shells, one job or
//! shell to stream, the stop a person may ask for with `--view-control`, and the secret
//! requests. Every answer is scoped to the [`Viewer`]: a caller's key opens nothing of another
//! caller's, whatever it names (docs/BEHAVIOUR.md §12). Looking never counts as use: a watched
//! shell still closes when idle, and a handle of a caller without a session is still stopped
//! when no request names it.

use std::sync::Arc;

use agentty_core::jobs::{Job, JobKind, JobState};
use agentty_core::pty::Shell;
use serde_json::{Value, json};

use crate::secrets::Asked;
use crate::server::Agentty;
use crate::session::{Caller, LazySession};

/// Who looks: a caller (a token of the token file) or an operator (a token marked so, off by
/// default), who sees every caller's sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    Caller(Caller),
    Operator,
}

impl Viewer {
    /// Whether this viewer may see what belongs to `owner` (`None`: the stdio session, the local
    /// user's, whom every token of the server's file is).
    pub fn sees(&self, owner: Option<&Caller>) -> bool {
        match (self, owner) {
            (Viewer::Operator, _) | (Viewer::Caller(_), None) => true,
            (Viewer::Caller(me), Some(owner)) => me == owner,
        }
    }
}

/// What the view streams.
pub enum Target {
    /// A background command: its output ring.
    Job(Arc<Job>),
    /// A foreground call running now: its output, coloured.
    Call(Arc<crate::view_calls::LiveCall>),
    /// A foreground call that ended: the text the model got.
    Done(Arc<crate::view_calls::DoneCall>),
    /// A shell: its screen (and its job, for the state).
    Shell(Arc<Job>, Arc<Shell>),
}

/// Why a stop from the view did not happen.
#[derive(Debug, thiserror::Error)]
pub enum StopRefused {
    #[error("no such job")]
    Unknown,
    #[error("it has already ended")]
    Ended,
}

impl Agentty {
    /// Every session of `viewer`'s whose state exists, oldest first.
    fn view_sessions(&self, viewer: &Viewer) -> Vec<Arc<LazySession>> {
        let mut sessions: Vec<Arc<LazySession>> = self
            .live_sessions()
            .into_iter()
            .filter(|s| s.state.get().is_some() && viewer.sees(s.caller.get()))
            .collect();
        sessions.sort_by_key(|s| s.started);
        sessions
    }

    pub(crate) fn view_session(&self, viewer: &Viewer, key: &str) -> Option<Arc<LazySession>> {
        self.view_sessions(viewer)
            .into_iter()
            .find(|s| s.name == key)
    }

    /// The secret requests `viewer` may see and answer.
    pub fn view_secrets(&self, viewer: &Viewer) -> Vec<Asked> {
        self.secrets()
            .waiting()
            .into_iter()
            .filter(|asked| viewer.sees(asked.caller.as_ref()))
            .collect()
    }

    /// The page's picture of every session: `{sessions: [{key, client, transport, started,
    /// calls (see `calls_json`), jobs: [{id, kind, state, exit_code, signal, label, runs (a
    /// shell's: see `shell_runs`), pid, age_ms, bytes, sandbox}]}],
    /// secrets: [{id, shell, what, asker}], warnings: [{session, time, path, what}]}`.
    /// `warnings`: what the watch of planted code found after a call or job of a session the
    /// viewer sees, oldest first (`time` in seconds since the epoch; `session` those of the
    /// sessions it followed that the viewer sees, joined with ", "; at most 16 per session, 128
    /// in all), kept after its session ended.
    pub fn view_state(&self, viewer: &Viewer) -> Value {
        let confining = self.confinement().confines();
        // Which agentty it is: several agents' sessions share one page (the view's hub).
        let agent = format!(
            "agentty pid {} in {}",
            std::process::id(),
            self.settings().workspace.display()
        );
        let sessions: Vec<Value> = self
            .view_sessions(viewer)
            .iter()
            .filter_map(|lazy| {
                let state = lazy.state.get()?;
                let about = lazy.about.get();
                // In the words its commands' results had: `ask` is `allowlist` where the
                // session's client cannot be asked (over HTTP, or without elicitation).
                let asks = state.client_can_ask.load(std::sync::atomic::Ordering::Relaxed);
                let escalated_line = self.confinement().line(true, asks);
                let confined_line = self.confinement().line(false, asks);
                let held = state
                    .held_by_user
                    .lock()
                    .map(|held| held.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default();
                let stopped_by_user = state
                    .stopped_by_user
                    .lock()
                    .map(|ids| ids.clone())
                    .unwrap_or_default();
                let jobs: Vec<Value> = state
                    .jobs
                    .list()
                    .iter()
                    .map(|job| {
                        let (word, exit_code, signal) = match job.state() {
                            JobState::Stopped if stopped_by_user.contains(&job.id) => {
                                ("stopped by the user", None, None)
                            }
                            JobState::Running => ("running", None, None),
                            JobState::Exited(code) => ("exited", Some(code), None),
                            JobState::Signalled(sig) => {
                                ("signalled", None, Some(agentty_core::signal_name(sig)))
                            }
                            JobState::Stopped => ("stopped", None, None),
                            JobState::Reaped => ("closed (idle)", None, None),
                        };
                        let sandbox = if job.confined || !confining {
                            &confined_line
                        } else {
                            &escalated_line
                        };
                        let runs = (job.kind == JobKind::Shell)
                            .then(|| state.shells.peek(&job.id).map(|shell| shell_runs(&shell, job)))
                            .flatten();
                        json!({
                            "id": job.id,
                            "runs": runs,
                            "user_has_keyboard": held.contains(&job.id),
                            "kind": if job.kind == JobKind::Shell { "shell" } else { "command" },
                            "state": word,
                            "exit_code": exit_code,
                            "signal": signal,
                            "label": job.label,
                            "pid": job.pid,
                            "age_ms": u64::try_from(job.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                            "bytes": job.output.total(),
                            "sandbox": sandbox,
                        })
                    })
                    .collect();
                let started = lazy
                    .started
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                // Its commands' recent connections, allowed and refused (docs/BEHAVIOUR.md §13).
                let network: Vec<Value> = self
                    .egress()
                    .recent(&lazy.name)
                    .into_iter()
                    .map(|seen| {
                        json!({
                            "time": seen.time,
                            "host": seen.target.host,
                            "port": seen.target.port,
                            "decision": if seen.allowed { "allowed" } else { "refused" },
                            "rule": seen.rule,
                        })
                    })
                    .collect();
                let calls = calls_json(&state.view_calls);
                Some(json!({
                    "key": lazy.name,
                    "calls": calls,
                    "caller": lazy.caller.get().map(|c| c.0.to_string()),
                    "agent": agent,
                    "client": about.map_or("unknown client", |a| a.client.as_str()),
                    "transport": about.map_or("", |a| a.transport),
                    "started": started,
                    "jobs": jobs,
                    "network": network,
                }))
            })
            .collect();
        let secrets: Vec<Value> = self
            .view_secrets(viewer)
            .into_iter()
            .map(|a| json!({"id": a.id, "shell": a.shell_id, "what": a.what, "asker": a.asker}))
            .collect();
        let warnings = self.inner.told.as_json(|caller| viewer.sees(caller));
        json!({ "sessions": sessions, "secrets": secrets, "warnings": warnings })
    }

    /// The job or shell `id` of session `key`, to stream.
    pub fn view_target(&self, viewer: &Viewer, key: &str, id: &str) -> Option<Target> {
        let session = self.view_session(viewer, key)?;
        let state = session.state.get()?;
        if let Some(call) = state.view_calls.running(id) {
            return Some(Target::Call(call));
        }
        if let Some(call) = state.view_calls.done(id) {
            return Some(Target::Done(call));
        }
        let job = state.jobs.peek(id)?;
        if job.kind == JobKind::Shell
            && let Some(shell) = state.shells.peek(id)
        {
            return Some(Target::Shell(job, shell));
        }
        Some(Target::Job(job))
    }

    /// The person watching stops a job or closes a shell (`--view-control`); the model hears of
    /// it in its next result in that session.
    pub async fn view_stop(&self, viewer: &Viewer, key: &str, id: &str) -> Result<(), StopRefused> {
        let session = self.view_session(viewer, key).ok_or(StopRefused::Unknown)?;
        let state = session.state.get().ok_or(StopRefused::Unknown)?;
        let job = state.jobs.peek(id).ok_or(StopRefused::Unknown)?;
        if !job.state().is_running() {
            return Err(StopRefused::Ended);
        }
        if job.kind == JobKind::Shell {
            let _ = state.shells.close(id).await;
        }
        if let Ok(mut ids) = state.stopped_by_user.lock() {
            ids.push(job.id.clone());
        }
        job.stop().await;
        crate::session::log_stopped(&job, "the user stopped it from the web view");
        if let Ok(mut notes) = session.user_notes.lock() {
            notes.push(crate::tasks::notice::stopped_by_user(&job.id, job.kind));
        }
        Ok(())
    }
}

impl Agentty {
    /// The full output of call `id` of session `key`, while its spill file exists.
    pub fn view_spill(&self, viewer: &Viewer, key: &str, id: &str) -> Option<std::path::PathBuf> {
        let session = self.view_session(viewer, key)?;
        let path = session.state.get()?.view_calls.done(id)?.spill.clone()?;
        path.exists().then_some(path)
    }
}

/// A session's calls for the view's state: `{ran, failed, running: [{id, label, age_ms}],
/// done: [{id, label, state, exit_code, signal, started, took_ms, spill}]}`, newest last.
fn calls_json(calls: &crate::view_calls::Calls) -> Value {
    let summary = calls.summary();
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let epoch = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    let running: Vec<Value> = summary
        .running
        .iter()
        .map(|c| {
            json!({"id": c.id, "label": c.label, "age_ms": ms(c.started.elapsed()),
                   "started": epoch(c.since)})
        })
        .collect();
    let done: Vec<Value> = summary
        .done
        .iter()
        .map(|c| {
            let (state, exit_code, signal) = c.ending.words();
            json!({"id": c.id, "label": c.label, "state": state, "exit_code": exit_code,
                   "signal": signal, "failed": c.ending.failed(), "started": epoch(c.since),
                   "took_ms": ms(c.took),
                   "spill": c.spill.as_ref().is_some_and(|p| p.exists())})
        })
        .collect();
    json!({"ran": summary.ran, "failed": summary.failed, "running": running, "done": done})
}

/// What runs in a shell and where, for its label: the program in the terminal's foreground
/// (the shell itself at its prompt) and that program's directory. A few reads of `/proc`.
fn shell_runs(shell: &Shell, job: &Job) -> Value {
    let leader = shell.foreground_leader().unwrap_or(job.pid);
    let command = std::fs::read(format!("/proc/{leader}/cmdline"))
        .map(|raw| {
            let words: Vec<String> = raw
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words.join(" ")
        })
        .unwrap_or_default();
    let cwd = std::fs::read_link(format!("/proc/{leader}/cwd"))
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    json!({"program": command.chars().take(200).collect::<String>(), "cwd": cwd,
           "at_prompt": leader == job.pid})
}
