//! `git status` and `git log`, run for real on repositories made for the test, compared with
//! the changes the test made and with what git's machine formats say (`rev-parse`, `rev-list
//! --count`, `log --format=%H%x00…`, `-z` listings that need no unquoting).
// Integration tests are always built with cfg(test); saying so lets clippy's
// `allow-unwrap-in-tests` see these helpers as test code.
#![cfg(test)]

use std::collections::BTreeMap;
use std::path::Path;

use agentty_parse::Output;
use serde_json::Value;

use super::common::{command, parse as parse_stages, parsed_fixtures, stage, stage_of};

/// Runs git in `dir`, isolated from the machine's config, dates pinned to `date`.
fn git_at(dir: &Path, date: &str, args: &[&str]) -> std::process::Output {
    command("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_PAGER", "cat")
        .output()
        .unwrap()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_at(dir, "2026-03-04T05:06:07+0000", args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn commit(dir: &Path, date: &str, message: &str) {
    let out = git_at(dir, date, &["commit", "-q", "-m", message]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A later pipeline stage: its command line, and what it does to the text.
type Filter = (&'static str, fn(&str) -> String);

/// Runs `git ARGS` and parses its output as the server would; with a `filter`, the text is
/// thinned as that later stage would thin it, and the stage is part of the pipeline.
fn parse_filtered(dir: &Path, args: &[&str], filter: Option<Filter>) -> Value {
    let out = git_at(dir, "2026-03-04T05:06:07+0000", args);
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    let mut stages = vec![stage(&[&["git"], args].concat())];
    let stdout = match filter {
        Some((filter_line, keep)) => {
            stages.push(stage_of(filter_line));
            keep(&stdout)
        }
        None => stdout,
    };
    let output = Output {
        stdout: &stdout,
        stderr: &stderr,
        exit_code: out.status.code(),
    };
    let parsed =
        parse_stages(&stages, &output).unwrap_or_else(|e| panic!("git {args:?}: {e}\n{stdout}"));
    parsed.data
}

fn parse(dir: &Path, args: &[&str]) -> Value {
    parse_filtered(dir, args, None)
}

/// An upstream, a clone that is 4 commits ahead (one a merge, one a rename) and 1 behind, and
/// a work tree with staged, unstaged, deleted, renamed, untracked and ignored paths.
fn repos() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::TempDir::new().unwrap();
    let up = tmp.path().join("up");
    std::fs::create_dir(&up).unwrap();
    git(&up, &["init", "-q", "-b", "main"]);
    for (k, v) in [
        ("user.name", "Ann Example"),
        ("user.email", "ann@example.com"),
    ] {
        git(&up, &["config", k, v]);
    }
    for (name, text) in [
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("sp ace.txt", "s\n"),
        ("é.txt", "e\n"),
        ("old.txt", "o\n"),
    ] {
        std::fs::write(up.join(name), text).unwrap();
    }
    git(&up, &["add", "."]);
    commit(
        &up,
        "2026-01-02T03:04:05+0100",
        "First commit\n\nBody line one\nBody line two",
    );
    let work = tmp.path().join("work");
    git(tmp.path(), &["clone", "-q", "up", "work"]);
    for (k, v) in [
        ("user.name", "Zoë Ünïcode"),
        ("user.email", "zoe@example.com"),
    ] {
        git(&work, &["config", k, v]);
    }
    std::fs::write(up.join("b.txt"), "b\nupstream\n").unwrap();
    git(&up, &["add", "b.txt"]);
    commit(&up, "2026-01-03T10:00:00-0700", "Upstream change");
    std::fs::write(work.join("a.txt"), "a\nlocal\n").unwrap();
    git(&work, &["add", "a.txt"]);
    commit(
        &work,
        "2026-01-04T11:00:00+0530",
        "Local change\nthat wraps\n\nWith a body.",
    );
    git(&work, &["checkout", "-q", "-b", "feat", "HEAD~1"]);
    std::fs::write(work.join("feat.txt"), "f\n").unwrap();
    git(&work, &["add", "feat.txt"]);
    commit(&work, "2026-01-05T12:00:00+0000", "Feature");
    git(&work, &["checkout", "-q", "main"]);
    let merge = git_at(
        &work,
        "2026-01-06T13:00:00+0000",
        &[
            "merge",
            "-q",
            "--no-ff",
            "feat",
            "-m",
            "Merge feat\n\n  indented body",
        ],
    );
    assert!(merge.status.success());
    git(&work, &["mv", "old.txt", "new.txt"]);
    commit(&work, "2026-01-07T14:00:00-0300", "Rename old to new");
    git(&work, &["tag", "v1.0"]);
    git(&work, &["fetch", "-q"]);
    // The work tree's changes.
    std::fs::write(work.join("a.txt"), "a\nlocal\nstaged\n").unwrap();
    git(&work, &["add", "a.txt"]);
    std::fs::write(work.join("a.txt"), "a\nlocal\nstaged\nunstaged\n").unwrap();
    std::fs::write(work.join("b.txt"), "b\nchanged\n").unwrap();
    git(&work, &["rm", "-q", "sp ace.txt"]);
    git(&work, &["mv", "feat.txt", "moved feat.txt"]);
    std::fs::remove_file(work.join("é.txt")).unwrap();
    std::fs::write(work.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(work.join("untracked.txt"), "u\n").unwrap();
    std::fs::write(work.join("tab\there.txt"), "t\n").unwrap();
    std::fs::create_dir(work.join("d")).unwrap();
    std::fs::write(work.join("d/f"), "f\n").unwrap();
    std::fs::write(work.join("ign.log"), "i\n").unwrap();
    (tmp, work)
}

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

/// `git log --format=…` with NUL-separated fields: hash, author, email, epoch, parents,
/// refs, subject, body.
fn truth(dir: &Path) -> Vec<Vec<String>> {
    let text = git(
        dir,
        &[
            "log",
            "--format=%H%x00%an%x00%ae%x00%at%x00%P%x00%D%x00%s%x00%b%x1e",
        ],
    );
    text.split('\u{1e}')
        .map(|rec| rec.trim_start_matches('\n'))
        .filter(|rec| !rec.is_empty())
        .map(|rec| {
            rec.split('\0')
                .map(|f| f.trim_end_matches('\n').to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn log_matches_the_machine_format() {
    let (_tmp, work) = repos();
    let truth = truth(&work);
    assert_eq!(truth.len(), 5);
    for args in [
        &["log"][..],
        &["log", "--decorate"],
        &["log", "--date=iso-strict"],
        &["log", "--date=raw"],
        &["log", "--date=rfc", "--no-decorate"],
    ] {
        let log = parse(&work, args);
        let commits = log["commits"].as_array().unwrap();
        assert_eq!(commits.len(), truth.len(), "{args:?}");
        for (c, t) in commits.iter().zip(&truth) {
            assert_eq!(c["hash"], t[0].as_str());
            assert_eq!(
                (c["author"].as_str(), c["author_email"].as_str()),
                (Some(t[1].as_str()), Some(t[2].as_str()))
            );
            assert_eq!(
                c["date"]["epoch"].as_i64(),
                Some(t[3].parse().unwrap()),
                "{args:?}"
            );
            let parents: Vec<&str> = t[4].split(' ').collect();
            let printed: Vec<&str> = c["parents"]
                .as_array()
                .map(|p| p.iter().map(|p| p.as_str().unwrap()).collect())
                .unwrap_or_default();
            if parents.len() > 1 {
                assert_eq!(printed.len(), parents.len());
                assert!(
                    printed
                        .iter()
                        .zip(&parents)
                        .all(|(p, full)| full.starts_with(p)),
                    "{printed:?} {parents:?}"
                );
            } else {
                assert!(printed.is_empty());
            }
            let refs: Vec<&str> = c["refs"]
                .as_array()
                .map(|r| r.iter().map(|r| r.as_str().unwrap()).collect())
                .unwrap_or_default();
            let expected_refs: Vec<&str> = if args.contains(&"--decorate") && !t[5].is_empty() {
                t[5].split(", ").collect()
            } else {
                vec![]
            };
            assert_eq!(refs, expected_refs);
            assert_eq!(c["subject"], t[6].as_str());
            assert_eq!(c["body"].as_str().unwrap_or_default(), t[7].as_str());
        }
    }
    // The tz offset survives: the rename commit was made at -03:00.
    let log = parse(&work, &["log", "-1", "--skip=0"]);
    assert_eq!(
        log["commits"][0]["date"]["rfc3339"],
        "2026-01-07T14:00:00-03:00"
    );

    let oneline = parse(&work, &["log", "--oneline", "--decorate"]);
    let commits = oneline["commits"].as_array().unwrap();
    assert_eq!(commits.len(), truth.len());
    for (c, t) in commits.iter().zip(&truth) {
        assert!(t[0].starts_with(c["hash"].as_str().unwrap()));
        assert_eq!(c["subject"], t[6].as_str());
        let refs: Vec<&str> = c["refs"]
            .as_array()
            .map(|r| r.iter().map(|r| r.as_str().unwrap()).collect())
            .unwrap_or_default();
        let expected_refs: Vec<&str> = if t[5].is_empty() {
            vec![]
        } else {
            t[5].split(", ").collect()
        };
        assert_eq!(refs, expected_refs);
    }
    assert_eq!(
        parse(&work, &["log", "-n", "2"])["commits"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        parse(&work, &["log", "-3", "--oneline"])["commits"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // `git log | head -n 12`: the commits left whole are exact, the result says it was cut.
    let head = parse_filtered(
        &work,
        &["log"],
        Some(("head -n 12", |t| {
            t.lines().take(12).map(|l| format!("{l}\n")).collect()
        })),
    );
    assert_eq!(head["filtered"], true);
    let first = &head["commits"].as_array().unwrap()[0];
    assert_eq!(
        (first["hash"].as_str(), first["subject"].as_str()),
        (Some(truth[0][0].as_str()), Some(truth[0][6].as_str()))
    );
}

#[test]
fn log_files_match_diff_tree() {
    let (_tmp, work) = repos();
    for args in [
        &["log", "--name-status"][..],
        &["log", "--oneline", "--name-status"],
        &["log", "--name-only"],
    ] {
        let log = parse(&work, args);
        for c in log["commits"].as_array().unwrap() {
            let hash = git(&work, &["rev-parse", c["hash"].as_str().unwrap()]);
            let z = git(
                &work,
                &[
                    "diff-tree",
                    "--root",
                    "--no-commit-id",
                    "-r",
                    "-M",
                    "--name-status",
                    "-z",
                    hash.trim(),
                ],
            );
            let fields: Vec<&str> = z.split('\0').filter(|f| !f.is_empty()).collect();
            // Merges list no files in `git log` by default; diff-tree shows none for them either.
            let mut expected = Vec::new();
            let mut i = 0;
            while i < fields.len() {
                let code = fields[i];
                let moved = code.starts_with('R') || code.starts_with('C');
                let (orig, path) = if moved {
                    (Some(fields[i + 1]), fields[i + 2])
                } else {
                    (None, fields[i + 1])
                };
                expected.push((
                    path.to_owned(),
                    orig.map(str::to_owned),
                    code.chars().next().unwrap(),
                ));
                i += if moved { 3 } else { 2 };
            }
            let files = c["files"].as_array().cloned().unwrap_or_default();
            assert_eq!(files.len(), expected.len(), "{args:?} {c}");
            for (f, (path, orig, code)) in files.iter().zip(&expected) {
                assert_eq!(f["path"], path.as_str());
                if args.contains(&"--name-status") {
                    assert_eq!(f["orig_path"].as_str(), orig.as_deref());
                    let word = match code {
                        'A' => "added",
                        'M' => "modified",
                        'D' => "deleted",
                        'R' => "renamed",
                        _ => "?",
                    };
                    assert_eq!(f["status"], word);
                }
            }
        }
    }
}

#[test]
fn failures_are_refused_with_gits_reason() {
    let tmp = tempfile::TempDir::new().unwrap();
    for args in [&["status"][..], &["log"]] {
        let out = git_at(tmp.path(), "2026-01-01T00:00:00+0000", args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let output = Output {
            stdout: &stdout,
            stderr: &stderr,
            exit_code: out.status.code(),
        };
        let err = parse_stages(&[stage(&[&["git"], args].concat())], &output).unwrap_err();
        assert!(err.contains("not a git repository"), "{err}");
    }
}

#[test]
fn every_fixture_parses() {
    let mut seen = 0;
    for (format, records) in [("git-status", "files"), ("git-log", "commits")] {
        for (cmd, parsed) in parsed_fixtures(format) {
            assert!(
                !parsed.data[records].as_array().unwrap().is_empty(),
                "{}",
                cmd.display()
            );
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} fixtures");
}
