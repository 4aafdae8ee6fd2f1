//! Finding and stopping everything a command started (Linux, via `/proc`).
//!
//! A command's tree is: its process group and session (both keyed by the leader's pid, since
//! every command starts in a session of its own), every descendant by parent link, and every
//! process re-parented to the server (we are its subreaper) that carries the command's run
//! marker in its environment. The marker is what catches a descendant that escaped with `setsid`
//! or a double fork: it left the group and lost its parent, but it kept the environment.
//!
//! Stopping is SIGTERM (plus SIGCONT, so a stopped process can act on it), a grace period, then
//! SIGKILL rounds until nothing is left, re-scanning each round to catch late forks.
//!
//! What makes a stop certain: while the leader has not been reaped, the stop pins it
//! ([`crate::reaper::pin`]), so the process group numbered after it is this run's for the whole
//! stop, whatever `/proc` shows (a process in the middle of `exec` reads an empty environment,
//! so its marker cannot be seen at that instant). The marker decides only for a run whose
//! leader was already reaped. A process a stop found once stays the run's until it ends (its
//! pid and start time), whatever later scans read of its environment. And "nothing left" is
//! believed only when two scans apart agree, and not while an orphan of ours is caught
//! mid-`exec` (its marker unreadable), so such a process is seen by a later scan. Between scans
//! a stop waits for the processes it signalled to end (their pidfds), up to a poll: a tree that
//! dies at once is confirmed gone at once.

use std::collections::HashSet;
use std::fs;
use std::future::Future;
use std::io;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::time::{Instant, sleep};

use crate::spawn::marker::RUN_MARKER_VAR;

/// SIGKILL rounds before giving up on a tree (each re-scans for late forks).
const KILL_ROUNDS: usize = 50;
/// Pause between checks while waiting for a tree to die.
const POLL_MS: u64 = 10;
/// The gap between the two scans that must agree that nothing is left. A process created by a
/// member, or re-parented as one ended, is in `/proc` by the time the first scan is done; one
/// caught mid-`exec` (its marker unreadable) is waited for apart ([`orphan_mid_exec`]). The
/// gap is slack on top of that (it was a whole poll: 10 ms of every stop, a capped flood's
/// included).
const CONFIRM_MS: u64 = 2;

/// One row of `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    /// The state letter (`S`, `T`, `Z`, …).
    pub state: char,
    pub zombie: bool,
    /// When it started, in clock ticks after boot.
    pub started: Option<u64>,
}

/// The fields of `/proc/<pid>/stat` after the command's name (from the state on). The name is
/// in parentheses and may hold spaces and parentheses, and is cut at 15 bytes, maybe inside a
/// character: read as bytes, split after its last `)`; what follows is ASCII.
fn stat_after_name(pid: i32) -> Option<String> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.iter().rposition(|&b| b == b')')? + 2..)?;
    String::from_utf8(rest.to_vec()).ok()
}

/// The parent of process `pid` (from `/proc`), when it can be read.
pub fn parent_of(pid: u32) -> Option<u32> {
    let parent = read_stat(i32::try_from(pid).ok()?)?.ppid;
    u32::try_from(parent).ok()
}

pub(crate) fn read_stat(pid: i32) -> Option<ProcStat> {
    let rest = stat_after_name(pid)?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    let sid = fields.next()?.parse().ok()?;
    // Field 22 of proc(5): 15 more after the session.
    let started = fields.nth(15).and_then(|s| s.parse().ok());
    Some(ProcStat {
        pid,
        ppid,
        pgid,
        sid,
        state,
        // A leader whose own thread ended (`pthread_exit`) reads `Z` while its other threads
        // run: the process is alive.
        zombie: state == 'Z' && live_thread(pid).is_none(),
        started,
    })
}

/// A thread of `pid` other than its leader that has not ended: what keeps a process whose
/// leader thread exited alive (its `/proc/<pid>` reads as a zombie's, its environment
/// unreadable there).
fn live_thread(pid: i32) -> Option<i32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .filter_map(|task| task.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&tid| tid != pid)
        .find(|tid| {
            fs::read(format!("/proc/{pid}/task/{tid}/stat")).is_ok_and(|stat| {
                let state = stat
                    .iter()
                    .rposition(|&b| b == b')')
                    .and_then(|at| stat.get(at + 2));
                state.is_some_and(|&state| state != b'Z' && state != b'X')
            })
        })
}

