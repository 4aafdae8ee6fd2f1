//! `cargo bench -p agentty-sandbox --bench confine`: the cost of confinement per spawn, measured
//! inside the child around `apply_in_child`, and the whole spawn+wait of `/bin/true` with and
//! without it, in the same run. Prints figures and a ratio; asserts nothing (timings belong to the
//! machine, not the code).

#![allow(clippy::unwrap_used, clippy::expect_used)] // benches may panic

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use agentty_sandbox::{HostContext, Mode, Plan, Policy};

const RUNS: usize = 30;

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe and writes only to `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn apply_in_child_cost(p: &std::sync::Arc<agentty_sandbox::Prepared>) {
    let mut inside = Vec::new();
    let (mut with, mut forked, mut spawned) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let (rd, wr) = (fds[0], fds[1]);
        let p2 = std::sync::Arc::clone(p);
        let mut cmd = Command::new("/bin/true");
        // SAFETY: only clock_gettime, the sandbox syscalls and write(2).
        unsafe {
            cmd.pre_exec(move || {
                let t0 = now_ns();
                p2.apply_in_child()?;
                let dt = now_ns() - t0;
                libc::write(wr, (&raw const dt).cast(), 8);
                Ok(())
            })
        };
        let t = Instant::now();
        cmd.status().unwrap();
        with.push(t.elapsed());
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into buf.
        unsafe {
            libc::close(wr);
            assert_eq!(libc::read(rd, buf.as_mut_ptr().cast(), 8), 8);
            libc::close(rd);
        }
        inside.push(Duration::from_nanos(u64::from_ne_bytes(buf)));
        // A no-op pre_exec makes std fork instead of posix_spawn, as any real spawner with
        // setsid/process_group does; that is the fair baseline for the sandbox's cost.
        let mut noop = Command::new("/bin/true");
        // SAFETY: the closure does nothing.
        unsafe { noop.pre_exec(|| Ok(())) };
        let t = Instant::now();
        noop.status().unwrap();
        forked.push(t.elapsed());
        let t = Instant::now();
        Command::new("/bin/true").status().unwrap();
        spawned.push(t.elapsed());
    }
    let (inside, with, forked, spawned) = (
        median(inside),
        median(with),
        median(forked),
        median(spawned),
    );
    println!(
        "apply_in_child median {inside:?}; spawn+wait /bin/true (medians of {RUNS}): \
         {with:?} confined, {forked:?} fork without sandbox, {spawned:?} posix_spawn"
    );
    println!(
        "confined/forked {:.2}x (target <= 1.15x)",
        with.as_secs_f64() / forked.as_secs_f64()
    );
}

fn prepare_once_cost(plan: &agentty_sandbox::Plan, ws: std::path::PathBuf) {
    let t = Instant::now();
    let _p = plan.prepare().unwrap();
    let prep = t.elapsed();
    let t = Instant::now();
    let _plan = agentty_sandbox::Plan::new(&agentty_sandbox::Policy::new(Mode::Default, vec![ws]));
    println!("Plan::new (real env) {:?}; prepare {prep:?}", t.elapsed());
}

fn main() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().canonicalize().unwrap();
    let (ws, home, tmp) = (root.join("ws"), root.join("home"), root.join("tmp"));
    for d in [&ws, &home, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    let ctx = HostContext {
        home: Some(home),
        temp_dirs: vec![tmp],
        vars: vec![],
        installed: vec![],
    };
    let plan = Plan::with_context(&Policy::new(Mode::Default, vec![ws.clone()]), &ctx);
    let prepared = std::sync::Arc::new(plan.prepare().unwrap());
    // As the server does on each of its threads (a no-op without capabilities).
    let _ = agentty_sandbox::drop_bounding_set();
    apply_in_child_cost(&prepared);
    prepare_once_cost(&plan, ws);
}
