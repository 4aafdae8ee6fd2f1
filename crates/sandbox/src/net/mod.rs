//! Network egress for confined commands (docs/BEHAVIOUR.md §13), the kernel's half: the
//! supervisor that makes their connections (`supervisor.rs`), and their listening sockets where
//! they run in a network namespace of the session's own (`listening.rs`), and every other connect
//! where loopback is closed (`unix.rs`), over seccomp user
//! notification (`notify.rs`), closing the files it holds off its thread (`closer.rs`). What is allowed is the server's to judge ([`Judge`]); the seccomp filter's
//! socket rules are in `seccomp.rs`, the Landlock TCP rule in `landlock.rs`.

mod closer;
#[cfg(test)]
mod closing_tests;
mod credentials;
mod listening;
mod notify;
mod release;
#[cfg(test)]
mod shares_tests;
mod supervisor;
mod unix;
mod waiting;

pub(crate) use closer::owner;
pub use supervisor::{Judge, Supervisor, Verdict};
pub use unix::keep_from_commands;
