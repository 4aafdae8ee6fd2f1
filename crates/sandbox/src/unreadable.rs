//! Paths confined commands may not read (docs/BEHAVIOUR.md §5): agentty's own state dir and
//! token file (every MCP and view capability, other sessions' spill files, the run records), and
//! what the user lists in `[sandbox] deny_read` (`~/.aws`, `~/.ssh`).
//!
//! Landlock rules only allow, and a rule on a directory reaches everything beneath it. So a path
//! is kept from reads by handling `ReadFile` and granting it beneath every *sibling* of each
//! directory above a hidden path, never on such a directory itself: for `~/.ssh`, beneath every
//! entry of `/` but `home`, of `/home` but the user's, and of `~` but `.ssh`. One mechanism for
//! every server, root or not: Landlock binds to inodes and applies to root too.
//!
//! `ReadDir` is not handled: `ls ~` needs it on `~`, and a rule there reaches `~/.ssh` too. So
//! names stay listable, contents do not. The writable set stays readable (its rules carry
//! `ReadFile`), which is why a hidden path inside it cannot be hidden (`Plan::hide` leaves it
//! exposed): a rule on a writable directory would reach it.
//!
//! A rule is bound to an inode that exists when the ruleset is made, so an entry made or
//! replaced later in a directory above a hidden path (a new `~/.npmrc`, a `~/.gitconfig` that
//! `git config --global` rewrote by rename) has none. [`Stamp`] notes those directories (inode,
//! change times); before each command the server asks whether one changed and makes the rules
//! again if so. A command that runs on (a shell, a job) keeps the rules it started with.
//!
//! The stamp holds each directory open (`O_PATH`) and looks at it through that descriptor: a
//! look by path walked `/proc/<pid>/root` of the commands' namespace before every command, 15–19
//! µs for the 4 directories above `~/.local/state/agentty` on a loaded 2-CPU VM, against 1.6–2.6
//! µs for 4 `fstat`s (a C loop of 100 000 looks, three runs). A descriptor follows its
//! directory, not its path; what changes where a path leads (a directory above replaced,
//! renamed, made or removed) changes the directory it is in, which is held too, up to `/`. A
//! mount over one of them is not seen, as the look by path saw it: what lies under a mount made
//! later has no rules, so it is refused, never granted.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::SandboxError;
use crate::plan::resolve;

/// Why a path is kept from reads: said on the `[sandbox]` line and in a refused read's note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HiddenWhy {
    /// agentty's state dir: the token, other sessions' spill files, the run records, the view's
    /// sockets.
    State,
    /// The HTTP token file, where it is not in the state dir.
    Token,
    /// The user's `[sandbox] deny_read`.
    Configured,
}

/// A path kept from reads, as given (absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenPath {
    pub path: PathBuf,
    pub why: HiddenWhy,
}

/// What confined commands may not read, and the few places inside it they may.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unreadable {
    pub hidden: Vec<HiddenPath>,
    /// Directories inside a hidden path that stay readable: this server's own spill files, which
    /// results tell the model to read with `sed -n`.
    pub readable: Vec<PathBuf>,
    /// Where the rules' paths are opened: `/proc/<pid>/root` of a process in the mount namespace
    /// confined commands run in (its `/proc` is another instance, with another inode), or `None`
    /// for this process's own view.
    pub seen_from: Option<PathBuf>,
}

/// Why a `[sandbox] deny_read` entry cannot be honoured under `plan` with these `roots` (the
/// workspace and `--add-dir` roots), in words for the user.
pub fn check_deny_read(path: &Path, plan: &crate::Plan, roots: &[PathBuf]) -> Result<(), String> {
    if !path.is_absolute() {
        return Err(format!(
            "{} is not an absolute path (a path in home may start with ~/)",
            path.display()
        ));
    }
    let real = resolve(path);
    if real.parent().is_none() {
        return Err("/ would hide everything".to_owned());
    }
    if let Some(w) = plan.writable().iter().find(|w| real.starts_with(&w.path)) {
        return Err(format!(
            "{} is inside {} ({}), which commands may write and so read: a path can be kept \
             from reads only outside the writable set",
            path.display(),
            w.path.display(),
            w.why
        ));
    }
    if let Some(root) = roots.iter().find(|r| resolve(r).starts_with(&real)) {
        return Err(format!(
            "{} holds the root {}, which commands must read",
            path.display(),
            root.display()
        ));
    }
    Ok(())
}

