//! The sweep by run marker: what a session left running when its server and watchdog were killed
//! in the same instant (`pkill -9 agentty`), stopped by the next agentty to start; and the
//! watchdog's own second net after the server died (docs/BEHAVIOUR.md §3).
//!
//! A run marker is an environment variable, and a command can copy it: a confined command that
//! writes `export AGENTTY_RUN=$AGENTTY_RUN` into `.envrc` hands it to every process the user
//! starts there later. Three checks keep the sweep to what really descends from the session:
//!
//! - the marker names a session whose watchdog is gone, and that session wrote it down
//!   (`crate::runs`; a run in the session's PID namespace never is);
//! - the process's *line*, itself and its ancestors that carry a marker of the same session, has
//!   its oldest member adopted: its parent is the PID namespace's init, or one of the session's
//!   ancestors as the record names them (pid and start tick), where the kernel hands the orphans
//!   of a dead server and watchdog (the nearest child subreaper above them, else the init). A
//!   process a shell of the user's started has that shell for a parent, and the shell carries no
//!   marker in its `/proc` environment (a variable exported after `exec` is not there);
//! - that oldest member started within the session's life: after its watchdog started (the
//!   session's name holds the tick) and before it was last seen alive (the record's heartbeat,
//!   [`crate::runs::HEARTBEAT_MS`]). A process the user starts after agentty died, even one its
//!   host's own shell starts, is not the session's.
//!
//! Start ticks and parents are the kernel's and no command can set them. What stays possible: a
//! process that the session's own ancestor (the host, or the shell that started it) starts while
//! the session lives, or within a heartbeat of its death, and that sourced a planted marker, is
//! taken for the session's.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::limits::WATCHDOG_GRACE_MS;
use crate::runs::{HEARTBEAT_MS, HEARTBEAT_SLACK_MS, Record};
use crate::spawn::marker::RUN_MARKER_VAR;
use crate::tree::start_ticks;
use crate::tree::{ProcStat, all_processes};

/// SIGKILL rounds (each re-scans `/proc` for late forks) before a sweep gives up.
const KILL_ROUNDS: usize = 50;
/// Pause between two scans.
const POLL_MS: u64 = 20;

/// Stops every process carrying a marker with `prefix`; returns (found, needed SIGKILL).
pub fn by_prefix(prefix: &str) -> (usize, usize) {
    stop_found(|| marked(prefix))
}

