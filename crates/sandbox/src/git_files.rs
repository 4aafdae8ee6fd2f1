//! What git reads from a git dir that decides which code it runs, read the way git reads it:
//! the config's keys (`core.hooksPath`, `core.fsmonitor`, `!` aliases, includes, …), a gitfile's
//! `gitdir:`, a git dir's `commondir`, submodules' git dirs under `modules/`, and git's hook names.
//!
//! One reader for the two users: the protected set (`protected.rs`, which makes the hooks
//! directory `core.hooksPath` names read-only too) and the server's watch of planted code. Every
//! read is bounded: these files are written by the commands being watched.

use std::path::{Path, PathBuf};

/// Bytes of a config read for what it names: a command that wrote a huge config cannot make
/// the server read it all (git's own configs are a few KiB).
pub const CONFIG_READ_BYTES: u64 = 1 << 20;
/// Bytes of a gitfile or a `commondir` read: git writes one line.
pub(crate) const POINTER_READ_BYTES: u64 = 4096;

/// The hooks git runs, by name (githooks(5)). A file of another name in a hooks directory is
/// never run, so only these are looked for: a directory filled with decoys hides nothing.
pub const HOOK_NAMES: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

/// Keys that run nothing and bring in nothing, as `section.key` (`*` for any subsection), and
/// whole sections of such keys. Whatever else a config sets is said when a new git dir appears:
/// a list of what runs code would miss the next one git adds (`core.pager`, `diff.*.textconv`,
/// `filter.*.process`, `credential.helper`, …); a list of what does not cannot.
const INERT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.worktree",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.untrackedcache",
    "core.splitindex",
    "core.commitgraph",
    "core.multipackindex",
    "core.quotepath",
    "core.abbrev",
    "core.compression",
    "core.checkstat",
    "core.trustctime",
    "core.sharedrepository",
    "core.longpaths",
    "core.preloadindex",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.prune",
    "remote.*.tagopt",
    "remote.*.mirror",
    "remote.*.promisor",
    "remote.*.partialclonefilter",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "branch.*.description",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "merge.ff",
    "merge.conflictstyle",
    "rerere.enabled",
    "gc.auto",
    "maintenance.auto",
    "maintenance.strategy",
    "lfs.repositoryformatversion",
];
const INERT_SECTIONS: &[&str] = &["color", "advice", "i18n", "status", "column", "extensions"];

/// What a config text names that decides what git runs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GitConfig {
    /// `include.path` and `includeIf.*.path`, as written.
    pub includes: Vec<String>,
    /// `core.hooksPath`, as written.
    pub hooks_path: Option<String>,
    /// `core.worktree`, as written (a relative hooks path is the worktree's).
    pub worktree: Option<String>,
    /// Every key set that is not known to be inert, as `section.key` (lowercase, subsection
    /// kept), in order, each once: `core.fsmonitor`, `alias.x` (a `!` alias), `include.path`, ….
    pub runs_code: Vec<String>,
}

/// Reads a config text the way git spells it: section and key names in any case, a
/// subsection quoted (`[remote "origin"]`) or dotted (`[remote.origin]`), a key after the header
/// on its line, a value quoted or not, `#`/`;` comments, a key with no value meaning true.
pub fn scan_config(text: &str) -> GitConfig {
    let mut found = GitConfig::default();
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let Some((inside, rest)) = header.split_once(']') else {
                continue;
            };
            let inside = inside.trim();
            (section, subsection) = match inside.split_once(|c: char| c.is_whitespace()) {
                Some((name, sub)) => (
                    name.to_ascii_lowercase(),
                    Some(sub.trim().trim_matches('"').to_owned()),
                ),
                None => match inside.split_once('.') {
                    Some((name, sub)) => {
                        (name.to_ascii_lowercase(), Some(sub.to_ascii_lowercase()))
                    }
                    None => (inside.to_ascii_lowercase(), None),
                },
            };
            line = rest.trim();
        }
        if line.is_empty() || line.starts_with(['#', ';']) || section.is_empty() {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (line, None),
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value
            .map(|v| v.split([';', '#']).next().unwrap_or_default().trim())
            .map(|v| v.trim_matches('"').to_owned());
        note_key(&mut found, &section, subsection.as_deref(), &key, value);
    }
    found
}

