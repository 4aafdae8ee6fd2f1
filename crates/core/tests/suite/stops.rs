//! Stops that always stop: a timeout, a cancellation or a `task_stop` that lands right after a
//! command started (while its shell is still in `exec`, when `/proc` shows no environment) must
//! stop the tree all the same. Survivors are found by a unique `sleep` argument in
//! `/proc/*/cmdline`, which does not depend on the run marker the stop itself relies on.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use agentty_core::jobs::JobTable;
use agentty_core::jobs::command::{self, CommandStart};
use agentty_core::pty::once::{self, PtyRunRequest};
use agentty_core::pty::{Shell, Shells};
use agentty_core::run::{self, RunStatus};
use agentty_core::spawn::Confine;
use agentty_testkit::{KillOnDrop, processes_with_arg};

use super::common::*;

/// How many times each stop is tried: the race this guards was lost 14 to 26 times in 100.
const TRIES: usize = 100;

/// The command of try `i`: every other one drops its environment (`env -i`), so its marker is
/// never visible, as for a shell caught in `exec`; the stop must not depend on it.
fn sleeper(arg: &str, i: usize) -> String {
    if i.is_multiple_of(2) {
        format!("sleep {arg}")
    } else {
        format!("exec env -i sleep {arg}")
    }
}

/// A `sleep` argument no other process has: sleep takes a fraction, so pid and tag make it
/// unique.
fn unique_sleep(tag: u32) -> String {
    format!("3600.{}{tag:03}", std::process::id())
}

/// Asserts that no process with `arg` is alive right now; kills any found first, so a failing
/// test leaves nothing behind.
fn assert_none_now(arg: &str, what: &str) {
    let left = processes_with_arg(arg);
    for &pid in &left {
        // SAFETY: kill takes a pid and a signal number.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "{what}: the call returned with its tree running ({left:?})"
    );
}

/// Asserts that no process with `arg` is alive (two scans apart); kills any found first, so a
/// failing test leaves nothing behind.
async fn assert_none_left(arg: &str, what: &str) {
    let mut left: BTreeSet<i32> = processes_with_arg(arg).into_iter().collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    left.extend(processes_with_arg(arg));
    for &pid in &left {
        // SAFETY: kill takes a pid and a signal number.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "{what}: {} processes left running ({left:?})",
        left.len()
    );
}

#[tokio::test]
async fn a_timeout_right_after_the_start_stops_the_tree_every_time() {
    let arg = unique_sleep(1);
    let _reap = KillOnDrop(arg.clone());
    let m = marker("stop-timeout");
    for i in 0..TRIES {
        let out = run_to_end(request(&sleeper(&arg, i), &m, 1)).await;
        assert_eq!(out.status, RunStatus::Timeout);
    }
    assert_none_left(&arg, "timeout_ms: 1").await;
}

#[tokio::test]
async fn a_cancel_right_after_the_start_stops_the_tree_before_the_call_returns() {
    agentty_core::init().unwrap();
    let arg = unique_sleep(2);
    let _reap = KillOnDrop(arg.clone());
    let m = marker("stop-cancel");
    for i in 0..TRIES {
        let req = request(&sleeper(&arg, i), &m, 60_000);
        let out = run::run(req, std::future::ready(()), None).await.unwrap();
        assert_eq!(out.status, RunStatus::Cancelled);
        // Confirmed before the call returned: no waiting here.
        assert_none_now(&arg, "cancel");
    }
    assert_none_left(&arg, "cancel").await;
}

/// A call dropped after its command was handed over, before it claimed it (the command's output
/// is still open, so the claim waits), leaves nothing running: whether a launcher clones the
/// command or, with no launcher to be had, the call itself cloned it at the hand-over.
#[tokio::test]
async fn a_call_dropped_before_it_claimed_its_command_leaves_nothing_running() {
    agentty_core::init().unwrap();
    let arg = unique_sleep(4);
    let _reap = KillOnDrop(arg.clone());
    let no_launcher: Arc<dyn Confine> = Arc::new(CountsLaunchers {
        refuse: Refuse::All,
        ..CountsLaunchers::default()
    });
    for i in 0..TRIES {
        // A marker each: the stop of a dropped call's tree goes on after the drop, and must not
        // take the next call's command for its own.
        let m = marker(&format!("stop-dropped-{i}"));
        let mut req = request(&sleeper(&arg, i), &m, 60_000);
        if i % 4 >= 2 {
            req.spec.confine = Some(no_launcher.clone());
        }
        // Polled once (the command is handed over, and its output is open), then dropped.
        let mut call = std::pin::pin!(run::run(req, std::future::pending(), None));
        let polled = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
        assert!(polled.is_pending(), "the sleeper ended at once: {polled:?}");
    }
    // A launcher with plans queued may clone a dropped call's command after this point (and
    // stop it as soon as it finds nobody waiting): what counts is that none keeps running.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !processes_with_arg(&arg).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_none_left(&arg, "a dropped call").await;
}

