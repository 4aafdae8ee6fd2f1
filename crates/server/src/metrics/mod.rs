//! What `GET /metrics` reports (docs/BEHAVIOUR.md §14), counted where it happens and written in
//! the Prometheus text format (version 0.0.4) when asked.
//!
//! Why no metrics crate: every label here comes from a closed set known when the binary is
//! built (the ten tools, five outcomes, three transports, two kinds, the guard's rule names), so
//! each series is a fixed slot in an array of atomics. A call costs two clock reads and three
//! relaxed `fetch_add`s, with no lock, no hash and no allocation; the text is made only when a
//! scraper asks. `prometheus-client` (the official Rust client, maintained) keys its label
//! families by a hashed label set behind a lock, which this does not need, and would be a
//! dependency for what [`Text`] does in sixty lines.
//!
//! Labels never carry a command, a path, an id, a caller or a token: only the names above.
//! Gauges (sessions, jobs running, memory) are read when scraped, not kept ([`report`]).
//!
//! This module imports nothing of the crate: whatever counts may import it.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub(crate) mod report;

/// Every series of the process (one server per process, so one set of counters).
pub static METRICS: Metrics = Metrics::new();

/// The tools by their place in the catalog's order (`tools::catalog::ORDER`, ten), then one for
/// a name no tool has.
pub const TOOLS: usize = 11;

/// The upper bounds of the call duration histogram, in seconds: a trivial call is a few
/// milliseconds, a build minutes; `terminal`'s timeout is at most 600 s.
const BUCKETS_SECS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0, 600.0,
];

/// How a tool call ended, as the `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError` (the command failed, or was refused with a sentence).
    Error,
    /// A JSON-RPC error (no such tool, arguments that do not parse as the schema).
    Invalid,
    /// `input_required` (2026-07-28 escalation).
    InputRequired,
    /// A task of the tasks extension.
    Task,
}

impl Outcome {
    const ALL: [Outcome; 5] = [
        Outcome::Ok,
        Outcome::Error,
        Outcome::Invalid,
        Outcome::InputRequired,
        Outcome::Task,
    ];

    fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Invalid => "invalid",
            Outcome::InputRequired => "input_required",
            Outcome::Task => "task",
        }
    }
}

/// Which transport a session came on, as the `transport` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    /// An HTTP client session (`Mcp-Session-Id`).
    Http,
    /// An HTTP caller without a session (protocol 2026-07-28).
    Sessionless,
}

impl Transport {
    const ALL: [Transport; 3] = [Transport::Stdio, Transport::Http, Transport::Sessionless];

    fn label(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Sessionless => "sessionless",
        }
    }

    /// The transport a session's description names (`session::About`).
    pub(crate) fn of(about: &str) -> Transport {
        match about {
            "stdio" => Transport::Stdio,
            "http" => Transport::Http,
            _ => Transport::Sessionless,
        }
    }
}

/// What a refused command was refused, as the `op` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Write,
    Read,
}

pub struct Metrics {
    calls: [[AtomicU64; Outcome::ALL.len()]; TOOLS],
    /// Per tool: calls per bucket (not cumulative; the last is past every bound), the sum of
    /// their durations in microseconds.
    durations: [[AtomicU64; BUCKETS_SECS.len() + 1]; TOOLS],
    duration_sum_us: [AtomicU64; TOOLS],
    sessions_opened: [AtomicU64; Transport::ALL.len()],
    spawn_failures: AtomicU64,
    /// By rule name: blocks are rare, and the names are the guard's `&'static str`s.
    guard_blocks: Mutex<Vec<(&'static str, u64)>>,
    sandbox_refusals: [AtomicU64; 2],
    network_refusals: AtomicU64,
    viewers: AtomicI64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub const fn new() -> Self {
        Metrics {
            calls: [const { [const { AtomicU64::new(0) }; Outcome::ALL.len()] }; TOOLS],
            durations: [const { [const { AtomicU64::new(0) }; BUCKETS_SECS.len() + 1] }; TOOLS],
            duration_sum_us: [const { AtomicU64::new(0) }; TOOLS],
            sessions_opened: [const { AtomicU64::new(0) }; Transport::ALL.len()],
            spawn_failures: AtomicU64::new(0),
            guard_blocks: Mutex::new(Vec::new()),
            sandbox_refusals: [const { AtomicU64::new(0) }; 2],
            network_refusals: AtomicU64::new(0),
            viewers: AtomicI64::new(0),
        }
    }

    /// A tool call of the tool at `tool` in the catalog's order (past the end: no such tool)
    /// ended with `outcome` after `took`.
    pub fn call(&self, tool: usize, outcome: Outcome, took: Duration) {
        let t = tool.min(TOOLS - 1);
        let o = Outcome::ALL.iter().position(|x| *x == outcome).unwrap_or(0);
        self.calls[t][o].fetch_add(1, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        let bucket = BUCKETS_SECS
            .iter()
            .position(|bound| secs <= *bound)
            .unwrap_or(BUCKETS_SECS.len());
        self.durations[t][bucket].fetch_add(1, Ordering::Relaxed);
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.duration_sum_us[t].fetch_add(us, Ordering::Relaxed);
    }

    pub fn session_opened(&self, transport: Transport) {
        let i = Transport::ALL
            .iter()
            .position(|x| *x == transport)
            .unwrap_or(0);
        self.sessions_opened[i].fetch_add(1, Ordering::Relaxed);
    }

    /// A command or shell that could not be started.
    pub fn spawn_failed(&self) {
        self.spawn_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The guard blocked a line by `rule`.
    pub fn guard_blocked(&self, rule: &'static str) {
        let mut blocks = self
            .guard_blocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match blocks.iter_mut().find(|(name, _)| *name == rule) {
            Some((_, n)) => *n += 1,
            None => blocks.push((rule, 1)),
        }
    }

    /// A result reported that the command was refused a write (2008) or a read.
    pub fn sandbox_refused(&self, op: Refusal) {
        let i = usize::from(op == Refusal::Read);
        self.sandbox_refusals[i].fetch_add(1, Ordering::Relaxed);
    }

    /// A confined command was refused a connection or a socket (docs/BEHAVIOUR.md §13): counted
    /// where every decision of the network policy is logged (`network::Egress::note`).
    pub fn network_refused(&self) {
        self.network_refusals.fetch_add(1, Ordering::Relaxed);
    }

    /// A viewer of the web view is streaming until the returned guard is dropped.
    pub fn viewing(&'static self) -> Viewing {
        self.viewers.fetch_add(1, Ordering::Relaxed);
        Viewing(self)
    }
}

/// One open stream of the web view; dropping it counts it out.
pub struct Viewing(&'static Metrics);

impl Drop for Viewing {
    fn drop(&mut self) {
        self.0.viewers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A writer of the Prometheus text format: a family's `# HELP` and `# TYPE` lines, then its
/// samples. Label values here are this module's own names, which need no escaping.
#[derive(Default)]
pub struct Text(String);

impl Text {
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        self.0
            .push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
    }

    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.0.push_str(name);
        if !labels.is_empty() {
            let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            self.0.push('{');
            self.0.push_str(&inner.join(","));
            self.0.push('}');
        }
        self.0.push_str(&format!(" {value}\n"));
    }

    /// One gauge or counter without labels.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// The process's resident memory in bytes (`/proc/self/statm`), 0 when unreadable.
pub fn resident_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page)
}
