use super::*;
use crate::git_log::{Commit, GitLog};

fn log(n: usize) -> GitLog {
    let commit = |i: usize| Commit {
        hash: format!("{i:040x}"),
        subject: "x".repeat(50),
        ..Commit::default()
    };
    GitLog {
        filtered: false,
        commits: (0..n).map(commit).collect(),
    }
}

#[test]
fn keeps_whole_records_and_counts_the_rest() {
    let mut cut_log = log(100);
    let cut = cut_log.fit(1000).unwrap();
    assert_eq!(cut.kept + cut.omitted, 100);
    assert!(cut.kept > 2, "{cut:?}");
    let json = serde_json::to_string(&cut_log).unwrap();
    assert!(json.len() <= 1000, "{}", json.len());
    assert_eq!(cut_log.commits.len(), cut.kept);
    assert_eq!(cut_log.commits[0], log(1).commits[0]);
    // One more record would not have fitted.
    let mut one_more = log(cut.kept + 1);
    one_more.fit(usize::MAX);
    assert!(serde_json::to_string(&one_more).unwrap().len() > 1000);
    // What fits whole is left whole.
    let mut whole = log(100);
    assert_eq!(whole.fit(1_000_000), None);
    assert_eq!(whole, log(100));
    let exact = serde_json::to_string(&log(100)).unwrap().len();
    assert_eq!(log(100).fit(exact), None);
    assert!(log(100).fit(exact - 1).is_some());
}
