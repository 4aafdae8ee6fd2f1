//! Background commands with real processes: cursors, waiting, caps, stopping, hand-over from
//! the foreground, and the watchdog's sweep, each checked in `/proc` where it matters.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentty_core::SpillStore;
use agentty_core::jobs::command::{self, CommandStart, StartError};
use agentty_core::jobs::{JobState, JobTable, OutputRing, READ_MAX_BYTES, RING_BYTES};
use agentty_core::run::{self, RunEnd};

use super::common::*;

const PROMPT: Duration = Duration::from_secs(20);

fn start(table: &JobTable, cmd: &str, m: &str) -> Arc<agentty_core::jobs::Job> {
    agentty_core::init().unwrap();
    command::start(
        table,
        CommandStart {
            spec: sh(cmd, m),
            stdin: None,
            label: cmd.to_owned(),
        },
        None,
    )
    .unwrap_or_else(|e| panic!("start {cmd}: {e}"))
}

async fn ended(job: &agentty_core::jobs::Job) -> JobState {
    tokio::time::timeout(PROMPT, job.ended())
        .await
        .expect("job ended in time")
}

/// Reads the whole ring from `cursor` with at most `max` bytes per read, checking every cursor.
fn rebuild(ring: &OutputRing, mut cursor: u64, max: usize) -> String {
    let mut out = String::new();
    loop {
        let s = ring.read(Some(cursor), max);
        assert_eq!(s.from, cursor, "gap or overlap at {cursor}");
        assert!(s.text.len() <= max);
        if s.text.is_empty() {
            return out;
        }
        out.push_str(&s.text);
        cursor = s.next;
    }
}

/// Lines 1..=n, as `seq -f` prints them: about 100 KB for n = 9000.
fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i:06} ok\n")).collect()
}

#[tokio::test]
async fn cursor_reads_rebuild_a_100kb_stream_exactly() {
    let table = JobTable::new();
    let m = marker("jobs-100k");
    let job = start(&table, "seq -f 'line %06g ok' 1 9000", &m);
    assert_eq!(job.id, "t1");
    // Read while it runs too: concurrent reads must never see a gap or a duplicate.
    let mut early = String::new();
    let mut cursor = 0;
    let deadline = Instant::now() + PROMPT;
    while job.state().is_running() && Instant::now() < deadline {
        let s = job.output.read(Some(cursor), READ_MAX_BYTES);
        assert_eq!(s.from, cursor);
        early.push_str(&s.text);
        cursor = s.next;
        tokio::task::yield_now().await;
    }
    assert_eq!(ended(&job).await, JobState::Exited(0));
    early.push_str(&rebuild(&job.output, cursor, READ_MAX_BYTES));
    let expected = numbered(9000);
    assert!(expected.len() > 100_000 && expected.len() < RING_BYTES);
    assert_eq!(early, expected);
    assert_eq!(rebuild(&job.output, 0, READ_MAX_BYTES), expected);
    assert_eq!(rebuild(&job.output, 0, 7), expected, "odd read sizes");
}

#[tokio::test]
async fn overflow_spills_everything_and_reads_say_what_scrolled_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SpillStore::new(dir.path(), "session"));
    let table = JobTable::new();
    let m = marker("jobs-spill");
    agentty_core::init().unwrap();
    let job = command::start(
        &table,
        CommandStart {
            spec: sh("seq -f 'line %06g ok' 1 60000; echo tail >&2", &m),
            stdin: None,
            label: "seq".into(),
        },
        Some(store),
    )
    .unwrap();
    assert_eq!(ended(&job).await, JobState::Exited(0));
    let mut expected = numbered(60_000);
    expected.push_str("tail\n");
    let s = job.output.read(Some(0), READ_MAX_BYTES);
    let total = expected.len() as u64;
    assert_eq!(s.total, total);
    assert_eq!(s.dropped, total - RING_BYTES as u64);
    let path = s.spill_path.expect("spilled");
    assert!(path.ends_with("t1.log"), "{path:?}");
    // stdout and stderr are merged in arrival order: under load the last stdout chunk may be
    // read after the stderr line, so the stderr line is checked as a whole line, anywhere.
    let spilled = std::fs::read_to_string(path).unwrap();
    assert_eq!(spilled.len(), expected.len());
    let lines: Vec<&str> = spilled.lines().collect();
    assert_eq!(lines.iter().filter(|l| **l == "tail").count(), 1);
    let stdout: Vec<&str> = lines.into_iter().filter(|l| *l != "tail").collect();
    assert_eq!(stdout.join("\n") + "\n", numbered(60_000));
    let tail = rebuild(&job.output, s.from, READ_MAX_BYTES);
    assert!(
        tail.contains("line 060000 ok\n"),
        "the ring keeps the newest text"
    );
    assert!(tail.ends_with("line 060000 ok\n") || tail.ends_with("line 060000 ok\ntail\n"));
}

