//! End-to-end tests: the real `agentty` binary driven by rmcp's client over stdio.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod suite;
