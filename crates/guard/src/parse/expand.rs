//! Word expansion as the shell will do it, as far as the line and its environment tell:
//! `$X`, `${X:-word}` and its kin, `~`, quoting, field splitting of what is unquoted, and the
//! few command substitutions whose output is known without running anything (`$(pwd)`,
//! `$(dirname X)`, `$(realpath X)`, `$(readlink -f X)`, `$(echo X)`).
//!
//! What is not known (a variable set by `read`, `$(mktemp -d)`, `$1`, `${X#y}`) is kept as
//! written, so the targets judge it as they always did (`$HOME` still names the home). A
//! variable may have several values (a conditional assignment): a word then has one reading per
//! combination, at most [`MAX_READINGS`].

use super::state::{State, Val};
use crate::command::Place;
use crate::lex;

/// Readings of one word (and of one command) at most.
pub(super) const MAX_READINGS: usize = 8;
/// `$(…)` and `${X:-…}` followed inside each other this deep; deeper is kept as written.
pub(super) const MAX_EXPANSION_DEPTH: usize = 4;
/// Longest word an expansion may make; a longer one is kept as written.
pub(super) const MAX_WORD_BYTES: usize = 16 * 1024;
/// Longest value `${X%pattern}` is followed on (each cut point is tried against the pattern).
pub(super) const MAX_TRIMMED_BYTES: usize = 512;

/// Expands words against a [`State`] and the place the line runs in.
pub(super) struct Expander<'a> {
    pub(super) state: &'a State,
    pub(super) place: Option<&'a Place>,
}

/// A piece of a word: text, and whether the shell splits it into fields (an unquoted
/// expansion).
#[derive(Clone, PartialEq)]
pub(super) struct Piece {
    pub(super) text: String,
    pub(super) split: bool,
}

/// A word being expanded: the fields done, the one being built, and whether that one has
/// begun (`""` makes an empty field; an unquoted empty expansion makes none).
#[derive(Clone, Default, PartialEq)]
struct Fields {
    done: Vec<String>,
    cur: String,
    begun: bool,
}

impl Fields {
    fn push(&mut self, piece: &Piece) {
        if !piece.split {
            self.cur.push_str(&piece.text);
            self.begun = true;
            return;
        }
        let ifs = |c: char| matches!(c, ' ' | '\t' | '\n');
        if piece.text.starts_with(ifs) {
            self.end_field();
        }
        for (i, word) in piece.text.split(ifs).filter(|w| !w.is_empty()).enumerate() {
            if i > 0 {
                self.end_field();
            }
            self.cur.push_str(word);
            self.begun = true;
        }
        if piece.text.ends_with(ifs) {
            self.end_field();
        }
    }

    fn end_field(&mut self) {
        if self.begun {
            self.done.push(std::mem::take(&mut self.cur));
            self.begun = false;
        }
    }

    fn finish(mut self) -> Vec<String> {
        self.end_field();
        self.done
    }

    fn len(&self) -> usize {
        self.cur.len() + self.done.iter().map(String::len).sum::<usize>()
    }
}

/// How a word is read.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Mode {
    /// An argument: unquoted expansions are split into fields.
    Word,
    /// An assignment's value, or text already inside quotes: never split, and (for a value)
    /// `~` is expanded after `=` and `:` too.
    Value,
}

