//! Spill files (docs/BEHAVIOUR.md §7.2): the full text of an output too long to return, kept private.
//!
//! Layout: `<state dir>/spill/<server>/<session>/<name>.log` (the server's session name, then
//! the client session's: one directory per server, which its confined commands alone may read,
//! docs/BEHAVIOUR.md §5). Directories are 0700 and files 0600.
//! A confined command may be able to write near the state dir (it may sit under a temp dir), and
//! the server writing there is unconfined, so nothing it writes follows a symlink: the session
//! directory is opened once, with no symlink in any component of its (canonical) path, and kept
//! open; each file is created relative to that directory fd, exclusively, with `O_NOFOLLOW`. A
//! directory swapped for a symlink afterwards changes nothing; one swapped before the first spill
//! makes the spill fail, and the caller says so. A pre-existing directory is only used if it is
//! a real directory we own that nobody else can enter. Spilling is best-effort: every failure
//! is returned as an error the caller reports, never as a failed command.

use std::ffi::CString;
use std::fs::{self, DirBuilder, File};
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

/// Session spill directories untouched for this long are removed at start-up.
pub const SPILL_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A spill file's write buffer. 16 KiB, not 64: a chunk as large as the buffer is written
/// straight through (a pipe's reads are up to 64 KiB), so a larger buffer only batched small
/// writes, and eight jobs running at once left 384 KiB more in the allocator's free lists after
/// they ended (`cargo bench -p agentty --bench memory`: 32 kept jobs 23.8–24.0 MiB, was
/// 24.2–25.8 under the same load).
const WRITE_BUFFER_BYTES: usize = 16 * 1024;

/// The spill directory of one client session, created on first use.
#[derive(Debug)]
pub struct SpillStore {
    dir: PathBuf,
    /// The session directory, opened on first use and kept open.
    ready: OnceLock<Result<Arc<OwnedFd>, String>>,
}

