//! What the shell running the line knows as it goes: the values of the variables the line
//! assigns and the directory it is in, scoped as the shell scopes them.
//!
//! The walker keeps one [`State`] and changes it in the order the line runs. A subshell, a
//! pipeline stage, `&`, `$(…)` or a function body works on a copy that is dropped after it (an
//! assignment or a `cd` in there does not leak); a script another shell runs (`sh -c`) starts
//! from the exported part plus the command's own `X=…` words; a part that may not run (`a && b`,
//! a branch, a loop body) is merged with the state it may skip, so a variable then has each
//! value it may have and a command each directory it may run in. Both are bounded: at most
//! [`MAX_ALTERNATIVES`] each, past which the rest is "not known" (read as written).

use std::collections::BTreeMap;

use crate::command::Place;
use crate::lex::Dialect;
use crate::targets::{home_rest, lexical, windows_critical};

/// Values one variable may have (or directories a command may run in), at most this many; a
/// line rarely has more than two (`if … then X=a else X=b`).
pub(super) const MAX_ALTERNATIVES: usize = 4;
/// Variables followed per line; a new one past this is not known. Bounds the copies a long
/// line makes of its state (one per subshell, stage and branch).
const MAX_VARS: usize = 64;
/// Longest value followed; a longer one is not known (`X=$X$X` doubling stays bounded).
pub(super) const MAX_VALUE_BYTES: usize = 4096;

/// One value a variable may have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Val {
    /// Whatever the environment the line runs with gives it: the line did not assign it.
    Outside,
    /// Unset (`unset X`).
    Unset,
    /// This text.
    Text(String),
    /// Set by something the guard does not follow (`read X`, `X=$(mktemp)` is a text that
    /// keeps the substitution): read as written.
    Unknown,
}

#[derive(Debug, Clone)]
struct Var {
    values: Vec<Val>,
    /// `export`ed (or `declare -x`): a shell started by the line sees it.
    exported: bool,
}

/// The shell's variables and directory at one point of the line.
#[derive(Debug, Clone)]
pub(super) struct State {
    vars: BTreeMap<String, Var>,
    /// Code the guard does not read ran in this shell (`source f`): a variable not assigned
    /// since may hold anything.
    opaque: bool,
    /// Each directory the shell may be in: absolute, or under `~` when the home is not known;
    /// `None` for one the text does not tell (`cd "$DIR"` with `DIR` unknown, `cd -`).
    pub(super) cwd: Vec<Option<String>>,
    /// Where it was before its last `cd` (`cd -` goes back there).
    pub(super) oldpwd: Vec<Option<String>>,
}

impl State {
    /// The state a line starts in: no variables of its own, in the caller's directory.
    pub(super) fn start(place: Option<&Place>) -> State {
        State {
            vars: BTreeMap::new(),
            opaque: false,
            cwd: vec![place.map(|p| p.cwd.clone())],
            oldpwd: vec![None],
        }
    }

    /// The values `name` may have here.
    pub(super) fn values(&self, name: &str) -> Vec<Val> {
        match self.vars.get(name) {
            Some(var) => var.values.clone(),
            None if self.opaque => vec![Val::Unknown],
            None => vec![Val::Outside],
        }
    }

