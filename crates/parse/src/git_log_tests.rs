use super::*;
use crate::testutil::{ctx_at, output, parse_with, stage};
use serde_json::{Value, json};

/// A clock an hour east of UTC: dates printed without an offset are read in its zone.
const NOW: &str = "2026-12-01T22:00:00+01:00";

fn run_as(argv: &str, stdout: &str, filtered: bool, exit: i32) -> Result<Value, String> {
    let out = output(stdout, "fatal: bad revision 'nope'\n", Some(exit));
    parse_with(recognize, &stage(argv), &out, &ctx_at(NOW), filtered)
}

fn parse(argv: &str, stdout: &str) -> Value {
    run_as(argv, stdout, false, 0).unwrap()
}

fn commits(log: &Value) -> &Vec<Value> {
    log["commits"].as_array().unwrap()
}

const MEDIUM: &str =
    "commit 8680acef192a9f77bff71fb4394fd970b3b17f4e (HEAD -> main, tag: v1.0, origin/main)
Author: Bo <bo@example.com>
Date:   Tue Dec 1 21:11:09 2026 +0000

    Fix the parser
    when lines wrap
    
    Body line one
    Body line two
    
        indented code

commit ee91aa7aee6fc25efe1f58371ed0a261b044ba13
Author:  <nobody@example.com>
Date:   Sat Jan 3 03:04:05 2026 -0700

commit badded8b271b854de82e7b9df4db6e133e17ef82
Merge: 6f6468f 9df027f
Author: Zoë Ünïcode <zoe@example.com>
Date:   Sat Jan 3 03:04:05 2026 +0530

    Merge origin
";

#[test]
fn default_format() {
    let log = parse("git log", MEDIUM);
    let c = commits(&log);
    assert_eq!(c.len(), 3);
    assert_eq!(c[0]["hash"], "8680acef192a9f77bff71fb4394fd970b3b17f4e");
    assert_eq!(
        c[0]["refs"],
        json!(["HEAD -> main", "tag: v1.0", "origin/main"])
    );
    assert_eq!(
        (c[0]["author"].as_str(), c[0]["author_email"].as_str()),
        (Some("Bo"), Some("bo@example.com"))
    );
    assert_eq!(
        c[0]["date"],
        json!({"rfc3339": "2026-12-01T21:11:09+00:00", "epoch": 1_796_159_469})
    );
    assert_eq!(c[0]["subject"], "Fix the parser when lines wrap");
    assert_eq!(
        c[0]["body"],
        "Body line one\nBody line two\n\n    indented code"
    );
    assert_eq!(
        (
            c[1]["author"].as_str(),
            c[1]["subject"].as_str(),
            c[1].get("body")
        ),
        (Some(""), Some(""), None)
    );
    assert_eq!(c[1]["date"]["rfc3339"], "2026-01-03T03:04:05-07:00");
    assert_eq!(c[2]["parents"], json!(["6f6468f", "9df027f"]));
    assert_eq!(c[2]["author"], "Zoë Ünïcode");
    assert_eq!(c[2]["date"]["epoch"], 1_767_389_645);
    assert_eq!(log.get("filtered"), None);
    assert_eq!(
        parse("git log --decorate -n 3 --date=default -- src", MEDIUM),
        log
    );
    assert_eq!(commits(&parse("git log", "")).len(), 0);
}

#[test]
fn date_styles() {
    let one = |date: &str| {
        let text = format!("commit abcdef0\nAuthor: A <a@x>\nDate:   {date}\n\n    s\n");
        run_as("git log", &text, false, 0).map(|log| log["commits"][0]["date"].clone())
    };
    let moment = json!({"rfc3339": "2026-01-03T03:04:05-07:00", "epoch": 1_767_434_645});
    for date in [
        "Sat Jan 3 03:04:05 2026 -0700",
        "2026-01-03 03:04:05 -0700",
        "2026-01-03T03:04:05-07:00",
        "Sat, 3 Jan 2026 03:04:05 -0700",
        "1767434645 -0700",
    ] {
        assert_eq!(one(date).unwrap(), moment, "{date}");
    }
    assert_eq!(one("1767434645").unwrap()["epoch"], 1_767_434_645);
    assert_eq!(one("2026-12-01T21:11:09Z").unwrap()["epoch"], 1_796_159_469);
    // `--date=local`: no offset printed; the local zone of the context is used and said.
    let local = one("Sat Jan 3 10:04:05 2026").unwrap();
    assert_eq!(
        local,
        json!({"rfc3339": "2026-01-03T10:04:05+01:00", "epoch": 1_767_431_045, "raw": "Sat Jan 3 10:04:05 2026"})
    );
    for bad in [
        "11 months ago",
        "2026-01-03",
        "Sun Jan 3 03:04:05 2026 -0700",
        "Sat Jan 32 03:04:05 2026 -0700",
        "1767434645 +9999",
        "Sat Jan 3 03:04 2026 -0700",
    ] {
        assert!(one(bad).is_err(), "{bad}");
    }
}

