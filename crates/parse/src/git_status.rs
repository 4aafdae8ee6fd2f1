//! `GitStatus`: what `git status` prints, in each of its formats, as one record per changed
//! path plus the branch, its upstream and how far apart they are.
//!
//! The porcelain formats (`--porcelain`, `--porcelain=v2`) are read first: git promises they
//! stay the same across versions and locales, which is why the issue prefers them. The short
//! format (`-s`) is the porcelain v1 grammar with paths relative to the current directory and
//! two extra submodule letters. The long (human) format is read in `long.rs` against git's
//! English sentences. Plain `git status` prints the short format when `status.short` is set in a
//! config the parser cannot read, so plain output is told apart by its first line: the two
//! formats' first lines never look alike, and that is the output's shape, not a guess at it.
//!
//! Paths are unquoted as git quotes them (C escapes, octal bytes for non-ASCII names while
//! `core.quotePath` is on). `-z` is refused: cleaning the text does not keep its NULs.

mod long;
mod porcelain;
pub(crate) mod shared;

use schemars::JsonSchema;
use serde::Serialize;

use crate::{Context, Output, Parser, Stage, Typed};
use porcelain::{porcelain_v1, porcelain_v2, v1_entry};
pub(crate) use shared::bad_line;
use shared::{check_exit, git_subcommand};

/// The state of a work tree, as `git status` reported it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct GitStatus {
    /// The branch checked out; absent when HEAD is detached or the output does not name it
    /// (porcelain without `--branch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// HEAD is detached: no branch is checked out (a rebase in progress included).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detached: bool,
    /// The commit HEAD points to, full hash (porcelain v2 with `--branch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The ref or abbreviated commit HEAD was detached at (long format, `HEAD detached at X`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detached_at: Option<String>,
    /// The ref or abbreviated commit HEAD was detached from and has moved since (long format,
    /// `HEAD detached from X`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detached_from: Option<String>,
    /// The branch has no commits yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub initial: bool,
    /// The upstream branch, short name (`origin/main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The upstream is configured but no longer exists.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upstream_gone: bool,
    /// Commits on the branch that are not on the upstream; absent when not computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead: Option<u64>,
    /// Commits on the upstream that are not on the branch; absent when not computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<u64>,
    /// Operations in progress (long format): `merge`, `am`, `rebase`, `cherry-pick`,
    /// `revert`, `bisect`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_progress: Vec<String>,
    /// Stash entries (`--show-stash`; git says nothing when there are none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stash: Option<u64>,
    /// Nothing staged, changed, unmerged or untracked among the files listed (ignored files do
    /// not count, nor untracked ones with `-uno`). Absent when a later pipeline stage may have
    /// dropped lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean: Option<bool>,
    /// One record per path git listed.
    pub files: Vec<FileStatus>,
}

/// One path git listed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FileStatus {
    /// The path, unquoted (after a rename or copy, the new one). Relative to the repository root
    /// with `--porcelain`, to the current directory in the short and long formats.
    pub path: String,
    /// The path before a rename or copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orig_path: Option<String>,
    /// The index (what is staged) compared with HEAD.
    pub index: Change,
    /// The working tree compared with the index.
    pub worktree: Change,
    /// For an unmerged path, what each side of the merge did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<Conflict>,
    /// Similarity of a rename or copy, in percent (porcelain v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<u8>,
    /// The path is a submodule, and how it differs (porcelain v2; the short and long formats
    /// tell only when its content changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submodule: Option<Submodule>,
    /// Octal file modes, given only when the mode itself changed (porcelain v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Modes>,
}

/// How one side of a path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// No change on this side.
    Unmodified,
    /// The content changed.
    Modified,
    /// A file became a symlink, a submodule, or the reverse.
    TypeChanged,
    /// New on this side.
    Added,
    /// Removed on this side.
    Deleted,
    /// Moved from `orig_path`.
    Renamed,
    /// Copied from `orig_path`.
    Copied,
    /// In conflict: see `conflict`.
    Unmerged,
    /// Not tracked by git.
    Untracked,
    /// Not tracked, and matched by an ignore rule (listed with `--ignored`).
    Ignored,
}

/// What each side of a merge did to an unmerged path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Conflict {
    /// Deleted on both sides (`DD`).
    BothDeleted,
    /// Added on our side only (`AU`).
    AddedByUs,
    /// Modified here, deleted on their side (`UD`).
    DeletedByThem,
    /// Added on their side only (`UA`).
    AddedByThem,
    /// Deleted on our side, modified on theirs (`DU`).
    DeletedByUs,
    /// Added on both sides, differently (`AA`).
    BothAdded,
    /// Modified on both sides (`UU`).
    BothModified,
}

/// How a submodule differs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Submodule {
    /// Its checked-out commit differs from the one recorded.
    pub new_commits: bool,
    /// Tracked files inside it are modified.
    pub modified_content: bool,
    /// It contains untracked files.
    pub untracked_content: bool,
}

