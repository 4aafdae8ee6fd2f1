//! A command that holds the lock of one of its pipes stalls nothing but itself.
//!
//! `splice(2)` into a pipe holds the pipe's lock while it waits for its source, and `splice`
//! out of a pipe holds it while the socket it feeds is full; every read, write and close of
//! that pipe waits for the lock, whatever its flags. The server read and fed pipes on the
//! threads that answer every caller: one such command stalled the whole server.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::*;
use agentty_testkit::{KillOnDrop, processes_with_arg};

/// How long a call may take while another command holds its pipe (a trivial call answers in
/// milliseconds; the stall lasted as long as the holding command).
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// A command that writes to fd `fd` and then splices an idle socket into it: the pipe's lock
/// is held until the command is stopped.
fn holds_output(fd: u8, tag: &str) -> String {
    format!(
        "python3 -c 'import os,socket; a,b=socket.socketpair(); os.write({fd},b\"x\"*10); \
         os.splice(a.fileno(),{fd},4096)' {tag}"
    )
}

/// A command that fills a socket, then splices its stdin into it, again and again after
/// taking a little of its input (which wakes the server's feeding): the stdin pipe's lock is
/// held 20 s at a time.
fn holds_input(tag: &str) -> String {
    let script = "import os,socket,struct\n\
        a,b=socket.socketpair()\n\
        a.setsockopt(socket.SOL_SOCKET,socket.SO_SNDTIMEO,struct.pack(\"ll\",20,0))\n\
        a.setblocking(False)\n\
        try:\n  while True: a.send(b\"x\"*4096)\n\
        except BlockingIOError: pass\n\
        a.setblocking(True)\n\
        for _ in range(5):\n  os.read(0,4096)\n  \
        try: os.splice(0,a.fileno(),1<<16)\n  except OSError: pass\n";
    format!("python3 -c '{script}' {tag}")
}

/// Another call, a trivial one, answers in time.
async fn a_call_answers(server: &Server, what: &str) {
    let started = Instant::now();
    let answered = tokio::time::timeout(
        ANSWER_WITHIN,
        server.terminal(json!({"command": "echo meanwhile"})),
    )
    .await;
    let (text, _) = answered
        .unwrap_or_else(|_| panic!("no answer in {ANSWER_WITHIN:?} while {what} held its pipe"));
    assert!(text.contains("meanwhile"), "{text}");
    eprintln!("{what}: a call answered in {:?}", started.elapsed());
}

/// The holding call itself ends by its timeout, its tree stopped.
async fn ends_by_its_timeout(server: &Server, args: Value, tag: &str) {
    let result = tokio::time::timeout(Duration::from_secs(30), server.call("terminal", args))
        .await
        .expect("the holding call never ended");
    let s = result.structured_content.unwrap_or(Value::Null);
    assert_eq!(s["status"], "timeout", "{s}");
    all_gone(tag, "the holder was left").await;
}

/// Waits at most 10 s for every process tagged `tag` to be gone.
async fn all_gone(tag: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with_arg(tag).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(processes_with_arg(tag), Vec::<i32>::new(), "{what}");
}

/// Runs the holding call `args` (tagged `tag`) to its timeout while, `after` it started, a
/// trivial call answers in time.
async fn others_answer_while_held(server: &Server, args: Value, tag: &str, after: Duration) {
    let what = format!("{tag} held its pipe");
    let meanwhile = async {
        tokio::time::sleep(after).await;
        a_call_answers(server, &what).await;
    };
    tokio::join!(ends_by_its_timeout(server, args, tag), meanwhile);
}

#[tokio::test]
async fn a_command_holding_its_stdout_or_stderr_stalls_no_other_call() {
    let server = start().await;
    for fd in [1, 2] {
        let tag = tag("held-out");
        let _holder = KillOnDrop(tag.clone());
        let args = json!({"command": holds_output(fd, &tag), "timeout_ms": 3000});
        others_answer_while_held(&server, args, &tag, Duration::from_millis(700)).await;
    }
}

#[tokio::test]
async fn a_command_holding_its_stdin_stalls_no_other_call() {
    let server = start().await;
    let tag = tag("held-in");
    let _holder = KillOnDrop(tag.clone());
    let args = json!({
        "command": holds_input(&tag),
        "stdin": "y".repeat(1 << 20),
        "timeout_ms": 4000,
    });
    others_answer_while_held(&server, args, &tag, Duration::from_millis(1500)).await;
}

/// A background job that holds its stdout: other calls, a shell and the job's own stop work.
#[tokio::test]
async fn a_job_holding_its_stdout_stalls_no_call_and_no_shell() {
    let server = start().await;
    let tag = tag("held-job");
    let _holder = KillOnDrop(tag.clone());
    let id = server
        .background(json!({"command": holds_output(1, &tag)}))
        .await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    a_call_answers(&server, "a job").await;
    let shell = tokio::time::timeout(ANSWER_WITHIN, async {
        let shell = server.open_shell().await;
        server.shell_send(&shell, "echo in-a-shell").await
    })
    .await;
    let (text, _) = shell.expect("a shell did not answer while a job held its pipe");
    assert!(text.contains("in-a-shell"), "{text}");
    let stopped = tokio::time::timeout(
        Duration::from_secs(20),
        server.call("task_stop", json!({"id": id})),
    )
    .await
    .expect("stopping the job did not answer");
    assert_eq!(stopped.is_error, Some(false), "{}", text_of(&stopped));
    all_gone(&tag, "the job was left").await;
}
