//! The watch of code planted now that runs unconfined later (docs/BEHAVIOUR.md §5).
//!
//! Where the session's mount namespace exists, the paths that run code later are read-only to
//! confined commands (the sandbox's `protected.rs`), but only those that existed at start, and
//! nowhere else: without `CAP_SYS_ADMIN` there is no namespace, and `.git` must stay writable
//! for commits anyway. So everything git and the other tools take code from is compared with
//! what it was at every look, and a change is told: to the model in its next result, and to the
//! user (the server's log, the web view; `told.rs`). A look runs after every tool call, when a
//! background job or shell ends, and every [`LOOK_EVERY_MS`] between calls (a command's
//! escapee, a job that plants and keeps running).
//!
//! What is looked at, fixed at start:
//! - the `.git` a git command would find: each root's, and the one a command could create in a
//!   writable directory above a root (git looks upward); its kind and, for a gitfile or a
//!   symlink, the git dir it leads to (a gitfile is followed once, as git does);
//! - every git dir reached that way, and through `commondir` and the submodules' `modules/`,
//!   plus those git's own layout vouched for at start (a linked worktree's git and common dir,
//!   the repository the workspace is a folder of), [`GIT_DIRS_WATCHED`] at most: its `config`,
//!   `config.worktree`, the files they include, the hooks (by git's hook names) of `hooks/` and
//!   of `core.hooksPath`'s directory, `info/`'s files, `commondir` and `gitdir`. A directory
//!   that became a symlink is said, and what is reached through a symlink is stamped through it;
//! - the other protected paths (`.envrc`, `.mcp.json`, `.vscode/tasks.json`,
//!   `.claude/settings.json`, home's rc files, … where commands may write them).
//!
//! A git dir that appears (`git init`, a gitfile or `commondir` pointing somewhere new) is told
//! with what it holds that runs code (active hooks, config keys not known to be inert); a plain
//! `git init` or clone holds none, and is not worth a warning.
//!
//! Cost of a look: one `lstat` per watched path (two for a symlink): 19 for a workspace in a
//! temp dir with a fresh repository (2 `.git` entries, 8 in the git dir and one per active hook,
//! 9 project files, whose inside is looked at only when they exist), 35 µs in a debug build
//! (`tests::measure_look_and_start`); a directory is searched for git's 28 hook names again, and
//! a config read again, only when its own stamp changed. A path absent at the last look is not
//! looked at while the directory it is in is unchanged (`parents.rs`): in a workspace without a
//! repository or those files, a look is 2 `lstat`s of directories (and one more per name in a
//! directory that changed, such as a busy `/tmp` above the root) where it was 11.

mod git_dir;
mod parents;
mod stamp;
pub(crate) mod told;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agentty_sandbox::{Plan, Protected};

use git_dir::GitDirState;
use parents::Parents;
pub(crate) use stamp::shown;
use stamp::{Kind, Listed, Stamp, kind, same_object, stamp};

/// Git dirs watched at most (the roots', linked ones, submodules', where gitfiles and
/// `commondir` lead): a command that makes thousands cannot make every look slow.
pub(crate) const GIT_DIRS_WATCHED: usize = 32;
/// Directories above a root whose `.git` is watched at most (git looks upward for one).
const ABOVE_ROOT_WATCHED: usize = 8;
/// How often the server looks between tool calls.
pub(crate) const LOOK_EVERY_MS: u64 = 2_000;

/// The files inside a protected directory that a tool takes code from, looked at by name.
fn known_inside(name: &str) -> &'static [&'static str] {
    match name {
        ".vscode" => &[
            "tasks.json",
            "settings.json",
            "launch.json",
            "extensions.json",
        ],
        ".claude" => &[
            "settings.json",
            "settings.local.json",
            "commands",
            "agents",
            "hooks",
            "skills",
        ],
        ".idea" => &["workspace.xml", "runConfigurations"],
        ".cursor" => &["mcp.json", "rules"],
        ".gemini" => &["settings.json"],
        ".codex" => &["config.toml"],
        ".husky" => &[
            "pre-commit",
            "commit-msg",
            "prepare-commit-msg",
            "pre-push",
            "post-checkout",
            "post-merge",
        ],
        "~/.config/git" => &["config", "attributes"],
        _ => &[],
    }
}

/// One change, as told: the path, and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) path: String,
    pub(crate) what: String,
}

impl Change {
    fn new(path: &Path, what: String) -> Self {
        Change {
            path: shown(path),
            what,
        }
    }
}

pub(crate) struct Planted {
    /// The `.git` entries a git command would find.
    entries: Vec<PathBuf>,
    /// Git dirs git's own layout vouched for at start.
    linked: Vec<PathBuf>,
    /// The other protected paths: a directory with the files of known names in it.
    files: Vec<(PathBuf, &'static [&'static str])>,
    home: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// A first look was taken: what it found is the baseline, not a change.
    looked: bool,
    /// Per entry: its stamp, and the git dir it leads to.
    entries: Vec<(Stamp, Option<PathBuf>)>,
    git_dirs: Vec<(PathBuf, GitDirState)>,
    files: Vec<Listed>,
    /// The directories the entries and files are in, as last seen.
    parents: Parents,
}

