//! The directories the watched paths are in, stamped first at every look: a path that was
//! absent at the last look is not looked at again while its directory is the one stamped then
//! and unchanged since, since a name can appear in a directory only by changing it (its change
//! time). On a workspace without those files (most of them: `.envrc`, `.mcp.json`, `.vscode`,
//! … and a `.git` above the root), a look after every call was 11 `lstat`s of absent names, and
//! is now one of each directory (2: the workspace and the one above it), plus the names in a
//! directory that changed.
//!
//! A directory's times may come from a coarse clock (a tick of a few milliseconds): a name made
//! in the tick of a change seen at the last look would leave the same time. So a stamp taken
//! within [`SETTLED_AFTER_MS`] of the directory's change is not trusted: its names are looked at.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::stamp::{Stamp, changed_since, stamp};

/// How long after a directory changed its stamp is trusted (as the read rules' stamps in the
/// sandbox's `unreadable.rs`).
const SETTLED_AFTER_MS: u64 = 50;

/// Each directory as stamped at a look, and whether that stamp can be trusted.
#[derive(Debug, Default)]
pub(super) struct Parents {
    dirs: Vec<(PathBuf, Stamp, bool)>,
}

impl Parents {
    /// Stamps the directories `paths` are in, now, beside `self` (the last look's).
    pub(super) fn look<'a>(self, paths: impl Iterator<Item = &'a Path>) -> Look {
        let at = SystemTime::now();
        let mut now: Vec<(PathBuf, Stamp, bool)> = Vec::new();
        for dir in paths.filter_map(Path::parent) {
            if now.iter().any(|(d, _, _)| d == dir) {
                continue;
            }
            let s = stamp(dir);
            let settled =
                s.is_some() && !changed_since(s, at, Duration::from_millis(SETTLED_AFTER_MS));
            now.push((dir.to_path_buf(), s, settled));
        }
        Look { before: self, now }
    }
}

/// The directories at this look, beside the last look's.
pub(super) struct Look {
    before: Parents,
    now: Vec<(PathBuf, Stamp, bool)>,
}

impl Look {
    /// Whether `path`, absent at the last look, is absent still without a look at it: its
    /// directory is the one stamped then, unchanged since, and that stamp was trusted.
    pub(super) fn still_absent(&self, path: &Path) -> bool {
        let Some(dir) = path.parent() else {
            return false;
        };
        let now = self.now.iter().find(|(d, _, _)| d == dir);
        let was = self.before.dirs.iter().find(|(d, _, _)| d == dir);
        matches!((now, was), (Some((_, now, _)), Some((_, was, true))) if now.is_some() && now == was)
    }

    /// This look's stamps, for the next.
    pub(super) fn keep(self) -> Parents {
        Parents { dirs: self.now }
    }
}
