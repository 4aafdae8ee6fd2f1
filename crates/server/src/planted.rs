//! Code a confined command plants now that runs unconfined later: git's hooks and config.
//!
//! `.git` stays writable so commits work, and Landlock cannot carve a read-only hole in a
//! writable tree. So a command can create `.git/hooks/pre-commit` or set `core.hooksPath` /
//! `core.fsmonitor` in `.git/config`, and git runs that, unconfined, at the user's next commit.
//! This cannot be refused here; it is watched: after every command the workspace repository's
//! (and a linked worktree's common dir's) `config` and active hooks are compared with what they
//! were, and a change is said in the result, where the model and the user see it.
//!
//! Cost per call: two `stat`s per git dir, plus one per active hook (most repositories have
//! none); the hooks directory is listed again only when its own stamp changed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Active hooks stat'ed per call at most: a command that fills the hooks directory cannot make
/// every later call slow (any change to the directory itself is still seen through its mtime).
const HOOKS_WATCHED: usize = 64;

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

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct GitDirState {
    config: Stamp,
    hooks_dir: Stamp,
    /// Active hooks (not `*.sample`), by name.
    hooks: Vec<(String, Stamp)>,
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
            // No repository yet: one stat per call until there is one; its state then is the
            // baseline.
            *watched = self
                .git_dirs()
                .into_iter()
                .map(|d| {
                    let state = read_state(&d, None);
                    (d, state)
                })
                .collect();
            return None;
        }
        let mut changed = Vec::new();
        for (dir, before) in watched.iter_mut() {
            let now = read_state(dir, Some(before));
            if now == *before {
                continue;
            }
            if now.config != before.config {
                changed.push(dir.join("config").display().to_string());
            }
            for (name, stamp) in &now.hooks {
                let old = before
                    .hooks
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, s)| *s);
                if old != Some(*stamp) {
                    changed.push(dir.join("hooks").join(name).display().to_string());
                }
            }
            *before = now;
        }
        (!changed.is_empty()).then(|| crate::notice::planted(&changed))
    }
}

/// The state of `dir`; the hooks are listed again only when the directory itself changed.
fn read_state(dir: &Path, before: Option<&GitDirState>) -> GitDirState {
    let hooks_dir_path = dir.join("hooks");
    let hooks_dir = stamp(&hooks_dir_path);
    let names: Vec<String> = match before {
        Some(b) if b.hooks_dir == hooks_dir => b.hooks.iter().map(|(n, _)| n.clone()).collect(),
        _ => std::fs::read_dir(&hooks_dir_path)
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
            let s = stamp(&hooks_dir_path.join(&n));
            (n, s)
        })
        .collect();
    hooks.sort();
    GitDirState {
        config: stamp(&dir.join("config")),
        hooks_dir,
        hooks,
    }
}
