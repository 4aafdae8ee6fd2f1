//! agentty-core: the engine under every tool.
//!
//! It owns spawning (one seam, [`spawn`]), exit statuses ([`reaper`]), process trees ([`tree`]),
//! output cleaning ([`clean`]) and shaping ([`shape`]), spill files ([`spill`]) and the pipe path
//! of one-shot commands ([`run`]). It knows nothing of MCP: the server crate renders what it
//! returns into words for a model.

pub mod clean;
pub mod limits;
pub mod reaper;
pub mod run;
pub mod shape;
pub mod spawn;
pub mod spill;
pub mod tree;
