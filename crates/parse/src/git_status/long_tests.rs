//! The long format read through the whole parser (`git status` with no format flag).

use crate::git_status::tests::{file, parse, run_as};
use serde_json::json;

const LONG_DIVERGED: &str = r#"On branch main
Your branch and 'origin/it's' have diverged,
and have 1 and 2 different commits each, respectively.
  (use "git pull" if you want to integrate the remote branch with yours)

Changes to be committed:
  (use "git restore --staged <file>..." to unstage)
	modified:   a.txt
	renamed:    old.txt -> new.txt
	deleted:    sp ace.txt
	new file:   "\303\251.txt"

Changes not staged for commit:
  (use "git add/rm <file>..." to update what will be committed)
  (use "git restore <file>..." to discard changes in working directory)
  (commit or discard the untracked or modified content in submodules)
	modified:   a.txt
	modified:    lead.txt
	deleted:    new.txt
	modified:   sub (new commits, untracked content)
	typechange: link

Untracked files:
  (use "git add <file>..." to include in what will be committed)
	d/
	"tab\there.txt"

Ignored files:
  (use "git add -f <file>..." to include in what will be committed)
	ign.log

no changes added to commit (use "git add" and/or "git commit -a")
"#;

#[test]
fn long_format_merges_the_two_sides_of_a_path() {
    let s = parse("git status", LONG_DIVERGED);
    assert_eq!(
        (s["branch"].as_str(), s["upstream"].as_str()),
        (Some("main"), Some("origin/it's"))
    );
    assert_eq!(
        (s["ahead"].as_u64(), s["behind"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(s["files"].as_array().unwrap().len(), 10);
    assert_eq!(
        (
            file(&s, "a.txt")["index"].as_str(),
            file(&s, "a.txt")["worktree"].as_str()
        ),
        (Some("modified"), Some("modified"))
    );
    let renamed = file(&s, "new.txt");
    assert_eq!(
        (
            renamed["orig_path"].as_str(),
            renamed["index"].as_str(),
            renamed["worktree"].as_str()
        ),
        (Some("old.txt"), Some("renamed"), Some("deleted"))
    );
    assert_eq!(file(&s, "é.txt")["index"], "added");
    assert_eq!(
        file(&s, " lead.txt")["worktree"],
        "modified",
        "a leading space is part of the path"
    );
    assert_eq!(
        file(&s, "sub")["submodule"],
        json!({"new_commits": true, "modified_content": false, "untracked_content": true})
    );
    assert_eq!(file(&s, "link")["worktree"], "type_changed");
    assert_eq!(file(&s, "tab\there.txt")["index"], "untracked");
    assert_eq!(file(&s, "ign.log")["index"], "ignored");
    assert_eq!(s["clean"], false);
    assert_eq!(parse("git status --long", LONG_DIVERGED), s);
    assert_eq!(
        parse(
            "git -C /tmp/x --no-pager -c color.ui=never status -unormal --ignored",
            LONG_DIVERGED
        ),
        s
    );
}

#[test]
fn long_format_states() {
    let s = parse(
        "git status",
        "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean\n",
    );
    assert_eq!(
        (
            s["clean"].as_bool(),
            s["ahead"].as_u64(),
            s["behind"].as_u64()
        ),
        (Some(true), Some(0), Some(0))
    );
    let s = parse(
        "git status",
        "On branch f\nYour branch is ahead of 'origin/f' by 3 commits.\n  (use \"git push\" to publish your local commits)\n\nnothing to commit, working tree clean\n",
    );
    assert_eq!(
        (s["ahead"].as_u64(), s["behind"].as_u64()),
        (Some(3), Some(0))
    );
    let s = parse(
        "git status",
        "On branch f\nYour branch is behind 'origin/f' by 1 commit, and can be fast-forwarded.\n\nnothing to commit, working tree clean\n",
    );
    assert_eq!(
        (s["ahead"].as_u64(), s["behind"].as_u64()),
        (Some(0), Some(1))
    );
    let s = parse(
        "git status",
        "On branch f\nYour branch is based on 'origin/f', but the upstream is gone.\n  (use \"git branch --unset-upstream\" to fixup)\n\nnothing to commit, working tree clean\n",
    );
    assert_eq!(
        (s["upstream_gone"].as_bool(), s.get("ahead")),
        (Some(true), None)
    );
    let s = parse(
        "git status",
        "HEAD detached at aa21608\nnothing to commit, working tree clean\n",
    );
    assert_eq!(
        (
            s["detached"].as_bool(),
            s["detached_at"].as_str(),
            s.get("branch")
        ),
        (Some(true), Some("aa21608"), None)
    );
    let s = parse(
        "git status",
        "HEAD detached from v1.0\nnothing to commit, working tree clean\n",
    );
    assert_eq!(s["detached_from"], "v1.0");
    let s = parse(
        "git status -uno",
        "On branch main\n\nNo commits yet\n\nChanges to be committed:\n  (use \"git rm --cached <file>...\" to unstage)\n\tnew file:   a\n\nUntracked files not listed (use -u option to show untracked files)\n",
    );
    assert_eq!(
        (s["initial"].as_bool(), file(&s, "a")["index"].as_str()),
        (Some(true), Some("added"))
    );
    let s = parse(
        "git status --show-stash",
        "On branch main\nnothing to commit, working tree clean\nYour stash currently has 1 entry\n",
    );
    assert_eq!(s["stash"], 1);
}

const REBASE: &str = r#"interactive rebase in progress; onto 6c71af7
Last command done (1 command done):
   pick aa21608 side1
Next command to do (1 remaining command):
   pick 7cebc2a side2
  (use "git rebase --edit-todo" to view and edit)
You are currently rebasing branch 'side' on '6c71af7'.
  (fix conflicts and then run "git rebase --continue")
  (use "git rebase --skip" to skip this patch)
  (use "git rebase --abort" to check out the original branch)

Unmerged paths:
  (use "git restore --staged <file>..." to unstage)
  (use "git add <file>..." to mark resolution)
	both modified:   f
	deleted by them: g h
	added by us:     i
	deleted by us:   j
	both deleted:    k
	added by them:   l

no changes added to commit (use "git add" and/or "git commit -a")
"#;

#[test]
fn long_format_in_the_middle_of_operations() {
    let s = parse("git status", REBASE);
    assert_eq!(
        (s["detached"].as_bool(), s["in_progress"].clone()),
        (Some(true), json!(["rebase"]))
    );
    assert_eq!(file(&s, "f")["conflict"], "both_modified");
    assert_eq!(file(&s, "g h")["conflict"], "deleted_by_them");
    assert_eq!(file(&s, "i")["conflict"], "added_by_us");
    assert_eq!(file(&s, "j")["conflict"], "deleted_by_us");
    assert_eq!(file(&s, "k")["conflict"], "both_deleted");
    assert_eq!(file(&s, "l")["conflict"], "added_by_them");
    let cherry = "On branch side\nYou are currently cherry-picking commit 6c71af7.\n  (fix conflicts and run \"git cherry-pick --continue\")\n\nUnmerged paths:\n\tboth added:      f\n\nno changes added to commit\n";
    assert_eq!(
        parse("git status", cherry)["in_progress"],
        json!(["cherry-pick"])
    );
    let bisect = "On branch main\nYou are currently bisecting, started from branch 'main'.\n  (use \"git bisect reset\" to get back to the original branch)\n\nnothing to commit, working tree clean\n";
    assert_eq!(
        parse("git status", bisect)["in_progress"],
        json!(["bisect"])
    );
}

#[test]
fn long_format_refuses_what_it_cannot_read() {
    for (why, text) in [
        (
            "translated",
            "Sur la branche main\nrien à valider, la copie de travail est propre\n",
        ),
        (
            "comment prefix",
            "# On branch main\nnothing to commit, working tree clean\n",
        ),
        (
            "a file outside a section",
            "On branch main\n\tmodified:   a\n",
        ),
        (
            "an unknown label",
            "On branch main\nChanges to be committed:\n\tunknown:    a\n",
        ),
        (
            "an ambiguous rename",
            "On branch main\nChanges to be committed:\n\trenamed:    a -> b -> c\n",
        ),
        (
            "a cut diverged sentence",
            "On branch main\nYour branch and 'o/m' have diverged,\n",
        ),
        (
            "two comparisons",
            "On branch main\nYour branch is up to date with 'o/m'.\nYour branch is ahead of 'o/n' by 1 commit.\n",
        ),
        ("nothing", ""),
    ] {
        assert!(
            run_as("git status --long", text, false, 0, "").is_err(),
            "{why}"
        );
    }
    let filtered = run_as("git status", LONG_DIVERGED, true, 0, "").unwrap_err();
    assert!(filtered.contains("--porcelain"), "{filtered}");
}
