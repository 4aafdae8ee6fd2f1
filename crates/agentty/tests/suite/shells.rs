//! The five `shell_*` tools and `terminal({pty: true})` through a real MCP client over stdio,
//! plus the leak check: many open/send/close cycles leave the server at its baseline.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::*;

const PROMPT: Duration = Duration::from_secs(20);

async fn ok(server: &Server, tool: &str, args: Value) -> (String, Value) {
    let result = server.call(tool, args.clone()).await;
    assert_eq!(result.is_error, Some(false), "{tool} {args}: {result:?}");
    (
        text_of(&result),
        result.structured_content.unwrap_or(Value::Null),
    )
}

async fn err(server: &Server, tool: &str, args: Value) -> String {
    let result = server.call(tool, args.clone()).await;
    assert_eq!(result.is_error, Some(true), "{tool} {args}: {result:?}");
    text_of(&result)
}

/// The serving process (the watchdog's child).
fn server_pid(server: &Server) -> i32 {
    super::client::serving_pid(server.pid)
}

/// (open fds, of which terminals) of a process.
fn fds(pid: i32) -> (usize, usize) {
    let mut total = 0;
    let mut ttys = 0;
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        let target = std::fs::read_link(entry.path()).unwrap_or_default();
        let target = target.to_string_lossy();
        // The server's Landlock ruleset is made again when a directory above its state dir
        // changes (other tests' state dirs come and go beside this one's), and each launcher
        // of a confinement hands its seccomp listener to the network supervisor; launchers
        // come and go with the load: neither is a shell's fd.
        if target == "anon_inode:[landlock-ruleset]" || target == "anon_inode:seccomp notify" {
            continue;
        }
        // A PTY spawn's copy of the mounts, let go at the reaper's next sweep (counted by
        // `pty_spawns_let_their_mount_copies_go`).
        if target.starts_with("mnt:[") {
            continue;
        }
        total += 1;
        // An `O_PATH` fd (the sandbox's anchor of the writable `/dev/pts` and `/dev/ptmx`) can
        // neither read nor write: no terminal is held through it.
        let path_only = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            entry.file_name().to_string_lossy()
        ))
        .ok()
        .and_then(|info| {
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        })
        .is_some_and(|flags| flags & libc::O_PATH as u32 != 0);
        if (target.starts_with("/dev/pts") || target == "/dev/ptmx") && !path_only {
            ttys += 1;
        }
    }
    (total, ttys)
}

#[tokio::test]
async fn five_tools_are_listed_with_annotations_and_schemas() {
    let server = start().await;
    let tools = server.client.list_all_tools().await.unwrap();
    for (name, read_only, destructive, open_world) in [
        ("shell_open", false, true, true),
        ("shell_send", false, true, true),
        ("shell_read", true, false, false),
        ("shell_list", true, false, false),
        ("shell_close", false, true, false),
    ] {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        let a = tool.annotations.as_ref().expect("annotations");
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.open_world_hint),
            (Some(read_only), Some(destructive), Some(open_world)),
            "{name}"
        );
        assert!(tool.output_schema.is_some(), "{name}");
    }
}

