//! What the state dir keeps of HTTP sessions across a restart (docs/BEHAVIOUR.md §14): for a
//! client session, the client's `initialize` (so rmcp can bring the session back under the same
//! `Mcp-Session-Id`), the caller that opened it, and its job table; for a caller without a
//! session, its job table. After a restart, a job of that table is no longer "no such job": the
//! session hears that it was lost, or stopped when the server was shut down.
//!
//! One file per session, `<state dir>/kept/session-<Mcp-Session-Id>` or `caller-<hex of the
//! caller's name>`, JSON, 0600 in a 0700 directory, written whole to a new file that replaces
//! the old one (a reader never sees half a table). A session id comes from a request header: only
//! the shape rmcp gives (a UUID) names a file.
//!
//! Nothing secret is written. A job's command is kept as a log line shows it (its program, no
//! argument: `job_words::for_log`), and its `env` and `stdin` were never part of the table. The
//! client's `initialize` holds its name, version and capabilities.
//!
//! Bounded: a table holds at most what the job table keeps (the caps and the ended jobs kept),
//! plus what came back from before the restart, at most [`BEFORE_KEPT`]; files untouched for
//! [`KEPT_RETENTION`] are removed at start, and at most [`KEPT_FILES`] are kept (oldest first
//! go). A session that ends (its `DELETE`, its grace) takes its file with it; only the server's
//! own end leaves it, for the session to come back to.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentty_core::jobs::{Job, JobKind, JobState, StopCause};
use serde::{Deserialize, Serialize};

/// Files untouched for this long are removed at start: the spill directories' retention, so a
/// job's spill file named in its record may still be there.
pub const KEPT_RETENTION: Duration = agentty_core::SPILL_RETENTION;

/// At most this many files are kept (the oldest go first at start).
pub const KEPT_FILES: usize = 512;

/// At most this many jobs from before a restart are kept in a table (the newest).
pub const BEFORE_KEPT: usize = 2 * agentty_core::jobs::ENDED_KEPT;

/// Which file: a client session's, by its `Mcp-Session-Id`; or a caller's without a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Session(String),
    Caller(String),
}

/// Set by the HTTP gate on a request naming a session this server does not hold but keeps a
/// file of, for this request's caller: rmcp brings the session back and replays its
/// `initialize`, whose handler finds this among the request's extensions.
#[derive(Debug, Clone)]
pub struct Resuming(pub String);

/// A job as the file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub kind: RecordKind,
    /// The command as a log line shows it (no argument), or the shell and its workdir.
    pub label: String,
    pub workdir: String,
    /// Seconds since the epoch.
    pub started: u64,
    /// Its state in words, when written (`running`, `exited 1`, `stopped`, …).
    pub state: String,
    pub exit_code: Option<i32>,
    /// When it ended, when it had.
    pub ended: Option<u64>,
    /// It was stopped because the server was shut down.
    #[serde(default)]
    pub shut_down: bool,
    /// When a restart found it running (it was lost then).
    #[serde(default)]
    pub lost_at: Option<u64>,
    /// Its spill file, when its output overflowed the ring.
    pub spill: Option<String>,
}

