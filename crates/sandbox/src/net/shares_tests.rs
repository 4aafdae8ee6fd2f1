//! Each caller's share of the supervisor's closes (`closer::Owner`): releases of one caller
//! that never end (the read end of a pipe whose lock a command holds, splicing an idle socket
//! into it) hold none of another caller's, and refuse that caller's copies only; and the
//! closer's threads never hold a file the rest of the server closes.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::closer::{self, ClosedElsewhere, Owner};
use super::notify;
use agentty_testkit::HeldPipe as Held;

/// The tests of the closer, one at a time where they share a process (plain `cargo test`):
/// they count its threads, and one pauses the next thread that copies its table.
pub(super) static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two fds into `ends`.
    assert_eq!(
        unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    // SAFETY: fresh fds nobody else owns.
    unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) }
}

/// Whether a file of `owner`'s let go now is released within a second: the write end of a
/// new pipe, whose read end then sees the hang-up.
fn released_soon(owner: &Arc<Owner>) -> bool {
    let (read, write) = pipe();
    drop(ClosedElsewhere::new(write, owner));
    let mut pollfd = super::supervisor::poll_for(read.as_raw_fd(), libc::POLLIN);
    // SAFETY: one pollfd, alive for the call.
    unsafe { libc::poll(&raw mut pollfd, 1, 1000) == 1 && pollfd.revents & libc::POLLHUP != 0 }
}

/// Whether a copy of one of this process's fds is made for `owner` (or refused, EAGAIN).
fn copied_for(owner: &Arc<Owner>) -> bool {
    let probe = std::fs::File::open("/dev/null").unwrap();
    match notify::copy_fd(std::process::id(), probe.as_raw_fd(), owner) {
        Ok(_) => true,
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => false,
        Err(e) => panic!("copy_fd: {e}"),
    }
}

#[test]
fn a_callers_releases_that_wait_hold_no_other_callers() {
    let _alone = ONE_AT_A_TIME.lock();
    let (stuck, other) = (closer::owner(Some("stuck")), closer::owner(Some("other")));
    assert!(copied_for(&stuck) && copied_for(&other));
    let mut held = Held::new(120);
    // One caller lets them go one by one: each release waits for the lock, on a thread of
    // its own, until its share of threads is used up; the rest wait for a thread, until its
    // share of files waiting is used up too and its copies are refused.
    let mut let_go = 0;
    while copied_for(&stuck) {
        let file = held
            .files
            .pop()
            .expect("the stuck caller was never refused");
        drop(ClosedElsewhere::new(file, &stuck));
        let_go += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    // Each look (a copy let go) waits behind them too, once its threads are taken.
    assert!(let_go > 16, "refused after {let_go} files only");
    assert!(
        released_soon(&other),
        "another caller's release waits behind the stuck caller's"
    );
    assert!(copied_for(&other), "another caller's copy is refused");
    // The lock let go, the caller's releases end and its share comes back.
    let read = held.read.take();
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !copied_for(&stuck) {
        assert!(
            Instant::now() < deadline,
            "the caller's share did not come back"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(released_soon(&stuck));
    drop(read);
}

/// A release thread copies the closer's fd table, never the process's: a file some other
/// thread of the server closes while the copy is made (a command's pipe, whose lock the command
/// holds) is never the release thread's last reference, which it would wait on before it told
/// the closer it had its files, holding every caller's closes (review 27).
#[test]
fn a_file_closed_elsewhere_while_a_release_starts_is_not_the_releases() {
    let _alone = ONE_AT_A_TIME.lock();
    assert!(
        released_soon(&closer::owner(Some("warm"))),
        "the closer runs"
    );
    let mut held = Held::new(0);
    let (copied_tx, copied) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel();
    *super::release::tests::PAUSE_AFTER_COPY.lock().unwrap() = Some((copied_tx, go_rx));
    let (read, write) = pipe();
    drop(ClosedElsewhere::new(write, &closer::owner(Some("b"))));
    copied
        .recv_timeout(Duration::from_secs(10))
        .expect("no release thread copied its table");
    // The process's last hold of the held pipe's read end goes meanwhile: its release waits for
    // the lock on this closing thread (or on whatever else holds a copy).
    let held_read = held.read.take();
    let closing = std::thread::spawn(move || drop(held_read));
    std::thread::sleep(Duration::from_millis(100));
    go.send(()).unwrap();
    let mut pollfd = super::supervisor::poll_for(read.as_raw_fd(), libc::POLLIN);
    // SAFETY: one pollfd, alive for the call.
    let hung_up = unsafe { libc::poll(&raw mut pollfd, 1, 1000) } == 1;
    let third = released_soon(&closer::owner(Some("c")));
    drop(held);
    closing.join().unwrap();
    assert!(
        hung_up,
        "the release thread waits on the file closed elsewhere"
    );
    assert!(third, "the closer waits behind that release thread");
}

/// Threads of this process named `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|comm| comm.trim() == name)
        })
        .count()
}

