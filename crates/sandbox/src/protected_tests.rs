use super::*;
use crate::{HostContext, Mode, Policy};

struct Fixture {
    _base: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
}

fn fixture() -> Fixture {
    let base = tempfile::tempdir().unwrap();
    let real = base.path().canonicalize().unwrap();
    let (ws, home, tmp) = (real.join("tmp/ws"), real.join("home"), real.join("tmp"));
    for d in [&ws, &home, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    Fixture {
        _base: base,
        ws,
        home,
        tmp,
    }
}

fn plan(f: &Fixture, mode: Mode, roots: &[&Path]) -> Plan {
    let host = HostContext {
        home: Some(f.home.clone()),
        temp_dirs: vec![f.tmp.clone()],
        vars: vec![],
        installed: vec![],
    };
    let roots = roots.iter().map(|r| r.to_path_buf()).collect();
    Plan::with_context(&Policy::new(mode, roots), &host)
}

fn mkdirs(base: &Path, dirs: &[&str]) {
    for d in dirs {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
}

fn touch(base: &Path, files: &[&str]) {
    for f in files {
        std::fs::write(base.join(f), "").unwrap();
    }
}

/// A workspace in a temp dir (so the workspace itself could be renamed) with a repository, a
/// submodule, `.vscode` and `.envrc`; home is not writable.
#[test]
fn what_exists_is_read_only_with_its_renameable_parents_pinned_and_the_rest_watched() {
    let f = fixture();
    mkdirs(
        &f.ws,
        &[
            ".git/hooks",
            ".git/info",
            ".git/modules/lib/hooks",
            ".vscode",
        ],
    );
    touch(&f.ws, &[".git/config", ".git/modules/lib/config", ".envrc"]);
    touch(&f.home, &[".bashrc"]);
    let p = plan(&f, Mode::Default, &[&f.ws]);
    let found = Protected::find(&p, std::slice::from_ref(&f.ws), Some(&f.home), None, &[]);
    let rel = |paths: &[PathBuf]| -> Vec<String> {
        paths
            .iter()
            .map(|p| {
                p.strip_prefix(&f.ws)
                    .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
            })
            .collect()
    };
    assert_eq!(
        rel(&found.read_only),
        [
            ".envrc",
            ".git/config",
            ".git/hooks",
            ".git/info",
            ".git/modules/lib/config",
            ".git/modules/lib/hooks",
            ".vscode",
        ]
    );
    // The workspace (its parent, the temp dir, is writable) and every folder down to them.
    assert_eq!(
        rel(&found.pinned),
        ["", ".git", ".git/modules", ".git/modules/lib"]
    );
    let watched: Vec<&str> = found
        .in_stand(Stand::Watched)
        .map(|e| e.name.as_str())
        .collect();
    assert!(watched.contains(&".mcp.json"), "{watched:?}");
    assert!(watched.contains(&".git/config.worktree"), "{watched:?}");
    // Home is not writable: nothing of it is listed.
    assert!(!found.entries.iter().any(|e| e.path.starts_with(&f.home)));
}

/// A workspace that is home: the rc files and `.config/git` are protected too, `.config`
/// pinned; a name in `writable_protected` is left open; agentty's config file is protected.
#[test]
fn a_writable_home_protects_its_rc_files_and_opened_names_stay_writable() {
    let f = fixture();
    mkdirs(
        &f.home,
        &[
            ".git/hooks",
            ".config/git",
            ".config/agentty",
            ".config/fish",
        ],
    );
    touch(
        &f.home,
        &[
            ".git/config",
            ".bashrc",
            ".profile",
            ".gitconfig",
            ".mkshrc",
            ".bash_logout",
            ".bash_aliases",
            ".config/agentty/config.toml",
        ],
    );
    let p = plan(&f, Mode::Default, &[&f.home]);
    let config = f.home.join(".config/agentty/config.toml");
    let found = Protected::find(
        &p,
        std::slice::from_ref(&f.home),
        Some(&f.home),
        Some(&config),
        &[".git/config".to_owned()],
    );
    // Other shells' too (review 41 L5): what an escalated shell or the user's own runs later.
    for name in [
        ".bashrc",
        ".profile",
        ".gitconfig",
        ".config/git",
        ".git/hooks",
        ".mkshrc",
        ".bash_logout",
        ".config/fish",
        ".bash_aliases",
    ] {
        assert!(found.read_only.contains(&f.home.join(name)), "{name}");
    }
    assert!(found.read_only.contains(&config));
    assert!(!found.read_only.contains(&f.home.join(".git/config")));
    assert_eq!(found.in_stand(Stand::Opened).count(), 1);
    assert!(found.pinned.contains(&f.home.join(".config")));
    assert!(
        !found.pinned.contains(&f.home),
        "its parent is not writable"
    );
}

/// A symlinked hooks directory: the link is watched, what it leads to is made read-only when a
/// command may write it. `core.hooksPath` names another directory: it is read-only as well.
#[test]
fn symlinks_are_watched_and_their_writable_targets_protected_and_hooks_path_followed() {
    let f = fixture();
    // A directory of no protected name (`.husky` is one itself).
    mkdirs(&f.ws, &[".git", ".githooks/_"]);
    mkdirs(&f.tmp, &["shared-hooks"]);
    std::fs::write(
        f.ws.join(".git/config"),
        "[core]\n\thooksPath = .githooks/_\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(f.tmp.join("shared-hooks"), f.ws.join(".git/hooks")).unwrap();
    let p = plan(&f, Mode::Default, &[&f.ws]);
    let found = Protected::find(&p, std::slice::from_ref(&f.ws), None, None, &[]);
    assert!(found.read_only.contains(&f.tmp.join("shared-hooks")));
    assert!(found.read_only.contains(&f.ws.join(".githooks/_")));
    let hooks = found
        .entries
        .iter()
        .find(|e| e.path == f.ws.join(".git/hooks"))
        .unwrap();
    assert_eq!(hooks.stand, Stand::Watched);
}

#[test]
fn nothing_is_protected_in_plan_or_auto_mode_and_names_are_checked() {
    let f = fixture();
    mkdirs(&f.ws, &[".git/hooks"]);
    for mode in [Mode::Plan, Mode::Auto] {
        let p = plan(&f, mode, &[&f.ws]);
        let found = Protected::find(&p, std::slice::from_ref(&f.ws), None, None, &[]);
        assert_eq!(found, Protected::default(), "{mode:?}");
    }
    assert!(check_names(&[".git/config".into(), "~/.bashrc".into(), ".envrc".into()]).is_ok());
    let err = check_names(&[".git/objects".into()]).unwrap_err();
    assert!(
        err.contains(".git/objects") && err.contains(".git/hooks"),
        "{err}"
    );
}

/// agentty's state dir inside a writable root (the workspace holds home) becomes read-only, its
/// renamable parents pinned, without an entry (nothing of it is watched); one that is, or holds,
/// a writable root is left alone (the whole root would become read-only), and so is one outside
/// every writable root, or any in `plan` mode.
#[test]
fn a_state_dir_in_a_writable_root_is_kept_read_only_and_no_more() {
    let f = fixture();
    let state = f.home.join(".local/state/agentty");
    std::fs::create_dir_all(&state).unwrap();
    let p = plan(&f, Mode::Default, &[&f.home]);
    let mut found = Protected::find(&p, std::slice::from_ref(&f.home), Some(&f.home), None, &[]);
    let entries = found.entries.len();
    found.keep_read_only(&p, &state);
    assert!(found.read_only.contains(&state), "{found:?}");
    assert!(found.pinned.contains(&f.home.join(".local")), "{found:?}");
    assert!(
        found.pinned.contains(&f.home.join(".local/state")),
        "{found:?}"
    );
    assert_eq!(found.entries.len(), entries, "an entry is watched");
    // Once is enough.
    found.keep_read_only(&p, &state);
    assert_eq!(found.read_only.iter().filter(|r| **r == state).count(), 1);

    for (roots, given) in [
        (&[f.home.as_path()][..], f.home.clone()),
        (&[f.ws.as_path()][..], f.tmp.clone()),
        (&[f.ws.as_path()][..], f.home.join("elsewhere")),
    ] {
        let p = plan(&f, Mode::Default, roots);
        let mut found = Protected::default();
        found.keep_read_only(&p, &given);
        assert!(found.read_only.is_empty(), "{given:?}: {found:?}");
    }
    let p = plan(&f, Mode::Plan, &[&f.home]);
    let mut found = Protected::default();
    found.keep_read_only(&p, &state);
    assert!(found.read_only.is_empty(), "{found:?}");
}
