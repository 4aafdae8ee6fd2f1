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
    let (value, cut) = cut_log.fit(1000, None).unwrap();
    let cut = cut.unwrap();
    // The JSON given is the value as cut, encoded once.
    assert_eq!(value, serde_json::to_value(&cut_log).unwrap());
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
    assert_eq!(whole.fit(1_000_000, None).unwrap().1, None);
    assert_eq!(whole, log(100));
    let exact = text_len(&log(100));
    assert_eq!(log(100).fit(exact, None).unwrap().1, None);
}

/// A keeper already dropped records between its first and its last: the cut stays at that gap
/// and says so even when the rest fits.
#[test]
fn a_keepers_gap_is_kept_where_it_is() {
    let mut keeper = Keeper::new(400);
    for commit in log(200).commits {
        if let Err((commit, cost)) = keeper.push_first(commit) {
            keeper.push_later(commit, cost);
        }
    }
    let (kept, dropped, gap) = keeper
        .finish(|commit| Ok::<_, ()>((commit.clone(), cost(&commit))))
        .unwrap();
    let gap = gap.expect("records dropped between");
    assert!(dropped > 0 && gap > 0 && gap < kept.len());
    let all = log(200).commits;
    assert_eq!(kept[..gap], all[..gap]);
    assert_eq!(kept[gap..], all[200 - (kept.len() - gap)..]);
    let mut value = GitLog {
        filtered: false,
        commits: kept.clone(),
    };
    let cut = value.fit(1_000_000, Some(gap)).unwrap().1.unwrap();
    assert_eq!((cut.kept, cut.head, cut.omitted), (kept.len(), gap, 0));
}

/// Records past the first are pushed as read, with a lower bound of their cost: the keeper
/// keeps the same last records as with their exact costs, and builds only those and one more.
#[test]
fn the_last_records_are_built_only_when_kept() {
    let all: Vec<Commit> = (0..300)
        .map(|i| Commit {
            hash: format!("{i:040x}"),
            subject: "x".repeat(i * 7 % 90),
            ..Commit::default()
        })
        .collect();
    let exact = {
        let mut keeper = Keeper::new(700);
        for commit in all.clone() {
            if let Err((commit, cost)) = keeper.push_first(commit) {
                keeper.push_later(commit, cost);
            }
        }
        keeper
            .finish(|commit| Ok::<_, ()>((commit.clone(), cost(&commit))))
            .unwrap()
    };
    let mut keeper = Keeper::new(700);
    for (i, commit) in all.iter().enumerate() {
        if keeper.taking_first() && keeper.push_first(commit.clone()).is_ok() {
            continue;
        }
        keeper.push_later(i, 1);
    }
    let mut built = 0;
    let lazy = keeper
        .finish(|i| {
            built += 1;
            Ok::<_, ()>((all[i].clone(), cost(&all[i])))
        })
        .unwrap();
    assert_eq!(lazy, exact);
    let (kept, dropped, gap) = exact;
    let gap = gap.expect("records dropped between");
    assert!(dropped > 100 && gap > 0, "{dropped} {gap}");
    assert_eq!(built, kept.len() - gap + 1);
}