#[tokio::test]
async fn a_task_stop_right_after_the_start_stops_the_tree_and_frees_the_slot() {
    agentty_core::init().unwrap();
    let table = JobTable::new();
    let arg = unique_sleep(3);
    let _reap = KillOnDrop(arg.clone());
    let m = marker("stop-task");
    for i in 0..TRIES {
        let job = command::start(
            &table,
            CommandStart {
                spec: sh(&sleeper(&arg, i), &m),
                stdin: None,
                label: "sleep".into(),
            },
            None,
        )
        .expect("start");
        job.stop().await;
        assert_eq!(
            processes_with_arg(&arg),
            Vec::<i32>::new(),
            "task_stop returned first"
        );
    }
    assert_none_left(&arg, "task_stop").await;
}

/// An escapee caught in the middle of its `exec` (`setsid` becoming `sleep`) has no readable
/// environment for that instant: the check after the run must still find it.
#[tokio::test]
async fn an_escapee_in_the_middle_of_exec_is_still_found() {
    let arg = unique_sleep(4);
    let _reap = KillOnDrop(arg.clone());
    let m = marker("stop-escapee");
    for _ in 0..TRIES / 4 {
        let cmd = format!("setsid sleep {arg} >/dev/null 2>&1 & echo two");
        let out = run_to_end(request(&cmd, &m, 60_000)).await;
        assert_eq!(out.status, RunStatus::Success);
        assert_none_now(&arg, "setsid escapee");
    }
    assert_none_left(&arg, "setsid escapee").await;
}

/// Live processes one of whose threads has `arg` among its arguments: a process whose leader
/// thread ended shows none in `/proc/<pid>/cmdline`, only through its live threads.
fn with_arg_in_a_thread(arg: &str) -> Vec<i32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
                tasks.flatten().any(|task| {
                    std::fs::read(task.path().join("cmdline"))
                        .is_ok_and(|cmd| cmd.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
                })
            })
        })
        .collect()
}