pub(crate) fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// Live (non-zombie) children of `parent`, by a full `/proc` scan (unlike [`own_children`],
/// this also sees children of threads other than the main one).
pub(crate) fn live_children_of(parent: i32) -> Vec<i32> {
    all_processes()
        .into_iter()
        .filter(|p| p.ppid == parent && !p.zombie)
        .map(|p| p.pid)
        .collect()
}

fn has_marker(pid: i32, marker: &str) -> bool {
    marked(pid, marker) == Marked::Yes
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marked {
    Yes,
    No,
    /// The environment read empty: the process is in the middle of `exec` (or has none).
    Unknown,
}

fn marked(pid: i32, marker: &str) -> Marked {
    let wanted = format!("{RUN_MARKER_VAR}={marker}");
    let found = with_environ(pid, |environ| {
        if environ.is_empty() {
            Marked::Unknown
        } else if environ
            .split(|&b| b == 0)
            .any(|entry| entry == wanted.as_bytes())
        {
            Marked::Yes
        } else {
            Marked::No
        }
    });
    found.unwrap_or(Marked::No)
}

/// Most bytes of an environment read; past it the rest is not looked at (Linux caps the
/// environment and arguments together at a quarter of the stack limit, 2 MiB by default).
const ENVIRON_MAX_BYTES: usize = 4 << 20;

/// Calls `f` with the environment of `pid` (`None` when it cannot be read), read from
/// `/proc/<pid>/environ` in *one* `read`. Each read sees the process's memory of its moment: a
/// process that called `exec` between two reads would show its environment cut short, the run
/// marker missing, and an escapee caught in `exec` would be taken for someone else's.
pub(crate) fn with_environ<T>(pid: i32, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
    with_environ_up_to(pid, ENVIRON_MAX_BYTES, f)
}

/// [`with_environ`] with at most the first `most` bytes of the environment.
pub(crate) fn with_environ_up_to<T>(
    pid: i32,
    most: usize,
    f: impl FnOnce(&[u8]) -> T,
) -> Option<T> {
    use std::os::unix::fs::FileExt;
    thread_local! {
        // Allocated zeroed and untouched: only the pages an environment fills become resident.
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 256 << 10]);
    }
    // A process whose leader thread exited shows its environment through its live threads.
    let file = fs::File::open(format!("/proc/{pid}/environ"))
        .or_else(|e| match live_thread(pid) {
            Some(tid) => fs::File::open(format!("/proc/{pid}/task/{tid}/environ")),
            None => Err(e),
        })
        .ok()?;
    BUF.with_borrow_mut(|buf| {
        loop {
            let room = buf.len().min(most);
            let n = file.read_at(&mut buf[..room], 0).ok()?;
            if n < buf.len() || buf.len() >= most {
                return Some(f(&buf[..n]));
            }
            // Larger than the buffer: read it again, whole, into a larger one.
            buf.resize(buf.len() * 2, 0);
        }
    })
}

/// How long a process with an empty environment may be taken for one caught mid-`exec`.
const YOUNG: Duration = Duration::from_secs(2);

/// How long ago `pid` started (from `/proc`), when that can be read.
fn age(pid: i32) -> Option<Duration> {
    // Field 22 (starttime, clock ticks after boot); fields counted after the `)` of the name.
    let start: u64 = stat_after_name(pid)?
        .split_ascii_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let uptime: f64 = fs::read_to_string("/proc/uptime")
        .ok()?
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let started = start as f64 / f64::from(u32::try_from(ticks).ok()?.max(1));
    Some(Duration::from_secs_f64((uptime - started).max(0.0)))
}

