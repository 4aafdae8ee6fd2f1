//! `git commit` must work under workspace-write, in a plain repo and in a linked worktree whose
//! git dir lives outside the workspace.

use agentty_sandbox::{Mode, Why, worktree_git_dirs};

use super::common::{Fixture, ok, refused, setup, sh};

const GIT: &str = "git -c user.name=agentty -c user.email=agentty@example.invalid -c init.defaultBranch=main -c commit.gpgsign=false";

#[test]
fn commit_in_workspace_repo() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    let out = sh(
        &p,
        &f.ws,
        &f.home,
        &format!(
            "set -e; {GIT} init -q; echo hi > a; {GIT} add a; {GIT} commit -qm first; {GIT} log --oneline"
        ),
    );
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("first"));
}

#[test]
fn commit_in_linked_worktree() {
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
    assert!(wt.join(".git").is_file());

    let dirs = worktree_git_dirs(&wt, Some(&f.home));
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let plan = f.plan(Mode::Default, vec![wt.clone()]);
    let common = repo.join(".git").canonicalize().unwrap();
    assert!(
        plan.writable()
            .iter()
            .any(|w| w.why == Why::GitDir && w.path == common)
    );

    let p = std::sync::Arc::new(plan.prepare().unwrap());
    let out = sh(
        &p,
        &wt,
        &f.home,
        &format!(
            "set -e; echo b > b; {GIT} add b; {GIT} commit -qm in-worktree; {GIT} log --oneline -1"
        ),
    );
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("in-worktree"));
    // The main checkout itself stays read-only: only its .git was opened up.
    refused(&sh(
        &p,
        &wt,
        &f.home,
        &format!("echo x > '{}/a'", repo.display()),
    ));
    assert_eq!(std::fs::read_to_string(repo.join("a")).unwrap(), "a\n");
}

/// A workspace that is a package of a bigger repository commits into that repository's `.git`;
/// the rest of the repository stays read-only.
#[test]
fn commit_in_a_subfolder_of_a_repo() {
    let f = Fixture::new();
    let mono = f.outside.join("mono");
    let pkg = mono.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    setup(
        &mono,
        &format!("set -e; {GIT} init -q; echo a > a; {GIT} add a; {GIT} commit -qm base"),
    );
    let plan = f.plan(Mode::Default, vec![pkg.clone()]);
    let git_dir = mono.join(".git").canonicalize().unwrap();
    assert!(
        plan.writable()
            .iter()
            .any(|w| w.why == Why::GitDir && w.path == git_dir)
    );
    let p = std::sync::Arc::new(plan.prepare().unwrap());
    let out = sh(
        &p,
        &pkg,
        &f.home,
        &format!(
            "set -e; echo b > b; {GIT} add b; {GIT} commit -qm in-pkg; {GIT} log --oneline -1"
        ),
    );
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("in-pkg"));
    refused(&sh(
        &p,
        &pkg,
        &f.home,
        &format!("echo x > '{}/a'", mono.display()),
    ));
    assert_eq!(std::fs::read_to_string(mono.join("a")).unwrap(), "a\n");
}
