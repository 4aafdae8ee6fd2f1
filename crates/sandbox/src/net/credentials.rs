//! The credentials of a confined command's thread, taken on by the supervisor's thread while
//! it opens and connects a unix socket's path for it (`unix.rs`), so the kernel judges the
//! connect as it would judge the command's own: file modes on the way (a root server's command
//! that changed its user, `setpriv --reuid`, or dropped `CAP_DAC_OVERRIDE`, is refused a
//! socket in a directory it may not enter, or a socket file it may not write), and what the
//! listener is told of its peer (`SO_PEERCRED`'s user and group, `SO_PEERGROUPS`). Not the
//! peer's pid: the kernel gives the server's, which a command in a PID namespace sees as 0.
//!
//! What the kernel looks at: the thread's effective and file-system user and group, its
//! supplementary groups, and the effective capabilities that pass file modes. Each is the
//! calling thread's own in the kernel, and set here by raw system calls, which change this
//! thread alone (glibc's `setresuid` and `setgroups` would change every thread of the server).
//! Capabilities a command holds in a user namespace of its own count for nothing here: the
//! kernel counts them only for files whose owners that namespace maps. A change of a thread's
//! credentials makes the whole process not dumpable; it is given back as it was.

use std::sync::atomic::{AtomicBool, Ordering};

use super::listening::{Home, same_user_namespace};
use super::notify;
use crate::caps::{effective, set_effective};

/// `CAP_DAC_OVERRIDE`: passes every file's mode and every directory's.
const CAP_DAC_OVERRIDE: u64 = 1 << 1;

/// `CAP_DAC_OVERRIDE` and `CAP_DAC_READ_SEARCH`: what passes a file's mode, or a directory's.
const PASS_FILE_MODES: u64 = CAP_DAC_OVERRIDE | (1 << 2);

/// What a process may hold that lets its commands' credentials differ from its own:
/// `CAP_SETGID`, `CAP_SETUID` and [`PASS_FILE_MODES`]. Without any (a server that is not root),
/// a confined command's are the server's: it starts with them, gains none by `exec`
/// (`no_new_privs`), and a user namespace of its own changes none the server's files see.
const MAY_CHANGE: u64 = (1 << 6) | (1 << 7) | PASS_FILE_MODES;

/// Set when this thread could not be given its own credentials back: no connect is made with
/// a command's from then on (each is refused), since what this thread holds is unknown.
static UNSURE: AtomicBool = AtomicBool::new(false);

/// "Leave it as it is", for `setresuid` and `setresgid`.
const AS_IT_IS: u32 = u32::MAX;

/// A thread's credentials that a connect to a unix socket's path is judged by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Credentials {
    euid: u32,
    egid: u32,
    fsuid: u32,
    fsgid: u32,
    groups: Vec<u32>,
    /// Effective capabilities of [`PASS_FILE_MODES`], as they count ([`passes`]).
    passes: u64,
}

/// This thread, with a command's credentials until dropped; then with its own again.
#[derive(Debug)]
pub(super) struct TakenOn {
    own: Credentials,
    effective: u64,
    /// Whether the process was dumpable (`PR_GET_DUMPABLE`): a change of a thread's
    /// credentials makes the whole process not (the kernel's `commit_creds`), which would leave
    /// its `/proc` files to root alone and its core dumps off.
    dumpable: libc::c_int,
}

impl Drop for TakenOn {
    fn drop(&mut self) {
        let own = &self.own;
        // The effective user first: back to the real and saved one (the server's), which needs
        // no capability, and which gives back every permitted capability when it is root's.
        let _ = set_res_uid(own.euid);
        let _ = set_effective(self.effective);
        let _ = set_res_gid(own.egid);
        set_fsgid(own.fsgid);
        set_fsuid(own.fsuid);
        let _ = set_groups(&own.groups);
        // The capabilities last: a file-system user set back to root raises those that pass
        // file modes.
        let _ = set_effective(self.effective);
        if effective() != Some(self.effective) || current(self.effective).as_ref() != Some(own) {
            // Not dumpable, as the change left it: a thread of another user in a dumpable
            // process would have its `/proc` files owned by that user.
            UNSURE.store(true, Ordering::Relaxed);
            return;
        }
        // SAFETY: prctl with integer arguments (0 or 1: the values it may set).
        if matches!(self.dumpable, 0 | 1)
            && unsafe { libc::prctl(libc::PR_GET_DUMPABLE) } != self.dumpable
        {
            // SAFETY: as above.
            unsafe { libc::prctl(libc::PR_SET_DUMPABLE, self.dumpable) };
        }
    }
}

