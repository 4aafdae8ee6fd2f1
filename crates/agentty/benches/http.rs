//! `cargo bench -p agentty --bench http`: `serve --http` against stdio and a raw spawn, in the
//! same run (issue 11's targets in brackets).
//!
//! 1. A trivial `terminal({argv:["true"]})` over HTTP vs over stdio vs a raw spawn+wait of
//!    `true`, interleaved [HTTP ≤ 1.5× raw].
//! 2. 16 concurrent sessions making 200 trivial calls each, vs 16 parallel loops of 200 raw
//!    spawns [no error; throughput ≥ 0.8× of the raw loops], in rounds that take turns.
//!
//! Both also measure a floor in the same run: a bare HTTP server that spawns `true` per
//! request (`common::http::floor`), what any server of commands over HTTP pays on this machine
//! before MCP, the sandbox and the capture. Each line says how much of the host's CPU time the
//! host took for others meanwhile (steal, on a VM): a run with high steal is a noisy run.
//!
//! Section 1 also counts the system calls the server's own threads make per trivial call
//! (`perf stat`, where it may trace).
//! 3. The server's RSS with 64 idle sessions open [≤ 64 MB].
//! 4. 1000 requests without the token: all 401, and no process started.
//!
//! `AGENTTY_BENCH_AGAINST=<another agentty binary>` also serves that build and measures it in
//! sections 1 and 2 beside this one (same run, same rounds): an A/B of a change.
//!
//! The HTTP figure the targets are read against comes from a client written for the bench: one
//! keep-alive HTTP/1.1 connection per session on a blocking socket, so each call is a write and
//! reads on the calling thread, as the raw spawn runs on the calling thread. hyper's client,
//! printed beside it, runs its connection as a task of its own, and that hand-off each way is
//! the client's cost, not the server's. Prints figures; asserts only what is not a timing
//! (statuses, no error).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::json;

use common::http::{Blocking, Session, raw_true, start_http, start_http_of};
use common::{median, micros, serving_pid, status_kib};

const CALLS: usize = 300;
const WARMUP: usize = 30;
const SESSIONS: usize = 16;
const CALLS_PER_SESSION: usize = 200;
/// Section 2's loads take turns in this many rounds.
const ROUNDS: usize = 4;
const IDLE_SESSIONS: usize = 64;
const UNAUTHORIZED: usize = 1000;

/// The system calls the server at `pid` makes per trivial call of `client`.
async fn syscalls_per_call(client: &mut Blocking, pid: u32) -> Option<f64> {
    let calls = async {
        for _ in 0..CALLS {
            client.trivial();
        }
    };
    common::syscalls::per_call(pid, CALLS, calls).await.1
}