#[tokio::test]
async fn a_shell_keeps_state_reports_exit_codes_and_is_a_job() {
    let server = start().await;
    std::fs::create_dir(server.workspace().join("src")).unwrap();
    let (text, s) = ok(&server, "shell_open", json!({"cols": 100, "rows": 30})).await;
    assert_eq!(s["id"], "s1", "{text}");
    assert!(text.contains("s1 open"), "{text}");
    let (_, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "cd src && export X=42\n"}),
    )
    .await;
    assert_eq!(
        (s["status"].as_str(), s["exit_code"].as_i64()),
        (Some("done"), Some(0))
    );
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "pwd; echo $X\n"}),
    )
    .await;
    let src = server.workspace().join("src").canonicalize().unwrap();
    assert_eq!(s["output"], format!("{}\n42\n", src.display()));
    assert!(text.contains("[exit 0"), "{text}");
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "false\n"}),
    )
    .await;
    assert_eq!(s["exit_code"], 1, "{text}");

    // shell_read from the send's cursor, task_list and task_output see the same shell.
    let (read, r) = ok(&server, "shell_read", json!({"id": "s1", "since": 0})).await;
    assert!(r["text"].as_str().unwrap().contains("42\n"), "{r}");
    let cursor = &r["next"];
    assert!(
        read.ends_with(&format!(
            "nothing more yet; next read: shell_read({{\"id\": \"s1\", \"since\": {cursor}}})]"
        )),
        "the text carries the cursor: {read}"
    );
    let (list, _) = ok(&server, "task_list", json!({})).await;
    assert!(list.contains("s1"), "{list}");
    let (out, _) = ok(&server, "task_output", json!({"id": "s1", "since": 0})).await;
    assert!(out.contains("42"), "{out}");
    let (list, l) = ok(&server, "shell_list", json!({})).await;
    assert_eq!(l["shells"][0]["cols"], 100, "{list}");
    // Where the shell is now (it went to src), not where it opened.
    assert_eq!(
        l["shells"][0]["workdir"],
        src.display().to_string(),
        "{list}"
    );
    assert!(list.contains(&format!(" in {} ", src.display())), "{list}");
    // A directory named to look like another shell's line stays in this one's.
    ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "mkdir -p \"$(printf 'x\\ns9 [open] bash in here')\" && cd x*\n"}),
    )
    .await;
    let (list, l) = ok(&server, "shell_list", json!({})).await;
    assert!(
        l["shells"][0]["workdir"]
            .as_str()
            .is_some_and(|dir| dir.ends_with("/x\ns9 [open] bash in here")),
        "{l}"
    );
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.contains("x\\ns9 [open]"), "{list}");
    ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "cd ..\n"}),
    )
    .await;
    // A directory the kernel cannot name (past PATH_MAX) is said to be one, not where the
    // shell opened.
    let deep = "d=$(printf 'd%.0s' $(seq 250)); for i in $(seq 18); do mkdir $d && cd $d; done\n";
    ok(&server, "shell_send", json!({"id": "s1", "input": deep})).await;
    let (list, l) = ok(&server, "shell_list", json!({})).await;
    assert_eq!(l["shells"][0]["workdir"], "", "{list}");
    assert!(
        list.contains(" in a directory agentty cannot read "),
        "{list}"
    );
    let back = format!("cd {}\n", src.display());
    ok(&server, "shell_send", json!({"id": "s1", "input": back})).await;

    // A send whose output outgrew the reply and the ring names the file that holds it all.
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "seq 1 100000\n"}),
    )
    .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    // Said as every tool says output left out of a reply.
    assert!(text.contains("earlier bytes are not shown; "), "{text}");
    let path = text
        .split("the full output is in ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no spill path in: {text}"));
    let full = std::fs::read_to_string(path).unwrap();
    assert!(full.contains("\n1\n2\n3\n"), "the head is in the file");
    assert!(full.contains("\n99999\n100000\n"), "so is the tail");

    let (text, _) = ok(&server, "shell_close", json!({"id": "s1"})).await;
    assert!(text.contains("s1 closed"), "{text}");
    let e = err(&server, "shell_send", json!({"id": "s1", "input": "pwd\n"})).await;
    assert!(e.contains("shell s1 was closed (shell_close)"), "{e}");
    let e = err(&server, "shell_send", json!({"id": "s7", "input": "pwd\n"})).await;
    assert!(e.contains("there is no shell s7"), "{e}");
    // Its output is still readable, to the end.
    let (read, r) = ok(&server, "shell_read", json!({"id": "s1"})).await;
    assert_eq!(r["state"], "closed");
    assert!(
        read.ends_with("[end of output: the shell is closed]"),
        "{read}"
    );
}