impl Unreadable {
    pub fn is_empty(&self) -> bool {
        self.hidden.is_empty()
    }

    /// Keeps `path` from reads, for `why`.
    pub fn hide(&mut self, path: PathBuf, why: HiddenWhy) {
        if !self.hidden.iter().any(|h| h.path == path) {
            self.hidden.push(HiddenPath { path, why });
        }
    }

    /// The hidden path that `path` is (or lies in), unless it lies in a readable exception.
    /// Symlinks are resolved as the kernel would, on the longest prefix that exists.
    pub fn hides(&self, path: &Path) -> Option<&HiddenPath> {
        let real = resolve(path);
        if self.readable.iter().any(|r| real.starts_with(resolve(r))) {
            return None;
        }
        self.hidden
            .iter()
            .find(|h| real.starts_with(resolve(&h.path)))
    }

    /// The hidden paths, resolved, none inside another, never `/`.
    fn resolved(&self) -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = self
            .hidden
            .iter()
            .map(|h| resolve(&h.path))
            .filter(|p| p.parent().is_some())
            .collect();
        all.sort();
        let mut out: Vec<PathBuf> = Vec::with_capacity(all.len());
        for p in all {
            if !out.iter().any(|kept| p.starts_with(kept)) {
                out.push(p);
            }
        }
        out
    }

    /// `path` as the commands see it (under [`Unreadable::seen_from`]).
    fn seen(&self, path: &Path) -> PathBuf {
        match &self.seen_from {
            Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
            None => path.to_path_buf(),
        }
    }

    /// The read rules as of now, each handed to `grant` with its path (as the plan names it)
    /// as soon as it is opened, so one descriptor is open at a time (a home of thousands of
    /// entries, or a server started with a low file limit, must not need as many): every
    /// sibling of each directory above a hidden path, and the readable exceptions. Returns the
    /// stamp of those directories, taken first, so a change made while they are listed shows as
    /// a change.
    pub(crate) fn rules(
        &self,
        grant: &mut dyn FnMut(&Path, OwnedFd) -> Result<(), SandboxError>,
    ) -> Result<Stamp, SandboxError> {
        let hidden = self.resolved();
        let above: std::collections::BTreeSet<PathBuf> = hidden
            .iter()
            .flat_map(|p| p.ancestors().skip(1).map(Path::to_path_buf))
            .collect();
        let stamp = Stamp::take(above.iter().map(|dir| self.seen(dir)).collect());
        for dir in &above {
            let seen = self.seen(dir);
            let entries = match std::fs::read_dir(&seen) {
                Ok(entries) => entries,
                // Not there (yet): nothing under it to grant or to hide. Its parent is in the
                // stamp, so its making is seen.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(SandboxError::ListHidden {
                        path: dir.clone(),
                        source,
                    });
                }
            };
            for entry in entries.flatten() {
                let path = dir.join(entry.file_name());
                if above.contains(&path) || hidden.contains(&path) {
                    continue;
                }
                // A symlink gets no rule: what it leads to is read by its own path, granted or
                // not there (a link to `~/.ssh` must not grant `~/.ssh`).
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_symlink() {
                    continue;
                }
                if let Some(fd) = open_location(&seen.join(entry.file_name()))? {
                    grant(&path, fd)?;
                }
            }
        }
        for dir in &self.readable {
            let dir = resolve(dir);
            if let Some(fd) = open_location(&self.seen(&dir))? {
                grant(&dir, fd)?;
            }
        }
        Ok(stamp)
    }
}

