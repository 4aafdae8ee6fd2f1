//! The next start's sweep of a session killed with its watchdog stops only what descends from
//! that session (docs/BEHAVIOUR.md §3), run as an ordinary user: there agentty has no PID
//! namespace, every run is written down, and a confined command can copy its own run marker
//! into `.envrc`.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use super::client::*;

const PROMPT: Duration = Duration::from_secs(20);

/// The user the test runs agentty and the user's own processes as: this one, or, as root,
/// `nobody` through `setpriv` (root has the PID namespace, where this cannot happen), with a
/// home of its own under the target dir.
struct User {
    home: tempfile::TempDir,
    /// `setpriv …` as root, nothing otherwise.
    wrapper: Vec<String>,
}

const NOBODY: u32 = 65534;

impl User {
    /// `None` as root without `setpriv`.
    fn ordinary() -> Option<User> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let home = tempfile::Builder::new()
            .prefix("sweep-home-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let wrapper = if root {
            if !Path::new("/usr/bin/setpriv").exists() {
                return None;
            }
            std::os::unix::fs::chown(home.path(), Some(NOBODY), Some(NOBODY)).unwrap();
            [
                "/usr/bin/setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ]
            .map(str::to_owned)
            .to_vec()
        } else {
            Vec::new()
        };
        std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        Some(User { home, wrapper })
    }

    /// A directory of the user's in its home (each one made on the way too).
    fn dir(&self, name: &str, mode: u32) -> PathBuf {
        let mut dir = self.home.path().to_owned();
        for part in Path::new(name) {
            dir.push(part);
            std::fs::DirBuilder::new().mode(mode).create(&dir).unwrap();
            if !self.wrapper.is_empty() {
                std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
            }
        }
        dir
    }

    /// `program` run as the user, with its home.
    fn command(&self, program: &str) -> tokio::process::Command {
        let mut cmd = match self.wrapper.split_first() {
            Some((setpriv, args)) => {
                let mut cmd = tokio::process::Command::new(setpriv);
                cmd.args(args).arg(program);
                cmd
            }
            None => tokio::process::Command::new(program),
        };
        cmd.env("HOME", self.home.path()).stdin(Stdio::null());
        cmd
    }
}

/// An agentty serving over stdio as `user`: its client and the pid of the process started (the
/// watchdog; `setpriv` execs it).
async fn serve_as(
    user: &User,
    workspace: &Path,
    state: &Path,
) -> (RunningService<rmcp::RoleClient, ()>, i32) {
    let mut cmd = user.command(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace)
        .arg("--state-dir")
        .arg(state)
        .process_group(0);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap() as i32;
    (().serve(transport).await.unwrap(), pid)
}

async fn terminal(client: &RunningService<rmcp::RoleClient, ()>, args: Value) -> String {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new("terminal".to_owned()).with_arguments(args))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    text_of(&result)
}

/// Kills, when dropped, every process whose `JOBTAG` is one of these.
struct KillTagged(Vec<String>);

