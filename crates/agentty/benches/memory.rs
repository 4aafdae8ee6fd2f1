//! `cargo bench -p agentty --bench memory`: what the server holds in memory, through a real MCP
//! client over stdio.
//!
//! Reports, for the idle server, its watchdog and its session init (the PID-namespace init, when
//! the server may make one): RSS, PSS (shared pages divided among the processes that map them,
//! so the three add up honestly) and the private part (what each costs on its own). Then the
//! server's RSS with [`ENDED_KEPT`](agentty_core::jobs::table::ENDED_KEPT) = 32 finished
//! background jobs kept, each of which printed 1 MB (so each keeps a full 256 KB ring and a
//! spill file), eight at a time (the most a session runs at once): targets the idle server,
//! watchdog and init <= 16 MB together, 32 kept jobs <= 24 MB. Then, in a second server running
//! them one at a time, what each kept job adds between the 8th and the 32nd: its ring plus a few
//! KB is the target (what the first run adds beyond that is the buffers of the jobs that ran at
//! once, which the allocator keeps). Asserts nothing: sizes belong to the machine's allocator as
//! much as to the server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::time::Duration;

use rmcp::{RoleClient, service::RunningService};
use serde_json::{Value, json};

use common::status_kib;

const KEPT: usize = 32;
const BATCH: usize = 8; // the most commands one session runs at once
const BYTES_PER_JOB: u64 = 1_000_000;

/// `Rss`, `Pss` and private (clean + dirty) KiB of `pid`, from `/proc/<pid>/smaps_rollup`.
fn rollup(pid: u32) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let field = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (
        field("Rss"),
        field("Pss"),
        field("Private_Clean") + field("Private_Dirty"),
    )
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn line(name: &str, pid: u32) -> (u64, u64) {
    let (rss, pss, private) = rollup(pid);
    println!(
        "  {name:<13} pid {pid:>7}: RSS {:>6.1} MiB  PSS {:>6.1} MiB  private {:>6.1} MiB",
        mib(rss),
        mib(pss),
        mib(private)
    );
    (rss, pss)
}

/// `agentty serve` over stdio in a fresh workspace and state dir: (client, watchdog, server).
async fn start() -> (
    RunningService<RoleClient, ()>,
    u32,
    u32,
    tempfile::TempDir,
    tempfile::TempDir,
) {
    let workspace = tempfile::tempdir().expect("tempdir");
    let state = agentty_testkit::state_dir();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state.path());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("spawn server");
    let watchdog = transport.id().expect("server pid");
    let server = common::serving_pid(watchdog);
    let client = rmcp::ServiceExt::serve((), transport)
        .await
        .expect("initialize");
    // One trivial call, so the server is as it is once it has served something.
    let r = common::call(&client, "terminal", json!({"command": "true"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    (client, watchdog, server, workspace, state)
}

/// Runs `count` background jobs printing [`BYTES_PER_JOB`] each, `batch` at a time, to their end.
async fn run_jobs(client: &RunningService<RoleClient, ()>, count: usize, batch: usize) {
    let script =
        format!("yes 'agentty memory bench: a line of build output' | head -c {BYTES_PER_JOB}");
    for _ in 0..count / batch {
        let mut ids = Vec::new();
        for _ in 0..batch {
            let r = common::call(
                client,
                "terminal",
                json!({"command": script, "background": true}),
            )
            .await;
            assert_ne!(r.is_error, Some(true), "{r:?}");
            let s = r.structured_content.unwrap_or(Value::Null);
            ids.push(s["job_id"].as_str().expect("a job id").to_owned());
        }
        for id in ids {
            let r =
                common::call(client, "task_wait", json!({"id": id, "timeout_ms": 60_000})).await;
            let s = r.structured_content.unwrap_or(Value::Null);
            assert_eq!(s["ended"], true, "{id} did not end");
            assert_eq!(s["job"]["output_bytes"], BYTES_PER_JOB, "{id} lost bytes");
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
}

#[tokio::main]
async fn main() {
    let (client, watchdog, server, _workspace, _state) = start().await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    println!("idle (after one trivial call):");
    let (_, watchdog_pss) = line("watchdog", watchdog);
    let (server_idle, server_pss) = line("server", server);
    let mut together = watchdog_pss + server_pss;
    for init in agentty_testkit::children(server as i32) {
        let (_, pss) = line("session init", init as u32);
        together += pss;
    }
    println!(
        "  together (PSS): {:.1} MiB (target <= 16 MB)",
        mib(together)
    );

    run_jobs(&client, KEPT, BATCH).await;
    let kept = status_kib(server, "VmRSS");
    println!(
        "{KEPT} finished jobs kept, {} MB printed each, {BATCH} at a time:",
        BYTES_PER_JOB / 1_000_000
    );
    line("server", server);
    println!(
        "  server RSS {:.1} MiB (target <= 24 MB), peak {:.1} MiB; {:.0} KiB per kept job \
         (its ring: {} KiB)",
        mib(kept),
        mib(status_kib(server, "VmHWM")),
        kept.saturating_sub(server_idle) as f64 / KEPT as f64,
        agentty_core::jobs::ring::RING_BYTES / 1024
    );
    let _ = client.cancel().await;

    let (client, _, server, _workspace, _state) = start().await;
    run_jobs(&client, BATCH, 1).await;
    let after_batch = status_kib(server, "VmRSS");
    run_jobs(&client, KEPT - BATCH, 1).await;
    let after_all = status_kib(server, "VmRSS");
    println!(
        "one job at a time, in another server: RSS {:.1} MiB with {BATCH} kept, {:.1} MiB with \
         {KEPT}; {:.0} KiB per kept job in between (target: its ring, {} KiB, plus a few KB)",
        mib(after_batch),
        mib(after_all),
        after_all.saturating_sub(after_batch) as f64 / (KEPT - BATCH) as f64,
        agentty_core::jobs::ring::RING_BYTES / 1024
    );
    let _ = client.cancel().await;
}
