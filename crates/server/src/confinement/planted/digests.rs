//! The bytes of the watched regular files as last seen, so that a file written again with the
//! same bytes and permissions is no change: `git init` run again in a repository rewrites
//! `.git/config` whole (a new inode, a new ctime, the same bytes), and an alarm for that would
//! teach the user to pass over the real ones.
//!
//! A file is read only when its stamp is new (at the first look, every watched file once), as a
//! confined command could read it (`agentty_sandbox::deputy`), and at most [`READ_MAX_BYTES`]: a
//! larger one always counts as changed. The digest is keyed per process (`RandomState`), so a
//! command cannot make two contents collide.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::stamp::{Stamp, regular_mode};

/// Files larger than this are not read for a digest: their changes are always told.
const READ_MAX_BYTES: u64 = 1 << 20;

#[derive(Default)]
pub(super) struct Digests {
    /// Per path: the stamp it had when read, and its digest (`None`: not readable as a
    /// confined command could, or too large).
    seen: HashMap<PathBuf, (Stamp, Option<u64>)>,
    key: std::hash::RandomState,
}

impl Digests {
    /// Whether `path`, seen as `was` at the last look and as `now`, still holds the same bytes
    /// with the same permissions (both times a regular file, not reached through a symlink).
    pub(super) fn same_bytes(&mut self, path: &Path, was: Stamp, now: Stamp) -> bool {
        let (Some(old_mode), Some(new_mode)) = (regular_mode(was), regular_mode(now)) else {
            return false;
        };
        let Some(&(seen, Some(old))) = self.seen.get(path) else {
            return false;
        };
        if old_mode != new_mode || seen != was {
            return false;
        }
        let new = self.digest(path);
        self.seen.insert(path.to_owned(), (now, new));
        new == Some(old)
    }

    /// Records the files of this look: each read once more only when its stamp is new; the
    /// paths not watched any more are let go.
    pub(super) fn note(&mut self, files: Vec<(PathBuf, Stamp)>) {
        let mut seen = HashMap::with_capacity(files.len());
        for (path, stamp) in files {
            if regular_mode(stamp).is_none() {
                continue;
            }
            let digest = match self.seen.remove(&path) {
                Some((was, digest)) if was == stamp => digest,
                _ => self.digest(&path),
            };
            seen.insert(path, (stamp, digest));
        }
        self.seen = seen;
    }

    fn digest(&self, path: &Path) -> Option<u64> {
        let file = agentty_sandbox::deputy::open(path).ok()?;
        if file.metadata().ok()?.len() > READ_MAX_BYTES {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(READ_MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
        if bytes.len() as u64 > READ_MAX_BYTES {
            return None;
        }
        let mut hasher = self.key.build_hasher();
        hasher.write(&bytes);
        Some(hasher.finish())
    }
}