impl JobRecord {
    /// The job as the words of a job from before a restart take it (`job_words::earlier`).
    pub(crate) fn earlier(&self) -> crate::job_words::Earlier<'_> {
        crate::job_words::Earlier {
            id: &self.id,
            shell: self.kind == RecordKind::Shell,
            label: &self.label,
            state: &self.state,
            lost_at: self.lost_at,
            shut_down_at: self.shut_down.then_some(self.ended.unwrap_or(0)),
            spill: self.spill.as_deref(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    Command,
    Shell,
}

/// One file.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    /// The caller (a token's name) whose session it is; never a token.
    #[serde(default)]
    caller: Option<String>,
    /// rmcp's `SessionState`: the client's `initialize`.
    #[serde(default)]
    initialize: Option<serde_json::Value>,
    #[serde(default)]
    jobs: Vec<JobRecord>,
}

/// The state dir's files of sessions, for this process.
pub struct Kept {
    dir: PathBuf,
    /// Files are kept at all (over HTTP): set once before serving.
    on: OnceLock<()>,
    /// Nothing more is written ([`Kept::freeze`]).
    frozen: std::sync::atomic::AtomicBool,
    /// When this server started: a job a restart found running was lost then.
    started: SystemTime,
    /// One read-modify-write at a time.
    lock: Mutex<()>,
}

/// Seconds since the epoch.
pub(crate) fn epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Whether `id` has the shape of rmcp's session ids (a UUID): only such an id names a file.
fn is_session_id(id: &str) -> bool {
    id.len() == 36
        && id.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

impl Kept {
    /// The files of the state dir `state_dir` (nothing is made until [`Kept::enable`]).
    pub fn new(state_dir: &Path) -> Self {
        Kept {
            dir: state_dir.join("kept"),
            on: OnceLock::new(),
            frozen: std::sync::atomic::AtomicBool::new(false),
            started: SystemTime::now(),
            lock: Mutex::new(()),
        }
    }

    /// Keeps files from now on (the HTTP listener, before serving), removing those past
    /// [`KEPT_RETENTION`] and past [`KEPT_FILES`].
    pub fn enable(&self) {
        if let Err(e) = agentty_core::ensure_private_dir(&self.dir) {
            tracing::warn!(
                "cannot keep sessions across restarts in {}: {e}",
                self.dir.display()
            );
            return;
        }
        let _ = self.on.set(());
        let pruned = self.prune(SystemTime::now());
        if pruned > 0 {
            tracing::info!(
                pruned,
                "removed the files of sessions that did not come back"
            );
        }
    }

    pub fn enabled(&self) -> bool {
        self.on.get().is_some() && !self.frozen.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Writes nothing from now on: the server is dying without a drain (its watchdog was
    /// killed), and what it kills now was lost with it, as the next start will say; a table
    /// written now would say "killed by SIGKILL" instead.
    pub fn freeze(&self) {
        self.frozen.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// When this server started.
    pub fn started(&self) -> SystemTime {
        self.started
    }

    fn path(&self, key: &Key) -> Option<PathBuf> {
        if !self.enabled() {
            return None;
        }
        match key {
            Key::Session(id) if is_session_id(id) => Some(
                self.dir
                    .join(format!("session-{}", id.to_ascii_lowercase())),
            ),
            Key::Session(_) => None,
            Key::Caller(name) => {
                let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
                Some(self.dir.join(format!("caller-{hex}")))
            }
        }
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The file of `key`, if there is one this process can trust: a regular file of this user's
    /// that nobody else may read, not a symlink.
    fn read(&self, key: &Key) -> Option<Record> {
        let path = self.path(key)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        let meta = file.metadata().ok()?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if !meta.is_file() || meta.uid() != me || meta.mode() & 0o077 != 0 {
            return None;
        }
        serde_json::from_reader(std::io::BufReader::new(file)).ok()
    }

    /// Writes `record` as the file of `key`: to a new file, then renamed over the old one.
    fn write(&self, key: &Key, record: &Record) {
        let Some(path) = self.path(key) else { return };
        let tmp = path.with_extension(format!("new-{}", std::process::id()));
        let written = (|| -> std::io::Result<()> {
            let _ = std::fs::remove_file(&tmp);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            file.write_all(&serde_json::to_vec(record).map_err(std::io::Error::other)?)?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            tracing::warn!("cannot keep a session's table in {}: {e}", path.display());
        }
    }

    /// Changes the file of `key` (made if absent).
    fn update(&self, key: &Key, change: impl FnOnce(&mut Record)) {
        if !self.enabled() {
            return;
        }
        let _guard = self.guard();
        let mut record = self.read(key).unwrap_or_default();
        change(&mut record);
        self.write(key, &record);
    }

    /// Keeps rmcp's `SessionState` of the client session `id` (its client's `initialize`).
    pub fn save_initialize(&self, id: &str, state: serde_json::Value) {
        self.update(&Key::Session(id.to_owned()), |r| r.initialize = Some(state));
    }

    /// rmcp's `SessionState` of the client session `id`, when it is kept.
    pub fn load_initialize(&self, id: &str) -> Option<serde_json::Value> {
        let _guard = self.guard();
        self.read(&Key::Session(id.to_owned()))?.initialize
    }

    /// Notes the caller that opened the client session `id`.
    pub fn note_owner(&self, id: &str, caller: &str) {
        self.update(&Key::Session(id.to_owned()), |r| {
            r.caller = Some(caller.to_owned());
        });
    }

    /// The caller that opened the kept client session `id`; `None` when it is not kept.
    pub fn owner(&self, id: &str) -> Option<String> {
        let _guard = self.guard();
        self.read(&Key::Session(id.to_owned()))?.caller
    }

    /// Keeps the job table of `key`: `before` (what came back from before a restart), then
    /// `jobs`.
    pub(crate) fn save_jobs(&self, key: &Key, before: &[JobRecord], jobs: &[std::sync::Arc<Job>]) {
        if !self.enabled() {
            return;
        }
        let now = SystemTime::now();
        let mut records: Vec<JobRecord> = before.to_vec();
        records.extend(jobs.iter().map(|job| record_of(job, now)));
        self.update(key, |r| r.jobs = records);
    }

    /// The job table of `key` as a restart finds it: what was running then was lost now.
    pub(crate) fn load_jobs(&self, key: &Key) -> Vec<JobRecord> {
        let mut jobs = {
            let _guard = self.guard();
            self.read(key).map(|r| r.jobs).unwrap_or_default()
        };
        let now = epoch(self.started);
        for job in &mut jobs {
            if job.state == "running" || job.state == "open" {
                job.lost_at.get_or_insert(now);
            }
        }
        let drop = jobs.len().saturating_sub(BEFORE_KEPT);
        jobs.drain(..drop);
        jobs
    }

    /// Removes the file of `key` (its session ended).
    pub fn forget(&self, key: &Key) {
        if let Some(path) = self.path(key) {
            let _guard = self.guard();
            let _ = std::fs::remove_file(path);
        }
    }

    /// Removes files untouched for [`KEPT_RETENTION`], then the oldest past [`KEPT_FILES`];
    /// returns how many went.
    fn prune(&self, now: SystemTime) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut files: Vec<(SystemTime, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, e.path()))
            })
            .collect();
        files.sort();
        let mut removed = 0;
        let excess = files.len().saturating_sub(KEPT_FILES);
        for (i, (modified, path)) in files.iter().enumerate() {
            let old = now.duration_since(*modified).unwrap_or_default() > KEPT_RETENTION;
            if (old || i < excess) && std::fs::remove_file(path).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

/// A job as its file keeps it, written at `now`.
fn record_of(job: &Job, now: SystemTime) -> JobRecord {
    let state = job.state();
    let started = now.checked_sub(job.started.elapsed()).unwrap_or(UNIX_EPOCH);
    let ended = (!state.is_running()).then(|| epoch(started + job.ran_for()));
    let spill = job
        .output
        .read(Some(job.output.total()), 0)
        .spill_path
        .map(|p| p.display().to_string());
    JobRecord {
        id: job.id.clone(),
        kind: match job.kind {
            JobKind::Command => RecordKind::Command,
            JobKind::Shell => RecordKind::Shell,
        },
        label: crate::job_words::for_log(&job.label),
        workdir: job.workdir.display().to_string(),
        started: epoch(started),
        state: crate::job_words::state_words(job.kind, &state),
        exit_code: match state {
            JobState::Exited(code) => Some(code),
            _ => None,
        },
        ended,
        shut_down: job.stop_cause() == Some(StopCause::ServerShutDown),
        lost_at: None,
        spill,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_uuid_names_a_session_file() {
        let state = tempfile::tempdir().unwrap();
        let kept = Kept::new(state.path());
        kept.enable();
        let id = "0f8fad5b-d9cb-469f-a165-70867728950e";
        assert!(kept.path(&Key::Session(id.into())).is_some());
        for bad in [
            "../x",
            "/etc/passwd",
            "",
            "0f8fad5b-d9cb-469f-a165-70867728950/",
        ] {
            assert_eq!(kept.path(&Key::Session(bad.into())), None, "{bad}");
        }
        let caller = kept.path(&Key::Caller("../a b".into())).unwrap();
        assert_eq!(caller.parent(), Some(state.path().join("kept").as_path()));
    }

    #[test]
    fn a_file_keeps_owner_initialize_and_jobs_and_goes_when_forgotten() {
        let state = tempfile::tempdir().unwrap();
        let kept = Kept::new(state.path());
        let id = "0f8fad5b-d9cb-469f-a165-70867728950e";
        kept.note_owner(id, "alice");
        assert_eq!(kept.owner(id), None, "written before it was enabled");
        kept.enable();
        kept.save_initialize(id, serde_json::json!({"clientInfo": {"name": "x"}}));
        kept.note_owner(id, "alice");
        assert_eq!(kept.owner(id).as_deref(), Some("alice"));
        assert!(kept.load_initialize(id).is_some());
        let path = state.path().join("kept").join(format!("session-{id}"));
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let running = JobRecord {
            id: "t1".into(),
            kind: RecordKind::Command,
            label: "sleep …".into(),
            workdir: "/w".into(),
            started: 1,
            state: "running".into(),
            exit_code: None,
            ended: None,
            shut_down: false,
            lost_at: None,
            spill: None,
        };
        kept.save_jobs(
            &Key::Session(id.into()),
            std::slice::from_ref(&running),
            &[],
        );
        let back = kept.load_jobs(&Key::Session(id.into()));
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].lost_at, Some(epoch(kept.started())));
        kept.forget(&Key::Session(id.into()));
        assert!(!path.exists());
        assert_eq!(kept.owner(id), None);
    }
}
