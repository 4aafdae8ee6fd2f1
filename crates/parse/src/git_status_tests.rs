use super::shared::unquote;
use super::*;
use crate::testutil::{ctx, output, parse_with, stage};
use serde_json::{Value, json};

pub(super) fn run_as(
    argv: &str,
    stdout: &str,
    filtered: bool,
    exit: i32,
    stderr: &str,
) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_with(recognize, &stage(argv), &out, &ctx(), filtered)
}

pub(super) fn parse(argv: &str, stdout: &str) -> Value {
    run_as(argv, stdout, false, 0, "").unwrap()
}

pub(super) fn file<'a>(status: &'a Value, path: &str) -> &'a Value {
    let files = status["files"].as_array().unwrap();
    files
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in {status}"))
}

const V1_BRANCH: &str = r#"## main...origin/main [ahead 1, behind 2]
MM a.txt
 M b.txt
R  old.txt -> new.txt
D  "sp ace.txt"
 D "\303\251.txt"
R  "a -> b" -> "c d"
UU both.txt
?? d/
?? "tab\there.txt"
!! ign.log
"#;

#[test]
fn porcelain_v1_with_branch() {
    let s = parse("git status --porcelain -b", V1_BRANCH);
    assert_eq!(s["branch"], "main");
    assert_eq!(s["upstream"], "origin/main");
    assert_eq!(
        (s["ahead"].as_u64(), s["behind"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(s["clean"], false);
    assert_eq!(s["files"].as_array().unwrap().len(), 10);
    assert_eq!(file(&s, "a.txt")["index"], "modified");
    assert_eq!(file(&s, "a.txt")["worktree"], "modified");
    assert_eq!(file(&s, "b.txt")["index"], "unmodified");
    assert_eq!(file(&s, "new.txt")["orig_path"], "old.txt");
    assert_eq!(file(&s, "new.txt")["index"], "renamed");
    assert_eq!(file(&s, "sp ace.txt")["index"], "deleted");
    assert_eq!(file(&s, "é.txt")["worktree"], "deleted");
    assert_eq!(file(&s, "c d")["orig_path"], "a -> b");
    assert_eq!(file(&s, "both.txt")["conflict"], "both_modified");
    assert_eq!(file(&s, "both.txt")["index"], "unmerged");
    assert_eq!(file(&s, "d/")["index"], "untracked");
    assert_eq!(file(&s, "tab\there.txt")["worktree"], "untracked");
    assert_eq!(file(&s, "ign.log")["index"], "ignored");
    // The same lines from `-s` and from plain `git status` with `status.short` set.
    assert_eq!(parse("git status -sb", V1_BRANCH), s);
    assert_eq!(parse("git status", V1_BRANCH), s);
}

#[test]
fn branch_headers() {
    let one = |header: &str| parse("git status -sb", &format!("{header}\n"));
    let s = one("## main");
    assert_eq!(
        (s["branch"].as_str(), s.get("upstream")),
        (Some("main"), None)
    );
    let s = one("## main...origin/main");
    assert_eq!(
        (s["ahead"].as_u64(), s["behind"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(s["clean"], true);
    let s = one("## feat...origin/feat [behind 3]");
    assert_eq!(
        (s["ahead"].as_u64(), s["behind"].as_u64()),
        (Some(0), Some(3))
    );
    let s = one("## feat...origin/feat [gone]");
    assert_eq!(
        (s["upstream_gone"].as_bool(), s.get("ahead")),
        (Some(true), None)
    );
    let s = one("## feat...origin/feat [different]");
    assert_eq!(
        (s["upstream"].as_str(), s.get("ahead")),
        (Some("origin/feat"), None)
    );
    let s = one("## HEAD (no branch)");
    assert_eq!(
        (s.get("branch"), s["detached"].as_bool()),
        (None, Some(true))
    );
    let s = one("## No commits yet on main");
    assert_eq!(
        (s["branch"].as_str(), s["initial"].as_bool()),
        (Some("main"), Some(true))
    );
    assert!(run_as("git status -sb", "## main [ahead 1]\n", false, 0, "").is_err());
    assert!(run_as("git status -sb", "## main...up [ahead x]\n", false, 0, "").is_err());
}

const V2: &str = "# branch.oid 6f6468f2831f32c4333041b931e553202a4580b5
# branch.head main
# branch.upstream origin/main
# branch.ab +1 -0
# stash 2
# future.header something
1 MM N... 100644 100644 100644 d49c2e721b44b101b9b65c1e2847063a0f0c53b9 db952c2b192470f865cd989d2b4171c2a5616b1b a.txt
1 .M N... 100644 100644 100755 61780798228d17af2d34fce4cfbdf35556832472 61780798228d17af2d34fce4cfbdf35556832472 run.sh
2 R. N... 100644 100644 100644 4286f428e3b19fe84de503916ce0e7dc8deefea1 4286f428e3b19fe84de503916ce0e7dc8deefea1 R87 new name.txt\told.txt
2 C. N... 100644 100644 100644 4286f428e3b19fe84de503916ce0e7dc8deefea1 4286f428e3b19fe84de503916ce0e7dc8deefea1 C100 \"t\\tab\"\t\"\\303\\251\"
1 D. N... 100644 000000 000000 f2ad6c76f0115a6ba5b00456a849810e7ec0af20 0000000000000000000000000000000000000000 sp ace.txt
1 .M SCMU 160000 160000 160000 f2ad6c76f0115a6ba5b00456a849810e7ec0af20 f2ad6c76f0115a6ba5b00456a849810e7ec0af20 sub
u AA N... 000000 100644 100644 100644 0000000000000000000000000000000000000000 28ce6a8b26aa170e1de65536fe8abe1832bd3242 13e7564ea0c889e81bcba6f8e496b2a74cdb32fa aa
u DU N... 100644 000000 100644 100644 df967b96a579e45a18b8251732d16804b2e56a55 0000000000000000000000000000000000000000 e45c9c2666d44e0327c1f9c239a74c508336053e du
? \"tab\\there.txt\"
? untracked file
! ign.log
";

#[test]
fn porcelain_v2_with_branch() {
    let s = parse("git status --porcelain=v2 --branch --show-stash", V2);
    assert_eq!(s["head"], "6f6468f2831f32c4333041b931e553202a4580b5");
    assert_eq!(
        (s["branch"].as_str(), s["upstream"].as_str()),
        (Some("main"), Some("origin/main"))
    );
    assert_eq!(
        (
            s["ahead"].as_u64(),
            s["behind"].as_u64(),
            s["stash"].as_u64()
        ),
        (Some(1), Some(0), Some(2))
    );
    assert_eq!(
        file(&s, "a.txt").get("modes"),
        None,
        "modes only when the mode changed"
    );
    assert_eq!(
        file(&s, "run.sh")["modes"],
        json!({"head": "100644", "index": "100644", "worktree": "100755"})
    );
    let renamed = file(&s, "new name.txt");
    assert_eq!(
        (
            renamed["orig_path"].as_str(),
            renamed["similarity"].as_u64()
        ),
        (Some("old.txt"), Some(87))
    );
    assert_eq!(file(&s, "t\tab")["orig_path"], "é");
    assert_eq!(file(&s, "t\tab")["index"], "copied");
    assert_eq!(
        file(&s, "sp ace.txt").get("modes"),
        None,
        "a deletion is not a mode change"
    );
    assert_eq!(
        file(&s, "sub")["submodule"],
        json!({"new_commits": true, "modified_content": true, "untracked_content": true})
    );
    assert_eq!(file(&s, "aa")["conflict"], "both_added");
    assert_eq!(file(&s, "du")["conflict"], "deleted_by_us");
    assert_eq!(file(&s, "tab\there.txt")["index"], "untracked");
    assert_eq!(file(&s, "untracked file")["index"], "untracked");
    assert_eq!(file(&s, "ign.log")["worktree"], "ignored");
}

#[test]
fn porcelain_v2_headers() {
    let s = parse(
        "git status --porcelain=v2 -b",
        "# branch.oid (initial)\n# branch.head main\n",
    );
    assert_eq!((s["initial"].as_bool(), s.get("head")), (Some(true), None));
    let detached =
        "# branch.oid 8d8e6fad1f43507cf547cf236e0e54b5f11f1979\n# branch.head (detached)\n";
    assert_eq!(
        parse("git status --porcelain=v2 -b", detached)["detached"],
        true
    );
    let quick = "# branch.head x\n# branch.upstream o/x\n# branch.ab +? -?\n";
    assert_eq!(
        parse("git status --porcelain=v2 -b", quick).get("ahead"),
        None
    );
    for bad in [
        "# branch.ab +1\n",
        "1 MM N... 100644 100644 100644 d49c x y a.txt\n",
        "1 XM N... 100644 100644 100644 d49c2e72 db952c2b a.txt\n",
        "1 MM N... 100644 100644 10064 d49c2e72 db952c2b a.txt\n",
        "2 R. N... 100644 100644 100644 d49c2e72 db952c2b R101 a\tb\n",
        "2 R. N... 100644 100644 100644 d49c2e72 db952c2b R100 ab\n",
        "u UU S.X. 100644 100644 100644 100644 a b c f\n",
        "3 whatever\n",
    ] {
        assert!(
            run_as("git status --porcelain=v2", bad, false, 0, "").is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn filtered_porcelain_keeps_lines_but_not_clean() {
    let s = run_as("git status --porcelain", " M b.txt\n?? x\n", true, 0, "").unwrap();
    assert_eq!(
        (s.get("clean"), s["files"].as_array().unwrap().len()),
        (None, 2)
    );
    let clean = parse("git status --porcelain", "");
    assert_eq!(
        (
            clean["clean"].as_bool(),
            clean["files"].as_array().unwrap().len()
        ),
        (Some(true), 0)
    );
    assert_eq!(
        parse("git status", "")["clean"],
        true,
        "status.short with a clean tree"
    );
}

#[test]
fn short_format_submodule_letters() {
    let s = parse("git status -s", " m sub\n ? other\n");
    assert_eq!(file(&s, "sub")["submodule"]["modified_content"], true);
    assert_eq!(file(&s, "other")["submodule"]["untracked_content"], true);
    assert_eq!(file(&s, "other")["worktree"], "modified");
}

#[test]
fn garbage_and_failures_are_refused() {
    for bad in [
        "XY foo\n",
        "M\n",
        "MM\n",
        "?? \n",
        "?! x\n",
        "R  a b\n",
        "M  \"unterminated\n",
        "M  \"a\" b\n",
        "## \n",
    ] {
        assert!(
            run_as("git status --porcelain", bad, false, 0, "").is_err(),
            "{bad:?}"
        );
    }
    let err = run_as(
        "git status",
        "",
        false,
        128,
        "fatal: not a git repository (or any of the parent directories): .git\n",
    )
    .unwrap_err();
    assert!(err.contains("not a git repository"), "{err}");
}

#[test]
fn recognition() {
    for argv in [
        "git status",
        "git status --porcelain",
        "git status --porcelain=v1 -b",
        "git status --porcelain=2 --no-short",
        "git status --porcelain=v2 --branch -uall --ignored=matching",
        "git status -sbuno",
        "git status --short --untracked-files=no",
        "git status --no-ahead-behind --find-renames=50 -- src",
        "git -C /repo status",
        "git --no-pager status",
        "git --git-dir=/r/.git --work-tree /r status",
    ] {
        assert!(recognize(&stage(argv)).is_some(), "{argv}");
    }
    for argv in [
        "git status -z",
        "git status --porcelain -z",
        "git status -sz",
        "git status -v",
        "git status --column",
        "git status --porcelain=v3",
        "git status --frobnicate",
        "git log",
        "git --exec-path status",
        "git",
        "gitk status",
    ] {
        assert!(recognize(&stage(argv)).is_none(), "{argv}");
    }
}

#[test]
fn quoted_paths() {
    assert_eq!(
        unquote(r#""a\"b\\c" rest"#),
        Some((r#"a"b\c"#.to_owned(), " rest"))
    );
    assert_eq!(
        unquote(r#""\303\251\t\a\001""#),
        Some(("é\t\u{7}\u{1}".to_owned(), ""))
    );
    assert_eq!(
        unquote(r#""\377""#).map(|(p, _)| p),
        Some("\u{fffd}".to_owned())
    );
    for bad in [
        r#""abc"#,
        r#""\q""#,
        r#""\47""#,
        r#""\400""#,
        "abc",
        r#""\"#,
        r#""\30"#,
    ] {
        assert_eq!(unquote(bad), None, "{bad}");
    }
}
