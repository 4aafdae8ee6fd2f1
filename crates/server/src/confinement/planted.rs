//! Code a confined command plants now that runs unconfined later: git's hooks and config.
//!
//! `.git` stays writable so commits work, and Landlock cannot carve a read-only hole in a
//! writable tree. So a command can create `.git/hooks/pre-commit` or set `core.hooksPath` /
//! `core.fsmonitor` in `.git/config`, and git runs that, unconfined, at the user's next commit.
//! This cannot be refused here; it is watched: after every command the files git takes code
//! from are compared with what they were, and a change is said in the result, where the model
//! and the user see it. Those files, for the workspace's repository, a linked worktree's common
//! dir, and every submodule's git dir under their `modules/` (a `git status` in the parent runs
//! git in each submodule):
//! - `config`, `config.worktree`, and the files their `include.path` / `includeIf` name;
//! - the active hooks of `hooks/` and of the directory `core.hooksPath` names (husky's
//!   `.husky/_`, ignored by git, so `git status` shows nothing there).
//!
//! Cost per call: a few `stat`s per git dir, plus one per active hook (most repositories have
//! none); a hooks or modules directory is listed again, and a config read again for what it
//! names, only when its own stamp changed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Active hooks stat'ed per call at most, per hooks directory: a command that fills one cannot
/// make every later call slow (any change to the directory itself is still seen).
const HOOKS_WATCHED: usize = 64;
/// Git dirs watched at most (the workspace's, a linked worktree's, their submodules').
const GIT_DIRS_WATCHED: usize = 32;
/// Files one config includes that are watched at most.
const INCLUDES_WATCHED: usize = 16;
/// Bytes of a config read for what it names: a command that wrote a huge config cannot make
/// the server read it all (git's own configs are a few KiB).
const CONFIG_READ_BYTES: u64 = 1 << 20;

/// What a file looked like: inode, size, ctime (ns). `None`: absent.
///
/// The change time, not the modification time: a command can put an mtime back (`touch -d`)
/// after an edit of the same length or a new hook, and the stamp would match; the kernel sets
/// the ctime on every write and every change of the times, and no call sets it back.
type Stamp = Option<(u64, u64, i64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((
        m.ino(),
        m.size(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
    ))
}

/// A directory git runs hooks from, and its active hooks (not `*.sample`), by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct HookDir {
    path: PathBuf,
    stamp: Stamp,
    hooks: Vec<(String, Stamp)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct GitDirState {
    /// `config`, `config.worktree` and the files they include, with their stamps.
    configs: Vec<(PathBuf, Stamp)>,
    /// `hooks/`, and `core.hooksPath`'s directory when set.
    hook_dirs: Vec<HookDir>,
    /// The `modules/` directory: submodules' git dirs are looked for again when it changes.
    modules: Stamp,
}

pub(crate) struct Planted {
    workspace: PathBuf,
    /// A linked worktree's git dirs (or the repository the workspace is a folder of), found
    /// once at start.
    linked: Vec<PathBuf>,
    /// The git dirs watched, and their state at the last look. Empty until the workspace has
    /// a repository (a `git init` later is noticed at the next call).
    watched: Mutex<Vec<(PathBuf, GitDirState)>>,
}

impl Planted {
    /// Watches the git dirs a command in `workspace` can write.
    pub(crate) fn new(workspace: &Path) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let planted = Self {
            workspace: workspace.to_path_buf(),
            linked: agentty_sandbox::worktree_git_dirs(workspace, home.as_deref()),
            watched: Mutex::new(Vec::new()),
        };
        planted.changes();
        planted
    }

    fn git_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        let own = self.workspace.join(".git");
        if std::fs::symlink_metadata(&own).is_ok_and(|m| m.is_dir()) {
            dirs.push(own);
        }
        dirs.extend(self.linked.iter().cloned());
        dirs.dedup();
        dirs
    }

    /// What changed since the last look, in words; `None` when nothing did.
    pub(crate) fn changes(&self) -> Option<String> {
        let mut watched = self
            .watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if watched.is_empty() {
            // No repository yet: one stat per call until there is one; its state then (its
            // submodules' included) is the baseline.
            for dir in self.git_dirs() {
                add_with_modules(&mut watched, dir, &mut Vec::new());
            }
            return None;
        }
        let mut changed = Vec::new();
        let mut found_modules = Vec::new();
        for (dir, before) in watched.iter_mut() {
            let now = read_state(dir, Some(before));
            if now == *before {
                continue;
            }
            changed.extend(differences(before, &now));
            if now.modules != before.modules {
                found_modules.extend(module_dirs(dir));
            }
            *before = now;
        }
        // A submodule's git dir that appeared: everything git takes code from in it is new.
        for dir in found_modules {
            add_with_modules(&mut watched, dir, &mut changed);
        }
        (!changed.is_empty()).then(|| super::notice::planted(&changed))
    }
}

