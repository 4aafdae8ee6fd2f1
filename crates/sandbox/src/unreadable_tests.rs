use std::os::fd::AsRawFd;

use super::*;
use crate::mode::{Mode, Policy};
use crate::plan::{HostContext, Plan};

/// A private tree: `home/` with a secret dir, a dotfile, a project and a link to the secret;
/// `state/` with a spill dir of its own.
struct Tree {
    _base: tempfile::TempDir,
    root: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().canonicalize().unwrap();
        for dir in [
            "home/.ssh",
            "home/proj",
            "state/spill/me",
            "state/spill/other",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("home/.ssh/id"), "key").unwrap();
        std::fs::write(root.join("home/.gitconfig"), "[user]").unwrap();
        std::fs::write(root.join("state/token"), "t").unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/link")).unwrap();
        Tree { _base: base, root }
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// The paths `u`'s rules grant, named as each is handed over.
fn granted(u: &Unreadable) -> Vec<PathBuf> {
    let mut got = Vec::new();
    u.rules(&mut |_, fd| {
        got.push(std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap());
        Ok(())
    })
    .unwrap();
    got
}

#[test]
fn siblings_of_every_directory_above_are_granted_never_the_path_or_its_ancestors() {
    let t = Tree::new();
    let mut u = Unreadable::default();
    u.hide(t.at("home/.ssh"), HiddenWhy::Configured);
    let got = granted(&u);
    for wanted in ["home/.gitconfig", "home/proj", "state"] {
        assert!(got.contains(&t.at(wanted)), "{wanted} not granted: {got:?}");
    }
    // Nothing granted reaches the secret: not it, not a directory above it, not the link.
    for g in &got {
        assert!(
            !t.at("home/.ssh").starts_with(g),
            "{} reaches the hidden path",
            g.display()
        );
    }
    assert!(!got.contains(&t.at("home/link")), "{got:?}");
    // Every level up to `/` is covered beside the path: `/usr` is granted.
    assert!(got.contains(&PathBuf::from("/usr")), "{got:?}");
}

#[test]
fn a_readable_exception_inside_a_hidden_dir_is_granted() {
    let t = Tree::new();
    let u = Unreadable {
        hidden: vec![HiddenPath {
            path: t.at("state"),
            why: HiddenWhy::State,
        }],
        readable: vec![t.at("state/spill/me")],
        seen_from: None,
    };
    let got = granted(&u);
    assert!(got.contains(&t.at("state/spill/me")), "{got:?}");
    assert!(!got.iter().any(|g| t.at("state/spill/other").starts_with(g)));
    assert!(!got.iter().any(|g| t.at("state/token").starts_with(g)));
    assert!(u.hides(&t.at("state/token")).is_some());
    assert!(u.hides(&t.at("state/spill/other/c1.log")).is_some());
    assert!(u.hides(&t.at("state/spill/me/c1.log")).is_none());
    assert!(u.hides(&t.at("home/.gitconfig")).is_none());
}

#[test]
fn a_path_reached_through_a_symlink_is_judged_where_it_leads() {
    let t = Tree::new();
    let mut u = Unreadable::default();
    u.hide(t.at("home/.ssh"), HiddenWhy::Configured);
    assert_eq!(
        u.hides(&t.at("home/link/id")).map(|h| h.why),
        Some(HiddenWhy::Configured)
    );
    // Hiding the link hides what it leads to.
    let mut by_link = Unreadable::default();
    by_link.hide(t.at("home/link"), HiddenWhy::Configured);
    assert!(by_link.hides(&t.at("home/.ssh/id")).is_some());
    let got = granted(&by_link);
    assert!(
        !got.iter().any(|g| t.at("home/.ssh").starts_with(g)),
        "{got:?}"
    );
}

#[test]
fn a_hidden_path_that_does_not_exist_yet_is_hidden_when_made() {
    let t = Tree::new();
    let mut u = Unreadable::default();
    u.hide(t.at("home/.aws/credentials"), HiddenWhy::Configured);
    // Nothing above it that is missing is granted, nor listed.
    let got = granted(&u);
    assert!(!got.iter().any(|g| t.at("home/.aws").starts_with(g)));
    std::fs::create_dir(t.at("home/.aws")).unwrap();
    std::fs::create_dir(t.at("home/.aws/other")).unwrap();
    let got = granted(&u);
    assert!(got.contains(&t.at("home/.aws/other")), "{got:?}");
    assert!(
        !got.iter()
            .any(|g| t.at("home/.aws/credentials").starts_with(g))
    );
}

#[test]
fn the_stamp_changes_when_an_entry_appears_beside_a_hidden_path() {
    let t = Tree::new();
    let mut u = Unreadable::default();
    u.hide(t.at("home/.ssh"), HiddenWhy::Configured);
    // The stamp covers every directory above, and nothing else.
    let stamp = u.rules(&mut |_, _| Ok(())).unwrap();
    let dirs: Vec<&PathBuf> = stamp.dirs.iter().map(|(d, _, _)| d).collect();
    assert!(dirs.contains(&&t.at("home")) && dirs.contains(&&PathBuf::from("/")));
    assert!(!dirs.contains(&&t.at("home/.ssh")), "{dirs:?}");
    // Of those, only `home` is this test's alone (others write in `/tmp` meanwhile); a stamp
    // taken right after a change is not trusted, so the tree's making settles first.
    std::thread::sleep(SETTLED_AFTER * 2);
    let stamp = Stamp::take(vec![t.at("home")]);
    assert!(stamp.is_current());
    std::fs::write(t.at("home/.npmrc"), "x").unwrap();
    assert!(!stamp.is_current());
}

#[test]
fn the_stamp_held_open_sees_every_directory_and_follows_one_moved_away() {
    // The stamp holds each directory open and looks through the descriptor, not the path.
    let t = Tree::new();
    std::thread::sleep(SETTLED_AFTER * 2);
    let stamp = Stamp::take(vec![t.root.clone(), t.at("home")]);
    assert!(stamp.is_current());
    assert!(stamp.dirs.iter().all(|(_, _, fd)| fd.is_some()), "not held");
    // An entry made in any of them, not only the last.
    std::fs::write(t.at("npmrc"), "x").unwrap();
    assert!(!stamp.is_current());
    // A directory above renamed away and made again: the path leads elsewhere now.
    std::thread::sleep(SETTLED_AFTER * 2);
    let stamp = Stamp::take(vec![t.root.clone(), t.at("home")]);
    assert!(stamp.is_current());
    std::fs::rename(t.at("home"), t.at("home-before")).unwrap();
    std::fs::create_dir(t.at("home")).unwrap();
    assert!(!stamp.is_current());
}

#[test]
fn a_stamp_taken_in_another_view_names_the_same_directories_there() {
    let t = Tree::new();
    let u = Unreadable {
        hidden: vec![HiddenPath {
            path: t.at("home/.ssh"),
            why: HiddenWhy::Configured,
        }],
        readable: Vec::new(),
        seen_from: Some(PathBuf::from("/proc/self/root")),
    };
    let got = granted(&u);
    assert!(got.contains(&t.at("home/proj")), "{got:?}");
}

fn plan_over(t: &Tree) -> Plan {
    Plan::with_context(
        &Policy::new(Mode::Default, vec![t.at("home/proj")]),
        &HostContext {
            temp_dirs: vec![t.at("home/tmp")],
            ..HostContext::default()
        },
    )
}

#[test]
fn deny_read_refuses_what_cannot_be_hidden() {
    let t = Tree::new();
    std::fs::create_dir(t.at("home/tmp")).unwrap();
    let plan = plan_over(&t);
    let roots = [t.at("home/proj")];
    assert!(check_deny_read(&t.at("home/.ssh"), &plan, &roots).is_ok());
    assert!(check_deny_read(&t.at("home/.nothing-yet"), &plan, &roots).is_ok());
    for (path, why) in [
        (t.at("home/proj/.env"), "which commands may write"),
        (t.at("home/tmp/x"), "which commands may write"),
        (t.at("home"), "holds the root"),
        (PathBuf::from("/"), "hide everything"),
        (PathBuf::from("rel/x"), "not an absolute path"),
    ] {
        let e = check_deny_read(&path, &plan, &roots).unwrap_err();
        assert!(e.contains(why), "{}: {e}", path.display());
    }
}

#[test]
fn a_path_in_the_writable_set_is_exposed_not_hidden() {
    let t = Tree::new();
    let mut u = Unreadable::default();
    u.hide(t.at("home/proj/state"), HiddenWhy::State);
    u.hide(t.at("home/.ssh"), HiddenWhy::Configured);
    let plan = plan_over(&t).hide(u);
    assert_eq!(plan.unreadable().hidden.len(), 1);
    assert_eq!(plan.exposed().len(), 1);
    assert_eq!(plan.exposed()[0].why, HiddenWhy::State);
    let line = crate::notice::unreadable_line(&plan, Some(&t.at("home")));
    assert_eq!(
        line,
        "; unreadable: ~/.ssh; readable though asked to be hidden (the writable set holds \
         them): agentty's keys and state"
    );
}
