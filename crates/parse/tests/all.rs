//! agentty-parse's integration tests: each parser against the real program on this machine,
//! compared with ground truth, and every parser fuzzed on mutated real outputs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod suite;
