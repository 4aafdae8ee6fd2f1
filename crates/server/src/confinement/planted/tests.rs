use std::path::{Path, PathBuf};

use agentty_sandbox::{HostContext, Mode, Plan, Policy, Protected};

use super::*;

/// A workspace in a temp dir commands may write (as `/tmp/proj` is), with the watch made on
/// it after `before` prepared it.
struct Fixture {
    _base: tempfile::TempDir,
    tmp: PathBuf,
    ws: PathBuf,
    planted: Planted,
}

fn fixture(before: impl FnOnce(&Path)) -> Fixture {
    let base = tempfile::tempdir().unwrap();
    let tmp = base.path().canonicalize().unwrap().join("tmp");
    let ws = tmp.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    before(&ws);
    let host = HostContext {
        home: None,
        temp_dirs: vec![tmp.clone()],
        vars: vec![],
        installed: vec![],
    };
    let plan = Plan::with_context(&Policy::new(Mode::Default, vec![ws.clone()]), &host);
    let protected = Protected::find(&plan, std::slice::from_ref(&ws), None, None, &[]);
    let planted = Planted::new(&plan, std::slice::from_ref(&ws), &protected);
    Fixture {
        _base: base,
        tmp,
        ws,
        planted,
    }
}

/// What `git init` leaves: a config of inert keys, sample hooks, `info/exclude`.
fn plain_repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::create_dir_all(dir.join("info")).unwrap();
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::write(
        dir.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
    )
    .unwrap();
    std::fs::write(dir.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
    std::fs::write(dir.join("info/exclude"), "# exclude\n").unwrap();
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn said(changes: &[Change]) -> String {
    changes
        .iter()
        .map(|c| format!("{} ({})", c.path, c.what))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_plain_new_repository_is_quiet_and_what_is_planted_in_it_later_is_told() {
    let f = fixture(|_| {});
    plain_repo(&f.ws.join(".git"));
    assert_eq!(said(&f.planted.changes()), "");
    write(&f.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n");
    let changes = f.planted.changes();
    assert_eq!(changes.len(), 1, "{}", said(&changes));
    assert!(changes[0].path.ends_with(".git/hooks/pre-commit"));
    assert_eq!(changes[0].what, "new hook");
    assert!(f.planted.changes().is_empty(), "told twice");
}

#[test]
fn a_new_repository_holding_a_hook_and_an_fsmonitor_is_told_with_what_it_holds() {
    let f = fixture(|_| {});
    plain_repo(&f.ws.join(".git"));
    write(&f.ws.join(".git/hooks/post-checkout"), "#!/bin/sh\n");
    std::fs::write(
        f.ws.join(".git/config"),
        "[core]\n\tbare = false\n\tfsmonitor = touch /tmp/x\n[alias]\n\tst = !sh\n",
    )
    .unwrap();
    let text = said(&f.planted.changes());
    assert!(
        text.contains(".git/hooks/post-checkout (a hook git runs"),
        "{text}"
    );
    assert!(text.contains("sets core.fsmonitor, alias.st"), "{text}");
}

#[test]
fn a_git_dir_moved_behind_a_gitfile_is_told_and_followed() {
    let f = fixture(|ws| plain_repo(&ws.join(".git")));
    std::fs::rename(f.ws.join(".git"), f.ws.join(".g")).unwrap();
    std::fs::write(f.ws.join(".git"), "gitdir: .g\n").unwrap();
    write(&f.ws.join(".g/hooks/pre-commit"), "#!/bin/sh\n");
    let text = said(&f.planted.changes());
    assert!(
        text.contains(&format!(
            ".git (now a gitfile naming {})",
            f.ws.join(".g").display()
        )),
        "{text}"
    );
    assert!(
        text.contains(".g/hooks/pre-commit (a hook git runs"),
        "{text}"
    );
    // The gitfile's target is watched from then on.
    write(&f.ws.join(".g/hooks/pre-push"), "#!/bin/sh\n");
    assert!(said(&f.planted.changes()).contains(".g/hooks/pre-push (new hook)"));
}

#[test]
fn hooks_reached_through_a_symlink_are_looked_at_through_it() {
    let f = fixture(|ws| plain_repo(&ws.join(".git")));
    let elsewhere = f.tmp.join("hooks-elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::remove_dir_all(f.ws.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, f.ws.join(".git/hooks")).unwrap();
    let text = said(&f.planted.changes());
    assert!(text.contains(".git/hooks (now a symlink to"), "{text}");
    // The link stays as it is; the directory it leads to gets a hook, then the hook changes.
    write(&elsewhere.join("pre-commit"), "#!/bin/sh\n");
    assert!(said(&f.planted.changes()).contains(".git/hooks/pre-commit (new hook)"));
    write(&elsewhere.join("pre-commit"), "#!/bin/sh\necho more\n");
    assert!(said(&f.planted.changes()).contains(".git/hooks/pre-commit (hook changed)"));
}

#[test]
fn a_commondir_naming_a_copy_is_told_with_the_copys_hooks() {
    let f = fixture(|ws| plain_repo(&ws.join(".git")));
    let copy = f.tmp.join("copy");
    plain_repo(&copy);
    write(&copy.join("hooks/pre-commit"), "#!/bin/sh\n");
    std::fs::write(f.ws.join(".git/commondir"), format!("{}\n", copy.display())).unwrap();
    let text = said(&f.planted.changes());
    assert!(text.contains(".git/commondir (now names"), "{text}");
    assert!(
        text.contains(&format!(
            "{}/hooks/pre-commit (a hook git runs",
            copy.display()
        )),
        "{text}"
    );
}

/// Git looks upward when the root has no repository: a `.git` made in the writable directory
/// above the workspace is watched too.
#[test]
fn a_repository_planted_above_the_workspace_is_told() {
    let f = fixture(|_| {});
    plain_repo(&f.tmp.join(".git"));
    write(&f.tmp.join(".git/hooks/pre-commit"), "#!/bin/sh\n");
    let text = said(&f.planted.changes());
    assert!(
        text.contains(&format!("{}/.git/hooks/pre-commit", f.tmp.display())),
        "{text}"
    );
}

#[test]
fn project_files_are_told_when_new_or_changed() {
    let f = fixture(|ws| {
        std::fs::create_dir(ws.join(".vscode")).unwrap();
        std::fs::write(ws.join(".vscode/tasks.json"), "{}").unwrap();
    });
    std::fs::write(f.ws.join(".envrc"), "echo hi\n").unwrap();
    std::fs::write(f.ws.join(".vscode/tasks.json"), "{\"x\":1}").unwrap();
    write(&f.ws.join(".claude/settings.json"), "{}");
    let text = said(&f.planted.changes());
    assert!(text.contains(".envrc (new)"), "{text}");
    assert!(text.contains(".vscode/tasks.json (changed)"), "{text}");
    assert!(text.contains(".claude (new)"), "{text}");
}

/// A name absent at a look is not looked at again while its directory is unchanged: what is
/// planted after quiet looks (whose stamps of the directories are trusted) changes the
/// directory, and is told.
#[test]
fn files_planted_after_quiet_looks_are_told() {
    let f = fixture(|_| {});
    std::thread::sleep(std::time::Duration::from_millis(120));
    assert!(f.planted.changes().is_empty());
    assert!(f.planted.changes().is_empty());
    std::fs::write(f.ws.join(".envrc"), "echo hi\n").unwrap();
    write(&f.ws.join(".vscode/tasks.json"), "{}");
    plain_repo(&f.tmp.join(".git"));
    write(&f.tmp.join(".git/hooks/pre-commit"), "#!/bin/sh\n");
    let text = said(&f.planted.changes());
    assert!(text.contains(".envrc (new)"), "{text}");
    assert!(text.contains(".vscode (new)"), "{text}");
    assert!(
        text.contains(&format!("{}/.git/hooks/pre-commit", f.tmp.display())),
        "{text}"
    );
    // Quiet again, then one more in the same directory.
    std::thread::sleep(std::time::Duration::from_millis(120));
    assert!(f.planted.changes().is_empty());
    std::fs::write(f.ws.join(".mcp.json"), "{}").unwrap();
    assert!(said(&f.planted.changes()).contains(".mcp.json (new)"));
}

#[test]
fn a_shown_path_has_its_control_characters_escaped() {
    let shown = shown(Path::new(
        "/w/.git/hooks/pre-commit\n2026 INFO forged\u{202e}",
    ));
    assert!(
        !shown.contains('\n') && !shown.contains('\u{202e}'),
        "{shown}"
    );
    assert!(shown.contains("\\u{a}"), "{shown}");
}

/// What the protected set costs at start, and a look of the watch, on a fresh `git init` in a
/// workspace in a temp dir: `cargo nextest run -p agentty-server --run-ignored only -E
/// 'test(measure_look)' --no-capture` (under `strace -f -c` for the system calls).
#[test]
#[ignore = "a measurement, not a check"]
fn measure_look_and_start() {
    let looks: u32 = std::env::var("LOOKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
        .max(1);
    let f = fixture(|ws| {
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(ws)
            .status()
            .unwrap();
        assert!(init.success());
    });
    let host = HostContext {
        home: None,
        temp_dirs: vec![f.tmp.clone()],
        vars: vec![],
        installed: vec![],
    };
    let plan = Plan::with_context(&Policy::new(Mode::Default, vec![f.ws.clone()]), &host);
    let roots = std::slice::from_ref(&f.ws);
    let finds = 1000;
    let t = std::time::Instant::now();
    let mut protected = Protected::default();
    for _ in 0..finds {
        protected = Protected::find(&plan, roots, None, None, &[]);
    }
    eprintln!(
        "start: Protected::find {:?} each ({} entries, {} read-only, {} pinned)",
        t.elapsed() / finds,
        protected.entries.len(),
        protected.read_only.len(),
        protected.pinned.len()
    );
    let t = std::time::Instant::now();
    let planted = Planted::new(&plan, roots, &protected);
    eprintln!("start: the first look {:?}", t.elapsed());
    let t = std::time::Instant::now();
    for _ in 0..looks {
        assert!(planted.changes().is_empty());
    }
    eprintln!("look: {:?} each", t.elapsed() / looks);
}
