//! The record of runs a later start may stop: what makes the dead-session sweep trust a marker.
//! It outlives the server: the watchdog removes it once it has stopped what the server left,
//! or, when both died together, the next start does after its sweep.
//!
//! The sweep ([`crate::watchdog::sweep_dead_sessions`]) stops processes whose run marker names a
//! session whose watchdog is gone. A marker is only an environment variable, and a confined
//! command can copy its own into `.envrc` or a script the user sources later; the user's
//! processes would then carry it, and the next start would kill them. So a marker counts only if
//! the session that issued it wrote it here, in `<state dir>/runs/<session>` (0700 directory,
//! 0600 file, created exclusively, no symlink followed, written through a directory fd held
//! open), and only runs the sweep may be needed for are written: those outside the session's
//! PID namespace (unconfined commands, and every command where there is no namespace). A
//! confined command in the namespace is never written, since the kernel stops its whole tree;
//! copies of its marker are never stopped.
//!
//! A marker that was written down is still only a variable: without the namespace every run is
//! written, and a confined command can plant its own. So the record also holds what a command
//! cannot copy, for the sweep to judge that a process really descends from the session
//! (`crate::sweep`): the session's ancestors (pid and start tick), where the kernel hands its
//! orphans when the server and the watchdog die together, and a heartbeat, the file's mtime,
//! touched every [`HEARTBEAT_MS`] while the record lists a run: a process whose line of marked
//! ancestors starts after the session was last seen alive was not started by it.
//!
//! What is written must not be readable by a confined command: where the session has its
//! namespace the runs directory is covered there by an empty read-only mount
//! ([`crate::namespace`]); everywhere it lies in the state dir, which Landlock keeps from
//! confined commands' reads (`agentty_sandbox`'s `unreadable.rs`); and the markers carry 64
//! random bits, so one cannot be guessed either. Where commands run unconfined (`auto` mode,
//! `--no-sandbox`) the record is readable, and such a command could plant a marker of its own
//! session's.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// How often the watchdog touches its session's record while it lists a run: the heartbeat the
/// sweep judges a process's start by. Every 2 s: a process the user starts later than this
/// (plus [`HEARTBEAT_SLACK_MS`]) after agentty was killed is never taken for the session's,
/// and an idle agentty wakes once per beat; a record with no run is never touched, so a session
/// whose commands all ran in its namespace writes nothing.
pub const HEARTBEAT_MS: u64 = 2000;
/// Added to [`HEARTBEAT_MS`] for a late beat (a loaded machine, a coarse file time).
pub const HEARTBEAT_SLACK_MS: u64 = 1000;

/// This session's record, once [`open`] made it.
static RECORD: OnceLock<Mutex<File>> = OnceLock::new();
/// The length of the record's header (what [`open`] wrote): longer, it lists a run.
static HEADER_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The word that starts the record's line of the session's ancestors.
const ANCESTORS: &str = "ancestors";

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Whether `name` has the shape of a session's name (`<seconds>-<pid>-<start ticks>`, all
/// digits, [`crate::watchdog::session_name`]). A session named by a run marker comes from a
/// process's environment, which a confined command writes: a name with a `/` would open a file
/// it planted (an absolute one ignores the directory), so only this shape names a record.
pub(crate) fn is_session_name(name: &str) -> bool {
    let mut fields = 0;
    for field in name.split('-') {
        if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        fields += 1;
    }
    fields == 3
}

/// The record's file name for `session`: refused unless it has a session's shape.
fn record_name(session: &str) -> io::Result<CString> {
    if !is_session_name(session) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    cstr(session.as_bytes())
}

/// Creates `dir` 0700, with any missing parents, unless it is there already. Only the session
/// that writes its record creates it: a read or a removal that did would bring back a state dir
/// removed meanwhile (the watchdog reads and removes the record after the server has ended).
fn create_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Opens `dir` without following a symlink, and checks that it is this user's and private: a
/// record anyone else can write would let them name runs.
fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let path = cstr(dir.as_os_str().as_bytes())?;
    // SAFETY: open on a NUL-terminated path; the fd returned is fresh.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fstat into a zeroed struct on an fd we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getuid has no preconditions.
    if st.st_uid != unsafe { libc::getuid() } || st.st_mode & 0o077 != 0 {
        return Err(io::Error::other(format!(
            "{} is not private to this user",
            dir.display()
        )));
    }
    Ok(fd)
}

