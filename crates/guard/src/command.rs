//! The data model the parser produces and the rules, the classifier and the report read: one
//! [`SimpleCommand`] per command the line would run, collected in an [`Analysis`].
//!
//! It is flat on purpose: rules ask "is there an `rm` with these operands anywhere?", and the few
//! relations they need (same pipeline, inside `$(…)`, inside a function) are kept as ids and
//! indices rather than as a tree.

use crate::lex::Dialect;

/// One redirection attached to a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator as written: `>`, `>>`, `&>`, `2>`'s `>`, `<`, `<<` (heredoc), `<<<`.
    pub op: String,
    /// The target word with quotes removed; for a heredoc, its body.
    pub target: String,
    /// The descriptor written before the operator (`2` in `2>&1`), when one was.
    pub fd: Option<u32>,
    /// A file target as written (quotes kept), when the parser saw it: what expansion reads
    /// (`D=/dev/sda; cat x > "$D"`).
    pub(crate) raw: Option<String>,
}

impl Redirect {
    /// Whether this redirection writes to its target (rather than reading or duplicating a fd).
    pub fn writes(&self) -> bool {
        let op = self.op.as_str();
        if op.starts_with('<') && op != "<>" {
            return false;
        }
        if op.ends_with('&') || op == ">&" {
            // `2>&1`, `>&2`: a descriptor duplication unless the target is a file name.
            return !self.target.chars().all(|c| c.is_ascii_digit() || c == '-');
        }
        true
    }
}

/// A single command the line would execute, after wrappers were peeled off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The argv, quotes removed, `$VAR`/`$(…)` kept as text. Empty for a bare redirection.
    pub argv: Vec<String>,
    /// `argv[0]` resolved for matching (`program_name`): basename, lower-case, `.exe` dropped
    /// (`/bin/RM` → `rm`).
    pub program: String,
    /// Wrappers peeled to reach this command, outermost first (`sudo`, `sh -c`, `find -exec`).
    pub wrappers: Vec<String>,
    /// Redirections applying to it, including those of an enclosing `{ …; } > file`.
    pub redirects: Vec<Redirect>,
    /// The source text it came from (for messages).
    pub text: String,
    /// The language the command was written in.
    pub dialect: Dialect,
    /// (pipeline id, stage) when part of a pipeline of two or more commands… or of one.
    pub pipeline: Option<(u32, u32)>,
    /// Run in the background with `&`.
    pub background: bool,
    /// Index into [`Analysis::functions`] of the function body it sits in.
    pub function: Option<usize>,
    /// Indices of commands found inside this command's words (`$(…)`, `<(…)`, backticks).
    pub inner: Vec<usize>,
    /// Found by the token scan rather than the parser (the line did not parse cleanly).
    pub approximate: bool,
    /// Each directory it may run in, as far as the line shows: the caller's directory moved by
    /// the `cd`s before it in the same shell. Absolute, or under `~` when the home is not
    /// known; `None` for one the text does not tell (`cd -`, no place given).
    pub cwd: Vec<Option<String>>,
}

/// Everything the rules and the read-only classifier look at.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// All simple commands, inner ones (from substitutions) before the command using them.
    pub commands: Vec<SimpleCommand>,
    /// Second readings of commands whose words the line's own assignments or its known
    /// environment resolve (`D=$HOME; rm -rf "$D"` is also read `rm -rf /home/me`), and what
    /// they run in turn. The rules judge these with [`Analysis::commands`]; other questions
    /// (read-only, needs a terminal, which parser) read the line as written. `inner` indices
    /// here point into this list.
    pub expanded: Vec<SimpleCommand>,
    /// Names of the functions defined, indexed by [`SimpleCommand::function`].
    pub functions: Vec<String>,
    /// False when any part was understood only approximately (parse error, a cap, PowerShell).
    pub exact: bool,
    /// Source texts that were token-scanned, kept for the fork-bomb text check.
    pub scanned: Vec<String>,
    /// The whole line as given.
    pub source: String,
    /// A script nested deeper than the guard reads (`sh -c` in `sh -c` … past the cap): what
    /// it would run is unknown, so the `too-deep` rule refuses it.
    pub too_deep: Option<String>,
    /// Where the line runs, when the caller knows: lets `rm -rf ../..` be judged by where it
    /// lands (see [`crate::check_at`]).
    pub place: Option<Place>,
    /// Each directory the line's shell may end in (see [`SimpleCommand::cwd`]).
    pub(crate) end_cwd: Vec<Option<String>>,
}

impl Analysis {
    /// Every command the rules judge: as written, then as expanded.
    pub(crate) fn judged(&self) -> impl Iterator<Item = &SimpleCommand> {
        self.commands.iter().chain(&self.expanded)
    }
}

/// The directory a line runs in and the user's home, both absolute; and, when known, the
/// environment it runs with, so that `$VAR` in a target can be read as the shell will expand it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub cwd: String,
    pub home: Option<String>,
    /// `Some`: the line runs with this process's environment plus these variables (a
    /// `terminal` call's `env`), so a variable set in neither is unset. `None`: not known.
    pub env: Option<Vec<(String, String)>>,
}

impl Place {
    /// A line running in `cwd`, for this process's user (`$HOME`).
    pub fn at(cwd: &std::path::Path) -> Place {
        Place {
            cwd: cwd.display().to_string(),
            home: std::env::var("HOME").ok(),
            env: None,
        }
    }

    /// The same place, for a line that runs with this process's environment plus `vars`.
    #[must_use]
    pub fn with_env(mut self, vars: Vec<(String, String)>) -> Place {
        self.env = Some(vars);
        self
    }
}

/// Shell-quotes a word for display when it needs it.
pub(crate) fn quote_for_display(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^~".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Resolves `argv[0]` for matching: `/usr/bin/RM` → `rm`, `C:\…\pwsh.exe` → `pwsh`.
pub fn program_name(arg0: &str) -> String {
    if arg0.starts_with(['$', '`']) {
        // `$(curl …)` run as a command: keep the text whole for the rules to read.
        return arg0.to_lowercase();
    }
    let base = arg0.rsplit(['/', '\\']).next().unwrap_or(arg0);
    let lower = base.to_lowercase();
    match lower.strip_suffix(".exe") {
        Some(stem) if !stem.is_empty() => stem.to_string(),
        _ => lower,
    }
}
