//! The porcelain formats of `git status`: v1 (`--porcelain`, also what `-s` prints, with paths
//! relative to the current directory) and v2 (`--porcelain=v2`). Each line stands alone, so
//! they are read line by line and stay readable after a filter drops lines.

use super::shared::{hex, path_token, rename_pair, tab_pair};
use super::{Change, Conflict, FileStatus, GitStatus, Modes, Submodule, bad_line};

pub(super) fn porcelain_v1(text: &str) -> Result<GitStatus, String> {
    let mut status = GitStatus::default();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix("## ") {
            branch_header(header, &mut status)
                .ok_or_else(|| bad_line(n, line, "a `git status` branch line"))?;
        } else {
            let entry = v1_entry(line)
                .ok_or_else(|| bad_line(n, line, "a `git status --porcelain` entry"))?;
            status.files.push(entry);
        }
    }
    Ok(status)
}

/// `## main...origin/main [ahead 1, behind 2]` and its variants (`## HEAD (no branch)`,
/// `## No commits yet on main`, `[gone]`, `[different]`).
fn branch_header(header: &str, status: &mut GitStatus) -> Option<()> {
    let mut rest = header;
    if let Some(after) = rest
        .strip_prefix("No commits yet on ")
        .or_else(|| rest.strip_prefix("Initial commit on "))
    {
        status.initial = true;
        rest = after;
    }
    if rest == "HEAD (no branch)" {
        status.detached = true;
        return Some(());
    }
    // Branch names hold neither spaces nor "..": the first space ends the names.
    let (names, tracking) = match rest.split_once(' ') {
        Some((names, tracking)) => (names, Some(tracking)),
        None => (rest, None),
    };
    let (branch, upstream) = match names.split_once("...") {
        Some((branch, upstream)) => (branch, Some(upstream)),
        None => (names, None),
    };
    if branch.is_empty() || upstream.is_some_and(str::is_empty) {
        return None;
    }
    status.branch = Some(branch.to_owned());
    status.upstream = upstream.map(str::to_owned);
    let Some(tracking) = tracking else {
        if upstream.is_some() {
            (status.ahead, status.behind) = (Some(0), Some(0));
        }
        return Some(());
    };
    let inner = tracking.strip_prefix('[')?.strip_suffix(']')?;
    upstream?;
    match inner {
        "gone" => status.upstream_gone = true,
        "different" => {}
        _ => {
            let (mut ahead, mut behind) = (0, 0);
            for part in inner.split(", ") {
                if let Some(n) = part.strip_prefix("ahead ") {
                    ahead = n.parse().ok()?;
                } else {
                    behind = part.strip_prefix("behind ")?.parse().ok()?;
                }
            }
            (status.ahead, status.behind) = (Some(ahead), Some(behind));
        }
    }
    Some(())
}

/// `XY PATH` or `XY ORIG -> PATH` (porcelain v1 and short).
pub(super) fn v1_entry(line: &str) -> Option<FileStatus> {
    let mut chars = line.chars();
    let (x, y) = (chars.next()?, chars.next()?);
    let rest = chars.as_str().strip_prefix(' ')?;
    match (x, y) {
        ('?', '?') => {
            return Some(FileStatus::new(
                path_token(rest)?,
                Change::Untracked,
                Change::Untracked,
            ));
        }
        ('!', '!') => {
            return Some(FileStatus::new(
                path_token(rest)?,
                Change::Ignored,
                Change::Ignored,
            ));
        }
        _ => {}
    }
    if let Some(conflict) = Conflict::from_xy(x, y) {
        return Some(FileStatus::conflicted(path_token(rest)?, conflict));
    }
    let index = Change::from_code(x)?;
    // `-s` shows a submodule's dirty content as `m` (modified) or `?` (untracked).
    let (worktree, submodule) = match y {
        'm' => (
            Change::Modified,
            Some(Submodule {
                modified_content: true,
                ..Submodule::default()
            }),
        ),
        '?' => (
            Change::Modified,
            Some(Submodule {
                untracked_content: true,
                ..Submodule::default()
            }),
        ),
        _ => (Change::from_code(y)?, None),
    };
    let mut file = if index.moves() || worktree.moves() {
        let (orig, path) = rename_pair(rest)?;
        FileStatus {
            orig_path: Some(orig),
            ..FileStatus::new(path, index, worktree)
        }
    } else {
        FileStatus::new(path_token(rest)?, index, worktree)
    };
    file.submodule = submodule;
    Some(file)
}