/// Starts watching `dir` and the submodules' git dirs under it, unless watched already or past
/// [`GIT_DIRS_WATCHED`]; what each holds is pushed to `new` (a baseline passes a scratch list).
fn add_with_modules(
    watched: &mut Vec<(PathBuf, GitDirState)>,
    dir: PathBuf,
    new: &mut Vec<String>,
) {
    let mut queue = vec![dir];
    while let Some(dir) = queue.pop() {
        if watched.len() >= GIT_DIRS_WATCHED || watched.iter().any(|(d, _)| *d == dir) {
            continue;
        }
        let state = read_state(&dir, None);
        new.extend(differences(&GitDirState::default(), &state));
        queue.extend(module_dirs(&dir));
        watched.push((dir, state));
    }
}

/// The git dirs of `dir`'s submodules: the directories under `modules/` that hold a `config`
/// (a submodule named `a/b` is at `modules/a/b`), their own submodules left to them.
fn module_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = vec![dir.join("modules")];
    while let Some(at) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten().take(GIT_DIRS_WATCHED) {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if path.join("config").is_file() {
                found.push(path);
            } else if found.len() + queue.len() < GIT_DIRS_WATCHED {
                queue.push(path);
            }
        }
    }
    found
}

/// What differs between two states of one git dir, as paths.
fn differences(before: &GitDirState, now: &GitDirState) -> Vec<String> {
    let mut changed = Vec::new();
    for (path, stamp) in &now.configs {
        let old = before
            .configs
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, s)| *s);
        if stamp.is_some() && old != Some(*stamp) {
            changed.push(path.display().to_string());
        }
    }
    for dir in &now.hook_dirs {
        let old = before.hook_dirs.iter().find(|d| d.path == dir.path);
        for (name, stamp) in &dir.hooks {
            let was = old.and_then(|d| d.hooks.iter().find(|(n, _)| n == name).map(|(_, s)| *s));
            if was != Some(*stamp) {
                changed.push(dir.path.join(name).display().to_string());
            }
        }
    }
    changed
}

/// The state of git dir `dir`. A config is read again for what it names only when its stamp
/// changed; a hooks directory is listed again only when its own stamp changed.
fn read_state(dir: &Path, before: Option<&GitDirState>) -> GitDirState {
    let config = dir.join("config");
    let worktree_config = dir.join("config.worktree");
    let own = [stamp(&config), stamp(&worktree_config)];
    let (includes, hooks_path) = match before {
        Some(b) if b.configs.iter().take(2).map(|(_, s)| *s).eq(own) => (
            b.configs.iter().skip(2).map(|(p, _)| p.clone()).collect(),
            b.hook_dirs.get(1).map(|d| d.path.clone()),
        ),
        _ => named_by_config(dir),
    };
    let mut configs = vec![(config, own[0]), (worktree_config, own[1])];
    configs.extend(includes.into_iter().map(|p| {
        let s = stamp(&p);
        (p, s)
    }));
    let mut hook_dirs = vec![hook_dir(dir.join("hooks"), before)];
    if let Some(path) = hooks_path {
        hook_dirs.push(hook_dir(path, before));
    }
    GitDirState {
        configs,
        hook_dirs,
        modules: stamp(&dir.join("modules")),
    }
}

fn hook_dir(path: PathBuf, before: Option<&GitDirState>) -> HookDir {
    let dir_stamp = stamp(&path);
    let old = before.and_then(|b| b.hook_dirs.iter().find(|d| d.path == path));
    let names: Vec<String> = match old {
        Some(d) if d.stamp == dir_stamp => d.hooks.iter().map(|(n, _)| n.clone()).collect(),
        _ => std::fs::read_dir(&path)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| !n.ends_with(".sample"))
                    .take(HOOKS_WATCHED)
                    .collect()
            })
            .unwrap_or_default(),
    };
    let mut hooks: Vec<(String, Stamp)> = names
        .into_iter()
        .map(|n| {
            let s = stamp(&path.join(&n));
            (n, s)
        })
        .collect();
    hooks.sort();
    HookDir {
        path,
        stamp: dir_stamp,
        hooks,
    }
}

