//! The long (human) format of `git status`, read against the English sentences git prints
//! (`wt-status.c`, `remote.c`). Every line must be one of them: a translated git, a config that
//! adds lines (`status.displayCommentPrefix`, `status.submoduleSummary`) or a future wording
//! makes the parser refuse instead of guess. Files sit under section headers, indented by a
//! tab; the header says which side changed, so the format cannot be read once a filter may
//! have dropped lines (the caller refuses that). A path listed both as staged and as not staged
//! becomes one record, as the porcelain formats give it.

use std::collections::HashMap;

use super::shared::{path_token, rename_pair};
use super::{Change, Conflict, FileStatus, GitStatus, Submodule, bad_line};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Section {
    #[default]
    None,
    Staged,
    Unmerged,
    Unstaged,
    Untracked,
    Ignored,
    /// An interactive rebase's done and to-do commands, indented by three spaces.
    Todo,
}

/// Change labels, padded by git to the widest ("typechange:") plus one space.
const CHANGE_LABELS: &[(&str, Change)] = &[
    ("new file:", Change::Added),
    ("copied:", Change::Copied),
    ("deleted:", Change::Deleted),
    ("modified:", Change::Modified),
    ("renamed:", Change::Renamed),
    ("typechange:", Change::TypeChanged),
    ("unmerged:", Change::Unmerged),
];
const CHANGE_WIDTH: usize = 12;

/// Unmerged labels, padded to the widest ("deleted by them:") plus one space.
const CONFLICT_LABELS: &[(&str, Conflict)] = &[
    ("both deleted:", Conflict::BothDeleted),
    ("added by us:", Conflict::AddedByUs),
    ("deleted by them:", Conflict::DeletedByThem),
    ("added by them:", Conflict::AddedByThem),
    ("deleted by us:", Conflict::DeletedByUs),
    ("both added:", Conflict::BothAdded),
    ("both modified:", Conflict::BothModified),
];
const CONFLICT_WIDTH: usize = 17;

/// Sentences that say which operation is in progress (prefixes).
const STATES: &[(&str, &str)] = &[
    ("You have unmerged paths.", "merge"),
    ("All conflicts fixed but you are still merging.", "merge"),
    ("You are in the middle of an am session.", "am"),
    ("The current patch is empty.", "am"),
    ("You are currently rebasing", "rebase"),
    ("You are currently splitting a commit", "rebase"),
    ("You are currently editing a commit", "rebase"),
    ("No commands done.", "rebase"),
    ("No commands remaining.", "rebase"),
    ("git-rebase-todo is missing.", "rebase"),
    ("Cherry-pick currently in progress.", "cherry-pick"),
    ("You are currently cherry-picking commit ", "cherry-pick"),
    ("Revert currently in progress.", "revert"),
    ("You are currently reverting commit ", "revert"),
    ("You are currently bisecting", "bisect"),
];

/// Lines that carry nothing the record holds (prefixes): the closing summary, which the file
/// list already says, and advice about slow runs.
const NOTHING_NEW: &[&str] = &[
    "nothing to commit",
    "no changes added to commit",
    "nothing added to commit but untracked files present",
    "Untracked files not listed",
    "No changes",
    "You are in a sparse checkout",
    "It took ",
    "but the results were cached, and subsequent runs may be faster.",
    "See 'git help status' for information on how to improve this.",
    "You can use '--no-ahead-behind' to avoid this.",
];

pub(super) fn parse(text: &str) -> Result<GitStatus, String> {
    let mut reader = Reader::default();
    for (n, line) in text.lines().enumerate() {
        reader.line(n, line)?;
    }
    if reader.diverged_from.is_some() {
        return Err("the output ends inside git's \"have diverged\" sentence".into());
    }
    if reader.known_lines == 0 {
        return Err("`git status` printed nothing".into());
    }
    Ok(reader.status)
}

/// What the lines read so far say.
#[derive(Default)]
struct Reader {
    status: GitStatus,
    section: Section,
    /// Where each staged path's record is, to merge its unstaged change into it.
    record_of: HashMap<String, usize>,
    /// The upstream of a "have diverged," sentence, whose counts are on the next line.
    diverged_from: Option<String>,
    /// Lines that were not blank.
    known_lines: usize,
}

impl Reader {
    /// Line `n` (0-based): a file under a section header, a header, a hint, or one of git's
    /// sentences; anything else is refused.
    fn line(&mut self, n: usize, line: &str) -> Result<(), String> {
        let bad = || bad_line(n, line, "a `git status` line");
        if let Some(upstream) = self.diverged_from.take() {
            let (ahead, behind) = diverged_counts(line).ok_or_else(bad)?;
            return set_upstream(&mut self.status, upstream, Some(ahead), Some(behind));
        }
        if line.is_empty() {
            self.section = Section::None;
            return Ok(());
        }
        self.known_lines += 1;
        if let Some(entry) = line.strip_prefix('\t') {
            let file = file_entry(entry, self.section).ok_or_else(bad)?;
            add(&mut self.status, &mut self.record_of, file, self.section);
            return Ok(());
        }
        // Hints: "  (use "git add <file>..." to include in what will be committed)".
        if line.starts_with("  (") && line.ends_with(')') {
            return Ok(());
        }
        if self.section == Section::Todo && line.starts_with("   ") {
            return Ok(());
        }
        if let Some(next) = header(line) {
            self.section = next;
            return Ok(());
        }
        if self.sentence(line)? {
            Ok(())
        } else {
            Err(bad())
        }
    }

