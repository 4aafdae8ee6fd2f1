//! Helpers: build run requests for `/bin/sh`, find a run's processes in `/proc`.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentty_core::Shaped;
use agentty_core::SpillStore;
use agentty_core::jobs::OutputRing;
use agentty_core::pty::{OpenSpec, SendOutcome, SendRequest, Shell};
use agentty_core::run::{self, RunOutcome, RunRequest};
use agentty_core::spawn::{Confine, RUN_MARKER_VAR, SpawnSpec, StdinMode};

/// A marker no other test (or test process) uses.
pub fn marker(name: &str) -> String {
    format!("test-{}-{name}", std::process::id())
}

pub fn sh(command: &str, marker: &str) -> SpawnSpec {
    SpawnSpec {
        program: OsString::from("/bin/sh"),
        args: vec![OsString::from("-c"), OsString::from(command)],
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        stdin: StdinMode::Null,
        marker: marker.to_owned(),
        confine: None,
        caller: None,
        pass_fds: Vec::new(),
        masks: None,
    }
}

pub fn request(command: &str, marker: &str, timeout_ms: u64) -> RunRequest {
    RunRequest {
        spec: sh(command, marker),
        stdin: None,
        timeout: Duration::from_millis(timeout_ms),
        spill: None,
        keep_whole: false,
        view: None,
    }
}

pub fn with_spill(mut req: RunRequest, dir: &Path, name: &str) -> RunRequest {
    req.spill = Some((Arc::new(SpillStore::new(dir, "session")), name.to_owned()));
    req
}

pub async fn run_to_end(req: RunRequest) -> RunOutcome {
    agentty_core::init().expect("reaper");
    run::run(req, std::future::pending(), None)
        .await
        .expect("spawn")
}

pub fn text(shaped: &Shaped) -> &str {
    match shaped {
        Shaped::Whole(t) => t,
        Shaped::HeadTail { .. } => panic!("expected whole output, got head+tail"),
    }
}

/// Live processes whose environment carries this run marker.
/// Waits (at most `within`) until two scans in a row count at least `n`, and returns the last
/// two counts. Trees fork and exec as they start, so a single scan can catch a passing state;
/// judge by these counts, not by a fresh scan.
pub async fn wait_for_marked(marker: &str, n: usize, within: Duration) -> [usize; 2] {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = [0, processes_with_marker(marker).len()];
    while seen.iter().any(|&c| c < n) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        seen = [seen[1], processes_with_marker(marker).len()];
    }
    seen
}

/// Waits (bounded) until no process of the run is left; returns what is still there.
pub async fn leftovers_after(marker: &str, within: Duration) -> Vec<i32> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = processes_with_marker(marker);
        if left.is_empty() || tokio::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Live processes of the run with this marker.
pub fn processes_with_marker(marker: &str) -> Vec<i32> {
    agentty_testkit::processes_with_env(RUN_MARKER_VAR, marker)
}

/// A confinement that applies nothing and counts the launcher threads that apply its shared
/// part; it may refuse them (as a thread start refused under a fork bomb would).
#[derive(Default)]
pub struct CountsLaunchers {
    pub tries: AtomicUsize,
    pub refuse: Refuse,
}

/// Which launchers a [`CountsLaunchers`] refuses to set up.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub enum Refuse {
    #[default]
    None,
    /// The first one.
    First,
    /// Every one: each spawn clones its child itself.
    All,
}

impl Confine for CountsLaunchers {
    fn apply_own(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn apply_shared(&self) -> std::io::Result<()> {
        // SAFETY: gettid and getpid have no preconditions. A child cloned by the spawn itself
        // (there is no launcher) applies this too: it is a process, its tid is its pid.
        let on_a_thread = unsafe { libc::gettid() != libc::getpid() };
        if !on_a_thread {
            return Ok(());
        }
        let first = self.tries.fetch_add(1, Ordering::Relaxed) == 0;
        match self.refuse {
            Refuse::All => Err(std::io::Error::from_raw_os_error(libc::EAGAIN)),
            Refuse::First if first => Err(std::io::Error::from_raw_os_error(libc::EAGAIN)),
            _ => Ok(()),
        }
    }

    /// A thread that clones apart (no launcher took the spawn) is not a launcher: not counted,
    /// not refused.
    fn apply_to_cloner(&self) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
        Ok(None)
    }
}

/// A shell (`program`) or terminal command's spawn spec: no arguments, in the temp dir.
pub fn spec(program: &str, marker: &str) -> SpawnSpec {
    SpawnSpec {
        program: OsString::from(program),
        args: Vec::new(),
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        stdin: StdinMode::Null,
        marker: marker.to_owned(),
        confine: None,
        caller: None,
        pass_fds: Vec::new(),
        masks: None,
    }
}

/// [`spec`] to open as a shell, 80x24, with a ring of its own.
pub fn open_spec(program: &str, marker: &str) -> OpenSpec {
    OpenSpec {
        spawn: spec(program, marker),
        cols: 80,
        rows: 24,
        output: Arc::new(OutputRing::new(None)),
        startup_dir: std::env::temp_dir().join("agentty-tests-startup"),
    }
}

/// Types `input` and waits at most `ms` for it (a send expected to leave its command running).
pub async fn send_for(shell: &Shell, input: &str, ms: u64) -> SendOutcome {
    shell
        .send(SendRequest {
            input,
            timeout: Duration::from_millis(ms),
            wait_for: None,
        })
        .await
        .expect("send")
}
