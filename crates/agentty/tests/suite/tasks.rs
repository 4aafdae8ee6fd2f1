//! Background jobs and the four `task_*` tools through a real MCP client over stdio, and the
//! rule that no job outlives the server, however the server ends (EOF, SIGTERM, SIGKILL).

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::client::*;

const PROMPT: Duration = Duration::from_secs(20);

/// A server whose pid and stderr the test keeps (to kill it, and to read its shutdown log).
struct Owned {
    client: RunningService<RoleClient, ()>,
    pid: i32,
    stderr: tempfile::NamedTempFile,
    _workspace: tempfile::TempDir,
    _state: Option<tempfile::TempDir>,
}

async fn start_owned() -> Owned {
    let state = agentty_testkit::state_dir();
    let mut owned = start_owned_in(state.path(), &[]).await;
    owned._state = Some(state);
    owned
}

/// A server with `state` as its state dir (which the caller keeps) and extra flags.
async fn start_owned_in(state: &std::path::Path, flags: &[&str]) -> Owned {
    start_owned_without(state, flags, &[]).await
}

/// [`start_owned_in`] with the variables `unset` taken out of the server's environment, as a
/// host that does not pass them on starts it.
async fn start_owned_without(state: &std::path::Path, flags: &[&str], unset: &[&str]) -> Owned {
    let workspace = tempfile::tempdir().unwrap();
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state)
        .args(flags)
        // A group of its own, as the Python SDK starts servers, so a test can kill the group.
        .process_group(0);
    for var in unset {
        cmd.env_remove(var);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::from(stderr.reopen().unwrap()))
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap() as i32;
    let client = ().serve(transport).await.unwrap();
    Owned {
        client,
        pid,
        stderr,
        _workspace: workspace,
        _state: None,
    }
}

async fn call_on(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

fn ok(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result.structured_content.clone().unwrap_or(Value::Null)
}

fn err(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    text_of(result)
}

async fn background(server: &Server, command: &str, env: Value) -> String {
    server
        .background(json!({"command": command, "env": env}))
        .await
}

#[tokio::test]
async fn the_four_tools_are_listed_with_their_annotations_and_schemas() {
    let server = start().await;
    let tools = server.client.list_all_tools().await.unwrap();
    for (name, read_only, destructive) in [
        ("task_list", true, false),
        ("task_output", true, false),
        ("task_wait", true, false),
        ("task_stop", false, true),
    ] {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        let a = tool.annotations.as_ref().expect("annotations");
        assert_eq!(a.read_only_hint, Some(read_only), "{name}");
        assert_eq!(a.destructive_hint, Some(destructive), "{name}");
        assert_eq!(a.open_world_hint, Some(false), "{name}");
        assert!(tool.output_schema.is_some(), "{name} has no outputSchema");
    }
}

#[tokio::test]
async fn background_output_is_read_back_exactly_by_cursor_and_waited_for() {
    let server = start().await;
    let id = background(
        &server,
        "seq -f 'line %06g ok' 1 9000; sleep 0.5; echo done",
        json!({}),
    )
    .await;
    assert_eq!(id, "t1");
    // Returning at once is what status "background" says; timing is the bench's.

    let r = server
        .call("task_wait", json!({"id": "t1", "timeout_ms": 20000}))
        .await;
    let s = ok(&r);
    assert_eq!(s["ended"], true);
    assert_eq!(s["job"]["state"], "exited");
    assert_eq!(s["job"]["exit_code"], 0);
    assert!(
        s["output"]
            .as_str()
            .unwrap()
            .ends_with("line 009000 ok\ndone\n")
    );
    // The wait shows the newest 8 KB and says where the rest is.
    assert!(
        text_of(&r).contains(
            r#"earlier bytes are not shown; read them with task_output({"id": "t1", "since": 0})"#
        ),
        "{}",
        text_of(&r)
    );

    let mut expected: String = (1..=9000).map(|i| format!("line {i:06} ok\n")).collect();
    expected.push_str("done\n");
    let (mut cursor, mut rebuilt) = (0u64, String::new());
    loop {
        let r = server
            .call("task_output", json!({"id": "t1", "since": cursor}))
            .await;
        let s = ok(&r);
        assert_eq!(s["from"], cursor, "gap or overlap");
        let text = s["text"].as_str().unwrap();
        assert!(text.len() <= 8192);
        if text.is_empty() {
            break;
        }
        rebuilt.push_str(text);
        cursor = s["next"].as_u64().unwrap();
        if s["remaining"] == 0 {
            assert!(text_of(&r).contains("end of output"), "{}", text_of(&r));
        }
    }
    assert_eq!(rebuilt, expected);

    let r = server.call("task_list", json!({})).await;
    let s = ok(&r);
    assert_eq!(s["jobs"][0]["id"], "t1");
    let line = text_of(&r);
    assert!(line.starts_with("t1 [command] exited 0"), "{line}");
}

/// A background Python server's first line is readable while it runs: Python block-buffers
/// stdout on a pipe, and the port a dev server listens on stayed unread until it exited.
#[tokio::test]
async fn a_background_python_program_is_read_while_it_runs() {
    let state = agentty_testkit::state_dir();
    // As from a host that does not pass it on (the Python SDK's stdio client does not).
    let server = start_owned_without(state.path(), &[], &["PYTHONUNBUFFERED"]).await;
    let client = &server.client;
    let command = "python3 -c 'import time; print(\"listening on 8123\"); time.sleep(60)'";
    let r = call_on(
        client,
        "terminal",
        json!({"command": command, "background": true}),
    )
    .await;
    let id = ok(&r)["job_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + PROMPT;
    let mut seen = String::new();
    while !seen.contains("listening on 8123") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let r = call_on(client, "task_output", json!({"id": id, "since": 0})).await;
        seen = ok(&r)["text"].as_str().unwrap_or_default().to_owned();
    }
    assert!(
        seen.contains("listening on 8123"),
        "read while running: {seen:?}"
    );
    let r = call_on(client, "task_list", json!({})).await;
    assert!(text_of(&r).contains("running"), "{}", text_of(&r));
    call_on(client, "task_stop", json!({"id": id})).await;
}

#[tokio::test]
async fn a_wait_on_a_job_that_overflowed_names_its_spill_file() {
    let server = start().await;
    let id = background(&server, "seq 1 100000", json!({})).await;
    let r = server
        .call("task_wait", json!({"id": id, "timeout_ms": 20000}))
        .await;
    let s = ok(&r);
    assert_eq!(s["ended"], true);
    let text = text_of(&r);
    let path = text
        .split("the full output is in ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no spill path in: {text}"));
    assert_eq!(s["spill_path"], path, "the structured result names it too");
    let full = std::fs::read_to_string(path).unwrap();
    let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, expected, "the spill file holds everything");
}