/// A program that sets the terminal's size (`stty cols`) has the screen follow it: what it
/// draws for that width is not wrapped at the old one, and `shell_list` says the new size.
#[tokio::test]
async fn the_screen_follows_a_size_set_inside_the_terminal() {
    let server = start().await;
    ok(&server, "shell_open", json!({"cols": 100, "rows": 30})).await;
    let wide = "0".repeat(130);
    ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "clear; stty cols 133 rows 41; printf '%0130d\\n' 0\n"}),
    )
    .await;
    let (screen, s) = ok(&server, "shell_read", json!({"id": "s1", "screen": true})).await;
    assert_eq!(s["screen"]["cols"], 133, "{screen}");
    assert!(screen.lines().any(|line| line == wide), "{screen}");
    let (list, _) = ok(&server, "shell_list", json!({})).await;
    assert!(list.contains("133x41"), "{list}");
}

#[tokio::test]
async fn prompts_ctrl_c_and_screens() {
    let server = start().await;
    ok(&server, "shell_open", json!({})).await;
    let started = Instant::now();
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "read -p 'Password: ' pw; echo len ${#pw}\n", "timeout_ms": 60000}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "did not wait out the timeout"
    );
    assert_eq!(s["status"], "awaiting_input", "{text}");
    assert_eq!(s["prompt"], "Password:");
    assert!(text.contains("[awaiting input"), "{text}");
    let (_, s) = ok(&server, "shell_send", json!({"id": "s1", "input": "abc\n"})).await;
    assert_eq!(
        s["output"], "len 3\n",
        "the echo of the answer is not output"
    );

    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "sleep 100\n", "timeout_ms": 300}),
    )
    .await;
    assert_eq!(s["status"], "running", "{text}");
    assert!(text.contains("keeps running it"), "{text}");
    let (_, s) = ok(&server, "shell_send", json!({"id": "s1", "input": "\u{3}"})).await;
    assert_eq!(s["exit_code"], 130, "{s}");

    ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "clear; echo FULLSCREEN; read -s -n1\n"}),
    )
    .await;
    let (screen, s) = ok(&server, "shell_read", json!({"id": "s1", "screen": true})).await;
    assert_eq!(screen.lines().next(), Some("FULLSCREEN"), "{screen}");
    assert_eq!(s["screen"]["cols"], 120);
    let (_, s) = ok(
        &server,
        "shell_read",
        json!({"id": "s1", "screen": true, "cols": 60, "rows": 10}),
    )
    .await;
    assert_eq!(s["screen"]["cols"], 60);
    let (raw, _) = ok(&server, "shell_read", json!({"id": "s1", "raw": true})).await;
    assert!(raw.contains("\\u{1b}"), "escapes are visible: {raw}");
    let e = err(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "x", "wait_for": "("}),
    )
    .await;
    assert!(e.contains("not a valid regular expression"), "{e}");

    // A full-screen program (alternate screen, cursor moves): the reply is its screen, not
    // the flattened stream, and the prompt is not the whole screen.
    let (_, s) = ok(&server, "shell_send", json!({"id": "s1", "input": "x"})).await;
    assert_eq!(s["status"], "done", "{s}");
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "printf '\\e[?1049h\\e[2J\\e[5;10HALTSCREEN'; read -s -n1; printf '\\e[?1049l'\n"}),
    )
    .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    assert!(s["prompt"].is_null(), "{s}");
    let lines: Vec<&str> = s["output"].as_str().unwrap().lines().collect();
    assert_eq!(lines.get(4).copied(), Some("         ALTSCREEN"), "{text}");
    assert!(
        text.contains("a full-screen program waits for keys"),
        "{text}"
    );
    let (_, s) = ok(&server, "shell_send", json!({"id": "s1", "input": "q"})).await;
    assert_eq!(s["status"], "done", "{s}");
    // Drawing in place without the alternate screen (top) counts too, and only for that send.
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "printf '\\e[H\\e[2JTOPLIKE'; read -s -n1\n"}),
    )
    .await;
    assert!(
        text.contains("a full-screen program waits for keys"),
        "{text}"
    );
    assert!(s["output"].as_str().unwrap().starts_with("TOPLIKE"), "{s}");
    ok(&server, "shell_send", json!({"id": "s1", "input": "q"})).await;
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "sleep 0.3; echo waited\n", "timeout_ms": 50}),
    )
    .await;
    assert_eq!(s["status"], "running", "{text}");
    assert!(!text.contains("full-screen"), "{text}");
    let (text, s) = ok(&server, "shell_send", json!({"id": "s1", "input": ""})).await;
    assert_eq!(s["exit_code"], 0, "an empty send waits for it: {text}");
    assert!(text.contains("waited"), "{text}");

    // A program that reads without a prompt (cat) is said to show none, not quoted as "".
    let (text, s) = ok(&server, "shell_send", json!({"id": "s1", "input": "cat\n"})).await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    assert!(text.contains("it shows no prompt"), "{text}");
    let (_, s) = ok(&server, "shell_send", json!({"id": "s1", "input": "\u{4}"})).await;
    assert_eq!(s["status"], "done", "{s}");
}