    /// Whether the line assigned `name` here (so `~` follows it, for `HOME`).
    pub(super) fn assigned(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    /// `name` now has one of `values`. `export`: `Some(true)` exports it, `Some(false)`
    /// un-exports it (`export -n`), `None` keeps what it was.
    pub(super) fn assign(&mut self, name: &str, values: Vec<Val>, export: Option<bool>) {
        let mut values = bounded(values);
        if values.is_empty() {
            values.push(Val::Unknown);
        }
        if let Some(var) = self.vars.get_mut(name) {
            var.values = values;
            if let Some(export) = export {
                var.exported = export;
            }
            return;
        }
        if self.vars.len() >= MAX_VARS {
            // Past the bound nothing new is followed: any variable not known reads as written.
            self.opaque = true;
            return;
        }
        self.vars.insert(
            name.to_owned(),
            Var {
                values,
                exported: export.unwrap_or(false),
            },
        );
    }

    /// `export NAME` without a value: exported with what it has.
    pub(super) fn export(&mut self, name: &str, export: bool) {
        match self.vars.get_mut(name) {
            Some(var) => var.exported = export,
            None => self.assign(name, vec![Val::Outside], Some(export)),
        }
    }

    /// Code the guard does not read ran here: every variable may now hold anything.
    pub(super) fn make_opaque(&mut self) {
        self.opaque = true;
        for var in self.vars.values_mut() {
            var.values = vec![Val::Unknown];
        }
    }

    /// The state a new shell started here begins in (`sh -c`, `bash <<EOF`): the variables it
    /// inherits (exported, or in the environment, which is all of them when that is not
    /// known) and the directory. `in_env` tells whether the environment holds a name.
    pub(super) fn for_new_shell(&self, in_env: impl Fn(&str) -> bool) -> State {
        let vars = self
            .vars
            .iter()
            .filter(|(name, var)| var.exported || in_env(name))
            .map(|(name, var)| (name.clone(), var.clone()))
            .collect();
        State {
            vars,
            opaque: self.opaque,
            cwd: self.cwd.clone(),
            oldpwd: self.oldpwd.clone(),
        }
    }

    /// After a part that may or may not have run: each variable may have what it had in
    /// either state, the shell may be in either directory.
    pub(super) fn merge(&mut self, other: State) {
        let mut names: Vec<String> = self.vars.keys().chain(other.vars.keys()).cloned().collect();
        names.sort_unstable();
        names.dedup();
        for name in &names {
            let mut values = self.values(name);
            let mut exported = self.vars.get(name).is_some_and(|v| v.exported);
            for v in other.values(name) {
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            exported |= other.vars.get(name).is_some_and(|v| v.exported);
            self.assign(name, values, Some(exported));
        }
        self.opaque |= other.opaque;
        let mut cwd = std::mem::take(&mut self.cwd);
        cwd.extend(other.cwd);
        self.cwd = bounded_dirs(cwd);
        let mut oldpwd = std::mem::take(&mut self.oldpwd);
        oldpwd.extend(other.oldpwd);
        self.oldpwd = bounded_dirs(oldpwd);
    }
}

/// At most [`MAX_ALTERNATIVES`] values; past it the rest is not known.
fn bounded(mut values: Vec<Val>) -> Vec<Val> {
    for v in &mut values {
        if matches!(v, Val::Text(t) if t.len() > MAX_VALUE_BYTES) {
            *v = Val::Unknown;
        }
    }
    let mut seen = Vec::with_capacity(values.len());
    values.retain(|v| {
        let new = !seen.contains(v);
        seen.push(v.clone());
        new
    });
    if values.len() > MAX_ALTERNATIVES {
        values.truncate(MAX_ALTERNATIVES - 1);
        values.push(Val::Unknown);
    }
    values
}

/// At most [`MAX_ALTERNATIVES`] directories; past it, one that is not known.
pub(super) fn bounded_dirs(mut dirs: Vec<Option<String>>) -> Vec<Option<String>> {
    let mut seen = Vec::with_capacity(dirs.len());
    dirs.retain(|d| {
        let new = !seen.contains(d);
        seen.push(d.clone());
        new
    });
    if dirs.len() > MAX_ALTERNATIVES {
        dirs.truncate(MAX_ALTERNATIVES - 1);
        dirs.push(None);
    }
    if dirs.is_empty() {
        dirs.push(None);
    }
    dirs
}

/// Whether the environment a line runs with holds `name`; when that environment is not known,
/// it may.
pub(super) fn in_env(place: Option<&Place>, name: &str) -> bool {
    match place.and_then(|p| p.env.as_ref()) {
        Some(vars) => vars.iter().any(|(k, _)| k == name) || std::env::var_os(name).is_some(),
        None => true,
    }
}

/// The home directory as `cd` and `~` find it: the `HOME` the line set, else the call's, else
/// the caller's, else `~` (a home not known, which the targets still read as the home).
pub(super) fn home_of(state: &State, place: Option<&Place>) -> Option<String> {
    if state.assigned("HOME") {
        return match state.values("HOME").as_slice() {
            [Val::Text(h)] if !h.is_empty() => Some(h.clone()),
            _ => None,
        };
    }
    let from_call = place
        .and_then(|p| p.env.as_ref())
        .and_then(|vars| vars.iter().rev().find(|(k, _)| k == "HOME"))
        .map(|(_, v)| v.clone());
    from_call
        .or_else(|| place.and_then(|p| p.home.clone()))
        .or_else(|| Some("~".to_owned()))
}

/// Where `cd DIR` (or `cd` with none) from `from` leads, with the home at `home`; `None` when
/// the text does not tell.
pub(super) fn moved_to(
    from: Option<&String>,
    dir: Option<&str>,
    dialect: Dialect,
    home: Option<&str>,
) -> Option<String> {
    let Some(dir) = dir else {
        // `cd` alone goes home; PowerShell's `Set-Location` alone stays.
        return match dialect {
            Dialect::PowerShell => from.cloned(),
            Dialect::Posix => home.map(ToOwned::to_owned),
        };
    };
    if dir == "-" {
        return None; // the previous directory: not followed
    }
    if dir.is_empty() {
        return from.cloned(); // `cd ""` stays (bash 5, dash, zsh)
    }
    let under = |base: &str, rest: &str| {
        if base.starts_with('/') {
            lexical(&format!("{base}/{rest}"))
        } else {
            format!("{base}/{rest}")
        }
    };
    if let Some(rest) = home_rest(dir) {
        if !(dir.starts_with("~/") || dir == "~" || dir.starts_with('$')) {
            return Some(dir.to_owned()); // `~user`: somebody's home, as written
        }
        return home.map(|h| under(h, rest.trim_start_matches('/')));
    }
    if dir.contains(['$', '`']) {
        return None;
    }
    if dir.starts_with('/') {
        return Some(lexical(dir));
    }
    if dialect == Dialect::PowerShell && windows_critical(dir) {
        return Some(dir.to_owned());
    }
    from.map(|f| under(f, dir))
}
