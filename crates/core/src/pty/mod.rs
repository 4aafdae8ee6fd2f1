//! The PTY paths (docs/BEHAVIOUR.md §4): one command under a pseudo-terminal ([`once`]) and persistent
//! shells ([`shell`], kept per session by [`host`]).
//!
//! Why a PTY at all: some programs only behave on a terminal (colours, progress, prompts, REPLs,
//! full-screen tools), and a shell that keeps cwd, env and a virtualenv between calls needs one
//! to run interactively. Everything a model reads from a PTY is cleaned (§7.1) like the pipe
//! path; the raw bytes and the rendered screen are there when asked for.
//!
//! Dependencies: `vt100` (0.18, maintained, small: vte + unicode-width + itoa, vte being the
//! parser the cleaner already uses) renders screens; `regex` (already in the tree through the
//! guard's dependencies) matches `wait_for`. No PTY crate: see [`sys`].

pub mod capture;
pub(crate) mod channel;
pub mod host;
pub mod integration;
pub mod line_editor;
pub mod once;
pub mod probe;
pub mod shell;
mod startup;
pub mod styled;
pub mod sys;
pub mod typed_into;

use std::io;

use crate::spawn::{SpawnSpec, SpawnedPty, spawn_pty};

pub use host::{Gone, OpenError, Shells};
/// `wait_for` patterns: re-exported so callers match with the engine's own regex version.
pub use regex::Regex;
pub use shell::{
    Activity, Awaiting, Foreground, Hangup, OpenSpec, Reader, SECRET_TYPE_MS, Screen,
    SecretRefused, SendOutcome, SendRequest, SendStatus, Shell,
};
pub use styled::{Run, Style, StyledScreen};

/// Escape sequences only a program that draws a whole screen sends: switching to the alternate
/// screen, clearing it, the cursor to the top-left corner. A line-by-line program (a prompt, a
/// progress bar) sends none of them.
pub const SCREEN_SEQUENCES: [&[u8]; 6] = [
    b"\x1b[?1049h",
    b"\x1b[?1047h",
    b"\x1b[?47h",
    b"\x1b[2J",
    b"\x1b[H",
    b"\x1b[1;1H",
];

/// Whether `bytes` hold one of [`SCREEN_SEQUENCES`].
pub fn draws_screen(bytes: &[u8]) -> bool {
    SCREEN_SEQUENCES
        .iter()
        .any(|seq| bytes.windows(seq.len()).any(|w| w == *seq))
}

/// Whether a prompt reads like a password's: `password` or `passphrase` anywhere, `PIN` as a
/// word, in any case (`[sudo] password for ann:`, `Enter passphrase for key`, `PIN:`).
pub fn reads_like_password(prompt: &str) -> bool {
    let lower = prompt.to_lowercase();
    lower.contains("password")
        || lower.contains("passphrase")
        || lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|word| word == "pin")
}

/// Default terminal width: wide enough that ordinary output does not wrap.
pub const COLS_DEFAULT: u16 = 120;
/// Default terminal height.
pub const ROWS_DEFAULT: u16 = 40;
/// Largest accepted width or height: beyond this a screen is no longer something to read.
pub const SIZE_MAX: u16 = 1000;

/// `shell_open` waits at most this long for the first prompt. A shell started without rc files
/// prompts within milliseconds; a shell that has not prompted in five seconds is broken.
pub const OPEN_PROMPT_WAIT_MS: u64 = 5000;

/// Default bound on one `shell_send`. Long enough for an ordinary command; a build or a server
/// should be given a larger `timeout_ms` (the command keeps running at the bound anyway).
pub const SEND_TIMEOUT_DEFAULT_MS: u64 = 30_000;

/// Output quiet this long before the foreground job is probed for a keyboard read. A program
/// that prints a prompt and reads has been silent since; one that is working usually is not.
pub const PROBE_QUIET_MS: u64 = 100;

/// Time between two probes while output stays quiet.
pub const PROBE_INTERVAL_MS: u64 = 50;

/// Without prompt markers (an unknown shell), a send returns once output was quiet this long.
pub const SEND_IDLE_MS: u64 = 500;
/// How long a send to a bash or zsh at its prompt waits for the line editor to take the
/// terminal out of canonical mode (keys typed before are echoed twice: `pwd# pwd`).
pub const LINE_EDITOR_WAIT_MS: u64 = 200;

/// A shell nobody sent to or read from for this long is closed (docs/BEHAVIOUR.md §4): it holds a PTY, a
/// process tree and memory for a model that has moved on.
pub const SHELL_IDLE_DEFAULT_MS: u64 = 10 * 60 * 1000;

/// After the hang-up, how long the tree may take to exit before SIGKILL. Shells exit at once on
/// SIGHUP; this covers a program that saves state on hang-up.
pub const CLOSE_GRACE_MS: u64 = 500;

/// Raw bytes kept per shell for `raw: true` (escape sequences intact, for debugging a TUI).
pub const RAW_TAIL_BYTES: usize = 64 * 1024;

/// A one-shot PTY command is declared waiting for input only after output was quiet this long
/// and two probes in a row agree: the verdict stops the command, so it must not be hasty.
pub const ONCE_AWAIT_QUIET_MS: u64 = 300;

#[derive(Debug, thiserror::Error)]
pub enum PtyError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the shell printed no prompt within {0} ms")]
    NoPrompt(u64),
    #[error("the shell ended as it started: {0}")]
    EndedAtStart(String),
    #[error("the shell is closed")]
    Closed,
    /// Another send to the same shell was still waiting when this one's time ran out.
    #[error("another send to this shell was still waiting")]
    Busy,
    /// The keys would stop (the terminal's suspend key, Ctrl+Z) the program that read a secret
    /// while it still runs, giving the shell back with the secret in that program's memory.
    #[error("the keys would stop the program that read a secret")]
    StopsSealed,
}

/// Opens a PTY of the given size and starts `spec` on it; returns the master side, the
/// terminal's name and the started process. The slave is closed here once the child has it.
/// Where the server can, the PTY comes from a devpts instance of the spawn's own
/// (`spawn::terminals`): no other spawn's command reaches it by path.
pub async fn spawn_on_pty(
    mut spec: SpawnSpec,
    cols: u16,
    rows: u16,
) -> io::Result<(sys::Master, sys::TtyName, SpawnedPty)> {
    #[cfg(target_os = "linux")]
    let (pair, own) = match crate::spawn::OwnDevpts::for_spawn()? {
        Some(devpts) => {
            let pair = devpts.open_pair(cols, rows)?;
            if let Some(confine) = &spec.confine
                && let Some(own) = confine.with_terminals(devpts.root())?
            {
                spec.confine = Some(own);
            }
            (pair, devpts.into_attachable())
        }
        None => (sys::open_pair(cols, rows)?, None),
    };
    #[cfg(not(target_os = "linux"))]
    let (pair, own) = (sys::open_pair(cols, rows)?, None);
    let started = spawn_pty(spec, pair.slave, own).await?;
    let master = started.exit.or_kill(sys::Master::new(pair.master))?;
    let name = sys::TtyName {
        path: pair.tty_path,
        id: pair.tty_id,
    };
    Ok((master, name, started))
}