#[test]
fn name_status_and_name_only() {
    let text = "commit 8680acef192a9f77bff71fb4394fd970b3b17f4e
Author: Bo <bo@example.com>
Date:   Tue Dec 1 21:11:09 2026 +0000

A\tq.txt
R087\told name.txt\t\"new\\tname\"
M\t\"\\303\\251\"

commit ee91aa7aee6fc25efe1f58371ed0a261b044ba13
Author: Bo <bo@example.com>
Date:   Tue Dec 1 21:11:09 2026 +0000

    Subject

D\tgone.txt
";
    let log = parse("git log --name-status", text);
    let c = commits(&log);
    assert_eq!(c[0]["subject"], "");
    assert_eq!(
        c[0]["files"],
        json!([
            {"path": "q.txt", "status": "added"},
            {"path": "new\tname", "orig_path": "old name.txt", "status": "renamed", "similarity": 87},
            {"path": "é", "status": "modified"},
        ])
    );
    assert_eq!(
        c[1]["files"],
        json!([{"path": "gone.txt", "status": "deleted"}])
    );
    assert!(
        run_as("git log", text, false, 0).is_err(),
        "file lines without --name-status"
    );
    let names = "commit ee91aa7aee6fc25efe1f58371ed0a261b044ba13\nAuthor: Bo <b@x>\nDate:   Tue Dec 1 21:11:09 2026 +0000\n\n    S\n\nsrc/a b.rs\nM\tx\n";
    let log = parse("git log --name-only", names);
    assert_eq!(
        commits(&log)[0]["files"],
        json!([{"path": "src/a b.rs"}, {"path": "M\tx"}])
    );
    assert!(run_as("git log --name-status", names, false, 0).is_err());
}

#[test]
fn oneline() {
    let text = "8680ace (HEAD -> main) \n12edec7 (refs/stash) WIP on main: 6f6468f local change\nbadded8 (tag: v2) Merge origin with two lines\n6f6468f (wip) not a ref list\n3de37ce a (b) c\n";
    let log = parse("git log --oneline", text);
    let c = commits(&log);
    assert_eq!(
        (
            c[0]["hash"].as_str(),
            c[0]["refs"].clone(),
            c[0]["subject"].as_str()
        ),
        (Some("8680ace"), json!(["HEAD -> main"]), Some(""))
    );
    assert_eq!(c[1]["subject"], "WIP on main: 6f6468f local change");
    assert_eq!(c[2]["refs"], json!(["tag: v2"]));
    // The ambiguity the text cannot settle: "(wip)" reads as a ref unless --no-decorate.
    assert_eq!(c[3]["refs"], json!(["wip"]));
    let plain = parse("git log --oneline --no-decorate", text);
    assert_eq!(commits(&plain)[3]["subject"], "(wip) not a ref list");
    assert_eq!(commits(&plain)[0]["subject"], "(HEAD -> main) ");
    assert_eq!(c[4]["subject"], "a (b) c");
    let status = parse(
        "git log --oneline --name-status",
        "8680ace q\nA\tq.txt\nM\tr\nee91aa7 \n",
    );
    assert_eq!(commits(&status)[0]["files"].as_array().unwrap().len(), 2);
    assert_eq!(commits(&status)[1]["hash"], "ee91aa7");
    assert!(run_as("git log --oneline", "not a hash line\n", false, 0).is_err());
    assert!(run_as("git log --oneline --name-status", "A\tq.txt\n", false, 0).is_err());
}

#[test]
fn filters_and_failures() {
    // `git log | head -8`: the last commit's headers are cut; it is dropped, and the result says so.
    let head: String = MEDIUM.lines().take(17).map(|l| format!("{l}\n")).collect();
    let log = run_as("git log", &head, true, 0).unwrap();
    assert_eq!(
        (commits(&log).len(), log["filtered"].as_bool()),
        (2, Some(true))
    );
    assert!(
        run_as("git log", &head, false, 0).is_err(),
        "unfiltered, a cut commit is an error"
    );
    // `git log | tail`: the first commit's start is gone; reading starts at the next one.
    let tail: String = MEDIUM.lines().skip(3).map(|l| format!("{l}\n")).collect();
    assert_eq!(
        commits(&run_as("git log", &tail, true, 0).unwrap()).len(),
        2
    );
    assert!(run_as("git log", &tail, false, 0).is_err());
    // `git log | grep -v Author`: not default-format commits any more.
    let grepped: String = MEDIUM
        .lines()
        .filter(|l| !l.starts_with("Author"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(run_as("git log", &grepped, true, 0).is_err());
    let err = run_as("git log nope", "", false, 128).unwrap_err();
    assert!(err.contains("bad revision"), "{err}");
    for bad in [
        "commit xyz\nAuthor: A <a@x>\nDate:   1 +0000\n\n",
        "commit abcdef0 HEAD\n",
        "commit abcdef0 (bad ref)\n",
        "commit abcdef0\nAuthor: A a@x\n",
        "commit abcdef0\nAuthor: A <a@x>\nAuthorDate: x\n",
        "commit abcdef0\nAuthor: A <a@x>\nDate:   1 +0000\n\n    msg\nnot indented\n",
        "abcdef0 Subject\n",
    ] {
        assert!(run_as("git log", bad, false, 0).is_err(), "{bad:?}");
    }
}

#[test]
fn recognition() {
    for argv in [
        "git log",
        "git log --oneline",
        "git log -n 5",
        "git log -5 --decorate",
        "git log --max-count=3 --no-decorate --date=iso",
        "git log --date rfc --author Bo main..feature",
        "git log --pretty=oneline --abbrev-commit",
        "git log --format=medium --name-status -M",
        "git log --oneline --name-status",
        "git log --all --first-parent --since=2.weeks -- src/a.rs",
        "git -C /r --no-pager log --date=iso-strict-local",
        "git log -- --graph",
    ] {
        assert!(recognize(&stage(argv)).is_some(), "{argv}");
    }
    for argv in [
        "git log --graph",
        "git log --stat",
        "git log -p",
        "git log --format=%H",
        "git log --pretty=fuller",
        "git log --pretty=format:%s",
        "git log --date=relative",
        "git log --date short",
        "git log --relative-date",
        "git log --oneline --name-only",
        "git log --parents",
        "git log --source",
        "git log --show-signature",
        "git log -z",
        "git log --name-only -s",
        "git log -n",
        "git status",
    ] {
        assert!(recognize(&stage(argv)).is_none(), "{argv}");
    }
}
