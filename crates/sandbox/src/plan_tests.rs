use super::*;

fn ctx(home: &Path, tmp: &Path) -> HostContext {
    HostContext {
        home: Some(home.to_path_buf()),
        temp_dirs: vec![tmp.to_path_buf()],
        vars: vec![],
        installed: vec![],
    }
}

/// A fresh account: npm is installed but has never run, so `~/.npm` does not exist yet.
/// Its cache is created (home included) only because npm is on PATH.
#[test]
fn an_installed_tools_missing_home_and_cache_are_created() {
    let base = tempfile::tempdir().unwrap();
    let (ws, home, tmp) = (
        base.path().join("ws"),
        base.path().join("home"),
        base.path().join("tmp"),
    );
    for d in [&ws, &home, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    let policy = Policy::new(Mode::Default, vec![ws]);
    let _ = Plan::with_context(&policy, &ctx(&home, &tmp));
    assert!(
        !home.join(".npm").exists(),
        "not installed: nothing created"
    );
    let installed = HostContext {
        installed: vec!["npm"],
        ..ctx(&home, &tmp)
    };
    let plan = Plan::with_context(&policy, &installed);
    let cache = home.join(".npm/_cacache").canonicalize().unwrap();
    assert!(plan.writable().iter().any(|w| w.path == cache));
    assert!(!plan.allows_write(&home.join(".npm/bin")), "only the cache");
    assert!(!home.join(".cargo").exists(), "cargo is not installed here");
    let path = std::ffi::OsStr::new("/nonexistent:/bin:/usr/bin");
    assert!(on_path("sh", path));
    assert!(!on_path("agentty-no-such-tool", path));
}

#[test]
fn default_mode_collects_roots_temp_caches_devices() {
    let base = tempfile::tempdir().unwrap();
    let (ws, home, tmp) = (
        base.path().join("ws"),
        base.path().join("home"),
        base.path().join("tmp"),
    );
    for d in [&ws, &home.join(".cargo"), &tmp, &home.join("go/pkg/mod")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let plan = Plan::with_context(
        &Policy::new(Mode::Default, vec![ws.clone()]),
        &ctx(&home, &tmp),
    );
    let paths: Vec<&Path> = plan.writable().iter().map(|w| w.path.as_path()).collect();
    let canon = |p: &Path| p.canonicalize().unwrap();
    assert!(paths.contains(&canon(&ws).as_path()));
    assert!(paths.contains(&canon(&tmp).as_path()));
    assert!(
        paths.contains(&canon(&home.join(".cargo/registry")).as_path()),
        "a cache under an installed tool is created and writable"
    );
    assert!(
        !paths.contains(&canon(&home.join(".cargo")).as_path()),
        "never a tool's whole home"
    );
    assert!(!plan.allows_write(&home.join(".cargo/env")));
    assert!(!plan.allows_write(&home.join(".cargo/bin/git")));
    assert!(paths.contains(&canon(&home.join("go/pkg/mod")).as_path()));
    assert!(paths.contains(&Path::new("/dev/null")));
    assert!(
        !paths.iter().any(|p| p.starts_with(home.join(".npm"))),
        "caches of tools that are not installed are skipped"
    );
    assert!(!home.join(".npm").exists(), "and not created");
    assert!(plan.allows_write(&ws.join("new/file")));
    assert!(!plan.allows_write(&home.join("file")));
}

/// A worktree's `gitdir` back-link planted as a FIFO: the plan is made at once (an attacker's
/// pass held the next server's start on the workspace forever with one), the worktree not
/// taken for a linked one.
#[test]
fn a_fifo_in_a_worktrees_git_dir_holds_nothing() {
    let base = tempfile::tempdir().unwrap();
    let common = base.path().join("x");
    for dir in ["objects", "refs", "worktrees/w/objects", "worktrees/w/refs"] {
        std::fs::create_dir_all(common.join(dir)).unwrap();
    }
    std::fs::write(common.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(common.join("worktrees/w/HEAD"), "ref: refs/heads/w\n").unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join(".git"),
        format!("gitdir: {}\n", common.join("worktrees/w").display()),
    )
    .unwrap();
    let fifo = std::ffi::CString::new(
        common
            .join("worktrees/w/gitdir")
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(worktree_git_dirs(&ws, None)));
    let found = finished
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("held by the FIFO");
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_dotfiles_repo_at_home_is_not_opened_up() {
    let base = tempfile::tempdir().unwrap();
    let home = base.path().join("home");
    let project = home.join("project");
    for dir in [".git/objects", ".git/refs"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    std::fs::write(home.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(&project).unwrap();
    assert!(worktree_git_dirs(&project, Some(&home)).is_empty());
    // The same layout elsewhere is a monorepo with a package.
    assert_eq!(worktree_git_dirs(&project, None), vec![home.join(".git")]);
}

#[test]
fn plan_mode_is_devices_only() {
    let ws = tempfile::tempdir().unwrap();
    let plan = Plan::with_context(
        &Policy::new(Mode::Plan, vec![ws.path().to_path_buf()]),
        &HostContext {
            temp_dirs: vec!["/tmp".into()],
            ..HostContext::default()
        },
    );
    assert!(
        plan.writable()
            .iter()
            .all(|w| w.why == Why::Device && w.path.starts_with("/dev"))
    );
    assert!(!plan.allows_write(ws.path()));
    assert!(
        !plan.allows_write(Path::new("/dev/zero")),
        "only terminal devices in plan"
    );
    assert!(plan.allows_write(Path::new("/dev/null")));
}

#[test]
fn auto_allows_everything_and_lists_nothing() {
    let plan = Plan::with_context(&Policy::new(Mode::Auto, vec![]), &HostContext::default());
    assert!(plan.writable().is_empty());
    assert!(plan.allows_write(Path::new("/etc/passwd")));
}

#[test]
fn nested_paths_are_deduplicated() {
    let base = tempfile::tempdir().unwrap();
    let inner = base.path().join("a/b");
    std::fs::create_dir_all(&inner).unwrap();
    let plan = Plan::with_context(
        &Policy::new(Mode::Default, vec![base.path().to_path_buf(), inner]),
        &HostContext::default(),
    );
    assert_eq!(
        plan.writable()
            .iter()
            .filter(|w| w.why == Why::Root)
            .count(),
        1
    );
}

#[test]
fn resolve_keeps_missing_tail() {
    let base = tempfile::tempdir().unwrap();
    let canon = base.path().canonicalize().unwrap();
    assert_eq!(resolve(&base.path().join("x/y")), canon.join("x/y"));
    assert_eq!(resolve(&base.path().join("x/../y")), canon.join("y"));
    assert_eq!(
        resolve(&base.path().join("x/../../z")),
        canon.parent().unwrap().join("z")
    );
}
