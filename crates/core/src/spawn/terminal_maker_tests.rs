//! The maker copies none of the server's files: it is forked from a thread whose fd table is its
//! own (`own_table.rs`), holding the maker's socket alone.

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where a maker just forked says it waits, before its first step: a page shared with the test
/// (`MAP_SHARED`, so the fork sees the test's writes): `[state, pid]`, state 0 while no test
/// asks, 1 asked, 2 the maker waits, 3 let it go on.
static PAUSE: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());

/// The tests here one at a time where they share a process (plain `cargo test`): each starts a
/// maker, whose pid is the one [`super::maker_pid`] says, and one pauses the next.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// In the forked maker: waits while a test looks at it. Plain memory and system calls only.
pub(super) fn pause_if_asked() {
    let page = PAUSE.load(Ordering::Acquire);
    if page.is_null() {
        return;
    }
    // SAFETY: the page lives for the process (never unmapped); two `AtomicU32`s.
    let (state, pid) = unsafe { (&*page, &*page.add(1)) };
    if state.load(Ordering::Acquire) != 1 {
        return;
    }
    // SAFETY: getpid and sched_yield have no preconditions.
    pid.store(unsafe { libc::getpid() } as u32, Ordering::Release);
    state.store(2, Ordering::Release);
    while state.load(Ordering::Acquire) == 2 {
        // SAFETY: as above.
        unsafe { libc::sched_yield() };
    }
}

#[test]
fn the_maker_copies_none_of_the_servers_files() {
    let _alone = ONE_AT_A_TIME.lock();
    assert!(
        super::own_table::supported() == Some(true),
        "this kernel has no PIDFD_THREAD (Linux 6.9)"
    );
    // SAFETY: an anonymous shared mapping of one page, never unmapped.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    let page = page.cast::<AtomicU32>();
    // SAFETY: the page just mapped, zeroed; two `AtomicU32`s.
    let (state, pid) = unsafe { (&*page, &*page.add(1)) };
    state.store(1, Ordering::Release);
    PAUSE.store(page, Ordering::Release);
    let held = tempfile::NamedTempFile::new().unwrap();
    let held_path = held.path().to_string_lossy().into_owned();
    let starting = std::thread::spawn(super::start);
    let deadline = Instant::now() + Duration::from_secs(10);
    while state.load(Ordering::Acquire) != 2 {
        assert!(Instant::now() < deadline, "the maker never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", pid.load(Ordering::Acquire)))
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .map(|link| link.to_string_lossy().into_owned())
        .collect();
    state.store(3, Ordering::Release);
    PAUSE.store(std::ptr::null_mut(), Ordering::Release);
    let maker = starting.join().unwrap();
    if let Ok(maker) = maker {
        super::end(maker);
    }
    assert!(
        !fds.contains(&held_path),
        "the maker holds a file of the server's: {fds:?}"
    );
    // Its socket, and `/dev/null` as 0, 1 and 2.
    let sockets = fds.iter().filter(|fd| fd.starts_with("socket:")).count();
    assert!(
        sockets == 1
            && fds
                .iter()
                .all(|fd| fd.starts_with("socket:") || fd == "/dev/null"),
        "the maker holds more than its socket: {fds:?}"
    );
    drop(held);
}

/// A maker that ended is left a zombie by the reaper's sweep (it is the main thread's child,
/// as an adopted orphan is), so its pid, which the sealed-entry checks leave out, is never
/// another process's until the maker is ended.
#[test]
fn a_maker_that_ended_keeps_its_pid_until_it_is_ended() {
    let _alone = ONE_AT_A_TIME.lock();
    let maker = super::start().unwrap();
    let pid = maker.pid;
    assert_eq!(super::maker_pid(), Some(pid));
    crate::namespace::kill_by_pidfd(&maker.pidfd);
    let deadline = Instant::now() + Duration::from_secs(10);
    let state = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')')
                    .map(|(_, after)| after.trim().to_owned())
            })
            .and_then(|after| after.chars().next())
    };
    while state() != Some('Z') {
        assert!(Instant::now() < deadline, "the maker did not end");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Its forking thread has ended: the main thread is its parent.
    crate::reaper::sweep_now();
    let after_sweep = state();
    super::end(maker);
    assert_eq!(after_sweep, Some('Z'), "the sweep reaped the maker");
    assert_eq!(super::maker_pid(), None);
}
