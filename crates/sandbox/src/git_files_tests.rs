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

/// What `git init` and `git clone` write is inert; what runs code is named, each once.
#[test]
fn what_runs_code_is_everything_not_known_inert() {
    let clone = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                 \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y.git\n\
                 \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                 \tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = a\n\
                 [alias]\n\tst = status\n[core]\n\tfsmonitor = true\n[color \"diff\"]\n\tmeta = red\n";
    assert_eq!(scan_config(clone).runs_code, Vec::<String>::new());
    let planted = "[core] fsmonitor = touch /tmp/x\n[alias]\n\tst = !sh -c evil\n\tco = checkout\n\
                   [diff \"x\"]\n\ttextconv = evil\n[core]\n\tpager = evil\n\tsshCommand\n\
                   [remote.origin]\n\tuploadpack = evil\n[include]\n\tpath = x\n\
                   [core]\n\tfsmonitor = touch /tmp/y\n";
    assert_eq!(
        scan_config(planted).runs_code,
        [
            "core.fsmonitor",
            "alias.st",
            "diff.x.textconv",
            "core.pager",
            "core.sshcommand",
            "remote.origin.uploadpack",
            "include.path",
        ]
    );
}

/// A huge config is read only so far: what it names past that is not looked for.
#[test]
fn only_the_head_of_a_huge_config_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let filler = format!("# {}\n", "x".repeat(1022)).repeat(2048);
    let text = format!("[include]\n\tpath = near.cfg\n{filler}[include]\n\tpath = far.cfg\n");
    std::fs::write(dir.path().join("config"), text).unwrap();
    assert_eq!(read_config(dir.path()).includes, vec!["near.cfg"]);
}

#[test]
fn a_git_entry_leads_to_its_dir_through_a_gitfile_or_a_symlink_and_commondir_further() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("real/worktrees/w")).unwrap();
    std::fs::create_dir(root.join("ws")).unwrap();
    std::fs::write(root.join("ws/.git"), "gitdir: ../real/worktrees/w\n").unwrap();
    assert_eq!(
        git_dir_of(&root.join("ws/.git")),
        Some(root.join("real/worktrees/w"))
    );
    std::fs::write(root.join("real/worktrees/w/commondir"), "../..\n").unwrap();
    assert_eq!(
        common_dir_of(&root.join("real/worktrees/w")),
        Some(root.join("real"))
    );
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    assert_eq!(git_dir_of(&root.join("link")), Some(root.join("real")));
    assert_eq!(git_dir_of(&root.join("real")), Some(root.join("real")));
    assert_eq!(git_dir_of(&root.join("none")), None);
}

#[test]
fn hooks_path_is_the_worktrees_when_relative() {
    let dir = Path::new("/w/.git");
    let config = scan_config("[core]\n\thooksPath = .husky/_\n");
    assert_eq!(
        hooks_path(dir, &config, None),
        Some(PathBuf::from("/w/.husky/_"))
    );
    let config = scan_config("[core]\n\thooksPath = ~/hooks\n");
    assert_eq!(
        hooks_path(dir, &config, Some(Path::new("/home/u"))),
        Some(PathBuf::from("/home/u/hooks"))
    );
}
