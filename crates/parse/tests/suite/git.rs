//! `git status` and `git log`, run for real on repositories made for the test, compared with
//! the changes the test made and with what git's machine formats say (`rev-parse`, `rev-list
//! --count`, `log --format=%H%x00…`, `-z` listings that need no unquoting). This file holds
//! the repositories and the runs both share, and what both must do (refuse git's failures,
//! parse every fixture); `git_status` and `git_log` hold each command's comparisons.
// Integration tests are always built with cfg(test); saying so lets clippy's
// `allow-unwrap-in-tests` see these helpers as test code.
#![cfg(test)]

use std::path::Path;

use agentty_parse::Output;
use serde_json::Value;

use super::common::{command, parse as parse_stages, parsed_fixtures, stage, stage_of};

/// Runs git in `dir`, isolated from the machine's config, dates pinned to `date`.
pub(super) fn git_at(dir: &Path, date: &str, args: &[&str]) -> std::process::Output {
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

pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_at(dir, "2026-03-04T05:06:07+0000", args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub(super) fn commit(dir: &Path, date: &str, message: &str) {
    let out = git_at(dir, date, &["commit", "-q", "-m", message]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A later pipeline stage: its command line, and what it does to the text.
pub(super) type Filter = (&'static str, fn(&str) -> String);

/// Runs `git ARGS` and parses its output as the server would; with a `filter`, the text is
/// thinned as that later stage would thin it, and the stage is part of the pipeline.
pub(super) fn parse_filtered(dir: &Path, args: &[&str], filter: Option<Filter>) -> Value {
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

pub(super) fn parse(dir: &Path, args: &[&str]) -> Value {
    parse_filtered(dir, args, None)
}

/// An upstream, a clone that is 4 commits ahead (one a merge, one a rename) and 1 behind, and
/// a work tree with staged, unstaged, deleted, renamed, untracked and ignored paths.
pub(super) fn repos() -> (tempfile::TempDir, std::path::PathBuf) {
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