/// Threads of this process named `name` once their number has stayed the same for 50 ms (up to
/// 2 s): a thread whose work is done may still be ending.
fn settled_threads_named(name: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut seen = threads_named(name);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = threads_named(name);
        if now == seen || Instant::now() > deadline {
            return now;
        }
        seen = now;
    }
}

/// Sixteen callers whose releases never end take every release thread the server allows for
/// all (each has its share): a seventeenth caller's files are still released, on a thread below
/// its floor, and its copies made.
#[test]
fn callers_that_take_every_release_thread_leave_each_other_caller_its_floor() {
    let _alone = ONE_AT_A_TIME.lock();
    const HOGS: usize = 16;
    const EACH: usize = 16;
    assert!(
        released_soon(&closer::owner(Some("warm-floor"))),
        "the closer runs"
    );
    let mut held = Held::new(HOGS * EACH);
    // The warm-up's release thread may still be on its way out (CI of 30863f7 counted it, and
    // then saw one fewer than the hogs' own).
    let before = settled_threads_named("agentty-release");
    for hog in 0..HOGS {
        let owner = closer::owner(Some(&format!("hog-{hog}")));
        for _ in 0..EACH {
            let file = held.files.pop().unwrap();
            drop(ClosedElsewhere::new(file, &owner));
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads_named("agentty-release") < before + HOGS * EACH {
        assert!(
            Instant::now() < deadline,
            "the hogs' releases did not each take a thread: {} alive",
            threads_named("agentty-release")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let late = closer::owner(Some("late"));
    let released = released_soon(&late);
    let copied = copied_for(&late);
    let read = held.read.take();
    drop(held);
    drop(read);
    assert!(
        released,
        "a caller's release waits while others hold every thread"
    );
    assert!(
        copied,
        "a caller's copy is refused while others hold every thread"
    );
}

/// A caller's filters' listeners the supervisor takes are bounded, one caller's apart from
/// another's, and a place comes back with a listener let go of: a caller that made every spawn
/// go apart and left each command running could otherwise have the server hold a listener per
/// call (review 33).
#[test]
fn a_callers_listeners_are_bounded_and_their_places_come_back() {
    let (hog, other) = (
        closer::owner(Some("listeners-hog")),
        closer::owner(Some("listeners-other")),
    );
    let taken = (0..closer::OWNER_LISTENERS_MAX * 2)
        .filter(|_| hog.take_listener_place())
        .count();
    assert_eq!(taken, closer::OWNER_LISTENERS_MAX, "past the bound");
    assert!(other.take_listener_place(), "another caller's place");
    hog.give_listener_place();
    assert!(hog.take_listener_place(), "a place given back");
    assert!(!hog.take_listener_place());
    for _ in 0..closer::OWNER_LISTENERS_MAX {
        hog.give_listener_place();
    }
    other.give_listener_place();
}

/// A judge that refuses every connect (no connect is made in these tests).
struct RefuseAll;

impl super::supervisor::Judge for RefuseAll {
    fn judge(&self, _: u32, _: std::net::SocketAddr) -> super::supervisor::Verdict {
        super::supervisor::Verdict::Refuse
    }

    fn refused_socket(&self, _: u32, _: i32, _: i32, _: i32) {}
}

/// Only the listeners of one spawn's own filter take a caller's places: its launchers' and
/// terminal spawns' do not (an honest caller's idle launchers of outdated pools, and its
/// shells, would fill them: review 34). Stand-in listeners: eventfds, which never read ready.
#[test]
fn only_one_spawns_listeners_take_a_callers_places() {
    let supervisor = super::supervisor::Supervisor::start(Arc::new(RefuseAll)).unwrap();
    let owner = closer::owner(Some("listeners-of-launchers"));
    let stand_in = || {
        // SAFETY: eventfd returns a fresh fd or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: a fresh fd nobody else owns.
        unsafe { OwnedFd::from_raw_fd(fd) }
    };
    let launchers = (0..closer::OWNER_LISTENERS_MAX * 2)
        .filter(|_| supervisor.adopt(stand_in(), Arc::clone(&owner), false))
        .count();
    assert_eq!(
        launchers,
        closer::OWNER_LISTENERS_MAX * 2,
        "launchers' were bounded"
    );
    let spawns = (0..closer::OWNER_LISTENERS_MAX * 2)
        .filter(|_| supervisor.adopt(stand_in(), Arc::clone(&owner), true))
        .count();
    assert_eq!(
        spawns,
        closer::OWNER_LISTENERS_MAX,
        "one spawn's were not bounded"
    );
}
