//! A namespace's init is seen ending through the `stat` file held open for it.

use std::os::fd::{FromRawFd, OwnedFd};

use super::{Namespace, stat_of_init};

/// A namespace record for a plain child (not a real init): only the checks of its end are used.
fn watching(child: &std::process::Child) -> Namespace {
    let pid = child.id().cast_signed();
    // SAFETY: pidfd_open of our own child; the fd it returns is ours.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    assert!(
        pidfd >= 0,
        "pidfd_open: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a fresh fd nobody else owns.
    let init = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    Namespace {
        init_pid: pid,
        stat: stat_of_init(pid, &init),
        init,
        of_caller: true,
        network: false,
        children: None,
    }
}

#[test]
fn an_init_that_exited_is_ending_and_gone_through_its_held_stat() {
    let mut child = std::process::Command::new("sh")
        .args(["-c", "read line"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let namespace = watching(&child);
    assert!(namespace.stat.is_some(), "the init's stat is held open");
    assert!(!namespace.init_ending() && !namespace.init_gone());
    drop(child.stdin.take());
    // It exits and stays a zombie (not waited for yet): state Z.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !namespace.init_gone() {
        assert!(
            std::time::Instant::now() < deadline,
            "the child did not exit"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        namespace.init_ending(),
        "a zombie init reads as ending through its held stat"
    );
    child.wait().unwrap();
    // Reaped: the held file reads nothing (ESRCH), never another process's stat.
    assert!(!namespace.init_ending());
}

#[test]
fn an_init_that_ended_before_its_stat_was_opened_holds_none() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id().cast_signed();
    // SAFETY: pidfd_open of our own child; the fd it returns is ours.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    assert!(pidfd >= 0);
    // SAFETY: a fresh fd nobody else owns.
    let init = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    while super::still_runs(&init) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(stat_of_init(pid, &init).is_none());
    child.wait().unwrap();
}