#[tokio::test]
async fn a_short_wait_leaves_the_job_running() {
    let table = JobTable::new();
    let m = marker("jobs-wait");
    let job = start(&table, "echo started; sleep 100", &m);
    let waited = tokio::time::timeout(Duration::from_millis(200), job.ended()).await;
    assert!(waited.is_err(), "a 100 s job ended within 200 ms");
    assert!(job.state().is_running());
    assert!(!processes_with_marker(&m).is_empty(), "the wait killed it");
    job.stop().await;
    assert_eq!(job.state(), JobState::Stopped);
    assert_eq!(leftovers_after(&m, PROMPT).await, Vec::<i32>::new());
}

#[tokio::test]
async fn the_ninth_job_is_refused_and_the_refusal_lists_the_running_ones() {
    let table = JobTable::new();
    let m = marker("jobs-cap");
    // Each job has its own marker, as in the server: a marker names one run's tree.
    let markers: Vec<String> = (0..10).map(|i| format!("{m}-{i}")).collect();
    let jobs: Vec<_> = (0..8)
        .map(|i| start(&table, &format!("sleep 100 # {i}"), &markers[i]))
        .collect();
    agentty_core::init().unwrap();
    let m_refused = marker("jobs-cap-refused");
    let refused = command::start(
        &table,
        CommandStart {
            spec: sh("sleep 100", &m_refused),
            stdin: None,
            label: "ninth".into(),
        },
        None,
    );
    let Err(StartError::Cap(cap)) = refused else {
        panic!("the ninth job was not refused")
    };
    assert_eq!(cap.limit, 8);
    let ids: Vec<&str> = cap.running.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"]);
    assert!(cap.running.iter().all(|j| j.label.starts_with("sleep 100")));
    // Nothing was spawned for the refused call, and its id was not consumed.
    assert_eq!(processes_with_marker(&m_refused), Vec::<i32>::new());
    jobs[0].stop().await;
    assert!(jobs[1..].iter().all(|j| j.state().is_running()));
    let next = start(&table, "sleep 100", &markers[9]);
    assert_eq!(next.id, "t9");
    assert_eq!(table.stop_all().await.len(), 8);
    for m in &markers {
        assert_eq!(leftovers_after(m, PROMPT).await, Vec::<i32>::new());
    }
}

#[tokio::test]
async fn stopping_a_job_stops_a_setsid_child_and_a_double_fork() {
    let table = JobTable::new();
    let m = marker("jobs-stop-tree");
    let cmd = "setsid sleep 100 >/dev/null 2>&1 & (setsid sleep 100 >/dev/null 2>&1 &); \
               trap '' TERM; sleep 100";
    let job = start(&table, cmd, &m);
    let seen = wait_for_marked(&m, 4, PROMPT).await;
    assert!(seen.iter().all(|&n| n >= 4), "{seen:?}");
    job.stop().await;
    assert_eq!(job.state(), JobState::Stopped);
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
    assert!(job.output.is_closed());
}