/// Live (non-zombie) members of the tree of the run `leader`/`marker`, and whether the process
/// group `leader` is still this run's. It is for certain while the leader is `pinned` (not
/// reaped); once the leader is reaped its pid can be reused, so the group then only counts if a
/// member carries the marker.
fn members(leader: i32, marker: &str, pinned: bool) -> (Vec<i32>, bool) {
    let reapers = with_reapers(|r| r.pids.clone());
    let procs = all_processes();
    let in_group = |p: &ProcStat| p.pid == leader || p.pgid == leader || p.sid == leader;
    let group_is_ours = pinned
        || procs
            .iter()
            .any(|p| in_group(p) && has_marker(p.pid, marker));
    let mut set: HashSet<i32> = procs
        .iter()
        .filter(|p| {
            (group_is_ours && in_group(p))
                || (reapers.contains(&p.ppid) && p.pid != leader && has_marker(p.pid, marker))
        })
        .map(|p| p.pid)
        .collect();
    loop {
        let before = set.len();
        for p in &procs {
            if set.contains(&p.ppid) {
                set.insert(p.pid);
            }
        }
        if set.len() == before {
            break;
        }
    }
    let live = procs
        .iter()
        .filter(|p| !p.zombie && set.contains(&p.pid))
        .map(|p| p.pid);
    (live.collect(), group_is_ours)
}

/// Where the kernel re-parents the orphans of this server's commands: this process (a child
/// subreaper) and, for confined commands, the init of their PID namespace (the session's, and
/// over HTTP each caller's); with each one's `children` file, kept open. The list grows when a
/// caller's namespace is made, and is read again then.
struct Reapers {
    /// How many callers' namespaces were made when it was read.
    made: usize,
    pids: Vec<i32>,
    children: Vec<(i32, fs::File)>,
}

static REAPERS: RwLock<Option<Reapers>> = RwLock::new(None);

/// Calls `f` with the current [`Reapers`].
fn with_reapers<T>(f: impl FnOnce(&Reapers) -> T) -> T {
    let made = crate::namespace::inits_made();
    {
        let read = REAPERS.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(reapers) = read.as_ref().filter(|r| r.made == made) {
            return f(reapers);
        }
    }
    let mut write = REAPERS.write().unwrap_or_else(PoisonError::into_inner);
    let (inits, made) = crate::namespace::init_pids();
    let mut pids = vec![std::process::id() as i32];
    pids.extend(inits);
    let path = |pid: i32| format!("/proc/{pid}/task/{pid}/children");
    let children = pids
        .iter()
        .filter_map(|&pid| Some((pid, fs::File::open(path(pid)).ok()?)))
        .collect();
    f(write.insert(Reapers {
        made,
        pids,
        children,
    }))
}

/// Whether `pid` is one of the [`Reapers`].
fn is_reaper(pid: i32) -> bool {
    with_reapers(|r| r.pids.contains(&pid))
}

/// Children of the reapers' main threads. The kernel re-parents an orphan to the first live
/// thread of its subreaper (the main thread) or to its namespace's init, so this lists every
/// escaped descendant with small reads and no full `/proc` scan. It runs after every command,
/// so the files are kept open and read with one `pread` each (a proc file is generated afresh
/// at offset 0).
fn own_children() -> Option<Vec<i32>> {
    use std::os::unix::fs::FileExt;
    with_reapers(|reapers| {
        let files = &reapers.children;
        if files.is_empty() {
            return None;
        }
        let parse = |text: &[u8], into: &mut Vec<i32>| {
            into.extend(
                text.split(u8::is_ascii_whitespace)
                    .filter_map(|s| std::str::from_utf8(s).ok()?.parse::<i32>().ok()),
            );
        };
        let mut children = Vec::new();
        for (pid, file) in files {
            let mut buf = [0u8; 1024];
            let n = file.read_at(&mut buf, 0).ok()?;
            if n < buf.len() {
                parse(&buf[..n], &mut children);
            } else {
                // Longer than the buffer: read it whole.
                parse(
                    &fs::read(format!("/proc/{pid}/task/{pid}/children")).ok()?,
                    &mut children,
                );
            }
        }
        Some(children)
    })
}

