//! What the benchmarks share: calling a tool, medians, and reading the server's memory.

#![allow(dead_code)] // each bench uses its own part

pub mod http;
pub mod syscalls;

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt, service::RunningService};
use serde_json::Value;

/// Calls `name` with `args` (a JSON object); the result is the caller's to judge.
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        unreachable!("tool arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .expect("call")
}

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB; 0 when unreadable.
pub fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system) process `pid` has used so far, from `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 1000 / clock_ticks())
}

/// The first line of `/proc/stat`: each CPU state's time summed over all CPUs, in ticks
/// (user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice).
fn cpu_states() -> Vec<u64> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect()
}

/// CPU time every CPU of the machine has spent busy so far, from `/proc/stat`: what a run cost
/// in all, kernel and short-lived children included. Not idle, not iowait, and not steal (on a
/// VM, time the host gave to others while this one waited: no work of ours), nor guest time,
/// which user time already counts.
pub fn machine_busy() -> Duration {
    let busy: u64 = cpu_states()
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(i, 0..=2 | 5 | 6))
        .map(|(_, v)| v)
        .sum();
    Duration::from_millis(busy * 1000 / clock_ticks())
}

/// CPU time the host took from this VM so far (steal, summed over its CPUs): a bench prints
/// its share so a run on a busy host is seen as one.
pub fn machine_steal() -> Duration {
    let steal = cpu_states().get(7).copied().unwrap_or(0);
    Duration::from_millis(steal * 1000 / clock_ticks())
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

/// The serving process under the process a bench started: that one stays behind as the
/// watchdog and forks the server, whose RSS, CPU time and fds are what a bench measures.
pub fn serving_pid(started: u32) -> u32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let live: Vec<i32> = agentty_testkit::children(started as i32)
            .into_iter()
            .filter(|&pid| agentty_testkit::stat(pid).is_some_and(|s| !s.zombie()))
            .collect();
        if let [pid] = live[..] {
            return pid as u32;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no single serving process under {started}: {live:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `agentty serve` over stdio with `flags`; returns the client and the serving pid.
pub async fn start(
    workspace: &std::path::Path,
    state: &std::path::Path,
    flags: &[&str],
) -> (RunningService<RoleClient, ()>, u32) {
    start_of(
        env!("CARGO_BIN_EXE_agentty").as_ref(),
        workspace,
        state,
        flags,
    )
    .await
}

/// [`start`] with another agentty binary (`AGENTTY_BENCH_AGAINST`: an A/B of a change).
pub async fn start_of(
    binary: &std::path::Path,
    workspace: &std::path::Path,
    state: &std::path::Path,
    flags: &[&str],
) -> (RunningService<RoleClient, ()>, u32) {
    let mut cmd = tokio::process::Command::new(binary);
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace)
        .arg("--state-dir")
        .arg(state)
        .args(flags);
    let transport = TokioChildProcess::new(cmd).expect("spawn server");
    let server_pid = serving_pid(transport.id().expect("server pid"));
    (().serve(transport).await.expect("initialize"), server_pid)
}
