//! The pipes' thread against a command that holds a pipe's lock.

use std::ffi::OsString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::spawn::{SpawnSpec, StdinMode, prepare_on_pipes};
use agentty_testkit::processes_with_arg;

fn python(script: &str, tag: &str) -> SpawnSpec {
    SpawnSpec {
        program: OsString::from("python3"),
        args: vec!["-c".into(), script.into(), tag.into()],
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        stdin: StdinMode::Null,
        marker: format!("test-{tag}"),
        confine: None,
        caller: None,
        pass_fd: None,
        masks: None,
    }
}

/// How many processes tagged `tag` wait in `splice(2)`.
fn in_splice(tag: &str) -> usize {
    let splice = libc::SYS_splice.to_string();
    processes_with_arg(tag)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/syscall"))
                .is_ok_and(|s| s.split_whitespace().next() == Some(splice.as_str()))
        })
        .count()
}

/// Kills the tagged process when dropped: a failed test leaves nothing (and lets go of the
/// lock that a stuck thread waits for).
struct Holder(String);

impl Drop for Holder {
    fn drop(&mut self) {
        for pid in processes_with_arg(&self.0) {
            // SAFETY: kill on a pid; at worst it is gone already.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The child reopens its stdout, closes fd 1 and splices an idle socket into the new fd: the
/// plan's copy of the pipe's write end is now the last one of its file, and closing it waits
/// for the pipe's lock. The launcher lets go of that copy only once the child is in the splice
/// (the attack's window, made certain); the launcher must still answer, and the command's
/// output ends once the holder is killed. Closed on the launcher (`drop(ends)` in place of
/// `closer`), the launcher never answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_childs_ends_close_on_the_pipes_thread_while_the_child_holds_their_lock() {
    crate::init().expect("init");
    let tag = format!("held-end-{}", std::process::id());
    let holder = Holder(tag.clone());
    let script = "import os,socket\n\
        fd=os.open('/proc/self/fd/1',os.O_WRONLY)\n\
        os.close(1)\n\
        a,b=socket.socketpair()\n\
        os.splice(a.fileno(),fd,4096)\n";
    let (mut ready, pipes) = prepare_on_pipes(&python(script, &tag)).expect("prepare");
    let ends = Ends {
        out: pipes.stdout,
        err: pipes.stderr,
        input: None,
        caller: None,
    };
    let mut thread = PipeThread::start(ends, 4096, None).expect("thread");
    let closer = thread.closer_of_child_ends();
    let waiting_for = tag.clone();
    ready.child_ends_to(Box::new(move |ends| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while in_splice(&waiting_for) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        closer(ends);
    }));
    let claimed = tokio::time::timeout(Duration::from_secs(40), ready.hand().claim()).await;
    let (pid, _exit) = claimed
        .expect("the launcher never answered: it closed the child's end itself")
        .expect("started");
    assert_eq!(in_splice(&tag), 1, "the child is not in its splice");
    drop(holder);
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while thread.is_open() {
            let _ = thread.read().await;
        }
    })
    .await;
    assert!(ended.is_ok(), "the output of {pid} never ended");
}

/// A pipe: (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fresh fds into the array on success.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both fds are fresh and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// A thread of `caller` whose stdout a process outside any command holds the lock of: once
/// let go, the thread waits in its close of the pipe for as long as that process lives.
fn held_thread(caller: &Arc<str>, tag: &str) -> (PipeThread, std::process::Child) {
    let (out, holder_end) = pipe();
    let (err, _) = pipe();
    let holder = std::process::Command::new("python3")
        .args([
            "-c",
            "import os,socket; a,b=socket.socketpair(); os.splice(a.fileno(),1,4096)",
            tag,
        ])
        .stdout(std::process::Stdio::from(holder_end))
        .spawn()
        .expect("python3");
    let ends = Ends {
        out,
        err,
        input: None,
        caller: Some(caller.clone()),
    };
    (PipeThread::start(ends, 4096, None).expect("thread"), holder)
}

/// Waits at most 20 s for `caller` to have `n` threads left behind.
fn left_behind_becomes(caller: &Arc<str>, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    while super::super::left_behind::of(Some(caller)) != n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    super::super::left_behind::of(Some(caller))
}

/// A caller whose processes hold the pipes of as many finished commands as it may leave behind
/// gets its next pipe command refused; another caller does not; once those processes end, the
/// first caller's commands start again. Without the bound the threads (and their descriptors)
/// piled up without end.
#[test]
fn a_caller_that_left_too_many_threads_behind_is_refused_and_no_other_caller() {
    let caller: Arc<str> = Arc::from(format!("left-{}", std::process::id()).as_str());
    let other: Arc<str> = Arc::from(format!("other-{}", std::process::id()).as_str());
    let tag = format!("left-behind-{}", std::process::id());
    let holders = Holder(tag.clone());
    let (threads, mut children): (Vec<PipeThread>, Vec<std::process::Child>) = (0
        ..super::super::left_behind::LEFT_BEHIND_MAX)
        .map(|_| held_thread(&caller, &tag))
        .unzip();
    // Each holder in its splice, holding the lock, before its thread is let go.
    let deadline = Instant::now() + Duration::from_secs(20);
    while in_splice(&tag) < threads.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(threads);
    let most = super::super::left_behind::LEFT_BEHIND_MAX;
    assert_eq!(left_behind_becomes(&caller, most), most);
    let (out, _w1) = pipe();
    let (err, _w2) = pipe();
    let refused = PipeThread::start(
        Ends {
            out,
            err,
            input: None,
            caller: Some(caller.clone()),
        },
        4096,
        None,
    );
    assert!(
        refused.is_err(),
        "the caller's next command was not refused"
    );
    let (out, _w3) = pipe();
    let (err, _w4) = pipe();
    let started = PipeThread::start(
        Ends {
            out,
            err,
            input: None,
            caller: Some(other),
        },
        4096,
        None,
    );
    assert!(started.is_ok(), "another caller was refused");
    drop(holders);
    for child in &mut children {
        let _ = child.wait();
    }
    assert_eq!(
        left_behind_becomes(&caller, 0),
        0,
        "the threads stayed stuck"
    );
}
