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

use tree_sitter::Node;

use crate::command::{Analysis, Redirect, SimpleCommand, program_name, quote_for_display};
use crate::invocation::{find_exec, shell_reads_stdin};
use crate::lex::{self, Dialect};
use crate::peel::Peel;
use crate::treesitter::{node_text, parse_tree};
use crate::unwrap;

mod walk;

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
    let mut b = Builder::new();
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
    let mut b = Builder::new();
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
    b.emit(
        argv,
        &text,
        Vec::new(),
        Vec::new(),
        &Ctx::root(Dialect::Posix),
        false,
    );
    let mut analysis = b.finish();
    // The argv as a shell would show it: what a question about the text (`cwd_after`) reads.
    analysis.source = text;
    analysis
}

struct Builder {
    commands: Vec<SimpleCommand>,
    functions: Vec<String>,
    exact: bool,
    scanned: Vec<String>,
    too_deep: Option<String>,
    next_pipeline: u32,
}

impl Builder {
    fn new() -> Self {
        Self {
            commands: Vec::new(),
            functions: Vec::new(),
            exact: true,
            scanned: Vec::new(),
            too_deep: None,
            next_pipeline: 1,
        }
    }

    fn finish(self) -> Analysis {
        Analysis {
            commands: self.commands,
            functions: self.functions,
            exact: self.exact,
            scanned: self.scanned,
            too_deep: self.too_deep,
            source: String::new(),
            place: None,
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
            let start = self.commands.len();
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
            self.emit(words, &text, redirects, inner, &c, approximate);
            produced.push((start, self.commands.len()));
        }
        self.next_pipeline = base + max_pipeline + 1;
    }

    /// Records one command after peeling its wrappers; scripts found on the way are parsed.
    fn emit(
        &mut self,
        argv: Vec<String>,
        text: &str,
        redirects: Vec<Redirect>,
        inner: Vec<usize>,
        ctx: &Ctx,
        approximate: bool,
    ) {
        let (argv, wrappers) = match self.peel_wrappers(argv, text, ctx) {
            Unwrapped::Command { argv, wrappers } => (argv, wrappers),
            Unwrapped::Script {
                script,
                dialect,
                wrappers,
            } => {
                let c = Ctx {
                    depth: ctx.depth + 1,
                    wrappers,
                    dialect,
                    redirects,
                    ..ctx.clone()
                };
                self.script(&script, &c);
                return;
            }
        };
        self.emit_what_it_runs(&argv, &wrappers, text, &redirects, ctx, approximate);
        let program = argv.first().map(|a| program_name(a)).unwrap_or_default();
        self.commands.push(SimpleCommand {
            argv,
            program,
            wrappers,
            redirects,
            text: text.to_string(),
            dialect: ctx.dialect,
            pipeline: ctx.pipeline,
            background: ctx.background,
            function: ctx.function,
            inner,
            approximate,
        });
    }

    /// Peels `argv`'s wrappers (at most [`MAX_WRAPPERS`]), after those of `ctx`, down to the
    /// command it runs or a script. A script past [`MAX_NESTING_DEPTH`] is not read: the line
    /// is marked too deep and the wrapper that runs it is the command.
    fn peel_wrappers(&mut self, argv: Vec<String>, text: &str, ctx: &Ctx) -> Unwrapped {
        let mut argv = argv;
        let mut wrappers = ctx.wrappers.clone();
        for _ in 0..MAX_WRAPPERS {
            match unwrap::peel(&argv, ctx.dialect) {
                Peel::Done => break,
                Peel::Command {
                    wrapper,
                    argv: rest,
                } => {
                    wrappers.push(wrapper);
                    argv = rest;
                }
                Peel::Script {
                    wrapper,
                    script,
                    dialect,
                } => {
                    if ctx.depth >= MAX_NESTING_DEPTH {
                        // What the script runs is not read: refuse rather than pass it.
                        self.exact = false;
                        self.too_deep.get_or_insert_with(|| text.to_string());
                        break;
                    }
                    wrappers.push(wrapper);
                    return Unwrapped::Script {
                        script,
                        dialect,
                        wrappers,
                    };
                }
            }
        }
        Unwrapped::Command { argv, wrappers }
    }

    /// Emits the commands `argv` would run itself: `find -exec`'s, and a heredoc's script fed
    /// to a shell. Past [`MAX_NESTING_DEPTH`] they are not read: the line is marked too deep.
    fn emit_what_it_runs(
        &mut self,
        argv: &[String],
        wrappers: &[String],
        text: &str,
        redirects: &[Redirect],
        ctx: &Ctx,
        approximate: bool,
    ) {
        let nested = |wrapper: &str| Ctx {
            depth: ctx.depth + 1,
            wrappers: wrappers
                .iter()
                .cloned()
                .chain([wrapper.to_string()])
                .collect(),
            dialect: ctx.dialect,
            redirects: Vec::new(),
            ..ctx.clone()
        };
        if ctx.depth >= MAX_NESTING_DEPTH
            && (!find_exec(argv).is_empty() || shell_reads_stdin(argv))
        {
            // A command it would run (`find -exec`, a script on stdin) is not read: refuse.
            self.exact = false;
            self.too_deep.get_or_insert_with(|| text.to_string());
        }
        if ctx.depth < MAX_NESTING_DEPTH {
            for exec in find_exec(argv) {
                self.emit(
                    exec,
                    text,
                    Vec::new(),
                    Vec::new(),
                    &nested("find -exec"),
                    approximate,
                );
            }
            if shell_reads_stdin(argv) {
                for r in redirects {
                    if r.op.starts_with("<<") {
                        let shell = argv.first().map(String::as_str).unwrap_or_default();
                        let c = nested(&format!("{shell} {}", r.op));
                        self.script(&r.target, &c);
                    }
                }
            }
        }
    }
}

/// What peeling a command's wrappers came to.
enum Unwrapped {
    /// The command that finally runs, and the wrappers peeled to reach it.
    Command {
        argv: Vec<String>,
        wrappers: Vec<String>,
    },
    /// A script a wrapper runs, to be parsed one level deeper; the wrappers end with that one.
    Script {
        script: String,
        dialect: Dialect,
        wrappers: Vec<String>,
    },
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
