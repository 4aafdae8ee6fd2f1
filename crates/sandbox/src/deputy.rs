//! The server reading a file a command chose: only what a confined command could read itself.
//!
//! The server reads some files the workspace names (the planted-code watch reads git's config
//! and pointer files, `commondir`, a gitfile's `gitdir:`; the guard reads the script a
//! `BASH_ENV` names) and says what it found in the model's result. It reads them unconfined,
//! and the path is the command's to choose (a symlink, a `commondir` naming any file): an
//! attacker's pass made `.git/commondir` a link to agentty's token file and got its first line
//! back in the warning, and with another caller's token, everything of theirs. So such a read
//! is refused for:
//! - a path kept from confined commands' reads (`unreadable.rs`: the state dir, the token file,
//!   `deny_read`), of any plan this process prepared, by where the opened file really is;
//! - anything but a regular file: a FIFO would hold the server's thread, a device be read;
//! - a file of `/proc` or `/sys`, where the server would see its own process (its environment,
//!   its memory maps) where a command sees its own. (A path through `/proc/self/fd/` reaches a
//!   file the server holds open, judged as that file: by where it is.)

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::unreadable::Unreadable;

/// The hidden paths of every plan prepared in this process, as given: resolved at each read,
/// as Landlock's rules are made again (a symlinked token file rotated, `..data` of a
/// Kubernetes secret, leads elsewhere later).
static KEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Why a file a command chose is not read for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRead {
    /// Nothing there, or the server cannot open it either.
    Missing,
    /// Not a regular file of a real file system.
    NotAFile,
    /// Kept from confined commands' reads.
    Kept,
}

/// The paths `unreadable` keeps from commands are kept from the server's reads for them too.
pub(crate) fn keep(unreadable: &Unreadable) {
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    for hidden in &unreadable.hidden {
        if !kept.contains(&hidden.path) {
            kept.push(hidden.path.clone());
        }
    }
}

/// Opens `path` for reading as a confined command could: never blocking, a regular file only,
/// none kept from commands' reads (by where the opened file is, so no symlink swapped after a
/// check leads elsewhere).
pub fn open(path: &Path) -> Result<File, NotRead> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|_| NotRead::Missing)?;
    if !file.metadata().is_ok_and(|m| m.is_file()) || on_a_pseudo_file_system(&file) {
        return Err(NotRead::NotAFile);
    }
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| NotRead::Kept)?;
    let kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if kept
        .iter()
        .any(|k| real.starts_with(k) || real.starts_with(crate::plan::resolve(k)))
    {
        return Err(NotRead::Kept);
    }
    Ok(file)
}

/// Whether `file` is on `/proc` or `/sys` (or the statfs fails: refused).
fn on_a_pseudo_file_system(file: &File) -> bool {
    // SAFETY: fstatfs fills the zeroed struct it is given for a descriptor we own.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &raw mut fs) } != 0 {
        return true;
    }
    // f_type's type and the constants' differ between targets.
    #[allow(clippy::unnecessary_cast)]
    let (kind, proc, sys) = (
        fs.f_type as i64,
        libc::PROC_SUPER_MAGIC as i64,
        libc::SYSFS_MAGIC as i64,
    );
    kind == proc || kind == sys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unreadable::HiddenWhy;

    #[test]
    fn what_commands_may_not_read_is_not_read_for_them() {
        let dir = tempfile::tempdir().unwrap();
        let hidden = dir.path().join("state");
        std::fs::create_dir(&hidden).unwrap();
        std::fs::write(hidden.join("token"), "secret\n").unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("plain"), "fine\n").unwrap();
        std::os::unix::fs::symlink(hidden.join("token"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", ws.join("environ")).unwrap();
        let fifo = std::ffi::CString::new(ws.join("fifo").into_os_string().into_encoded_bytes());
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.unwrap().as_ptr(), 0o600) }, 0);
        let mut unreadable = Unreadable::default();
        unreadable.hide(hidden.clone(), HiddenWhy::State);
        keep(&unreadable);
        assert!(open(&ws.join("plain")).is_ok());
        assert_eq!(open(&ws.join("link")).err(), Some(NotRead::Kept));
        assert_eq!(open(&hidden.join("token")).err(), Some(NotRead::Kept));
        assert_eq!(open(&ws.join("environ")).err(), Some(NotRead::NotAFile));
        assert_eq!(open(&ws).err(), Some(NotRead::NotAFile));
        assert_eq!(
            open(&ws.join("fifo")).err(),
            Some(NotRead::NotAFile),
            "or it blocked"
        );
        assert_eq!(open(&ws.join("none")).err(), Some(NotRead::Missing));
        // A hidden path that is a symlink, pointed elsewhere after it was kept (a rotated
        // secret): what it leads to now is kept.
        for version in ["v1", "v2"] {
            std::fs::create_dir(dir.path().join(version)).unwrap();
            std::fs::write(dir.path().join(version).join("cred"), version).unwrap();
        }
        let current = dir.path().join("current");
        std::os::unix::fs::symlink("v1", &current).unwrap();
        let mut rotated = Unreadable::default();
        rotated.hide(current.clone(), HiddenWhy::Configured);
        keep(&rotated);
        assert_eq!(open(&dir.path().join("v1/cred")).err(), Some(NotRead::Kept));
        std::fs::remove_file(&current).unwrap();
        std::os::unix::fs::symlink("v2", &current).unwrap();
        assert_eq!(open(&dir.path().join("v2/cred")).err(), Some(NotRead::Kept));
    }
}
