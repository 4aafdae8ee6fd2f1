//! The binary driven by raw JSON-RPC lines, for what an SDK client cannot do on purpose: a
//! request and its cancellation in one write, a server with few file descriptors.
//!
//! "Nothing ran" must always be true: each call's side effect is a file named after it, and
//! every claim the server makes is checked against the files and `/proc`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use agentty_testkit::{processes_naming, zombie_children};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const PROMPT: Duration = Duration::from_secs(60);

struct Raw {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Responses read while waiting for another id.
    early: HashMap<String, Value>,
    workspace: tempfile::TempDir,
    _state: tempfile::TempDir,
}

impl Raw {
    /// Starts the server; `max_fds` lowers its open-file limit.
    async fn start(max_fds: Option<u64>) -> Raw {
        Self::start_with(max_fds, None).await
    }

    /// Like [`Raw::start`]; with `log`, the server logs at that `RUST_LOG` level to a piped
    /// stderr (see [`Raw::logged`]).
    async fn start_with(max_fds: Option<u64>, log: Option<&str>) -> Raw {
        let workspace = tempfile::tempdir().unwrap();
        let state = agentty_testkit::state_dir();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentty"));
        cmd.arg("serve")
            .arg("--workspace")
            .arg(workspace.path())
            .arg("--state-dir")
            .arg(state.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if log.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true);
        if let Some(level) = log {
            cmd.env("RUST_LOG", level);
        }
        if let Some(n) = max_fds {
            // SAFETY: setrlimit is async-signal-safe and touches only the child.
            unsafe {
                cmd.pre_exec(move || {
                    let limit = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut raw = Raw {
            child,
            stdin,
            lines,
            early: HashMap::new(),
            workspace,
            _state: state,
        };
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}});
        raw.write(&[init]).await;
        raw.response("init").await;
        raw.write(&[json!({"jsonrpc": "2.0", "method": "notifications/initialized"})])
            .await;
        raw
    }

    /// Writes `messages` as lines, all in one write.
    async fn write(&mut self, messages: &[Value]) {
        let mut bytes = Vec::new();
        for m in messages {
            bytes.extend(serde_json::to_vec(m).unwrap());
            bytes.push(b'\n');
        }
        self.stdin.write_all(&bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Writes raw bytes, as they are.
    async fn write_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next message with a null id (a parse error's answer).
    async fn null_id_response(&mut self) -> Value {
        if let Some(v) = self.early.remove("null") {
            return v;
        }
        self.response("null").await
    }

    /// The response to request `id`.
    async fn response(&mut self, id: &str) -> Value {
        if let Some(v) = self.early.remove(id) {
            return v;
        }
        loop {
            let line = tokio::time::timeout(PROMPT, self.lines.next_line())
                .await
                .expect("a response in time")
                .unwrap()
                .expect("the server is still up");
            let v: Value = serde_json::from_str(&line).unwrap();
            // An error with no id (rmcp leaves out `"id": null`) answers a line it could not
            // read: filed under "null".
            let got = match v.get("id") {
                Some(id) => id_text(id),
                None if v.get("error").is_some() => "null".to_owned(),
                None => continue, // a notification
            };
            if got == id {
                return v;
            }
            self.early.insert(got, v);
        }
    }

    /// Waits (bounded) for a line of the server's log containing `needle`.
    async fn logged(&mut self, needle: &str) -> bool {
        let Some(stderr) = self.child.stderr.take() else {
            return false;
        };
        let mut lines = BufReader::new(stderr).lines();
        let found = tokio::time::timeout(PROMPT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(needle) {
                    return true;
                }
            }
            false
        })
        .await;
        found.unwrap_or(false)
    }

    /// The serving process (the child of the watchdog this test started).
    fn pid(&self) -> i32 {
        super::client::serving_pid(self.child.id().unwrap() as i32)
    }
}

fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn call(id: &str, command: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "terminal", "arguments": {"command": command}}})
}

fn cancel(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "test"}})
}

