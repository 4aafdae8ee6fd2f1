//! A confined command must never widen a later session's sandbox through git's files: a `.git`
//! file it plants (`gitdir: $HOME`, `gitdir: /`), a `commondir` it rewrites in a linked
//! worktree's git dir (writable, so commits work), or a `.git` symlink. Each attack is planted
//! by a confined command in one session; the next session's plan must not trust it.

use std::path::{Path, PathBuf};

use agentty_sandbox::{Mode, Why, worktree_git_dirs};

use super::common::{Fixture, ok, refused, setup, sh};

const GIT: &str = "git -c user.name=agentty -c user.email=agentty@example.invalid -c init.defaultBranch=main -c commit.gpgsign=false";

/// The next session's plan for `root`: no git dir may have been added, and a confined write to
/// each of `targets` is refused.
fn next_session_refuses(f: &Fixture, root: &Path, targets: &[PathBuf]) {
    let plan = f.plan(Mode::Default, vec![root.to_path_buf()]);
    let added: Vec<_> = plan
        .writable()
        .iter()
        .filter(|w| w.why == Why::GitDir)
        .collect();
    assert!(
        added.is_empty(),
        "a planted git file widened the sandbox: {added:?}"
    );
    let p = std::sync::Arc::new(plan.prepare().unwrap());
    for target in targets {
        let file = target.join("agentty-widened");
        refused(&sh(
            &p,
            root,
            &f.home,
            &format!("touch '{}'", file.display()),
        ));
        assert!(!file.exists(), "wrote {}", file.display());
    }
}

#[test]
fn a_planted_git_file_never_widens_the_next_session() {
    let f = Fixture::new();
    let session = f.prepared(Mode::Default);
    for target in [
        f.home.clone(),
        PathBuf::from("/"),
        f.outside.clone(),
        PathBuf::from("/etc"),
    ] {
        // Session 1: the confined command plants the file (it may: .git is in the workspace).
        let plant = format!("printf 'gitdir: %s\\n' '{}' > .git", target.display());
        ok(&sh(&session, &f.ws, &f.home, &plant));
        assert!(
            worktree_git_dirs(&f.ws, Some(&f.home)).is_empty(),
            "{target:?}"
        );
        next_session_refuses(&f, &f.ws, &[f.home.clone(), f.outside.clone()]);
    }
}

/// A workspace under a writable folder (here the temp dir): the `.git` file is planted above it.
#[test]
fn a_git_file_planted_above_the_workspace_never_widens_the_next_session() {
    let f = Fixture::new();
    let project = f.tmp.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let session = f.prepared(Mode::Default);
    let plant = format!("printf 'gitdir: %s\\n' '{}' > ../.git", f.home.display());
    ok(&sh(&session, &project, &f.home, &plant));
    next_session_refuses(&f, &project, &[f.home.clone(), f.outside.clone()]);
}

/// A real linked worktree: its git dir is writable so commits work, and a confined command
/// rewrites the `commondir` there to point at home. The next session must not follow it.
#[test]
fn a_rewritten_commondir_never_widens_the_next_session() {
    let f = Fixture::new();
    let repo = f.outside.join("repo");
    std::fs::create_dir(&repo).unwrap();
    let wt = f.outside.join("wt");
    setup(
        &repo,
        &format!(
            "set -e; {GIT} init -q; echo a > a; {GIT} add a; {GIT} commit -qm base; {GIT} worktree add -q '{}' -b feature",
            wt.display()
        ),
    );
    assert_eq!(worktree_git_dirs(&wt, Some(&f.home)).len(), 2);
    let first = std::sync::Arc::new(f.plan(Mode::Default, vec![wt.clone()]).prepare().unwrap());
    let commondir = repo.join(".git/worktrees/wt/commondir");
    let plant = format!(
        "printf '%s\\n' '{}' > '{}'",
        f.home.display(),
        commondir.display()
    );
    ok(&sh(&first, &wt, &f.home, &plant));
    next_session_refuses(&f, &wt, std::slice::from_ref(&f.home));
}

/// A `.git` naming the git dir of another worktree of a real repository: git's back-link names
/// that other worktree, not this one.
#[test]
fn a_git_file_naming_another_worktrees_git_dir_is_not_trusted() {
    let f = Fixture::new();
    let repo = f.outside.join("repo");
    std::fs::create_dir(&repo).unwrap();
    let other = f.outside.join("other");
    setup(
        &repo,
        &format!(
            "set -e; {GIT} init -q; echo a > a; {GIT} add a; {GIT} commit -qm base; {GIT} worktree add -q '{}' -b other",
            other.display()
        ),
    );
    let gitdir = repo.join(".git/worktrees/other");
    std::fs::write(f.ws.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
    next_session_refuses(&f, &f.ws, &[repo.join(".git")]);
}

/// A `.git` symlink above the workspace, to a real repository elsewhere, is not followed.
#[test]
fn a_git_symlink_above_the_workspace_is_not_followed() {
    let f = Fixture::new();
    let real = f.outside.join("real");
    std::fs::create_dir(&real).unwrap();
    setup(&real, &format!("set -e; {GIT} init -q"));
    let project = f.tmp.join("mono/pkg");
    std::fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(real.join(".git"), f.tmp.join("mono/.git")).unwrap();
    next_session_refuses(&f, &project, &[real.join(".git")]);
}
