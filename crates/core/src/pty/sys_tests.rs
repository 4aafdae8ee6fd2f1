//! The master's writes, watched for room only while one waits: a full input queue that empties
//! wakes the writer, a hung-up terminal ends a write waiting for room, and a program that
//! takes its input a byte at a time wakes nobody.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use super::{Master, open_pair};

/// A pair whose slave reads raw bytes (no line discipline holding lines back), and its master.
fn raw_pair() -> (Master, OwnedFd) {
    let pair = open_pair(80, 24).expect("pty");
    // SAFETY: termios calls on an fd we own, on a zeroed struct the kernel fills.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(pair.slave.as_raw_fd(), &raw mut t), 0);
        libc::cfmakeraw(&raw mut t);
        assert_eq!(
            libc::tcsetattr(pair.slave.as_raw_fd(), libc::TCSANOW, &raw const t),
            0
        );
    }
    (Master::new(pair.master).expect("master"), pair.slave)
}

/// Writes to the master until its input queue takes no more, even once the kernel moved what
/// it had on (a moment later); how much it took.
fn fill(master: &Master) -> usize {
    let mut taken = fill_now(master);
    loop {
        std::thread::sleep(Duration::from_millis(20));
        match fill_now(master) {
            0 => return taken,
            more => taken += more,
        }
    }
}

/// Writes to the master until a write would block; how much it took.
fn fill_now(master: &Master) -> usize {
    let chunk = [b'x'; 4096];
    let mut taken = 0;
    loop {
        // SAFETY: write reads at most chunk.len() bytes from chunk.
        let n = unsafe { libc::write(master.raw(), chunk.as_ptr().cast(), chunk.len()) };
        if n <= 0 {
            assert_eq!(
                std::io::Error::last_os_error().kind(),
                std::io::ErrorKind::WouldBlock
            );
            return taken;
        }
        taken += n as usize;
    }
}

/// Reads what the slave has, without waiting.
fn drain(slave: &OwnedFd) -> usize {
    let mut buf = [0u8; 65536];
    let mut total = 0;
    loop {
        // SAFETY: read writes at most buf.len() bytes into buf; the fd is non-blocking below.
        let n = unsafe { libc::read(slave.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return total;
        }
        total += n as usize;
    }
}

fn non_blocking(fd: &OwnedFd) {
    // SAFETY: fcntl on an fd we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

#[tokio::test]
async fn a_write_to_a_full_queue_goes_on_once_the_program_reads() {
    let (master, slave) = raw_pair();
    non_blocking(&slave);
    assert!(fill(&master) > 0);
    assert_eq!(
        fill_now(&master),
        0,
        "the queue is full as the write begins"
    );
    let reader = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let mut read = 0;
        for _ in 0..50 {
            read += drain(&slave);
            std::thread::sleep(Duration::from_millis(10));
        }
        (read, slave)
    });
    let wrote = tokio::time::timeout(Duration::from_secs(5), master.write_some(b"after"))
        .await
        .expect("the writer was not woken when the queue emptied")
        .expect("write");
    assert!(wrote > 0);
    let (read, _slave) = reader.join().unwrap();
    assert!(read > 0);
}

#[tokio::test]
async fn a_hung_up_terminal_with_a_full_queue_ends_the_write() {
    let (master, slave) = raw_pair();
    fill(&master);
    assert_eq!(
        fill_now(&master),
        0,
        "the queue is full as the write begins"
    );
    let waiting = tokio::spawn(async move {
        let result = master.write_some(b"more").await;
        (result, master)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "the write did not wait for room");
    drop(slave);
    let (result, _master) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the write still waits on a hung-up terminal")
        .unwrap();
    // The kernel may drop the queue at the hang-up (Linux 6.18 does: the bytes then go nowhere)
    // or keep it full (EIO, the branch for kernels that do): either way the write ends.
    match result {
        Ok(n) => assert!(n > 0),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO)),
    }
}

