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

/// An open spill file.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl SpillFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(text.as_bytes())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.out.flush()?;
        Ok(self.path)
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
