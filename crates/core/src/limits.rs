//! Every limit of the engine in one leaf module, each with the reason it has that value.
//!
//! The server's notices quote these numbers, so the model reads the same figures the engine
//! enforces. Keeping them in a leaf avoids import cycles between capture, spill and run.

/// Processes and threads one caller's confined commands may have at once, by default
/// (`--max-processes`): far above a parallel build's (a JVM's threads included), far below what
/// leaves the machine without PIDs. Held by the `pid_max` of the caller's PID namespace, which
/// Linux keeps per namespace from 6.14 (`namespace::ProcessBounds`).
pub const PROCESSES_PER_CALLER_DEFAULT: u32 = 4096;

/// The least `--max-processes` accepts: a PID namespace's `pid_max` is at least 301 (the kernel
/// reserves the first 300 numbers after a wrap), and a shell with a build needs a few hundred.
pub const PROCESSES_PER_CALLER_MIN: u32 = 512;

/// Default `terminal` timeout. Two minutes covers a test run or a build step; longer work belongs
/// in a background job, where waiting never kills.
pub const TIMEOUT_DEFAULT_MS: u64 = 120_000;

/// Largest `timeout_ms` a one-shot call accepts. A model blocked for more than ten minutes on one
/// call is a model that should have used `background: true`.
pub const TIMEOUT_MAX_MS: u64 = 600_000;

/// Cleaned output up to this size is returned whole. Past it, the model gets head and tail and
/// the full text goes to a spill file: 50 KB is already more than a model should read at once.
pub const INLINE_LIMIT_BYTES: usize = 50 * 1024;

/// The most output `parse: true` reads (stdout and stderr together). A parsed record is a few
/// times the size of its line (more for short lines such as `git status -s`), so a command
/// printing up to the capture limit could make the server hold ten times that at once; over
/// this, the output is text as usual and a note asks for a narrower command.
pub const PARSE_INPUT_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Characters kept from the start of an over-long output: the head says what ran.
pub const HEAD_CHARS: usize = 2000;

/// Characters kept from the end of an over-long output: the tail says how it ended.
pub const TAIL_CHARS: usize = 2000;

/// Raw bytes captured from one command before it is killed. Ten megabytes on stdout is not a
/// normal command's output but a runaway (`yes`, a log loop), and capturing it costs memory and
/// disk for nothing a model can use.
pub const CAPTURE_LIMIT_BYTES: u64 = 10 * 1024 * 1024;

/// Time between SIGTERM and SIGKILL when a tree is stopped for a timeout or over-capture: long
/// enough for a well-behaved program to flush and remove its lock files.
pub const KILL_GRACE_MS: u64 = 1000;

/// Grace used when the user cancelled the call: they asked for it to stop now.
pub const CANCEL_GRACE_MS: u64 = 200;

/// After SIGKILL, how long the call still waits for the pipes to close before it returns with the
/// output it has. A process in uninterruptible sleep ignores even SIGKILL; the call must not hang
/// on it.
pub const KILL_WAIT_MS: u64 = 1000;

/// After the command's shell exited, how long descendants may keep its output pipes open before
/// they are stopped (`npm run dev &`). Long enough for a last flush, short enough that a dev
/// server does not hold the call hostage.
pub const DRAIN_MS: u64 = 300;

/// Minimum time between two progress notifications: enough to show liveness, few enough that a
/// flood of output does not become a flood of notifications.
pub const PROGRESS_INTERVAL_MS: u64 = 1000;

/// Longest latest-line excerpt carried by a progress notification.
pub const PROGRESS_LINE_CHARS: usize = 200;

/// Linux refuses a single execve argument longer than this (MAX_ARG_STRLEN, 32 pages). A longer
/// `command` cannot be passed to `sh -c`, so it is refused with a clear message up front.
pub const COMMAND_MAX_BYTES: usize = 128 * 1024;

/// Read size for one pipe read.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// After SIGTERM, how long stopping waits before SIGKILL. Short: the server is gone (or going)
/// and nobody waits for these processes' output any more.
pub const WATCHDOG_GRACE_MS: u64 = 500;

/// The descriptors this process may hold (its soft `RLIMIT_NOFILE`; 1024 where it cannot be
/// read): what the HTTP server's connections and the network proxy's waiting requests are
/// sized by.
pub fn descriptors_most() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only to the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    }
}
