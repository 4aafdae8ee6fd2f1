//! `serve --http` driven by rmcp's own streamable HTTP client: every tool over HTTP, two
//! sessions that cannot reach each other's jobs and shells, and a client of protocol 2026-07-28
//! (no session) beside a 2025-11-25 one.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::client::{Who, chown_to_nobody, processes_with_env, text_of, warned_home};

/// The tokens of [`HttpServer::start_callers`]' two callers.
pub(super) const ALICE: &str = "alice-0123456789abcdef0123456789abcdef";
pub(super) const BOB: &str = "bob-0123456789abcdef0123456789abcdef0123";
/// Three more callers of [`HttpServer::start_callers`], for what takes several at once.
pub(super) const MORE_CALLERS: [&str; 3] = [
    "carol-0123456789abcdef0123456789abcdef0",
    "dave-0123456789abcdef0123456789abcdef01",
    "erin-0123456789abcdef0123456789abcdef01",
];

/// A `serve --http` on a free loopback port, stopped (SIGTERM) when dropped.
pub(super) struct HttpServer {
    child: Child,
    url: String,
    token: String,
    workspace: tempfile::TempDir,
    pub(super) state: tempfile::TempDir,
}

impl HttpServer {
    pub(super) fn start() -> Self {
        let (workspace, state) = (tempfile::tempdir().unwrap(), agentty_testkit::state_dir());
        Self::start_with(&[], workspace, state, &[], &[])
    }