/// After the leader was reaped: does anything of its tree still run? Cheap on the common path
/// (one `kill(-pgid, 0)` and the server's own children list).
pub fn has_survivors(leader: i32, marker: &str) -> bool {
    if killpg(Pid::from_raw(leader), None).is_ok() {
        return true;
    }
    match own_children() {
        Some(children) => {
            // An orphan caught mid-`exec` shows no environment: it might be this run's, so it
            // counts (the stop that follows looks again). Children a spawn owns are other
            // runs' leaders, and the session init and the terminal maker are the server's own:
            // never this run's escapees, so their environments are not read (that read was
            // most of this check's cost after every command).
            children.into_iter().any(|pid| {
                !is_reaper(pid)
                    && !crate::reaper::is_owned(pid)
                    && crate::spawn::terminal_maker_pid() != Some(pid)
                    && match marked(pid, marker) {
                        Marked::Yes => true,
                        Marked::No => false,
                        // Mid-exec is a moment: only a young process counts. An old one with
                        // no environment (`env -i`) is not this run's, and must not make
                        // every later call pay for a stop.
                        Marked::Unknown => age(pid).is_none_or(|a| a < YOUNG),
                    }
            })
        }
        None => !members(leader, marker, false).0.is_empty(),
    }
}

/// What [`terminate`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Terminated {
    /// Processes found when stopping began.
    pub found: usize,
    /// Processes that needed SIGKILL after the grace period.
    pub killed: usize,
    /// Processes still alive after every SIGKILL round (uninterruptible sleep).
    pub stuck: usize,
}

/// Stops the whole tree of a run: SIGTERM, `grace`, then SIGKILL until nothing is left.
///
/// The leader is pinned when this is called (not when the future is first polled), so a caller
/// that still holds the leader's exit watch gets a certain stop even if it reaps the leader
/// meanwhile. Every scan adds to what was found: a process the first scan could not attribute
/// (caught between `fork` and `setsid`, or mid-`exec`) is counted, and sent SIGTERM, by a later
/// one.
pub fn terminate(
    leader: i32,
    marker: &str,
    grace: Duration,
) -> impl Future<Output = Terminated> + Send + 'static {
    let pin = crate::reaper::pin(leader);
    let marker = marker.to_owned();
    async move {
        let report = stop_tree(leader, &marker, grace, pin.is_some()).await;
        drop(pin);
        report
    }
}

/// A running tree that its holder answers for. Dropped while armed (the call that drove it was
/// dropped part-way, a hand-over was never taken), it stops the tree as a cancellation does, in
/// a task of its own: a future that owns a command cannot be dropped and leave the command
/// running. Disarmed where the tree's end is seen to, or its ownership moves on.
#[must_use = "dropping it stops the tree"]
pub(crate) struct StopOnDrop {
    leader: i32,
    marker: String,
    armed: bool,
}

impl StopOnDrop {
    pub(crate) fn new(leader: i32, marker: &str) -> Self {
        StopOnDrop {
            leader,
            marker: marker.to_owned(),
            armed: true,
        }
    }

    /// The tree's end is seen to elsewhere: dropping this stops nothing.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let grace = Duration::from_millis(crate::limits::CANCEL_GRACE_MS);
            stop_unowned(self.leader, &self.marker, grace);
        }
    }
}

/// Stops the tree of a command nobody owns any more (its owner was dropped, or it was never
/// claimed) with `grace`, as a cancellation does; callable anywhere, a `Drop` included. The
/// leader is pinned before this returns, and the stop runs on the drivers' runtime, which runs
/// for the server's life: the runtime of the caller may be shutting down, or a test's that is
/// never polled again. With no runtime to be had, the leader's process group is killed at once.
pub(crate) fn stop_unowned(leader: i32, marker: &str, grace: Duration) {
    let stop = terminate(leader, marker, grace);
    let stopping = crate::drivers::try_spawn(async move {
        let stopped = stop.await;
        tracing::debug!(
            pid = leader,
            found = stopped.found,
            "stopped the tree of a command nobody owned"
        );
    });
    if stopping.is_none() {
        let _ = killpg(Pid::from_raw(leader), Signal::SIGKILL);
    }
}