/// This thread's voluntary context switches so far: each time it slept and was woken.
fn wake_ups() -> u64 {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::gettid() };
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// The master's reactor registration: readable only. With a standing interest in writing, each
/// byte a program takes from its input queue is a writability edge that wakes the thread
/// polling the reactor (here this test's, a current-thread runtime sleeping meanwhile).
#[tokio::test]
async fn a_program_taking_its_input_byte_by_byte_wakes_no_reactor() {
    let (master, slave) = raw_pair();
    let line = b"echo hi and some more bytes\r";
    let taken = master
        .write_until(line, tokio::time::Instant::now() + Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(taken, line.len());
    let before = wake_ups();
    // The program reads its input one byte at a time, as readline does, while this thread
    // sleeps in the reactor.
    let reader = std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        for _ in 0..line.len() {
            // SAFETY: read writes at most one byte into byte.
            assert_eq!(
                unsafe { libc::read(slave.as_raw_fd(), byte.as_mut_ptr().cast(), 1) },
                1
            );
            std::thread::sleep(Duration::from_millis(3));
        }
        slave
    });
    tokio::time::sleep(Duration::from_millis(100) + Duration::from_millis(3) * 28).await;
    let woken = wake_ups() - before;
    assert!(
        reader.is_finished(),
        "the program had not read its input yet"
    );
    let _slave = reader.join().unwrap();
    drop(master);
    assert!(
        woken <= 3,
        "the reactor's thread was woken {woken} times by a program reading its input"
    );
}

/// What a program wrote a moment ago counts as unread at once: the kernel moves it into the
/// master's queue from a work item, which `FIONREAD` alone does not wait for (right after a
/// write it said 0 in about half the tries here), so a look for a program waiting for keys
/// could miss the prompt it had just written (the flaky `a_read_says_when_a_program_waits_for_keys`).
#[test]
fn output_just_written_is_unread_at_once() {
    let pair = open_pair(80, 24).expect("pty");
    let mut missed = 0;
    for _ in 0..500 {
        // SAFETY: write reads the given bytes from a live buffer into an fd we own.
        let wrote =
            unsafe { libc::write(pair.slave.as_raw_fd(), b"Continue? ".as_ptr().cast(), 10) };
        assert_eq!(wrote, 10);
        if super::unread_output(pair.master.as_raw_fd()) < 10 {
            missed += 1;
        }
        let mut buf = [0u8; 64];
        let mut taken = 0;
        while taken < 10 {
            // SAFETY: read writes at most the buffer's length into it.
            let n =
                unsafe { libc::read(pair.master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            assert!(n > 0, "the master gave nothing back");
            taken += n as usize;
        }
    }
    assert_eq!(missed, 0, "writes not yet counted as unread");
}

/// A chunk its reader took stays "in flight" until the reader's next read finds nothing: until
/// then it may not have reached the screen and ring a look for a waiting program quotes from.
#[tokio::test]
async fn a_chunk_taken_is_in_flight_until_the_next_read_finds_nothing() {
    let (master, slave) = raw_pair();
    assert!(!master.output_in_flight(), "nothing written yet");
    // SAFETY: write reads the given bytes from a live buffer into an fd we own.
    let wrote = unsafe { libc::write(slave.as_raw_fd(), b"Continue? ".as_ptr().cast(), 10) };
    assert_eq!(wrote, 10);
    assert!(master.output_in_flight(), "written, not read");
    let mut buf = [0u8; 64];
    let mut taken = 0;
    while taken < 10 {
        taken += master.read(&mut buf).await.expect("read");
    }
    assert_eq!(unread(&master), 0);
    assert!(master.output_in_flight(), "read, not handed on");
    let next = tokio::time::timeout(Duration::from_millis(50), master.read(&mut buf)).await;
    assert!(next.is_err(), "nothing more was written: {next:?}");
    assert!(!master.output_in_flight(), "the next read found nothing");
}

fn unread(master: &Master) -> usize {
    super::unread_output(master.raw())
}
