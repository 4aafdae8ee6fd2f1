//! `git status` in every format on the repositories of `git`, compared with the changes the
//! test made, and unmerged paths with what the index's stages say.
// Integration tests are always built with cfg(test); saying so lets clippy's
// `allow-unwrap-in-tests` see these helpers as test code.
#![cfg(test)]

use std::collections::BTreeMap;

use serde_json::Value;

use super::git::{commit, git, git_at, parse, parse_filtered, repos};

type Row = (String, Option<String>, String, String);

/// path → (orig, index, worktree), in any format's order.
fn rows(status: &Value) -> BTreeMap<String, Row> {
    let files = status["files"].as_array().unwrap();
    files
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().map(str::to_owned);
            (
                s("path").unwrap(),
                (
                    s("path").unwrap(),
                    s("orig_path"),
                    s("index").unwrap(),
                    s("worktree").unwrap(),
                ),
            )
        })
        .collect()
}

fn expected_rows(untracked_dir: &str, ignored: bool) -> BTreeMap<String, Row> {
    let row = |p: &str, o: Option<&str>, i: &str, w: &str| {
        (
            p.to_owned(),
            (
                p.to_owned(),
                o.map(str::to_owned),
                i.to_owned(),
                w.to_owned(),
            ),
        )
    };
    let mut rows: BTreeMap<String, Row> = [
        row("a.txt", None, "modified", "modified"),
        row("b.txt", None, "unmodified", "modified"),
        row("sp ace.txt", None, "deleted", "unmodified"),
        row("moved feat.txt", Some("feat.txt"), "renamed", "unmodified"),
        row("é.txt", None, "unmodified", "deleted"),
        row(".gitignore", None, "untracked", "untracked"),
        row("untracked.txt", None, "untracked", "untracked"),
        row("tab\there.txt", None, "untracked", "untracked"),
        row(untracked_dir, None, "untracked", "untracked"),
    ]
    .into_iter()
    .collect();
    if ignored {
        rows.extend([row("ign.log", None, "ignored", "ignored")]);
    }
    rows
}