/// Stops what `find` finds: SIGTERM (and SIGCONT), [`WATCHDOG_GRACE_MS`], then SIGKILL rounds
/// while `find` still finds something; returns (found, needed SIGKILL).
pub(crate) fn stop_found(mut find: impl FnMut() -> Vec<i32>) -> (usize, usize) {
    let first = find();
    if first.is_empty() {
        return (0, 0);
    }
    for &pid in &first {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
    }
    let deadline = Instant::now() + Duration::from_millis(WATCHDOG_GRACE_MS);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(POLL_MS));
        if find().is_empty() {
            return (first.len(), 0);
        }
    }
    let mut killed = 0;
    for round in 0..KILL_ROUNDS {
        let left = find();
        if left.is_empty() {
            break;
        }
        if round == 0 {
            killed = left.len();
        }
        for &pid in &left {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    (first.len(), killed)
}

/// Stops what sessions that ended without their watchdog left behind: this user's processes of
/// this PID namespace that descend from a session whose watchdog is gone (see the module doc).
/// That happens only when the watchdog and its server were killed in the same instant, so
/// nothing was left to stop them; the next server to start does. A session's name
/// ([`crate::watchdog::session_name`]) carries its watchdog's pid and start tick; the session is
/// alive while that process exists. Returns (found, needed SIGKILL).
pub fn dead_sessions(runs: &Path) -> (usize, usize) {
    let uid = nix::unistd::getuid().as_raw();
    // A session names its watchdog by the pid it has in its own pid namespace: processes of
    // another namespace (a container's agentty, seen from the host) cannot be judged here.
    let Ok(own_ns) = fs::read_link("/proc/self/ns/pid") else {
        return (0, 0);
    };
    // Per session: what it wrote down, while it is dead (a live one's is never read).
    let mut sessions = HashMap::<String, Option<Judge>>::new();
    let mut convicted = HashSet::new();
    let stopped = stop_found(|| {
        let scan = Scan::new(uid, &own_ns);
        let mut found = scan.convicted(&convicted);
        for pid in scan.marked() {
            let Some(session) = scan.marker(pid).as_deref().and_then(session_of) else {
                continue;
            };
            let judge = sessions.entry(session.clone()).or_insert_with(|| {
                if session_alive(&session) {
                    return None;
                }
                let record = crate::runs::recorded(runs, &session)?;
                Some(Judge::of_dead(&session, record))
            });
            if judge
                .as_ref()
                .is_some_and(|judge| judge.descends(&scan, pid))
            {
                found.push(pid);
            }
        }
        convicted.extend(found.iter().filter_map(|&pid| scan.identity(pid)));
        found
    });
    // The records of dead sessions have served.
    for session in crate::runs::sessions(runs) {
        if !session_alive(&session) {
            crate::runs::forget(runs, &session);
        }
    }
    stopped
}

/// The watchdog's second net, once the server has died and every child it had is stopped:
/// processes of this user that descend from `session` (whose record is `record`) through this
/// watchdog, which adopts everything the server left while it lives. Returns how many it found.
pub(crate) fn leftovers(session: &str, record: Record) -> usize {
    let uid = nix::unistd::getuid().as_raw();
    let Ok(own_ns) = fs::read_link("/proc/self/ns/pid") else {
        return 0;
    };
    let me = std::process::id() as i32;
    let judge = Judge {
        adopters: vec![(me, start_ticks(me))],
        // Alive until now.
        until: now_ticks(),
        ..Judge::of_dead(session, record)
    };
    let mut convicted = HashSet::new();
    stop_found(|| {
        let scan = Scan::new(uid, &own_ns);
        let mut found = scan.convicted(&convicted);
        found.extend(scan.marked().filter(|&pid| {
            scan.marker(pid).as_deref().and_then(session_of).as_deref() == Some(session)
                && judge.descends(&scan, pid)
        }));
        convicted.extend(found.iter().filter_map(|&pid| scan.identity(pid)));
        found
    })
    .0
}

/// One look at `/proc`: every process (a parent may be another user's), and the run markers of
/// this user's processes of this PID namespace, read once each.
struct Scan {
    procs: HashMap<i32, ProcStat>,
    /// This user's live processes of this namespace, other than this one, with their marker.
    markers: HashMap<i32, Option<String>>,
}

impl Scan {
    fn new(uid: u32, own_ns: &Path) -> Self {
        let me = std::process::id() as i32;
        let procs: HashMap<i32, ProcStat> =
            all_processes().into_iter().map(|p| (p.pid, p)).collect();
        let markers = procs
            .values()
            .filter(|p| p.pid != me && !p.zombie && p.state != 'X')
            .filter(|p| owner(p.pid) == Some(uid))
            .filter(|p| {
                fs::read_link(format!("/proc/{}/ns/pid", p.pid)).is_ok_and(|ns| ns == own_ns)
            })
            .map(|p| {
                (
                    p.pid,
                    crate::tree::with_environ(p.pid, run_marker).flatten(),
                )
            })
            .collect();
        Scan { procs, markers }
    }

    /// This user's processes of this namespace that carry a marker.
    fn marked(&self) -> impl Iterator<Item = i32> + '_ {
        self.markers
            .iter()
            .filter(|(_, marker)| marker.is_some())
            .map(|(&pid, _)| pid)
    }

    fn marker(&self, pid: i32) -> Option<String> {
        self.markers.get(&pid).cloned().flatten()
    }

    /// A process by pid and start tick: what stays true of it while it lives.
    fn identity(&self, pid: i32) -> Option<(i32, u64)> {
        Some((pid, self.procs.get(&pid)?.started?))
    }

    /// Those of `convicted` (found to descend by an earlier scan) that still live: a line's
    /// younger members are judged by its oldest, and once that one is stopped they must not be
    /// taken for a line of their own.
    fn convicted(&self, convicted: &HashSet<(i32, u64)>) -> Vec<i32> {
        self.markers
            .keys()
            .copied()
            .filter(|&pid| self.identity(pid).is_some_and(|id| convicted.contains(&id)))
            .collect()
    }
}

/// What decides that a process descends from one session (see the module doc).
struct Judge {
    session: String,
    markers: Vec<String>,
    /// Where the session's orphans may have gone: pid, and its start tick when it must match.
    adopters: Vec<(i32, Option<u64>)>,
    /// The session's life, in clock ticks after boot.
    from: u64,
    until: u64,
}

impl Judge {
    /// The judge of a dead session, from its name and its record.
    fn of_dead(session: &str, record: Record) -> Self {
        let from = session
            .rsplit('-')
            .next()
            .and_then(|ticks| ticks.parse().ok())
            .unwrap_or(0);
        let beat = Duration::from_millis(HEARTBEAT_MS + HEARTBEAT_SLACK_MS);
        let until = record
            .seen_alive
            .and_then(ticks_at)
            .map_or(0, |seen| seen + duration_ticks(beat));
        let adopters = std::iter::once((1, None))
            .chain(
                record
                    .ancestors
                    .iter()
                    .map(|&(pid, ticks)| (pid, Some(ticks))),
            )
            .collect();
        Judge {
            session: session.to_owned(),
            markers: record.markers,
            adopters,
            from,
            until,
        }
    }

