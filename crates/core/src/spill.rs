//! Spill files (SPEC §7.3): the full text of an output too long to return, kept private.
//!
//! Layout: `<state dir>/spill/<session id>/<name>.log`. Directories are 0700 and files 0600,
//! created exclusively with `O_NOFOLLOW`, so a symlink planted at the file's name cannot redirect
//! the write, and a pre-existing directory is only used if it is a real directory we own that
//! nobody else can enter. Spilling is best-effort: every failure is returned as an error the
//! caller reports, never as a failed command.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// Session spill directories untouched for this long are removed at start-up.
pub const SPILL_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// The spill directory of one client session, created on first use.
#[derive(Debug)]
pub struct SpillStore {
    dir: PathBuf,
    ready: OnceLock<Result<(), String>>,
}

impl SpillStore {
    /// `root` is the `spill` directory under the state dir; `session` names this session's
    /// subdirectory (it must be a single path component).
    pub fn new(root: &Path, session: &str) -> Self {
        Self {
            dir: root.join(session),
            ready: OnceLock::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates `<dir>/<name>.log` for exclusive writing.
    pub fn create(&self, name: &str) -> io::Result<SpillFile> {
        self.ready
            .get_or_init(|| ensure_private_leaf(&self.dir).map_err(|e| e.to_string()))
            .clone()
            .map_err(io::Error::other)?;
        let path = self.dir.join(format!("{name}.log"));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        Ok(SpillFile {
            path,
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            written: 0,
            reserved: 0,
            can_reserve: true,
        })
    }

    /// Removes the whole session directory (used when a session is deleted).
    pub fn remove(&self) -> io::Result<()> {
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
    out: BufWriter<File>,
    /// Bytes written (through the buffer).
    written: u64,
    /// Bytes of disk reserved from offset 0.
    reserved: u64,
    /// False once the filesystem refused a reservation (no support, no space): plain writes.
    can_reserve: bool,
}

impl SpillFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(&mut self, text: &str) -> io::Result<()> {
        let end = self.written + text.len() as u64;
        if self.can_reserve && end > self.reserved {
            self.reserve(end);
        }
        self.out.write_all(text.as_bytes())?;
        self.written = end;
        Ok(())
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
        self.out.flush()
    }

    /// Flushes, and gives back unused reserved space (a later write reserves again).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
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
        if self.out.flush().is_ok() {
            self.release();
        }
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

/// Like [`ensure_private_dir`], and the directory itself must be closed to group and others.
fn ensure_private_leaf(dir: &Path) -> io::Result<()> {
    ensure_private_dir(dir)?;
    let mode = fs::symlink_metadata(dir)?.mode();
    if mode & 0o077 != 0 {
        return Err(io::Error::other(format!(
            "{} has mode {:o}; expected 0700",
            dir.display(),
            mode & 0o777
        )));
    }
    Ok(())
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

/// Removes session directories under `root` untouched for longer than `retention`.
/// Returns how many were removed.
pub fn prune(root: &Path, retention: Duration) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > retention);
        if meta.is_dir() && old && fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}