impl SpillStore {
    /// `root` is the `spill` directory under the state dir; `session` names this session's
    /// subdirectory (it must be a single path component). Symlinks in the part of `root` that
    /// exists now are resolved now, when nothing has run yet; none is followed later.
    pub fn new(root: &Path, session: &str) -> Self {
        Self {
            dir: canonical_prefix(root).join(session),
            ready: OnceLock::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates `<dir>/<name>.log` for exclusive writing, relative to the directory fd.
    pub fn create(&self, name: &str) -> io::Result<SpillFile> {
        let dir = self
            .ready
            .get_or_init(|| {
                open_private_leaf(&self.dir)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| io::Error::other(e.clone()))?
            .clone();
        let file_name = format!("{name}.log");
        if file_name.contains('/') {
            return Err(io::Error::other(format!("bad spill name {name:?}")));
        }
        let c_name = CString::new(file_name.as_bytes()).map_err(io::Error::other)?;
        // SAFETY: openat on a directory fd we own with a NUL-terminated single component; the
        // returned fd is new and owned by the File.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c_name.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd from openat.
        let file = unsafe { File::from_raw_fd(fd) };
        let path = self.dir.join(file_name);
        Ok(SpillFile {
            path,
            dir,
            name: c_name,
            failed: false,
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            written: 0,
            reserved: 0,
            can_reserve: true,
        })
    }

    /// Removes the whole session directory (used when a session is deleted), only while its
    /// path still leads, with no symlink, to the directory this store created and holds open.
    pub fn remove(&self) -> io::Result<()> {
        let Some(Ok(held)) = self.ready.get() else {
            return Ok(()); // nothing was ever written
        };
        let now = match open_no_symlinks(&self.dir) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if identity(held)? != identity(&now)? {
            return Err(io::Error::other(format!(
                "{} is no longer the spill directory this session made; left alone",
                self.dir.display()
            )));
        }
        match fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// Disk space is reserved ahead of the writes (as much as was written so far, between these
/// bounds), so the filesystem allocates blocks in large extents instead of page by page: on
/// ext4 that is about 40% of the CPU a flood's spill costs (800 MB in 256 KiB writes: 126 ms
/// without, 76 ms with 32 MiB steps). What was reserved past the end is given back when the
/// file is finished or dropped.
const RESERVE_MIN_BYTES: u64 = 1024 * 1024;
const RESERVE_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// An open spill file.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    /// The directory it is in, and its name there: a failed file is removed through them.
    dir: Arc<OwnedFd>,
    name: CString,
    /// A write or flush failed: the file is incomplete and is removed when dropped.
    failed: bool,
    out: BufWriter<File>,
    /// Bytes written (through the buffer).
    written: u64,
    /// Bytes of disk reserved from offset 0.
    reserved: u64,
    /// False once the filesystem refused a reservation (no support, no space): plain writes.
    can_reserve: bool,
}

/// How to open a spill file again for reading: by name in its directory, held open since it was
/// made, never by its path (a directory on the way could have been swapped meanwhile).
#[derive(Debug, Clone)]
pub struct SpillHandle {
    dir: Arc<OwnedFd>,
    name: CString,
}

impl SpillHandle {
    /// The file, opened read-only; a link in its place is refused.
    pub fn open(&self) -> io::Result<File> {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: openat on a directory fd we own with a NUL-terminated single component; the
        // fd returned is new and ours.
        let fd = unsafe {
            libc::openat(
                self.dir.as_raw_fd(),
                self.name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just opened and is owned by nobody else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Removes the file, by name in its directory.
    pub fn remove(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlinkat on a directory fd we own with a NUL-terminated single component.
        unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.name.as_ptr(), 0) };
    }
}

impl SpillFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How to open this file again once it is finished ([`SpillHandle`]).
    pub fn handle(&self) -> SpillHandle {
        SpillHandle {
            dir: Arc::clone(&self.dir),
            name: self.name.clone(),
        }
    }

    pub fn write(&mut self, text: &str) -> io::Result<()> {
        let end = self.written + text.len() as u64;
        if self.can_reserve && end > self.reserved {
            self.reserve(end);
        }
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            return Err(self.fail(e));
        }
        self.written = end;
        Ok(())
    }

    /// Marks the file incomplete (removed when dropped) and says so in the error.
    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed = true;
        io::Error::new(e.kind(), format!("{e}; the partial file was removed"))
    }

    fn reserve(&mut self, end: u64) {
        use std::os::fd::AsRawFd;
        let step = self.written.clamp(RESERVE_MIN_BYTES, RESERVE_MAX_BYTES);
        let len = step.max(end - self.reserved);
        let (Ok(offset), Ok(len_arg)) = (
            libc::off_t::try_from(self.reserved),
            libc::off_t::try_from(len),
        ) else {
            self.can_reserve = false;
            return;
        };
        // SAFETY: fallocate on a file we own; KEEP_SIZE leaves its size (what readers see)
        // alone, and a failure changes nothing.
        let rc = unsafe {
            libc::fallocate(
                self.out.get_ref().as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                offset,
                len_arg,
            )
        };
        if rc == 0 {
            self.reserved += len;
        } else {
            self.can_reserve = false;
        }
    }

    /// Gives back the disk reserved past the end of what was written (the buffer is flushed).
    fn release(&mut self) {
        if self.reserved <= self.written {
            return;
        }
        // Truncating to the current size frees the blocks past it (punching a hole past the
        // end does not, on ext4). The size does not change.
        if self.out.get_ref().set_len(self.written).is_ok() {
            self.reserved = self.written;
        }
    }

    /// Writes out what is buffered, so a reader of the file sees everything written so far.
    /// Keeps the disk reserved ahead (a running job goes on writing).
    pub fn write_out(&mut self) -> io::Result<()> {
        self.out.flush().map_err(|e| self.fail(e))
    }

    /// Flushes, and gives back unused reserved space (a later write reserves again).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush().map_err(|e| self.fail(e))?;
        self.release();
        Ok(())
    }

    /// Flushes, gives back unused reserved space, and returns the path.
    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.flush()?;
        Ok(self.path.clone())
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        // Only after a complete flush: truncating to `written` must never extend the file.
        if !self.failed && self.out.flush().is_ok() {
            self.release();
            return;
        }
        // Incomplete: a partial file would pass for the whole output. Removed by name in the
        // directory held open, so nothing but our own file can be hit.
        // SAFETY: unlinkat on a directory fd we own with a NUL-terminated single component.
        unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.name.as_ptr(), 0) };
    }
}

/// Creates `dir` (and missing parents) with mode 0700, or checks that an existing one is a real
/// directory owned by us and closed to others.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match DirBuilder::new().recursive(false).mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                ensure_private_dir(parent)?;
            }
            return match DirBuilder::new().mode(0o700).create(dir) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => check_private_dir(dir),
                other => other,
            };
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private_dir(dir)
}

