//! The few command substitutions whose output the text tells without running anything:
//! `$(pwd)`, `$(dirname X)`, `$(realpath X)`, `$(readlink -f X)`, `$(echo X)` and
//! `$(cd X && pwd)`, for values of `X` the expansion knows. Any other is kept as written.

use super::expand::{Expander, MAX_EXPANSION_DEPTH, MAX_READINGS, MAX_WORD_BYTES, Mode, Piece};
use super::state::{home_of, moved_to};
use crate::command::program_name;
use crate::lex::{self, Dialect};
use crate::targets::{home_rest, lexical};

impl Expander<'_> {
    /// `$(inner)` (or backquotes), written as `written`: the output of the few commands that
    /// print a path they are given or the directory, when their operand is known.
    pub(super) fn substitution(
        &self,
        inner: &str,
        written: &str,
        split: bool,
        depth: usize,
    ) -> Vec<Piece> {
        let as_written = || {
            vec![Piece {
                text: lex::unquote(written),
                split: false,
            }]
        };
        if depth >= MAX_EXPANSION_DEPTH || inner.len() > MAX_WORD_BYTES {
            return as_written();
        }
        let all = lex::segment(inner, Dialect::Posix);
        // The segmenter lists what a `$(…)` inside holds as segments of their own; those are
        // read again, as words, by the expansion of the operand holding them.
        let nested: Vec<usize> = all.iter().flat_map(|s| s.inner.iter().copied()).collect();
        let segments: Vec<&lex::Segment> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| !nested.contains(i))
            .map(|(_, s)| s)
            .collect();
        if let [cd, pwd] = segments.as_slice()
            && pwd.words == ["pwd"]
            && cd.words.first().is_some_and(|w| w == "cd")
            && cd.words.len() <= 2
        {
            // `$(cd "$(dirname "$0")" && pwd)`: where the `cd` leads.
            return self.cd_then_pwd(cd.words.get(1), written, split, depth);
        }
        let [segment] = segments.as_slice() else {
            return as_written();
        };
        if !segment.redirects.is_empty() || segment.background {
            return as_written();
        }
        let Some((program, args)) = segment.words.split_first() else {
            return as_written();
        };
        // Each operand's possible values (the words are unquoted already: no splitting).
        let mut operands: Vec<Vec<String>> = Vec::new();
        let mut options: Vec<&str> = Vec::new();
        for a in args {
            if a.starts_with('-') && a.len() > 1 && operands.is_empty() {
                options.push(a);
                continue;
            }
            match self.texts(a, Mode::Value, depth + 1) {
                Some(texts) => operands.push(texts),
                None => return as_written(),
            }
        }
        // A command of one operand: its output for each value (`None`: not known).
        let one = |f: &dyn Fn(&str) -> Vec<Option<String>>| -> Vec<Piece> {
            match operands.as_slice() {
                [values] if values.iter().all(|v| !v.is_empty()) => values
                    .iter()
                    .flat_map(|v| f(v))
                    .map(|text| match text {
                        Some(text) => Piece { text, split },
                        None => as_written().remove(0),
                    })
                    .collect(),
                _ => as_written(),
            }
        };
        let pieces = match program_name(program).as_str() {
            "pwd" if operands.is_empty() => self
                .state
                .cwd
                .iter()
                .map(|dir| match dir {
                    Some(dir) => Piece {
                        text: dir.clone(),
                        split,
                    },
                    None => as_written().remove(0),
                })
                .collect(),
            "dirname" if options.iter().all(|o| *o == "--") => one(&|p| vec![dirname(p)]),
            "realpath" if options.iter().all(|o| realpath_option(o)) => one(&|p| self.resolved(p)),
            "readlink"
                if options.iter().any(|o| matches!(*o, "-f" | "-e" | "-m"))
                    && options.iter().all(|o| realpath_option(o)) =>
            {
                one(&|p| self.resolved(p))
            }
            "echo" if options.is_empty() => {
                let mut texts = vec![String::new()];
                for (n, values) in operands.iter().enumerate() {
                    let mut next = Vec::new();
                    for t in &texts {
                        for v in values.iter().take(MAX_READINGS) {
                            next.push(if n == 0 {
                                v.clone()
                            } else {
                                format!("{t} {v}")
                            });
                        }
                    }
                    next.truncate(MAX_READINGS);
                    texts = next;
                }
                texts
                    .into_iter()
                    .map(|text| Piece { text, split })
                    .collect()
            }
            _ => as_written(),
        };
        if pieces.is_empty() {
            as_written()
        } else {
            pieces
        }
    }

    /// `$(cd DIR && pwd)`: each directory `cd DIR` leads to from where the command runs.
    fn cd_then_pwd(
        &self,
        dir: Option<&String>,
        written: &str,
        split: bool,
        depth: usize,
    ) -> Vec<Piece> {
        let dirs = match dir {
            Some(d) => match self.texts(d, Mode::Value, depth + 1) {
                Some(texts) => texts.into_iter().map(Some).collect(),
                None => vec![None],
            },
            None => vec![None],
        };
        let home = home_of(self.state, self.place);
        let mut out = Vec::new();
        for from in &self.state.cwd {
            for d in &dirs {
                let text = match d {
                    Some(d) => moved_to(from.as_ref(), Some(d), Dialect::Posix, home.as_deref()),
                    None if dir.is_none() => home.clone(),
                    None => None,
                };
                let known = text.is_some();
                out.push(Piece {
                    text: text.unwrap_or_else(|| lex::unquote(written)),
                    split: split && known,
                });
            }
        }
        out
    }

    /// `realpath P` as far as the text tells: `P` made absolute against each directory the
    /// command may run in, `..` applied (symbolic links are not followed: the guard does not
    /// look at the disk).
    fn resolved(&self, p: &str) -> Vec<Option<String>> {
        if p.starts_with('/') {
            return vec![Some(lexical(p))];
        }
        if p.starts_with('~') || home_rest(p).is_some() {
            return vec![Some(p.to_owned())];
        }
        if p.contains(['$', '`']) {
            return vec![None];
        }
        self.state
            .cwd
            .iter()
            .map(|dir| match dir {
                Some(dir) if dir.starts_with('/') => Some(lexical(&format!("{dir}/{p}"))),
                Some(dir) => Some(format!("{dir}/{p}")),
                None => None,
            })
            .collect()
    }
}

/// `dirname P`, which only reads the text: `/home/me` → `/home`, `x` → `.`. A home reference
/// (`~`, `$HOME`) stands for a path whose parent is written `~/..`; `None` for another value
/// not known (`$(mktemp)`).
fn dirname(p: &str) -> Option<String> {
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return Some(if p.is_empty() { ".".into() } else { "/".into() });
    }
    Some(match t.rfind('/') {
        Some(i) => {
            let d = t[..i].trim_end_matches('/');
            if d.is_empty() { "/".into() } else { d.into() }
        }
        None if t.starts_with('~') || home_rest(t).is_some() => format!("{t}/.."),
        None if t.contains(['$', '`']) => return None,
        None => ".".into(),
    })
}

/// Options of `realpath`/`readlink` that leave the output a path (not `--relative-to`).
fn realpath_option(o: &str) -> bool {
    matches!(
        o,
        "-f" | "-e" | "-m" | "-s" | "-q" | "-L" | "-P" | "-n" | "-v" | "-z" | "--"
    ) || matches!(
        o,
        "--canonicalize"
            | "--canonicalize-existing"
            | "--canonicalize-missing"
            | "--strip"
            | "--no-symlinks"
            | "--quiet"
            | "--logical"
            | "--physical"
    )
}