    /// One of git's sentences about the branch, its upstream, the stash or an operation in
    /// progress: whether `line` is one.
    fn sentence(&mut self, line: &str) -> Result<bool, String> {
        let status = &mut self.status;
        if let Some(upstream) = line
            .strip_prefix("Your branch and '")
            .and_then(|r| r.strip_suffix("' have diverged,"))
        {
            self.diverged_from = Some(upstream.to_owned());
            return Ok(true);
        }
        if let Some((upstream, ahead, behind, gone)) = tracking(line) {
            status.upstream_gone = gone;
            set_upstream(status, upstream.to_owned(), ahead, behind)?;
            return Ok(true);
        }
        if branch_line(line, status) {
            return Ok(true);
        }
        if let Some(count) = stash_line(line) {
            status.stash = Some(count);
            return Ok(true);
        }
        if let Some((_, operation)) = STATES.iter().find(|(s, _)| line.starts_with(s)) {
            in_progress(status, operation);
            return Ok(true);
        }
        if [
            "Last command done (",
            "Last commands done (",
            "Next command to do (",
            "Next commands to do (",
        ]
        .iter()
        .any(|p| line.starts_with(p))
        {
            in_progress(status, "rebase");
            self.section = Section::Todo;
            return Ok(true);
        }
        if line == "No commits yet" || line == "Initial commit" {
            status.initial = true;
            return Ok(true);
        }
        Ok(NOTHING_NEW.iter().any(|p| line.starts_with(p)))
    }
}

/// A file line (after its tab) of `section`.
fn file_entry(entry: &str, section: Section) -> Option<FileStatus> {
    match section {
        Section::Staged | Section::Unstaged => change_entry(entry, section),
        Section::Unmerged => conflict_entry(entry),
        Section::Untracked => {
            path_token(entry).map(|p| FileStatus::new(p, Change::Untracked, Change::Untracked))
        }
        Section::Ignored => {
            path_token(entry).map(|p| FileStatus::new(p, Change::Ignored, Change::Ignored))
        }
        Section::None | Section::Todo => None,
    }
}

fn header(line: &str) -> Option<Section> {
    Some(match line {
        "Changes to be committed:" => Section::Staged,
        "Unmerged paths:" => Section::Unmerged,
        "Changes not staged for commit:" => Section::Unstaged,
        "Untracked files:" => Section::Untracked,
        "Ignored files:" => Section::Ignored,
        _ => return None,
    })
}

fn branch_line(line: &str, status: &mut GitStatus) -> bool {
    if let Some(branch) = line.strip_prefix("On branch ") {
        status.branch = Some(branch.to_owned());
    } else if let Some(at) = line.strip_prefix("HEAD detached at ") {
        status.detached = true;
        status.detached_at = Some(at.to_owned());
    } else if let Some(from) = line.strip_prefix("HEAD detached from ") {
        status.detached = true;
        status.detached_from = Some(from.to_owned());
    } else if line.starts_with("interactive rebase in progress; onto ")
        || line.starts_with("rebase in progress; onto ")
    {
        status.detached = true;
        in_progress(status, "rebase");
    } else if line == "Not currently on any branch." {
        status.detached = true;
    } else {
        return false;
    }
    true
}

/// The one-line comparisons with the upstream: its name, ahead, behind, and whether it is gone.
/// Ref names may hold `'`, so the name ends at the last quote of the sentence.
fn tracking(line: &str) -> Option<(&str, Option<u64>, Option<u64>, bool)> {
    if let Some(rest) = line.strip_prefix("Your branch is up to date with '") {
        return Some((rest.strip_suffix("'.")?, Some(0), Some(0), false));
    }
    if let Some(rest) = line.strip_prefix("Your branch is ahead of '") {
        let (upstream, count) = rest.rsplit_once("' by ")?;
        let count = commits(count.strip_suffix('.')?)?;
        return Some((upstream, Some(count), Some(0), false));
    }
    if let Some(rest) = line.strip_prefix("Your branch is behind '") {
        let (upstream, count) = rest.rsplit_once("' by ")?;
        let count = commits(count.strip_suffix(", and can be fast-forwarded.")?)?;
        return Some((upstream, Some(0), Some(count), false));
    }
    if let Some(rest) = line.strip_prefix("Your branch and '") {
        return Some((
            rest.strip_suffix("' refer to different commits.")?,
            None,
            None,
            false,
        ));
    }
    let rest = line.strip_prefix("Your branch is based on '")?;
    Some((
        rest.strip_suffix("', but the upstream is gone.")?,
        None,
        None,
        true,
    ))
}

