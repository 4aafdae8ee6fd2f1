//! Integration tests of the engine with real processes. One binary keeps link time down.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod suite;