fn main() {
    common::http::floor::serve_if_asked();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

async fn bench() {
    let workspace = tempfile::tempdir().unwrap();
    let (state_http, state_stdio) = (agentty_testkit::state_dir(), agentty_testkit::state_dir());
    let (mut server, addr, token) = start_http(workspace.path(), state_http.path());
    let server_pid = serving_pid(server.id());
    let (stdio, _) = common::start(workspace.path(), state_stdio.path(), &[]).await;

    let (mut floor_server, floor_addr) = common::http::floor::start();
    let state_against = agentty_testkit::state_dir();
    let against = std::env::var_os("AGENTTY_BENCH_AGAINST").map(|binary| {
        let (server, addr, token) =
            start_http_of(binary.as_ref(), workspace.path(), state_against.path());
        let pid = serving_pid(server.id());
        (binary, server, addr, token, pid)
    });

    // 1. One call, five ways, interleaved with rotating order. The blocking client is the
    // measure of the server (nothing of the client's own between request and answer, like the
    // raw spawn on the calling thread); hyper's client adds its connection task's hand-offs.
    // The floor: a bare HTTP server that spawns `true` per request (`common::http::floor`).
    let mut http = Session::connect(&addr, &token).await;
    let mut blocking = Blocking::connect(&addr, &token);
    let mut floor = Blocking::open(&floor_addr, "");
    let mut other = against
        .as_ref()
        .map(|(_, _, addr, token, _)| Blocking::connect(addr, token));
    for _ in 0..WARMUP {
        http.trivial().await;
        blocking.trivial();
        floor.floor_call();
        common::call(&stdio, "terminal", json!({"argv": ["true"]})).await;
        raw_true();
        other.iter_mut().for_each(Blocking::trivial);
    }
    let steal_before = (common::machine_steal(), Instant::now());
    let ways = 5 + usize::from(other.is_some());
    let mut samples = vec![Vec::new(); ways];
    for round in 0..CALLS {
        for slot in 0..ways {
            let way = (round + slot) % ways;
            let t = Instant::now();
            match way {
                0 => blocking.trivial(),
                1 => http.trivial().await,
                2 => {
                    common::call(&stdio, "terminal", json!({"argv": ["true"]})).await;
                }
                3 => floor.floor_call(),
                4 => raw_true(),
                _ => other.iter_mut().for_each(Blocking::trivial),
            }
            samples[way].push(t.elapsed());
        }
    }
    let medians: Vec<f64> = samples.into_iter().map(|s| micros(median(s))).collect();
    let steal = steal_share(
        common::machine_steal() - steal_before.0,
        steal_before.1.elapsed(),
    );
    let [over_blocking, over_hyper, over_stdio, over_floor, raw] = medians[..5] else {
        unreachable!("five ways at least")
    };
    println!(
        "trivial call: raw spawn {raw:.0} µs; HTTP {over_blocking:.0} µs ({:.2}x raw, target <= 1.25x; \
         {:.2}x the floor); the floor (bare HTTP server + spawn) {over_floor:.0} µs ({:.2}x raw); \
         HTTP with hyper's client {over_hyper:.0} µs ({:.2}x raw); stdio with rmcp's client \
         {over_stdio:.0} µs ({:.2}x raw); host steal {steal:.0}% of the CPUs",
        over_blocking / raw,
        over_blocking / over_floor,
        over_floor / raw,
        over_hyper / raw,
        over_stdio / raw,
    );
    if let (Some((binary, ..)), Some(theirs)) = (&against, medians.get(5)) {
        println!(
            "against {}: HTTP {theirs:.0} µs ({:.2}x raw); this build {:.2}x of it",
            binary.display(),
            theirs / raw,
            over_blocking / theirs,
        );
    }

    // The server's own system calls per trivial HTTP call (the command's are not counted).
    let ours = syscalls_per_call(&mut blocking, server_pid).await;
    let theirs = match (&mut other, &against) {
        (Some(other), Some((.., pid))) => Some(syscalls_per_call(other, *pid).await),
        _ => None,
    };
    println!("{}", common::syscalls::line("HTTP call", ours, theirs));

    // 2. 16 sessions at once vs 16 raw loops at once. Where the CPU goes, per call: this
    // process (the clients, or the raw loops' spawning), the server, and the rest of the machine
    // (the commands themselves, the kernel, the server's PID-namespace init).
    // The three loads take turns in rounds, so a stretch of a busy host (steal time on a VM)
    // falls on all of them alike.
    let load = Load {
        me: std::process::id(),
        server: server_pid,
    };
    let mut blocking: Vec<_> = (0..SESSIONS)
        .map(|_| Blocking::connect(&addr, &token))
        .collect();
    let mut floors: Vec<_> = (0..SESSIONS)
        .map(|_| Blocking::open(&floor_addr, ""))
        .collect();
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(Session::connect(&addr, &token).await);
    }
    let mut others: Vec<_> = against
        .iter()
        .flat_map(|(_, _, addr, token, _)| (0..SESSIONS).map(|_| Blocking::connect(addr, token)))
        .collect();
    let other_load = against.as_ref().map(|(.., pid)| Load {
        me: std::process::id(),
        server: *pid,
    });
    let mut other_run = Run::default();
    let handle = tokio::runtime::Handle::current();
    let per_round = CALLS_PER_SESSION / ROUNDS;
    let (mut raw_run, mut blocking_run, mut hyper_run, mut floor_run) = (
        Run::default(),
        Run::default(),
        Run::default(),
        Run::default(),
    );
    // Each round's own ratio (HTTP calls/s over raw spawns/s, both of that round): how far the
    // host moved the figure during this run.
    let mut round_ratios = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let (raw_before, blocking_before) = (raw_run.wall, blocking_run.wall);
        let raw_loops = || {
            load.measure(|| {
                let loops: Vec<_> = (0..SESSIONS)
                    .map(|_| std::thread::spawn(move || (0..per_round).for_each(|_| raw_true())))
                    .collect();
                loops.into_iter().for_each(|l| l.join().unwrap());
            })
        };
        let mut http_calls = || {
            load.measure(|| {
                std::thread::scope(|scope| {
                    for session in &mut blocking {
                        scope.spawn(|| (0..per_round).for_each(|_| session.trivial()));
                    }
                });
            })
        };
        // The two take turns going first: whichever runs second may find the host in another
        // state (in A/B runs of two servers, the second read 2-4% faster).
        if round % 2 == 0 {
            raw_run += raw_loops();
            blocking_run += http_calls();
        } else {
            blocking_run += http_calls();
            raw_run += raw_loops();
        }
        round_ratios.push(
            (raw_run.wall - raw_before).as_secs_f64()
                / (blocking_run.wall - blocking_before).as_secs_f64(),
        );
        if let Some(other_load) = &other_load {
            other_run += other_load.measure(|| {
                std::thread::scope(|scope| {
                    for session in &mut others {
                        scope.spawn(|| (0..per_round).for_each(|_| session.trivial()));
                    }
                });
            });
        }
        floor_run += load.measure(|| {
            std::thread::scope(|scope| {
                for floor in &mut floors {
                    scope.spawn(|| (0..per_round).for_each(|_| floor.floor_call()));
                }
            });
        });
        hyper_run += load.measure(|| {
            tokio::task::block_in_place(|| {
                handle.block_on(async {
                    let tasks: Vec<_> = std::mem::take(&mut sessions)
                        .into_iter()
                        .map(|mut s| {
                            tokio::spawn(async move {
                                for _ in 0..per_round {
                                    s.trivial().await;
                                }
                                s
                            })
                        })
                        .collect();
                    for task in tasks {
                        sessions.push(task.await.expect("a session's calls all succeeded"));
                    }
                });
            });
        });
    }
    let calls = (SESSIONS * CALLS_PER_SESSION) as f64;
    let rate = |run: &Run| calls / run.wall.as_secs_f64();
    println!(
        "{SESSIONS} sessions x {CALLS_PER_SESSION} calls: {:.0} raw spawns/s; HTTP {:.0} calls/s, ratio {:.2}x (target >= 0.9x; \
         {:.2}x the floor's {:.0}/s, {:.2}x raw); HTTP with hyper's client {:.0} calls/s ({:.2}x); no error; host steal {:.0}% of the CPUs",
        rate(&raw_run),
        rate(&blocking_run),
        rate(&blocking_run) / rate(&raw_run),
        rate(&blocking_run) / rate(&floor_run),
        rate(&floor_run),
        rate(&floor_run) / rate(&raw_run),
        rate(&hyper_run),
        rate(&hyper_run) / rate(&raw_run),
        steal_share(
            raw_run.steal + blocking_run.steal + hyper_run.steal + floor_run.steal,
            raw_run.wall + blocking_run.wall + hyper_run.wall + floor_run.wall
        ),
    );
    round_ratios.sort_by(f64::total_cmp);
    println!(
        "  the ratio round by round ({per_round} calls per session each): {}",
        round_ratios
            .iter()
            .map(|r| format!("{r:.2}x"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let per_call = |d: Duration| micros(d) / calls;
    let split = |run: &Run| {
        format!(
            "{:.0} µs (clients {:.0}, server {:.0}, the rest {:.0})",
            per_call(run.busy),
            per_call(run.me),
            per_call(run.server),
            per_call(run.busy.saturating_sub(run.me + run.server)),
        )
    };
    println!(
        "CPU per call: raw loops {:.0} µs (spawning {:.0}, the rest {:.0}); HTTP {}; with hyper's client {}",
        per_call(raw_run.busy),
        per_call(raw_run.me),
        per_call(raw_run.busy.saturating_sub(raw_run.me)),
        split(&blocking_run),
        split(&hyper_run),
    );
    if let Some((binary, ..)) = &against {
        println!(
            "against {}: {:.0} calls/s ({:.2}x raw), CPU per call {}; this build {:.2}x of its rate",
            binary.display(),
            rate(&other_run),
            rate(&other_run) / rate(&raw_run),
            split(&other_run),
            rate(&blocking_run) / rate(&other_run),
        );
    }
    drop((blocking, floors, others));
    if let Some((_, mut server, ..)) = against {
        let _ = server.kill();
        let _ = server.wait();
    }

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
    let _ = floor_server.kill();
    let _ = floor_server.wait();
}

/// The processes whose CPU a load is split into.
struct Load {
    me: u32,
    server: u32,
}

/// What one load cost: wall time, and CPU time of the machine, this process and the server.
#[derive(Default)]
struct Run {
    wall: Duration,
    busy: Duration,
    me: Duration,
    server: Duration,
    steal: Duration,
}

impl Load {
    fn measure(&self, load: impl FnOnce()) -> Run {
        let before = (
            common::machine_busy(),
            common::cpu_time(self.me),
            common::cpu_time(self.server),
            common::machine_steal(),
        );
        let t = Instant::now();
        load();
        let wall = t.elapsed();
        Run {
            wall,
            busy: common::machine_busy() - before.0,
            me: common::cpu_time(self.me) - before.1,
            server: common::cpu_time(self.server) - before.2,
            steal: common::machine_steal() - before.3,
        }
    }
}

impl std::ops::AddAssign for Run {
    fn add_assign(&mut self, other: Run) {
        self.wall += other.wall;
        self.busy += other.busy;
        self.me += other.me;
        self.server += other.server;
        self.steal += other.steal;
    }
}

/// Steal as a share of all the machine's CPU time over `wall`, in percent.
fn steal_share(steal: Duration, wall: Duration) -> f64 {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    100.0 * steal.as_secs_f64() / (wall.as_secs_f64() * cpus)
}
