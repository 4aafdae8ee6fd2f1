//! `cargo bench -p agentty --bench shells`: the cost of `shell_send("echo hi\n")` through a real
//! MCP client over stdio, against a raw PTY round trip of the same command measured in the same
//! run (write `echo hi\r` to bash on a PTY, read until the output and the next prompt), plus the
//! server's memory per open shell.
//!
//! `AGENTTY_BENCH_AGAINST=<another agentty binary>` also serves that build and times its sends in
//! the same rounds (an A/B of a change).
//!
//! Prints numbers and ratios against the targets (<= 1.5x raw, <= 5 ms); asserts nothing, since
//! timings belong to the machine, not to the code.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agentty_core::pty::spawn_on_pty;
use agentty_core::spawn::{SpawnSpec, StdinMode};
use rmcp::{RoleClient, service::RunningService};
use serde_json::{Value, json};

use common::{median, micros, status_kib};

const ROUND_TRIPS: usize = 300;
const WARMUP: usize = 30;

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> Value {
    let result = common::call(client, name, args).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result.structured_content.unwrap_or(Value::Null)
}

/// bash on a bare PTY with a plain prompt: the floor any shell tool pays.
struct RawPty {
    master: agentty_core::pty::sys::Master,
    buf: Vec<u8>,
}

impl RawPty {
    async fn start() -> Self {
        let spec = SpawnSpec {
            program: OsString::from("bash"),
            args: ["--norc", "--noprofile", "-i"].map(OsString::from).to_vec(),
            cwd: std::env::temp_dir(),
            env: vec![("PS1".into(), "PROMPT$ ".into())],
            stdin: StdinMode::Null,
            marker: format!("bench-raw-{}", std::process::id()),
            confine: None,
            caller: None,
            pass_fds: Vec::new(),
            masks: None,
        };
        let (master, _, _) = spawn_on_pty(spec, 120, 40).await.expect("raw pty");
        let mut raw = Self {
            master,
            buf: vec![0; 65536],
        };
        raw.read_until(&[b"PROMPT$ "]).await;
        raw
    }

    /// Reads until each needle was seen, in order (escape sequences may sit between them).
    async fn read_until(&mut self, needles: &[&[u8]]) {
        let mut seen = Vec::new();
        let mut from = 0;
        for needle in needles {
            loop {
                if let Some(at) = seen[from..]
                    .windows(needle.len())
                    .position(|w| w == *needle)
                {
                    from += at + needle.len();
                    break;
                }
                let n = self.master.read(&mut self.buf).await.expect("read");
                assert!(n > 0, "raw bash ended");
                seen.extend_from_slice(&self.buf[..n]);
            }
        }
    }

    async fn round_trip(&mut self) -> Duration {
        let t = Instant::now();
        let line = b"echo hi\r";
        let far = tokio::time::Instant::now() + Duration::from_secs(60);
        let taken = self.master.write_until(line, far).await.expect("write");
        assert_eq!(taken, line.len(), "the terminal took part of the line");
        // The echoed line, then the output line, then the next prompt.
        self.read_until(&[b"echo hi\r\n", b"hi\r\n", b"PROMPT$ "])
            .await;
        t.elapsed()
    }
}

/// `shell_send("echo hi\n")` to shell `s1` of `client`, timed.
async fn send_echo(client: &RunningService<RoleClient, ()>) -> Duration {
    let t = Instant::now();
    let s = call(
        client,
        "shell_send",
        json!({"id": "s1", "input": "echo hi\n"}),
    )
    .await;
    let elapsed = t.elapsed();
    assert_eq!(s["output"], "hi\n");
    elapsed
}

#[tokio::main]
async fn main() {
    agentty_core::init().expect("init");
    let workspace = tempfile::tempdir().expect("tempdir");
    let state = agentty_testkit::state_dir();
    let flags = ["--shell", "/bin/bash"];
    let (client, server_pid) = common::start(workspace.path(), state.path(), &flags).await;
    // Another build, measured in the same rounds (an A/B of a change).
    let against_state = agentty_testkit::state_dir();
    let against = match std::env::var_os("AGENTTY_BENCH_AGAINST") {
        Some(binary) => {
            let binary = std::path::PathBuf::from(binary);
            let (client, _) =
                common::start_of(&binary, workspace.path(), against_state.path(), &flags).await;
            call(&client, "shell_open", json!({})).await;
            Some((binary, client))
        }
        None => None,
    };

    let mut raw = RawPty::start().await;
    let before_open = status_kib(server_pid, "VmRSS");
    call(&client, "shell_open", json!({})).await;
    for _ in 0..WARMUP {
        raw.round_trip().await;
        send_echo(&client).await;
        if let Some((_, other)) = &against {
            send_echo(other).await;
        }
    }
    let (mut raw_times, mut ours, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUND_TRIPS {
        raw_times.push(raw.round_trip().await);
        ours.push(send_echo(&client).await);
        if let Some((_, other)) = &against {
            theirs.push(send_echo(other).await);
        }
    }
    let (raw_m, ours_m) = (median(raw_times), median(ours));
    println!(
        "raw PTY round trip (echo hi, until next prompt): median {:.0} µs",
        micros(raw_m)
    );
    println!(
        "shell_send(\"echo hi\\n\") via MCP stdio: median {:.0} µs",
        micros(ours_m)
    );
    println!(
        "ratio {:.2}x (target <= 1.5x); absolute {:.2} ms (target <= 5 ms)",
        micros(ours_m) / micros(raw_m),
        ours_m.as_secs_f64() * 1e3
    );
    if let Some((binary, other)) = against {
        let theirs_m = median(std::mem::take(&mut theirs));
        println!(
            "against {}: median {:.0} µs, ratio {:.2}x of raw; this build / that one {:.3}x",
            binary.display(),
            micros(theirs_m),
            micros(theirs_m) / micros(raw_m),
            micros(ours_m) / micros(theirs_m)
        );
        let _ = other.cancel().await;
    }

    for _ in 0..3 {
        call(&client, "shell_open", json!({})).await;
    }
    for id in ["s2", "s3", "s4"] {
        call(
            &client,
            "shell_send",
            json!({"id": id, "input": "echo hi\n"}),
        )
        .await;
    }
    let after_open = status_kib(server_pid, "VmRSS");
    println!(
        "server RSS: {before_open} KiB before, {after_open} KiB with 4 open shells: {:.0} KiB per shell \
         (the shells' own processes not counted)",
        after_open.saturating_sub(before_open) as f64 / 4.0
    );
    let _ = client.cancel().await;
}