/// Starts this session's record in `dir` (the state dir's `runs`). Call once at start-up.
pub fn open(dir: &Path, session: &str) -> io::Result<()> {
    create_dir(dir)?;
    let name = record_name(session)?;
    let dir_fd = open_dir(dir)?;
    // SAFETY: openat relative to a directory fd we hold, on a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir_fd.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_EXCL
                | libc::O_APPEND
                | libc::O_NOFOLLOW
                | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd, owned by nobody else.
    let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    // First line: the PID namespace the markers' pids are in. Another namespace's agentty
    // sharing this state dir (a container with the same home) cannot judge them, nor remove
    // them. Second: this process's ancestors, where the kernel hands the session's orphans
    // when it and the server die together.
    let header = format!("{}\n{}\n", own_namespace(), ancestors_line());
    file.write_all(header.as_bytes())?;
    HEADER_BYTES.store(header.len() as u64, std::sync::atomic::Ordering::Relaxed);
    let _ = RECORD.set(Mutex::new(file));
    Ok(())
}

/// `ancestors <pid>:<start tick> …`: this process's parent, its parent, … up to (not
/// including) the PID namespace's init, which is always where orphans may go.
fn ancestors_line() -> String {
    let mut line = ANCESTORS.to_owned();
    // SAFETY: getppid has no preconditions.
    let mut pid = unsafe { libc::getppid() };
    for _ in 0..64 {
        if pid <= 1 {
            break;
        }
        let Some(stat) = crate::tree::read_stat(pid) else {
            break;
        };
        line.push_str(&format!(" {pid}:{}", stat.started.unwrap_or(0)));
        pid = stat.ppid;
    }
    line
}

/// The heartbeat: marks this session's record as seen alive now, when it lists a run (see
/// [`HEARTBEAT_MS`]). Called by the watchdog, which is what the session's name names.
pub fn heartbeat() {
    let Some(record) = RECORD.get() else {
        return;
    };
    let Ok(file) = record.lock() else {
        return;
    };
    let header = HEADER_BYTES.load(std::sync::atomic::Ordering::Relaxed);
    if file.metadata().is_ok_and(|m| m.len() > header) {
        // SAFETY: futimens on an fd we hold; a null `times` sets both to now.
        unsafe { libc::futimens(file.as_raw_fd(), std::ptr::null()) };
    }
}

/// The heartbeat on a thread of its own, for a server that has no watchdog (it could not
/// start): the session's name names the server then.
pub fn heartbeat_on_thread() {
    let _ = std::thread::Builder::new()
        .name("agentty-heartbeat".into())
        .spawn(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(HEARTBEAT_MS));
                heartbeat();
            }
        });
}

/// This process's PID namespace, as `/proc/self/ns/pid` names it (`pid:[4026531836]`).
fn own_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes `marker` down as one this session issued to a run the sweep may have to stop.
pub(crate) fn note(marker: &str) {
    if let Some(record) = RECORD.get()
        && let Ok(mut file) = record.lock()
    {
        // One write of a whole line: O_APPEND keeps lines whole.
        let _ = file.write_all(format!("{marker}\n").as_bytes());
    }
}

/// What a session wrote down of itself and its runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Record {
    /// The markers of the runs it wrote down.
    pub markers: Vec<String>,
    /// Its watchdog's ancestors when it started: pid and start tick.
    pub ancestors: Vec<(i32, u64)>,
    /// When it was last seen alive (the record's mtime).
    pub seen_alive: Option<std::time::SystemTime>,
}

/// What `session` wrote in `dir`; `None` when there is no record this process can judge
/// (absent, not a private regular file of this user's, or made in another PID namespace).
pub(crate) fn recorded(dir: &Path, session: &str) -> Option<Record> {
    let read = || -> io::Result<(String, Option<std::time::SystemTime>)> {
        let name = record_name(session)?;
        let dir = open_dir(dir)?;
        // SAFETY: openat relative to a directory fd we hold, on a NUL-terminated name.
        // O_NONBLOCK: a fifo in the record's place must not hold the sweep in `open`.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh fd, owned by nobody else.
        let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let meta = file.metadata()?;
        use std::os::unix::fs::MetadataExt;
        // SAFETY: getuid has no preconditions.
        if !meta.is_file() || meta.uid() != unsafe { libc::getuid() } || meta.mode() & 0o077 != 0 {
            return Err(io::Error::other("not a private record"));
        }
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        Ok((text, meta.modified().ok()))
    };
    let (text, seen_alive) = read().ok()?;
    let mut lines = text.lines();
    if lines.next()? != own_namespace() {
        return None;
    }
    let mut record = Record {
        seen_alive,
        ..Record::default()
    };
    for line in lines {
        match line.strip_prefix(ANCESTORS) {
            Some(ancestors) => {
                record.ancestors = ancestors
                    .split_ascii_whitespace()
                    .filter_map(|pair| {
                        let (pid, ticks) = pair.split_once(':')?;
                        Some((pid.parse().ok()?, ticks.parse().ok()?))
                    })
                    .collect();
            }
            None => record.markers.push(line.to_owned()),
        }
    }
    Some(record)
}