#[tokio::test]
async fn a_short_wait_never_kills_and_stop_takes_the_whole_tree() {
    let server = start().await;
    let t = tag("tasks-stop");
    let id = background(
        &server,
        "echo up; setsid sleep 300 >/dev/null 2>&1 & (setsid sleep 300 >/dev/null 2>&1 &); sleep 300",
        json!({"JOBTAG": t}),
    )
    .await;
    let r = server
        .call("task_wait", json!({"id": id, "timeout_ms": 300}))
        .await;
    let s = ok(&r);
    assert_eq!(s["ended"], false);
    assert_eq!(s["job"]["state"], "running");
    assert!(
        text_of(&r).contains("it was not stopped"),
        "{}",
        text_of(&r)
    );
    let seen = wait_for_processes("JOBTAG", &t, 3, PROMPT).await;
    assert!(
        seen.iter().all(|&n| n >= 3),
        "the wait killed something: {seen:?}"
    );

    let r = server.call("task_stop", json!({"id": id})).await;
    let s = ok(&r);
    assert_eq!(s["was_running"], true);
    assert_eq!(s["job"]["state"], "stopped");
    assert_eq!(processes_with_env("JOBTAG", &t), Vec::<i32>::new());
    let r = server.call("task_stop", json!({"id": id})).await;
    assert_eq!(ok(&r)["was_running"], false);
    assert!(text_of(&r).contains("had already ended"));
}