/// An escapee whose main thread ended (`pthread_exit`) while another runs on: its `/proc/<pid>`
/// reads as a zombie's and its environment is unreadable there, so a stop that trusted both
/// missed it every time (a reviewer's pass: 2 of 2 with a timeout, and `task_stop` said every
/// process was stopped). It ignores SIGTERM, so only the stop's SIGKILL ends it.
#[tokio::test]
async fn an_escapee_whose_main_thread_ended_is_still_stopped() {
    let arg = unique_sleep(6);
    let ghost = "import ctypes, os, signal, threading, time\n\
                 signal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
                 if os.fork(): os._exit(0)\n\
                 os.setsid()\n\
                 if os.fork(): os._exit(0)\n\
                 threading.Thread(target=time.sleep, args=(60,)).start()\n\
                 ctypes.CDLL(None).pthread_exit(None)\n";
    let script = std::env::temp_dir().join(format!("agentty-ghost-{}.py", std::process::id()));
    std::fs::write(&script, ghost).unwrap();
    let cmd = format!("python3 {} {arg}; sleep 60", script.display());
    let out = run_to_end(request(&cmd, &marker("stop-ghost"), 1500)).await;
    let left = with_arg_in_a_thread(&arg);
    for &pid in &left {
        // SAFETY: kill takes a pid and a signal number.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = std::fs::remove_file(&script);
    assert_eq!(out.status, RunStatus::Timeout);
    assert!(left.is_empty(), "the stop left {left:?} running");
}

/// An escapee that answers SIGTERM by `exec`ing into a process with no environment (`env -i`)
/// is the run's all the same: it was found once, and a process keeps its pid and start time
/// across `exec`. Before, the scans after the SIGTERM no longer knew it and the stop let it off
/// (as they did, now and then, an escapee `exec`ing itself in a loop, whose marker reads empty
/// while it is in `exec`: a reviewer's pass, half of them).
#[tokio::test]
async fn an_escapee_that_drops_its_environment_when_stopped_is_still_stopped() {
    let arg = unique_sleep(8);
    let _reap = KillOnDrop(arg.clone());
    let cmd = format!(
        "setsid sh -c 'trap \"exec env -i sleep {arg}\" TERM; while :; do sleep 0.05; done' & \
         sleep 60"
    );
    let out = run_to_end(request(&cmd, &marker("stop-drops-env"), 500)).await;
    assert_eq!(out.status, RunStatus::Timeout);
    assert_none_now(&arg, "an escapee that dropped its environment");
}

/// An orphan with no environment (`setsid env -i`) cannot be told to be any run's. Mid-exec
/// that is a moment, so only a young one counts as a possible survivor: an old one must not
/// make every later run pay for a stop (an attacker's cheap way to slow the server).
#[tokio::test]
async fn an_old_orphan_without_environment_is_not_taken_for_a_survivor() {
    let arg = unique_sleep(5);
    let _reap = KillOnDrop(arg.clone());
    let m = marker("stop-old-orphan");
    // It drops the marker before the run ends (so no stop can attribute it) and outlives it.
    let cmd = format!("setsid env -i sleep {arg} >/dev/null 2>&1 & sleep 1; echo started");
    let out = run_to_end(request(&cmd, &m, 60_000)).await;
    assert_eq!(out.status, RunStatus::Success);
    // Until the orphan is over two seconds old (judged by its start time in /proc).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let orphan = loop {
        let found = processes_with_arg(&arg);
        if let Some(&pid) = found.first() {
            let old = std::process::Command::new("ps")
                .args(["-o", "etimes=", "-p", &pid.to_string()])
                .output()
                .ok()
                .and_then(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .is_some_and(|s| s >= 3);
            if old {
                break pid;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no old orphan: {found:?} {:?}",
            out.stopped
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let clean = run_to_end(request("true", &marker("stop-old-orphan-2"), 60_000)).await;
    assert!(
        !agentty_core::has_survivors(clean.pid, "stop-old-orphan-2"),
        "the old orphan {orphan} counted as a survivor of an unrelated run"
    );
}

/// How many calls each drop test drops: each waits for its command to run first, so fewer.
const DROPS: usize = 12;

/// The command of drop `i`: a `sleep` and a `setsid` escapee of it (which only the run marker
/// finds), or, every other time, a `sleep` that dropped its environment.
fn sleeper_and_escapee(arg: &str, i: usize) -> (String, usize) {
    if i.is_multiple_of(2) {
        (
            format!("setsid sleep {arg} >/dev/null 2>&1 & exec sleep {arg}"),
            2,
        )
    } else {
        (sleeper(arg, i), 1)
    }
}

/// Polls `call` until `arg` shows in `n` live processes (the command runs), and a while longer,
/// so the call has claimed its command and drives it (a command without output is claimed
/// after `CLAIM_AFTER`, 10 ms); then drops it.
async fn drop_once_running<F: Future>(call: F, arg: &str, n: usize) {
    let mut call = Box::pin(call);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut polls_after_start = 0;
    while polls_after_start < 10 {
        if processes_with_arg(arg).len() >= n {
            polls_after_start += 1;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the command never ran"
        );
        tokio::select! {
            _ = call.as_mut() => panic!("the call ended before it was dropped"),
            () = tokio::time::sleep(Duration::from_millis(5)) => {},
        }
    }
    drop(call);
}

/// Waits (bounded) for the stops of dropped calls to finish, then asserts nothing is left.
async fn assert_dropped_calls_left_nothing(arg: &str, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !processes_with_arg(arg).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_none_left(arg, what).await;
}

/// A call dropped while its command runs (its caller gave up without a cancellation: a
/// request task aborted, a `select!` that took another branch) stops the tree, the escapee
/// that left the process group included.
#[tokio::test]
async fn a_call_dropped_while_its_command_runs_leaves_nothing_running() {
    agentty_core::init().unwrap();
    let arg = unique_sleep(6);
    let _reap = KillOnDrop(arg.clone());
    for i in 0..DROPS {
        let m = marker(&format!("drop-running-{i}"));
        let (cmd, n) = sleeper_and_escapee(&arg, i);
        let call = run::run(request(&cmd, &m, 60_000), std::future::pending(), None);
        drop_once_running(call, &arg, n).await;
    }
    assert_dropped_calls_left_nothing(&arg, "a call dropped while running").await;
}

/// The same for a command run under a terminal (`pty: true`).
#[tokio::test]
async fn a_terminal_call_dropped_while_its_command_runs_leaves_nothing_running() {
    agentty_core::init().unwrap();
    let arg = unique_sleep(7);
    let _reap = KillOnDrop(arg.clone());
    for i in 0..DROPS {
        let m = marker(&format!("drop-pty-{i}"));
        let (cmd, n) = sleeper_and_escapee(&arg, i);
        let req = PtyRunRequest {
            spec: sh(&cmd, &m),
            input: None,
            timeout: Duration::from_secs(60),
            spill: None,
            cols: 80,
            rows: 24,
            view: None,
        };
        drop_once_running(once::run(req, std::future::pending()), &arg, n).await;
    }
    assert_dropped_calls_left_nothing(&arg, "a terminal call dropped while running").await;
}

/// A command handed over at its timeout (`on_timeout: "background"`) that nobody adopts, the
/// hand-over dropped on its way to the job table, is stopped.
#[tokio::test]
async fn a_hand_over_nobody_takes_leaves_nothing_running() {
    agentty_core::init().unwrap();
    let arg = unique_sleep(8);
    let _reap = KillOnDrop(arg.clone());
    for i in 0..DROPS {
        let m = marker(&format!("drop-handover-{i}"));
        let (cmd, n) = sleeper_and_escapee(&arg, i);
        // Long enough for the escapee to show: the hand-over must carry all of the tree.
        let ended = run::run_until(request(&cmd, &m, 300), true, std::future::pending(), None)
            .await
            .unwrap();
        assert!(matches!(ended, run::RunEnd::TimedOut(_)), "not handed over");
        assert!(
            processes_with_arg(&arg).len() >= n,
            "the command was not running"
        );
        drop(ended);
    }
    assert_dropped_calls_left_nothing(&arg, "a hand-over nobody took").await;
}

/// A command whose leader dies of SIGTERM while a member of its group ignores it: only the
/// SIGKILL that follows the grace stops all of it.
fn leader_dies_member_ignores_term(arg: &str) -> String {
    format!("(trap '' TERM; exec sleep {arg}) & exec sleep {arg}")
}

/// Polls `stop` until `arg` shows in at most `n` live processes (its first signals went out),
/// then drops it.
async fn give_up_on_stop<F: Future>(stop: F, arg: &str, n: usize) {
    let mut stop = Box::pin(stop);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while processes_with_arg(arg).len() > n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stop sent nothing"
        );
        tokio::select! {
            _ = stop.as_mut() => panic!("the stop ended before it was given up on"),
            () = tokio::time::sleep(Duration::from_millis(5)) => {},
        }
    }
    drop(stop);
}

/// A `task_stop` given up on part-way (its request dropped, a page of the web view closed)
/// still stops the whole tree: the job's driver leaves the tree's end to the stop, which must
/// not end with the future that awaited it.
#[tokio::test]
async fn a_task_stop_given_up_on_still_stops_the_whole_tree() {
    agentty_core::init().unwrap();
    let table = JobTable::new();
    let arg = unique_sleep(9);
    let _reap = KillOnDrop(arg.clone());
    let m = marker("stop-given-up");
    let job = command::start(
        &table,
        CommandStart {
            spec: sh(&leader_dies_member_ignores_term(&arg), &m),
            stdin: None,
            label: "sleep".into(),
        },
        None,
    )
    .expect("start");
    wait_for_arg(&arg, 2).await;
    // Given up on once the leader died of its SIGTERM, inside the grace.
    give_up_on_stop(job.stop(), &arg, 1).await;
    assert_dropped_calls_left_nothing(&arg, "a task_stop given up on").await;
}

/// A shell's close given up on part-way stops the whole tree all the same.
#[tokio::test]
async fn a_shell_close_given_up_on_still_stops_the_whole_tree() {
    agentty_core::init().unwrap();
    let arg = unique_sleep(10);
    let _reap = KillOnDrop(arg.clone());
    let shells = Shells::new(Arc::new(JobTable::new()), None);
    let m = marker("close-given-up");
    let (_, shell) = shells
        .open(open_spec("/bin/bash", &m), "bash".into())
        .await
        .expect("open");
    let survivor = format!("(trap '' HUP TERM; exec sleep {arg}) &\n");
    send_for(&shell, &survivor, 10_000).await;
    wait_for_arg(&arg, 1).await;
    let close = shells.close("s1");
    let mut close = Box::pin(close);
    // Given up on once the shell itself is gone (hung up), inside the grace.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !shell.has_ended() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the shell never ended"
        );
        tokio::select! {
            _ = close.as_mut() => panic!("the close ended before it was given up on"),
            () = tokio::time::sleep(Duration::from_millis(5)) => {},
        }
    }
    drop(close);
    assert_dropped_calls_left_nothing(&arg, "a shell close given up on").await;
}

/// A shell nobody holds any more (never closed) takes its tree with it, what ignores the
/// hang-up included.
#[tokio::test]
async fn a_shell_nobody_holds_takes_its_tree_with_it() {
    agentty_core::init().unwrap();
    let arg = unique_sleep(11);
    let _reap = KillOnDrop(arg.clone());
    let m = marker("shell-dropped");
    let shell = Shell::open(open_spec("/bin/bash", &m)).await.expect("open");
    let survivor = format!("(trap '' HUP; exec sleep {arg}) &\n");
    send_for(&shell, &survivor, 10_000).await;
    wait_for_arg(&arg, 1).await;
    drop(shell);
    assert_dropped_calls_left_nothing(&arg, "a shell nobody holds").await;
}

/// Waits (bounded) until `arg` shows in `n` live processes.
async fn wait_for_arg(arg: &str, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while processes_with_arg(arg).len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the command never ran"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
