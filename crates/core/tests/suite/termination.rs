//! Leave no orphan: timeouts, cancellation, `cmd &`, setsid and double-fork escapes, each
//! checked in `/proc` afterwards.

use std::time::{Duration, Instant};

use agentty_core::run::{self, RunStatus, Strays};

use super::common::*;

/// Generous bound for "returns promptly": far above the engine's own grace and wait times, so
/// a slow machine cannot fail it, yet far below the commands' own 100 s sleeps.
const PROMPT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn timeout_kills_the_whole_tree() {
    let m = marker("timeout-tree");
    let started = Instant::now();
    let out = run_to_end(request(
        "sleep 100 & sleep 100 & (sleep 100; echo x) & wait",
        &m,
        300,
    ))
    .await;
    assert_eq!(out.status, RunStatus::Timeout);
    assert!(started.elapsed() < PROMPT);
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

#[tokio::test]
async fn timeout_reaches_a_setsid_escapee_and_a_double_fork() {
    let m = marker("timeout-escape");
    // A setsid child of a live shell, a double fork that stays in the group, and a double fork
    // that also left the session: orphaned and in no group of ours, found only by its marker.
    let cmd = "setsid sleep 100 >/dev/null 2>&1 & (sleep 100 >/dev/null 2>&1 &); \
               (setsid sleep 100 >/dev/null 2>&1 &); sleep 100";
    let out = run_to_end(request(cmd, &m, 500)).await;
    assert_eq!(out.status, RunStatus::Timeout);
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

#[tokio::test]
async fn sigterm_ignoring_process_is_killed_after_grace() {
    let m = marker("ignore-term");
    let out = run_to_end(request(
        "trap '' TERM; sleep 100 & wait; sleep 100",
        &m,
        300,
    ))
    .await;
    assert_eq!(out.status, RunStatus::Timeout);
    let stopped = out.stopped.expect("stop report");
    assert!(stopped.killed >= 1, "{stopped:?}");
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

#[tokio::test]
async fn cancellation_returns_at_once_and_stops_the_tree() {
    agentty_core::init().unwrap();
    let m = marker("cancel");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let req = request(
        "echo started; (setsid sleep 100 >/dev/null &); sleep 100 & wait",
        &m,
        60_000,
    );
    let running =
        tokio::spawn(async move { run::run(req, async { rx.await.unwrap_or(()) }, None).await });
    // Cancel once the tree is really there.
    let deadline = Instant::now() + PROMPT;
    while processes_with_marker(&m).len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled_at = Instant::now();
    tx.send(()).unwrap();
    let out = running.await.unwrap().unwrap();
    assert_eq!(out.status, RunStatus::Cancelled);
    assert!(cancelled_at.elapsed() < PROMPT);
    assert_eq!(leftovers_after(&m, PROMPT).await, Vec::<i32>::new());
}

#[tokio::test]
async fn background_child_holding_output_is_stopped_after_the_shell_exits() {
    let m = marker("held");
    let started = Instant::now();
    let out = run_to_end(request("sleep 100 & echo started", &m, 60_000)).await;
    assert!(
        started.elapsed() < PROMPT,
        "returned in {:?}",
        started.elapsed()
    );
    assert_eq!(out.status, RunStatus::Success);
    assert_eq!(text(&out.output), "started\n");
    assert!(
        matches!(out.strays, Some(Strays::HeldOutput(n)) if n >= 1),
        "{:?}",
        out.strays
    );
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

#[tokio::test]
async fn detached_leftovers_are_stopped_and_reported() {
    let m = marker("lingering");
    let cmd = "sleep 100 >/dev/null 2>&1 & setsid sleep 100 >/dev/null 2>&1 & echo ok";
    let out = run_to_end(request(cmd, &m, 60_000)).await;
    assert_eq!(out.status, RunStatus::Success);
    assert_eq!(out.strays, Some(Strays::Lingering(2)));
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

/// The orphan check re-reads the server's children list on every call (one file kept open):
/// an escapee is seen between two clean runs, and forgotten once stopped.
#[tokio::test]
async fn each_run_sees_the_children_list_as_it_is_now() {
    let strays = |cmd: &'static str, name: &'static str| async move {
        let m = marker(name);
        let out = run_to_end(request(cmd, &m, 60_000)).await;
        assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
        out.strays
    };
    assert_eq!(strays("echo one", "children-1").await, None);
    let escapee = "setsid sleep 100 >/dev/null 2>&1 & echo two";
    assert_eq!(
        strays(escapee, "children-2").await,
        Some(Strays::Lingering(1))
    );
    assert_eq!(strays("echo three", "children-3").await, None);
}

#[tokio::test]
async fn clean_command_reports_no_strays() {
    let m = marker("clean-exit");
    let out = run_to_end(request("sleep 0.1 & wait; echo done", &m, 60_000)).await;
    assert_eq!(out.strays, None);
    assert!(out.stopped.is_none());
}

#[tokio::test]
async fn progress_reports_the_latest_line() {
    agentty_core::init().unwrap();
    let m = marker("progress");
    // Three lines at once, then quiet: every report (the first comes after a second) must carry
    // the last of them, whatever the machine's speed; a report of the first line is the bug.
    let req = request("echo line1; echo line2; echo line3; sleep 2.2", &m, 60_000);
    let mut seen = Vec::new();
    let mut report = |p: run::Progress| seen.push(p.line);
    let out = run::run(req, std::future::pending(), Some(&mut report))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Success);
    assert!(!seen.is_empty(), "no progress in a 2 s command");
    assert!(seen.iter().all(|l| l == "line3"), "{seen:?}");
}

#[tokio::test]
async fn missing_program_is_an_error_not_a_panic() {
    agentty_core::init().unwrap();
    let m = marker("missing");
    let mut req = request("", &m, 1000);
    req.spec.program = "/nonexistent/program".into();
    req.spec.args.clear();
    let err = run::run(req, std::future::pending(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}
