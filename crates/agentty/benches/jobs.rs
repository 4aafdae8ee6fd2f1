//! `cargo bench -p agentty --bench jobs`: eight background jobs each printing 100 MB through a
//! real MCP client over stdio, against the same data going straight to /dev/null, in one run.
//!
//! Reports the server's peak RSS (VmHWM; target <= 64 MiB), capture throughput (all eight jobs'
//! bytes over the wall time until every job ended, as a ratio to the raw runs; target >= 0.7x)
//! and the median latency of `task_output` while the jobs flood and when they are done (target
//! <= 1 ms). Three raw baselines: `cat file > /dev/null` (no pipe at all: the kernel's floor),
//! `cat file | cat > /dev/null` (the data crosses a pipe to a reader that discards it, which is
//! the work a capture cannot avoid), and `cat file | cat > file` (the reader also keeps every
//! byte on disk, as the spill file does). Asserts nothing: timings belong to the machine.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt, service::RunningService};
use serde_json::{Value, json};

use common::{median, serving_pid, status_kib};

const JOBS: usize = 8;
const BYTES_PER_JOB: u64 = 100_000_000;
const LATENCY_SAMPLES: usize = 300;

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let result = common::call(client, name, args).await;
    assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
    result
}

/// Writes dirty pages out, so the next measured run starts clean.
fn sync() {
    let _ = std::process::Command::new("sync").status();
}

/// Runs `JOBS` copies of `script` at once; wall time until all ended.
fn raw(script: &str) -> Duration {
    let t = Instant::now();
    let children: Vec<_> = (0..JOBS)
        .map(|_| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .spawn()
                .expect("sh")
        })
        .collect();
    for mut c in children {
        c.wait().expect("wait");
    }
    t.elapsed()
}

async fn latency(client: &RunningService<RoleClient, ()>, samples: usize) -> Duration {
    let mut lat = Vec::with_capacity(samples);
    for i in 0..samples {
        let id = format!("t{}", i % JOBS + 1);
        let t = Instant::now();
        call(client, "task_output", json!({"id": id})).await;
        lat.push(t.elapsed());
    }
    median(lat)
}

#[tokio::main]
async fn main() {
    let workspace = tempfile::tempdir().expect("tempdir");
    let state = agentty_testkit::state_dir();
    let data = workspace.path().join("data.txt");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "yes 'agentty benchmark: a line of build output' | head -c {BYTES_PER_JOB} > '{}'",
            data.display()
        ))
        .status()
        .expect("make data");
    assert!(status.success());
    let file = data.display().to_string();

    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state.path());
    let transport = TokioChildProcess::new(cmd).expect("spawn server");
    let server_pid = serving_pid(transport.id().expect("server pid"));
    let client = ().serve(transport).await.expect("initialize");

    // Warm the page cache and the binaries so the first measured run is not the cold one.
    raw(&format!("cat '{file}' > /dev/null"));
    let direct = raw(&format!("cat '{file}' > /dev/null"));
    let piped = raw(&format!("cat '{file}' | cat > /dev/null"));

    // Both runs that write 800 MB to disk start with no dirty pages left by another, so neither
    // is throttled by the other's writeback.
    sync();
    let cpu_before = common::cpu_time(server_pid);
    let t = Instant::now();
    for _ in 0..JOBS {
        call(
            &client,
            "terminal",
            json!({"command": format!("cat '{file}'"), "background": true}),
        )
        .await;
    }
    let busy = latency(&client, LATENCY_SAMPLES).await;
    for i in 1..=JOBS {
        let r = call(
            &client,
            "task_wait",
            json!({"id": format!("t{i}"), "timeout_ms": 600_000}),
        )
        .await;
        let s = r.structured_content.unwrap_or(Value::Null);
        assert_eq!(s["ended"], true, "t{i} did not end");
        assert_eq!(s["job"]["output_bytes"], BYTES_PER_JOB, "t{i} lost bytes");
    }
    let ours = t.elapsed();
    let server_cpu = common::cpu_time(server_pid).saturating_sub(cpu_before);
    let idle = latency(&client, LATENCY_SAMPLES).await;
    let piped_after = raw(&format!("cat '{file}' | cat > /dev/null"));
    let kept_dir = tempfile::tempdir_in(state.path()).expect("tempdir");
    sync();
    let kept = raw(&format!(
        "f=$(mktemp -p '{}'); cat '{file}' | cat > \"$f\"",
        kept_dir.path().display()
    ));

    let total_mb = (JOBS as u64 * BYTES_PER_JOB) as f64 / 1e6;
    let mbps = |d: Duration| total_mb / d.as_secs_f64();
    let piped = piped.min(piped_after);
    println!(
        "{JOBS} jobs x {} MB each, {total_mb:.0} MB in all",
        BYTES_PER_JOB / 1_000_000
    );
    println!(
        "raw  cat file > /dev/null:        {:>8.0} ms  {:>7.0} MB/s",
        direct.as_secs_f64() * 1e3,
        mbps(direct)
    );
    println!(
        "raw  cat file | cat > /dev/null:  {:>8.0} ms  {:>7.0} MB/s",
        piped.as_secs_f64() * 1e3,
        mbps(piped)
    );
    println!(
        "raw  cat file | cat > file:       {:>8.0} ms  {:>7.0} MB/s",
        kept.as_secs_f64() * 1e3,
        mbps(kept)
    );
    println!(
        "ours 8 background jobs captured:  {:>8.0} ms  {:>7.0} MB/s",
        ours.as_secs_f64() * 1e3,
        mbps(ours)
    );
    println!(
        "capture throughput: {:.2}x of the piped baseline, {:.2}x of the direct one (target >= 0.7x); \
         {:.2}x of the piped-to-a-file one",
        piped.as_secs_f64() / ours.as_secs_f64(),
        direct.as_secs_f64() / ours.as_secs_f64(),
        kept.as_secs_f64() / ours.as_secs_f64()
    );
    println!(
        "server CPU while capturing: {:.0} ms ({:.0} MB per CPU-second)",
        server_cpu.as_secs_f64() * 1e3,
        total_mb / server_cpu.as_secs_f64().max(1e-3)
    );
    println!(
        "task_output median latency: {:.0} µs while flooding, {:.0} µs idle (target <= 1 ms)",
        busy.as_secs_f64() * 1e6,
        idle.as_secs_f64() * 1e6
    );
    println!(
        "server peak RSS (VmHWM): {:.1} MiB (target <= 64 MiB)",
        status_kib(server_pid, "VmHWM") as f64 / 1024.0
    );
    let _ = client.cancel().await;
}