/// Like [`ensure_private_dir`], then opens the directory with no symlink in any component
/// (`openat2` with `RESOLVE_NO_SYMLINKS`) and checks, on the open fd, that it is ours and closed
/// to group and others.
fn open_private_leaf(dir: &Path) -> io::Result<OwnedFd> {
    ensure_private_dir(dir)?;
    let fd = open_no_symlinks(dir)?;
    // SAFETY: fstat fills a zeroed stat for an fd we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if st.st_uid != nix::unistd::geteuid().as_raw() {
        return Err(io::Error::other(format!(
            "{} is owned by another user",
            dir.display()
        )));
    }
    if st.st_mode & 0o077 != 0 {
        return Err(io::Error::other(format!(
            "{} has mode {:o}; expected 0700",
            dir.display(),
            st.st_mode & 0o777
        )));
    }
    Ok(fd)
}

/// Device and inode of an open file.
fn identity(fd: &OwnedFd) -> io::Result<(u64, u64)> {
    // SAFETY: fstat fills a zeroed stat for an fd we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.st_dev, st.st_ino))
}

/// Opens directory `dir` refusing a symlink anywhere in its path.
fn open_no_symlinks(dir: &Path) -> io::Result<OwnedFd> {
    let c_path = CString::new(dir.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: open_how is plain data; zeroed then filled.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: openat2 reads the path and `size_of::<open_how>()` bytes of `how`.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            &raw const how,
            size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ELOOP) {
            return Err(io::Error::other(format!(
                "{} has a symlink in its path; spill files are never written through one",
                dir.display()
            )));
        }
        return Err(e);
    }
    // SAFETY: a fresh fd from openat2.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `path` with symlinks resolved in the part of it that exists; a relative one is taken from
