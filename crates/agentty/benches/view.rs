//! `cargo bench -p agentty --bench view`: what watching costs the agent (issue 12's targets in
//! brackets), with no viewer and with 10 viewers attached, measured in the same run.
//!
//! A viewer is what an open page holds: the state stream (`/view/events`) and the stream of the
//! job it shows (`/view/stream`), read as fast as they come, over hyper's own client.
//!
//! 1. A trivial `terminal({argv:["true"]})`, in blocks alternating without and with 10 viewers
//!    watching a job that prints a line every 10 ms [≤ 5% slower with viewers]; then the same
//!    beside a job flooding its output (`yes`) [≤ 5%].
//! 2. A background job printing 100 MB, from start to end, without and with 10 viewers watching
//!    it, alternating [≤ 5% slower]; the server's RSS high-water mark after it with viewers
//!    [bounded; reported].
//!
//! Prints figures; asserts only that the calls succeed and the viewers received events.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use common::http::{Session, start_http_of};
use common::{cpu_time, median, micros, serving_pid, status_kib};

const VIEWERS: usize = 10;
const BLOCKS: usize = 8;
const CALLS_PER_BLOCK: usize = 60;
const FLOODS: usize = 8;
const FLOOD: &str = "yes 'agentty benchmark: a line of build output' | head -c 100000000";

/// A GET of `path` on a connection of its own, with the view's key when given.
async fn get(
    addr: &str,
    path: &str,
    view_key: Option<&str>,
) -> hyper::Response<hyper::body::Incoming> {
    let mut request = hyper::Request::get(path).header("host", addr);
    if let Some(view_key) = view_key {
        request = request.header("x-agentty-view", view_key);
    }
    send(addr, request.body(Full::new(Bytes::new())).unwrap()).await
}

/// Sends `request` on a connection of its own.
async fn send(
    addr: &str,
    request: hyper::Request<Full<Bytes>>,
) -> hyper::Response<hyper::body::Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    sender.send_request(request).await.unwrap()
}

/// Opens a GET event stream with the view's key and reads it until aborted, counting bytes.
async fn watch(addr: &str, view_key: &str, path: &str, got: Arc<AtomicU64>) {
    let response = get(addr, path, Some(view_key)).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            got.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
    }
}

/// The first `state` event of `/view/events`.
async fn state(addr: &str, view_key: &str) -> Value {
    let mut body = get(addr, "/view/events", Some(view_key)).await.into_body();
    let mut text = String::new();
    while let Some(Ok(frame)) = body.frame().await {
        text.push_str(&String::from_utf8_lossy(frame.data_ref().unwrap()));
        // A whole event only: a state with many calls comes in several frames.
        let Some(end) = text.find("\n\n") else {
            continue;
        };
        if let Some(line) = text[..end].lines().find(|l| l.starts_with("data: ")) {
            return serde_json::from_str(&line[6..]).unwrap();
        }
    }
    panic!("no state event")
}

/// The view's key, from a login with `token`.
async fn log_in(addr: &str, token: &str) -> String {
    let login = hyper::Request::post("/view/login")
        .header("host", addr)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            json!({ "token": token }).to_string(),
        )))
        .unwrap();
    let body = send(addr, login).await.into_body().collect().await.unwrap();
    let answer: Value = serde_json::from_slice(&body.to_bytes()).unwrap();
    answer["key"].as_str().unwrap().to_owned()
}

/// 10 viewers of job `id`: each the state stream and the job's stream.
fn attach(
    addr: &str,
    view_key: &str,
    key: &str,
    id: &str,
    got: &Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut viewers = Vec::new();
    for _ in 0..VIEWERS {
        for path in [
            "/view/events".to_owned(),
            format!("/view/stream?session={key}&id={id}"),
        ] {
            let (addr, view_key, got) = (addr.to_owned(), view_key.to_owned(), got.clone());
            viewers.push(tokio::spawn(async move {
                watch(&addr, &view_key, &path, got).await;
            }));
        }
    }
    viewers
}

fn job_id(body: &str) -> String {
    let at = body.find("\"job_id\":\"").unwrap() + 10;
    body[at..at + body[at..].find('"').unwrap()].to_owned()
}

async fn session_of(addr: &str, view_key: &str, id: &str) -> String {
    let state = state(addr, view_key).await;
    state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["jobs"].as_array().unwrap().iter().any(|j| j["id"] == id))
        .map(|s| s["key"].as_str().unwrap().to_owned())
        .unwrap()
}

/// Where the viewers look, and the server whose CPU time is counted.
struct Watch<'a> {
    addr: &'a str,
    view_key: &'a str,
    got: &'a Arc<AtomicU64>,
    server_pid: u32,
}

