//! What one peeling step finds: the vocabulary shared by the unwrapper (`unwrap.rs`) and the
//! dialect peelers it asks (`powershell.rs`).
//!
//! A leaf of its own so a peeler can return a [`Peel`] without importing the unwrapper that
//! calls it. No peeler calls back into the unwrapper: a script a wrapper runs goes back to the
//! parser (`parse/mod.rs`), which peels it again one level deeper.

use crate::lex::Dialect;

/// What one peeling step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peel {
    /// Not a wrapper (or a wrapper with nothing to run).
    Done,
    /// A wrapper running the rest as an argv.
    Command {
        /// The wrapper, e.g. `sudo`.
        wrapper: String,
        /// The wrapped argv.
        argv: Vec<String>,
    },
    /// A wrapper running a script text (`sh -c`, `eval`, `watch`, `pwsh -Command`).
    Script {
        /// The wrapper, e.g. `bash -c`.
        wrapper: String,
        /// The script text.
        script: String,
        /// The language of the script.
        dialect: Dialect,
    },
}