pub(super) fn porcelain_v2(text: &str) -> Result<GitStatus, String> {
    let mut status = GitStatus::default();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        // `Some(None)`: a header, read into `status`; `None`: not a v2 line.
        let read = if let Some(header) = line.strip_prefix("# ") {
            v2_header(header, &mut status).map(|()| None)
        } else if let Some(rest) = line.strip_prefix("1 ") {
            v2_changed(rest, false).map(Some)
        } else if let Some(rest) = line.strip_prefix("2 ") {
            v2_changed(rest, true).map(Some)
        } else if let Some(rest) = line.strip_prefix("u ") {
            v2_unmerged(rest).map(Some)
        } else if let Some(rest) = line.strip_prefix("? ") {
            path_token(rest).map(|p| Some(FileStatus::new(p, Change::Untracked, Change::Untracked)))
        } else if let Some(rest) = line.strip_prefix("! ") {
            path_token(rest).map(|p| Some(FileStatus::new(p, Change::Ignored, Change::Ignored)))
        } else {
            None
        };
        let file = read.ok_or_else(|| bad_line(n, line, "a `git status --porcelain=v2` line"))?;
        status.files.extend(file);
    }
    Ok(status)
}

/// `# branch.oid`, `# branch.head`, `# branch.upstream`, `# branch.ab`, `# stash`. Git's
/// documentation tells parsers to ignore header lines they do not know.
fn v2_header(header: &str, status: &mut GitStatus) -> Option<()> {
    let Some((key, value)) = header.split_once(' ') else {
        return Some(());
    };
    match key {
        "branch.oid" if value == "(initial)" => status.initial = true,
        "branch.oid" => status.head = Some(hex(value)?.to_owned()),
        "branch.head" if value == "(detached)" => status.detached = true,
        "branch.head" if value == "(unknown)" => {}
        "branch.head" => status.branch = Some(value.to_owned()),
        "branch.upstream" => status.upstream = Some(value.to_owned()),
        "branch.ab" => {
            let (ahead, behind) = value.split_once(' ')?;
            let (ahead, behind) = (ahead.strip_prefix('+')?, behind.strip_prefix('-')?);
            if (ahead, behind) != ("?", "?") {
                status.ahead = Some(ahead.parse().ok()?);
                status.behind = Some(behind.parse().ok()?);
            }
        }
        "stash" => status.stash = Some(value.parse().ok()?),
        _ => {}
    }
    Some(())
}

/// `1 XY sub mH mI mW hH hI path` or `2 XY sub mH mI mW hH hI Xscore path<TAB>orig`.
fn v2_changed(rest: &str, moved: bool) -> Option<FileStatus> {
    let mut fields = rest.splitn(if moved { 9 } else { 8 }, ' ');
    let mut next = || fields.next();
    let (xy, sub, mode_head, mode_index, mode_worktree) =
        (next()?, next()?, next()?, next()?, next()?);
    let (_hash_head, _hash_index) = (hex(next()?)?, hex(next()?)?);
    let mut xy_chars = xy.chars();
    let index = Change::from_code(xy_chars.next()?)?;
    let worktree = Change::from_code(xy_chars.next()?)?;
    if xy_chars.next().is_some() {
        return None;
    }
    let mut file = if moved {
        let score = next()?;
        let percent = score
            .strip_prefix(['R', 'C'])?
            .parse::<u8>()
            .ok()
            .filter(|p| *p <= 100)?;
        let (path, orig) = tab_pair(next()?)?;
        FileStatus {
            orig_path: Some(orig),
            similarity: Some(percent),
            ..FileStatus::new(path, index, worktree)
        }
    } else {
        FileStatus::new(path_token(next()?)?, index, worktree)
    };
    file.submodule = v2_submodule(sub)?;
    let modes = [mode_head, mode_index, mode_worktree];
    if !modes
        .iter()
        .all(|m| m.len() == 6 && m.bytes().all(|b| (b'0'..=b'7').contains(&b)))
    {
        return None;
    }
    let mut present = modes.iter().filter(|m| **m != "000000");
    let first = present.next();
    if present.any(|m| Some(m) != first) {
        let [head, index, worktree] = modes.map(str::to_owned);
        file.modes = Some(Modes {
            head,
            index,
            worktree,
        });
    }
    Some(file)
}

/// `u XY sub m1 m2 m3 mW h1 h2 h3 path`.
fn v2_unmerged(rest: &str) -> Option<FileStatus> {
    let fields: Vec<&str> = rest.splitn(10, ' ').collect();
    let [xy, sub, _, _, _, _, _, _, _, path] = fields.as_slice() else {
        return None;
    };
    let mut xy_chars = xy.chars();
    let (x, y) = (xy_chars.next()?, xy_chars.next()?);
    let mut file = FileStatus::conflicted(path_token(path)?, Conflict::from_xy(x, y)?);
    file.submodule = v2_submodule(sub)?;
    Some(file)
}

/// `N...` (not a submodule) or `S<c><m><u>`.
fn v2_submodule(field: &str) -> Option<Option<Submodule>> {
    if field == "N..." {
        return Some(None);
    }
    let mut flags = field.strip_prefix('S')?.chars();
    let mut flag = |set: char| match flags.next() {
        Some('.') => Some(false),
        Some(c) if c == set => Some(true),
        _ => None,
    };
    let submodule = Submodule {
        new_commits: flag('C')?,
        modified_content: flag('M')?,
        untracked_content: flag('U')?,
    };
    flags.next().is_none().then_some(Some(submodule))
}