fn text(response: &Value) -> String {
    response["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// Waits (bounded) until no process names a mark file: whatever started has ended.
async fn settle(workspace: &Path) {
    let needle = format!("{}/ran-", workspace.display());
    let deadline = tokio::time::Instant::now() + PROMPT;
    while !processes_naming(&needle).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn marks(workspace: &Path) -> usize {
    std::fs::read_dir(workspace)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("ran-"))
        .count()
}

#[tokio::test]
async fn a_request_cancelled_in_the_same_write_starts_nothing() {
    let mut server = Raw::start(None).await;
    let ws = server.workspace.path().to_owned();
    let tries = 200;
    for i in 0..tries {
        let id = format!("c{i}");
        let command = format!("touch {}/ran-{i}", ws.display());
        server.write(&[call(&id, &command), cancel(&id)]).await;
    }
    // A call after them all: once it is answered, every request before it was handled.
    server.write(&[call("sync", "true")]).await;
    let sync = server.response("sync").await;
    assert_eq!(sync["result"]["isError"], false, "{sync}");
    settle(&ws).await;
    assert_eq!(marks(&ws), 0, "cancelled requests ran their command");
    for (id, response) in &server.early {
        if id.starts_with('c') && response.get("result").is_some() {
            assert!(text(response).contains("nothing ran"), "{response}");
        }
    }
}

#[tokio::test]
async fn out_of_file_descriptors_a_call_said_not_to_run_did_not_run() {
    // About 55 fds held at rest after the burst (each launcher holds its socket to its cloner,
    // and each spawn a slot for its child's pidfd): 80 leaves a call room once the load is gone,
    // and 40 calls at once still run out.
    let mut server = Raw::start(Some(80)).await;
    let ws = server.workspace.path().to_owned();
    let calls = 40;
    let batch: Vec<Value> = (0..calls)
        .map(|i| {
            let command = format!("touch {}/ran-{i}; sleep 0.5", ws.display());
            call(&format!("f{i}"), &command)
        })
        .collect();
    server.write(&batch).await;
    let (mut refused, mut ran) = (0, 0);
    for i in 0..calls {
        let response = server.response(&format!("f{i}")).await;
        let said = text(&response);
        let mark = ws.join(format!("ran-{i}"));
        if said.contains("cannot run") || said.contains("nothing was started") {
            refused += 1;
            assert!(!mark.exists(), "f{i} was said not to run, but ran: {said}");
        } else if response["result"]["isError"] == false {
            ran += 1;
            assert!(mark.exists(), "f{i} said it ran, but did not: {said}");
        }
    }
    assert!(
        refused > 0,
        "the limit refused nothing ({ran} ran): the test tests nothing"
    );
    settle(&ws).await;
    // Each refused spawn was reaped or never existed: no zombie stays behind.
    let deadline = tokio::time::Instant::now() + PROMPT;
    let mut zombies = zombie_children(server.pid());
    while !zombies.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        zombies = zombie_children(server.pid());
    }
    assert_eq!(
        zombies,
        Vec::<i32>::new(),
        "zombies left ({refused} refused, {ran} ran)"
    );
    // The server still works once the load is gone.
    server.write(&[call("after", "echo fine")]).await;
    let after = server.response("after").await;
    assert!(text(&after).contains("fine"), "{after}");
}

/// A client that stops reading its replies: the server runs at most a bounded number of
/// requests ahead (then stops reading), instead of running every call and keeping every reply
/// in memory; once the client reads again, every request is answered.
#[tokio::test]
async fn a_client_that_stops_reading_holds_back_the_server() {
    let server = Raw::start(None).await;
    let ws = server.workspace.path().to_owned();
    let calls = 600;
    let Raw {
        mut stdin,
        mut lines,
        child,
        workspace,
        ..
    } = server;
    // Each reply is ~100 KB, more than a pipe holds: replies block unless read.
    let writer = tokio::spawn(async move {
        for i in 0..calls {
            let command = format!("touch {}/ran-{i}; seq 1 20000", ws.display());
            let mut line = serde_json::to_vec(&call(&format!("b{i}"), &command)).unwrap();
            line.push(b'\n');
            if stdin.write_all(&line).await.is_err() {
                break;
            }
        }
        stdin
    });
    // Until the count of commands run stops growing (bounded wait).
    let mut last = usize::MAX;
    let mut still = 0;
    let deadline = tokio::time::Instant::now() + PROMPT;
    while still < 10 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = marks(workspace.path());
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    let bound = agentty_server::transport::MAX_IN_FLIGHT + 8;
    assert!(
        last <= bound,
        "{last} commands ran for a client that reads nothing"
    );
    // Reading again: every request is answered.
    let mut answered = 0;
    while answered < calls {
        let line = tokio::time::timeout(PROMPT, lines.next_line())
            .await
            .expect("replies flow again")
            .unwrap()
            .expect("the server is up");
        if line.contains("\"id\":\"b") {
            answered += 1;
        }
    }
    let _stdin = writer.await.unwrap();
    assert_eq!(marks(workspace.path()), calls);
    drop(child);
}

/// Lines that are not JSON get a parse error (-32700, id null), as JSON-RPC asks; a tools/call
/// with malformed params gets invalid params (-32602) with its id; the session goes on.
#[tokio::test]
async fn malformed_lines_are_answered_and_the_session_goes_on() {
    let mut server = Raw::start(None).await;
    let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    for line in [
        &b"{not json"[..],
        b"\xff\xfe{\"jsonrpc\":\"2.0\"}",
        deep.as_bytes(),
    ] {
        server.write_raw(&[line, b"\n"].concat()).await;
        let answer = server.null_id_response().await;
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert!(answer.get("id").is_none_or(Value::is_null), "{answer}");
    }
    for (id, params) in [
        ("p1", json!("terminal")),
        ("p2", json!({"arguments": {}})),
        ("p3", json!({"name": "terminal", "arguments": "ls"})),
    ] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        server.write(&[request]).await;
        let answer = server.response(id).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    server.write(&[call("ok", "echo fine")]).await;
    assert!(text(&server.response("ok").await).contains("fine"));
}

/// stdin closed while stdout is full (a client that stopped reading, then left): the server
/// ends, and its jobs with it, instead of waiting for stdout to drain.
#[tokio::test]
async fn the_end_of_input_ends_the_server_even_with_stdout_full() {
    let server = Raw::start(None).await;
    let Raw {
        mut stdin,
        mut child,
        ..
    } = server;
    for i in 0..20 {
        let mut line = serde_json::to_vec(&call(&format!("f{i}"), "seq 1 20000")).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(stdin);
    let status = tokio::time::timeout(PROMPT, child.wait()).await;
    assert!(
        status.is_ok(),
        "the server kept running after its input ended"
    );
}

/// A call in flight when the client closes its input (the server then shuts down, and the
/// session's PID namespace with it) is answered with what happened to it: it ran, or it was
/// cancelled and nothing ran. Never a start failure with a made-up cause ("the PID namespace
/// has ended… restart agentty"). Several servers, since the shutdown races the start.
#[tokio::test]
async fn a_call_in_flight_when_the_input_ends_is_answered_with_what_happened() {
    for _ in 0..10 {
        let Raw {
            mut stdin,
            mut child,
            mut lines,
            workspace,
            ..
        } = Raw::start(None).await;
        let mark = workspace.path().join("ran-last");
        let mut line =
            serde_json::to_vec(&call("last", &format!("touch {}", mark.display()))).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
        drop(stdin);
        let mut answer = None;
        while let Ok(Ok(Some(line))) = tokio::time::timeout(PROMPT, lines.next_line()).await {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == "last" {
                answer = Some(v);
            }
        }
        let status = tokio::time::timeout(PROMPT, child.wait()).await;
        assert!(
            status.is_ok(),
            "the server kept running after its input ended"
        );
        settle(workspace.path()).await;
        let Some(answer) = answer else {
            continue; // gone before it answered: the client had left
        };
        let said = text(&answer);
        assert!(!said.contains("cannot run"), "{answer}");
        if said.contains("nothing ran") {
            assert!(!mark.exists(), "said nothing ran, but it ran: {answer}");
        }
    }
}

/// Cancelling a `task_wait` stops the wait at once (the reply to a cancelled request is not sent,
/// so the server's own log is what shows it); the job keeps running.
#[tokio::test]
async fn a_cancelled_task_wait_stops_waiting() {
    let mut server = Raw::start_with(None, Some("agentty_server=debug")).await;
    let start = json!({"jsonrpc": "2.0", "id": "bg", "method": "tools/call", "params": {
        "name": "terminal", "arguments": {"command": "sleep 600", "background": true}}});
    server.write(&[start]).await;
    let started = server.response("bg").await;
    let job = started["result"]["structuredContent"]["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let wait = json!({"jsonrpc": "2.0", "id": "w", "method": "tools/call", "params": {
        "name": "task_wait", "arguments": {"id": job, "timeout_ms": 600000}}});
    server.write(&[wait]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.write(&[cancel("w")]).await;
    assert!(
        server.logged("task_wait ended by cancellation").await,
        "the wait went on after its cancellation"
    );
    let list = json!({"jsonrpc": "2.0", "id": "l", "method": "tools/call", "params": {
        "name": "task_list", "arguments": {}}});
    server.write(&[list]).await;
    let listed = server.response("l").await;
    assert_eq!(
        listed["result"]["structuredContent"]["jobs"][0]["state"],
        "running"
    );
}
