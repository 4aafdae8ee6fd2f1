//! `cargo bench -p agentty-sandbox --bench confine`: the cost of confinement per spawn, measured
//! inside the child around `apply_in_child`, and the whole spawn+wait of `/bin/true` with and
//! without it, in the same run; then the cost of the read rules (paths kept from reads) on a
//! trivial and a read-heavy command run as the server runs them, from launcher threads with and
//! without them, alternating; and per rule, from a home of 500 entries (each command's domain
//! gets a copy of every rule of the launcher's). Prints figures and ratios; asserts nothing
//! (timings belong to the machine, not the code).

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

/// What a child applies: all of it (`apply_in_child`), or its own part only, as a child of a
/// launcher that applied the shared part to itself once.
type Apply = fn(&agentty_sandbox::Prepared) -> std::io::Result<()>;

fn apply_in_child_cost(p: &std::sync::Arc<agentty_sandbox::Prepared>) -> Duration {
    apply_cost(
        p,
        agentty_sandbox::Prepared::apply_in_child,
        "apply_in_child",
    )
}

fn apply_cost(p: &std::sync::Arc<agentty_sandbox::Prepared>, apply: Apply, name: &str) -> Duration {
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
                apply(&p2)?;
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
        "{name} median {inside:?}; spawn+wait /bin/true (medians of {RUNS}): \
         {with:?} confined, {forked:?} fork without sandbox, {spawned:?} posix_spawn"
    );
    println!(
        "confined/forked {:.2}x (target <= 1.15x)",
        with.as_secs_f64() / forked.as_secs_f64()
    );
    inside
}

/// Paths kept from reads (agentty's state dir and `~/.ssh` in the real home): the ruleset's
/// making, its rules' count, what a command pays to apply it, the look before each call, and a
/// trivial and a read-heavy command run as the server runs them (from a launcher), against the
/// same plan without them, in the same run.
fn read_rules_cost(plain: &std::sync::Arc<agentty_sandbox::Prepared>, inside_plain: Duration) {
    let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) else {
        return;
    };
    let mut hidden = agentty_sandbox::Unreadable::default();
    hidden.hide(
        home.join(".local/state/agentty"),
        agentty_sandbox::HiddenWhy::State,
    );
    hidden.hide(home.join(".ssh"), agentty_sandbox::HiddenWhy::Configured);
    let plan = Plan::new(&Policy::new(Mode::Default, vec![std::env::temp_dir()])).hide(hidden);
    let mut made = Vec::new();
    let mut prepared = None;
    for _ in 0..RUNS {
        let t = Instant::now();
        prepared = Some(plan.prepare().unwrap());
        made.push(t.elapsed());
    }
    let prepared = std::sync::Arc::new(prepared.unwrap());
    let entries: usize = ["/", "/home"]
        .iter()
        .map(std::path::PathBuf::from)
        .chain([home.clone(), home.join(".local"), home.join(".local/state")])
        .filter_map(|d| std::fs::read_dir(d).ok())
        .map(Iterator::count)
        .sum();
    println!(
        "read rules: about {entries} (entries beside the directories above the hidden paths); \
         making the ruleset (at start, and again when one of those directories changed): \
         median {:?}",
        median(made)
    );
    let mut looks = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let _ = prepared.reads_now();
        looks.push(t.elapsed());
    }
    println!(
        "the look before each call (reads_now, unchanged): median {:?}",
        median(looks)
    );
    let inside = apply_in_child_cost(&prepared);
    let own = apply_cost(&prepared, agentty_sandbox::Prepared::apply_own, "apply_own");
    println!(
        "applying in the child: {inside:?} all of it with read rules, {inside_plain:?} without; \
         {own:?} its own part (a launcher's child: the launcher applied the reads once)"
    );
    // As the server runs them: a launcher thread applied the shared part (the reads' layer
    // with it) once, and each child applies its own part. A trivial command, and a read-heavy
    // one (every file opened for reading walks up its path to the nearest rule: thousands of
    // them, deep in `/usr`), alternating which launcher goes first, in the same run.
    let (plain_launcher, rules_launcher) = (launcher(plain), launcher(&prepared));
    let trivial = ["/bin/true".to_owned()];
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..TRIVIAL_RUNS {
        if round % 2 == 0 {
            without.push(run_on(&plain_launcher, &trivial));
            with.push(run_on(&rules_launcher, &trivial));
        } else {
            with.push(run_on(&rules_launcher, &trivial));
            without.push(run_on(&plain_launcher, &trivial));
        }
    }
    let (with, without) = (median(with), median(without));
    println!(
        "trivial command (/bin/true from a launcher, medians of {TRIVIAL_RUNS}): {with:?} with \
         read rules, {without:?} without ({:.3}x)",
        with.as_secs_f64() / without.as_secs_f64()
    );
    let list = "find /usr/include /usr/lib/python3* -type f \\( -name '*.h' -o -name '*.py' \\) \
                2>/dev/null";
    let script = format!("{list} | xargs cat >/dev/null 2>&1; true");
    let files = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("{list} | wc -l")])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let heavy = ["/bin/sh".to_owned(), "-c".to_owned(), script];
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..HEAVY_RUNS {
        if round % 2 == 0 {
            without.push(run_on(&plain_launcher, &heavy));
            with.push(run_on(&rules_launcher, &heavy));
        } else {
            with.push(run_on(&rules_launcher, &heavy));
            without.push(run_on(&plain_launcher, &heavy));
        }
    }
    let (with, without) = (median(with), median(without));
    println!(
        "find and cat of {files} files (from a launcher, medians of {HEAVY_RUNS}): {with:?} with \
         read rules, {without:?} without ({:.3}x)",
        with.as_secs_f64() / without.as_secs_f64()
    );
}

