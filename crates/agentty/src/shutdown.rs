//! How a serving `agentty` learns that it is to end: SIGTERM, SIGINT or SIGHUP from the host or
//! the user, or the death of its watchdog; and what it does at once when the watchdog died.
//! Both transports (stdio, HTTP) end on the same signals, so both take them from here; over
//! HTTP the end is a drain (`serve`).

/// How [`signal`] names the death of the watchdog.
const WATCHDOG_DIED: &str = "the watchdog's death";

/// The first signal to end on, by name; never, when its handlers cannot be set.
pub async fn signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup), Ok(mut orphaned)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
        signal(SignalKind::from_raw(agentty_core::watchdog::WATCHDOG_DIED)),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
        _ = hup.recv() => "SIGHUP",
        _ = orphaned.recv() => WATCHDOG_DIED,
    }
}

/// Whether the HTTP server drains after `signal` (docs/BEHAVIOUR.md §14): after any but the
/// watchdog's death, when nothing is left to catch what the server leaves.
pub fn drains(signal: &str) -> bool {
    signal != WATCHDOG_DIED
}

/// Says which `signal` ends the server; after the watchdog's death, stops every child first.
pub fn shutting_down(signal: &str) {
    tracing::info!("received {signal}, shutting down");
    if signal == WATCHDOG_DIED {
        // Killed hard, and nothing is left to catch what this server leaves: every
        // child goes now, with no grace, before anything else can end this process.
        tokio::task::block_in_place(|| {
            agentty_core::watchdog::stop_children(false, std::time::Duration::ZERO)
        });
    }
}
