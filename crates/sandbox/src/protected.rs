//! Paths a confined command may write that the user's own tools later run, or obey, unconfined:
//! what it plants there runs outside the sandbox.
//!
//! git runs the hooks and obeys the config of a repository (`core.fsmonitor`, `core.hooksPath`,
//! `!` aliases, `core.pager`, …) at the user's next `git`; direnv runs `.envrc` at the next `cd`;
//! an editor or an agent runs what its project settings name (`.vscode/tasks.json`, `.mcp.json`,
//! `.claude/settings.json` hooks) when the project is opened; a shell runs its rc files. Landlock
//! only allows: it cannot make a part of a writable root read-only, and `.git` must stay writable
//! for commits. The session's mount namespace can (core's `namespace`): each path listed here
//! that exists at start becomes a read-only bind mount of itself there, and each directory above
//! it that a command could rename (its parent is writable) a mount point of itself, since a mount
//! point cannot be renamed or removed: `mv .git .g` cannot take the protected paths aside. Only
//! confined commands see the mounts; the user, the server and an escalated command do not.
//!
//! A path absent at start is not made: mounting over it would mean creating it in the user's
//! tree. It is watched instead (the server's planted watch), as is everything here where no
//! namespace can be made. A user opens one on purpose with `[sandbox] writable_protected`
//! (names as in [`names`]): `.git/config` is the usual one, for `git config` and `git remote add`.
//!
//! Cost at start: an `lstat` and a `realpath` per candidate (17 per root, 4 per git dir, 23 in
//! home when home is writable), one read of each git dir's config (for `core.hooksPath`), and
//! one `readdir` of each `modules/`; none per command: the mounts are made once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::git_files;
use crate::plan::{Plan, Why};

/// Under every writable root: the project files editors, agents and direnv take code from, and
/// those the git hooks of pre-commit, lefthook and husky run at the user's next commit (review
/// 38: a confined command could plant a hook there).
pub const IN_ROOT: &[&str] = &[
    ".gitmodules",
    ".envrc",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".claude",
    ".codex",
    ".cursor",
    ".gemini",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".lefthook.yml",
    ".husky",
];

/// In every git dir a command may write (a root's `.git`, a linked worktree's git dir and common
/// dir, the repository above the workspace, their submodules'): what git runs or obeys. The
/// directory `core.hooksPath` names goes with `hooks`.
pub const IN_GIT_DIR: &[&str] = &["hooks", "config", "config.worktree", "info"];

/// Under home, when a root makes home (or that part of it) writable: what shells and git read.
pub const IN_HOME: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".bash_logout",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".config/fish",
    ".bash_aliases",
    ".bashrc.d",
    ".tcshrc",
    ".cshrc",
    ".login",
    ".ssh/rc",
    ".ssh/config",
    ".inputrc",
    ".gitconfig",
    ".config/git",
];

/// Git dirs looked at most (roots', linked ones, submodules'): a command that made thousands of
/// submodules cannot make start-up slow.
pub const GIT_DIRS_MAX: usize = 32;

/// The name of agentty's own config file among the protected paths (it cannot be opened).
const CONFIG_FILE: &str = "agentty's config file";

/// What `writable_protected` may name: the entries above, a git dir's as `.git/…` and home's as
/// `~/…`.
pub fn names() -> Vec<String> {
    IN_GIT_DIR
        .iter()
        .map(|n| format!(".git/{n}"))
        .chain(IN_ROOT.iter().map(|n| (*n).to_owned()))
        .chain(IN_HOME.iter().map(|n| format!("~/{n}")))
        .collect()
}

