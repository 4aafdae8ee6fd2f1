//! `cargo bench -p agentty --bench flood`: does a session's own flood starve its calls?
//!
//! 1. Latency of a trivial `terminal({argv:["true"]})` (median and p99) while 8 background
//!    `yes` jobs and 2 shells running `yes` flood the server, against a raw spawn+wait of `true`
//!    measured interleaved in the same run (so both see the same loaded machine).
//! 2. Soak: the server's RSS and open fds per 1,000 trivial calls after a warm-up.
//!
//! Prints ratios; asserts nothing, since timings belong to the machine, not to the code.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::time::{Duration, Instant};

use rmcp::{RoleClient, service::RunningService};
use serde_json::json;

use common::{call, micros, start, status_kib};

const SAMPLES: usize = 300;
const JOBS: usize = 8;
const SHELLS: usize = 2;
const SOAK_CALLS: usize = 1000;

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[at]
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

async fn trivial_vs_raw(client: &RunningService<RoleClient, ()>) -> (Vec<Duration>, Vec<Duration>) {
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for round in 0..SAMPLES {
        for slot in 0..2 {
            let t = Instant::now();
            if (round + slot) % 2 == 0 {
                call(client, "terminal", json!({"argv": ["true"]})).await;
                ours.push(t.elapsed());
            } else {
                let _ = std::process::Command::new("true").status().expect("true");
                raw.push(t.elapsed());
            }
        }
    }
    (ours, raw)
}

fn report(label: &str, ours: Vec<Duration>, raw: Vec<Duration>) {
    let (om, op) = (
        percentile(ours.clone(), 0.5),
        percentile(ours.clone(), 0.99),
    );
    let (rm, rp) = (percentile(raw.clone(), 0.5), percentile(raw, 0.99));
    let max = ours.iter().max().copied().unwrap_or_default();
    println!(
        "{label}: terminal median {:.0} µs p99 {:.0} µs max {:.0} µs; raw spawn median {:.0} µs p99 {:.0} µs",
        micros(om),
        micros(op),
        micros(max),
        micros(rm),
        micros(rp)
    );
    println!(
        "{label}: ratio median {:.2}x (target <= 3x), p99 {:.2}x (target <= 10x)",
        micros(om) / micros(rm),
        micros(op) / micros(rp)
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let workspace = tempfile::tempdir().expect("tempdir");
    let state = agentty_testkit::state_dir();
    let (client, server_pid) = start(workspace.path(), state.path(), &[]).await;
    for _ in 0..40 {
        call(&client, "terminal", json!({"argv": ["true"]})).await;
    }

    let (ours, raw) = trivial_vs_raw(&client).await;
    report("quiet", ours, raw);

    for _ in 0..JOBS {
        call(
            &client,
            "terminal",
            json!({"command": "yes", "background": true}),
        )
        .await;
    }
    for _ in 0..SHELLS {
        let opened = call(&client, "shell_open", json!({})).await;
        let id = opened.structured_content.expect("shell")["id"]
            .as_str()
            .expect("id")
            .to_owned();
        call(
            &client,
            "shell_send",
            json!({"id": id, "input": "yes\n", "timeout_ms": 200}),
        )
        .await;
    }
    let (ours, raw) = trivial_vs_raw(&client).await;
    report(&format!("{JOBS} yes jobs + {SHELLS} yes shells"), ours, raw);
    call(&client, "task_list", json!({})).await;
    for id in 1..=JOBS {
        call(&client, "task_stop", json!({"id": format!("t{id}")})).await;
    }
    for id in 1..=SHELLS {
        call(&client, "shell_close", json!({"id": format!("s{id}")})).await;
    }

    // Soak: growth per 1,000 calls after the warm-up above.
    let (rss0, fds0) = (status_kib(server_pid, "VmRSS"), open_fds(server_pid));
    for _ in 0..SOAK_CALLS {
        call(&client, "terminal", json!({"argv": ["true"]})).await;
    }
    let (rss1, fds1) = (status_kib(server_pid, "VmRSS"), open_fds(server_pid));
    println!(
        "soak: per 1,000 calls RSS {:+} kB, open fds {:+} (target: 0 after warm-up)",
        (rss1 as i64 - rss0 as i64) * 1000 / SOAK_CALLS as i64,
        (fds1 as i64 - fds0 as i64) * 1000 / SOAK_CALLS as i64
    );
    let _ = client.cancel().await;
}