#[tokio::test]
async fn a_fifth_shell_is_refused_and_an_idle_one_explains_itself() {
    let server = start_with(&["--shell-idle-ms", "1500"]).await;
    for i in 1..=4 {
        let (_, s) = ok(&server, "shell_open", json!({})).await;
        assert_eq!(s["id"], format!("s{i}"));
    }
    let e = err(&server, "shell_open", json!({})).await;
    assert!(e.contains("already has 4 open shells"), "{e}");
    assert!(e.contains("s4"), "the refusal lists them: {e}");
    // Keep s1 in use by reading it; the others go idle and are reaped.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(2500) {
        ok(&server, "shell_read", json!({"id": "s1"})).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let e = err(&server, "shell_send", json!({"id": "s2", "input": "pwd\n"})).await;
    assert!(e.contains("closed for inactivity"), "{e}");
    assert!(e.contains("cwd, env, running programs"), "{e}");
    let (list, _) = ok(&server, "task_list", json!({})).await;
    assert!(list.contains("s2"), "{list}");
    let (_, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "echo alive\n"}),
    )
    .await;
    assert_eq!(s["output"], "alive\n");
}

#[tokio::test]
async fn terminal_pty_runs_on_a_terminal_and_returns_at_a_prompt() {
    let server = start().await;
    let (text, s) = server
        .terminal(json!({"command": "test -t 0 && test -t 1 && echo tty", "pty": true}))
        .await;
    assert_eq!(s["stdout"], "tty\n", "{text}");
    assert_eq!(s["exit_code"], 0);
    let started = Instant::now();
    let (text, s) = server
        .terminal(json!({"command": "printf 'Proceed? [y/N] '; read a; echo never", "pty": true, "timeout_ms": 60000}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(15), "{text}");
    assert!(
        text.contains("wait for keyboard input at \"Proceed? [y/N]\""),
        "{text}"
    );
    assert!(!s["stdout"].as_str().unwrap().contains("never"));
    // The note is one of the notes, before the closing sandbox line, as on the pipe path.
    let (note, sandbox) = (
        text.find("[note]").unwrap(),
        text.find("[sandbox]").unwrap(),
    );
    assert!(note < sandbox, "{text}");
    assert!(
        text.trim_end().ends_with(s["sandbox"].as_str().unwrap()),
        "{text}"
    );
}

#[tokio::test]
async fn two_hundred_cycles_leave_no_fd_pty_or_process_behind() {
    let server = start().await;
    let pid = server_pid(&server);
    // Warm up once so lazily created runtime fds (reactor, reaper) are in the baseline.
    ok(&server, "shell_open", json!({})).await;
    ok(&server, "shell_close", json!({"id": "s1"})).await;
    let baseline = fds(pid);
    assert_eq!(baseline.1, 0, "no terminal held after close");
    // The server's own helpers, if any, are children too: they are the baseline.
    let helpers = agentty_testkit::children(pid);
    for i in 2..=201 {
        let id = format!("s{i}");
        let (_, s) = ok(&server, "shell_open", json!({})).await;
        assert_eq!(s["id"], id);
        let (_, s) = ok(
            &server,
            "shell_send",
            json!({"id": id, "input": "echo $((6*7))\n"}),
        )
        .await;
        assert_eq!(s["output"], "42\n");
        ok(&server, "shell_close", json!({"id": id})).await;
    }
    let deadline = Instant::now() + PROMPT;
    while (fds(pid) != baseline || agentty_testkit::children(pid) != helpers)
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(fds(pid), baseline, "fd count back at baseline, no PTY held");
    assert_eq!(agentty_testkit::children(pid), helpers, "no shell left");
}

/// The server's descriptors of mount namespaces: the session's, the spare launcher's, and the
/// copies of the mounts PTY spawns keep past their child's exit.
fn mount_copies(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("mnt:["))
        .count()
}