/// The files `dir`'s `config` and `config.worktree` include, and the directory its
/// `core.hooksPath` names, as paths.
fn named_by_config(dir: &Path) -> (Vec<PathBuf>, Option<PathBuf>) {
    let mut includes = Vec::new();
    let mut hooks_path = None;
    let mut worktree = None;
    for name in ["config", "config.worktree"] {
        let path = dir.join(name);
        let mut bytes = Vec::new();
        let read = std::fs::File::open(&path).and_then(|file| {
            std::io::Read::read_to_end(
                &mut std::io::Read::take(file, CONFIG_READ_BYTES),
                &mut bytes,
            )
        });
        if read.is_err() {
            continue;
        }
        let named = scan_config(&String::from_utf8_lossy(&bytes));
        let base = path.parent().unwrap_or(dir);
        includes.extend(named.includes.iter().map(|p| resolve(base, p)));
        hooks_path = named.hooks_path.or(hooks_path);
        worktree = named.worktree.or(worktree);
    }
    includes.truncate(INCLUDES_WATCHED);
    // A relative hooks path is the worktree's: `core.worktree` (a submodule's, relative to its
    // git dir), else the directory that holds `.git`.
    let hooks_path = hooks_path.map(|p| {
        let top = match worktree {
            Some(w) => resolve(dir, &w),
            None => dir.parent().unwrap_or(dir).to_path_buf(),
        };
        resolve(&top, &p)
    });
    (includes, hooks_path)
}

/// `value` as git resolves a path: `~/` from home, a relative one from `base`.
fn resolve(base: &Path, value: &str) -> PathBuf {
    match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| base.join(value), |home| PathBuf::from(home).join(rest)),
        None => base.join(value),
    }
}

/// What a config text names that runs code or brings in more config.
#[derive(Debug, Default, PartialEq, Eq)]
struct Named {
    includes: Vec<String>,
    hooks_path: Option<String>,
    worktree: Option<String>,
}

/// Reads `[include]`/`[includeIf …]` `path`, and `[core]` `hooksPath` and `worktree`, the way git
/// spells them: section and key names in any case, a value quoted or not, `#`/`;` comments.
fn scan_config(text: &str) -> Named {
    let mut named = Named::default();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .split(|c: char| c == ']' || c.is_whitespace() || c == '"')
                .next()
                .unwrap_or_default();
            section = name.to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value.split([';', '#']).next().unwrap_or_default().trim();
        let value = value.trim_matches('"').to_owned();
        if value.is_empty() {
            continue;
        }
        match (section.as_str(), key.as_str()) {
            ("include" | "includeif", "path") => named.includes.push(value),
            ("core", "hookspath") => named.hooks_path = Some(value),
            ("core", "worktree") => named.worktree = Some(value),
            _ => {}
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_names_its_includes_hooks_path_and_worktree_in_any_spelling() {
        let text = "[core]\n\tHooksPath = \".husky/_\" # husky\n\tworktree = ../../../lib\n\
                    [Include]\n\tpath = extra.cfg\n[includeIf \"gitdir:~/w/\"]\n  PATH=~/w.cfg\n\
                    [alias]\n\tpath = not-an-include\n";
        let named = scan_config(text);
        assert_eq!(named.includes, vec!["extra.cfg", "~/w.cfg"]);
        assert_eq!(named.hooks_path.as_deref(), Some(".husky/_"));
        assert_eq!(named.worktree.as_deref(), Some("../../../lib"));
    }

    /// A huge config is read only so far: what it names past that is not looked for.
    #[test]
    fn only_the_head_of_a_huge_config_is_read() {
        let dir = std::env::temp_dir().join(format!("agentty-planted-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let filler = format!("# {}\n", "x".repeat(1022)).repeat(2048);
        let text = format!("[include]\n\tpath = near.cfg\n{filler}[include]\n\tpath = far.cfg\n");
        std::fs::write(dir.join("config"), text).unwrap();
        let (includes, _) = named_by_config(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(includes, vec![dir.join("near.cfg")]);
    }
}