#[tokio::test]
async fn the_ninth_background_command_is_refused_with_the_list_of_running_ones() {
    let server = start().await;
    let t = tag("tasks-cap");
    for i in 1..=8 {
        let id = background(
            &server,
            &format!("sleep 300 # job {i}"),
            json!({"JOBTAG": t}),
        )
        .await;
        assert_eq!(id, format!("t{i}"));
    }
    let r = server
        .call(
            "terminal",
            json!({"command": "echo ninth", "background": true}),
        )
        .await;
    let text = err(&r);
    assert!(
        text.contains("already runs 8 background commands"),
        "{text}"
    );
    for i in 1..=8 {
        assert!(text.contains(&format!("t{i} ")), "{text}");
        assert!(text.contains(&format!("sleep 300 # job {i}")), "{text}");
    }
    assert!(text.contains("task_stop"), "{text}");
    ok(&server.call("task_stop", json!({"id": "t3"})).await);
    assert_eq!(background(&server, "true", json!({})).await, "t9");
    drop(server);
    assert_eq!(
        wait_until_gone("JOBTAG", &t, PROMPT).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn bad_ids_and_cursors_are_tool_errors_and_foreign_ids_look_nonexistent() {
    let a = start().await;
    let b = start().await;
    let t = tag("tasks-foreign");
    background(&a, "echo hello; sleep 300", json!({"JOBTAG": t})).await;
    for (id, expected) in [
        ("", "is not a job id"),
        ("x1", "is not a job id"),
        ("t01", "is not a job id"),
        ("t", "is not a job id"),
        ("t7", "no job t7 in this session"),
    ] {
        for tool in ["task_output", "task_wait", "task_stop"] {
            let text = err(&a.call(tool, json!({"id": id})).await);
            assert!(text.contains(expected), "{tool} {id:?}: {text}");
        }
    }
    // Session B asking for A's t1 gets exactly what A gets for its nonexistent t2.
    for tool in ["task_output", "task_wait", "task_stop"] {
        let foreign = err(&b.call(tool, json!({"id": "t1"})).await);
        let missing = err(&a.call(tool, json!({"id": "t2"})).await);
        assert_eq!(foreign, missing.replace("t2", "t1"), "{tool}");
    }
    assert!(
        ok(&b.call("task_list", json!({})).await)["jobs"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let text = err(&a
        .call("task_output", json!({"id": "t1", "since": -1}))
        .await);
    assert!(text.contains("cannot be negative"), "{text}");
    let text = err(&a
        .call("task_output", json!({"id": "t1", "since": 1_000_000}))
        .await);
    assert!(text.contains("past the end"), "{text}");
    let text = err(&a
        .call("task_output", json!({"id": "t1", "since": "zero"}))
        .await);
    assert!(text.contains("invalid arguments"), "{text}");
    let text = err(&a
        .call("task_wait", json!({"id": "t1", "timeout_ms": 0}))
        .await);
    assert!(text.contains("at least 1"), "{text}");
    // B's stop did not touch A's job.
    let s = ok(&a.call("task_output", json!({"id": "t1", "since": 0})).await);
    assert_eq!(s["job"]["state"], "running");
    assert_eq!(s["text"], "hello\n");
    drop(a);
    assert_eq!(
        wait_until_gone("JOBTAG", &t, PROMPT).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn on_timeout_background_moves_the_command_and_loses_nothing() {
    let server = start().await;
    let r = server
        .call(
            "terminal",
            json!({"command": "echo one; printf tw; sleep 1; echo o; echo three",
                   "timeout_ms": 400, "on_timeout": "background"}),
        )
        .await;
    let s = ok(&r);
    assert_eq!(s["status"], "background", "{s}");
    assert_eq!(s["job_id"], "t1");
    assert_eq!(s["stdout"], "one\n");
    let text = text_of(&r);
    assert!(text.starts_with("one\n"), "{text}");
    assert!(text.contains("moved to the background as t1"), "{text}");
    assert!(text.contains("\"since\": 4"), "{text}");
    let s = ok(&server
        .call("task_wait", json!({"id": "t1", "timeout_ms": 20000}))
        .await);
    assert_eq!(s["job"]["exit_code"], 0);
    let s = ok(&server
        .call("task_output", json!({"id": "t1", "since": 0}))
        .await);
    assert_eq!(s["text"], "one\ntwo\nthree\n");
    let s = ok(&server
        .call("task_output", json!({"id": "t1", "since": 4}))
        .await);
    assert_eq!(s["text"], "two\nthree\n");
}

/// How a test ends the server.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// The client closes stdin.
    Eof,
    /// A signal to the process the host started (the watchdog, which passes it on).
    Signal(i32),
    /// A signal to the serving process itself (e.g. the OOM killer's SIGKILL).
    ServerSignal(i32),
    /// SIGKILL to the host's whole process group.
    GroupKill,
    /// SIGKILL to the watchdog alone, first: the server must end and clean up by itself.
    WatchdogKilled,
}

/// Starts jobs whose trees include setsid'd, double-forked and `env -i` escapees (the last
/// carry no run marker, so only the kernel's re-parenting finds them), then ends the server
/// with `end`; every process of every job must be gone within a bounded time.
async fn no_job_survives(end: Ending) {
    let server = start_owned().await;
    let t = tag(&format!("tasks-survive-{end:?}"));
    // The `env -i` escapees lose JOBTAG: they are found by an argument of this call's own (the
    // tests of one process, as under `cargo test`, run at once).
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let unmarked = format!(
        "3599.{}{:02}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    );
    for cmd in [
        "setsid sleep 300 >/dev/null 2>&1 & sleep 300".to_owned(),
        "(setsid sh -c 'trap \"\" TERM; sleep 300' >/dev/null 2>&1 &); trap '' TERM; sleep 300"
            .to_owned(),
        "yes flood".to_owned(),
        format!(
            "(setsid env -i /bin/sh -c 'trap \"\" TERM; sleep {unmarked}' >/dev/null 2>&1 &); \
             exec env -i sleep {unmarked}"
        ),
    ] {
        let r = call_on(
            &server.client,
            "terminal",
            json!({"command": cmd, "background": true, "env": {"JOBTAG": t}}),
        )
        .await;
        ok(&r);
    }
    let seen = wait_for_processes("JOBTAG", &t, 6, PROMPT).await;
    assert!(seen.iter().all(|&n| n >= 6), "jobs did not start: {seen:?}");
    let deadline = Instant::now() + PROMPT;
    while processes_with_arg(&unmarked).len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(processes_with_arg(&unmarked).len(), 2, "env -i escapees");
    let serving = serving_pid(server.pid);
    let kill = |pid: i32, sig: i32| {
        // SAFETY: kill takes a pid and a signal number.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {pid} {sig}");
    };
    match end {
        Ending::Eof => {
            let _ = server.client.cancel().await;
        }
        Ending::Signal(sig) => kill(server.pid, sig),
        Ending::ServerSignal(sig) => kill(serving, sig),
        Ending::GroupKill => kill(-server.pid, libc::SIGKILL),
        Ending::WatchdogKilled => kill(server.pid, libc::SIGKILL),
    }
    assert_eq!(
        wait_until_gone("JOBTAG", &t, PROMPT).await,
        Vec::<i32>::new(),
        "{end:?}"
    );
    let deadline = Instant::now() + PROMPT;
    while !processes_with_arg(&unmarked).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        processes_with_arg(&unmarked),
        Vec::<i32>::new(),
        "{end:?}: env -i escapees survived"
    );
    // Both processes are gone too.
    let deadline = Instant::now() + PROMPT;
    let alive = |pid: i32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    while (alive(serving) || alive(server.pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(serving), "{end:?}: the server still runs");
    let graceful = matches!(end, Ending::Eof | Ending::Signal(_))
        || end == Ending::ServerSignal(libc::SIGTERM);
    if graceful {
        // The server stopped them itself and said so, one line per job.
        let deadline = Instant::now() + PROMPT;
        let mut log = String::new();
        while Instant::now() < deadline && log.matches("stopped job t").count() < 4 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            log = std::fs::read_to_string(server.stderr.path()).unwrap();
        }
        assert_eq!(log.matches("stopped job t").count(), 4, "{log}");
    }
}

/// When the watchdog and the server die in the same instant (`pkill -9 agentty`), nothing is
/// left to stop their unconfined jobs (confined ones die with the session's namespace); the
/// next server to start with the same state dir stops them, since their run marker names a
/// session whose watchdog is gone and that session wrote it down. A live session's jobs are left
/// alone.
#[tokio::test]
async fn a_session_killed_with_its_watchdog_is_swept_by_the_next_start() {
    let state = agentty_testkit::state_dir();
    let dead = start_owned_in(state.path(), &["--mode", "auto"]).await;
    let live = start_owned_in(state.path(), &["--mode", "auto"]).await;
    let (t_dead, t_live) = (tag("tasks-dead-session"), tag("tasks-live-session"));
    for (server, t) in [(&dead, &t_dead), (&live, &t_live)] {
        let r = call_on(
            &server.client,
            "terminal",
            json!({"command": "setsid sleep 300 >/dev/null 2>&1 & sleep 300",
                   "background": true, "env": {"JOBTAG": t}}),
        )
        .await;
        ok(&r);
        let seen = wait_for_processes("JOBTAG", t, 2, PROMPT).await;
        assert!(seen.iter().all(|&n| n >= 2), "jobs did not start: {seen:?}");
    }
    let live_before = processes_with_env("JOBTAG", &t_live);
    let serving = kill_with_its_watchdog(dead.pid).await;
    let alive = |pid: i32| std::path::Path::new(&format!("/proc/{pid}/status")).exists();
    let deadline = Instant::now() + PROMPT;
    while (alive(serving) || alive(dead.pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nothing of that session is left to stop them (not asserted here: another test's server
    // starting meanwhile may already have swept them).
    let next = start_owned_in(state.path(), &[]).await;
    assert_eq!(
        wait_until_gone("JOBTAG", &t_dead, PROMPT).await,
        Vec::<i32>::new(),
        "the next start left the dead session's jobs running"
    );
    assert_eq!(
        processes_with_env("JOBTAG", &t_live),
        live_before,
        "a live session's jobs were stopped"
    );
    drop((next, live));
}

/// Live processes whose `argv[0]` is `name` (set with `exec -a`): how a test finds a process
/// that wiped its environment.
fn processes_named(name: &str) -> Vec<i32> {
    agentty_testkit::live_processes("cmdline")
        .into_iter()
        .filter(|(_, cmdline)| cmdline.split(|&b| b == 0).next() == Some(name.as_bytes()))
        .map(|(pid, _)| pid)
        .collect()
}

/// The case tracking cannot cover: an escapee that wiped its environment (`env -i`, no run
/// marker), left its process group and double-forked, while the server and its watchdog are
/// killed in the same instant. Confined commands run in the session's PID namespace, whose init
/// dies with the server, and the kernel then kills every process in it: the escapee is gone
/// with no next start to sweep it (none could: it carries no marker).
#[tokio::test]
async fn an_escapee_without_a_marker_dies_with_a_server_killed_with_its_watchdog() {
    let server = start_owned().await;
    let name = tag("escapee-no-marker");
    let command = format!("(setsid env -i /bin/bash -c 'exec -a {name} sleep 300' &); echo left");
    let r = call_on(&server.client, "terminal", json!({"command": command})).await;
    assert!(text_of(&r).contains("left"), "{}", text_of(&r));
    let deadline = Instant::now() + PROMPT;
    while processes_named(&name).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let escapees = processes_named(&name);
    assert_eq!(
        escapees.len(),
        1,
        "the escapee did not start or was stopped"
    );
    kill_with_its_watchdog(server.pid).await;
    let deadline = Instant::now() + PROMPT;
    while !processes_named(&name).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = processes_named(&name);
    for &pid in &left {
        // SAFETY: kill takes a pid and a signal number.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(left, Vec::<i32>::new(), "the escapee outlived its session");
}

/// Writes the record of runs `session` issued, as a server does, in `state`'s runs directory.
/// A record another PID namespace wrote is neither trusted nor removed here.
fn write_record(state: &std::path::Path, session: &str, markers: &[&str]) {
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    write_record_in(state, session, &ns.to_string_lossy(), markers);
}

/// [`write_record`] as a server in the PID namespace `ns` writes it.
fn write_record_in(state: &std::path::Path, session: &str, ns: &str, markers: &[&str]) {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = state.join("runs");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .unwrap();
    // First line: the PID namespace the session ran in; second: its ancestors, where its
    // orphans go (this test, which starts the processes the sweep judges, stands for its host).
    let me = std::process::id();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let ticks = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap();
    let text: String = [ns.to_owned(), format!("ancestors {me}:{ticks}")]
        .into_iter()
        .chain(markers.iter().map(|m| (*m).to_owned()))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join(session))
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .unwrap();
}

/// With no record of its runs (here `runs` is a file, so none could be made), the watchdog
/// trusts no marker: a copy of one of the session's markers in a process outside its tree (one
/// planted in `.envrc`) is left alone when the server is killed, while what the session's
/// commands left (an unconfined background job and its `setsid` escapee) is still stopped, as
/// descendants the kernel re-parents to the watchdog.
#[tokio::test]
async fn without_a_record_the_watchdog_stops_descendants_and_no_copied_marker() {
    let state = agentty_testkit::state_dir();
    std::fs::write(state.path().join("runs"), "").unwrap();
    let server = start_owned_in(state.path(), &["--no-sandbox"]).await;
    let t = tag("tasks-no-record");
    let r = call_on(
        &server.client,
        "terminal",
        json!({"command": "echo marker=$AGENTTY_RUN"}),
    )
    .await;
    let text = text_of(&r);
    let marker = text
        .lines()
        .find_map(|l| l.strip_prefix("marker="))
        .unwrap_or_else(|| panic!("no marker: {text}"))
        .to_owned();
    let r = call_on(
        &server.client,
        "terminal",
        json!({
            "command": "(setsid sleep 300 >/dev/null 2>&1 &); sleep 300",
            "background": true,
            "env": {"JOBTAG": t},
        }),
    )
    .await;
    ok(&r);
    let copied_tag = format!("{t}-copied");
    let mut copied = std::process::Command::new("sleep")
        .arg("300")
        .env("AGENTTY_RUN", &marker)
        .env("JOBTAG", &copied_tag)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let seen = wait_for_processes("JOBTAG", &t, 2, PROMPT).await;
    assert!(
        seen.iter().all(|&n| n >= 2),
        "the job did not start: {seen:?}"
    );
    let serving = serving_pid(server.pid);
    // SAFETY: kill takes a pid and a signal number.
    assert_eq!(unsafe { libc::kill(serving, libc::SIGKILL) }, 0);
    assert_eq!(
        wait_until_gone("JOBTAG", &t, PROMPT).await,
        Vec::<i32>::new(),
        "the job's tree outlived the server"
    );
    // The watchdog exits once it has stopped what the server left.
    let deadline = Instant::now() + PROMPT;
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    };
    while alive(server.pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(server.pid), "the watchdog still runs");
    let survived = copied.try_wait().unwrap().is_none();
    let _ = copied.kill();
    let _ = copied.wait();
    assert!(survived, "a process with a copied marker was stopped");
}

/// A state dir named through a symlink (a home under `/home -> /var/home`) still has its runs
/// record hidden from confined commands, and they still run in a PID namespace of their own: the
/// mount that hides the record cannot be put on a path through a symlink, and without it the
/// namespace was given up.
#[tokio::test]
async fn a_state_dir_through_a_symlink_keeps_the_record_hidden() {
    let base = agentty_testkit::state_dir();
    let real = base.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let server = start_owned_in(&link, &[]).await;
    let r = call_on(
        &server.client,
        "terminal",
        json!({"command": format!(
            "echo listed=$(ls -A {} | wc -l); echo ns=$(readlink /proc/self/ns/pid)",
            real.join("runs").display()
        )}),
    )
    .await;
    let text = text_of(&r);
    assert!(text.contains("listed=0"), "the records are visible: {text}");
    let own = std::fs::read_link("/proc/self/ns/pid").unwrap();
    assert!(
        !text.contains(&format!("ns={}", own.display())),
        "the command runs in the server's PID namespace: {text}"
    );
    assert_eq!(std::fs::read_dir(real.join("runs")).unwrap().count(), 1);
}

/// A marker copied into the user's environment (a confined command's own, planted in `.envrc`)
/// does not get the user's processes stopped by the next start: the sweep stops only markers
/// their dead session wrote down, and a confined command in the session's namespace is never
/// written down (the kernel stops its tree), nor can it read what is (the runs directory is
/// empty in its namespace).
#[tokio::test]
async fn a_copied_run_marker_does_not_get_the_users_process_stopped() {
    let state = agentty_testkit::state_dir();
    let server = start_owned_in(state.path(), &[]).await;
    let runs = state.path().join("runs");
    let r = call_on(
        &server.client,
        "terminal",
        json!({"command": format!(
            "echo marker=$AGENTTY_RUN; echo listed=$(ls -A {} | wc -l)",
            runs.display()
        )}),
    )
    .await;
    let text = text_of(&r);
    let marker = text
        .lines()
        .find_map(|l| l.strip_prefix("marker="))
        .unwrap()
        .to_owned();
    assert!(text.contains("listed=0"), "the records are visible: {text}");
    let on_disk: Vec<_> = std::fs::read_dir(&runs).unwrap().flatten().collect();
    assert_eq!(on_disk.len(), 1, "the session's own record is there");
    let written = std::fs::read_to_string(on_disk[0].path()).unwrap();
    assert!(
        !written.contains(&marker),
        "a confined run was written down"
    );
    drop(server);

    // A dead session that wrote down one marker: its holder is stopped, a copy of another is not.
    let t = tag("tasks-sweep-copied");
    write_record(state.path(), "1-1-1", &["1-1-1-c1-00aa"]);
    let spawn = |marker: &str| {
        std::process::Command::new("sleep")
            .arg("300")
            .env("AGENTTY_RUN", marker)
            .env("JOBTAG", &t)
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // And a session of another PID namespace (a container sharing this state dir): its pids
    // mean other processes here, so its record is neither trusted nor removed.
    write_record_in(state.path(), "1-1-2", "pid:[1]", &["1-1-2-c1-00cc"]);
    let mut recorded = spawn("1-1-1-c1-00aa");
    let mut copied = spawn("1-1-1-c2-00bb");
    let mut foreign = spawn("1-1-2-c1-00cc");
    let seen = wait_for_processes("JOBTAG", &t, 3, PROMPT).await;
    assert!(seen.iter().all(|&n| n >= 3), "did not start: {seen:?}");
    let next = start_owned_in(state.path(), &[]).await;
    let deadline = Instant::now() + PROMPT;
    while recorded.try_wait().unwrap().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        recorded.try_wait().unwrap().is_some(),
        "the sweep did not run"
    );
    // Past the sweep's grace and its SIGKILL rounds.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let survived = [copied.try_wait().unwrap(), foreign.try_wait().unwrap()];
    for mut child in [copied, foreign] {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        survived[0].is_none(),
        "a process with a copied marker was stopped"
    );
    assert!(
        survived[1].is_none(),
        "another namespace's session was judged here"
    );
    assert!(
        !runs.join("1-1-1").exists(),
        "the dead session's record was kept"
    );
    assert!(
        runs.join("1-1-2").exists(),
        "another namespace's record was removed"
    );
    drop(next);
}

/// The sweep judges only processes of its own pid namespace: a marker naming a dead session is
/// stopped here, the same marker in another namespace (a container's agentty, whose pids mean
/// other processes there) is not.
#[tokio::test]
async fn the_sweep_leaves_other_pid_namespaces_alone() {
    let t = tag("tasks-sweep-ns");
    // Session "1-1-1": pid 1 did not start at tick 1, so it is dead from here; it wrote its
    // marker down.
    let state = agentty_testkit::state_dir();
    write_record(state.path(), "1-1-1", &["1-1-1-c1"]);
    let spawn = |args: &[&str]| {
        std::process::Command::new(args[0])
            .args(&args[1..])
            .env("AGENTTY_RUN", "1-1-1-c1")
            .env("JOBTAG", &t)
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut here = spawn(&["sleep", "300"]);
    let mut other = spawn(&["unshare", "--pid", "--fork", "sleep", "300"]);
    let seen = wait_for_processes("JOBTAG", &t, 3, PROMPT).await;
    assert!(seen.iter().all(|&n| n >= 3), "did not start: {seen:?}");
    let sleeper_in_other_ns = processes_with_env("JOBTAG", &t)
        .into_iter()
        .find(|&pid| pid != here.id() as i32 && pid != other.id() as i32)
        .unwrap();
    let server = start_owned_in(state.path(), &[]).await;
    let deadline = Instant::now() + PROMPT;
    while here.try_wait().unwrap().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(here.try_wait().unwrap().is_some(), "the sweep did not run");
    // Past the sweep's grace and its SIGKILL rounds (a namespace's init ignores SIGTERM from
    // outside, so only the SIGKILL would have shown).
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let stat =
        std::fs::read_to_string(format!("/proc/{sleeper_in_other_ns}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(
        !state.is_empty() && !state.starts_with('Z'),
        "a process of another pid namespace was stopped: {stat:?}"
    );
    let _ = other.kill();
    let _ = other.wait();
    // SAFETY: kill takes a pid and a signal number.
    unsafe { libc::kill(sleeper_in_other_ns, libc::SIGKILL) };
    drop(server);
}

#[tokio::test]
async fn no_job_survives_stdin_eof() {
    no_job_survives(Ending::Eof).await;
}

#[tokio::test]
async fn no_job_survives_sigterm() {
    no_job_survives(Ending::Signal(libc::SIGTERM)).await;
}

#[tokio::test]
async fn no_job_survives_sigint_or_sighup() {
    no_job_survives(Ending::Signal(libc::SIGINT)).await;
    no_job_survives(Ending::Signal(libc::SIGHUP)).await;
}

#[tokio::test]
async fn no_job_survives_sigkill_of_the_process_the_host_started() {
    no_job_survives(Ending::WatchdogKilled).await;
}

#[tokio::test]
async fn no_job_survives_sigkill_of_the_serving_process() {
    no_job_survives(Ending::ServerSignal(libc::SIGKILL)).await;
}

#[tokio::test]
async fn no_job_survives_sigterm_or_sigquit_to_the_serving_process() {
    no_job_survives(Ending::ServerSignal(libc::SIGTERM)).await;
    no_job_survives(Ending::ServerSignal(libc::SIGQUIT)).await;
}

#[tokio::test]
async fn no_job_survives_sigkill_of_the_host_process_group() {
    no_job_survives(Ending::GroupKill).await;
}

/// `task_wait` picks up where the last read stopped (not from byte 0) and ends with one footer.
#[tokio::test]
async fn task_wait_continues_from_the_last_read_with_one_footer() {
    let server = start().await;
    let id = server
        .background(json!({
            "command": "echo one; while [ ! -e go ]; do sleep 0.02; done; echo two"
        }))
        .await;
    let deadline = Instant::now() + PROMPT;
    let mut next = 0;
    while next < 4 && Instant::now() < deadline {
        let r = server
            .call("task_output", json!({"id": id, "since": 0}))
            .await;
        next = r.structured_content.unwrap()["next"].as_u64().unwrap();
    }
    assert_eq!(next, 4, "one\\n was read");
    std::fs::write(server.workspace().join("go"), "").unwrap();
    let r = server
        .call("task_wait", json!({"id": id, "timeout_ms": 20_000}))
        .await;
    let text = text_of(&r);
    let s = r.structured_content.unwrap();
    assert_eq!(s["output"], "two\n", "{text}");
    assert_eq!(s["from"], 4, "{text}");
    assert!(text.starts_with("two\n"), "{text}");
    assert_eq!(
        text.matches("\n[").count() + usize::from(text.starts_with('[')),
        1,
        "{text}"
    );
    assert!(text.contains("bytes 4..8 of 8 · end of output"), "{text}");
    // Asked again, nothing new: said so, not the whole output again.
    let r = server
        .call("task_wait", json!({"id": id, "timeout_ms": 1000}))
        .await;
    assert!(
        text_of(&r).starts_with("(no new output)"),
        "{}",
        text_of(&r)
    );
    // An explicit cursor still reads from anywhere.
    let r = server
        .call(
            "task_wait",
            json!({"id": id, "since": 0, "timeout_ms": 1000}),
        )
        .await;
    assert!(text_of(&r).starts_with("one\ntwo\n"), "{}", text_of(&r));
}

/// The server handles no SIGCHLD, and its launchers let their children's exits through: the
/// kernel then drops each exit signal where it is sent instead of waking another thread
/// (`spawn/signals.rs` `ALL_BUT_CHILD_EXITS` in agentty-core). A SIGCHLD handler added one day (say by
/// `tokio::process`) would run on launchers at every exit; this test says so first.
#[tokio::test]
async fn the_server_handles_no_child_exit_signal_and_its_launchers_let_exits_through() {
    let server = start().await;
    // Every way a command starts: a call, a job, a shell, a terminal.
    let (text, _) = server.terminal(json!({"command": "true"})).await;
    assert!(text.contains("exit 0"), "{text}");
    let job = background(&server, "sleep 30", json!({})).await;
    let shell = server.open_shell().await;
    let (text, _) = server.shell_send(&shell, "echo in-shell\n").await;
    assert!(text.contains("in-shell"), "{text}");
    let (text, _) = server
        .terminal(json!({"command": "echo on-a-pty", "pty": true}))
        .await;
    assert!(text.contains("on-a-pty"), "{text}");

    let serving = serving_pid(server.pid);
    let chld = 1u64 << (libc::SIGCHLD - 1);
    let status = std::fs::read_to_string(format!("/proc/{serving}/status")).unwrap();
    assert_eq!(
        agentty_testkit::signal_set(&status, "SigCgt") & chld,
        0,
        "the server handles SIGCHLD"
    );
    let mut launchers = 0;
    for task in std::fs::read_dir(format!("/proc/{serving}/task"))
        .unwrap()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != "agentty-launche" {
            continue;
        }
        launchers += 1;
        let status = std::fs::read_to_string(task.path().join("status")).unwrap();
        assert_eq!(
            agentty_testkit::signal_set(&status, "SigBlk") & chld,
            0,
            "a launcher blocks SIGCHLD"
        );
    }
    assert!(launchers > 0, "no launcher in the server");
    let r = server.call("task_stop", json!({"id": job})).await;
    assert!(!r.is_error.unwrap_or(false), "{}", text_of(&r));
}

/// The server's resident memory, in KiB (`VmRSS`).
fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    agentty_testkit::status_field(&status, "VmRSS")
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// A finished job kept for reading back costs its 256 KB ring and little more: 32 of them, each
/// of which printed 1 MB through a ring that overflowed into a spill file, eight at a time, add
/// far less than the 1.1 MB each once cost (buffers freed when a job ended stayed in the
/// allocator's arenas, around the rings still held, in 2 MiB huge pages), and less than the
/// 480 KiB each cost while a job's 256 KB read buffers were on the heap (freed on another
/// thread than the one that allocated them, kept by the allocator). 314–333 KiB is measured
/// (debug build); the bound leaves room for the allocator's own, so it does not flake.
/// `cargo bench -p agentty --bench memory` prints the figures.
#[tokio::test]
async fn finished_jobs_kept_cost_about_their_ring() {
    const KEPT: usize = 32;
    let server = start().await;
    let pid = serving_pid(server.pid);
    let _ = server.terminal(json!({"command": "true"})).await;
    let idle = rss_kib(pid);
    let script = "yes 'a line of build output, kept in a finished job' | head -c 1000000";
    for _ in 0..KEPT / 8 {
        let mut ids = Vec::new();
        for _ in 0..8 {
            ids.push(server.background(json!({"command": script})).await);
        }
        for id in ids {
            let r = server
                .call("task_wait", json!({"id": id, "timeout_ms": 20000}))
                .await;
            let s = r.structured_content.unwrap();
            assert_eq!(s["ended"], true, "{id}");
            assert_eq!(s["job"]["output_bytes"], 1_000_000, "{id}");
        }
    }
    let kept = rss_kib(pid);
    let per_job = kept.saturating_sub(idle) / KEPT as u64;
    assert!(
        per_job <= 400,
        "each finished job kept costs {per_job} KiB (server RSS {idle} KiB idle, {kept} KiB \
         with {KEPT} kept)"
    );
}