/// "and have 1 and 2 different commits each, respectively."
fn diverged_counts(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("and have ")?;
    let rest = rest
        .strip_suffix(" different commits each, respectively.")
        .or_else(|| rest.strip_suffix(" different commit each, respectively."))?;
    let (ahead, behind) = rest.split_once(" and ")?;
    Some((ahead.parse().ok()?, behind.parse().ok()?))
}

/// "3 commits" or "1 commit".
fn commits(text: &str) -> Option<u64> {
    let number = text
        .strip_suffix(" commits")
        .or_else(|| text.strip_suffix(" commit"))?;
    number.parse().ok()
}

/// With `status.compareBranches` git compares with several branches; which sentence is the
/// upstream is not said, so a second comparison is refused rather than picked.
fn set_upstream(
    status: &mut GitStatus,
    upstream: String,
    ahead: Option<u64>,
    behind: Option<u64>,
) -> Result<(), String> {
    if status.upstream.is_some() {
        return Err(
            "git compared the branch with several others (status.compareBranches); \
                    which one is the upstream is not said"
                .into(),
        );
    }
    status.upstream = Some(upstream);
    (status.ahead, status.behind) = (ahead, behind);
    Ok(())
}

fn stash_line(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("Your stash currently has ")?;
    let count = rest
        .strip_suffix(" entries")
        .or_else(|| rest.strip_suffix(" entry"))?;
    count.parse().ok()
}

fn in_progress(status: &mut GitStatus, operation: &str) {
    if !status.in_progress.iter().any(|o| o == operation) {
        status.in_progress.push(operation.to_owned());
    }
}

/// The label, then the padding git put after it (at least one space).
fn after_label<'a>(entry: &'a str, label: &str, width: usize) -> Option<&'a str> {
    let rest = entry.strip_prefix(label)?;
    let pad = width.saturating_sub(label.len()).max(1);
    let spaces = rest.bytes().take(pad).take_while(|b| *b == b' ').count();
    // Exactly git's padding when present, so a path that starts with a space keeps it.
    if spaces == pad {
        rest.get(pad..)
    } else {
        rest.get(spaces..).filter(|_| spaces > 0)
    }
}

fn change_entry(entry: &str, section: Section) -> Option<FileStatus> {
    let (change, text) = CHANGE_LABELS
        .iter()
        .find_map(|(label, change)| Some((*change, after_label(entry, label, CHANGE_WIDTH)?)))?;
    let (text, submodule) = match section {
        Section::Unstaged => submodule_suffix(text),
        _ => (text, None),
    };
    let (path, orig) = if change.moves() {
        let (orig, path) = rename_pair(text)?;
        (path, Some(orig))
    } else {
        (path_token(text)?, None)
    };
    let (index, worktree) = match section {
        Section::Staged => (change, Change::Unmodified),
        _ => (Change::Unmodified, change),
    };
    Some(FileStatus {
        orig_path: orig,
        submodule,
        ..FileStatus::new(path, index, worktree)
    })
}

/// A changed submodule's note: ` (new commits, modified content, untracked content)`.
fn submodule_suffix(text: &str) -> (&str, Option<Submodule>) {
    let Some((path, note)) = text.strip_suffix(')').and_then(|t| t.rsplit_once(" (")) else {
        return (text, None);
    };
    let mut submodule = Submodule::default();
    for part in note.split(", ") {
        match part {
            "new commits" => submodule.new_commits = true,
            "modified content" => submodule.modified_content = true,
            "untracked content" => submodule.untracked_content = true,
            _ => return (text, None),
        }
    }
    (path, Some(submodule))
}

fn conflict_entry(entry: &str) -> Option<FileStatus> {
    let (conflict, text) = CONFLICT_LABELS
        .iter()
        .find_map(|(label, kind)| Some((*kind, after_label(entry, label, CONFLICT_WIDTH)?)))?;
    Some(FileStatus::conflicted(path_token(text)?, conflict))
}

fn add(
    status: &mut GitStatus,
    record_of: &mut HashMap<String, usize>,
    file: FileStatus,
    section: Section,
) {
    match section {
        Section::Staged => {
            record_of.insert(file.path.clone(), status.files.len());
        }
        Section::Unstaged => {
            let existing = record_of
                .get(&file.path)
                .and_then(|i| status.files.get_mut(*i));
            if let Some(staged) = existing {
                staged.worktree = file.worktree;
                staged.submodule = file.submodule;
                staged.orig_path = staged.orig_path.take().or(file.orig_path);
                return;
            }
        }
        _ => {}
    }
    status.files.push(file);
}

#[cfg(test)]
#[path = "long_tests.rs"]
mod tests;
