//! Starting the real binary and talking to it with rmcp's client.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use agentty_testkit::{processes_with_arg, processes_with_env};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A client that records progress messages.
#[derive(Clone, Default)]
pub struct Recorder {
    pub progress: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

pub struct Server {
    pub client: RunningService<RoleClient, Recorder>,
    /// The process the host started: the watchdog, parent of the serving process
    /// ([`serving_pid`]), which forwards signals to it and exits with its status.
    pub pid: i32,
    pub recorder: Recorder,
    pub workspace: tempfile::TempDir,
    pub state: tempfile::TempDir,
}

pub async fn start() -> Server {
    start_with(&[]).await
}

/// Starts the server with extra flags (e.g. `--mode plan`).
pub async fn start_with(flags: &[&str]) -> Server {
    start_in(agentty_testkit::state_dir(), flags).await
}

/// Starts the server with `state` as its state dir.
pub async fn start_in(state: tempfile::TempDir, flags: &[&str]) -> Server {
    start_at(tempfile::tempdir().unwrap(), state, flags).await
}

/// Starts the server on `workspace`, with `state` as its state dir.
pub async fn start_at(
    workspace: tempfile::TempDir,
    state: tempfile::TempDir,
    flags: &[&str],
) -> Server {
    start_at_with_env(workspace, state, flags, &[]).await
}

/// [`start_at`], with variables added to the server's environment.
pub async fn start_at_with_env(
    workspace: tempfile::TempDir,
    state: tempfile::TempDir,
    flags: &[&str],
    env: &[(&str, &std::path::Path)],
) -> Server {
    start_wrapped(&[], workspace, state, flags, env).await
}

/// Starts the server as the last argument of `wrapper` (e.g. `sh -c '…; exec "$0" "$@"'`), so
/// a test can prepare the process it runs in.
pub async fn start_wrapped(
    wrapper: &[&str],
    workspace: tempfile::TempDir,
    state: tempfile::TempDir,
    flags: &[&str],
    env: &[(&str, &std::path::Path)],
) -> Server {
    start_spawned(wrapper, workspace, state, flags, env, None).await
}

/// What a server wrote on stderr (its log: warnings and above, and where the view listens),
/// gathered as it comes.
pub type Log = Arc<Mutex<String>>;

/// [`start_wrapped`], with the server's stderr gathered in the [`Log`] returned.
pub async fn start_logged(
    wrapper: &[&str],
    workspace: tempfile::TempDir,
    state: tempfile::TempDir,
    flags: &[&str],
    env: &[(&str, &std::path::Path)],
) -> (Server, Log) {
    let log = Log::default();
    let server = start_spawned(wrapper, workspace, state, flags, env, Some(log.clone())).await;
    (server, log)
}

/// Waits (at most `within`) until `log` has a line with every one of `words`; returns it.
pub async fn logged(log: &Log, words: &[&str], within: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let found = log
            .lock()
            .unwrap()
            .lines()
            .find(|line| words.iter().all(|w| line.contains(w)))
            .map(str::to_owned);
        if found.is_some() || tokio::time::Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn start_spawned(
    wrapper: &[&str],
    workspace: tempfile::TempDir,
    state: tempfile::TempDir,
    flags: &[&str],
    env: &[(&str, &std::path::Path)],
    log: Option<Log>,
) -> Server {
    let binary = env!("CARGO_BIN_EXE_agentty");
    let mut cmd = match wrapper {
        [] => tokio::process::Command::new(binary),
        [program, args @ ..] => {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args).arg(binary);
            cmd
        }
    };
    cmd.envs(env.iter().copied());
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state.path())
        .args(flags);
    let transport = match log {
        None => TokioChildProcess::new(cmd).unwrap(),
        Some(log) => {
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut stderr = stderr.unwrap();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = tokio::io::AsyncReadExt::read(&mut stderr, &mut buf).await {
                    log.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
            transport
        }
    };
    let pid = transport.id().unwrap() as i32;
    let recorder = Recorder::default();
    let client = recorder.clone().serve(transport).await.unwrap();
    Server {
        client,
        pid,
        recorder,
        workspace,
        state,
    }
}

impl Server {
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        self.client
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await
            .unwrap()
    }

    pub async fn terminal(&self, args: Value) -> (String, Value) {
        let result = self.call("terminal", args).await;
        assert_eq!(result.is_error, Some(false), "{result:?}");
        (
            text_of(&result),
            result.structured_content.unwrap_or(Value::Null),
        )
    }

    /// `shell_send` of `input` to shell `id`: the text and the structured result.
    pub async fn shell_send(&self, id: &str, input: &str) -> (String, Value) {
        let result = self
            .call("shell_send", json!({"id": id, "input": input}))
            .await;
        (
            text_of(&result),
            result.structured_content.unwrap_or(Value::Null),
        )
    }

    /// Starts `terminal` with `args` plus `background: true`; returns the job id.
    pub async fn background(&self, mut args: Value) -> String {
        args["background"] = Value::Bool(true);
        let (text, s) = self.terminal(args).await;
        assert_eq!(s["status"], "background", "{text}");
        s["job_id"].as_str().unwrap().to_owned()
    }

