//! What a watched path looked like, cheaply: one `lstat`, and a `stat` of what a symlink leads
//! to, so a file or directory reached through a link is seen changing even when the link is not.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Device, inode, type and permissions, size, change time (ns).
///
/// The change time, not the modification time: a command can put an mtime back (`touch -d`)
/// after an edit of the same length or a new hook, and the stamp would match; the kernel sets
/// the ctime on every write and every change of the times, and no call sets it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Meta {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    ctime_ns: i64,
}

impl Meta {
    fn of(m: &std::fs::Metadata) -> Self {
        Meta {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            size: m.size(),
            ctime_ns: m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        }
    }

    fn kind(self) -> Kind {
        match self.mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::File,
        }
    }
}

/// A path's own metadata and, when it is a symlink, its target's (`None` for a dangling link).
/// `None`: absent.
pub(super) type Stamp = Option<(Meta, Option<Meta>)>;

pub(super) fn stamp(path: &Path) -> Stamp {
    let own = std::fs::symlink_metadata(path).ok()?;
    let target = own
        .file_type()
        .is_symlink()
        .then(|| std::fs::metadata(path).ok().map(|m| Meta::of(&m)))
        .flatten();
    Some((Meta::of(&own), target))
}

/// Whether what `stamp` saw (itself, or what its symlink leads to) changed within `window` of
/// `at`, or after it.
pub(super) fn changed_since(
    stamp: Stamp,
    at: std::time::SystemTime,
    window: std::time::Duration,
) -> bool {
    let Ok(now) = at.duration_since(std::time::UNIX_EPOCH) else {
        return true;
    };
    let recent = |m: Meta| {
        let changed = std::time::Duration::from_nanos(u64::try_from(m.ctime_ns).unwrap_or(0));
        now.saturating_sub(changed) < window
    };
    stamp.is_some_and(|(own, target)| recent(own) || target.is_some_and(recent))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Absent,
    File,
    Dir,
    Symlink,
}

pub(super) fn kind(stamp: Stamp) -> Kind {
    stamp.map_or(Kind::Absent, |(own, _)| own.kind())
}

/// The same file or directory (not another put in its place): only its contents may differ.
pub(super) fn same_object(a: Stamp, b: Stamp) -> bool {
    match (a, b) {
        (Some((a, _)), Some((b, _))) => a.dev == b.dev && a.ino == b.ino && a.kind() == b.kind(),
        (None, None) => true,
        _ => false,
    }
}

/// A directory and the files of known names in it (git's hooks, `info/`'s files, an editor's
/// settings), as last seen. The names are looked for again only when the directory (or, for a
/// symlink, the directory it leads to) changed; the files found are stamped on every look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Listed {
    pub(super) path: PathBuf,
    pub(super) stamp: Stamp,
    pub(super) present: Vec<(&'static str, Stamp)>,
}

impl Listed {
    pub(super) fn read(path: PathBuf, names: &[&'static str], before: Option<&Listed>) -> Listed {
        let stamp = stamp(&path);
        let known: Vec<&'static str> = match before {
            Some(b) if b.path == path && b.stamp == stamp => {
                b.present.iter().map(|(n, _)| *n).collect()
            }
            _ if stamp.is_none() => Vec::new(),
            _ => names.to_vec(),
        };
        let present = known
            .into_iter()
            .filter_map(|name| {
                let s = self::stamp(&path.join(name));
                s.map(|_| (name, s))
            })
            .collect();
        Listed {
            path,
            stamp,
            present,
        }
    }

    /// The stamp `name` had here, when it was there.
    pub(super) fn had(&self, name: &str) -> Option<Stamp> {
        self.present
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }
}

/// How a path that changed kind reads now: "now a symlink to …", "now a directory", ….
pub(super) fn now_is(path: &Path, stamp: Stamp) -> String {
    match kind(stamp) {
        Kind::Symlink => format!(
            "now a symlink to {}",
            std::fs::read_link(path).map_or_else(|_| "?".to_owned(), |t| shown(&t))
        ),
        Kind::Dir => "now a directory".to_owned(),
        Kind::File => "now a file".to_owned(),
        Kind::Absent => "removed".to_owned(),
    }
}

/// A path as it is shown to the model, the log and the view: control characters and bidi
/// overrides escaped, since a command chose the name (a newline in it would forge a log line).
pub(crate) fn shown(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .flat_map(|c| {
            let hidden =
                c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            let escaped: Vec<char> = if hidden {
                c.escape_unicode().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}
