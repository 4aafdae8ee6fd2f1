//! Time as the tools take and give it: one bound check for every `timeout_ms`, one conversion
//! of a duration to the milliseconds a result reports.

use std::time::Duration;

use agentty_core::limits::TIMEOUT_MAX_MS;

/// `timeout_ms` as given (or `default`), checked against the one bound all tools share:
/// 1 ms to [`TIMEOUT_MAX_MS`]. `past_max` is the tool's advice for a longer wait.
pub(crate) fn timeout_ms(given: Option<u64>, default: u64, past_max: &str) -> Result<u64, String> {
    let ms = given.unwrap_or(default);
    if ms == 0 {
        return Err(super::notice::ZERO_TIMEOUT.into());
    }
    if ms > TIMEOUT_MAX_MS {
        return Err(super::notice::timeout_too_large(ms, past_max));
    }
    Ok(ms)
}

/// Whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