#[tokio::test]
async fn a_job_ends_with_its_leader_and_takes_leftovers_with_it() {
    let table = JobTable::new();
    let m = marker("jobs-leftovers");
    let job = start(&table, "sleep 100 & echo hi; exit 3", &m);
    assert_eq!(ended(&job).await, JobState::Exited(3));
    assert!(job.leftovers() >= 1);
    assert_eq!(job.output.read(Some(0), 100).text, "hi\n");
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

#[tokio::test]
async fn stdin_is_fed_and_stderr_is_merged_line_by_line() {
    agentty_core::init().unwrap();
    let table = JobTable::new();
    let m = marker("jobs-stdin");
    let job = command::start(
        &table,
        CommandStart {
            spec: sh("cat; echo err >&2", &m),
            stdin: Some(b"fed\n".to_vec()),
            label: "cat".into(),
        },
        None,
    )
    .unwrap();
    assert_eq!(ended(&job).await, JobState::Exited(0));
    // Merged whole lines, in arrival order (which two pipes do not fix under load).
    let text = job.output.read(Some(0), 100).text;
    assert!(text == "fed\nerr\n" || text == "err\nfed\n", "{text:?}");
}

#[tokio::test]
async fn a_timed_out_command_is_handed_over_without_losing_or_doubling_a_byte() {
    agentty_core::init().unwrap();
    let m = marker("jobs-handover");
    // Lines before the timeout, a partial line across it, and lines after it.
    let cmd = "for i in 1 2 3; do echo before$i; done; printf half; sleep 0.6; \
               echo -way; for i in 1 2 3; do echo after$i; done; (setsid sleep 100 &); sleep 0.2";
    let req = request(cmd, &m, 300);
    let end = run::run_until(req, true, std::future::pending(), None)
        .await
        .unwrap();
    let RunEnd::TimedOut(handover) = end else {
        panic!("not handed over")
    };
    assert_eq!(text(&handover.output), "before1\nbefore2\nbefore3\n");
    assert_eq!(handover.cursor, "before1\nbefore2\nbefore3\n".len() as u64);
    let table = JobTable::new();
    let job = command::adopt(&table, *handover, cmd.into())
        .map_err(|_| "refused")
        .unwrap();
    assert!(
        job.started.elapsed() >= Duration::from_millis(300),
        "age kept"
    );
    assert_eq!(ended(&job).await, JobState::Exited(0));
    assert_eq!(
        rebuild(&job.output, 0, 5),
        "before1\nbefore2\nbefore3\nhalf-way\nafter1\nafter2\nafter3\n"
    );
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

/// A call that printed colour, then was handed over: the job's view copy (a new one) starts at
/// the job's first escape, though the call's cleaners, which the job goes on with, met one.
#[tokio::test]
async fn a_handed_over_calls_job_gets_its_colours_in_the_view() {
    agentty_core::init().unwrap();
    agentty_core::view_tap::serve_view();
    let m = marker("jobs-handover-colour");
    let cmd = "printf '\\033[31mcall\\033[0m\\n'; sleep 0.6; printf '\\033[32mjob\\033[0m\\n'";
    let mut req = request(cmd, &m, 300);
    let call_view = Arc::new(agentty_core::view_tap::ViewTap::default());
    req.view = Some(call_view.clone());
    let RunEnd::TimedOut(handover) = run::run_until(req, true, std::future::pending(), None)
        .await
        .unwrap()
    else {
        panic!("not handed over")
    };
    assert!(call_view.coloured(), "the call's copy has no colours");
    let table = JobTable::new();
    let job = command::adopt(&table, *handover, cmd.into())
        .map_err(|_| "refused")
        .unwrap();
    assert_eq!(ended(&job).await, JobState::Exited(0));
    assert!(job.view.coloured(), "the job's copy never started");
    let copy = job.view.ring().read(Some(0), RING_BYTES).text;
    assert_eq!(copy, "call\n\x1b[32mjob\x1b[0m\n");
}

#[tokio::test]
async fn a_refused_hand_over_is_stopped_like_a_timeout() {
    agentty_core::init().unwrap();
    let m = marker("jobs-handover-refused");
    let table = JobTable::new();
    let _jobs: Vec<_> = (0..8)
        .map(|i| start(&table, "sleep 100", &format!("{m}-{i}")))
        .collect();
    let m2 = marker("jobs-handover-refused-2");
    let req = request("(setsid sleep 100 &); sleep 100", &m2, 200);
    let RunEnd::TimedOut(handover) = run::run_until(req, true, std::future::pending(), None)
        .await
        .unwrap()
    else {
        panic!("not handed over")
    };
    let Err((handover, cap)) = command::adopt(&table, *handover, "x".into()) else {
        panic!("adopted over the cap")
    };
    assert_eq!(cap.running.len(), 8);
    command::abandon(handover).await;
    assert_eq!(processes_with_marker(&m2), Vec::<i32>::new());
    table.stop_all().await;
    for i in 0..8 {
        assert_eq!(
            leftovers_after(&format!("{m}-{i}"), PROMPT).await,
            Vec::<i32>::new()
        );
    }
}

#[tokio::test]
async fn without_hand_over_a_timeout_still_kills() {
    let m = marker("jobs-no-handover");
    let end = run::run_until(
        request("sleep 100", &m, 200),
        false,
        std::future::pending(),
        None,
    )
    .await
    .unwrap();
    assert!(matches!(end, RunEnd::Finished(o) if o.status == run::RunStatus::Timeout));
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}

#[tokio::test]
async fn the_watchdog_sweep_stops_every_process_with_the_prefix() {
    agentty_core::init().unwrap();
    let prefix = marker("sweep-prefix");
    let table = JobTable::new();
    let jobs: Vec<_> = ["a", "b"]
        .iter()
        .map(|s| {
            start(
                &table,
                "(setsid sleep 100 >/dev/null 2>&1 &); trap '' TERM; sleep 100",
                &format!("{prefix}-{s}"),
            )
        })
        .collect();
    let other = marker("sweep-other");
    let bystander = start(&table, "sleep 100", &other);
    let all = || {
        processes_with_marker(&format!("{prefix}-a")).len()
            + processes_with_marker(&format!("{prefix}-b")).len()
    };
    let deadline = Instant::now() + PROMPT;
    while all() < 4 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sweep_prefix = format!("{prefix}-");
    let (found, killed) =
        tokio::task::spawn_blocking(move || agentty_core::sweep::by_prefix(&sweep_prefix))
            .await
            .unwrap();
    assert!(found >= 4, "found {found}");
    assert!(killed >= 2, "TERM-ignoring shells needed SIGKILL: {killed}");
    assert_eq!(all(), 0);
    assert!(bystander.state().is_running(), "another prefix was touched");
    for job in jobs {
        assert!(!ended(&job).await.is_running());
    }
    bystander.stop().await;
}

/// A long session stays bounded: an ended job whose output spilled keeps no open file, and
/// only the newest `ENDED_KEPT` ended jobs of a kind stay in the table (the rest are counted).
#[tokio::test]
async fn ended_jobs_keep_no_file_open_and_the_table_stays_bounded() {
    let table = JobTable::new();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SpillStore::new(dir.path(), "session"));
    let m = marker("jobs-bounded");
    agentty_core::init().unwrap();
    let open_spills = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.starts_with(dir.path()))
            .filter(|target| target.extension().is_some_and(|e| e == "log"))
            .count()
    };
    let total = agentty_core::jobs::ENDED_KEPT + 8;
    for _ in 0..total {
        let job = command::start(
            &table,
            CommandStart {
                spec: sh("seq 1 60000", &m),
                stdin: None,
                label: "seq".into(),
            },
            Some(store.clone()),
        )
        .unwrap();
        ended(&job).await;
        assert!(
            job.output.read(Some(0), 10).spill_path.is_some(),
            "it spilled"
        );
    }
    assert_eq!(open_spills(), 0, "ended jobs keep their spill files open");
    // Forgetting happens as a job is registered: the last one was still running then.
    assert_eq!(table.list().len(), agentty_core::jobs::ENDED_KEPT + 1);
    assert_eq!(table.forgotten(), 7);
    // A forgotten job's spill file went with it: the disk holds one per job still listed
    // (50 files for 32 listed jobs, up to 256 MiB each, before).
    let spill_files = std::fs::read_dir(store.dir())
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .count();
    assert_eq!(
        spill_files,
        table.list().len(),
        "files of forgotten jobs stay"
    );
}

