//! The pipes' thread against a command that holds a pipe's lock.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::spawn::{SpawnSpec, StdinMode, prepare_on_pipes};
use agentty_testkit::{KillOnDrop, processes_with_arg};

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
        pass_fds: Vec::new(),
        masks: None,
    }
}

/// Passes the child's ends on only once the child waits in its splice.
struct WhenSplicing {
    tag: String,
    then: crate::spawn::ChildEnds,
}

impl crate::spawn::TakeChildEnds for WhenSplicing {
    fn take(self: Box<Self>, ends: Vec<OwnedFd>) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while in_splice(&self.tag) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.then.take(ends);
    }
}

/// How many threads of the processes tagged `tag` wait in `splice(2)`.
fn in_splice(tag: &str) -> usize {
    let splice = libc::SYS_splice.to_string();
    processes_with_arg(tag)
        .into_iter()
        .flat_map(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("syscall"))
                .is_ok_and(|s| s.split_whitespace().next() == Some(splice.as_str()))
        })
        .count()
}

/// The child reopens its stdout, closes fd 1 and splices an idle socket into the new fd: the
/// plan's copy of the pipe's write end is now the last one of its file, and closing it waits
/// for the pipe's lock. The launcher lets go of that copy only once the child is in the splice
/// (the attack's window, made certain); the launcher must still answer, and the command's
/// output ends once the holder is killed. Closed on the launcher (`drop(ends)` in place of
/// `self.then.take(ends)`), the launcher never answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_childs_ends_close_on_the_pipes_thread_while_the_child_holds_their_lock() {
    crate::init().expect("init");
    let tag = format!("held-end-{}", std::process::id());
    let holder = KillOnDrop(tag.clone());
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
    let starter = thread.starter().expect("a starter");
    ready.child_ends_to(Box::new(WhenSplicing {
        tag: tag.clone(),
        then: starter,
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

fn ends_of(caller: &Arc<str>, out: OwnedFd) -> Ends {
    let (err, _) = pipe();
    Ends {
        out,
        err,
        input: None,
        caller: Some(caller.clone()),
    }
}

/// Starts `n` pipe threads of `caller` whose stdout one process (tagged `tag`, outside any
/// command) holds the lock of, a thread of it splicing an idle socket into each.
fn held_threads(caller: &Arc<str>, n: usize, tag: &str) -> (Vec<PipeThread>, std::process::Child) {
    let (reads, writes): (Vec<OwnedFd>, Vec<OwnedFd>) = (0..n).map(|_| pipe()).unzip();
    let numbers: Vec<String> = writes.iter().map(|fd| fd.as_raw_fd().to_string()).collect();
    for fd in &writes {
        // SAFETY: F_SETFD on an fd we own: the holder inherits it.
        assert_eq!(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) }, 0);
    }
    let script = "import os,socket,sys,threading\n\
        socks=[]\n\
        def hold(fd):\n  a,b=socket.socketpair(); socks.append((a,b)); os.splice(a.fileno(),fd,4096)\n\
        for fd in sys.argv[1].split(','): threading.Thread(target=hold,args=(int(fd),)).start()\n";
    let holder = std::process::Command::new("python3")
        .args(["-c", script, &numbers.join(","), tag])
        .spawn()
        .expect("python3");
    drop(writes);
    let threads = reads
        .into_iter()
        .map(|out| running(ends_of(caller, out)).expect("thread"))
        .collect();
    (threads, holder)
}

/// A pipe thread on `ends`, started as after a clone (no child's ends to close).
fn running(ends: Ends) -> io::Result<PipeThread> {
    let mut thread = PipeThread::start(ends, 4096, None)?;
    if let Some(starter) = thread.starter() {
        starter.take(Vec::new());
    }
    Ok(thread)
}

/// Waits at most 20 s for `caller` to have `n` pipe threads.
fn threads_become(caller: &Arc<str>, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    while super::super::caller_threads::of(Some(caller)) != n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    super::super::caller_threads::of(Some(caller))
}

/// A caller with as many pipe threads as it may have, started at once, gets its next pipe
/// command refused, and still once their commands let go of them while a process outside
/// holds the pipes; another caller is not; once that process ends, the first caller's commands
/// start again. Without the bound the stuck threads (and their descriptors) piled up without
/// end; counting only those let go of, a burst of commands went past it.
#[test]
fn a_caller_with_too_many_pipe_threads_is_refused_and_no_other_caller() {
    let most = super::super::caller_threads::THREADS_MAX;
    let caller: Arc<str> = Arc::from(format!("many-{}", std::process::id()).as_str());
    let other: Arc<str> = Arc::from(format!("other-{}", std::process::id()).as_str());
    let tag = format!("many-threads-{}", std::process::id());
    let kill = KillOnDrop(tag.clone());
    let (threads, mut holder) = held_threads(&caller, most, &tag);
    let deadline = Instant::now() + Duration::from_secs(20);
    while in_splice(&tag) < most && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        in_splice(&tag),
        most,
        "the holder's threads are not all in splice"
    );
    let refused = |why: &str| {
        let (out, _w) = pipe();
        let started = running(ends_of(&caller, out));
        assert!(
            started.is_err(),
            "the caller's next command was not refused: {why}"
        );
    };
    refused("its commands run");
    drop(threads);
    // Long enough for threads that are not stuck to be done.
    std::thread::sleep(Duration::from_millis(200));
    refused("its threads were let go of, stuck in their close");
    let (out, _w) = pipe();
    let started = running(ends_of(&other, out));
    assert!(started.is_ok(), "another caller was refused");
    drop(kill);
    let _ = holder.wait();
    assert_eq!(threads_become(&caller, 0), 0, "the threads stayed stuck");
    let (out, _w) = pipe();
    assert!(running(ends_of(&caller, out)).is_ok());
}

/// A command whose thread never started (its call dropped before the clone, its plan dropped
/// without one) leaves nothing counted: the thread starts on the drop, closes the pipes and is
/// done.
#[test]
fn a_thread_never_started_is_done_when_dropped() {
    let caller: Arc<str> = Arc::from(format!("unstarted-{}", std::process::id()).as_str());
    let (out, _w) = pipe();
    let thread = PipeThread::start(ends_of(&caller, out), 4096, None).expect("thread");
    assert_eq!(super::super::caller_threads::of(Some(&caller)), 1);
    drop(thread);
    assert_eq!(threads_become(&caller, 0), 0, "the thread was never done");
}