    /// A server run through `wrapper` (e.g. `setpriv` to another user), with `flags` and `env`,
    /// on `workspace` and `state`.
    pub(super) fn start_with(
        wrapper: &[&str],
        workspace: tempfile::TempDir,
        state: tempfile::TempDir,
        flags: &[&str],
        env: &[(&str, &std::path::Path)],
    ) -> Self {
        let mut command = match wrapper {
            [] => Command::new(env!("CARGO_BIN_EXE_agentty")),
            [program, rest @ ..] => {
                let mut command = Command::new(program);
                command.args(rest).arg(env!("CARGO_BIN_EXE_agentty"));
                command
            }
        };
        let mut child = command
            .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
            .arg(workspace.path())
            .arg("--state-dir")
            .arg(state.path())
            .args(flags)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| {
                let at = line.find("at http://")? + 3;
                Some(line[at..].split_whitespace().next()?.to_owned())
            })
            .expect("the server printed no address");
        // Keep reading what it logs, so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let token = std::fs::read_to_string(state.path().join("token")).unwrap_or_default();
        HttpServer {
            child,
            url,
            token: token.trim().to_owned(),
            workspace,
            state,
        }
    }

    /// A server of two callers, alice and bob ([`ALICE`], [`BOB`] in its `--token-file`), as
    /// `who`, with `flags`; and the home that holds its token file and state (nobody's for
    /// nobody), to keep while it runs.
    pub(super) fn start_callers(who: Who, flags: &[&str]) -> (Self, tempfile::TempDir) {
        Self::start_callers_through(who, &[], flags)
    }

    /// [`Self::start_callers`], the server run through `before` (e.g. `prlimit`) too.
    pub(super) fn start_callers_through(
        who: Who,
        before: &[&str],
        flags: &[&str],
    ) -> (Self, tempfile::TempDir) {
        let home = tempfile::Builder::new()
            .prefix("keys-callers-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let state = tempfile::Builder::new()
            .prefix("agentty-")
            .tempdir_in(home.path())
            .unwrap();
        let tokens = home.path().join("tokens");
        let [carol, dave, erin] = MORE_CALLERS;
        std::fs::write(
            &tokens,
            format!("alice {ALICE}\nbob {BOB}\ncarol {carol}\ndave {dave}\nerin {erin}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let mut wrapper = before.to_vec();
        if who == Who::Nobody {
            chown_to_nobody(home.path());
            chown_to_nobody(workspace.path());
            wrapper.extend([
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
            ]);
        }
        let mut all = vec!["--token-file", tokens.to_str().unwrap()];
        all.extend(flags);
        let server = Self::start_with(&wrapper, workspace, state, &all, &[("HOME", home.path())]);
        (server, home)
    }

    /// The serving process's pid (the watchdog's child).
    pub(super) fn serving_pid(&self) -> i32 {
        super::client::serving_pid(self.child.id() as i32)
    }

    /// The server's workspace, where commands start.
    pub(super) fn workspace(&self) -> &std::path::Path {
        self.workspace.path()
    }

    /// An rmcp client: `initialize` (a session of 2025-11-25) or `server/discover` (2026-07-28,
    /// no session).
    pub(super) async fn connect(&self, modern: bool) -> RunningService<RoleClient, ClientConfig> {
        self.connect_as(&self.token, modern).await
    }

    /// An rmcp client with `token` (a caller of a `--token-file`).
    pub(super) async fn connect_as(
        &self,
        token: &str,
        modern: bool,
    ) -> RunningService<RoleClient, ClientConfig> {
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .auth_header(token.to_owned());
        let transport = StreamableHttpClientTransport::from_config(config);
        let mut info = ClientConfig::default();
        if modern {
            info.protocol_version = ProtocolVersion::V_2026_07_28;
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            info.serve_with_lifecycle(transport, lifecycle)
                .await
                .unwrap()
        } else {
            info.protocol_version = ProtocolVersion::V_2025_11_25;
            info.serve(transport).await.unwrap()
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        // SAFETY: kill with a pid of our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

pub(super) async fn call(
    client: &RunningService<RoleClient, ClientConfig>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

fn ok(result: &CallToolResult) -> &Value {
    assert_eq!(result.is_error, Some(false), "{}", text_of(result));
    result.structured_content.as_ref().unwrap()
}

fn id_of(result: &CallToolResult, field: &str) -> String {
    ok(result)[field].as_str().unwrap().to_owned()
}

async fn wait_for(what: impl Fn() -> bool) -> bool {
    for _ in 0..400 {
        if what() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    what()
}

/// A home that is the workspace too (the warned setup), with the state dir in it holding a
/// token file of `tokens` (the default one, which only the state dir's rules protect); owned by
/// nobody for nobody.
fn warned_home_with(who: Who, tokens: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let (home, state) = warned_home();
    let file = state.path().join("token");
    std::fs::write(&file, tokens).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    if who == Who::Nobody {
        chown_to_nobody(home.path());
    }
    (home, state)
}

/// Review 40 L7: with the workspace holding the state dir and no mount namespace (nobody),
/// confined commands can read the token file, and with several callers in it each caller's
/// commands could act as the others: such a server is refused at start, saying why and what
/// to do; so is one caller's with `--view-control` (review 41 M3). One caller is served (its
/// commands can only be it; the start-up warning says they can read the token), and so are
/// several as root, whose mount namespace covers the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_callers_are_refused_where_commands_could_read_their_tokens() {
    // A nobody's server in the warned setup with `tokens`: it must refuse to start.
    let refused = |tokens: &str, flags: &[&str]| {
        let (home, state) = warned_home_with(Who::Nobody, tokens);
        let out = Command::new("timeout")
            .args(["20", "setpriv", "--reuid=65534", "--regid=65534"])
            .args(["--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_agentty"))
            .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
            .arg(home.path())
            .arg("--state-dir")
            .arg(state.path())
            .args(flags)
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{err}");
        err
    };
    let callers = format!("alice {ALICE}\nbob {BOB}\n");
    let err = refused(&callers, &[]);
    assert!(
        err.contains("names several callers") && err.contains("act as them"),
        "{err}"
    );
    // One caller whose view may type into shells (review 41 M3): the token is the view's too.
    let err = refused(&format!("alice {ALICE}\n"), &["--view-control"]);
    assert!(
        err.contains("type into the user's shells") && err.contains("--view-control"),
        "{err}"
    );
    // The token file kept elsewhere: the view's login pages are still in the state dir (review
    // 42 M3).
    let keys = tempfile::Builder::new()
        .prefix("keys-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let elsewhere = keys.path().join("tokens");
    std::fs::write(&elsewhere, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    std::fs::set_permissions(
        &elsewhere,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    chown_to_nobody(keys.path());
    let err = refused("", &["--token-file", elsewhere.to_str().unwrap()]);
    assert!(
        err.contains("login pages") && err.contains("act as them in the view"),
        "{err}"
    );
    // One caller, as nobody: served.
    let (home, state) = warned_home_with(Who::Nobody, &format!("alice {ALICE}\n"));
    let path = home.path().to_path_buf();
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
    ];
    let server = HttpServer::start_with(&nobody, home, state, &[], &[("HOME", &path)]);
    let alice = server.connect_as(ALICE, false).await;
    let ran = call(&alice, "terminal", json!({"command": "echo served"})).await;
    assert!(text_of(&ran).contains("served"), "{}", text_of(&ran));
    // Why several are refused: the file is open to the commands here.
    let command = format!("cat {}/.local/state/*/token", path.display());
    let ran = call(&alice, "terminal", json!({ "command": command })).await;
    assert!(text_of(&ran).contains(ALICE), "{}", text_of(&ran));
    // Several, as root: served, and alice's commands cannot read bob's token.
    let (home, state) = warned_home_with(Who::Root, &callers);
    let (file, path) = (state.path().join("token"), home.path().to_path_buf());
    let server = HttpServer::start_with(&[], home, state, &[], &[("HOME", &path)]);
    let alice = server.connect_as(ALICE, false).await;
    let command = format!("cat {}; echo tried", file.display());
    let ran = call(&alice, "terminal", json!({ "command": command })).await;
    assert!(text_of(&ran).contains("tried"), "{}", text_of(&ran));
    assert!(!text_of(&ran).contains(BOB), "{}", text_of(&ran));
}

/// Each caller's PTY commands run in that caller's namespaces, however the callers take turns:
/// such a spawn's launcher is made ahead, per namespace (`launcher.rs` `Spare`), and one made
/// for another caller would put the command in theirs (their processes, their network).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_callers_pty_commands_run_in_that_callers_namespaces() {
    let (server, _home) = HttpServer::start_callers(Who::Root, &[]);
    let (a, b) = (
        server.connect_as(ALICE, false).await,
        server.connect_as(BOB, false).await,
    );
    let namespaces = "readlink /proc/self/ns/pid /proc/self/ns/net | tr '\\n' ' '";
    let seen = |result: &CallToolResult| ok(result)["stdout"].as_str().unwrap().to_owned();
    let mut of = Vec::new();
    for caller in [&a, &b] {
        of.push(seen(
            &call(caller, "terminal", json!({"command": namespaces})).await,
        ));
    }
    assert_ne!(of[0], of[1], "the two callers share namespaces");
    for round in 0..3 {
        for (caller, own) in [(&a, &of[0]), (&b, &of[1])] {
            let pty = call(
                caller,
                "terminal",
                json!({"command": namespaces, "pty": true}),
            )
            .await;
            let pty = seen(&pty);
            assert!(
                pty.contains(own.trim()),
                "round {round}: {pty} is not the caller's {own}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_works_over_http_and_two_sessions_cannot_reach_each_other() {
    let server = HttpServer::start();
    let (a, b) = (server.connect(false).await, server.connect(false).await);
    let tag = format!("rmcp-http-{}", std::process::id());

    let ran = call(&a, "terminal", json!({"command": "echo over-http"})).await;
    assert_eq!(ok(&ran)["stdout"], "over-http\n");
    let job = id_of(
        &call(
            &a,
            "terminal",
            json!({"command": "echo started; sleep 300", "background": true,
                   "env": {"RMCP_HTTP_TAG": &tag}}),
        )
        .await,
        "job_id",
    );
    assert!(wait_for(|| processes_with_env("RMCP_HTTP_TAG", &tag).len() == 1).await);
    let listed = call(&a, "task_list", json!({})).await;
    assert!(text_of(&listed).contains(&job), "{}", text_of(&listed));
    let waited = call(&a, "task_wait", json!({"id": &job, "timeout_ms": 200})).await;
    ok(&waited);
    let output = call(&a, "task_output", json!({"id": &job, "since": 0})).await;
    assert!(text_of(&output).contains("started"), "{}", text_of(&output));

    let shell = id_of(&call(&a, "shell_open", json!({})).await, "id");
    let sent = call(
        &a,
        "shell_send",
        json!({"id": &shell, "input": "echo in-shell\n"}),
    )
    .await;
    assert!(text_of(&sent).contains("in-shell"), "{}", text_of(&sent));
    ok(&call(&a, "shell_read", json!({"id": &shell})).await);
    let shells = call(&a, "shell_list", json!({})).await;
    assert!(text_of(&shells).contains(&shell), "{}", text_of(&shells));
    // B's commands cannot name A's shell's terminal (a /dev/pts of its own), so cannot write
    // into its screen, nor read the keys typed into it.
    let forged = call(
        &b,
        "terminal",
        json!({"command": "for f in /dev/pts/[0-9]*; do echo FORGED-B > $f; done 2>/dev/null; echo tried"}),
    )
    .await;
    assert!(text_of(&forged).contains("tried"), "{}", text_of(&forged));
    call(
        &a,
        "shell_send",
        json!({"id": &shell, "input": "echo after-b\n"}),
    )
    .await;
    let screen = text_of(&call(&a, "shell_read", json!({"id": &shell, "screen": true})).await);
    assert!(screen.contains("after-b"), "{screen}");
    assert!(
        !screen.contains("FORGED"),
        "B wrote into A's terminal: {screen}"
    );

    // The other session: the same ids answer as ids that never existed, for every tool.
    let never = |id: &str| if id.starts_with('s') { "s99" } else { "t99" };
    for (tool, id) in [
        ("task_output", &job),
        ("task_wait", &job),
        ("task_stop", &job),
        ("shell_read", &shell),
        ("shell_send", &shell),
        ("shell_close", &shell),
    ] {
        let mut args = json!({"id": id});
        if tool == "shell_send" {
            args["input"] = json!("echo from-b\n");
        }
        let foreign = call(&b, tool, args.clone()).await;
        args["id"] = json!(never(id));
        let unknown = call(&b, tool, args).await;
        assert_eq!(
            foreign.is_error,
            Some(true),
            "{tool}: {}",
            text_of(&foreign)
        );
        assert_eq!(
            text_of(&foreign).replace(id.as_str(), "ID"),
            text_of(&unknown).replace(never(id), "ID"),
            "{tool}"
        );
    }
    for tool in ["task_list", "shell_list"] {
        let theirs = call(&b, tool, json!({})).await;
        let said = text_of(&theirs);
        assert!(
            !said.contains(&job) && !said.contains("sleep 300"),
            "{tool}: {said}"
        );
    }
    assert_eq!(processes_with_env("RMCP_HTTP_TAG", &tag).len(), 1);

    ok(&call(&a, "shell_close", json!({"id": &shell})).await);
    ok(&call(&a, "task_stop", json!({"id": &job})).await);
    assert!(wait_for(|| processes_with_env("RMCP_HTTP_TAG", &tag).is_empty()).await);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_a_session_works_beside_a_session_and_neither_sees_the_other() {
    let server = HttpServer::start();
    let (modern, legacy) = (server.connect(true).await, server.connect(false).await);
    assert_eq!(
        modern.peer_info().map(|i| i.protocol_version.clone()),
        Some(ProtocolVersion::V_2026_07_28),
        "the modern client did not get 2026-07-28"
    );
    let tag = format!("rmcp-stateless-{}", std::process::id());
    let ran = call(&modern, "terminal", json!({"command": "echo stateless"})).await;
    assert_eq!(ok(&ran)["stdout"], "stateless\n");
    let started = call(
        &modern,
        "terminal",
        json!({"command": "sleep 300", "background": true, "env": {"RMCP_HTTP_TAG": &tag}}),
    )
    .await;
    let job = id_of(&started, "job_id");
    assert!(
        job.len() == 26 && job.starts_with("t-"),
        "not an unguessable handle: {job}"
    );
    assert!(wait_for(|| processes_with_env("RMCP_HTTP_TAG", &tag).len() == 1).await);
    // Requests stand alone, and the handle still reaches the job.
    let listed = call(&modern, "task_list", json!({})).await;
    assert!(text_of(&listed).contains(&job), "{}", text_of(&listed));

    let session_job = id_of(
        &call(
            &legacy,
            "terminal",
            json!({"command": "sleep 300", "background": true}),
        )
        .await,
        "job_id",
    );
    assert_eq!(session_job, "t1", "a session's ids stay short");
    let theirs = call(&legacy, "task_list", json!({})).await;
    assert!(!text_of(&theirs).contains(&job), "{}", text_of(&theirs));
    let refused = call(&legacy, "task_stop", json!({"id": &job})).await;
    assert_eq!(refused.is_error, Some(true));
    let refused = call(&modern, "task_stop", json!({"id": "t1"})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text_of(&refused));
    assert_eq!(processes_with_env("RMCP_HTTP_TAG", &tag).len(), 1);

    ok(&call(&modern, "task_stop", json!({"id": &job})).await);
    assert!(wait_for(|| processes_with_env("RMCP_HTTP_TAG", &tag).is_empty()).await);
    ok(&call(&legacy, "task_stop", json!({"id": "t1"})).await);
    modern.cancel().await.unwrap();
    legacy.cancel().await.unwrap();
}
