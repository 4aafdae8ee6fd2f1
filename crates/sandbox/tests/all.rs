//! One integration binary (STYLE: keeps link time down); the suites live in `tests/suite/`.

// Fixture helpers are not `#[test]` functions, so clippy's allow-unwrap-in-tests does not reach
// them; a failed setup step is a test failure and should panic with its location.
#![allow(clippy::unwrap_used)]

mod suite;
