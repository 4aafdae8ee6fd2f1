//! `cargo bench -p agentty --bench shells`: the cost of `shell_send("echo hi\n")` through a real
//! MCP client over stdio, against a raw PTY round trip of the same command measured in the same
//! run (write `echo hi\r` to bash on a PTY, read until the output and the next prompt), plus the
//! server's memory per open shell.
//!
//! Prints numbers and ratios against the targets (<= 2x raw, <= 5 ms); asserts nothing, since
//! timings belong to the machine, not to the code.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agentty_core::pty::spawn_on_pty;
use agentty_core::spawn::{SpawnSpec, StdinMode};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt, service::RunningService};
use serde_json::{Value, json};

use common::{median, micros, serving_pid, status_kib};

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
            pass_fd: None,
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

#[tokio::main]
async fn main() {
    agentty_core::init().expect("init");
    let workspace = tempfile::tempdir().expect("tempdir");
    let state = agentty_testkit::state_dir();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state.path())
        .arg("--shell")
        .arg("/bin/bash");
    let transport = TokioChildProcess::new(cmd).expect("spawn server");
    let server_pid = serving_pid(transport.id().expect("server pid"));
    let client = ().serve(transport).await.expect("initialize");

    let mut raw = RawPty::start().await;
    let before_open = status_kib(server_pid, "VmRSS");
    call(&client, "shell_open", json!({})).await;
    for _ in 0..WARMUP {
        raw.round_trip().await;
        call(
            &client,
            "shell_send",
            json!({"id": "s1", "input": "echo hi\n"}),
        )
        .await;
    }
    let (mut raw_times, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..ROUND_TRIPS {
        raw_times.push(raw.round_trip().await);
        let t = Instant::now();
        let s = call(
            &client,
            "shell_send",
            json!({"id": "s1", "input": "echo hi\n"}),
        )
        .await;
        ours.push(t.elapsed());
        assert_eq!(s["output"], "hi\n");
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
