//! Parameter expansion: the values a variable may have (the line's, or the environment's when
//! that is known), and `${X:-word}`, `${X:?}`, `${X:+word}`, `${X%pattern}` and their kin.
//! What is not known is kept as written.

use super::expand::{Expander, MAX_EXPANSION_DEPTH, MAX_TRIMMED_BYTES, Mode, Piece};
use super::pattern::trimmed;
use super::state::Val;
use crate::lex;

/// Variables the shell sets itself, with values the environment does not tell: kept as
/// written rather than read as unset.
const SHELL_SET: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "LINENO",
    "BASHPID",
    "PPID",
    "UID",
    "EUID",
    "GROUPS",
    "HOSTNAME",
    "HOSTTYPE",
    "OSTYPE",
    "MACHTYPE",
    "BASH",
    "BASH_VERSION",
    "BASH_SOURCE",
    "FUNCNAME",
    "PIPESTATUS",
    "SHLVL",
    "OLDPWD",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "OPTIND",
    "OPTARG",
    "REPLY",
    "IFS",
    "PS4",
];

/// What a variable is known to hold.
enum Seen {
    Unset,
    Text(String),
    /// Not known: the expansion is kept as written.
    AsWritten,
}

impl Expander<'_> {
    /// `${body}` (or `$body`), written as `written`.
    pub(super) fn param(&self, body: &str, written: &str, split: bool, depth: usize) -> Vec<Piece> {
        let as_written = || Piece {
            text: lex::unquote(written),
            split: false,
        };
        let name_len = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body.len());
        let (name, op) = body.split_at(name_len);
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return vec![as_written()];
        }
        let word = |w: &str| -> Vec<Piece> {
            match self.texts(w, Mode::Value, depth + 1) {
                Some(texts) if depth < MAX_EXPANSION_DEPTH => texts
                    .into_iter()
                    .map(|text| Piece { text, split })
                    .collect(),
                _ => vec![as_written()],
            }
        };
        let mut out = Vec::new();
        for seen in self.lookup(name) {
            let (set, text) = match seen {
                Seen::AsWritten => {
                    out.push(as_written());
                    continue;
                }
                Seen::Unset => (false, String::new()),
                Seen::Text(t) => (true, t),
            };
            let full = set && !text.is_empty();
            let value = || {
                vec![Piece {
                    text: text.clone(),
                    split,
                }]
            };
            let pieces = match op {
                "" => value(),
                _ if op.starts_with(":-") || op.starts_with(":=") => {
                    if full {
                        value()
                    } else {
                        word(&op[2..])
                    }
                }
                _ if op.starts_with(":?") => {
                    if full {
                        value()
                    } else {
                        Vec::new()
                    }
                }
                _ if op.starts_with(":+") => {
                    if full {
                        word(&op[2..])
                    } else {
                        vec![Piece {
                            text: String::new(),
                            split,
                        }]
                    }
                }
                _ if op.starts_with('-') || op.starts_with('=') => {
                    if set {
                        value()
                    } else {
                        word(&op[1..])
                    }
                }
                _ if op.starts_with('?') => {
                    if set {
                        value()
                    } else {
                        Vec::new()
                    }
                }
                _ if op.starts_with('+') => {
                    if set {
                        word(&op[1..])
                    } else {
                        vec![Piece {
                            text: String::new(),
                            split,
                        }]
                    }
                }
                // `${D%/}`, `${D%/*}` (its directory), `${D#*/}`: a pattern cut off an end.
                _ if op.starts_with(['#', '%'])
                    && text.len() <= MAX_TRIMMED_BYTES
                    && op.len() <= MAX_TRIMMED_BYTES =>
                {
                    let from_start = op.starts_with('#');
                    let longest = op.starts_with("##") || op.starts_with("%%");
                    let pattern = &op[if longest { 2 } else { 1 }..];
                    match self.texts(pattern, Mode::Value, depth + 1) {
                        Some(patterns) if depth < MAX_EXPANSION_DEPTH => patterns
                            .iter()
                            .map(|p| Piece {
                                text: trimmed(&text, p, from_start, longest),
                                split,
                            })
                            .collect(),
                        _ => vec![as_written()],
                    }
                }
                _ => vec![as_written()],
            };
            out.extend(pieces);
        }
        out
    }

    fn lookup(&self, name: &str) -> Vec<Seen> {
        self.state
            .values(name)
            .into_iter()
            .map(|v| match v {
                Val::Unset => Seen::Unset,
                Val::Text(t) => Seen::Text(t),
                Val::Unknown => Seen::AsWritten,
                Val::Outside => self.outside(name),
            })
            .collect()
    }

    /// A variable the line did not assign, from the environment it runs with when that is
    /// known; unset there is empty (`"$STEAMROOT/"*` is `/*`).
    fn outside(&self, name: &str) -> Seen {
        if name == "PWD" {
            return match self.state.cwd.as_slice() {
                [Some(dir)] => Seen::Text(dir.clone()),
                _ => Seen::AsWritten,
            };
        }
        let Some(place) = self.place else {
            return Seen::AsWritten;
        };
        let Some(vars) = &place.env else {
            return Seen::AsWritten;
        };
        if let Some((_, v)) = vars.iter().rev().find(|(k, _)| k == name) {
            return Seen::Text(v.clone());
        }
        if name == "HOME" {
            return place.home.clone().map_or(Seen::AsWritten, Seen::Text);
        }
        if SHELL_SET.contains(&name) {
            return Seen::AsWritten;
        }
        match std::env::var(name) {
            Ok(v) => Seen::Text(v),
            Err(std::env::VarError::NotPresent) => Seen::Unset,
            Err(std::env::VarError::NotUnicode(_)) => Seen::AsWritten,
        }
    }
}