/// [`terminate`] in a task of its own, on the calling runtime: the stop goes on to its end
/// even when whoever awaits the handle gives up (a `task_stop` whose request was dropped, a
/// page that went away). The leader is pinned before this returns.
pub(crate) fn terminate_detached(
    leader: i32,
    marker: &str,
    grace: Duration,
) -> tokio::task::JoinHandle<Terminated> {
    tokio::spawn(terminate(leader, marker, grace))
}

async fn stop_tree(leader: i32, marker: &str, grace: Duration, pinned: bool) -> Terminated {
    // A process once found is the run's until it ends: a later scan can miss it (its marker
    // reads empty while it is in `exec`), and two that miss it in a row must not let it off
    // (an escapee `exec`ing itself in a loop survived half the stops). Known by pid and start
    // time, so a pid used again is not taken for it.
    let known: std::sync::Mutex<std::collections::HashMap<i32, u64>> = Default::default();
    let scan = || {
        // A full `/proc` scan each: off the worker's other tasks.
        let (mut found, group_is_ours) =
            crate::blocking::section(|| members(leader, marker, pinned));
        let mut known = known.lock().unwrap_or_else(PoisonError::into_inner);
        for &pid in &found {
            if let std::collections::hash_map::Entry::Vacant(entry) = known.entry(pid)
                && let Some(started) = start_ticks(pid)
            {
                entry.insert(started);
            }
        }
        for (&pid, &started) in known.iter() {
            if !found.contains(&pid)
                && read_stat(pid).is_some_and(|s| !s.zombie && s.started == Some(started))
            {
                found.push(pid);
            }
        }
        (found, group_is_ours)
    };
    let mut seen: HashSet<i32> = HashSet::new();
    let mut report = Terminated::default();
    let (first, group_is_ours) = scan();
    if first.is_empty() && confirmed_empty(&scan, &mut seen, leader).await {
        report.found = seen.len();
        return report;
    }
    seen.extend(&first);
    stop_gently(leader, group_is_ours, &first);
    let deadline = Instant::now() + grace;
    let mut signalled = first;
    while Instant::now() < deadline {
        until_gone(&signalled, Duration::from_millis(POLL_MS)).await;
        let (left, group_is_ours) = scan();
        if left.is_empty() && confirmed_empty(&scan, &mut seen, leader).await {
            report.found = seen.len();
            return report;
        }
        let new: Vec<i32> = left.iter().copied().filter(|&p| seen.insert(p)).collect();
        if !new.is_empty() {
            stop_gently(leader, group_is_ours, &new);
        }
        signalled = left;
    }
    let mut empty_scans = 0;
    for _ in 0..KILL_ROUNDS {
        let (left, group_is_ours) = scan();
        seen.extend(&left);
        if left.is_empty() {
            empty_scans += 1;
            if empty_scans == 2 {
                report.found = seen.len();
                return report;
            }
        } else {
            empty_scans = 0;
            if report.killed == 0 {
                report.killed = left.len();
            }
            signal_all(leader, group_is_ours, &left, Signal::SIGKILL);
        }
        // Two empty scans apart confirm the end; after a SIGKILL, the next look comes as soon
        // as those it was sent to are gone.
        if left.is_empty() {
            sleep(Duration::from_millis(CONFIRM_MS)).await;
        } else {
            until_gone(&left, Duration::from_millis(POLL_MS)).await;
        }
    }
    report.found = seen.len();
    report.stuck = scan().0.len();
    report
}

