//! Turns a command line into the flat list of simple commands it would run.
//!
//! Parser choice: **tree-sitter-bash 0.25 on tree-sitter 0.25** (the pair OpenAI codex uses for the
//! same job). Reasons: it is maintained by the tree-sitter organisation and used by every editor that
//! highlights shell, so odd-but-valid bash (heredocs, `case`, `[[ … ]]`, arrays) parses; it is
//! error-tolerant, so a typo somewhere still yields a tree for the rest of the line (we then add a
//! token-level scan for the dangerous rules only); and it is fast (microseconds per line). Its cost is
//! one large generated C file (~10 MB `parser.c`, about a minute to compile once on 2 cores, then
//! cached) and three small Rust crates (`regex` comes with `tree-sitter`). `brush-parser` (pure Rust)
//! was the alternative: its 0.4 release pulls `insta`, `bon`, `cached` and `peg` as normal
//! dependencies (a heavier tree of proc-macros than one C file) and it reports a parse error instead
//! of a partial tree, which is the case a guard most needs to handle well. tree-sitter 0.26/0.27 would
//! also load the grammar (ABI 15), but 0.27 needs Rust 1.90 and the workspace promises 1.88.
//! One defect found by our fuzz test is worked around in `treesitter.rs`: the grammar's C scanner
//! crashes on some non-ASCII input, so tree-sitter parses an offset-preserving ASCII view.
//!
//! Shape: a walker over the syntax tree emits one [`SimpleCommand`] per `command` node (and per
//! declaration / test / bare redirection), carrying the context rules need: pipeline id and stage,
//! background `&`, the enclosing function, redirections inherited from `{ …; } > file`, and the
//! commands found inside its words' `$(…)`. Each emitted argv goes through `unwrap::peel`, which
//! strips wrappers (`sudo`, `env`, `timeout`, …) and hands back `sh -c '…'`/`eval` bodies to be parsed
//! again, one nesting level deeper. Every loop and recursion here is capped (constants below), and
//! anything cut off by a cap or a parse error is scanned by `lex::segment` instead, so the dangerous
//! rules stay conservative while ordinary commands are never blocked for being hard to parse.
//!
//! The walk follows the shell as it runs the line (`state.rs`): the directory each command runs
//! in and the values the line's assignments (and a known environment) give its variables, scoped
//! as the shell scopes them. A command whose words expand to something else than they read as
//! written is recorded a second time, as expanded (`emit.rs`, `expand.rs`): `D=$HOME; rm -rf
//! "$D"` is also `rm -rf $HOME`. That reading is only added, never put in place of the written
//! one, so following values can make the rules see more, not less. The token scan follows none
//! of this.

use tree_sitter::Node;

use crate::command::{Analysis, Place, Redirect, SimpleCommand, program_name, quote_for_display};
use crate::invocation::{find_exec, shell_reads_stdin};
use crate::lex::{self, Dialect};
use crate::peel::Peel;
use crate::treesitter::{node_text, parse_tree};
use crate::unwrap;

mod effects;
mod emit;
mod expand;
mod params;
mod pattern;
mod state;
mod subst;
mod walk;

use emit::{Assign, Written};
use expand::{Expander, MAX_READINGS};
use state::{State, Val, in_env};

/// How many times a script may be re-parsed inside another (`sh -c "sh -c '…'"`, `eval`, heredocs
/// fed to a shell). Real command lines use two or three; past this we scan tokens instead.
const MAX_NESTING_DEPTH: u32 = 8;
/// How deep the walker follows the syntax tree before scanning the rest as tokens. Each `$(…)` level
/// costs about three tree levels, so this allows ~60 nested substitutions; it bounds stack use.
const MAX_TREE_DEPTH: usize = 200;
/// Wrappers peeled from one command (`sudo env nice timeout …`).
const MAX_WRAPPERS: usize = 16;
/// Longer command lines skip tree-sitter and get the token scan. 1 MiB is far beyond any real
/// command line (heredocs that write whole files included) and parses in tens of milliseconds.
const MAX_PARSE_BYTES: usize = 1 << 20;
/// Second readings (commands read again with their variables put in) made per line; past this
/// the rest is read as written. Real lines make a handful.
const MAX_READINGS_PER_LINE: usize = 256;