/// A spawn with a `/dev/pts` of its own runs in a copy of the mounts, which the server keeps
/// past the child's exit so the child does not tear it down before its exit is told. The
/// server keeps a bounded number, and none a sweep after the last child was reaped.
#[tokio::test]
async fn pty_spawns_let_their_mount_copies_go() {
    let server = start().await;
    let pid = server_pid(&server);
    let pty_true = json!({"argv": ["true"], "pty": true});
    // The first spawn makes the spare launcher, which holds its copy until the next.
    server.terminal(pty_true.clone()).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let baseline = mount_copies(pid);
    let mut most = 0;
    for _ in 0..40 {
        let (text, _) = server.terminal(pty_true.clone()).await;
        assert!(text.contains("exit 0"), "{text}");
        most = most.max(mount_copies(pid) - baseline);
    }
    // At most 16 kept between sweeps, and the one of a spawn not yet counted as reaped.
    assert!(most <= 17, "{most} copies of the mounts held at once");
    let deadline = Instant::now() + Duration::from_secs(3);
    while mount_copies(pid) > baseline && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        mount_copies(pid),
        baseline,
        "copies of the mounts held after their children"
    );
    assert!(
        most > 0,
        "no copy of the mounts was kept past a child's exit"
    );
}

/// A shell that exits during a send: the reply says how it ended, and a shell_list right after
/// agrees that it is gone (it used to list it as open for a moment).
#[tokio::test]
async fn a_shell_exiting_during_a_send_is_reported_ended_at_once() {
    let server = start().await;
    for _ in 0..3 {
        let id = server.open_shell().await;
        let (text, _) = server.shell_send(&id, "exit 3\n").await;
        assert!(text.contains("ended during this send (exited 3)"), "{text}");
        let r = server.call("shell_list", json!({})).await;
        let s = r.structured_content.unwrap();
        let entry = s["shells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id.as_str())
            .cloned()
            .unwrap();
        assert_eq!(entry["state"], "exited 3", "{entry}");
    }
}

/// When a shell's output outgrows its buffer and the full text cannot be saved (here the
/// server's spill directory, made at start, is swapped for a file), `shell_read` says so, in the
/// same words as `task_output`.
#[tokio::test]
async fn shell_read_says_when_the_full_output_could_not_be_saved() {
    let server = start().await;
    let spill = server.state.path().join("spill");
    let own = std::fs::read_dir(&spill)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_dir(&own).unwrap();
    std::fs::write(&own, "not a directory").unwrap();
    let id = server.open_shell().await;
    let (text, _) = server.shell_send(&id, "seq 1 60000; echo done\n").await;
    assert!(text.contains("done"), "{text}");
    let r = server
        .call("shell_read", json!({"id": id, "since": 0}))
        .await;
    let text = text_of(&r);
    let s = r.structured_content.unwrap();
    assert!(
        text.contains("scrolled out") && text.contains("could not be saved"),
        "{text}"
    );
    assert!(
        s["spill_error"].as_str().is_some_and(|e| !e.is_empty()),
        "{s}"
    );
    assert!(s["spill_path"].is_null(), "{s}");
}

/// A send's `timeout_ms` counts from the request, the wait behind another send to the same
/// shell included: it returns at its own time, typing nothing, and says why.
#[tokio::test]
async fn a_send_behind_another_returns_at_its_own_timeout_typing_nothing() {
    let server = std::sync::Arc::new(start().await);
    let id = server.open_shell().await;
    let first = {
        let (server, id) = (server.clone(), id.clone());
        tokio::spawn(async move {
            server
                .call(
                    "shell_send",
                    json!({"id": id, "input": "sleep 3; echo first\n", "timeout_ms": 60000}),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = server
        .call(
            "shell_send",
            json!({"id": id, "input": "echo second\n", "timeout_ms": 300}),
        )
        .await;
    let said = text_of(&second);
    assert_eq!(second.is_error, Some(true), "{said}");
    assert!(said.contains("nothing was typed"), "{said}");
    let first = first.await.unwrap();
    assert!(text_of(&first).contains("first"), "{}", text_of(&first));
    let (text, _) = server.shell_send(&id, "echo after\n").await;
    assert!(text.contains("after") && !text.contains("second"), "{text}");
}

/// Input the running program does not read, more than the terminal's queues hold: the send
/// returns at its timeout, says how much was not typed, and `shell_close` still stops it.
#[tokio::test]
async fn input_the_program_does_not_read_is_cut_at_the_timeout_and_said() {
    let server = start().await;
    let id = server.open_shell().await;
    let r = server
        .call(
            "shell_send",
            json!({"id": id, "input": "stty raw -echo; sleep 60\n", "timeout_ms": 300}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
    let lines = format!("{}\n", "x".repeat(999)).repeat(300);
    let started = Instant::now();
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": id, "input": lines, "timeout_ms": 1000}),
    )
    .await;
    assert!(
        started.elapsed() < PROMPT,
        "held up: {:?}",
        started.elapsed()
    );
    assert_eq!(s["status"], "running", "{s}");
    let untyped = s["untyped_bytes"].as_u64().unwrap();
    assert!(untyped > 0 && untyped < 300_000, "{s}");
    assert!(
        text.contains(&format!(
            "the last {untyped} bytes of the input were not typed"
        )),
        "{text}"
    );
    ok(&server, "shell_close", json!({"id": id})).await;
}

/// A shell's state is said the same way by every tool: "open", then "closed".
#[tokio::test]
async fn a_shell_is_open_then_closed_in_every_list() {
    let server = start().await;
    let id = server.open_shell().await;
    for tool in ["task_list", "shell_list"] {
        let text = text_of(&server.call(tool, json!({})).await);
        let line = text.lines().find(|l| l.contains(&id)).unwrap_or_default();
        assert!(
            line.contains("open") && !line.contains("running"),
            "{tool}: {text}"
        );
    }
    ok(&server, "shell_close", json!({"id": id})).await;
    for tool in ["task_list", "shell_list"] {
        let text = text_of(&server.call(tool, json!({})).await);
        let line = text.lines().find(|l| l.contains(&id)).unwrap_or_default();
        assert!(line.contains("closed"), "{tool}: {text}");
    }
}

/// A line typed without Enter is named as it is (not garbled with the prompt), and the
/// transcript from cursor 0 shows each command once.
#[tokio::test]
async fn a_half_typed_line_and_the_transcript_read_cleanly() {
    let server = start().await;
    let id = server.open_shell().await;
    let (text, _) = server.shell_send(&id, "pwd").await;
    assert!(text.contains("rest of the line at \"pwd\""), "{text}");
    assert!(!text.contains("pwd# pwd"), "{text}");
    let (text, _) = server.shell_send(&id, "\n").await;
    assert!(text.contains("[exit 0"), "{text}");
    server.shell_send(&id, "echo hi\n").await;
    let read = text_of(
        &server
            .call("shell_read", json!({"id": id, "since": 0}))
            .await,
    );
    assert_eq!(read.matches("pwd").count(), 1, "{read}");
    assert_eq!(read.matches("echo hi").count(), 1, "{read}");
}

/// The guard judges the line a shell's line editor would run, not the keys as sent: an
/// editing key (Ctrl+A, an arrow or Home key, Tab) could make it run another line than the one
/// judged, so a send holding one is refused while the shell's editor reads, with nothing typed;
/// Backspace and Ctrl+U are applied before judging. A stand-in `mkfs.ext4` records whether it
/// ran.
#[tokio::test]
async fn a_line_is_judged_as_the_line_editor_would_run_it() {
    let server = start().await;
    let id = server.open_shell().await;
    let marker = server.workspace().join("ran-mkfs");
    server
        .shell_send(&id, "mkfs.ext4() { echo \"$*\" >> ran-mkfs; }\n")
        .await;
    let send = |input: &'static str| {
        let server = &server;
        let id = id.clone();
        async move {
            server
                .call("shell_send", json!({"id": id, "input": input}))
                .await
        }
    };
    // Ctrl+A moves to the start of the line: the editor would run `mkfs.ext4 /dev/sdz`.
    for input in [
        "/dev/sdz\u{1}mkfs.ext4 \n",
        "/dev/sdz\u{1b}[Hmkfs.ext4 \n",
        "/dev/sdz\u{1b}OHmkfs.ext4 \n",
    ] {
        let result = send(input).await;
        let text = text_of(&result);
        assert_eq!(result.is_error, Some(true), "{input:?}: {text}");
        assert!(text.contains("Send the line plainly"), "{input:?}: {text}");
        assert!(text.contains("Nothing was typed"), "{input:?}: {text}");
    }
    // Backspace and Ctrl+U change the line before the guard reads it, in one send or two.
    for input in [
        "echo \u{7f}\u{7f}\u{7f}\u{7f}\u{7f}mkfs.ext4 /dev/sdz\n",
        "echo \u{8}\u{8}\u{8}\u{8}\u{8}mkfs.ext4 /dev/sdz\n",
        "echo hi\u{15}mkfs.ext4 /dev/sdz\n",
    ] {
        let text = text_of(&send(input).await);
        assert!(
            text.contains("blocked by guard rule `format-disk`"),
            "{input:?}: {text}"
        );
    }
    server.shell_send(&id, "echo x").await;
    let text = text_of(&send("\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}mkfs.ext4 /dev/sdz\n").await);
    assert!(
        text.contains("blocked by guard rule `format-disk`"),
        "{text}"
    );
    server.shell_send(&id, "\u{15}").await;
    // A shell started in the shell edits its lines the same way.
    server.shell_send(&id, "bash --norc --noprofile\n").await;
    let result = send("/dev/sdz\u{1}mkfs.ext4 \n").await;
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    server.shell_send(&id, "exit\n").await;
    // Ctrl+Z is a signal for a busy job, and an editing key at the prompt.
    let result = send("\u{1a}").await;
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": id, "input": "sleep 30\n", "timeout_ms": 300}),
    )
    .await;
    assert_eq!(s["status"], "running", "{text}");
    let (text, _) = ok(&server, "shell_send", json!({"id": id, "input": "\u{1a}"})).await;
    assert!(text.contains("Stopped"), "{text}");
    server.shell_send(&id, "kill -9 %1\n").await;
    let (text, _) = server.shell_send(&id, "echo typed-after; ls\n").await;
    assert!(text.contains("typed-after"), "{text}");
    assert!(
        !marker.exists(),
        "mkfs.ext4 ran: {:?}",
        std::fs::read_to_string(&marker)
    );
}

/// A program that reads the keyboard itself (an editor) gets every key as today: Escape and
/// `:wq` reach vim.
#[tokio::test]
async fn a_program_reading_the_keyboard_gets_editing_keys() {
    let server = start().await;
    let id = server.open_shell().await;
    let (text, s) = server
        .shell_send(&id, "vim -u NONE -N -n notes.txt\n")
        .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": id, "input": "ihello\u{1b}"}),
    )
    .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    let (text, s) = ok(&server, "shell_send", json!({"id": id, "input": ":wq\n"})).await;
    assert_eq!(s["status"], "done", "{text}");
    let written = std::fs::read_to_string(server.workspace().join("notes.txt")).unwrap();
    assert_eq!(written, "hello\n");
}

/// A program that starts waiting for keys after its send returned: a read to the end says so,
/// with the line it waits at (no newline ends it, so the stream does not hold it yet), and
/// how to answer; so does the list. A read while it runs, and one at the prompt, say nothing
/// of the kind.
#[tokio::test]
async fn a_read_says_when_a_program_waits_for_keys() {
    let server = start().await;
    ok(&server, "shell_open", json!({})).await;
    let awaited = |s: &Value| s["awaiting_input"].is_string();
    let read_until_awaited = async |what: &str| {
        let until = Instant::now() + PROMPT;
        loop {
            let (text, s) = ok(&server, "shell_read", json!({"id": "s1"})).await;
            if awaited(&s) {
                return (text, s);
            }
            assert!(Instant::now() < until, "{what}: never said to wait: {text}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };

    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "echo start; sleep 1; read -p 'Continue? [y/N] ' x; echo got $x\n", "timeout_ms": 200}),
    )
    .await;
    assert_eq!(s["status"], "running", "{text}");
    let (text, s) = ok(&server, "shell_read", json!({"id": "s1"})).await;
    assert!(!awaited(&s), "sleeping is not waiting for keys: {text}");
    assert!(text.contains("nothing more yet"), "{text}");

    let (text, s) = read_until_awaited("read -p").await;
    assert_eq!(s["awaiting_input"], "Continue? [y/N]", "{s}");
    assert!(
        text.contains(
            "[awaiting input: the program waits for keyboard input at \"Continue? [y/N]\""
        ),
        "{text}"
    );
    assert!(!text.contains("nothing more yet"), "{text}");
    assert!(text.contains("[next read: shell_read("), "{text}");
    let (list, _) = ok(&server, "shell_list", json!({})).await;
    assert!(
        list.contains("waiting for keyboard input at \"Continue? [y/N]\""),
        "{list}"
    );
    let (text, _) = ok(&server, "task_output", json!({"id": "s1"})).await;
    assert!(
        text.contains("[awaiting input: the program waits for keyboard input at"),
        "task_output reads the same job: {text}"
    );
    let (_, s) = ok(&server, "shell_send", json!({"id": "s1", "input": "y\n"})).await;
    assert_eq!(s["output"], "got y\n", "{s}");
    let (text, s) = ok(&server, "shell_read", json!({"id": "s1"})).await;
    assert!(!awaited(&s), "at its prompt, nobody else waits: {text}");
    let (list, _) = ok(&server, "shell_list", json!({})).await;
    assert!(list.contains("at its prompt"), "{list}");

    // A program's password prompt (echo off): the read points at the secret entry.
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "sleep 1; python3 -c \"import getpass; getpass.getpass('Passphrase: ')\"\n", "timeout_ms": 200}),
    )
    .await;
    assert_eq!(s["status"], "running", "{text}");
    let (text, s) = read_until_awaited("getpass").await;
    assert_eq!(s["awaiting_input"], "Passphrase:", "{s}");
    assert!(text.contains("asks for a password"), "{text}");
    // Who asks is named: any program can print a prompt (review 35 F9).
    assert!(
        text.contains("the program \"/") && text.contains("python3 -c \\\"import getpass"),
        "{text}"
    );
    assert!(text.contains("\"secret\""), "{text}");
    let (list, _) = ok(&server, "shell_list", json!({})).await;
    assert!(
        list.contains("· running ")
            && list.contains("python3")
            && list.contains(", waiting for keyboard input at \"Passphrase:\""),
        "the list names the program and its question: {list}"
    );
    ok(&server, "shell_send", json!({"id": "s1", "input": "\u{3}"})).await;

    // The shell waiting for the rest of a line (an open quote).
    let (text, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "echo 'open\n"}),
    )
    .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    let (text, s) = read_until_awaited("continuation").await;
    assert!(
        text.contains("the shell waits for the rest of the line"),
        "{text}"
    );
    assert_eq!(s["awaiting_input"], ">", "the continuation prompt: {s}");
    let (_, s) = ok(
        &server,
        "shell_send",
        json!({"id": "s1", "input": "closed'\n"}),
    )
    .await;
    assert_eq!(s["status"], "done", "{s}");
}
