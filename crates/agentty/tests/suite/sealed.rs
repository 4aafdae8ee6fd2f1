//! Sealed secret entry (docs/BEHAVIOUR.md §4 *Sealed entry*), through the real binary: the
//! attacks of issue 42 on a password the user types into a program of the agent's shell, each
//! as a root server (the session's namespaces) and as an unprivileged one (`setpriv` to nobody).
//! The program asking is `python3`'s `getpass`, which keeps the value in its memory and echoes it
//! back (in two writes) for the masking to catch.

use std::time::Duration;

use serde_json::{Value, json};

use super::client::*;
use super::planted::{Setup, serve, view_request};

/// A program that reads a password as `getpass` does, echoes it back in two writes, then waits
/// `$1` seconds (holding it in memory). `$2` is a tag of the test's own that its attacks find it
/// by (tests run side by side: as nobody, without a PID namespace, `pgrep` sees them all).
const PROMPT: &str = "python3 -c 'import getpass, sys, time; p = getpass.getpass(\"Password: \"); \
sys.stdout.write(\"ec\" + \"ho: \" + p[:6]); sys.stdout.flush(); time.sleep(0.002); print(p[6:]); \
time.sleep(float(sys.argv[1]))'";

/// The prompt, holding the secret `hold_s` seconds, tagged `tag`.
fn prompt(hold_s: u32, tag: &str) -> String {
    format!("{PROMPT} {hold_s} {tag}\n")
}

/// A tag no other test's processes carry.
fn a_tag() -> String {
    format!("tag{}", agentty_core::random::hex(6))
}

/// Reads the memory of the newest process tagged `$4` for `$3` seconds, through `/proc/<pid>/mem`
/// (`mem`) or `process_vm_readv` (`vm`), and says in `$2` what it found and every error. Hiding
/// from the entry's checks as it does (an attacker's pass): `-zombie`, its main thread ends on its
/// own (`SYS_exit`) so `stat` shows a zombie while a thread reads; `-group`, it joins the
/// program's process group, which the person is shown. It says `hidden` once so.
const READER: &str = r#"
import ctypes, os, re, subprocess, sys, threading, time
mode, out = sys.argv[1], open(sys.argv[2], "w")
how, hide = (mode.split("-") + [""])[:2]
def say(*a): print(*a, file=out, flush=True)
libc = ctypes.CDLL(None, use_errno=True)
deadline, pid = time.time() + float(sys.argv[3]), None
def find():
    global pid
    while pid is None and time.time() < deadline:
        found = subprocess.run(["pgrep", "-n", "-f", "getpass.*" + sys.argv[4]], capture_output=True, text=True).stdout.split()
        pid = int(found[0]) if found else None
        time.sleep(0.05)
    say("reading", pid)
def hidden_then_read():
    find()
    if hide == "group":
        os.setpgid(0, os.getpgid(pid))
        say("hidden")
    read()
def read():
    class Iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    errors, hit = set(), None
    while hit is None and time.time() < deadline:
        try:
            maps = open(f"/proc/{pid}/maps").read().splitlines()
        except OSError as e:
            errors.add("maps: " + e.strerror)
            maps = [f"{a:x}-{a + 4096:x} rw-p" for a in (0x400000,)]
        for line in maps:
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            if "rw" not in line.split()[1] or end - start > 64 << 20:
                continue
            try:
                if how == "mem":
                    with open(f"/proc/{pid}/mem", "rb", 0) as f:
                        f.seek(start)
                        data = f.read(end - start)
                else:
                    buf = ctypes.create_string_buffer(end - start)
                    local, remote = Iovec(ctypes.addressof(buf), end - start), Iovec(start, end - start)
                    n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
                    if n < 0:
                        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
                    data = buf.raw[:n]
            except OSError as e:
                errors.add(how + ": " + e.strerror)
                continue
            m = re.search(rb"sealed-[0-9a-f]{16}", data)
            if m:
                hit = m.group()
                break
        time.sleep(0.05)
    say("found", hit.hex() if hit else None)
    say("errors", sorted(errors))
if hide == "zombie":
    threading.Thread(target=hidden_then_read).start()
    time.sleep(0.3)
    say("hidden")
    libc.syscall(60, 0)
elif hide:
    hidden_then_read()
else:
    find()
    read()
"#;

/// How long an attack started in the background may take to end.
const ATTACK_WITHIN: Duration = Duration::from_secs(20);

/// A fresh secret for one test.
fn a_secret() -> String {
    format!("sealed-{}", agentty_core::random::hex(8))
}

/// Whether a tracer is attached to the `getpass` program tagged `tag` (`TracerPid`).
fn getpass_traced(tag: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains("getpass.getpass")
                && cmdline.contains(tag)
                && status.lines().any(|l| {
                    l.strip_prefix("TracerPid:")
                        .is_some_and(|t| t.trim() != "0")
                })
        })
}

/// The web view's address, from the server's log.
async fn view_address(setup: &Setup) -> String {
    let line = logged(
        &setup.log,
        &["web view at http://"],
        Duration::from_secs(20),
    )
    .await
    .expect("the view's address");
    line.split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned()
}