/// the current directory first (review 39 M2: a relative state dir that did not exist yet stayed
/// relative, and no check found it inside the workspace).
pub fn canonical_prefix(path: &Path) -> PathBuf {
    // An empty path (the parent of a bare `tok`) is the current directory.
    let here = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    let absolute = std::path::absolute(here).unwrap_or_else(|_| path.to_path_buf());
    let path = absolute.as_path();
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            return missing
                .iter()
                .rev()
                .fold(canonical, |acc: PathBuf, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn check_private_dir(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    // Parents such as ~/.local/state are the user's to shape; only our own leaf directories
    // must be private, and those we always create 0700.
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(io::Error::other(format!(
            "{} is owned by another user",
            dir.display()
        )));
    }
    Ok(())
}

/// Removes the directories under `root` (a server's, holding one per session; or a session's,
/// as an older agentty laid them out) that nothing in, one level down, changed for longer than
/// `retention`. Returns how many were removed.
///
/// `root` is opened with no symlink in its path, and what is under it is named through that open
/// directory (`/proc/self/fd/N/<name>`): a spill root swapped for a symlink (a state dir commands
/// could write, as when the workspace holds home) removes nothing outside it.
pub fn prune(root: &Path, retention: Duration) -> usize {
    let Ok(dir) = open_no_symlinks(root) else {
        return 0;
    };
    let held = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    let Ok(entries) = fs::read_dir(&held) else {
        return 0;
    };
    let now = SystemTime::now();
    let old = |meta: &fs::Metadata| {
        meta.modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > retention)
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !meta.is_dir() || !old(&meta) {
            continue;
        }
        // A server's directory changes only when a session's is made or removed in it; its
        // sessions' own directories (changed by each file made in them) say whether it is still
        // at work. Files (an older agentty's session directory holds its spill files) do not.
        let inner_old = fs::read_dir(entry.path()).is_ok_and(|inner| {
            inner.flatten().all(|e| {
                e.path()
                    .symlink_metadata()
                    .is_ok_and(|m| !m.is_dir() || old(&m))
            })
        });
        if inner_old && fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Removes the directories under `root` (the shells' start-up root) that servers whose watchdog
/// is gone left behind (`<session>` and its callers' `<session>.c<n>`): a server removes its own
/// when it ends, one that was killed cannot. A live server's, and a name that is not a
/// session's, are left alone; `root` is opened as [`prune`] opens it. Returns how many were removed.
pub fn remove_dead_servers_dirs(root: &Path) -> usize {
    let Ok(dir) = open_no_symlinks(root) else {
        return 0;
    };
    let held = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    let Ok(entries) = fs::read_dir(&held) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(session) = name.to_str().and_then(|n| n.split('.').next()) else {
            continue;
        };
        if !crate::runs::is_session_name(session) || crate::sweep::session_alive(session) {
            continue;
        }
        let is_dir = entry.path().symlink_metadata().is_ok_and(|m| m.is_dir());
        if is_dir && fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that fails (here on `/dev/full`, as on a full disk) leaves no partial file: the
    /// file is removed, through the directory fd, when the spill is dropped.
    #[test]
    fn a_failed_spill_leaves_no_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let name = CString::new("c1.log").unwrap();
        std::fs::write(dir.path().join("c1.log"), "partial").unwrap();
        let dir_fd = open_no_symlinks(dir.path()).unwrap();
        let mut file = SpillFile {
            path: dir.path().join("c1.log"),
            dir: Arc::new(dir_fd),
            name,
            failed: false,
            out: BufWriter::with_capacity(
                16,
                File::options().write(true).open("/dev/full").unwrap(),
            ),
            written: 0,
            reserved: 0,
            can_reserve: false,
        };
        let err = file.write(&"x".repeat(64)).unwrap_err();
        assert!(
            err.to_string().contains("the partial file was removed"),
            "{err}"
        );
        drop(file);
        assert!(!dir.path().join("c1.log").exists());
    }

    /// A session directory older than the retention, and a fresh one, under `root`.
    fn sessions_in(root: &Path) -> (PathBuf, PathBuf) {
        let (old, new) = (root.join("1-old"), root.join("2-new"));
        for dir in [&old, &new] {
            fs::create_dir_all(dir.join("sub")).unwrap();
            fs::write(dir.join("sub/c1.log"), "x").unwrap();
        }
        let ten_days_ago = SystemTime::now() - Duration::from_secs(10 * 24 * 3600);
        for dir in [old.join("sub"), old.clone()] {
            File::open(&dir)
                .unwrap()
                .set_modified(ten_days_ago)
                .unwrap();
        }
        (old, new)
    }

    /// A server's directory untouched for long, whose session's directory got a spill file
    /// lately, is at work: kept.
    #[test]
    fn prune_keeps_a_servers_directory_whose_session_is_at_work() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("spill");
        let (old, _) = sessions_in(&root);
        File::open(old.join("sub"))
            .unwrap()
            .set_modified(SystemTime::now())
            .unwrap();
        assert_eq!(prune(&root, Duration::from_secs(7 * 24 * 3600)), 0);
        assert!(old.exists());
    }

    #[test]
    fn prune_removes_old_sessions_and_nothing_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("spill");
        let (old, new) = sessions_in(&root);
        assert_eq!(prune(&root, Duration::from_secs(7 * 24 * 3600)), 1);
        assert!(!old.exists() && new.exists());
        // The spill root, or a directory above it, swapped for a symlink to elsewhere.
        let outside = tmp.path().join("outside");
        let (old, new) = sessions_in(&outside);
        std::fs::remove_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(&outside, &root).unwrap();
        let week = Duration::from_secs(7 * 24 * 3600);
        assert_eq!(prune(&root, week), 0);
        let state = tmp.path().join("state");
        std::os::unix::fs::symlink(tmp.path(), &state).unwrap();
        assert_eq!(prune(&state.join("outside"), week), 0);
        assert!(old.exists() && new.exists(), "pruned through a symlink");
    }

    /// What a killed server left in the shells' root goes at the next start; a live server's
    /// (this process stands for its watchdog) and what is not a server's stay.
    #[test]
    fn a_dead_servers_shell_directories_are_removed_a_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("shells");
        let me = std::process::id() as i32;
        let ticks = crate::tree::start_ticks(me).unwrap();
        let live = format!("1-{me}-{ticks}");
        let dead = format!("1-{me}-{}", ticks + 1);
        for name in [
            &live,
            &format!("{live}.c1"),
            &dead,
            &format!("{dead}.c2"),
            &"notes".to_owned(),
        ] {
            std::fs::create_dir_all(root.join(name).join("shell-abc")).unwrap();
        }
        assert_eq!(remove_dead_servers_dirs(&root), 2);
        let mut left: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [live.clone(), format!("{live}.c1"), "notes".to_owned()]
        );
    }
}
