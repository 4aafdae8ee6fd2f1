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

/// The model's text of a log, as the budget measures it.
fn text_len(value: &GitLog) -> usize {
    crate::model_text::text_len(&serde_json::to_value(value).unwrap(), "GitLog")
}

#[test]
fn keeps_whole_records_from_both_ends_within_the_models_text() {
    let mut cut_log = log(100);
    let cut = cut_log.fit(1000, None).unwrap();
    assert_eq!(cut.kept + cut.omitted, 100);
    assert!(cut.kept > 2, "{cut:?}");
    assert_eq!(cut_log.commits.len(), cut.kept);
    assert!(text_len(&cut_log) <= 1000, "{}", text_len(&cut_log));
    // The first records and the last ones, in order, with the gap after `head`.
    let all = log(100).commits;
    assert_eq!(cut_log.commits[..cut.head], all[..cut.head]);
    assert_eq!(
        cut_log.commits[cut.head..],
        all[100 - (cut.kept - cut.head)..]
    );
    assert!(cut.head > 0 && cut.kept - cut.head > 0, "{cut:?}");
    assert!(cut.head.abs_diff(cut.kept - cut.head) <= 1, "{cut:?}");
    // The budget counts the model's text, not `data`: more records than `data` would hold.
    assert!(serde_json::to_string(&cut_log).unwrap().len() > 1000);
    // What fits whole is left whole.
    let mut whole = log(100);
    assert_eq!(whole.fit(1_000_000, None), None);
    assert_eq!(whole, log(100));
    let exact = text_len(&log(100));
    assert_eq!(log(100).fit(exact, None), None);
}

/// A keeper already dropped records between its first and its last: the cut stays at that gap
/// and says so even when the rest fits.
#[test]
fn a_keepers_gap_is_kept_where_it_is() {
    let mut keeper = Keeper::new(400);
    for commit in log(200).commits {
        keeper.push(commit);
    }
    let (kept, dropped, gap) = keeper.finish();
    let gap = gap.expect("records dropped between");
    assert!(dropped > 0 && gap > 0 && gap < kept.len());
    let all = log(200).commits;
    assert_eq!(kept[..gap], all[..gap]);
    assert_eq!(kept[gap..], all[200 - (kept.len() - gap)..]);
    let mut value = GitLog {
        filtered: false,
        commits: kept.clone(),
    };
    let cut = value.fit(1_000_000, Some(gap)).unwrap();
    assert_eq!((cut.kept, cut.head, cut.omitted), (kept.len(), gap, 0));
}
