//! The guard's public decision: configuration (the allow-list), the verdict, and the block.
//!
//! `check` is what the server calls before spawning; it never panics and runs in microseconds for
//! ordinary lines (see `benches/verdict.rs`). Rules are tried in table order and the first one
//! that fires and is not allowed blocks; otherwise the read-only classification rides along so an
//! approval policy can use it without a second parse.

use crate::command::{Analysis, Place};
use crate::notice;
use crate::readonly;
use crate::rules::{RULES, Rule};

/// The guard's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuardConfig {
    /// Rule names switched off (e.g. `"download-exec"`).
    pub allow: Vec<String>,
}

/// The allow-list named rules that do not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", notice::unknown_rules(.unknown, &rule_names().collect::<Vec<_>>()))]
pub struct UnknownRules {
    /// The names that match no rule.
    pub unknown: Vec<String>,
}

impl GuardConfig {
    /// Names in `allow` that match no rule (for the config loader's error).
    pub fn unknown_rules(&self) -> Vec<String> {
        self.allow
            .iter()
            .filter(|name| !RULES.iter().any(|r| r.name == name.as_str()))
            .cloned()
            .collect()
    }

    /// `Err` naming the unknown rules and listing the known ones.
    pub fn validate(&self) -> Result<(), UnknownRules> {
        let unknown = self.unknown_rules();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(UnknownRules { unknown })
        }
    }

    /// Whether `rule` is switched off.
    pub fn allows(&self, rule: &str) -> bool {
        self.allow.iter().any(|a| a == rule)
    }
}

/// All rule names, in table order.
pub fn rule_names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.name)
}

/// The guard's decision on one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// May run. `read_only` says whether it changes nothing (see `readonly.rs`).
    Allow {
        /// Every simple command is read-only and nothing is written by redirection.
        read_only: bool,
    },
    /// Must not run.
    Block(Block),
}

impl Verdict {
    /// Whether the line was blocked.
    pub fn is_blocked(&self) -> bool {
        matches!(self, Self::Block(_))
    }

    /// Whether the line was allowed and is read-only.
    pub fn is_read_only(&self) -> bool {
        matches!(self, Self::Allow { read_only: true })
    }
}

/// Why a line was blocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The rule's stable name.
    pub rule: &'static str,
    /// The rule's one-line reason.
    pub reason: &'static str,
    /// The offending simple command as text.
    pub command: String,
}

impl Block {
    /// The model-facing message: "blocked by guard rule `rm-root`: …".
    pub fn message(&self) -> String {
        notice::blocked(self.rule, self.reason, &self.command)
    }
}

// One-question shorthands over [`Analysis`] (see `line.rs`), for callers that ask one thing
// of a line: the CLI's report, the corpus tests, the benches. A caller with several questions
// reads the line once with `Analysis::of_line` and asks them all.

/// Judges a shell command line (run via `$SHELL -c`).
pub fn check(command_line: &str, cfg: &GuardConfig) -> Verdict {
    Analysis::of_line(command_line, None).verdict(cfg)
}

/// Judges an argv executed directly (`argv[0]` may itself be `bash -c …`).
pub fn check_argv(argv: &[String], cfg: &GuardConfig) -> Verdict {
    Analysis::of_argv(argv, None).verdict(cfg)
}

/// Like [`check`], for a line that runs in `place`: relative targets (`rm -rf ../..`,
/// `rm -rf "$PWD/.."`, `cd .. && rm -rf *`) are judged by the directory they name there.
pub fn check_at(command_line: &str, cfg: &GuardConfig, place: Place) -> Verdict {
    Analysis::of_line(command_line, Some(place)).verdict(cfg)
}

/// The directory a shell command line run in `place` ends in: `place.cwd` moved by the line's
/// `cd`s. `None` when that cannot be told from the text (`cd "$DIR"`, a subshell).
pub fn cwd_after(command_line: &str, place: Place) -> Option<String> {
    Analysis::of_line(command_line, Some(place)).cwd_after()
}

/// Like [`check_argv`], for an argv that runs in `place`.
pub fn check_argv_at(argv: &[String], cfg: &GuardConfig, place: Place) -> Verdict {
    Analysis::of_argv(argv, Some(place)).verdict(cfg)
}

/// Whether a shell command line runs a shell that reads its script from stdin (`bash`,
/// `sh -s`, `cat x | bash`, wrappers peeled): text fed to its stdin is then a command line too.
pub fn reads_stdin_as_script(command_line: &str) -> bool {
    Analysis::of_line(command_line, None).reads_stdin_as_script()
}

/// [`reads_stdin_as_script`] for an argv executed directly.
pub fn argv_reads_stdin_as_script(argv: &[String]) -> bool {
    Analysis::of_argv(argv, None).reads_stdin_as_script()
}

/// Whether a shell command line is read-only (ignores the dangerous rules).
pub fn is_read_only(command_line: &str) -> bool {
    Analysis::of_line(command_line, None).is_read_only()
}

/// The verdict for an analysed line.
pub fn verdict(analysis: &Analysis, cfg: &GuardConfig) -> Verdict {
    for rule in RULES {
        if cfg.allows(rule.name) {
            continue;
        }
        if let Some(command) = (rule.check)(analysis) {
            return Verdict::Block(block(rule, whole_pipeline(analysis, command)));
        }
    }
    Verdict::Allow {
        read_only: readonly::line_is_read_only(analysis),
    }
}

fn block(rule: &'static Rule, command: String) -> Block {
    Block {
        rule: rule.name,
        reason: rule.reason,
        command,
    }
}

/// Every rule that fires, allow-list ignored (for the report).
pub(crate) fn firing_rules(analysis: &Analysis) -> Vec<Block> {
    RULES
        .iter()
        .filter_map(|r| (r.check)(analysis).map(|c| block(r, whole_pipeline(analysis, c))))
        .collect()
}

/// The offending command as the user wrote it: for a stage of a pipeline (`sh` in
/// `curl … | sh`), the whole pipeline, since the stage alone says nothing of what it runs.
fn whole_pipeline(analysis: &Analysis, command: String) -> String {
    let Some((id, _)) = analysis
        .commands
        .iter()
        .find(|c| c.text == command)
        .and_then(|c| c.pipeline)
    else {
        return command;
    };
    let mut stages: Vec<(u32, &str)> = analysis
        .commands
        .iter()
        .filter_map(|c| match c.pipeline {
            Some((p, stage)) if p == id => Some((stage, c.text.as_str())),
            _ => None,
        })
        .collect();
    if stages.len() < 2 {
        return command;
    }
    stages.sort_by_key(|(stage, _)| *stage);
    stages.dedup_by_key(|(stage, _)| *stage);
    stages
        .iter()
        .map(|(_, text)| *text)
        .collect::<Vec<_>>()
        .join(" | ")
}
