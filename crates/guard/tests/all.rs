//! The one integration-test binary for agentty-guard (one link instead of one per file).

// Test helpers outside `#[test]` functions may unwrap: a failed setup should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
