//! agentty-server: the MCP face of agentty. The tool families (`terminal/`, `tasks/`,
//! `shells/`), each with its contract, wording and tests; what they share (`tools/`,
//! `confinement/`, `escalation/`, `session/`, `job_words`); the server they extend (`server`),
//! the MCP handler (`handler`), HTTP sessions (`http_sessions`), the stdio transport
//! (`transport`), what the web view reads (`view`, `secrets`), the drain after SIGTERM
//! (`drain`) and the counters `/metrics` reports (`metrics`). See docs/ARCHITECTURE.md.

mod caller;
pub mod confinement;
mod drain;
pub mod escalation;
mod handler;
mod http_sessions;
mod job_words;
pub mod metrics;
pub mod network;
mod own_dirs;
mod own_lines;
mod schemas;
mod scrape;
pub mod secrets;
pub mod server;
mod session;
mod settings;
pub mod shells;
pub mod tasks;
pub mod terminal;
mod tools;
pub mod transport;
pub mod view;
pub mod view_calls;
pub mod view_keyboard;

pub use drain::{DRAINING, Drained};
pub use server::Agentty;
pub use session::Caller;
pub use session::kept;
pub use session::kept::{Kept, Resuming};
pub use settings::Settings;

#[cfg(test)]
mod notice_tests;
