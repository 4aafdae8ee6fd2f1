//! One git dir as the watch last saw it: the files git takes code from there, and where it
//! leads (its common dir, its submodules' git dirs).

use std::path::{Path, PathBuf};

use agentty_sandbox::git_files::{self, HOOK_NAMES};

use super::Change;
use super::stamp::{Kind, Listed, Stamp, kind, now_is, shown, stamp};

/// Files one config includes that are watched at most.
const INCLUDES_WATCHED: usize = 16;
/// What git reads in `info/`: excludes, attributes (which name diff and filter drivers), the
/// sparse-checkout patterns, grafts.
const INFO_NAMES: &[&str] = &["exclude", "attributes", "sparse-checkout", "grafts"];
/// Keys of a config named in a change at most.
const KEYS_SAID: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GitDirState {
    /// `config`, `config.worktree` and the files they include, with their stamps.
    configs: Vec<(PathBuf, Stamp)>,
    /// What `config` and `config.worktree` set that runs code (`agentty_sandbox::git_files`).
    runs_code: Vec<String>,
    /// `hooks/`, and `core.hooksPath`'s directory when set: the hooks git would run there.
    hook_dirs: Vec<Listed>,
    info: Listed,
    /// `commondir` and the directory it names: git takes config and hooks from there.
    commondir: (Stamp, Option<PathBuf>),
    /// `gitdir` (a linked worktree's pointer back to its checkout).
    gitdir: Stamp,
    /// `modules/` and the submodules' git dirs in it, looked for again when it changes.
    modules: (Stamp, Vec<PathBuf>),
}

impl GitDirState {
    /// The state of git dir `dir`. A config is read again for what it names only when its
    /// stamp changed; `commondir` likewise; a directory is searched for known names again only
    /// when it changed.
    pub(super) fn read(dir: &Path, before: Option<&GitDirState>, home: Option<&Path>) -> Self {
        let config = dir.join("config");
        let worktree_config = dir.join("config.worktree");
        let own = [stamp(&config), stamp(&worktree_config)];
        let same_config = before.is_some_and(|b| b.configs.iter().take(2).map(|(_, s)| *s).eq(own));
        let (includes, hooks_path, runs_code) = match before {
            Some(b) if same_config => (
                b.configs.iter().skip(2).map(|(p, _)| p.clone()).collect(),
                b.hook_dirs.get(1).map(|d| d.path.clone()),
                b.runs_code.clone(),
            ),
            _ => {
                let named = git_files::read_config(dir);
                let includes: Vec<PathBuf> = named
                    .includes
                    .iter()
                    .take(INCLUDES_WATCHED)
                    .map(|p| git_files::resolve_config_path(dir, p, home))
                    .collect();
                let hooks = git_files::hooks_path(dir, &named, home);
                (includes, hooks, named.runs_code)
            }
        };
        let mut configs = vec![(config, own[0]), (worktree_config, own[1])];
        configs.extend(includes.into_iter().map(|p| {
            let s = stamp(&p);
            (p, s)
        }));
        let listed_before =
            |path: &Path| before.and_then(|b| b.hook_dirs.iter().find(|d| d.path == path));
        let hooks = dir.join("hooks");
        let mut hook_dirs = vec![Listed::read(
            hooks.clone(),
            HOOK_NAMES,
            listed_before(&hooks),
        )];
        if let Some(path) = hooks_path.filter(|p| *p != hooks) {
            let old = listed_before(&path);
            hook_dirs.push(Listed::read(path, HOOK_NAMES, old));
        }
        let info = Listed::read(dir.join("info"), INFO_NAMES, before.map(|b| &b.info));
        let commondir_stamp = stamp(&dir.join("commondir"));
        let commondir = match before {
            Some(b) if b.commondir.0 == commondir_stamp => b.commondir.clone(),
            _ => (commondir_stamp, git_files::common_dir_of(dir)),
        };
        let modules_stamp = stamp(&dir.join("modules"));
        let modules = match before {
            Some(b) if b.modules.0 == modules_stamp => b.modules.clone(),
            _ => (
                modules_stamp,
                git_files::submodule_git_dirs(dir, super::GIT_DIRS_WATCHED),
            ),
        };
        GitDirState {
            configs,
            runs_code,
            hook_dirs,
            info,
            commondir,
            gitdir: stamp(&dir.join("gitdir")),
            modules,
        }
    }