fn note_key(
    found: &mut GitConfig,
    section: &str,
    subsection: Option<&str>,
    key: &str,
    value: Option<String>,
) {
    let value_or_true = value.clone().unwrap_or_else(|| "true".to_owned());
    match (section, key) {
        ("include" | "includeif", "path") if !value_or_true.is_empty() => {
            found.includes.push(value_or_true.clone());
        }
        ("core", "hookspath") => found.hooks_path = value.filter(|v| !v.is_empty()),
        ("core", "worktree") => found.worktree = value.filter(|v| !v.is_empty()),
        _ => {}
    }
    let inert = match (section, key) {
        // `true` is git's own daemon; any other value is a command git runs.
        ("core", "fsmonitor") => is_bool(&value_or_true),
        // An alias runs code only as `!command`.
        ("alias", _) => !value_or_true.trim_start().starts_with('!'),
        _ => {
            INERT_SECTIONS.contains(&section)
                || INERT_KEYS.iter().any(|k| {
                    let mut parts = k.split('.');
                    let (s, middle, last) = (parts.next(), parts.next(), parts.next());
                    match (s, middle, last, subsection) {
                        (Some(s), Some(k), None, None) => s == section && k == key,
                        (Some(s), Some("*"), Some(k), Some(_)) => s == section && k == key,
                        _ => false,
                    }
                })
        }
    };
    if !inert {
        let name = match subsection {
            Some(sub) => format!("{section}.{sub}.{key}"),
            None => format!("{section}.{key}"),
        };
        if !found.runs_code.contains(&name) {
            found.runs_code.push(name);
        }
    }
}

fn is_bool(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
    )
}

/// The first `limit` bytes of `path`, as text; `None` when it cannot be read, or a confined
/// command could not read it (`deputy.rs`: these paths are the workspace's to choose).
pub fn read_head(path: &Path, limit: u64) -> Option<String> {
    read_head_bytes(path, limit).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// [`read_head`]'s bytes, as they are.
pub(crate) fn read_head_bytes(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    crate::deputy::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// The config of git dir `dir` (`config`, then `config.worktree`), scanned; what the second
/// sets wins, as in git.
pub fn read_config(dir: &Path) -> GitConfig {
    let mut all = GitConfig::default();
    for name in ["config", "config.worktree"] {
        let Some(text) = read_head(&dir.join(name), CONFIG_READ_BYTES) else {
            continue;
        };
        let one = scan_config(&text);
        all.includes.extend(one.includes);
        all.hooks_path = one.hooks_path.or(all.hooks_path);
        all.worktree = one.worktree.or(all.worktree);
        for key in one.runs_code {
            if !all.runs_code.contains(&key) {
                all.runs_code.push(key);
            }
        }
    }
    all
}

/// `value` as git resolves a path in a config: `~/` from `home`, a relative one from `base`.
pub fn resolve_config_path(base: &Path, value: &str, home: Option<&Path>) -> PathBuf {
    match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => base.join(value),
    }
}

/// The directory git takes hooks from for git dir `dir` when its config sets `core.hooksPath`:
/// relative to the worktree (`core.worktree`, else the directory holding `dir`).
pub fn hooks_path(dir: &Path, config: &GitConfig, home: Option<&Path>) -> Option<PathBuf> {
    let value = config.hooks_path.as_deref()?;
    let top = match &config.worktree {
        Some(w) => resolve_config_path(dir, w, home),
        None => dir.parent().unwrap_or(dir).to_path_buf(),
    };
    Some(resolve_config_path(&top, value, home))
}

/// The git dir a `.git` entry leads to, as git finds it: the directory itself, a symlink's
/// target, or the directory a gitfile's `gitdir:` line names (relative to the gitfile's
/// directory). One step only: git follows a gitfile once.
pub fn git_dir_of(entry: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(entry).ok()?;
    if meta.is_dir() {
        return Some(entry.to_path_buf());
    }
    if meta.file_type().is_symlink() {
        return entry.canonicalize().ok().filter(|p| p.is_dir());
    }
    let text = read_head(entry, POINTER_READ_BYTES)?;
    let named = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let dir = entry.parent()?.join(named);
    Some(dir.canonicalize().unwrap_or(dir))
}

/// The common dir `dir`'s `commondir` file names (relative to `dir`), when it has one: git then
/// takes the config and hooks from there.
pub fn common_dir_of(dir: &Path) -> Option<PathBuf> {
    let text = read_head(&dir.join("commondir"), POINTER_READ_BYTES)?;
    let named = text.lines().next()?.trim();
    if named.is_empty() {
        return None;
    }
    let common = dir.join(named);
    Some(common.canonicalize().unwrap_or(common))
}

/// The git dirs of `dir`'s submodules: the directories under `modules/` that hold a `config`
/// (a submodule named `a/b` is at `modules/a/b`), their own submodules left to them; at most
/// `max`.
pub fn submodule_git_dirs(dir: &Path, max: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = vec![dir.join("modules")];
    while let Some(at) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten().take(max) {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if path.join("config").is_file() {
                if found.len() < max {
                    found.push(path);
                }
            } else if found.len() + queue.len() < max {
                queue.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
#[path = "git_files_tests.rs"]
mod tests;
