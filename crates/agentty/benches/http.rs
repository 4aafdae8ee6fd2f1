//! `cargo bench -p agentty --bench http`: `serve --http` against stdio and a raw spawn, in the
//! same run (issue 11's targets in brackets).
//!
//! 1. A trivial `terminal({argv:["true"]})` over HTTP vs over stdio vs a raw spawn+wait of
//!    `true`, interleaved [HTTP ≤ 1.5× raw].
//! 2. 16 concurrent sessions making 200 trivial calls each, vs 16 parallel loops of 200 raw
//!    spawns [no error; throughput ≥ 0.8× of the raw loops].
//! 3. The server's RSS with 64 idle sessions open [≤ 64 MB].
//! 4. 1000 requests without the token: all 401, and no process started.
//!
//! The HTTP client is hyper's own (HTTP/1.1, one keep-alive connection per session), so what
//! is measured is the server, not a heavy client. Prints figures; asserts only what is not a
//! timing (statuses, no error).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::json;

use common::http::{Session, raw_true, start_http};
use common::{median, micros, serving_pid, status_kib};

const CALLS: usize = 300;
const WARMUP: usize = 30;
const SESSIONS: usize = 16;
const CALLS_PER_SESSION: usize = 200;
const IDLE_SESSIONS: usize = 64;
const UNAUTHORIZED: usize = 1000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let workspace = tempfile::tempdir().unwrap();
    let (state_http, state_stdio) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut server, addr, token) = start_http(workspace.path(), state_http.path());
    let server_pid = serving_pid(server.id());
    let (stdio, _) = common::start(workspace.path(), state_stdio.path(), &[]).await;

    // 1. One call, three ways, interleaved with rotating order.
    let mut http = Session::connect(&addr, &token).await;
    for _ in 0..WARMUP {
        http.trivial().await;
        common::call(&stdio, "terminal", json!({"argv": ["true"]})).await;
        raw_true();
    }
    let (mut over_http, mut over_stdio, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..CALLS {
        for slot in 0..3 {
            let t = Instant::now();
            match (round + slot) % 3 {
                0 => {
                    http.trivial().await;
                    over_http.push(t.elapsed());
                }
                1 => {
                    common::call(&stdio, "terminal", json!({"argv": ["true"]})).await;
                    over_stdio.push(t.elapsed());
                }
                _ => {
                    raw_true();
                    raw.push(t.elapsed());
                }
            }
        }
    }
    let (over_http, over_stdio, raw) = (median(over_http), median(over_stdio), median(raw));
    println!(
        "trivial call: raw spawn {:.0} µs, stdio {:.0} µs ({:.2}x), HTTP {:.0} µs ({:.2}x raw, target <= 1.5x)",
        micros(raw),
        micros(over_stdio),
        micros(over_stdio) / micros(raw),
        micros(over_http),
        micros(over_http) / micros(raw)
    );

    // 2. 16 sessions at once vs 16 raw loops at once. Where the CPU goes, per call: this
    // process (the clients, or the raw loops' spawning), the server, and the rest of the machine
    // (the commands themselves, the kernel, the server's PID-namespace init).
    let me = std::process::id();
    let (busy_before, me_before) = (common::machine_busy(), common::cpu_time(me));
    let t = Instant::now();
    let loops: Vec<_> = (0..SESSIONS)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..CALLS_PER_SESSION {
                    raw_true();
                }
            })
        })
        .collect();
    loops.into_iter().for_each(|l| l.join().unwrap());
    let raw_total = t.elapsed();
    let raw_cpu = (
        common::cpu_time(me) - me_before,
        common::machine_busy() - busy_before,
    );
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(Session::connect(&addr, &token).await);
    }
    let (busy_before, me_before, server_before) = (
        common::machine_busy(),
        common::cpu_time(me),
        common::cpu_time(server_pid),
    );
    let t = Instant::now();
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                for _ in 0..CALLS_PER_SESSION {
                    s.trivial().await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a session's calls all succeeded");
    }
    let http_total = t.elapsed();
    let (http_me, http_server, http_busy) = (
        common::cpu_time(me) - me_before,
        common::cpu_time(server_pid) - server_before,
        common::machine_busy() - busy_before,
    );
    let calls = (SESSIONS * CALLS_PER_SESSION) as f64;
    println!(
        "{SESSIONS} sessions x {CALLS_PER_SESSION} calls: {:.0} calls/s over HTTP, {:.0} raw spawns/s; ratio {:.2}x (target >= 0.8x), no error",
        calls / http_total.as_secs_f64(),
        calls / raw_total.as_secs_f64(),
        raw_total.as_secs_f64() / http_total.as_secs_f64()
    );
    let per_call = |d: Duration| micros(d) / calls;
    println!(
        "CPU per call: raw loops {:.0} µs (spawning {:.0}, the rest {:.0}); over HTTP {:.0} µs (clients {:.0}, server {:.0}, the rest {:.0})",
        per_call(raw_cpu.1),
        per_call(raw_cpu.0),
        per_call(raw_cpu.1.saturating_sub(raw_cpu.0)),
        per_call(http_busy),
        per_call(http_me),
        per_call(http_server),
        per_call(http_busy.saturating_sub(http_me + http_server)),
    );

    // 3. RSS with 64 idle sessions.
    let mut idle = Vec::new();
    for _ in 0..IDLE_SESSIONS {
        idle.push(Session::connect(&addr, &token).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!(
        "RSS with {IDLE_SESSIONS} idle sessions open (and {SESSIONS} used ones): {:.1} MiB (target <= 64 MB)",
        status_kib(server_pid, "VmRSS") as f64 / 1024.0
    );

    // 4. Unauthenticated requests: refused, nothing started.
    let children_before = agentty_testkit::children(server_pid as i32).len();
    let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let t = Instant::now();
    let mut refused = 0;
    for _ in 0..UNAUTHORIZED {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "terminal", "arguments": {"argv": ["true"]}}});
        let request = hyper::Request::post("/mcp")
            .header("host", &addr)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(call.to_string())))
            .unwrap();
        send.ready().await.unwrap();
        let response = send.send_request(request).await.unwrap();
        refused += usize::from(response.status() == 401);
        let _ = response.into_body().collect().await;
    }
    let children_after = agentty_testkit::children(server_pid as i32).len();
    println!(
        "{UNAUTHORIZED} requests without the token: {refused} answered 401 in {:.0} ms; server children {children_before} before, {children_after} after",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(refused, UNAUTHORIZED);
    drop(idle);
    let _ = server.kill();
    let _ = server.wait();
}
