//! agentty-server: MCP tool contracts, model-facing notices and transports.

pub mod notice;
pub mod server;
pub mod terminal;

pub use server::{Agentty, Settings};