/// Rounds of the trivial command, and of the read-heavy one, per launcher.
const TRIVIAL_RUNS: usize = 200;
const HEAVY_RUNS: usize = 10;

/// What a launcher is asked: an argv, and where to send the spawn+wait time.
type Ask = (Vec<String>, std::sync::mpsc::Sender<Duration>);

/// A thread confined as the server's launchers are (`apply_shared` once: the reads' layer,
/// seccomp, capabilities) that runs each argv it is sent, the child applying its own part only
/// (`apply_own`), and answers with the time from spawn to exit.
fn launcher(p: &std::sync::Arc<agentty_sandbox::Prepared>) -> std::sync::mpsc::Sender<Ask> {
    let (tx, rx) = std::sync::mpsc::channel::<Ask>();
    let p = std::sync::Arc::clone(p);
    std::thread::spawn(move || {
        p.apply_shared().unwrap();
        for (argv, answer) in rx {
            let p2 = std::sync::Arc::clone(&p);
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..]);
            // SAFETY: only the sandbox's syscalls on prepared data.
            unsafe { cmd.pre_exec(move || p2.apply_own()) };
            let t = Instant::now();
            assert!(cmd.status().unwrap().success(), "{argv:?}");
            let _ = answer.send(t.elapsed());
        }
    });
    tx
}

fn run_on(launcher: &std::sync::mpsc::Sender<Ask>, argv: &[String]) -> Duration {
    let (tx, rx) = std::sync::mpsc::channel();
    launcher.send((argv.to_vec(), tx)).unwrap();
    rx.recv().unwrap()
}

fn prepare_once_cost(plan: &agentty_sandbox::Plan, ws: std::path::PathBuf) {
    let t = Instant::now();
    let _p = plan.prepare().unwrap();
    let prep = t.elapsed();
    let t = Instant::now();
    let _plan = agentty_sandbox::Plan::new(&agentty_sandbox::Policy::new(Mode::Default, vec![ws]));
    println!("Plan::new (real env) {:?}; prepare {prep:?}", t.elapsed());
}

/// The same for a home of 500 entries (rules grow with the entries beside the hidden paths).
fn crowded_home_cost(
    ctx: &HostContext,
    ws: &std::path::Path,
    plain: &std::sync::Arc<agentty_sandbox::Prepared>,
    inside_plain: Duration,
) {
    const ENTRIES: usize = 500;
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    for i in 0..ENTRIES {
        std::fs::write(home.join(format!(".dotfile-{i}")), "x").unwrap();
    }
    let mut hidden = agentty_sandbox::Unreadable::default();
    hidden.hide(home.join(".ssh"), agentty_sandbox::HiddenWhy::Configured);
    let plan =
        Plan::with_context(&Policy::new(Mode::Default, vec![ws.to_path_buf()]), ctx).hide(hidden);
    let mut made = Vec::new();
    let mut prepared = None;
    for _ in 0..RUNS {
        let t = Instant::now();
        prepared = Some(plan.prepare().unwrap());
        made.push(t.elapsed());
    }
    println!(
        "a home of {ENTRIES} entries: making the ruleset median {:?}",
        median(made)
    );
    let prepared = std::sync::Arc::new(prepared.unwrap());
    let inside = apply_in_child_cost(&prepared);
    let own = apply_cost(&prepared, agentty_sandbox::Prepared::apply_own, "apply_own");
    println!(
        "applying in the child: {inside:?} all of it with read rules, {inside_plain:?} without; \
         {own:?} its own part (a launcher's child)"
    );
    // From launchers, as the server runs them: each child's own domain is made on top of the
    // launcher's reads layer, and the kernel copies every rule of it into the child's domain
    // (and frees them when the child ends), so a command pays per rule.
    let (plain_launcher, rules_launcher) = (launcher(plain), launcher(&prepared));
    let trivial = ["/bin/true".to_owned()];
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..TRIVIAL_RUNS {
        if round % 2 == 0 {
            without.push(run_on(&plain_launcher, &trivial));
            with.push(run_on(&rules_launcher, &trivial));
        } else {
            with.push(run_on(&rules_launcher, &trivial));
            without.push(run_on(&plain_launcher, &trivial));
        }
    }
    let (with, without) = (median(with), median(without));
    // The rules: the entries beside every directory above `.ssh` (the temp dir's too).
    let rules: usize = home
        .join(".ssh")
        .ancestors()
        .skip(1)
        .filter_map(|d| std::fs::read_dir(d).ok())
        .map(Iterator::count)
        .sum();
    println!(
        "a home of {ENTRIES} entries ({rules} read rules): trivial command from a launcher \
         (medians of {TRIVIAL_RUNS}): {with:?} with them, {without:?} without ({:.3}x, about \
         {:.2} µs a rule)",
        with.as_secs_f64() / without.as_secs_f64(),
        (with.as_secs_f64() - without.as_secs_f64()) * 1e6 / rules as f64
    );
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
    let inside_plain = apply_in_child_cost(&prepared);
    prepare_once_cost(&plan, ws.clone());
    read_rules_cost(&prepared, inside_plain);
    crowded_home_cost(&ctx, &ws, &prepared, inside_plain);
}