impl Planted {
    /// Watches what commands under `plan` may change in `roots` (the workspace first), and the
    /// `protected` paths found at start. Takes the first look (the baseline) now.
    pub(crate) fn new(plan: &Plan, roots: &[PathBuf], protected: &Protected) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut entries: Vec<PathBuf> = Vec::new();
        let mut linked = Vec::new();
        for root in roots {
            entries.push(root.join(".git"));
            for above in root.ancestors().skip(1).take(ABOVE_ROOT_WATCHED) {
                if !plan.allows_write(above) {
                    break;
                }
                entries.push(above.join(".git"));
            }
            linked.extend(agentty_sandbox::worktree_git_dirs(root, home.as_deref()));
        }
        entries.dedup();
        linked.dedup();
        let mut files: Vec<(PathBuf, &'static [&'static str])> = Vec::new();
        for entry in &protected.entries {
            if entry.name.starts_with(".git/") || files.iter().any(|(p, _)| *p == entry.path) {
                continue;
            }
            files.push((entry.path.clone(), known_inside(&entry.name)));
        }
        let planted = Planted {
            entries,
            linked,
            files,
            home,
            state: Mutex::new(State::default()),
        };
        planted.changes();
        planted
    }

    /// What changed since the last look; empty when nothing did.
    pub(crate) fn changes(&self) -> Vec<Change> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = !state.looked;
        let mut changed = Vec::new();
        // Their directories first: a name absent in one unchanged since is not looked at.
        let paths = self.entries.iter().chain(self.files.iter().map(|(p, _)| p));
        let parents = std::mem::take(&mut state.parents).look(paths.map(PathBuf::as_path));
        // The `.git` entries, and the git dirs they lead to.
        state.entries.resize(self.entries.len(), (None, None));
        let mut wanted = self.linked.clone();
        for (entry, (was, leads_to)) in self.entries.iter().zip(state.entries.iter_mut()) {
            let now = if !first && was.is_none() && parents.still_absent(entry) {
                None
            } else {
                stamp(entry)
            };
            if first || now != *was {
                let target = now.and_then(|_| agentty_sandbox::git_files::git_dir_of(entry));
                if !first {
                    changed.extend(entry_change(entry, *was, now, target.as_deref()));
                }
                (*was, *leads_to) = (now, target);
            }
            wanted.extend(leads_to.clone());
        }
        // Every git dir reached, breadth first, each once.
        let mut before = std::mem::take(&mut state.git_dirs);
        let mut seen: Vec<(PathBuf, GitDirState)> = Vec::new();
        let mut at = 0;
        while at < wanted.len() && seen.len() < GIT_DIRS_WATCHED {
            let dir = wanted[at].clone();
            at += 1;
            if seen.iter().any(|(d, _)| *d == dir) {
                continue;
            }
            let old = before
                .iter()
                .position(|(d, _)| *d == dir)
                .map(|i| before.swap_remove(i).1);
            let now = GitDirState::read(&dir, old.as_ref(), self.home.as_deref());
            match &old {
                Some(old) => changed.extend(now.differences(&dir, old)),
                None if !first => changed.extend(now.summary(&dir)),
                None => {}
            }
            wanted.extend(now.leads_to().cloned());
            seen.push((dir, now));
        }
        state.git_dirs = seen;
        // The other protected paths.
        let mut files = Vec::with_capacity(self.files.len());
        for (i, (path, inside)) in self.files.iter().enumerate() {
            let old = state.files.get(i);
            let now = match old {
                Some(old) if !first && old.stamp.is_none() && parents.still_absent(path) => {
                    old.clone()
                }
                _ => Listed::read(path.clone(), inside, old),
            };
            if !first && let Some(old) = old {
                file_changes(&now, old, &mut changed);
            }
            files.push(now);
        }
        state.files = files;
        state.parents = parents.keep();
        state.looked = true;
        changed
    }
}

/// What a `.git` entry's change says, when it became something git reads differently: a
/// gitfile (naming a git dir), a symlink, or a directory in place of either. A directory that
/// stayed the same directory (a commit changes its entries) or a new one (`git init`: what it
/// holds is said as a new git dir) says nothing here.
fn entry_change(entry: &Path, was: Stamp, now: Stamp, target: Option<&Path>) -> Option<Change> {
    let leads = || target.map_or_else(|| "nothing".to_owned(), shown);
    let what = match (kind(was), kind(now)) {
        (_, Kind::Absent) | (Kind::Absent, Kind::Dir) => return None,
        (Kind::Dir, Kind::Dir) if same_object(was, now) => return None,
        (Kind::Dir, Kind::Dir) => "replaced by another git dir".to_owned(),
        (Kind::File, Kind::File) => format!("a gitfile, now naming {}", leads()),
        (_, Kind::File) => format!("now a gitfile naming {}", leads()),
        (_, Kind::Symlink) => format!("now a symlink to {}", leads()),
        (_, Kind::Dir) => "now a directory".to_owned(),
    };
    Some(Change::new(entry, what))
}

/// What changed in a protected path outside git dirs: itself (new, changed, or now a symlink),
/// and the files of known names in it.
fn file_changes(now: &Listed, old: &Listed, changed: &mut Vec<Change>) {
    if now.stamp.is_some() && now.stamp != old.stamp {
        let what = match (kind(old.stamp), kind(now.stamp)) {
            (Kind::Absent, _) => "new".to_owned(),
            (a, b) if a != b => stamp::now_is(&now.path, now.stamp),
            // A directory's own stamp changes with its entries: what matters in it is below.
            (Kind::Dir, Kind::Dir) => String::new(),
            _ => "changed".to_owned(),
        };
        if !what.is_empty() {
            changed.push(Change::new(&now.path, what));
        }
    }
    for (name, stamp) in &now.present {
        let was = old.had(name);
        if was != Some(*stamp) {
            let what = if was.is_none() { "new" } else { "changed" };
            changed.push(Change::new(&now.path.join(name), what.to_owned()));
        }
    }
}