/// Trivial calls in blocks alternating without and with 10 viewers of a job running `command`;
/// prints the medians and their ratio, and the server's CPU time per second of each kind of
/// block (the job's output included: what the viewers add to it is their cost).
async fn trivial_beside(agent: &mut Session, watch: &Watch<'_>, command: &str, what: &str) {
    let (addr, view_key, got) = (watch.addr, watch.view_key, watch.got);
    let job = job_id(
        &agent
            .call("terminal", json!({"command": command, "background": true}))
            .await,
    );
    let key = session_of(addr, view_key, &job).await;
    for _ in 0..20 {
        agent.trivial().await;
    }
    let (mut alone, mut watched) = (Vec::new(), Vec::new());
    // (server CPU time, wall time) of the blocks without and with viewers.
    let mut busy = [(Duration::ZERO, Duration::ZERO); 2];
    for block in 0..BLOCKS * 2 {
        let viewers = (block % 2 == 1).then(|| attach(addr, view_key, &key, &job, got));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (cpu, wall) = (cpu_time(watch.server_pid), Instant::now());
        for _ in 0..CALLS_PER_BLOCK {
            let t = Instant::now();
            agent.trivial().await;
            if viewers.is_some() {
                &mut watched
            } else {
                &mut alone
            }
            .push(t.elapsed());
        }
        let spent = &mut busy[block % 2];
        spent.0 += cpu_time(watch.server_pid).saturating_sub(cpu);
        spent.1 += wall.elapsed();
        viewers.into_iter().flatten().for_each(|v| v.abort());
    }
    let (alone, watched) = (median(alone), median(watched));
    let load = |(cpu, wall): (Duration, Duration)| cpu.as_secs_f64() / wall.as_secs_f64();
    println!(
        "trivial call beside {what}: {:.0} µs without viewers, {:.0} µs with {VIEWERS} ({:.3}x, target <= 1.05x); \
         server CPU {:.2} s/s without, {:.2} s/s with",
        micros(alone),
        micros(watched),
        micros(watched) / micros(alone),
        load(busy[0]),
        load(busy[1]),
    );
    agent.call("task_stop", json!({"id": job})).await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (workspace, state_dir) = (tempfile::tempdir().unwrap(), agentty_testkit::state_dir());
    // Another build of agentty to measure with this same bench (the one before a change).
    let binary = std::env::var_os("AGENTTY_BENCH_SERVER").map_or_else(
        || env!("CARGO_BIN_EXE_agentty").into(),
        std::path::PathBuf::from,
    );
    println!("server: {}", binary.display());
    let (mut server, addr, token) = start_http_of(&binary, workspace.path(), state_dir.path());
    let server_pid = serving_pid(server.id());
    let view_key = log_in(&addr, &token).await;
    let mut agent = Session::connect(&addr, &token).await;
    let got = Arc::new(AtomicU64::new(0));

    // 1. Trivial calls, blocks without and with viewers of a job printing every 10 ms.
    let ticking = "while :; do echo tick; sleep 0.01; done";
    let watch = Watch {
        addr: &addr,
        view_key: &view_key,
        got: &got,
        server_pid,
    };
    trivial_beside(&mut agent, &watch, ticking, "a job printing every 10 ms").await;
    // 3. The same beside a job flooding its output (what a busy session's viewer watches).
    let flooding = "yes 'agentty benchmark: a line of build output'";
    trivial_beside(&mut agent, &watch, flooding, "a flooding job").await;

    // 2. A 100 MB flood in the background, without and with viewers of it.
    let (mut alone, mut watched) = (Vec::new(), Vec::new());
    let (mut cpu_alone, mut cpu_watched) = (Vec::new(), Vec::new());
    for run in 0..FLOODS * 2 {
        let with = run % 2 == 1;
        let cpu = cpu_time(server_pid);
        let t = Instant::now();
        let id = job_id(
            &agent
                .call("terminal", json!({"command": FLOOD, "background": true}))
                .await,
        );
        let viewers = if with {
            let key = session_of(&addr, &view_key, &id).await;
            attach(&addr, &view_key, &key, &id, &got)
        } else {
            Vec::new()
        };
        loop {
            let body = agent
                .call("task_wait", json!({"id": id, "timeout_ms": 60000}))
                .await;
            if body.contains("\"ended\":true") {
                break;
            }
        }
        if with { &mut watched } else { &mut alone }.push(t.elapsed());
        let cpu = cpu_time(server_pid).saturating_sub(cpu);
        if with {
            &mut cpu_watched
        } else {
            &mut cpu_alone
        }
        .push(cpu);
        viewers.into_iter().for_each(|v| v.abort());
    }
    let (alone, watched) = (median(alone), median(watched));
    let (cpu_alone, cpu_watched) = (median(cpu_alone), median(cpu_watched));
    println!(
        "100 MB flood in a job: {:.0} ms without viewers, {:.0} ms with {VIEWERS} ({:.3}x, target <= 1.05x); \
         server CPU {:.0} ms without, {:.0} ms with ({:.3}x)",
        micros(alone) / 1e3,
        micros(watched) / 1e3,
        micros(watched) / micros(alone),
        micros(cpu_alone) / 1e3,
        micros(cpu_watched) / 1e3,
        micros(cpu_watched) / micros(cpu_alone)
    );
    println!(
        "server RSS high-water mark after the floods with {VIEWERS} viewers: {:.1} MiB; viewers received {:.1} MiB",
        status_kib(server_pid, "VmHWM") as f64 / 1024.0,
        got.load(Ordering::Relaxed) as f64 / (1024.0 * 1024.0)
    );
    assert!(
        got.load(Ordering::Relaxed) > 0,
        "the viewers received nothing"
    );
    let _ = server.kill();
    let _ = server.wait();
}