    /// Whether `pid`, a marked process of `scan`, descends from the session: its marker was
    /// written down, and the oldest of its line was adopted and started within the session's
    /// life.
    fn descends(&self, scan: &Scan, pid: i32) -> bool {
        if !scan.marker(pid).is_some_and(|m| self.markers.contains(&m)) {
            return false;
        }
        let Some(mut oldest) = scan.procs.get(&pid) else {
            return false;
        };
        for _ in 0..scan.procs.len() {
            let same_session = scan
                .marker(oldest.ppid)
                .as_deref()
                .and_then(session_of)
                .is_some_and(|s| s == self.session);
            match scan.procs.get(&oldest.ppid) {
                Some(parent) if same_session => oldest = parent,
                _ => break,
            }
        }
        let adopted = self.adopters.iter().any(|&(adopter, ticks)| {
            adopter == oldest.ppid
                && ticks.is_none_or(|t| scan.procs.get(&adopter).and_then(|p| p.started) == Some(t))
        });
        adopted
            && oldest
                .started
                .is_some_and(|t| t >= self.from && t <= self.until)
    }
}

fn owner(pid: i32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid())
}

/// The run marker in the first `most` bytes of the environment of process `pid`, if it has one
/// there: agentty puts it first in what it starts; a process that rearranged its environment
/// may have moved it further. For a look made often on behalf of a command, which could
/// otherwise have megabytes read at each (the sweep reads environments whole).
pub fn run_marker_near_start(pid: u32, most: usize) -> Option<String> {
    crate::tree::with_environ_up_to(i32::try_from(pid).ok()?, most, |environ| {
        // A read cut at `most` may end inside an entry (a marker cut short): whole ones only.
        let whole = if environ.len() < most {
            environ
        } else {
            &environ[..memchr::memrchr(0, environ).map_or(0, |end| end + 1)]
        };
        run_marker(whole)
    })
    .flatten()
}

/// The run marker in `environ`, if it has one.
fn run_marker(environ: &[u8]) -> Option<String> {
    let key = format!("{RUN_MARKER_VAR}=");
    let value = environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(key.as_bytes()))?;
    std::str::from_utf8(value).ok().map(str::to_owned)
}

/// The session a run marker names (its first three fields), if they have a session's shape.
fn session_of(marker: &str) -> Option<String> {
    let fields: Vec<&str> = marker.splitn(4, '-').take(3).collect();
    let session = fields.join("-");
    crate::runs::is_session_name(&session).then_some(session)
}

/// Whether the watchdog of `session` still runs: a process with its pid that started at the
/// same clock tick. A name that does not parse is taken for alive: only what is surely dead is
/// stopped.
pub(crate) fn session_alive(session: &str) -> bool {
    let mut fields = session.split('-').skip(1);
    let (Some(Ok(pid)), Some(Ok(ticks))) = (
        fields.next().map(str::parse::<i32>),
        fields.next().map(str::parse::<u64>),
    ) else {
        return true;
    };
    start_ticks(pid) == Some(ticks)
}

/// Live (non-zombie) processes, other than this one, whose run marker starts with `prefix`.
fn marked(prefix: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    all_processes()
        .into_iter()
        .filter(|p| p.pid != me && !p.zombie && p.state != 'X')
        .filter(|p| {
            crate::tree::with_environ(p.pid, |env| {
                run_marker(env).is_some_and(|m| m.starts_with(prefix))
            }) == Some(true)
        })
        .map(|p| p.pid)
        .collect()
}

/// Clock ticks per second (`/proc/<pid>/stat`'s unit).
fn ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .unwrap_or(100)
        .max(1)
}

fn duration_ticks(d: Duration) -> u64 {
    (d.as_secs_f64() * ticks_per_second() as f64) as u64
}

/// Now, in clock ticks after boot (`CLOCK_BOOTTIME`, the clock of a process's start time).
fn now_ticks() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &raw mut now) };
    duration_ticks(Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    ))
}

