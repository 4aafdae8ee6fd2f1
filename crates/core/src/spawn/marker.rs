//! The name of the environment variable that carries a run's marker.
//!
//! The spawn seam writes it into every child's environment; [`crate::tree`] and the watchdog read
//! it back from `/proc` to find a run's escaped descendants. A leaf of its own, so the readers
//! take the name without importing the spawn seam (which imports them).

/// Environment variable carrying a run's marker; [`crate::tree`] finds escaped descendants by it.
pub const RUN_MARKER_VAR: &str = "AGENTTY_RUN";
