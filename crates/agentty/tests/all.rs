//! End-to-end tests: the real `agentty` binary driven by rmcp's client over stdio.

mod suite;
