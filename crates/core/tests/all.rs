//! Integration tests of the engine with real processes. One binary keeps link time down.

mod suite;