impl Expander<'_> {
    /// The fields `raw` (one word as written, quotes and all) expands to, for each combination
    /// of values its variables may have; empty when it stops the command (`${X:?}` with `X`
    /// unset). `None` when it cannot be told (too long).
    pub(super) fn word(&self, raw: &str) -> Option<Vec<Vec<String>>> {
        let alts = self.expand(raw, Mode::Word, 0)?;
        Some(alts.into_iter().map(Fields::finish).collect())
    }

    /// The values an assignment's value as written (`$HOME/x`, `"$(dirname "$D")"`) gives.
    pub(super) fn value(&self, raw: &str) -> Vec<Val> {
        match self.texts(raw, Mode::Value, 0) {
            Some(texts) => texts.into_iter().map(Val::Text).collect(),
            None => vec![Val::Unknown],
        }
    }

    /// `raw` expanded without splitting, each alternative as one text.
    pub(super) fn texts(&self, raw: &str, mode: Mode, depth: usize) -> Option<Vec<String>> {
        let alts = self.expand(raw, mode, depth)?;
        Some(
            alts.into_iter()
                .map(|f| {
                    let mut fields = f.finish();
                    if fields.len() == 1 {
                        fields.pop().unwrap_or_default()
                    } else {
                        fields.join(" ")
                    }
                })
                .collect(),
        )
    }

    fn expand(&self, raw: &str, mode: Mode, depth: usize) -> Option<Vec<Fields>> {
        // Checked here, before any scan: `${X:-${X:-…}}` nests as deep as the text is long.
        if depth > MAX_EXPANSION_DEPTH || raw.len() > MAX_WORD_BYTES {
            return None;
        }
        let bytes = raw.as_bytes();
        let mut alts = vec![Fields::default()];
        let mut lit = String::new();
        let mut quoted = false;
        let mut dq = false;
        let mut i = 0;
        let split = |dq: bool| mode == Mode::Word && !dq;
        while i < bytes.len() {
            let rest = raw.get(i..).unwrap_or_default();
            match bytes[i] {
                b'\\' if dq => {
                    match bytes.get(i + 1) {
                        Some(b'$' | b'`' | b'"' | b'\\') => lit.push(char::from(bytes[i + 1])),
                        Some(b'\n') => {}
                        _ => {
                            lit.push('\\');
                            i += 1;
                            continue;
                        }
                    }
                    i += 2;
                }
                b'\\' => {
                    let next = rest.chars().nth(1);
                    if let Some(c) = next.filter(|c| *c != '\n') {
                        lit.push(c);
                        quoted = true;
                    }
                    i += 1 + next.map_or(0, char::len_utf8);
                }
                b'\'' if !dq => {
                    let body = rest.get(1..).unwrap_or_default();
                    let end = body.find('\'').unwrap_or(body.len());
                    lit.push_str(&body[..end]);
                    quoted = true;
                    i += end + 2;
                }
                b'"' => {
                    dq = !dq;
                    quoted = true;
                    i += 1;
                }
                b'$' if !dq && bytes.get(i + 1) == Some(&b'\'') => {
                    let end = ansi_c_end(rest);
                    lit.push_str(&lex::unquote(&rest[..end]));
                    quoted = true;
                    i += end;
                }
                b'$' if !dq && bytes.get(i + 1) == Some(&b'"') => i += 1,
                b'$' if bytes.get(i + 1) == Some(&b'{') => {
                    let Some(close) = closing(rest, 2, b'{', b'}') else {
                        lit.push_str(rest);
                        break;
                    };
                    flush(&mut alts, &mut lit, &mut quoted);
                    let pieces = self.param(&rest[2..close], &rest[..=close], split(dq), depth);
                    alts = product(&alts, &pieces)?;
                    i += close + 1;
                }
                b'$' if rest.starts_with("$((") => {
                    // Arithmetic: a number, kept as written.
                    let end = rest.find("))").map_or(rest.len(), |e| e + 2);
                    lit.push_str(&rest[..end]);
                    i += end;
                }
                b'$' if bytes.get(i + 1) == Some(&b'(') => {
                    let Some(close) = closing(rest, 2, b'(', b')') else {
                        lit.push_str(rest);
                        break;
                    };
                    flush(&mut alts, &mut lit, &mut quoted);
                    let pieces =
                        self.substitution(&rest[2..close], &rest[..=close], split(dq), depth);
                    alts = product(&alts, &pieces)?;
                    i += close + 1;
                }
                b'$' if bytes
                    .get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') =>
                {
                    let len = rest[1..]
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len() - 1);
                    flush(&mut alts, &mut lit, &mut quoted);
                    let pieces = self.param(&rest[1..=len], &rest[..=len], split(dq), depth);
                    alts = product(&alts, &pieces)?;
                    i += len + 1;
                }
                b'`' => {
                    let body = rest.get(1..).unwrap_or_default();
                    let end = backtick_end(body);
                    let inner = body[..end].replace("\\`", "`");
                    let written = &rest[..(end + 2).min(rest.len())];
                    flush(&mut alts, &mut lit, &mut quoted);
                    let pieces = self.substitution(&inner, written, split(dq), depth);
                    alts = product(&alts, &pieces)?;
                    i += end + 2;
                }
                b'~' if !dq && tilde_may_start(bytes, i, mode) => {
                    let prefix_len = rest[1..]
                        .find(|c: char| c == '/' || (mode == Mode::Value && c == ':'))
                        .unwrap_or(rest.len() - 1);
                    if prefix_len == 0 && self.home_is_the_lines() {
                        flush(&mut alts, &mut lit, &mut quoted);
                        let pieces = self.param("HOME", "~", false, depth);
                        alts = product(&alts, &pieces)?;
                    } else {
                        lit.push('~');
                    }
                    i += 1;
                }
                _ => {
                    let c = rest.chars().next().unwrap_or_default();
                    lit.push(c);
                    i += c.len_utf8().max(1);
                }
            }
        }
        flush(&mut alts, &mut lit, &mut quoted);
        if alts.iter().any(|f| f.len() > MAX_WORD_BYTES) {
            return None;
        }
        Some(alts)
    }

    /// Whether `~` means a `HOME` the line (or the call's `env`) set, rather than the home the
    /// targets already read `~` as.
    fn home_is_the_lines(&self) -> bool {
        let call_sets = self
            .place
            .and_then(|p| p.env.as_ref())
            .is_some_and(|vars| vars.iter().any(|(k, _)| k == "HOME"));
        self.state.assigned("HOME") || call_sets
    }
}

