//! The pipes' thread against a command that holds a pipe's lock.

use std::ffi::OsString;
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

/// The process tagged `tag`, once it waits in `splice(2)`.
fn splicing(tag: &str) -> Option<i32> {
    processes_with_arg(tag).into_iter().find(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/syscall")).is_ok_and(|s| {
            s.split_whitespace().next() == Some(libc::SYS_splice.to_string().as_str())
        })
    })
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
    let mut thread =
        PipeThread::start(pipes.stdout, pipes.stderr, None, 4096, None).expect("thread");
    let closer = thread.closer_of_child_ends();
    let waiting_for = tag.clone();
    ready.child_ends_to(Box::new(move |ends| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while splicing(&waiting_for).is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        closer(ends);
    }));
    let claimed = tokio::time::timeout(Duration::from_secs(40), ready.hand().claim()).await;
    let (pid, _exit) = claimed
        .expect("the launcher never answered: it closed the child's end itself")
        .expect("started");
    assert!(splicing(&tag).is_some(), "the child is not in its splice");
    drop(holder);
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while thread.is_open() {
            let _ = thread.read().await;
        }
    })
    .await;
    assert!(ended.is_ok(), "the output of {pid} never ended");
}