#[test]
fn status_in_every_format_matches_the_changes_made() {
    let (_tmp, work) = repos();
    let head = git(&work, &["rev-parse", "HEAD"]).trim().to_owned();
    let counts = git(
        &work,
        &["rev-list", "--left-right", "--count", "main...origin/main"],
    );
    let (ahead, behind) = counts.trim().split_once('\t').unwrap();
    let (ahead, behind): (u64, u64) = (ahead.parse().unwrap(), behind.parse().unwrap());
    assert_eq!((ahead, behind), (4, 1));

    // The -z listing needs no unquoting: it names every path exactly.
    let z = git(
        &work,
        &["status", "--porcelain=v2", "-z", "--ignored", "-uall"],
    );
    // Every path, renames' sources included, as the NUL-separated records name them.
    let mut z_paths: Vec<String> = Vec::new();
    let mut records = z.split('\0').filter(|r| !r.is_empty());
    while let Some(rec) = records.next() {
        let fields = match rec.get(..2) {
            Some("1 ") => 9,
            Some("2 ") => 10,
            Some("u ") => 11,
            _ => 2,
        };
        z_paths.push(rec.splitn(fields, ' ').nth(fields - 1).unwrap().to_owned());
        if rec.starts_with("2 ") {
            z_paths.push(records.next().unwrap().to_owned());
        }
    }
    z_paths.sort();
    let mut expected_paths: Vec<String> = expected_rows("d/f", true).into_keys().collect();
    expected_paths.push("feat.txt".into());
    expected_paths.sort();
    assert_eq!(z_paths, expected_paths);

    let v2 = parse(
        &work,
        &["status", "--porcelain=v2", "--branch", "--ignored", "-uall"],
    );
    assert_eq!(v2["head"], head.as_str());
    assert_eq!(
        (v2["branch"].as_str(), v2["upstream"].as_str()),
        (Some("main"), Some("origin/main"))
    );
    assert_eq!(
        (v2["ahead"].as_u64(), v2["behind"].as_u64()),
        (Some(ahead), Some(behind))
    );
    assert_eq!(v2["clean"], false);
    assert_eq!(rows(&v2), expected_rows("d/f", true));
    let moved = v2["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "moved feat.txt")
        .unwrap();
    assert_eq!(moved["similarity"], 100);

    for args in [
        &["status", "--porcelain", "-b", "--ignored"][..],
        &["status", "-sb", "--ignored"],
        &["status", "--ignored"],
        &["-C", ".", "--no-pager", "status", "--long", "--ignored"],
    ] {
        let s = parse(&work, args);
        assert_eq!(rows(&s), expected_rows("d/", true), "{args:?}");
        assert_eq!(
            (s["branch"].as_str(), s["upstream"].as_str()),
            (Some("main"), Some("origin/main")),
            "{args:?}"
        );
        assert_eq!(
            (s["ahead"].as_u64(), s["behind"].as_u64()),
            (Some(ahead), Some(behind)),
            "{args:?}"
        );
    }
    let no_untracked = parse(&work, &["status", "-uno"]);
    assert!(rows(&no_untracked).values().all(|r| r.2 != "untracked"));

    // `git status --porcelain | grep txt`: lines dropped, what is left still exact.
    let grepped = parse_filtered(
        &work,
        &["status", "--porcelain"],
        Some(("grep txt", |t| {
            t.lines()
                .filter(|l| l.contains("txt"))
                .map(|l| format!("{l}\n"))
                .collect()
        })),
    );
    assert_eq!(grepped.get("clean"), None);
    assert_eq!(rows(&grepped).len(), 7);

    // A clean clone, then a detached HEAD.
    // (`.gitignore` goes into the stash too, so the ignored file would show as untracked.)
    git(&work, &["stash", "-q", "-u"]);
    std::fs::remove_file(work.join("ign.log")).unwrap();
    let clean = parse(&work, &["status"]);
    assert_eq!(
        (clean["clean"].as_bool(), rows(&clean).len()),
        (Some(true), 0),
        "{clean}"
    );
    git(&work, &["checkout", "-q", "--detach", "HEAD~1"]);
    let detached = parse(&work, &["status"]);
    assert_eq!(
        (detached["detached"].as_bool(), detached.get("branch")),
        (Some(true), None)
    );
    let short = git(&work, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(detached["detached_at"], short.trim());
    assert_eq!(
        parse(&work, &["status", "--porcelain=v2", "-b"])["detached"],
        true
    );
}

#[test]
fn unmerged_paths_match_the_index_stages() {
    let tmp = tempfile::TempDir::new().unwrap();
    let dir = tmp.path();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "A"]);
    git(dir, &["config", "user.email", "a@example.com"]);
    for name in ["both", "theirs-del", "ours-del"] {
        std::fs::write(dir.join(name), "base\n").unwrap();
    }
    git(dir, &["add", "."]);
    commit(dir, "2026-01-01T00:00:00+0000", "base");
    git(dir, &["checkout", "-q", "-b", "other"]);
    std::fs::write(dir.join("both"), "other\n").unwrap();
    std::fs::write(dir.join("ours-del"), "other\n").unwrap();
    std::fs::write(dir.join("added"), "other\n").unwrap();
    git(dir, &["rm", "-q", "theirs-del"]);
    git(dir, &["add", "."]);
    commit(dir, "2026-01-02T00:00:00+0000", "other");
    git(dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("both"), "main\n").unwrap();
    std::fs::write(dir.join("theirs-del"), "main\n").unwrap();
    std::fs::write(dir.join("added"), "main\n").unwrap();
    git(dir, &["rm", "-q", "ours-del"]);
    git(dir, &["add", "."]);
    commit(dir, "2026-01-03T00:00:00+0000", "main");
    assert!(
        !git_at(dir, "2026-01-04T00:00:00+0000", &["merge", "other"])
            .status
            .success()
    );

    let unmerged = git(dir, &["diff", "--name-only", "--diff-filter=U"]);
    let mut truth: Vec<&str> = unmerged.lines().collect();
    truth.sort_unstable();
    let expected: BTreeMap<&str, &str> = [
        ("added", "both_added"),
        ("both", "both_modified"),
        ("ours-del", "deleted_by_us"),
        ("theirs-del", "deleted_by_them"),
    ]
    .into();
    assert_eq!(truth, expected.keys().copied().collect::<Vec<_>>());
    for args in [
        &["status"][..],
        &["status", "--porcelain"],
        &["status", "--porcelain=v2"],
    ] {
        let s = parse(dir, args);
        let got: BTreeMap<&str, &str> = s["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["path"].as_str().unwrap(), f["conflict"].as_str().unwrap()))
            .collect();
        assert_eq!(got, expected, "{args:?}");
        if args.len() == 1 {
            assert_eq!(s["in_progress"], serde_json::json!(["merge"]));
        }
    }
}