/// Whether `~` at byte `i` starts a tilde prefix: at the word's start, or after `=`/`:` in a
/// value.
fn tilde_may_start(bytes: &[u8], i: usize, mode: Mode) -> bool {
    i == 0 || (mode == Mode::Value && matches!(bytes.get(i - 1), Some(b'=' | b':')))
}

/// Adds the literal text gathered so far to every alternative.
fn flush(alts: &mut [Fields], lit: &mut String, quoted: &mut bool) {
    if lit.is_empty() && !*quoted {
        return;
    }
    let piece = Piece {
        text: std::mem::take(lit),
        split: false,
    };
    for f in alts.iter_mut() {
        f.push(&piece);
    }
    *quoted = false;
}

/// Every alternative followed by every piece, at most [`MAX_READINGS`]; `None` past
/// [`MAX_WORD_BYTES`].
fn product(alts: &[Fields], pieces: &[Piece]) -> Option<Vec<Fields>> {
    let mut out: Vec<Fields> = Vec::new();
    for a in alts {
        for p in pieces {
            let mut f = a.clone();
            f.push(p);
            if f.len() > MAX_WORD_BYTES {
                return None;
            }
            if !out.contains(&f) {
                out.push(f);
            }
            if out.len() >= MAX_READINGS {
                return Some(out);
            }
        }
    }
    Some(out)
}

/// The byte index just past the bracket closing the one opened before `from` in `text`
/// (quotes and nesting followed), minus one: the index of the closer.
pub(super) fn closing(text: &str, from: usize, open: u8, close: u8) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 1;
    let mut i = from;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(b'"') if b == b'\\' => i += 1,
            Some(_) => {}
            None if b == b'\\' => i += 1,
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == open => depth += 1,
            None if b == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            None => {}
        }
        i += 1;
    }
    None
}

/// Length of a `$'…'` string at the start of `text`, escapes followed.
fn ansi_c_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 2;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Index of the backquote closing a command substitution in `body` (after the opening one).
fn backtick_end(body: &str) -> usize {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'`' => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
#[path = "expand_tests.rs"]
mod tests;