impl Drop for KillTagged {
    fn drop(&mut self) {
        for tag in &self.0 {
            for pid in processes_with_env("JOBTAG", tag) {
                // SAFETY: kill takes a pid and a signal number.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// How long after its last sign of life a session counts as dead to the sweep: a process
/// started later cannot descend from it.
const DEAD_AFTER: Duration = Duration::from_millis(
    agentty_core::runs::HEARTBEAT_MS + agentty_core::runs::HEARTBEAT_SLACK_MS + 500,
);

/// Measured as an ordinary user: a confined command wrote `export AGENTTY_RUN=$AGENTTY_RUN`
/// into `.envrc`; after the server and its watchdog were SIGKILLed together, a process the user
/// started later that sourced it got SIGTERM at the next agentty start. The sweep now stops only
/// what descends from the dead session: a process started after the session was last seen alive
/// is spared, and so is one started during it by one of the user's shells (its parent is that
/// shell, not the init or subreaper that adopts a dead session's orphans), while a real leftover
/// (a `setsid` escapee of the killed session's job) is still stopped.
#[tokio::test]
async fn the_sweep_spares_the_users_processes_that_sourced_a_planted_marker() {
    let Some(user) = User::ordinary() else {
        eprintln!("skipped: root without setpriv cannot run this as an ordinary user");
        return;
    };
    let (leftover, during, later) = (
        tag("sweep-leftover"),
        tag("sweep-during"),
        tag("sweep-later"),
    );
    let _cleanup = KillTagged(vec![leftover.clone(), during.clone(), later.clone()]);
    let workspace = user.dir("ws", 0o755);
    let state = user.dir(".local/state/agentty", 0o700);
    let (client, watchdog) = serve_as(&user, &workspace, &state).await;
    let planted = terminal(
        &client,
        json!({"command": "echo \"export AGENTTY_RUN=$AGENTTY_RUN\" > .envrc; cat .envrc"}),
    )
    .await;
    let marker = planted
        .lines()
        .find_map(|l| l.strip_prefix("export AGENTTY_RUN="))
        .unwrap_or_else(|| panic!("nothing planted: {planted}"))
        .to_owned();
    // Without the namespace the run is written down: what makes a planted copy dangerous.
    let records: Vec<_> = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        records.iter().any(|r| r.lines().any(|l| l == marker)),
        "the confined run was not written down (a PID namespace?): {records:?}"
    );
    terminal(
        &client,
        json!({"command": "(setsid sleep 300 >/dev/null 2>&1 &); exec sleep 300",
               "background": true, "env": {"JOBTAG": leftover}}),
    )
    .await;
    let seen = wait_for_processes("JOBTAG", &leftover, 2, PROMPT).await;
    assert!(
        seen.iter().all(|&n| n >= 2),
        "the job did not start: {seen:?}"
    );
    let envrc = workspace.join(".envrc");
    let user_process = |tag: &str, script: &str| {
        user.command("/bin/sh")
            .arg("-c")
            .arg(script.replace("ENVRC", &envrc.to_string_lossy()))
            .env("JOBTAG", tag)
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    // Started during the session by a shell of the user's that sourced the plant.
    let _during = user_process(&during, ". ENVRC; sleep 300; :");
    // The shell and its `sleep`; only the `sleep` shows the marker (a shell's `/proc` environment
    // is the one it started with).
    assert_eq!(
        wait_for_processes("JOBTAG", &during, 2, PROMPT).await,
        [2, 2]
    );
    let with_marker = |tag: &str| {
        processes_with_env("JOBTAG", tag)
            .into_iter()
            .filter(|&pid| {
                std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                    env.split(|&b| b == 0)
                        .any(|e| e == format!("AGENTTY_RUN={marker}").as_bytes())
                })
            })
            .count()
    };
    assert_eq!(with_marker(&during), 1, "the plant was not sourced");

    let serving = kill_with_its_watchdog(watchdog).await;
    let alive = |pid: i32| agentty_testkit::stat(pid).is_some_and(|s| !s.zombie());
    let deadline = Instant::now() + PROMPT;
    while (alive(serving) || alive(watchdog)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(client);
    assert_eq!(
        processes_with_env("JOBTAG", &leftover).len(),
        2,
        "nothing was left to sweep"
    );

    // Later, the user starts a process the same way (here exec'd by its parent, this test,
    // which started the dead agentty too).
    tokio::time::sleep(DEAD_AFTER).await;
    let _later = user_process(&later, ". ENVRC; exec sleep 300");
    assert_eq!(
        wait_for_processes("JOBTAG", &later, 1, PROMPT).await,
        [1, 1]
    );
    assert_eq!(with_marker(&later), 1, "the plant was not sourced");

    let (next, _) = serve_as(&user, &workspace, &state).await;
    assert_eq!(
        wait_until_gone("JOBTAG", &leftover, PROMPT).await,
        Vec::<i32>::new(),
        "the next start left the dead session's escapee running"
    );
    // Past the sweep's grace and its SIGKILL rounds.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(
        processes_with_env("JOBTAG", &later).len(),
        1,
        "the sweep stopped a process the user started after the session died"
    );
    assert_eq!(
        processes_with_env("JOBTAG", &during).len(),
        2,
        "the sweep stopped a process a shell of the user's started"
    );
    drop(next);
}