    /// The git dirs this one leads to: its common dir, its submodules'.
    pub(super) fn leads_to(&self) -> impl Iterator<Item = &PathBuf> {
        self.commondir.1.iter().chain(&self.modules.1)
    }

    /// What differs from `before`, the state of the same git dir at the last look.
    pub(super) fn differences(&self, dir: &Path, before: &GitDirState) -> Vec<Change> {
        let mut changed = Vec::new();
        let new_keys: Vec<&str> = self
            .runs_code
            .iter()
            .filter(|k| !before.runs_code.contains(k))
            .map(String::as_str)
            .collect();
        let mut keys_said = false;
        for (path, now) in &self.configs {
            let was = before
                .configs
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, s)| *s);
            if now.is_none() || was == Some(*now) {
                continue;
            }
            let mut what = if was.flatten().is_none() {
                "new"
            } else {
                "changed"
            }
            .to_owned();
            if !keys_said && !new_keys.is_empty() && path.parent() == Some(dir) {
                what.push_str(&format!(": now sets {}", keys(&new_keys)));
                keys_said = true;
            }
            changed.push(Change::new(path, what));
        }
        for listed in &self.hook_dirs {
            let old = before.hook_dirs.iter().find(|d| d.path == listed.path);
            listed_differences(listed, old, "hook", &mut changed);
        }
        listed_differences(&self.info, Some(&before.info), "file", &mut changed);
        if self.commondir.0.is_some() && self.commondir.0 != before.commondir.0 {
            changed.push(Change::new(
                &dir.join("commondir"),
                names_common(&self.commondir.1),
            ));
        }
        if self.gitdir.is_some() && self.gitdir != before.gitdir {
            changed.push(Change::new(&dir.join("gitdir"), "changed".to_owned()));
        }
        changed
    }

    /// What a git dir new since the last look holds that runs code; nothing when it holds
    /// nothing of the kind (a plain `git init` or `git clone` is not worth a warning, and what
    /// changes in it later is).
    pub(super) fn summary(&self, dir: &Path) -> Vec<Change> {
        let mut held = Vec::new();
        for listed in &self.hook_dirs {
            for (name, _) in &listed.present {
                held.push(Change::new(
                    &listed.path.join(name),
                    "a hook git runs, in a git dir new since the last look".to_owned(),
                ));
            }
        }
        if !self.runs_code.is_empty() {
            let keys: Vec<&str> = self.runs_code.iter().map(String::as_str).collect();
            held.push(Change::new(
                &dir.join("config"),
                format!("a new git dir's config; it sets {}", self::keys(&keys)),
            ));
        }
        if self.commondir.0.is_some() {
            held.push(Change::new(
                &dir.join("commondir"),
                names_common(&self.commondir.1),
            ));
        }
        held
    }
}

fn keys(keys: &[&str]) -> String {
    let mut said = keys
        .iter()
        .take(KEYS_SAID)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > KEYS_SAID {
        said.push_str(&format!(" and {} more", keys.len() - KEYS_SAID));
    }
    said
}

fn names_common(common: &Option<PathBuf>) -> String {
    match common {
        Some(common) => format!(
            "now names {}: git takes hooks and config from there",
            shown(common)
        ),
        // Not read for commands (`agentty_sandbox::deputy`): a file kept from their reads, or
        // not a plain file.
        None => "now there, naming what agentty does not read for commands: git takes hooks \
                 and config from where it names"
            .to_owned(),
    }
}

/// The files of `now` that are new or changed since `old`, and the directory itself when it
/// became something else (a symlink to a directory elsewhere).
fn listed_differences(now: &Listed, old: Option<&Listed>, noun: &str, changed: &mut Vec<Change>) {
    if let Some(old) = old
        && old.stamp.is_some()
        && kind(old.stamp) != kind(now.stamp)
        && kind(now.stamp) != Kind::Absent
    {
        changed.push(Change::new(&now.path, now_is(&now.path, now.stamp)));
    }
    for (name, stamp) in &now.present {
        let was = old.and_then(|o| o.had(name));
        if was == Some(*stamp) {
            continue;
        }
        let what = if was.is_none() {
            format!("new {noun}")
        } else {
            format!("{noun} changed")
        };
        changed.push(Change::new(&now.path.join(name), what));
    }
}
