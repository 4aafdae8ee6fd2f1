//! The dangerous-command table: one static slice, each rule with a stable kebab-case name (what
//! users put in the allow-list and what a block message names) and a one-line reason.
//!
//! A rule looks at the whole [`Analysis`] rather than one command, because some dangers live
//! between commands (`curl … | sh`, a function that pipes itself into itself). Each check returns
//! the text of the offending command. The table is a guardrail against slips, so every check
//! matches a specific destructive shape and leaves look-alikes alone (`rm -rf ./build`,
//! `dd if=a of=b`, `kill -9 12345`, `curl … | jq`).

use crate::command::program_name;
use crate::command::{Analysis, SimpleCommand};
use crate::invocation::{code_arg, runs_stdin};
use crate::lex::Dialect;
use crate::powershell::ps_param_is;
use crate::targets::{Critical, critical_path, home_relative, is_block_device, windows_critical};

mod delete;
mod disk;
mod network;
mod places;
mod processes;

use delete::*;
use disk::*;
use network::*;
use places::*;
use processes::*;

/// One entry of the table.
#[derive(Debug)]
pub struct Rule {
    /// Stable kebab-case name, used in the allow-list and in block messages.
    pub name: &'static str,
    /// One-line English reason, shown to the model when the rule fires.
    pub reason: &'static str,
    /// Returns the offending command's text when the rule fires.
    pub(crate) check: fn(&Analysis) -> Option<String>,
}

/// Every rule, in the order they are tried.
pub static RULES: &[Rule] = &[
    Rule {
        name: "rm-root",
        reason: "deletes (or moves away) the filesystem root, a drive, the home directory or a top-level system directory recursively",
        check: rm_root,
    },
    Rule {
        name: "find-delete-root",
        reason: "deletes files found under the filesystem root, the home directory or a system directory, or changes their permissions or owner",
        check: find_delete_root,
    },
    Rule {
        name: "format-disk",
        reason: "formats a disk or volume, destroying the data on it",
        check: format_disk,
    },
    Rule {
        name: "disk-overwrite",
        reason: "writes over a raw block device, destroying the filesystem on it",
        check: disk_overwrite,
    },
    Rule {
        name: "fork-bomb",
        reason: "defines a function that starts copies of itself without bound (a fork bomb)",
        check: fork_bomb,
    },
    Rule {
        name: "chmod-root",
        reason: "changes permissions or ownership of the filesystem root or a top-level system directory, or recursively of the home directory",
        check: chmod_root,
    },
    Rule {
        name: "download-exec",
        reason: "runs code downloaded from the network without saving or reviewing it first",
        check: download_exec,
    },
    Rule {
        name: "shutdown",
        reason: "shuts down or reboots the machine",
        check: shutdown,
    },
    Rule {
        name: "kill-all",
        reason: "sends a signal to every process the user can reach (pid -1)",
        check: kill_all,
    },
    Rule {
        name: "too-deep",
        reason: "nests scripts (`sh -c`, `eval`) deeper than the guard reads, so what it runs cannot be checked; unnest it",
        check: too_deep,
    },
];

fn too_deep(a: &Analysis) -> Option<String> {
    a.too_deep.clone()
}

/// Looks a rule up by name.
pub fn rule(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.name == name)
}

/// The first command judged (as written or as expanded) that `pred` holds of.
pub(super) fn first(a: &Analysis, pred: impl Fn(&SimpleCommand) -> bool) -> Option<String> {
    a.judged().find(|c| pred(c)).map(|c| c.text.clone())
}

pub(super) fn args(c: &SimpleCommand) -> &[String] {
    c.argv.get(1..).unwrap_or_default()
}

/// Operands (non-option words) of a GNU-style command, honouring `--`.
pub(super) fn operands(c: &SimpleCommand) -> impl Iterator<Item = &String> {
    let mut done = false;
    args(c).iter().filter(move |a| {
        if done {
            return true;
        }
        if a.as_str() == "--" {
            done = true;
            return false;
        }
        !(a.starts_with('-') && a.len() > 1)
    })
}

/// Whether a GNU-style option is present: a long name, or a short letter inside a cluster.
pub(super) fn has_flag(c: &SimpleCommand, short: &[char], long: &[&str]) -> bool {
    for a in args(c) {
        if a == "--" {
            break;
        }
        if let Some(name) = a.strip_prefix("--") {
            let name = name.split('=').next().unwrap_or(name);
            if long.contains(&name) {
                return true;
            }
        } else if let Some(cluster) = a.strip_prefix('-')
            && cluster.chars().any(|ch| short.contains(&ch))
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests;