/// Checks the names `writable_protected` gives; `Err` says the first unknown one and the list.
pub fn check_names(given: &[String]) -> Result<(), String> {
    let known = names();
    match given.iter().find(|g| !known.contains(g)) {
        Some(bad) => Err(format!(
            "{bad:?} is not a protected path; the names are: {}",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// How one protected path stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stand {
    /// Exists at start: read-only to confined commands where the namespace exists.
    ReadOnly,
    /// Absent at start, or reached through a symlink a command could replace: watched only.
    Watched,
    /// Left writable by `writable_protected`: watched only.
    Opened,
}

/// One path that runs code later, as found at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path a tool reads (through its symlinks, if any).
    pub path: PathBuf,
    /// Its name in [`names`] (`.git/config`, `.envrc`, `~/.bashrc`), or agentty's config file.
    pub name: String,
    pub stand: Stand,
}

/// The protected paths of a session, found once at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// Every candidate a command may write, whatever its stand, in the order found.
    pub entries: Vec<Entry>,
    /// Made read-only (real paths, no symlink on them; none inside another).
    pub read_only: Vec<PathBuf>,
    /// Directories above `read_only`'s that a command could rename (their parent is writable),
    /// each made a mount point of itself, parents first.
    pub pinned: Vec<PathBuf>,
}

impl Protected {
    /// The protected paths under `roots` (the workspace first, then `--add-dir`s), the plan's
    /// git dirs, and `home`, that `plan` lets a command write; `config_file` is agentty's own.
    /// `opened`: the names `writable_protected` leaves writable. Nothing in `plan` or `auto`
    /// mode (nothing is writable, or nothing is confined).
    pub fn find(
        plan: &Plan,
        roots: &[PathBuf],
        home: Option<&Path>,
        config_file: Option<&Path>,
        opened: &[String],
    ) -> Protected {
        if plan.mode() != crate::Mode::Default {
            return Protected::default();
        }
        let mut candidates: Vec<(PathBuf, String)> = Vec::new();
        let mut git_dirs: Vec<PathBuf> = Vec::new();
        for root in roots {
            candidates.extend(IN_ROOT.iter().map(|n| (root.join(n), (*n).to_owned())));
            let dot_git = root.join(".git");
            if std::fs::metadata(&dot_git).is_ok_and(|m| m.is_dir()) {
                git_dirs.push(dot_git);
            }
        }
        git_dirs.extend(
            plan.writable()
                .iter()
                .filter(|w| w.why == Why::GitDir)
                .map(|w| w.path.clone()),
        );
        let mut at = 0;
        while at < git_dirs.len() && git_dirs.len() < GIT_DIRS_MAX {
            let more = git_files::submodule_git_dirs(&git_dirs[at], GIT_DIRS_MAX);
            git_dirs.extend(more);
            at += 1;
        }
        git_dirs.truncate(GIT_DIRS_MAX);
        for dir in &git_dirs {
            candidates.extend(
                IN_GIT_DIR
                    .iter()
                    .map(|n| (dir.join(n), format!(".git/{n}"))),
            );
            let config = git_files::read_config(dir);
            if let Some(hooks) = git_files::hooks_path(dir, &config, home) {
                candidates.push((hooks, ".git/hooks".to_owned()));
            }
        }
        if let Some(home) = home {
            candidates.extend(IN_HOME.iter().map(|n| (home.join(n), format!("~/{n}"))));
        }
        if let Some(file) = config_file {
            candidates.push((file.to_path_buf(), CONFIG_FILE.to_owned()));
        }
        let mut found = Protected::default();
        let mut read_only = BTreeSet::new();
        for (path, name) in candidates {
            if !plan.allows_write(&path) || found.entries.iter().any(|e| e.path == path) {
                continue;
            }
            let stand = if opened.contains(&name) {
                Stand::Opened
            } else {
                match path.canonicalize() {
                    // A symlink on the way: the mount goes on what it leads to (when a command
                    // may write that), and the link, which a command could replace, is watched.
                    Ok(real) if real != path => {
                        if plan.allows_write(&real) {
                            read_only.insert(real);
                        }
                        Stand::Watched
                    }
                    Ok(real) => {
                        read_only.insert(real);
                        Stand::ReadOnly
                    }
                    Err(_) => Stand::Watched,
                }
            };
            found.entries.push(Entry { path, name, stand });
        }
        // One inside another (a hooks path inside `.claude`): the outer mount covers it.
        let all: Vec<PathBuf> = read_only.into_iter().collect();
        found.read_only = all
            .iter()
            .filter(|p| !all.iter().any(|o| o != *p && p.starts_with(o)))
            .cloned()
            .collect();
        found.pinned = pinned(plan, &found.read_only);
        found
    }

    /// Also makes `path` read-only to confined commands where the namespace exists, when
    /// `plan` lets them write it, without listing it among the entries (nothing of it is
    /// watched or can be opened): agentty's state dir inside a writable root, whose shells'
    /// start-up files and kept output a command could otherwise rewrite (review 35 F4).
    pub fn keep_read_only(&mut self, plan: &Plan, path: &Path) {
        // Not a path that holds a writable root (a state dir of home itself): that whole root
        // would become read-only.
        if plan.mode() != crate::Mode::Default
            || !plan.allows_write(path)
            || plan.writable().iter().any(|w| w.path.starts_with(path))
        {
            return;
        }
        if self.read_only.iter().any(|o| path.starts_with(o)) {
            return;
        }
        self.read_only.retain(|p| !p.starts_with(path));
        self.read_only.push(path.to_path_buf());
        self.read_only.sort();
        self.pinned = pinned(plan, &self.read_only);
    }

    /// The entries in one stand.
    pub fn in_stand(&self, stand: Stand) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.stand == stand)
    }
}

/// The directories above `paths` that a command could rename: those whose parent it may write.
/// Writable trees nest (all of a writable directory is writable), so the walk up stops at the
/// first one whose parent is not.
fn pinned(plan: &Plan, paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut pinned = BTreeSet::new();
    for path in paths {
        for dir in path.ancestors().skip(1) {
            match dir.parent() {
                Some(parent) if plan.allows_write(parent) => {
                    pinned.insert(dir.to_path_buf());
                }
                _ => break,
            }
        }
    }
    pinned.into_iter().collect()
}

#[cfg(test)]
#[path = "protected_tests.rs"]
mod tests;