/// A table of callers without a session names jobs by unguessable handles: 96 random bits,
/// never sequential; a sequential id finds nothing; a forgotten job's handle finds nothing; and
/// a job no lookup names shows as unused.
#[tokio::test]
async fn an_unguessable_table_hands_out_handles_nobody_can_count_to() {
    let table = JobTable::unguessable();
    let m = marker("jobs-handles");
    let peeked = table.peek_id(agentty_core::jobs::JobKind::Command);
    let first = start(&table, "sleep 100", &m);
    assert_eq!(first.id, peeked, "peek_id names the next job");
    let second = start(&table, "sleep 100", &m);
    for job in [&first, &second] {
        let hex = job.id.strip_prefix("t-").unwrap();
        assert_eq!(hex.len() * 4, agentty_core::jobs::HANDLE_BITS, "{}", job.id);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{}", job.id);
    }
    assert_ne!(first.id, second.id);
    assert!(table.get("t1").is_none() && table.get("t2").is_none());
    assert!(Arc::ptr_eq(&table.get(&second.id).unwrap(), &second));

    // Unused: the first was never named since it started; the second was just now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    table.get(&second.id).unwrap();
    let unused = table.unused(Duration::from_millis(250));
    let ids: Vec<&str> = unused.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, vec![first.id.as_str()]);

    table.stop_all().await;
    assert!(table.remove(&first.id).is_some());
    assert!(
        table.get(&first.id).is_none(),
        "a removed handle finds nothing"
    );
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}