/// `path` opened as a location only (`O_PATH`), not following a final symlink; `None` when it
/// went away meanwhile, became a symlink, or is out of this process's reach (then also out of
/// its commands'). Any other failure (out of descriptors, say) is an error: a rule left out
/// would hide the entry, so a ruleset made that way must not replace the latest.
fn open_location(path: &Path) -> Result<Option<OwnedFd>, SandboxError> {
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(file) => Ok(Some(OwnedFd::from(file))),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EACCES | libc::EPERM)
            ) =>
        {
            Ok(None)
        }
        Err(source) => Err(SandboxError::OpenPath {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// How long after a directory changed its stamp is trusted: timestamps may come from a coarse
/// clock (a tick of a few milliseconds), so a second change within the tick of the first can
/// leave the same time; a stamp taken that soon after a change is made again at the next look.
const SETTLED_AFTER: Duration = Duration::from_millis(50);

/// The directories above the hidden paths as they were when the rules were made: device, inode
/// and change times, or absent; each held open where it could be.
#[derive(Debug)]
pub(crate) struct Stamp {
    dirs: Vec<(PathBuf, Option<DirStamp>, Option<OwnedFd>)>,
    /// Whether some directory had changed just before: then the stamp is not trusted.
    unsettled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl DirStamp {
    fn of(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|m| Self::from(&m))
    }

    /// The stamp of what `fd` holds (an `fstat`, no path walked).
    fn of_fd(fd: &OwnedFd) -> Option<Self> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes a `stat` into `st` for a live fd we own.
        if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: fstat succeeded, so it filled `st`.
        let st = unsafe { st.assume_init() };
        Some(DirStamp {
            dev: st.st_dev,
            ino: st.st_ino,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        })
    }

    fn from(m: &std::fs::Metadata) -> Self {
        DirStamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// Changed within [`SETTLED_AFTER`] of `now` (or in the future of it).
    fn recent(&self, now: SystemTime) -> bool {
        let Ok(since_epoch) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return true;
        };
        let changed = Duration::new(
            u64::try_from(self.ctime.0).unwrap_or(0),
            u32::try_from(self.ctime.1).unwrap_or(0),
        );
        since_epoch.saturating_sub(changed) < SETTLED_AFTER
    }
}

/// `dir` held open as a location only (`O_PATH`, not following a final symlink), and its stamp
/// taken through that descriptor; without a descriptor (absent, or none to spare) the stamp is
/// taken by path, and so is every later look at it.
fn hold(dir: &Path) -> (Option<DirStamp>, Option<OwnedFd>) {
    let held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(dir)
        .ok()
        .map(OwnedFd::from);
    match held {
        Some(fd) => match DirStamp::of_fd(&fd) {
            Some(stamp) => (Some(stamp), Some(fd)),
            None => (DirStamp::of(dir), None),
        },
        None => (DirStamp::of(dir), None),
    }
}

impl Stamp {
    fn take(dirs: Vec<PathBuf>) -> Self {
        let now = SystemTime::now();
        let dirs: Vec<(PathBuf, Option<DirStamp>, Option<OwnedFd>)> = dirs
            .into_iter()
            .map(|d| {
                let (stamp, fd) = hold(&d);
                (d, stamp, fd)
            })
            .collect();
        let unsettled = dirs
            .iter()
            .any(|(_, s, _)| s.is_some_and(|s| s.recent(now)));
        Stamp { dirs, unsettled }
    }

    /// The same directories as they are now.
    pub(crate) fn retaken(&self) -> Self {
        Stamp::take(self.dirs.iter().map(|(d, _, _)| d.clone()).collect())
    }

    /// Whether every directory is as it was: one `fstat` each of those held open, one `lstat`
    /// of the others.
    pub(crate) fn is_current(&self) -> bool {
        !self.unsettled
            && self.dirs.iter().all(|(d, s, fd)| match fd {
                Some(fd) => DirStamp::of_fd(fd) == *s,
                None => DirStamp::of(d) == *s,
            })
    }
}

#[cfg(test)]
#[path = "unreadable_tests.rs"]
mod tests;