/// Octal file modes (`100644`, `100755`, `120000`; `000000` where the path is absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Modes {
    /// In HEAD.
    pub head: String,
    /// In the index.
    pub index: String,
    /// In the working tree.
    pub worktree: String,
}

impl FileStatus {
    fn new(path: String, index: Change, worktree: Change) -> FileStatus {
        FileStatus {
            path,
            orig_path: None,
            index,
            worktree,
            conflict: None,
            similarity: None,
            submodule: None,
            modes: None,
        }
    }

    fn conflicted(path: String, conflict: Conflict) -> FileStatus {
        FileStatus {
            conflict: Some(conflict),
            ..FileStatus::new(path, Change::Unmerged, Change::Unmerged)
        }
    }
}

impl Change {
    /// A status letter of porcelain v1 (`' '`) or v2 (`'.'`) for a tracked path.
    fn from_code(code: char) -> Option<Change> {
        Some(match code {
            ' ' | '.' => Change::Unmodified,
            'M' => Change::Modified,
            'T' => Change::TypeChanged,
            'A' => Change::Added,
            'D' => Change::Deleted,
            'R' => Change::Renamed,
            'C' => Change::Copied,
            _ => return None,
        })
    }

    fn moves(self) -> bool {
        matches!(self, Change::Renamed | Change::Copied)
    }
}

impl Conflict {
    /// The `XY` pair of an unmerged path (`git status --porcelain` documents all seven).
    fn from_xy(x: char, y: char) -> Option<Conflict> {
        Some(match (x, y) {
            ('D', 'D') => Conflict::BothDeleted,
            ('A', 'U') => Conflict::AddedByUs,
            ('U', 'D') => Conflict::DeletedByThem,
            ('U', 'A') => Conflict::AddedByThem,
            ('D', 'U') => Conflict::DeletedByUs,
            ('A', 'A') => Conflict::BothAdded,
            ('U', 'U') => Conflict::BothModified,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Plain `git status`: long, or short when `status.short` is configured.
    Plain,
    Long,
    /// `-s` and `--porcelain[=v1]`: one grammar.
    Short,
    V2,
}

struct StatusParser {
    format: Format,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let args = git_subcommand(stage, "status")?;
    let mut format = Format::Plain;
    for arg in args {
        let arg = arg.as_str();
        if arg == "--" {
            break;
        }
        match arg {
            "--porcelain" | "--porcelain=v1" | "--porcelain=1" | "-s" | "--short" => {
                format = Format::Short;
            }
            "--porcelain=v2" | "--porcelain=2" => format = Format::V2,
            "--no-porcelain" | "--no-short" => format = Format::Plain,
            "--long" => format = Format::Long,
            "-b"
            | "--branch"
            | "--no-branch"
            | "--show-stash"
            | "--no-show-stash"
            | "--ahead-behind"
            | "--no-ahead-behind"
            | "--renames"
            | "--no-renames"
            | "--ignored"
            | "--no-column"
            | "--untracked-files"
            | "--ignore-submodules" => {}
            _ if [
                "--ignored=",
                "--untracked-files=",
                "--ignore-submodules=",
                "--find-renames",
            ]
            .iter()
            .any(|p| arg.starts_with(p)) => {}
            _ if arg.starts_with("--") => return None,
            // Anything else is a pathspec.
            _ => {
                if let Some(letters) = arg.strip_prefix('-') {
                    format = short_flags(letters, format)?;
                }
            }
        }
    }
    Some(Box::new(StatusParser { format }))
}

/// A bundle of one-letter flags (`-sb`, `-uno`); `None` for one that changes the format in a
/// way not read here (`-z`, `-v`).
fn short_flags(letters: &str, mut format: Format) -> Option<Format> {
    if letters.is_empty() {
        return None;
    }
    for c in letters.chars() {
        match c {
            's' => format = Format::Short,
            'b' => {}
            // The rest of the bundle is `-u`'s value (no, normal, all).
            'u' => return Some(format),
            _ => return None,
        }
    }
    Some(format)
}

impl Parser for StatusParser {
    fn type_name(&self) -> &'static str {
        "GitStatus"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        check_exit(out, "git status")?;
        let text = out.stdout;
        let long = match self.format {
            Format::Long => true,
            Format::Plain => text
                .lines()
                .find(|l| !l.is_empty())
                .is_some_and(|first| !first.starts_with("## ") && v1_entry(first).is_none()),
            Format::Short | Format::V2 => false,
        };
        let mut status = if long {
            if filtered {
                return Err(
                    "a filtered long `git status` loses the section headers that say \
                            what is staged; use `git status --porcelain`"
                        .into(),
                );
            }
            long::parse(text)?
        } else if self.format == Format::V2 {
            porcelain_v2(text)?
        } else {
            porcelain_v1(text)?
        };
        status.clean = (!filtered).then(|| status.files.iter().all(|f| f.index == Change::Ignored));
        Ok(Typed::new(status))
    }
}

#[cfg(test)]
#[path = "git_status_tests.rs"]
mod tests;