/// A wall-clock time (a file's mtime) as clock ticks after boot: how long before now it was,
/// taken from now on the boot clock. A step of the wall clock since moves it as much.
fn ticks_at(time: SystemTime) -> Option<u64> {
    let ago = SystemTime::now()
        .duration_since(time)
        .unwrap_or(Duration::ZERO);
    now_ticks().checked_sub(duration_ticks(ago))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process with this environment (and nothing else, in the order of the names: that is
    /// how `Command` passes it), sleeping until killed.
    fn sleeper(env: &[(String, String)]) -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .spawn()
            .unwrap()
    }

    /// The look made on every connect reads only the start of an environment: a marker placed
    /// first is found, one after a megabyte is not looked for, and one cut by the end of what
    /// is read is not taken for a shorter one.
    #[test]
    fn a_marker_is_looked_for_near_the_start_only_and_never_cut() {
        let marker = "5-40-100-c1-aa".to_owned();
        let run = || (RUN_MARKER_VAR.to_owned(), marker.clone());
        // A megabyte in 16 variables (one may hold 128 KiB), named to sort before the marker
        // ("AA…") or after it ("Z…").
        let big = |prefix: &'static str| {
            (0..16).map(move |i| (format!("{prefix}{i:02}"), "x".repeat(64 << 10)))
        };
        let first = sleeper(&std::iter::once(run()).chain(big("Z")).collect::<Vec<_>>());
        let later = sleeper(&big("AA").chain(std::iter::once(run())).collect::<Vec<_>>());
        // "AAPAD=…\0AGENTTY_RUN=5-40-100-c" are the first 64 bytes: the marker is cut there.
        let pad = "p".repeat(64 - "AAPAD=\0AGENTTY_RUN=5-40-100-c".len());
        let cut = sleeper(&[("AAPAD".to_owned(), pad), run()]);
        let near = |child: &std::process::Child, most| run_marker_near_start(child.id(), most);
        assert_eq!(near(&first, 16 << 10).as_deref(), Some(marker.as_str()));
        assert_eq!(near(&later, 16 << 10), None, "read past the start");
        assert_eq!(near(&later, 4 << 20).as_deref(), Some(marker.as_str()));
        assert_eq!(near(&cut, 64), None, "a cut marker taken whole");
        assert_eq!(
            near(&cut, 65).as_deref(),
            None,
            "the entry still lacks its end"
        );
        assert_eq!(near(&cut, 4096).as_deref(), Some(marker.as_str()));
        for mut child in [first, later, cut] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A scan of made-up processes, all of this user and namespace.
    fn scan(procs: &[(i32, i32, u64, Option<&str>)]) -> Scan {
        let stat = |&(pid, ppid, started, _): &(i32, i32, u64, Option<&str>)| ProcStat {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: 'S',
            zombie: false,
            started: Some(started),
        };
        Scan {
            procs: procs.iter().map(|p| (p.0, stat(p))).collect(),
            markers: procs
                .iter()
                .map(|&(pid, _, _, marker)| (pid, marker.map(str::to_owned)))
                .collect(),
        }
    }

    fn judge() -> Judge {
        Judge {
            session: "5-40-100".into(),
            markers: vec!["5-40-100-c1-aa".into()],
            // The init, the host (pid 30, started at tick 50), and an ancestor since gone.
            adopters: vec![(1, None), (30, Some(50)), (60, Some(70))],
            from: 100,
            until: 1000,
        }
    }

    #[test]
    fn only_a_line_adopted_and_started_within_the_sessions_life_descends() {
        let m = Some("5-40-100-c1-aa");
        let s = scan(&[
            (1, 0, 0, None),
            (30, 1, 50, None),
            // An escapee adopted by the init, and its child: the session's.
            (200, 1, 300, m),
            (201, 200, 2000, m),
            // Adopted by the host (a subreaper), started within: the session's.
            (210, 30, 400, m),
            // A shell of the user's (no marker) and what it started from a planted `.envrc`.
            (300, 1, 20, None),
            (301, 300, 500, m),
            // Started by the host after the session was last seen alive.
            (400, 30, 1500, m),
            // The pid of an ancestor the session had, now another process: not an adopter.
            (60, 1, 80, None),
            (601, 60, 700, m),
            // Adopted, but older than the session.
            (600, 1, 90, m),
            // A marker the session did not write down.
            (700, 1, 300, Some("5-40-100-c2-bb")),
        ]);
        let judge = judge();
        let descends: Vec<i32> = [200, 201, 210, 301, 400, 601, 600, 700]
            .into_iter()
            .filter(|&pid| judge.descends(&s, pid))
            .collect();
        assert_eq!(descends, vec![200, 201, 210]);
    }

    #[test]
    fn a_dead_sessions_life_ends_a_heartbeat_after_it_was_last_seen() {
        let record = Record {
            markers: vec!["1-2-3-c1".into()],
            ancestors: vec![(9, 8)],
            seen_alive: Some(SystemTime::now() - Duration::from_secs(10)),
        };
        let judge = Judge::of_dead("1-2-3", record);
        assert_eq!(judge.from, 3);
        let beat = duration_ticks(Duration::from_millis(HEARTBEAT_MS + HEARTBEAT_SLACK_MS));
        let ten = duration_ticks(Duration::from_secs(10));
        let expected = now_ticks() - ten + beat;
        assert!(
            judge.until.abs_diff(expected) <= 2,
            "{} {expected}",
            judge.until
        );
        assert_eq!(judge.adopters, vec![(1, None), (9, Some(8))]);
    }
}