/// This thread takes on `theirs` (a command thread's, [`of_thread`]) until the value returned
/// is dropped; `None` when they are this thread's already (a server that is not root: its
/// commands' are its own). EACCES when they could not be taken on: the connect is refused
/// rather than made with the server's.
///
/// The effective user and group are taken on only where the kernel then makes the process not
/// dumpable (`fs.suid_dumpable` 0, the default, or 2): at 1 it would leave the process dumpable,
/// and this thread's `/proc` files (its `oom_score_adj`, the process's) owned by the command's
/// user for a moment, for any process of that user to open. The listener's `SO_PEERCRED` then
/// names the server's user.
pub(super) fn take_on(theirs: &Credentials) -> Result<Option<TakenOn>, i32> {
    if UNSURE.load(Ordering::Relaxed) {
        return Err(libc::EACCES);
    }
    let effective = effective().ok_or(libc::EACCES)?;
    let before = current(effective).ok_or(libc::EACCES)?;
    if *theirs == before {
        return Ok(None);
    }
    let effective_ids = matches!(suid_dumpable(), Some(0 | 2));
    let wanted = if effective_ids {
        theirs.clone()
    } else {
        Credentials {
            euid: before.euid,
            egid: before.egid,
            ..theirs.clone()
        }
    };
    let taken = TakenOn {
        own: before,
        effective,
        // SAFETY: prctl with integer arguments.
        dumpable: unsafe { libc::prctl(libc::PR_GET_DUMPABLE) },
    };
    let failed = |_| libc::EACCES;
    set_groups(&wanted.groups).map_err(failed)?;
    if effective_ids {
        set_res_gid(wanted.egid).map_err(failed)?;
    }
    set_fsgid(wanted.fsgid);
    if effective_ids {
        // An effective user other than root loses every effective capability; the real and
        // saved users are the server's still, so they stay permitted and are raised again to
        // set the file-system user.
        set_res_uid(wanted.euid).map_err(failed)?;
        set_effective(effective).map_err(failed)?;
    }
    set_fsuid(wanted.fsuid);
    // A file-system user other than root has just lost the capabilities that pass file modes;
    // the command's are given back, or its root's taken away.
    set_effective((effective & !PASS_FILE_MODES) | (effective & wanted.passes)).map_err(failed)?;
    let took = crate::caps::effective().ok_or(libc::EACCES)?;
    if current(took).as_ref() != Some(&wanted) {
        return Err(libc::EACCES);
    }
    Ok(Some(taken))
}

