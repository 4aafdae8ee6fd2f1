//! A command line read once. The server asks the guard several things about one line before it
//! runs (is it blocked? does it need a terminal? does it read a script on stdin? which parser
//! fits its output?) and one after (where did its `cd`s leave it?). Each question is a method of
//! the one [`Analysis`] made by [`Analysis::of_line`] or [`Analysis::of_argv`], so the line is
//! parsed once, however many questions follow.

use crate::command::{Analysis, Place};
use crate::interactive::{self, NeedsTerminal};
use crate::verdict::{self, GuardConfig, Verdict};
use crate::{invocation, parse, readonly};

impl Analysis {
    /// A shell command line (run by `$SHELL -c`), read once. `place`: where it runs, when
    /// known, so relative targets (`rm -rf ../..`) and variables (`$HOME`) are judged there.
    /// The line is followed as the shell runs it from there: the directories its `cd`s lead
    /// to, the values its assignments give, and (when `place` knows the environment) what a
    /// variable the line does not set holds (unset is empty).
    pub fn of_line(command_line: &str, place: Option<Place>) -> Analysis {
        parse::analyze_at(command_line, place)
    }

    /// An argv executed directly (no shell between us and `argv[0]`), read once.
    pub fn of_argv(argv: &[String], place: Option<Place>) -> Analysis {
        parse::analyze_argv_at(argv, place)
    }

    /// The guard's decision: blocked by the first rule that fires and is not allowed.
    pub fn verdict(&self, cfg: &GuardConfig) -> Verdict {
        verdict::verdict(self, cfg)
    }

    /// The first command that needs a terminal it will not have (an editor, `top`, `watch`).
    pub fn needs_terminal(&self) -> Option<NeedsTerminal> {
        interactive::scan(self)
    }

    /// Whether a shell of the line reads its script from stdin (`bash`, `sh -s`, `cat x |
    /// bash`, wrappers peeled): text fed to its stdin is then a command line too.
    pub fn reads_stdin_as_script(&self) -> bool {
        self.commands
            .iter()
            .any(|c| invocation::shell_reads_stdin(&c.argv))
    }

    /// The directory the line ends in: its place's directory moved by its `cd`s. `None` when
    /// that cannot be told from the text (`cd "$DIR"`, a subshell) or the place is not known.
    pub fn cwd_after(&self) -> Option<String> {
        // A subshell or substitution whose `cd` stays inside it is followed, but a line
        // with one is not one to be sure of.
        if !self.exact || self.source.contains(['(', '`']) {
            return None;
        }
        match self.end_cwd.as_slice() {
            [Some(dir)] if dir.starts_with('/') => Some(dir.clone()),
            _ => None,
        }
    }

    /// Whether every command is read-only and nothing is written by redirection (the dangerous
    /// rules aside).
    pub fn is_read_only(&self) -> bool {
        readonly::line_is_read_only(self)
    }
}
