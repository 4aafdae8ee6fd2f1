//! agentty-core: the engine under every tool.
//!
//! It owns spawning (one seam, [`spawn`]), exit statuses ([`reaper`]), process trees ([`tree`]),
//! output cleaning ([`clean`]) and shaping ([`shape`]), spill files ([`spill`]) and the pipe path
//! of one-shot commands ([`run`]), long-lived jobs ([`jobs`]) and the [`watchdog`] that stops
//! them if the server is killed. It knows nothing of MCP: the server crate renders what it
//! returns into words for a model.

pub mod clean;
pub mod drivers;
mod engine;
mod handover;
pub mod jobs;
pub mod limits;
mod model_output;
mod outcome;
pub mod pty;
pub mod reaper;
pub mod run;
pub mod shape;
pub mod spawn;
pub mod spill;
pub mod tree;
pub mod watchdog;

/// Prepares the process to run commands: starts the reaper (and becomes a child subreaper) and
/// drops the controlling terminal so no command can open `/dev/tty`. Idempotent; call it before
/// the first spawn.
pub fn init() -> Result<(), String> {
    static DETACHED: std::sync::Once = std::sync::Once::new();
    DETACHED.call_once(|| {
        if !spawn::detach_controlling_terminal() {
            tracing::warn!(
                "agentty is a session leader with a controlling terminal; commands may open /dev/tty"
            );
        }
    });
    reaper::init()
}
