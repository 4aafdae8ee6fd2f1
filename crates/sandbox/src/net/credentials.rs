//! The file-system credentials of a confined command's thread, taken on by the supervisor's
//! thread while it opens and connects a unix socket's path for it (`unix.rs`), so the kernel
//! judges file modes on the way as it would judge the command's own connect: a root server's
//! command that changed its user (`setpriv --reuid`) or dropped `CAP_DAC_OVERRIDE` is refused a
//! socket in a directory it may not enter, or a socket file it may not write.
//!
//! What the kernel looks at when a thread resolves a path and connects to a socket file: its
//! file-system user and group, its supplementary groups, and the effective capabilities that pass
//! file modes. Each is the calling thread's own in the kernel, and set here by raw system calls,
//! which change this thread alone (glibc's `setgroups` would change every thread of the server).
//! Capabilities a command holds in a user namespace of its own count for nothing here: the
//! kernel counts them only for files whose owners that namespace maps.

use super::listening::{Home, same_user_namespace};

/// `CAP_DAC_OVERRIDE` and `CAP_DAC_READ_SEARCH`: what passes a file's mode, or a directory's.
const PASS_FILE_MODES: u64 = (1 << 1) | (1 << 2);

/// A thread's credentials that file modes are judged by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileCredentials {
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
    /// Effective capabilities, of [`PASS_FILE_MODES`] only.
    passes: u64,
}

/// This thread, with a command's credentials until dropped; then with its own again.
#[derive(Debug)]
pub(super) struct TakenOn {
    own: FileCredentials,
    effective: u64,
}

impl Drop for TakenOn {
    fn drop(&mut self) {
        // Raising an effective capability back needs only that it stayed permitted, and the
        // file-system ids need CAP_SETUID and CAP_SETGID, which were effective to change them.
        let _ = set_effective(self.effective);
        set_fsuid(self.own.uid);
        set_fsgid(self.own.gid);
        let _ = set_groups(&self.own.groups);
    }
}

/// This thread takes on `theirs` (a command thread's, [`of_thread`]) until the value returned
/// is dropped; `None` when they are this thread's already (a server that is not root: its
/// commands' are its own). EACCES when they could not be taken on: the connect is refused
/// rather than made with the server's.
pub(super) fn take_on(theirs: &FileCredentials) -> Result<Option<TakenOn>, i32> {
    let effective = effective().ok_or(libc::EACCES)?;
    let before = own(effective).ok_or(libc::EACCES)?;
    if *theirs == before {
        return Ok(None);
    }
    let taken = TakenOn {
        own: before,
        effective,
    };
    set_groups(&theirs.groups).map_err(|_| libc::EACCES)?;
    set_fsgid(theirs.gid);
    set_fsuid(theirs.uid);
    // A file-system user other than root has just lost the capabilities that pass file modes
    // (the kernel clears them); the command's are given back, or its root's taken away.
    let now = self::effective().ok_or(libc::EACCES)?;
    set_effective((now & !PASS_FILE_MODES) | (effective & theirs.passes))
        .map_err(|_| libc::EACCES)?;
    let took = self::effective().ok_or(libc::EACCES)?;
    if own(took).as_ref() != Some(theirs) {
        return Err(libc::EACCES);
    }
    Ok(Some(taken))
}

/// Thread `pid`'s file credentials, from `/proc/<pid>/status` (ids as the server's user
/// namespace sees them). A thread waiting on the supervisor cannot change its own; EACCES when
/// they cannot be read.
pub(super) fn of_thread(pid: u32, home: Home) -> Result<FileCredentials, i32> {
    read_status(pid, home).ok_or(libc::EACCES)
}

fn read_status(pid: u32, home: Home) -> Option<FileCredentials> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
    };
    // Real, effective, saved, file system.
    let fs_id = |name: &str| line(name)?.split_whitespace().nth(3)?.parse().ok();
    let groups = line("Groups:")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<Vec<u32>, _>>()
        .ok()?;
    let effective = u64::from_str_radix(line("CapEff:")?, 16).ok()?;
    let passes = if same_user_namespace(pid, home) {
        effective & PASS_FILE_MODES
    } else {
        0
    };
    Some(FileCredentials {
        uid: fs_id("Uid:")?,
        gid: fs_id("Gid:")?,
        groups: sorted(groups),
        passes,
    })
}

/// This thread's file credentials, given its effective capabilities.
fn own(effective: u64) -> Option<FileCredentials> {
    // SAFETY: getgroups with a zero size only counts.
    let count = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
    let mut groups = vec![0; usize::try_from(count).ok()?];
    // SAFETY: room for `count` gids.
    let count = unsafe { libc::getgroups(count, groups.as_mut_ptr()) };
    groups.truncate(usize::try_from(count).ok()?);
    Some(FileCredentials {
        uid: set_fsuid(u32::MAX),
        gid: set_fsgid(u32::MAX),
        groups: sorted(groups),
        passes: effective & PASS_FILE_MODES,
    })
}

fn sorted(mut groups: Vec<u32>) -> Vec<u32> {
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// `setfsuid` of this thread; returns the one before. `u32::MAX` (not an id) only reads it.
fn set_fsuid(uid: u32) -> u32 {
    // SAFETY: setfsuid takes an integer and cannot fail but by leaving the id as it was.
    unsafe { libc::syscall(libc::SYS_setfsuid, uid) as u32 }
}

/// `setfsgid` of this thread; returns the one before. `u32::MAX` (not an id) only reads it.
fn set_fsgid(gid: u32) -> u32 {
    // SAFETY: as for setfsuid.
    unsafe { libc::syscall(libc::SYS_setfsgid, gid) as u32 }
}

/// The supplementary groups of this thread alone (the raw call; glibc's changes every thread).
fn set_groups(groups: &[u32]) -> std::io::Result<()> {
    // SAFETY: a live slice of gids and its length.
    let rc = unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn effective() -> Option<u64> {
    crate::caps::effective()
}

fn set_effective(effective: u64) -> std::io::Result<()> {
    crate::caps::set_effective(effective)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_takes_on_another_threads_credentials_and_gives_them_back() {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::geteuid() }, 0, "needs root, as CI runs");
        let home = super::super::listening::home();
        let (ready, wait) = std::sync::mpsc::channel();
        let (done, end) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            // This thread alone becomes nobody, in its file-system ids and groups.
            set_groups(&[65534]).unwrap();
            set_fsgid(65534);
            set_fsuid(65534);
            // SAFETY: gettid has no preconditions.
            ready.send(unsafe { libc::gettid() } as u32).unwrap();
            end.recv().ok();
        });
        let tid = wait.recv().unwrap();
        let before = own(effective().unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        {
            let taken = take_on(&of_thread(tid, home).unwrap()).unwrap();
            assert!(taken.is_some());
            let now = own(effective().unwrap()).unwrap();
            assert_eq!(
                (now.uid, now.gid, &now.groups[..]),
                (65534, 65534, &[65534][..])
            );
            assert_eq!(now.passes, 0);
            // Root's directory, mode 0700: refused to nobody.
            let denied = std::fs::read_dir(dir.path()).unwrap_err();
            assert_eq!(denied.raw_os_error(), Some(libc::EACCES));
        }
        assert_eq!(own(effective().unwrap()).unwrap(), before);
        std::fs::read_dir(dir.path()).unwrap();
        // Another thread's are as they were: nothing of the change reached it.
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        assert!(take_on(&of_thread(me, home).unwrap()).unwrap().is_none());
        done.send(()).unwrap();
        other.join().unwrap();
    }
}
