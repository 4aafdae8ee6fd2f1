//! agentty-server: MCP tool contracts, model-facing notices and transports.

mod args;
mod catalog;
pub mod confinement;
mod entry;
pub mod escalation;
pub mod notice;
mod planted;
mod schemas;
pub mod secrets;
pub mod server;
mod session;
pub mod shell_notice;
pub mod shells;
pub mod task_notice;
pub mod tasks;
mod tasks_ext;
pub mod terminal;
mod timing;
pub mod transport;
pub mod view;

pub use server::{Agentty, Settings};
pub use session::Caller;
