//! `cargo bench -p agentty-core --bench run`: the engine's own cost for a trivial command, without
//! MCP: `run::run` of `true` against a raw spawn+wait of `true`, interleaved in the same run.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agentty_core::run::{RunRequest, run};
use agentty_core::spawn::{SpawnSpec, StdinMode};

const CALLS: usize = 500;

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

#[tokio::main]
async fn main() {
    agentty_core::init().expect("reaper");
    let (mut raw, mut ours) = (Vec::new(), Vec::new());
    for i in 0..CALLS + 50 {
        let t = Instant::now();
        let _ = std::process::Command::new("true").status();
        let raw_t = t.elapsed();
        let req = RunRequest {
            spec: SpawnSpec {
                program: OsString::from("true"),
                args: Vec::new(),
                cwd: std::env::temp_dir(),
                env: Vec::new(),
                stdin: StdinMode::Null,
                marker: format!("bench-{i}"),
                confine: None,
                caller: None,
                pass_fds: Vec::new(),
                masks: None,
            },
            stdin: None,
            timeout: Duration::from_secs(10),
            spill: None,
            keep_whole: false,
            view: None,
        };
        let t = Instant::now();
        let _ = run(req, std::future::pending(), None).await.expect("run");
        if i >= 50 {
            raw.push(raw_t);
            ours.push(t.elapsed());
        }
    }
    let (raw, ours) = (median(raw), median(ours));
    println!(
        "engine: raw spawn+wait median {raw:.0} µs, run() median {ours:.0} µs, ratio {:.2}x",
        ours / raw
    );
}