/// Walking context: what the enclosing constructs imply for the commands inside.
#[derive(Debug, Clone)]
struct Ctx {
    depth: u32,
    wrappers: Vec<String>,
    dialect: Dialect,
    pipeline: Option<(u32, u32)>,
    background: bool,
    function: Option<usize>,
    redirects: Vec<Redirect>,
}

impl Ctx {
    fn root(dialect: Dialect) -> Self {
        Self {
            depth: 0,
            wrappers: Vec::new(),
            dialect,
            pipeline: None,
            background: false,
            function: None,
            redirects: Vec::new(),
        }
    }

    /// The context inside `$(…)`: a separate process tree, not part of the outer pipeline.
    fn nested(&self) -> Self {
        Self {
            pipeline: None,
            background: false,
            redirects: Vec::new(),
            ..self.clone()
        }
    }
}

/// Analyses a shell command line (as run by `$SHELL -c`).
pub fn analyze(command_line: &str) -> Analysis {
    analyze_at(command_line, None)
}

/// [`analyze`] for a line that runs in `place`: the shell state it follows (directory,
/// variables unset in a known environment) starts there.
pub(crate) fn analyze_at(command_line: &str, place: Option<Place>) -> Analysis {
    let mut b = Builder::new(place);
    if command_line.contains('\0') {
        // A C consumer stops reading at NUL, a Rust one refuses the line: judge the text on each
        // side of a NUL as separate lines, so neither reading hides a dangerous command.
        b.exact = false;
        b.script(
            &command_line.replace('\0', "\n"),
            &Ctx::root(Dialect::Posix),
        );
    } else {
        b.script(command_line, &Ctx::root(Dialect::Posix));
    }
    let mut analysis = b.finish();
    analysis.source = command_line.to_owned();
    analysis
}

/// Analyses an argv executed directly (no shell between us and `argv[0]`).
pub fn analyze_argv(argv: &[String]) -> Analysis {
    analyze_argv_at(argv, None)
}

/// [`analyze_argv`] for an argv that runs in `place`.
pub(crate) fn analyze_argv_at(argv: &[String], place: Option<Place>) -> Analysis {
    let mut b = Builder::new(place);
    // execve sees each argument only up to its first NUL.
    let argv: Vec<String> = argv
        .iter()
        .map(|a| a.split('\0').next().unwrap_or_default().to_string())
        .collect();
    let text = argv
        .iter()
        .map(|a| quote_for_display(a))
        .collect::<Vec<_>>()
        .join(" ");
    b.emit(Written::plain(argv, &text), &Ctx::root(Dialect::Posix));
    let mut analysis = b.finish();
    // The argv as a shell would show it: what a question about the text (`cwd_after`) reads.
    analysis.source = text;
    analysis
}

struct Builder {
    commands: Vec<SimpleCommand>,
    /// Commands read with their variables put in (see [`Analysis::expanded`]).
    expanded: Vec<SimpleCommand>,
    functions: Vec<String>,
    exact: bool,
    scanned: Vec<String>,
    too_deep: Option<String>,
    next_pipeline: u32,
    place: Option<Place>,
    /// The shell's variables and directory at the point the walk has reached.
    state: State,
    /// Inside a second reading: commands go to `expanded`.
    reading: u32,
    readings_left: usize,
}

impl Builder {
    fn new(place: Option<Place>) -> Self {
        Self {
            commands: Vec::new(),
            expanded: Vec::new(),
            functions: Vec::new(),
            exact: true,
            scanned: Vec::new(),
            too_deep: None,
            next_pipeline: 1,
            state: State::start(place.as_ref()),
            place,
            reading: 0,
            readings_left: MAX_READINGS_PER_LINE,
        }
    }

    fn finish(self) -> Analysis {
        Analysis {
            commands: self.commands,
            expanded: self.expanded,
            functions: self.functions,
            exact: self.exact,
            scanned: self.scanned,
            too_deep: self.too_deep,
            source: String::new(),
            place: self.place,
            end_cwd: self.state.cwd,
        }
    }