    /// Opens a shell with no arguments; returns its id.
    pub async fn open_shell(&self) -> String {
        let r = self.call("shell_open", json!({})).await;
        assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
        r.structured_content.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub fn workspace(&self) -> &Path {
        self.workspace.path()
    }
}

pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The serving process under the watchdog `watchdog` (the process a host starts forks it at
/// start-up and stays behind): the one live child running this binary.
pub fn serving_pid(watchdog: i32) -> i32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let children: Vec<i32> = agentty_testkit::children(watchdog)
            .into_iter()
            .filter(|&pid| agentty_testkit::stat(pid).is_some_and(|s| !s.zombie()))
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe"))
                    .is_ok_and(|exe| exe == std::path::Path::new(env!("CARGO_BIN_EXE_agentty")))
            })
            .collect();
        match children[..] {
            [pid] => return pid,
            _ if std::time::Instant::now() > deadline => {
                panic!("no single serving process under {watchdog}: {children:?}")
            }
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Kills the watchdog `watchdog` and its server as if in the same instant (`pkill -9 agentty`),
/// so that neither acts on the other's death: the watchdog frozen first (SIGSTOP, until it is
/// stopped: `kill` returns before a stop lands), then the server killed (its children go to the
/// frozen watchdog), then the watchdog, and with it they go to the init. Not the server frozen
/// first: once the watchdog dies, the server's process group (itself alone, under the init
/// then) is an orphaned one with a stopped job, which the kernel sends SIGHUP and SIGCONT, and
/// the server wakes to its watchdog's death and stops its children. The watchdog's group is
/// not orphaned: its parent, the test, is in the same session. Returns the server's pid.
pub async fn kill_with_its_watchdog(watchdog: i32) -> i32 {
    let serving = serving_pid(watchdog);
    let signal = |pid: i32, sig: i32| {
        // SAFETY: kill takes a pid and a signal number.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {pid} {sig}");
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    signal(watchdog, libc::SIGSTOP);
    while !every_thread_stopped(watchdog) {
        assert!(
            std::time::Instant::now() < deadline,
            "the watchdog did not stop"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    signal(serving, libc::SIGKILL);
    while agentty_testkit::stat(serving).is_some_and(|s| !s.zombie()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not die"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    signal(watchdog, libc::SIGKILL);
    serving
}

/// Whether every thread of `pid` is stopped (state `T`).
fn every_thread_stopped(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|task| {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        stat.rfind(')')
            .and_then(|end| stat.get(end + 2..end + 3))
            .is_some_and(|state| state == "T")
    })
}

/// Waits (at most `within`) until two scans in a row count at least `n`, and returns the last
/// two counts. Trees fork and exec as they start, so a single scan can catch a passing state;
/// judge by these counts, not by a fresh scan.
pub async fn wait_for_processes(var: &str, value: &str, n: usize, within: Duration) -> [usize; 2] {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = [0, processes_with_env(var, value).len()];
    while seen.iter().any(|&c| c < n) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen = [seen[1], processes_with_env(var, value).len()];
    }
    seen
}

pub async fn wait_until_gone(var: &str, value: &str, within: Duration) -> Vec<i32> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = processes_with_env(var, value);
        if left.is_empty() || tokio::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn tag(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// The unprivileged user the servers of a test's "nobody" half run as.
pub const NOBODY: &str = "65534";

/// Who a server under test runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// A root server: the session's namespaces exist.
    Root,
    /// The same server run as nobody (`setpriv`): no namespace.
    Nobody,
}

/// A home that is the workspace too (the warned setup: the state dir lies where confined
/// commands may write), and a state dir in it, where the default one would be.
pub fn warned_home() -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::TempDir::with_prefix("ws-home-").unwrap();
    std::fs::create_dir_all(home.path().join(".local/state")).unwrap();
    let state = tempfile::Builder::new()
        .prefix("agentty-")
        .tempdir_in(home.path().join(".local/state"))
        .unwrap();
    (home, state)
}

pub fn chown_to_nobody(path: &Path) {
    let status = std::process::Command::new("chown")
        .arg("-R")
        .arg(format!("{NOBODY}:{NOBODY}"))
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// [`start_logged`] as `who`, inside `wrapper` (run as root; for nobody the drop to nobody
/// comes after it). `home`, when given, is the server's `HOME`; for nobody, it and the
/// workspace become nobody's.
pub async fn start_as(
    who: Who,
    wrapper: &[&str],
    workspace: tempfile::TempDir,
    state: tempfile::TempDir,
    flags: &[&str],
    home: Option<&Path>,
) -> (Server, Log) {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "these tests need root");
    let uid = format!("--reuid={NOBODY}");
    let gid = format!("--regid={NOBODY}");
    let mut wrapper = wrapper.to_vec();
    if who == Who::Nobody {
        chown_to_nobody(workspace.path());
        if let Some(home) = home {
            chown_to_nobody(home);
        }
        wrapper.extend(["setpriv", &uid, &gid, "--clear-groups", "--"]);
    }
    let env: Vec<(&str, &Path)> = home.map(|h| ("HOME", h)).into_iter().collect();
    start_logged(&wrapper, workspace, state, flags, &env).await
}

/// A server on `workspace` as `who`, inside `wrapper` ([`start_as`]), with its log. Nobody's
/// gets a home of its own (returned, to keep), outside every place confined commands may write
/// (a confining server refuses a state dir they could write), with the state dir in it.
pub async fn serve_as(
    who: Who,
    wrapper: &[&str],
    workspace: tempfile::TempDir,
    flags: &[&str],
) -> (Server, Log, Option<tempfile::TempDir>) {
    match who {
        Who::Root => {
            let state = agentty_testkit::state_dir();
            let (server, log) = start_as(who, wrapper, workspace, state, flags, None).await;
            (server, log, None)
        }
        Who::Nobody => {
            let home = tempfile::Builder::new()
                .prefix("nobody-home-")
                .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
                .unwrap();
            let state = tempfile::Builder::new()
                .prefix("state-")
                .tempdir_in(home.path())
                .unwrap();
            let at = Some(home.path());
            let (server, log) = start_as(who, wrapper, workspace, state, flags, at).await;
            (server, log, Some(home))
        }
    }
}