/// Waits until every process of `pids` has ended (one with no pid any more has), or `bound`
/// passed; with none named, `bound`. A stop's next look comes as soon as its signals took effect (a tree that dies of SIGPIPE once
/// its output is closed ends in microseconds), not a whole poll later. A pid reused meanwhile
/// only makes the wait its bound.
async fn until_gone(pids: &[i32], bound: Duration) {
    use std::os::fd::{FromRawFd, OwnedFd};
    use tokio::io::unix::AsyncFd;
    let mut waits = Vec::with_capacity(pids.len());
    for &pid in pids {
        // SAFETY: pidfd_open returns a fresh fd (or -1) that nothing else owns.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, libc::O_NONBLOCK) };
        let Some(fd) = libc::c_int::try_from(fd).ok().filter(|&fd| fd >= 0) else {
            if io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
                continue; // gone already
            }
            // Out of file descriptors, say: a whole poll, as before.
            sleep(bound).await;
            return;
        };
        // SAFETY: the fd is ours from here on. An OwnedFd is a valid open fd, owned by the
        // AsyncFd until it is dropped, and it always reports the same raw fd.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        match unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) } {
            Ok(wait) => waits.push(wait),
            // No reactor to wait on: a whole poll, as before.
            Err(_) => {
                sleep(bound).await;
                return;
            }
        }
    }
    if pids.is_empty() {
        sleep(bound).await;
        return;
    }
    let _ = tokio::time::timeout(bound, async {
        for wait in &waits {
            let _ = wait.readable().await;
        }
    })
    .await;
}

/// After a scan found nothing: looks again [`CONFIRM_MS`] later. True when the second scan
/// agrees; otherwise what it found is stopped gently and counted, and the caller carries on.
async fn confirmed_empty(
    scan: &impl Fn() -> (Vec<i32>, bool),
    seen: &mut HashSet<i32>,
    leader: i32,
) -> bool {
    // While an orphan of ours is caught mid-`exec` (no environment yet, and young), wait for
    // it to show whose it is: under load an `exec` can outlast a poll. Bounded by [`YOUNG`].
    let until = Instant::now() + YOUNG;
    let mut gap = CONFIRM_MS;
    loop {
        sleep(Duration::from_millis(gap)).await;
        gap = POLL_MS;
        let (late, group_is_ours) = scan();
        if !late.is_empty() {
            let new: Vec<i32> = late.into_iter().filter(|&p| seen.insert(p)).collect();
            stop_gently(leader, group_is_ours, &new);
            return false;
        }
        if !orphan_mid_exec() || Instant::now() >= until {
            return true;
        }
    }
}

/// Whether a child of ours that no spawn owns reads no environment and is young: one caught
/// mid-`exec`, whose run cannot be told yet.
fn orphan_mid_exec() -> bool {
    own_children().unwrap_or_default().into_iter().any(|pid| {
        marked(pid, "") == Marked::Unknown
            && age(pid).is_none_or(|a| a < YOUNG)
            && !crate::reaper::is_owned(pid)
    })
}

/// SIGTERM, and SIGCONT so a stopped process gets to act on it.
fn stop_gently(leader: i32, group_is_ours: bool, pids: &[i32]) {
    signal_all(leader, group_is_ours, pids, Signal::SIGTERM);
    for &pid in pids {
        let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
    }
}

fn signal_all(leader: i32, group_is_ours: bool, pids: &[i32], signal: Signal) {
    if group_is_ours {
        let _ = killpg(Pid::from_raw(leader), signal);
    }
    for &pid in pids {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// When `pid` started, in clock ticks after boot (`/proc/<pid>/stat`): with the pid, it names a
/// process exactly, and no change of the wall clock moves it.
pub(crate) fn start_ticks(pid: i32) -> Option<u64> {
    stat_after_name(pid)?
        .split_ascii_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process is read from `/proc/<pid>/stat` whatever its name holds: one cut inside a
    /// character (the kernel keeps 15 bytes), spaces, parentheses. Read as text, the first
    /// was not read at all: invisible to the tree's kill and to the parent walk of the proxy.
    #[test]
    fn a_process_is_read_whatever_its_name() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["plain", "éééééééé.sh", "a) b (c"] {
            let path = dir.path().join(name);
            std::os::unix::fs::symlink("/bin/sleep", &path).unwrap();
            let mut child = std::process::Command::new(&path).arg("5").spawn().unwrap();
            let parent = parent_of(child.id());
            let started = start_ticks(i32::try_from(child.id()).unwrap());
            let _ = child.kill();
            let _ = child.wait();
            assert_eq!(parent, Some(std::process::id()), "{name}");
            assert!(started.is_some(), "{name}");
        }
    }
}