    /// How many commands were emitted so far where the next one goes (for `inner` ranges).
    fn emitted(&self) -> usize {
        if self.reading > 0 {
            self.expanded.len()
        } else {
            self.commands.len()
        }
    }

    /// Runs `f` on a copy of the state, dropped after: a subshell, a pipeline stage, `&`.
    fn isolated(&mut self, f: impl FnOnce(&mut Self)) {
        let saved = self.state.clone();
        f(self);
        self.state = saved;
    }

    /// Runs `f` as a part that may not run: the state after is either.
    fn maybe(&mut self, f: impl FnOnce(&mut Self)) {
        let before = self.state.clone();
        f(self);
        self.state.merge(before);
    }

    fn expander(&self) -> Expander<'_> {
        Expander {
            state: &self.state,
            place: self.place.as_ref(),
        }
    }

    /// Parses `text` as a script in `ctx` and emits its commands.
    fn script(&mut self, text: &str, ctx: &Ctx) {
        if ctx.dialect == Dialect::PowerShell {
            // No PowerShell grammar: its commands always come from the segmenter.
            self.exact = false;
            self.scan(text, ctx, false);
            return;
        }
        if ctx.depth > MAX_NESTING_DEPTH || text.len() > MAX_PARSE_BYTES {
            self.exact = false;
            self.scan(text, ctx, true);
            return;
        }
        let Some(tree) = parse_tree(text) else {
            self.exact = false;
            self.scan(text, ctx, true);
            return;
        };
        let root = tree.root_node();
        self.walk(root, text, ctx, 0);
        if root.has_error() {
            // Keep what parsed, and let the dangerous rules also see a token-level reading.
            self.exact = false;
            self.scan(text, ctx, true);
        }
    }

    /// The token-level reading of `text` (see `lex::segment`).
    fn scan(&mut self, text: &str, ctx: &Ctx, approximate: bool) {
        if approximate {
            self.scanned.push(text.to_string());
        }
        let segments = lex::segment(text, ctx.dialect);
        let base = self.next_pipeline;
        let mut produced: Vec<(usize, usize)> = Vec::with_capacity(segments.len());
        let mut max_pipeline = 0;
        for seg in segments {
            max_pipeline = max_pipeline.max(seg.pipeline);
            let start = self.emitted();
            let inner: Vec<usize> = seg
                .inner
                .iter()
                .filter_map(|&i| produced.get(i))
                .flat_map(|&(a, b)| a..b)
                .collect();
            let c = Ctx {
                pipeline: Some((base + seg.pipeline, seg.stage)),
                background: seg.background || ctx.background,
                ..ctx.clone()
            };
            let redirects = ctx
                .redirects
                .iter()
                .cloned()
                .chain(seg.redirects.into_iter().map(|(op, target)| Redirect {
                    op,
                    target,
                    fd: None,
                    raw: None,
                }))
                .collect();
            let text = seg.words.join(" ");
            // Without a grammar, `if`/`then`/`do`/`{` simply start the command that follows.
            let keywords = seg
                .words
                .iter()
                .take_while(|w| ctx.dialect == Dialect::Posix && is_keyword(w))
                .count();
            let words = seg.words.get(keywords..).unwrap_or_default().to_vec();
            let written = Written {
                redirects,
                inner,
                approximate,
                ..Written::plain(words, &text)
            };
            self.emit(written, &c);
            produced.push((start, self.emitted()));
        }
        self.next_pipeline = base + max_pipeline + 1;
    }
}

/// Shell reserved words that may precede a command.
fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "if" | "then"
            | "else"
            | "elif"
            | "fi"
            | "do"
            | "done"
            | "while"
            | "until"
            | "esac"
            | "!"
            | "{"
            | "}"
            | "function"
    )
}

/// The text to show for a command: includes its redirections when it has a statement around it.
fn statement_text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    match node.parent() {
        Some(p) if p.kind() == "redirected_statement" => node_text(p, src),
        _ => node_text(node, src),
    }
}
