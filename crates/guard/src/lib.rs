//! agentty-guard: shell parsing, the dangerous-command rules, the read-only classifier and the
//! workspace boundary (docs/BEHAVIOUR.md §6).
//!
//! The guard is a guardrail against slips, not a defence against an adversary: it parses a command
//! line the way the shell would (see `parse.rs` for why tree-sitter-bash), peels wrappers such as
//! `sudo` and `sh -c`, and checks each simple command against one table of rules (`rules.rs`). It
//! never blocks a line just because it is hard to parse; it only becomes more suspicious of the
//! dangerous shapes. All model-facing wording lives in `notice.rs`.
//!
//! Leaf crate: it depends on nothing of ours.

mod boundary;
mod command;
mod interactive;
mod invocation;
mod lex;
mod line;
mod notice;
mod parse;
mod peel;
mod powershell;
mod readonly;
mod report;
mod rules;
mod targets;
mod treesitter;
mod unwrap;
mod verdict;

pub use boundary::{BoundaryError, Workspace};
pub use command::{Analysis, Place, Redirect, SimpleCommand};
pub use interactive::{NeedsTerminal, TerminalKind, argv_needs_terminal, needs_terminal};
pub use lex::Dialect;
pub use parse::{analyze, analyze_argv};
pub use readonly::{command_is_read_only, line_is_read_only};
pub use report::{report, report_argv};
pub use rules::{RULES, Rule, rule};
pub use verdict::{
    Block, GuardConfig, UnknownRules, Verdict, argv_reads_stdin_as_script, check, check_argv,
    check_argv_at, check_at, cwd_after, is_read_only, reads_stdin_as_script, rule_names, verdict,
};
