//! System calls a server makes per call (issue 45: per-call system calls counted in the bench),
//! counted by `perf stat` on the serving process's threads while the calls run. The commands a
//! call starts are not counted (`--no-inherit`): their system calls are theirs, and a raw
//! spawn makes them too. Needs `perf` and the right to trace (root, `CAP_PERFMON`, or
//! `kernel.perf_event_paranoid` <= -1); without it the count is `None` and the bench says so.

use std::future::Future;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs `work` (which makes `calls` calls) while `perf stat` counts the system calls of the
/// threads of `pid` that exist when it starts (a warmed-up server's: its runtime's workers,
/// launchers, reaper); returns what `work` returned and the count per call.
pub async fn per_call<F: Future>(pid: u32, calls: usize, work: F) -> (F::Output, Option<f64>) {
    let out = tempfile::NamedTempFile::new().expect("tempfile");
    let perf = Command::new("perf")
        .args([
            "stat",
            "--no-inherit",
            "-x",
            ",",
            "-e",
            "raw_syscalls:sys_enter",
        ])
        .arg("-p")
        .arg(pid.to_string())
        .arg("-o")
        .arg(out.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut perf) = perf else {
        return (work.await, None);
    };
    // perf attaches within a few milliseconds; calls made before it has are not counted, which
    // only lowers the figure a little.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let output = work.await;
    // SAFETY: kill sends SIGINT to the perf child we started; perf prints its counts on it.
    unsafe { libc::kill(perf.id() as libc::pid_t, libc::SIGINT) };
    let _ = perf.wait();
    let text = std::fs::read_to_string(out.path()).unwrap_or_default();
    let count = text
        .lines()
        .find(|line| line.contains("raw_syscalls:sys_enter"))
        .and_then(|line| line.split(',').next())
        .and_then(|n| n.trim().parse::<f64>().ok());
    (output, count.map(|n| n / calls.max(1) as f64))
}

/// The line the benches print: `what`, this build's count and, with `AGENTTY_BENCH_AGAINST`,
/// the other build's.
pub fn line(what: &str, ours: Option<f64>, theirs: Option<Option<f64>>) -> String {
    let said = |count: Option<f64>| {
        count.map_or_else(
            || "not counted (needs perf and the right to trace)".to_owned(),
            |n| format!("{n:.1}"),
        )
    };
    let against = theirs.map_or_else(String::new, |n| format!("; against: {}", said(n)));
    format!(
        "trivial call: system calls per {what} by the server's threads {}{against}",
        said(ours)
    )
}
