//! `git log` in its formats on the repositories of `git`, compared with what git's machine
//! format (`--format=%H%x00…`) and `diff-tree` say.
// Integration tests are always built with cfg(test); saying so lets clippy's
// `allow-unwrap-in-tests` see these helpers as test code.
#![cfg(test)]

use std::path::Path;

use super::git::{git, parse, parse_filtered, repos};

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