/// The view's key, logged in with the token.
fn view_key(setup: &Setup, address: &str) -> String {
    let token = std::fs::read_to_string(setup.server.state.path().join("token")).unwrap();
    let body = json!({ "token": token.trim() }).to_string();
    let login = view_request(
        address,
        &format!(
            "POST /view/login HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    let key: Value = serde_json::from_str(login.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    key["key"].as_str().unwrap().to_owned()
}

/// What the page is answered when the user enters `secret` for the one request waiting: the
/// status line and the body.
fn enter(address: &str, key: &str, secret: &str) -> (String, String) {
    let events = view_request(
        address,
        &format!("GET /view/events HTTP/1.0\r\nHost: {address}\r\nX-Agentty-View: {key}\r\n\r\n"),
    );
    let data = events
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no state event: {events}"));
    let state: Value = serde_json::from_str(data).unwrap();
    let id = state["secrets"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no request waits: {state}"));
    let body = json!({ "id": id, "secret": secret }).to_string();
    let answer = view_request(
        address,
        &format!(
            "POST /view/secret HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             X-Agentty-View: {key}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// A secret entered on the page for the waiting request is refused (409) saying `said`.
async fn entry_refused(setup: &Setup, said: &str) {
    let address = view_address(setup).await;
    let key = view_key(setup, &address);
    let (status, body) = enter(&address, &key, &a_secret());
    assert!(status.contains("409"), "{said}: {status}: {body}");
    assert!(body.contains(said), "{said}: {body}");
}

/// A server as `who` with the view on, a shell, and `attack` started in it in the background
/// (its output in `attack.log`, then `attack-done`); then the password prompt, waiting.
/// `TAG` in `attack` is the prompt's tag.
async fn prompt_after(who: Who, flags: &[&str], attack: &str, hold_s: u32) -> Prompted {
    prompt_line_after(who, flags, attack, |tag| prompt(hold_s, tag)).await
}

/// [`prompt_after`] with the line that starts the prompt made from the tag by `line`.
async fn prompt_line_after(
    who: Who,
    flags: &[&str],
    attack: &str,
    line: impl Fn(&str) -> String,
) -> Prompted {
    // bash whoever runs it: a host without $SHELL gives nobody /bin/sh (nobody's login shell is
    // nologin), and the attacks below are written for bash's job control.
    let mut all = vec!["--view", "127.0.0.1:0", "--shell", "/bin/bash"];
    all.extend_from_slice(flags);
    let setup = serve(who, false, &all).await;
    std::fs::write(setup.ws().join("reader.py"), READER).unwrap();
    let shell = setup.server.open_shell().await;
    let tag = a_tag();
    let attack = attack.replace("TAG", &tag);
    if !attack.is_empty() {
        let (text, _) = setup
            .server
            .shell_send(
                &shell,
                &format!("({attack}; echo attack-done) > attack.log 2>&1 &\n"),
            )
            .await;
        assert!(text.contains("[1]"), "{text}");
    }
    let (text, s) = setup.server.shell_send(&shell, &line(&tag)).await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    let asked = setup
        .server
        .call(
            "shell_send",
            json!({"id": shell, "secret": "the test password"}),
        )
        .await;
    assert_eq!(asked.is_error, Some(false), "{}", text_of(&asked));
    Prompted { setup, shell, tag }
}

/// A server whose shell's program waits for a password.
struct Prompted {
    setup: Setup,
    shell: String,
    tag: String,
}

/// What the attack wrote, once it said it was done.
async fn attack_log(setup: &Setup) -> String {
    let deadline = tokio::time::Instant::now() + ATTACK_WITHIN;
    loop {
        let log = std::fs::read_to_string(setup.ws().join("attack.log")).unwrap_or_default();
        if log.contains("attack-done") {
            return log;
        }
        assert!(tokio::time::Instant::now() < deadline, "attack: {log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Everything the shell printed, through the server (masked as the model sees it).
async fn shell_output(setup: &Setup, shell: &str, wanted: &str) -> String {
    let deadline = tokio::time::Instant::now() + ATTACK_WITHIN;
    loop {
        let r = setup
            .server
            .call("shell_read", json!({"id": shell, "since": 0}))
            .await;
        let text = text_of(&r);
        if text.contains(wanted) || tokio::time::Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The user enters the secret; it is accepted, read, and echoed back masked.
async fn entered_and_masked(setup: &Setup, shell: &str, secret: &str) {
    let address = view_address(setup).await;
    let key = view_key(setup, &address);
    let (status, body) = enter(&address, &key, secret);
    assert!(status.contains("200"), "{status}: {body}");
    let out = shell_output(setup, shell, "echo: ").await;
    assert!(out.contains("echo: [secret]"), "{out}");
    assert!(!out.contains(secret), "the secret came back out: {out}");
}

/// The demo of issue 42: `strace -p` of the program, started in the agent's own shell before the
/// secret is asked for, fails (the sandbox's seccomp filter, `CAP_SYS_PTRACE` dropped), so the
/// entry goes ahead and nothing of it reaches `out`.
async fn strace_attack(who: Who) {
    let attack = "sleep 1; strace -f -e trace=read -p $(pgrep -n -f TAG) -o out";
    let Prompted { setup, shell, .. } = prompt_after(who, &[], attack, 0).await;
    let log = attack_log(&setup).await;
    assert!(
        log.contains("ptrace") && log.contains("Operation not permitted"),
        "{log}"
    );
    let secret = a_secret();
    entered_and_masked(&setup, &shell, &secret).await;
    let out = std::fs::read_to_string(setup.ws().join("out")).unwrap_or_default();
    assert!(!out.contains(&secret), "strace saw it: {out}");
}

#[tokio::test]
#[ignore = "needs strace (scripts/test runs it where strace is installed)"]
async fn sealed_strace_attack_fails_as_root_needs_strace() {
    strace_attack(Who::Root).await;
}

#[tokio::test]
#[ignore = "needs strace (scripts/test runs it where strace is installed)"]
async fn sealed_strace_attack_fails_unprivileged_needs_strace() {
    strace_attack(Who::Nobody).await;
}

/// `gdb -p` of the program, from the agent's shell: refused the same way.
async fn gdb_attack(who: Who) {
    let attack = "sleep 1; gdb -nx -batch -p $(pgrep -n -f TAG) -ex 'gcore core'";
    let Prompted { setup, shell, .. } = prompt_after(who, &[], attack, 0).await;
    let log = attack_log(&setup).await;
    assert!(log.contains("ptrace: Operation not permitted"), "{log}");
    entered_and_masked(&setup, &shell, &a_secret()).await;
    assert!(!setup.ws().join("core").exists());
}

#[tokio::test]
#[ignore = "needs gdb (scripts/test runs it where gdb is installed)"]
async fn sealed_gdb_attach_fails_as_root_needs_gdb() {
    gdb_attack(Who::Root).await;
}

#[tokio::test]
#[ignore = "needs gdb (scripts/test runs it where gdb is installed)"]
async fn sealed_gdb_attach_fails_unprivileged_needs_gdb() {
    gdb_attack(Who::Nobody).await;
}

/// The program's memory read directly:
/// - `process_vm_readv` from the agent's shell is refused (seccomp);
/// - `/proc/<pid>/mem` from another spawn (a `terminal` background job) is refused (Landlock
///   keeps a domain out of another's processes);
/// - `/proc/<pid>/mem` from the agent's shell (the same Landlock domain) would work, so the
///   entry is refused while such a process runs.
async fn memory_readers(who: Who) {
    let attack = "python3 reader.py vm vm.log 1 TAG";
    let Prompted { setup, shell, tag } = prompt_after(who, &[], attack, 1).await;
    let log = attack_log(&setup).await;
    let vm = std::fs::read_to_string(setup.ws().join("vm.log")).unwrap();
    assert!(vm.contains("vm: Operation not permitted"), "{log}{vm}");
    // From another spawn, reading while the secret is entered.
    setup
        .server
        .background(json!({"command": format!("python3 reader.py mem other.log 3 {tag}")}))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let secret = a_secret();
    entered_and_masked(&setup, &shell, &secret).await;
    let deadline = tokio::time::Instant::now() + ATTACK_WITHIN;
    let other = loop {
        let other = std::fs::read_to_string(setup.ws().join("other.log")).unwrap_or_default();
        if other.contains("errors") || tokio::time::Instant::now() > deadline {
            break other;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(other.contains("found None"), "{other}");
    assert!(other.contains("Permission denied"), "{other}");
    // The program ends (it held the secret 1 s): the shell is at its prompt again.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // From the shell itself: the entry is refused while the reader runs.
    let (text, _) = setup
        .server
        .shell_send(
            &shell,
            &format!("python3 reader.py mem same.log 3 {tag}2 &\n"),
        )
        .await;
    assert!(text.contains("[1]"), "{text}");
    let (text, s) = setup
        .server
        .shell_send(&shell, &prompt(0, &format!("{tag}2")))
        .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    let asked = setup
        .server
        .call("shell_send", json!({"id": shell, "secret": "another"}))
        .await;
    assert_eq!(asked.is_error, Some(false), "{}", text_of(&asked));
    entry_refused(&setup, "could read the program's memory").await;
    let same = loop {
        let same = std::fs::read_to_string(setup.ws().join("same.log")).unwrap_or_default();
        if same.contains("errors") {
            break same;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(same.contains("found None"), "{same}");
}

/// A reader started in the shell that hides from the entry's checks (an attacker's pass found
/// both): one whose main thread ended (`stat`: a zombie, a thread reading on), and one that
/// joined the program's process group (which the checks took for the program's own). The entry
/// is refused while either runs, and neither finds the secret.
async fn hidden_memory_readers(who: Who) {
    for hide in ["zombie", "group"] {
        let log = format!("{hide}.log");
        // `exec`: the reader is the shell's own child, with no wrapper around it to be seen.
        let attack = format!("exec python3 reader.py mem-{hide} {log} 5 TAG");
        let Prompted { setup, .. } = prompt_after(who, &[], &attack, 3).await;
        // Hidden before the entry is checked.
        let path = setup.ws().join(&log);
        let deadline = tokio::time::Instant::now() + ATTACK_WITHIN;
        while !std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("hidden")
        {
            assert!(tokio::time::Instant::now() < deadline, "{hide}: never hid");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        entry_refused(&setup, "could read the program's memory").await;
        let found = loop {
            let found = std::fs::read_to_string(&path).unwrap_or_default();
            if found.contains("errors") {
                break found;
            }
            assert!(tokio::time::Instant::now() < deadline, "{hide}: {found}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(found.contains("found None"), "{hide}: {found}");
    }
}

/// The program shown is not alone: a reader piped to it (another program of the job, which the
/// checks took for the program's own), or code loaded into it by a variable the agent set
/// (`LD_PRELOAD`: an attacker's pass preloaded a `read()` that copied the password). Refused,
/// each saying why.
async fn programs_not_alone(who: Who) {
    let cases = [
        (
            "python3 reader.py mem pipe.log 5 TAG | ",
            "another program of the reading pipeline",
        ),
        (
            "LD_PRELOAD=/nonexistent-agentty.so ",
            "runs with LD_PRELOAD set",
        ),
    ];
    for (before, said) in cases {
        let Prompted { setup, .. } = prompt_line_after(who, &[], "", |tag| {
            format!("{before}{}", prompt(3, tag)).replace("TAG", tag)
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        entry_refused(&setup, said).await;
    }
}

#[tokio::test]
async fn sealed_programs_not_alone_are_refused_as_root() {
    programs_not_alone(Who::Root).await;
}

#[tokio::test]
async fn sealed_programs_not_alone_are_refused_unprivileged() {
    programs_not_alone(Who::Nobody).await;
}

#[tokio::test]
async fn sealed_hidden_memory_readers_fail_as_root() {
    hidden_memory_readers(Who::Root).await;
}

#[tokio::test]
async fn sealed_hidden_memory_readers_fail_unprivileged() {
    hidden_memory_readers(Who::Nobody).await;
}

#[tokio::test]
async fn sealed_memory_readers_fail_as_root() {
    memory_readers(Who::Root).await;
}

#[tokio::test]
async fn sealed_memory_readers_fail_unprivileged() {
    memory_readers(Who::Nobody).await;
}

/// Unconfined (`auto` mode), a tracer can attach: the entry is refused while one is attached.
async fn traced_reader(who: Who) {
    let Prompted { setup, tag, .. } = prompt_after(who, &["--mode", "auto"], "", 0).await;
    // `[g]etpass`: not the command line of the shell that runs this one.
    setup
        .server
        .background(json!({
            "command": format!("strace -f -e trace=read -o traced.out -p $(pgrep -n -f '[g]etpass.*{tag}')")
        }))
        .await;
    let deadline = tokio::time::Instant::now() + ATTACK_WITHIN;
    while !getpass_traced(&tag) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "strace never attached"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let address = view_address(&setup).await;
    let key = view_key(&setup, &address);
    let secret = a_secret();
    let (status, body) = enter(&address, &key, &secret);
    assert!(status.contains("409"), "{status}: {body}");
    assert!(body.contains("tracer"), "{body}");
    let traced = std::fs::read_to_string(setup.ws().join("traced.out")).unwrap();
    assert!(!traced.contains(&secret), "{traced}");
}

#[tokio::test]
#[ignore = "needs strace (scripts/test runs it where strace is installed)"]
async fn sealed_entry_is_refused_while_traced_as_root_needs_strace() {
    traced_reader(Who::Root).await;
}

#[tokio::test]
#[ignore = "needs strace (scripts/test runs it where strace is installed)"]
async fn sealed_entry_is_refused_while_traced_unprivileged_needs_strace() {
    traced_reader(Who::Nobody).await;
}

/// Once typed, Ctrl+Z would stop the program with the secret in its memory and give the shell
/// (the program's Landlock domain) back to the agent: refused while it runs; Ctrl+C is not.
#[tokio::test]
async fn sealed_ctrl_z_is_refused_while_the_reader_holds_the_secret() {
    let Prompted { setup, shell, .. } = prompt_after(Who::Root, &[], "", 30).await;
    entered_and_masked(&setup, &shell, &a_secret()).await;
    let stop = setup
        .server
        .call("shell_send", json!({"id": shell, "input": "\u{1a}"}))
        .await;
    assert_eq!(stop.is_error, Some(true), "{}", text_of(&stop));
    assert!(
        text_of(&stop).contains("Ctrl+Z would stop"),
        "{}",
        text_of(&stop)
    );
    let (text, s) = setup.server.shell_send(&shell, "\u{3}").await;
    assert_ne!(s["status"], "awaiting_input", "{text}");
    let (text, _) = setup.server.shell_send(&shell, "echo after\n").await;
    assert!(text.contains("after"), "{text}");
}

/// A confined tracer is told why it failed, once a session.
#[tokio::test]
#[ignore = "needs strace (scripts/test runs it where strace is installed)"]
async fn sealed_a_refused_tracer_is_explained_once_needs_strace() {
    let server = start().await;
    let (text, _) = server
        .terminal(json!({"command": "strace -o /dev/null true"}))
        .await;
    assert!(text.contains("Operation not permitted"), "{text}");
    assert!(
        text.contains("may not trace or read another process"),
        "{text}"
    );
    let (again, _) = server
        .terminal(json!({"command": "strace -o /dev/null true"}))
        .await;
    assert!(!again.contains("may not trace"), "{again}");
}

/// Holds the first fd handed to it over the unix socket `$1` for `$2` seconds, and says
/// `holding` in `hand.log` once it does.
const HOLDER: &str = r#"
import array, os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(1)
c, _ = s.accept()
fds = array.array("i")
msg, anc, _, _ = c.recvmsg(1, socket.CMSG_SPACE(fds.itemsize))
fds.frombytes(anc[0][2])
open("hand.log", "w").write("holding %s\n" % os.readlink("/proc/self/fd/%d" % fds[0]))
time.sleep(float(sys.argv[2]))
"#;

/// Hands its stdin (the shell's terminal) to whoever listens on the unix socket `$1`, then ends;
/// with `tty` as `$2`, a file of its own opened from `/dev/tty` (another inode, the same
/// terminal).
const HANDER: &str = r#"
import array, os, socket, sys, time
fd = os.open("/dev/tty", os.O_RDWR) if sys.argv[2:] == ["tty"] else 0
for _ in range(200):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        break
    except OSError:
        time.sleep(0.05)
s.sendmsg([b"t"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]).tobytes())])
print("handed")
"#;

/// A server as `who` with the view on and bash as its shell, `files` (name, text) in its
/// workspace, and `background` started there as a job (another spawn's command) when given.
async fn serve_with(who: Who, files: &[(&str, &str)], background: Option<&str>) -> Setup {
    let flags = ["--view", "127.0.0.1:0", "--shell", "/bin/bash"];
    let setup = serve(who, false, &flags).await;
    for (name, text) in files {
        std::fs::write(setup.ws().join(name), text).unwrap();
    }
    if let Some(command) = background {
        setup.server.background(json!({"command": command})).await;
    }
    setup
}

/// The agent asks the user for the secret its shell's program waits for.
async fn ask_secret(setup: &Setup, shell: &str) {
    let asked = setup
        .server
        .call(
            "shell_send",
            json!({"id": shell, "secret": "the test passphrase"}),
        )
        .await;
    assert_eq!(asked.is_error, Some(false), "{}", text_of(&asked));
}

/// A command of the shell hands its terminal over a unix socket to another spawn's command (a
/// background job, in a Landlock domain and session of its own) and ends: the holder could
/// read the secret first, unhindered by job control, so the entry is refused. Found by the
/// terminal's file: as nobody every spawn's terminal reads `/0`.
async fn handed_terminal(who: Who) {
    let files = [("holder.py", HOLDER), ("hander.py", HANDER)];
    let setup = serve_with(who, &files, Some("python3 holder.py hand.sock 30")).await;
    let shell = setup.server.open_shell().await;
    let (text, _) = setup
        .server
        .shell_send(&shell, "python3 hander.py hand.sock\n")
        .await;
    assert!(text.contains("handed"), "{text}");
    let deadline = tokio::time::Instant::now() + ATTACK_WITHIN;
    let held = loop {
        let log = std::fs::read_to_string(setup.ws().join("hand.log")).unwrap_or_default();
        if log.contains("holding") || tokio::time::Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(held.contains("holding /"), "{held}");
    // Told first at the prompt, with nothing typed; the next send, made knowing it, types.
    let tag = a_tag();
    let (text, _) = setup.server.shell_send(&shell, &prompt(3, &tag)).await;
    assert!(text.contains("from outside the shell's session"), "{text}");
    let (text, s) = setup.server.shell_send(&shell, &prompt(3, &tag)).await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    ask_secret(&setup, &shell).await;
    entry_refused(
        &setup,
        "holds the terminal open from outside the shell's session",
    )
    .await;
}

#[tokio::test]
async fn sealed_a_handed_terminal_refuses_the_entry_as_root() {
    handed_terminal(Who::Root).await;
}

#[tokio::test]
async fn sealed_a_handed_terminal_refuses_the_entry_unprivileged() {
    handed_terminal(Who::Nobody).await;
}

/// Reads a password as `ssh` and `sudo` do: echo off, a line edited by the terminal, read a
/// byte at a time from `/dev/tty` (here 1 ms apart); then says how long it was and how many
/// SIGWINCH came between its first byte and its last (each ends the read under way: the read
/// is made again), and waits `$1` seconds.
const BYTE_READER: &str = r#"
import os, signal, sys, termios, time
winch = []
line = b""
signal.signal(signal.SIGWINCH, lambda *_: winch.append(1) if line else None)
fd = os.open("/dev/tty", os.O_RDWR)
old = termios.tcgetattr(fd)
new = termios.tcgetattr(fd)
new[3] &= ~termios.ECHO
termios.tcsetattr(fd, termios.TCSAFLUSH, new)
os.write(fd, b"Passphrase: ")
while True:
    c = os.read(fd, 1)
    if c in (b"\n", b""):
        break
    line += c
    time.sleep(0.001)  # a loaded machine: the rest of the line waits between two reads
signal.signal(signal.SIGWINCH, signal.SIG_DFL)
termios.tcsetattr(fd, termios.TCSAFLUSH, old)
print("\nread", len(line), "bytes,", len(winch), "winch")
time.sleep(float(sys.argv[1]))
"#;

/// After [`HANDED`]: takes the first fd handed to it over the unix socket `$1`, opens the terminal again through
/// it (a file of its own, not blocking, where it may), and for `$2` seconds keeps it in flight
/// on a socket pair of its own, taking it out every 0.2 ms only to try a read: unseen by any
/// look at its fds but for that moment. What it read goes to `spin.log`.
/// The start of [`SPINNER`] and [`ECHOER`]: takes the first fd handed to it over the unix
/// socket `$1` (as `got`), with what keeps a file in flight (`hand` and `fds_of`).
const HANDED: &str = r#"
import array, fcntl, os, signal, socket, struct, sys, termios, time
def fds_of(anc):
    f = array.array("i")
    f.frombytes(anc[0][2][: f.itemsize])
    return f[0]
def hand(s, fd):
    s.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]).tobytes())])
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1])
srv.listen(1)
c, _ = srv.accept()
_, anc, _, _ = c.recvmsg(1, socket.CMSG_SPACE(4))
got = fds_of(anc)
"#;

const SPINNER: &str = r#"
def late(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, late)
try:
    t = os.open("/proc/self/fd/%d" % got, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    os.close(got)
except OSError:
    t = got  # the shell's own file: read only what waits (`FIONREAD`), never blocking long
c.close()
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
hand(b, t)
os.close(t)
open("spin.log", "w").write("spinning\n")
stolen = b""
refused = 0
deadline = time.time() + float(sys.argv[2])
while time.time() < deadline:
    _, anc, _, _ = a.recvmsg(1, socket.CMSG_SPACE(4))
    fd = fds_of(anc)
    if sys.argv[3:] == ["winch"]:  # a resize: SIGWINCH ends the program's read a moment
        size = struct.pack("HHHH", 30, 100 + int(time.time() * 1e4) % 2, 0, 0)
        try:
            fcntl.ioctl(fd, termios.TIOCSWINSZ, size)
        except OSError:
            refused += 1
    waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    try:
        if waiting or t != got:
            signal.setitimer(signal.ITIMER_REAL, 0.05)  # taken first by another: not held
            stolen += os.read(fd, 64)
    except (BlockingIOError, TimeoutError):
        pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    hand(b, fd)
    os.close(fd)
    time.sleep(0.0002)  # in flight, out of sight
open("spin.log", "a").write("stole %d bytes: %r, %d resizes refused\n" % (len(stolen), stolen, refused))
"#;

/// A server whose shell handed its terminal to another spawn's job (`attack`, after
/// [`HANDED`], for 8 s), then started [`BYTE_READER`], which waits for a password; with the
/// view's address and key, and a fresh secret.
struct Handed {
    setup: Setup,
    shell: String,
    address: String,
    key: String,
    secret: String,
}

async fn handed_to(who: Who, attack: &str, args: &str) -> Handed {
    handed_as(who, attack, args, "").await
}

/// [`handed_to`], the terminal handed as [`HANDER`] is told by `hand` (`tty`: a file opened from
/// `/dev/tty`).
async fn handed_as(who: Who, attack: &str, args: &str, hand: &str) -> Handed {
    let attack = [HANDED, attack].concat();
    let files = [
        ("attack.py", attack.as_str()),
        ("hander.py", HANDER),
        ("reader.py", BYTE_READER),
    ];
    let command = format!("python3 attack.py hand.sock 8 {args}");
    let setup = serve_with(who, &files, Some(&command)).await;
    let shell = setup.server.open_shell().await;
    // One line: a line typed at the prompt could be taken as the terminal was.
    let spin_log = || std::fs::read_to_string(setup.ws().join("spin.log")).unwrap_or_default();
    let (text, s) = setup
        .server
        .shell_send(
            &shell,
            &format!("python3 hander.py hand.sock {hand} && python3 reader.py 3\n"),
        )
        .await;
    assert_eq!(s["status"], "awaiting_input", "{text}; {}", spin_log());
    assert!(spin_log().contains("spinning"), "{text}; {}", spin_log());
    let address = view_address(&setup).await;
    let key = view_key(&setup, &address);
    let secret = format!("{}{}", a_secret(), a_secret());
    Handed {
        setup,
        shell,
        address,
        key,
        secret,
    }
}

/// The terminal handed to another spawn's command, which keeps it in flight and spins on it,
/// against a program that reads the password a byte at a time (`ssh`, `sudo`): between two of
/// its reads the line waits in the terminal for whoever reads first. Whether the entry goes
/// ahead or is refused (it may see the file at the moment it is out), the spinner gets nothing.
async fn spun_on(who: Who, mode: &str) {
    spun_on_handed(who, mode, "").await;
}

/// [`spun_on`], the terminal handed as `hand` says ([`handed_as`]).
async fn spun_on_handed(who: Who, mode: &str, hand: &str) {
    let Handed {
        setup,
        shell,
        address,
        key,
        secret,
    } = handed_as(who, SPINNER, mode, hand).await;
    let spin_log = || std::fs::read_to_string(setup.ws().join("spin.log")).unwrap_or_default();
    // Refused while the look at every process's fds catches the file out of flight: the agent
    // asks again, and the person enters it again.
    let mut tries = 0;
    let (status, body) = loop {
        tries += 1;
        ask_secret(&setup, &shell).await;
        let (status, body) = enter(&address, &key, &secret);
        // Asked again only while nothing was typed (a typing cut short leaves the program
        // holding the start of the secret).
        if !body.contains("could read the secret first") || tries == 10 {
            break (status, body);
        }
        assert!(status.contains("409"), "{status}: {body}");
    };
    eprintln!("tries {tries}");
    let deadline = tokio::time::Instant::now() + ATTACK_WITHIN;
    while !spin_log().contains("stole") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the spinner never ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spun = spin_log();
    eprintln!("entry: {status}: {body}; spinner: {spun}");
    assert!(spun.contains("stole 0 bytes"), "{status}: {body}; {spun}");
    if mode == "winch" {
        // Its resizes fail while the secret is typed, and only then.
        assert!(!spun.contains(", 0 resizes refused"), "{spun}");
    }
    if status.contains("200") {
        let out = shell_output(&setup, &shell, "bytes").await;
        // No resize came between the program's first read of the secret and its last.
        assert!(
            out.contains(&format!("read {} bytes, 0 winch", secret.len())),
            "{out}"
        );
    } else {
        assert!(status.contains("409"), "{status}: {body}");
    }
}

#[tokio::test]
async fn sealed_a_terminal_spun_on_in_flight_gets_nothing_as_root() {
    spun_on(Who::Root, "").await;
}

/// [`spun_on`], the spinner resizing the terminal through its fd before each read (SIGWINCH
/// ends the program's read for a moment, and its handler runs: the read lock is free then, and
/// a key typed in that moment would go to the spinner): its resizes fail while the secret is
/// typed.
#[tokio::test]
async fn sealed_a_terminal_resized_and_spun_on_in_flight_gets_nothing_as_root() {
    spun_on(Who::Root, "winch").await;
}

#[tokio::test]
async fn sealed_a_terminal_resized_and_spun_on_in_flight_gets_nothing_unprivileged() {
    spun_on(Who::Nobody, "winch").await;
}

/// [`spun_on`] resizing through a file opened from `/dev/tty`: its own inode, the shell's
/// terminal all the same.
#[tokio::test]
async fn sealed_a_terminal_resized_through_dev_tty_gets_nothing_as_root() {
    spun_on_handed(Who::Root, "winch", "tty").await;
}

#[tokio::test]
async fn sealed_a_terminal_resized_through_dev_tty_gets_nothing_unprivileged() {
    spun_on_handed(Who::Nobody, "winch", "tty").await;
}

#[tokio::test]
async fn sealed_a_terminal_spun_on_in_flight_gets_nothing_unprivileged() {
    spun_on(Who::Nobody, "").await;
}

/// A program that reads the password a byte at a time gets all of it, typed key by key into
/// its reads.
async fn read_key_by_key(who: Who) {
    let setup = serve_with(who, &[("reader.py", BYTE_READER)], None).await;
    let shell = setup.server.open_shell().await;
    let (text, s) = setup
        .server
        .shell_send(&shell, "python3 reader.py 0\n")
        .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    ask_secret(&setup, &shell).await;
    let address = view_address(&setup).await;
    let key = view_key(&setup, &address);
    let secret = a_secret();
    let (status, body) = enter(&address, &key, &secret);
    assert!(status.contains("200"), "{status}: {body}");
    let out = shell_output(&setup, &shell, "bytes").await;
    assert!(
        out.contains(&format!("read {} bytes", secret.len())),
        "{out}"
    );
}

/// The model resizes the terminal again and again (`shell_read` with `cols`, which sends the
/// program SIGWINCH) while the secret is typed: a signal would end the read the program waits
/// with, and free the terminal's read lock between two keys. Resizes wait for the typing's end;
/// the last one is made then.
async fn resized_while_typed(who: Who) {
    let setup = serve_with(who, &[("reader.py", BYTE_READER)], None).await;
    let shell = setup.server.open_shell().await;
    let (text, s) = setup
        .server
        .shell_send(&shell, "python3 reader.py 0\n")
        .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    ask_secret(&setup, &shell).await;
    let address = view_address(&setup).await;
    let key = view_key(&setup, &address);
    let secret = format!("{}{}", a_secret(), a_secret());
    let typed = {
        let secret = secret.clone();
        tokio::task::spawn_blocking(move || enter(&address, &key, &secret))
    };
    let mut cols = 100;
    while !typed.is_finished() {
        cols = if cols == 100 { 101 } else { 100 };
        let resized = setup
            .server
            .call("shell_read", json!({"id": shell, "cols": cols, "rows": 30}))
            .await;
        assert_eq!(resized.is_error, Some(false), "{resized:?}");
    }
    let (status, body) = typed.await.unwrap();
    assert!(status.contains("200"), "{status}: {body}");
    let out = shell_output(&setup, &shell, "winch").await;
    assert!(
        out.contains(&format!("read {} bytes, 0 winch", secret.len())),
        "{out}"
    );
    let (text, _) = setup.server.shell_send(&shell, "stty size\n").await;
    assert!(text.contains(&format!("30 {cols}")), "{cols}: {text}");
}

#[tokio::test]
async fn sealed_resizes_wait_for_a_secrets_typing_as_root() {
    resized_while_typed(Who::Root).await;
}

#[tokio::test]
async fn sealed_resizes_wait_for_a_secrets_typing_unprivileged() {
    resized_while_typed(Who::Nobody).await;
}

/// Sets the window size of a terminal of its own (`os.openpty`) through the master, as `tmux`
/// and `script` do, and prints what the slave then has.
const INNER_RESIZE: &str = r#"
import fcntl, os, struct, termios
master, slave = os.openpty()
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 12, 34, 0, 0))
rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(slave, termios.TIOCGWINSZ, b"\0" * 8))
print("inner", rows, cols)
"#;

/// Confined commands resize terminals, their own and the shell's, in every network mode (the
/// server makes their resizes: refused only while a secret is typed into that terminal).
async fn confined_resizes(who: Who) {
    for network in ["on", "off", "allowlist"] {
        let flags = ["--network", network, "--shell", "/bin/bash"];
        let setup = serve(who, false, &flags).await;
        std::fs::write(setup.ws().join("inner.py"), INNER_RESIZE).unwrap();
        let (text, _) = setup
            .server
            .terminal(json!({"command": "python3 inner.py"}))
            .await;
        assert!(text.contains("inner 12 34"), "{network}: {text}");
        let shell = setup.server.open_shell().await;
        let (text, _) = setup
            .server
            .shell_send(
                &shell,
                "stty cols 123 rows 45; stty size; python3 inner.py\n",
            )
            .await;
        assert!(text.contains("45 123"), "{network}: {text}");
        assert!(text.contains("inner 12 34"), "{network}: {text}");
    }
}

#[tokio::test]
async fn confined_commands_resize_terminals_in_every_network_mode_as_root() {
    confined_resizes(Who::Root).await;
}

#[tokio::test]
async fn confined_commands_resize_terminals_in_every_network_mode_unprivileged() {
    confined_resizes(Who::Nobody).await;
}

#[tokio::test]
async fn sealed_a_byte_at_a_time_reader_gets_the_whole_secret_as_root() {
    read_key_by_key(Who::Root).await;
}

#[tokio::test]
async fn sealed_a_byte_at_a_time_reader_gets_the_whole_secret_unprivileged() {
    read_key_by_key(Who::Nobody).await;
}

/// After [`HANDED`]: takes the first fd handed to it over the unix socket `$1` and for `$2` seconds keeps it in
/// flight, taking it out every 0.2 ms: once the terminal has read key by key for `$3` seconds
/// (0 if not given; a secret typed for a byte-at-a-time reader), it turns echo on and writes
/// `|` between the keys (so their echo never comes out whole, as the mask would catch it).
const ECHOER: &str = r#"
t = got
c.close()
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
hand(b, t)
os.close(t)
open("spin.log", "w").write("spinning\n")
deadline = time.time() + float(sys.argv[2])
seen = None
while time.time() < deadline:
    _, anc, _, _ = a.recvmsg(1, socket.CMSG_SPACE(4))
    fd = fds_of(anc)
    try:
        at = termios.tcgetattr(fd)
        if not at[3] & termios.ICANON and not seen:
            seen = time.time()
        if seen and time.time() - seen >= float((sys.argv[3:] or [0])[0]):
            if not at[3] & termios.ECHO:
                at[3] |= termios.ECHO
                termios.tcsetattr(fd, termios.TCSANOW, at)
            os.write(fd, b"|")
    except OSError:
        pass
    hand(b, fd)
    os.close(fd)
    time.sleep(0.0002)
open("spin.log", "a").write("done\n")
"#;

/// The terminal handed to another spawn's command, which keeps it in flight and, while a
/// secret is typed key by key, sets the terminal's settings from its fd (echo on): a root
/// server locks them for the typing (the change does not take); an unprivileged one checks
/// them around each key and stops at the first change (409). Either way no run of the
/// secret's characters comes back out.
async fn echoed(who: Who) {
    let Handed {
        setup,
        shell,
        address,
        key,
        secret,
    } = handed_to(who, ECHOER, "").await;
    for _ in 0..10 {
        let asked = setup
            .server
            .call(
                "shell_send",
                json!({"id": shell, "secret": "the test passphrase"}),
            )
            .await;
        if asked.is_error == Some(true) {
            break; // the program no longer asks (its terminal's echo is on)
        }
        let (status, _) = enter(&address, &key, &secret);
        if status.contains("200") {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = setup
        .server
        .call("shell_read", json!({"id": shell, "since": 0}))
        .await;
    let out = text_of(&r).replace(['|', '\r', '\n'], "");
    let tail = &secret["sealed-".len()..];
    let shown = (0..tail.len() - 4).find(|&at| out.contains(&tail[at..at + 5]));
    assert!(shown.is_none(), "the secret's keys came back out: {out}");
}

#[tokio::test]
async fn sealed_settings_changed_during_the_typing_show_nothing_as_root() {
    echoed(Who::Root).await;
}

#[tokio::test]
async fn sealed_settings_changed_during_the_typing_show_nothing_unprivileged() {
    echoed(Who::Nobody).await;
}

/// The settings changed once the program has read part of the secret (the echoer waits 20 ms,
/// about 10 keys): a root server's lock holds, and the secret goes in whole; an unprivileged
/// server stops there, saying the program holds the start of it.
async fn echoed_midway(who: Who) {
    let Handed {
        setup,
        shell,
        address,
        key,
        secret,
    } = handed_to(who, ECHOER, "0.02").await;
    let mut said = (String::new(), String::new());
    for _ in 0..10 {
        ask_secret(&setup, &shell).await;
        said = enter(&address, &key, &secret);
        if !said.1.contains("could read the secret first") {
            break; // not the fd seen out of flight at the checks
        }
    }
    let (status, body) = said;
    match who {
        Who::Root => assert!(status.contains("200"), "{status}: {body}"),
        Who::Nobody => assert!(
            status.contains("409") && body.contains("has read the start of it"),
            "{status}: {body}"
        ),
    }
}

#[tokio::test]
async fn sealed_settings_changed_midway_as_root() {
    echoed_midway(Who::Root).await;
}

#[tokio::test]
async fn sealed_settings_changed_midway_unprivileged() {
    echoed_midway(Who::Nobody).await;
}

/// `doctor` says how a secret's terminal is held while it is typed, as measured: its settings
/// locked (root), or checked around each key (nobody, who cannot lock them).
#[test]
fn doctor_says_how_a_secrets_terminal_settings_are_held() {
    let root = super::network::doctor(Who::Root, &[]);
    assert!(
        root.contains("with the terminal's settings locked meanwhile (TIOCSLCKTRMIOS)"),
        "{root}"
    );
    let nobody = super::network::doctor(Who::Nobody, &[]);
    assert!(
        nobody.contains("checked around each key (locking them needs CAP_SYS_ADMIN"),
        "{nobody}"
    );
    for said in [root, nobody] {
        assert!(
            said.contains("a confined command's resize of that terminal fails meanwhile"),
            "{said}"
        );
    }
}
