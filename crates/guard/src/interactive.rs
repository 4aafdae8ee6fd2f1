//! Programs that need a terminal to do anything: an editor, a full-screen monitor, `watch`.
//! Run on a pipe with no input they do not fail, they wait (vim waits for keys until the
//! call's timeout, two minutes by default), so the caller refuses them at once with advice that
//! fits, instead of a timeout whose advice ("raise timeout_ms") does not.
//!
//! Only what is certain counts: the program runs in the foreground, its stdin is not fed by a
//! pipe or a redirection, and it is not asked for a batch mode (`vim -es`, `emacs --batch`,
//! `top -b`, `vim +wq`). Pagers (`less`, `more`, `man`) are not here: on a pipe they print and
//! end, as `cat` would.

use crate::command::{Analysis, SimpleCommand};

/// Why a program needs a terminal; the advice depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalKind {
    /// vim, nano, emacs, …: edits interactively.
    Editor,
    /// top, htop, …: a full-screen, ever-refreshing view.
    Monitor,
    /// `watch CMD`: runs CMD again and again, forever.
    Watch,
}

/// A command of the line that needs a terminal it will not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsTerminal {
    /// The program as matched (`vim`).
    pub program: String,
    pub kind: TerminalKind,
}

const EDITORS: &[&str] = &[
    "vim", "vi", "nvim", "view", "vimdiff", "gvim", "nano", "pico", "emacs", "micro", "hx",
    "helix", "joe", "kak", "mcedit", "ne",
];
const MONITORS: &[&str] = &[
    "top", "htop", "btop", "atop", "nvtop", "glances", "iotop", "iftop", "nethogs", "bmon",
];

/// The first command of `line` that needs a terminal (see the module comment).
pub fn needs_terminal(line: &str) -> Option<NeedsTerminal> {
    // Most lines name none of these programs: skip the parse for them.
    let mentions = |names: &[&str]| names.iter().any(|n| line.contains(n));
    if !mentions(EDITORS) && !mentions(MONITORS) && !line.contains("watch") {
        return None;
    }
    Analysis::of_line(line, None).needs_terminal()
}

/// [`needs_terminal`] for an argv executed directly.
pub fn argv_needs_terminal(argv: &[String]) -> Option<NeedsTerminal> {
    Analysis::of_argv(argv, None).needs_terminal()
}

/// The first command of `analysis` that needs a terminal (see the module comment).
pub(crate) fn scan(analysis: &Analysis) -> Option<NeedsTerminal> {
    analysis.commands.iter().find_map(|c| {
        let fed = c.pipeline.is_some_and(|(_, stage)| stage > 0)
            || c.redirects.iter().any(|r| r.op.starts_with('<'));
        if c.background || fed || c.function.is_some() {
            return None;
        }
        let program = c.program.as_str();
        let kind = if EDITORS.contains(&program) {
            (!editor_batch(c)).then_some(TerminalKind::Editor)?
        } else if MONITORS.contains(&program) {
            (!monitor_batch(c)).then_some(TerminalKind::Monitor)?
        } else if program == "watch" || c.wrappers.iter().any(|w| w == "watch") {
            TerminalKind::Watch
        } else {
            return None;
        };
        let program = if kind == TerminalKind::Watch {
            "watch"
        } else {
            program
        };
        Some(NeedsTerminal {
            program: program.to_owned(),
            kind,
        })
    })
}

/// `vim -es`, `vim +wq f`, `vim -c q`, `emacs --batch`, `nano --version`: no terminal needed.
fn editor_batch(c: &SimpleCommand) -> bool {
    let args = &c.argv[1.min(c.argv.len())..];
    args.iter().enumerate().any(|(i, a)| {
        let a = a.as_str();
        matches!(
            a,
            "-es"
                | "-Es"
                | "-e"
                | "-s"
                | "--headless"
                | "--batch"
                | "-batch"
                | "--script"
                | "--version"
                | "-v"
                | "-V"
                | "--help"
                | "-h"
                | "-x"
        ) || (a.starts_with('+') && a.contains('q'))
            || (i > 0 && args[i - 1] == "-c" && a.contains('q'))
            || a.starts_with("--eval")
            || a == "-f"
    })
}

/// `top -b`, `top -bn1`, `iotop -b`: batch mode prints and ends.
fn monitor_batch(c: &SimpleCommand) -> bool {
    c.argv.iter().skip(1).any(|a| {
        a == "--batch"
            || a == "--version"
            || a == "--help"
            || a == "-h"
            || a == "-v"
            || (a.starts_with('-') && !a.starts_with("--") && a.contains('b'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editors_and_monitors_without_input_need_a_terminal() {
        for (line, program, kind) in [
            ("vim notes.txt", "vim", TerminalKind::Editor),
            ("cd src && nano main.rs", "nano", TerminalKind::Editor),
            ("sudo vi /etc/hosts", "vi", TerminalKind::Editor),
            ("EDITOR=x emacs -nw f", "emacs", TerminalKind::Editor),
            ("top", "top", TerminalKind::Monitor),
            ("htop -d 10", "htop", TerminalKind::Monitor),
            ("watch -n 1 ls", "watch", TerminalKind::Watch),
            ("git status; vim +10 f", "vim", TerminalKind::Editor),
        ] {
            assert_eq!(
                needs_terminal(line),
                Some(NeedsTerminal {
                    program: program.into(),
                    kind
                }),
                "{line}"
            );
        }
        let argv: Vec<String> = ["vim", "x"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert!(argv_needs_terminal(&argv).is_some());
    }

    #[test]
    fn batch_modes_fed_input_and_look_alikes_do_not() {
        for line in [
            "vim -es -c 'g/x/d' -c wq f",
            "vim +wq f",
            "ex -s f < script",
            "emacs --batch -l build.el",
            "top -b -n 1",
            "top -bn1 | head",
            "echo ':q' | vim -",
            "vim < keys",
            "vim f &",
            "less README.md",
            "man ls",
            "grep vim notes.txt",
            "echo watch out",
            "cargo watch --help",
            "stopwatch",
            "nvim --headless +PlugInstall +qa",
            "nano --version",
        ] {
            assert_eq!(needs_terminal(line), None, "{line}");
        }
    }
}