/// `fs.suid_dumpable`: whether a process whose credentials changed stays dumpable (1), or is
/// dumpable by root only (0, 2). `None` when it cannot be read.
fn suid_dumpable() -> Option<u8> {
    std::fs::read_to_string("/proc/sys/fs/suid_dumpable")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Thread `pid`'s credentials, from `/proc/<pid>/status` (ids as the server's user namespace
/// sees them); `None` when they are this server's (it holds nothing of [`MAY_CHANGE`]). A
/// thread waiting on the supervisor cannot change its own; EACCES when they cannot be read.
pub(super) fn of_thread(pid: u32, home: Home) -> Result<Option<Credentials>, i32> {
    static MAY_DIFFER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let may_differ = *MAY_DIFFER
        .get_or_init(|| crate::caps::permitted().is_none_or(|caps| caps & MAY_CHANGE != 0));
    if !may_differ {
        return Ok(None);
    }
    read_status(pid, home).map(Some).ok_or(libc::EACCES)
}

/// The effective capabilities of [`PASS_FILE_MODES`] that count: `CAP_DAC_OVERRIDE` passes
/// all that `CAP_DAC_READ_SEARCH` does (which confined commands drop), so with it both count.
fn passes(effective: u64) -> u64 {
    if effective & CAP_DAC_OVERRIDE == 0 {
        effective & PASS_FILE_MODES
    } else {
        PASS_FILE_MODES
    }
}

fn read_status(pid: u32, home: Home) -> Option<Credentials> {
    let status = notify::status_of(pid).ok()?;
    let line = |name: &str| notify::status_field(&status, name);
    // Real, effective, saved, file system.
    let id = |name: &str, nth| line(name)?.split_whitespace().nth(nth)?.parse().ok();
    let groups = line("Groups:")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<Vec<u32>, _>>()
        .ok()?;
    let effective = u64::from_str_radix(line("CapEff:")?, 16).ok()?;
    let passes = if same_user_namespace(pid, home) {
        passes(effective)
    } else {
        0
    };
    Some(Credentials {
        euid: id("Uid:", 1)?,
        egid: id("Gid:", 1)?,
        fsuid: id("Uid:", 3)?,
        fsgid: id("Gid:", 3)?,
        groups: sorted(groups),
        passes,
    })
}

/// This thread's credentials, given its effective capabilities.
fn current(effective: u64) -> Option<Credentials> {
    // SAFETY: getgroups with a zero size only counts.
    let count = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
    let mut groups = vec![0; usize::try_from(count).ok()?];
    // SAFETY: room for `count` gids.
    let count = unsafe { libc::getgroups(count, groups.as_mut_ptr()) };
    groups.truncate(usize::try_from(count).ok()?);
    let (mut ruid, mut euid, mut suid) = (0, 0, 0);
    let (mut rgid, mut egid, mut sgid) = (0, 0, 0);
    // SAFETY: each writes three ids into the variables given.
    let read = unsafe {
        libc::getresuid(&raw mut ruid, &raw mut euid, &raw mut suid) == 0
            && libc::getresgid(&raw mut rgid, &raw mut egid, &raw mut sgid) == 0
    };
    read.then(|| Credentials {
        euid,
        egid,
        fsuid: set_fsuid(AS_IT_IS),
        fsgid: set_fsgid(AS_IT_IS),
        groups: sorted(groups),
        passes: passes(effective),
    })
}

fn sorted(mut groups: Vec<u32>) -> Vec<u32> {
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// `setfsuid` of this thread; returns the one before. [`AS_IT_IS`] (not an id) only reads it.
fn set_fsuid(uid: u32) -> u32 {
    // SAFETY: setfsuid takes an integer and cannot fail but by leaving the id as it was.
    unsafe { libc::syscall(libc::SYS_setfsuid, uid) as u32 }
}

/// `setfsgid` of this thread; returns the one before. [`AS_IT_IS`] only reads it.
fn set_fsgid(gid: u32) -> u32 {
    // SAFETY: as for setfsuid.
    unsafe { libc::syscall(libc::SYS_setfsgid, gid) as u32 }
}

/// The effective user of this thread alone (the raw `setresuid`), its real and saved as they
/// are. The file-system user follows it.
fn set_res_uid(euid: u32) -> std::io::Result<()> {
    // SAFETY: setresuid takes three integers.
    checked(unsafe { libc::syscall(libc::SYS_setresuid, AS_IT_IS, euid, AS_IT_IS) })
}

/// The effective group of this thread alone (the raw `setresgid`).
fn set_res_gid(egid: u32) -> std::io::Result<()> {
    // SAFETY: setresgid takes three integers.
    checked(unsafe { libc::syscall(libc::SYS_setresgid, AS_IT_IS, egid, AS_IT_IS) })
}

fn checked(rc: libc::c_long) -> std::io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The supplementary groups of this thread alone (the raw call; glibc's changes every thread).
fn set_groups(groups: &[u32]) -> std::io::Result<()> {
    // SAFETY: a live slice of gids and its length.
    checked(unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that makes `change` to itself, then waits until the sender returned is
    /// dropped or sent to; its id.
    fn changed_thread(
        change: impl FnOnce() + Send + 'static,
    ) -> (
        u32,
        std::sync::mpsc::Sender<()>,
        std::thread::JoinHandle<()>,
    ) {
        let (ready, wait) = std::sync::mpsc::channel();
        let (done, end) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            change();
            // SAFETY: gettid has no preconditions.
            ready.send(unsafe { libc::gettid() } as u32).unwrap();
            end.recv().ok();
        });
        (wait.recv().unwrap(), done, thread)
    }

    #[test]
    fn a_thread_takes_on_another_threads_credentials_and_gives_them_back() {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::geteuid() }, 0, "needs root, as CI runs");
        let home = super::super::listening::home();
        // A thread of its own becomes nobody, in its ids and groups.
        let (tid, done, other) = changed_thread(|| {
            set_groups(&[65534]).unwrap();
            set_res_gid(65534).unwrap();
            set_res_uid(65534).unwrap();
        });
        // That change made the process not dumpable; so would taking it on.
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1) };
        let before = current(effective().unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        {
            let taken = take_on(&of_thread(tid, home).unwrap().unwrap()).unwrap();
            assert!(taken.is_some());
            let now = current(effective().unwrap()).unwrap();
            assert_eq!(
                (now.euid, now.egid, now.fsuid, now.fsgid, &now.groups[..]),
                (65534, 65534, 65534, 65534, &[65534][..])
            );
            assert_eq!(now.passes, 0);
            // Root's directory, mode 0700: refused to nobody.
            let denied = std::fs::read_dir(dir.path()).unwrap_err();
            assert_eq!(denied.raw_os_error(), Some(libc::EACCES));
        }
        assert_eq!(current(effective().unwrap()).unwrap(), before);
        assert!(!UNSURE.load(Ordering::Relaxed));
        // The process stays dumpable: a change of credentials made it not (`commit_creds`).
        // SAFETY: prctl with integer arguments.
        assert_eq!(unsafe { libc::prctl(libc::PR_GET_DUMPABLE) }, 1);
        std::fs::read_dir(dir.path()).unwrap();
        // Another thread's are as they were: nothing of the change reached it.
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        assert!(
            take_on(&of_thread(me, home).unwrap().unwrap())
                .unwrap()
                .is_none()
        );
        done.send(()).unwrap();
        other.join().unwrap();
        // A root thread without CAP_DAC_READ_SEARCH (as confined commands are) passes file
        // modes as this one does, by CAP_DAC_OVERRIDE: nothing to take on.
        let (tid, done, dropped) = changed_thread(|| {
            set_effective(effective().unwrap() & !(1 << 2)).unwrap();
        });
        assert!(
            take_on(&of_thread(tid, home).unwrap().unwrap())
                .unwrap()
                .is_none()
        );
        done.send(()).unwrap();
        dropped.join().unwrap();
    }
}
