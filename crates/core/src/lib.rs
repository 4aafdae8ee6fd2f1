//! agentty-core: the engine under every tool.
//!
//! It owns spawning (one seam, [`spawn`]), the one loop that drives a running command
//! (`engine`), exit statuses (`reaper`), process trees (`tree`), output cleaning (`clean`) and
//! shaping (`shape`), spill files (`spill`), the one-shot paths ([`run`], [`pty`]), long-lived
//! jobs ([`jobs`]) and shells ([`pty`]), and the [`watchdog`] that stops them if the server is
//! killed. It knows nothing of MCP: the server crate renders what it
//! returns into words for a model.

// The families a caller drives: one-shot runs, background jobs, terminals and shells, the
// spawn seam, the watchdog, and the limits every result states.
pub mod blocking;
pub mod jobs;
pub mod limits;
pub mod mask;
pub mod namespace;
pub mod pty;
pub mod random;
pub mod run;
pub mod runs;
pub mod spawn;
pub mod sweep;
pub mod view_tap;
pub mod watchdog;

// The machinery under them, private: what callers need of it is exported by name below.
mod children;
mod clean;
mod drivers;
mod engine;
mod handover;
mod model_output;
mod outcome;
mod reaper;
mod shape;
mod spill;
mod tree;

pub use clean::{Cleaner, Emit};
pub use reaper::{Exit, signal_name};
pub use shape::Shaped;
pub use spill::{
    SPILL_RETENTION, SpillStore, canonical_prefix, ensure_private_dir, prune,
    remove_dead_servers_dirs,
};
pub use tree::{has_survivors, parent_of};

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
    // Held from the start: the fds a server holds for good are there before its first call.
    children::main_thread_list();
    pty::channel::reserve_shell_fds();
    reaper::init()
}