/// The sessions that have a record in `dir`.
pub(crate) fn sessions(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|name| is_session_name(name))
                .collect()
        })
        .unwrap_or_default()
}

/// Removes `session`'s record from `dir`, if it was made in this PID namespace.
pub(crate) fn forget(dir: &Path, session: &str) {
    if recorded(dir, session).is_none() {
        return;
    }
    if let (Ok(fd), Ok(name)) = (open_dir(dir), record_name(session)) {
        // SAFETY: unlinkat relative to a directory fd we hold, on a NUL-terminated name.
        unsafe { libc::unlinkat(fd.as_raw_fd(), name.as_ptr(), 0) };
    }
}

/// 64 random bits from the kernel, for a marker nobody can guess.
pub fn random_tag() -> u64 {
    crate::random::u64()
}

/// Where a state dir keeps the records.
pub fn dir_in(state_dir: &Path) -> PathBuf {
    state_dir.join("runs")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_or_removing_a_record_creates_no_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let runs = dir_in(&state);
        assert_eq!(recorded(&runs, "1-2"), None);
        forget(&runs, "1-2");
        assert!(sessions(&runs).is_empty());
        assert!(!state.exists(), "the state dir was brought back");
    }

    /// A private runs dir in a fresh temp dir, and the temp dir.
    fn runs_dir() -> (tempfile::TempDir, PathBuf) {
        use std::os::unix::fs::DirBuilderExt;
        let tmp = tempfile::tempdir().unwrap();
        let runs = dir_in(tmp.path());
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&runs)
            .unwrap();
        (tmp, runs)
    }

    /// A file that would pass for a record of this namespace, listing `marker`.
    fn plant(path: &Path, marker: &str) {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .unwrap();
        write!(file, "{}\n{ANCESTORS} 7:70\n{marker}\n", own_namespace()).unwrap();
    }

    #[test]
    fn a_session_named_by_a_path_reads_no_record() {
        let (tmp, runs) = runs_dir();
        let planted = tmp.path().join("x-999999999-5");
        plant(&planted, "x-999999999-5-1");
        let session = planted.to_str().unwrap();
        assert_eq!(recorded(&runs, session), None, "an absolute name was read");
        plant(&runs.join("7-8-9"), "7-8-9-1");
        let record = recorded(&runs, "7-8-9").unwrap();
        assert_eq!(record.markers, vec!["7-8-9-1".to_owned()]);
        assert_eq!(record.ancestors, vec![(7, 70)]);
        assert!(record.seen_alive.is_some());
        assert_eq!(
            recorded(&runs, "../runs/7-8-9"),
            None,
            "a relative path was read"
        );
        forget(&runs, session);
        assert!(
            planted.exists(),
            "a planted file outside the record was removed"
        );
        for name in ["1-2", "1-2-3-4", "1-a-3", "-1-2", "1--2", ".", ".."] {
            assert!(!is_session_name(name), "{name}");
        }
        assert!(is_session_name("1733299200-4242-123456"));
    }

    /// The only test that opens this process's record (it is made once per process).
    #[test]
    fn the_heartbeat_touches_a_record_that_lists_a_run_and_only_then() {
        let (_tmp, runs) = runs_dir();
        open(&runs, "11-22-33").unwrap();
        let record = runs.join("11-22-33");
        let long_ago = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
        let age = || recorded(&runs, "11-22-33").unwrap().seen_alive.unwrap();
        let set_old = || {
            File::options()
                .write(true)
                .open(&record)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        };
        set_old();
        heartbeat();
        assert_eq!(age(), long_ago, "a record with no run was touched");
        note("11-22-33-c1-00aa");
        set_old();
        heartbeat();
        let beat = age();
        assert!(beat > long_ago, "the heartbeat did not touch the record");
        let read = recorded(&runs, "11-22-33").unwrap();
        assert_eq!(read.markers, vec!["11-22-33-c1-00aa".to_owned()]);
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() };
        assert_eq!(read.ancestors.first().map(|a| a.0), Some(parent));
    }

    #[test]
    fn a_fifo_in_a_records_place_is_not_waited_on() {
        let (_tmp, runs) = runs_dir();
        let fifo = cstr(runs.join("1-2-3").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        // Without O_NONBLOCK this open waits for a writer that never comes.
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = runs.clone();
        std::thread::spawn(move || tx.send(recorded(&dir, "1-2-3")));
        let read = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(read, Ok(None), "reading a fifo's place waited for a writer");
        assert_eq!(sessions(&runs), vec!["1-2-3".to_owned()]);
    }
}
