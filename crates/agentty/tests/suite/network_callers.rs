//! Across HTTP callers (docs/BEHAVIOUR.md §13, §9), the places a unix connect may wait in (one
//! caller's command cannot take them all), and proxy credentials: each caller's shell gets
//! credentials of its own; another caller's command that got hold of them (here: alice's shell
//! leaks them into the shared workspace) is refused (407) and the refusal is its own (error 2010
//! in bob's result, nothing in alice's), as root (each caller in a PID namespace of its own)
//! and as nobody (no namespace). Alice's credentials are in no environment bob's commands can
//! read, and a closed shell's, or guessed ones, are refused.
//!
//! Packets go only to this machine: a listener of the test on loopback, the proxy, and a name no
//! packet is sent for (the proxy refuses it before any lookup).

use rmcp::model::ClientConfig;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

use super::client::*;
use super::http::{ALICE, BOB, HttpServer, MORE_CALLERS, call};
use super::network::{BLOCKING_CLIENTS, Listener, line_of};

type Client = RunningService<RoleClient, ClientConfig>;

/// Opens a tunnel through the proxy to the proxy itself with the shell's own credentials, then
/// asks through it for the URL given with alice's (from `alice-cred`); prints both statuses.
const CHAIN_THROUGH_THE_PROXY: &str = r#"import base64, os, socket, sys
from urllib.parse import urlsplit


def auth(proxy):
    p = urlsplit(proxy)
    return "Basic " + base64.b64encode(f"{p.username}:{p.password}".encode()).decode()


own = os.environ["HTTP_PROXY"]
p = urlsplit(own)
s = socket.create_connection((p.hostname, p.port))
s.sendall(f"CONNECT {p.hostname}:{p.port} HTTP/1.1\r\nProxy-Authorization: {auth(own)}\r\n\r\n".encode())
outer = s.recv(4096).split()[1].decode()
print("outer", outer)
if outer != "200":
    sys.exit()
alice = open("alice-cred").read().strip()
s.sendall(
    f"GET {sys.argv[1]} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: {auth(alice)}\r\n"
    "Connection: close\r\n\r\n".encode()
)
print("inner", s.recv(4096).split()[1].decode())
"#;

async fn open_shell(client: &Client) -> String {
    let opened = call(client, "shell_open", json!({})).await;
    opened
        .structured_content
        .as_ref()
        .and_then(|content| content["id"].as_str())
        .unwrap_or_else(|| panic!("no shell: {}", text_of(&opened)))
        .to_owned()
}

async fn send(client: &Client, id: &str, input: &str) -> (String, Value) {
    let sent = call(client, "shell_send", json!({ "id": id, "input": input })).await;
    (text_of(&sent), sent.structured_content.unwrap())
}

/// `curl` through the proxy with the credentials of `proxy` (a shell word): the status line.
fn through(proxy: &str, url: &str) -> String {
    format!(
        "curl -sS --noproxy '' -o /dev/null -w '%{{http_code}}\\n' -x \"{proxy}\" {url} 2>&1 \
         | tail -n 1\n"
    )
}

async fn anothers_credentials_are_refused(who: Who) {
    let service = Listener::on("127.0.0.1".parse().unwrap());
    let local = format!("http://localhost:{}/", service.at.port());
    let (server, _home) = HttpServer::start_callers(who, &["--network", "allowlist"]);
    let (alice, bob) = (
        server.connect_as(ALICE, false).await,
        server.connect_as(BOB, false).await,
    );
    let (alice_shell, bob_shell) = (open_shell(&alice).await, open_shell(&bob).await);

    // Alice's shell leaks its credentials, and its run marker, into the shared workspace.
    let (text, _) = send(
        &alice,
        &alice_shell,
        "echo \"$HTTP_PROXY\" > alice-cred; echo \"$AGENTTY_RUN\" > alice-marker; cat alice-cred\n",
    )
    .await;
    let credentials = text
        .lines()
        .find(|l| l.starts_with("http://agentty:"))
        .unwrap_or_else(|| panic!("{who:?}: no credentials in alice's shell: {text}"))
        .to_owned();
    let token = credentials["http://agentty:".len()..]
        .split('@')
        .next()
        .unwrap()
        .to_owned();

    // Bob's commands cannot read them from alice's shell: no environment they can read holds
    // them, not even that of alice's shell named by its pid on this machine.
    let alice_pids = processes_with_env("HTTP_PROXY", &credentials);
    assert!(!alice_pids.is_empty(), "{who:?}: alice's shell not found");
    let (text, _) = send(
        &bob,
        &bob_shell,
        &format!(
            "echo own $(grep -a -c \"${{HTTP_PROXY%@*}}\" /proc/$$/environ); echo found $(grep -l \
             -a {token} /proc/[0-9]*/environ 2>/dev/null | wc -l); echo named $(tr '\\0' '\\n' \
             < /proc/{}/environ 2>/dev/null | grep -c {token})\n",
            alice_pids[0]
        ),
    )
    .await;
    // The scan reads what it may (bob's own shell), and finds alice's nowhere.
    for said in ["own 1\n", "found 0\n", "named 0\n"] {
        assert!(text.contains(said), "{who:?}: {said:?} not in {text}");
    }

    // Bob with alice's credentials: refused, to a host not listed and to loopback, and the
    // refusal is bob's.
    for (url, target) in [
        ("http://exfil.invalid/", "exfil.invalid:80".to_owned()),
        (&local[..], format!("localhost:{}", service.at.port())),
    ] {
        let (text, s) = send(&bob, &bob_shell, &through("$(cat alice-cred)", url)).await;
        assert!(text.starts_with("407\n"), "{who:?} {url}: {text}");
        assert_eq!(s["error_code"], 2010, "{who:?} {url}: {text}");
        let line = line_of(&text, "[error 2010] network:");
        assert!(
            line.contains(&target) && line.contains("with another caller's proxy credentials"),
            "{who:?}: {line}"
        );
    }
    // Without a run marker of its own the command is its parent's, bob's shell's: refused,
    // and bob's refusal.
    let unmarked = format!(
        "env -u AGENTTY_RUN {}",
        through("$(cat alice-cred)", &local)
    );
    let (text, s) = send(&bob, &bob_shell, &unmarked).await;
    assert!(text.starts_with("407\n"), "{who:?}: {text}");
    assert_eq!(s["error_code"], 2010, "{who:?}: {text}");
    // Chained through the proxy itself: refused (403, and were it let through, the proxy's
    // connection to itself is none the supervisor made for a command: 407). So is a process of
    // this machine outside the sandbox with alice's credentials.
    std::fs::write(server.workspace().join("chain.py"), CHAIN_THROUGH_THE_PROXY).unwrap();
    let (text, _) = send(&bob, &bob_shell, &format!("python3 chain.py {local}\n")).await;
    assert!(text.contains("outer 403\n"), "{who:?}: {text}");
    let outside = std::process::Command::new("curl")
        .args([
            "-sS",
            "--noproxy",
            "",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .args(["-x", &credentials, &local])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&outside.stdout), "407", "{who:?}");
    // As root, wearing alice's run marker too changes nothing: the PID namespace says whose
    // the command is.
    if who == Who::Root {
        let forged = format!(
            "AGENTTY_RUN=$(cat alice-marker) {}",
            through("$(cat alice-cred)", &local)
        );
        let (text, _) = send(&bob, &bob_shell, &forged).await;
        assert!(text.starts_with("407\n"), "{who:?}: {text}");
    }
    assert_eq!(
        service.seen(),
        0,
        "{who:?}: alice's credentials carried bob's request"
    );
    // Alice's result says nothing of bob's attempts.
    let (text, s) = send(&alice, &alice_shell, "true\n").await;
    assert!(
        s["error_code"].is_null(),
        "{who:?}: bob's refusals went to alice: {text}"
    );

    // Each with its own credentials reaches the service.
    for (client, shell) in [(&alice, &alice_shell), (&bob, &bob_shell)] {
        let (text, _) = send(client, shell, &through("$HTTP_PROXY", &local)).await;
        assert!(text.starts_with("200\n"), "{who:?}: {text}");
    }
    assert_eq!(service.seen(), 2, "{who:?}");
    // A command in a PID namespace it made below its caller's is still its caller's; so is
    // one started with an environment of its own (no run marker: its parent's says whose).
    let nested = format!("unshare -Upf {}", through("$HTTP_PROXY", &local));
    let cleared = format!(
        "env -i PATH=\"$PATH\" HTTP_PROXY=\"$HTTP_PROXY\" {}",
        through("$HTTP_PROXY", &local)
    );
    for own in [nested, cleared] {
        let (text, _) = send(&alice, &alice_shell, &own).await;
        assert!(text.starts_with("200\n"), "{who:?} {own}: {text}");
    }
    assert_eq!(service.seen(), 4, "{who:?}");

    // Closed, alice's shell's credentials are nobody's, not even alice's next command's;
    // guessed ones never were anybody's.
    let closed = call(&alice, "shell_close", json!({ "id": alice_shell })).await;
    assert_eq!(closed.is_error, Some(false), "{}", text_of(&closed));
    let by_alice = call(
        &alice,
        "terminal",
        json!({ "command": through("$(cat alice-cred)", &local) }),
    )
    .await;
    assert!(
        text_of(&by_alice).starts_with("407\n"),
        "{who:?}: {}",
        text_of(&by_alice)
    );
    let guessed = format!("http://agentty:{}@${{HTTP_PROXY##*@}}", "0".repeat(32));
    for proxy in ["$(cat alice-cred)", &guessed[..]] {
        let (text, _) = send(&bob, &bob_shell, &through(proxy, &local)).await;
        assert!(text.starts_with("407\n"), "{who:?} {proxy}: {text}");
    }
    assert_eq!(service.seen(), 4, "{who:?}");
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_another_callers_proxy_credentials_are_refused_as_root() {
    anothers_credentials_are_refused(Who::Root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_another_callers_proxy_credentials_are_refused_as_nobody() {
    anothers_credentials_are_refused(Who::Nobody).await;
}

/// A server that may hold 256 descriptors (its commands 4096) running `script` (Python, given
/// `argument`) as a background job, once the job wrote the file `held`: the server, its client
/// and what the job wrote there.
async fn held_by_a_job(script: &str, argument: &str) -> (HttpServer, Client, String) {
    let server = HttpServer::start_with(
        &["prlimit", "--nofile=256:4096", "--"],
        tempfile::tempdir().unwrap(),
        agentty_testkit::state_dir(),
        &["--network", "allowlist"],
        &[],
    );
    let client = server.connect(false).await;
    std::fs::write(server.workspace().join("job.py"), script).unwrap();
    let command = format!("python3 job.py {argument}");
    let job = call(
        &client,
        "terminal",
        json!({ "command": command, "background": true }),
    )
    .await;
    assert_eq!(job.is_error, Some(false), "{}", text_of(&job));
    let id = job.structured_content.as_ref().unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let held = server.workspace().join("held");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !held.exists() {
        if std::time::Instant::now() > deadline {
            let said = call(&client, "task_wait", json!({ "id": id, "timeout_ms": 100 })).await;
            panic!("the job wrote nothing in `held`: {}", text_of(&said));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The file is written in one call; give it a moment to be whole.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let said = std::fs::read_to_string(&held).unwrap();
    (server, client, said)
}

/// Opens `sys.argv[1]` connections to the proxy, sends nothing on them, says so in the file
/// `held`, and keeps them open a minute.
const HOLD_IDLE: &str = r#"import os, resource, socket, sys, time
from urllib.parse import urlsplit

_, most = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))
p = urlsplit(os.environ["HTTP_PROXY"])
held = []
for _ in range(int(sys.argv[1])):
    try:
        held.append(socket.create_connection((p.hostname, p.port)))
    except OSError as e:
        print("connect", e, flush=True)
        break
open("held", "w").write(str(len(held)))
time.sleep(60)
"#;

/// A command holding hundreds of idle connections to the proxy (each one of the server's
/// descriptors for up to 30 s) does not run the server out of them: it holds fewer than the 256
/// it may hold (the command may hold 4096), as the oldest idle ones are closed, and a request
/// through the proxy still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_idle_proxy_connections_never_run_the_server_out_of_descriptors() {
    let service = Listener::on("127.0.0.1".parse().unwrap());
    let local = format!("http://localhost:{}/", service.at.port());
    let (server, client, held) = held_by_a_job(HOLD_IDLE, "400").await;
    let holds = std::fs::read_dir(format!("/proc/{}/fd", server.serving_pid()))
        .unwrap()
        .count();
    assert!(
        holds < 256,
        "the job held {held}; the server holds {holds} descriptors"
    );
    let proxied = call(
        &client,
        "terminal",
        json!({ "command": format!(
            "curl -sS --noproxy '' --max-time 20 -o /dev/null -w '%{{http_code}}\\n' -x \"$HTTP_PROXY\" {local}"
        ) }),
    )
    .await;
    assert!(
        text_of(&proxied).starts_with("200\n"),
        "held {held}: {}",
        text_of(&proxied)
    );
    assert_eq!(service.seen(), 1);
    client.cancel().await.unwrap();
}

/// Opens `sys.argv[2]` tunnels through the proxy to `127.0.0.1:sys.argv[1]` and keeps them;
/// writes the statuses it got (sorted, once each) and how many were 200 in the file `held`.
const HOLD_TUNNELS: &str = r#"import base64, os, resource, socket, sys, time
from urllib.parse import urlsplit

_, most = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))
p = urlsplit(os.environ["HTTP_PROXY"])
auth = "Basic " + base64.b64encode(f"{p.username}:{p.password}".encode()).decode()
codes, held = [], []
for _ in range(int(sys.argv[2])):
    try:
        s = socket.create_connection((p.hostname, p.port))
        s.sendall(f"CONNECT 127.0.0.1:{sys.argv[1]} HTTP/1.1\r\nProxy-Authorization: {auth}\r\n\r\n".encode())
        codes.append(s.recv(4096).split()[1].decode())
        held.append(s)
    except (OSError, IndexError) as e:
        codes.append(type(e).__name__)
open("held", "w").write(" ".join(sorted(set(codes))) + " " + str(codes.count("200")))
time.sleep(60)
"#;

/// Tunnels held open through the proxy (each two of the server's descriptors and two threads,
/// with no idle end) are counted: past a sixteenth of the descriptors (here 256: 16; one HTTP
/// caller half of them) the proxy answers 503, and the server keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_tunnels_held_open_never_run_the_server_out_of_descriptors() {
    // A sink that accepts and keeps every connection.
    let sink = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sink_port = sink.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for stream in sink.incoming() {
            kept.push(stream);
        }
    });
    let (_server, client, said) = held_by_a_job(HOLD_TUNNELS, &format!("{sink_port} 150")).await;
    let opened: usize = said.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        said.starts_with("200 503 ") && (1..=16).contains(&opened),
        "{said}"
    );
    let still = call(&client, "terminal", json!({ "command": "echo still-here" })).await;
    assert!(
        text_of(&still).starts_with("still-here\n"),
        "{}",
        text_of(&still)
    );
    client.cancel().await.unwrap();
}

/// With loopback closed, the unspecified address (which Linux connects to the machine itself)
/// is loopback too, even where the list names it: refused through the proxy and directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_the_unspecified_address_is_loopback() {
    let service = Listener::on("127.0.0.1".parse().unwrap());
    let server = HttpServer::start_with(
        &[],
        tempfile::tempdir().unwrap(),
        agentty_testkit::state_dir(),
        &[
            "--network",
            "allowlist",
            "--no-loopback",
            "--allow-net",
            "0.0.0.0:*",
        ],
        &[],
    );
    let client = server.connect(false).await;
    let url = format!("http://0.0.0.0:{}/", service.at.port());
    for how in ["-x \"$HTTP_PROXY\"", "--noproxy '*'"] {
        let command =
            format!("curl -sS --max-time 10 -o /dev/null -w '%{{http_code}}\\n' {how} {url}");
        let said = call(&client, "terminal", json!({ "command": command })).await;
        let text = text_of(&said);
        assert!(!text.starts_with("200"), "{how}: {text}");
        assert!(text.contains("loopback is closed"), "{how}: {text}");
    }
    assert_eq!(service.seen(), 0);
    client.cancel().await.unwrap();
}

/// Alice's background job, after `BLOCKING_CLIENTS`: 300 clients whose blocking connects wait
/// for room in a unix listener's backlog that never empties (with loopback closed the
/// supervisor makes them wait), for two minutes; it prints `waiting` once they are under way.
const HOG_THE_WAITS: &str = r#"
p = os.path.join(tempfile.mkdtemp(), "hog.sock")
l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1)
held = [socket.socket(socket.AF_UNIX) for _ in range(2)]
for s in held:
    s.connect(p)
blocking_clients(p, 300)
time.sleep(1)
print("waiting", flush=True)
time.sleep(120)
"#;

/// Bob's command, after `BLOCKING_CLIENTS`: six clients at once to a listener of its own with a
/// backlog of 1, accepted after half a second (Python's `multiprocessing.connection.Listener`
/// has that backlog).
const SIX_AT_ONCE: &str = r#"
p = os.path.join(tempfile.mkdtemp(), "own.sock")
l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1)
clients, results = blocking_clients(p, 6)
accept_all(l, 0.5, 6)
for c in clients:
    c.join()
print("six:", sorted(results))
"#;

/// With loopback closed, a connect that waits for room in a unix listener's backlog holds a
/// place the supervisor keeps for it; one caller's commands that fill every place they may take
/// leave others' waits alone (bob's six clients all connect while alice's shells try 300 each).
/// Alice's run in four shells (a session's most): as root each terminal's commands have a launcher, and so a
/// seccomp filter, of their own, and the places are counted per caller, not per filter
/// (review 27).
async fn anothers_waits_are_left_alone(who: Who) {
    let (server, _home) =
        HttpServer::start_callers(who, &["--network", "allowlist", "--no-loopback"]);
    let (alice, bob) = (
        server.connect_as(ALICE, false).await,
        server.connect_as(BOB, false).await,
    );
    let hog = format!("python3 -c '{BLOCKING_CLIENTS}{HOG_THE_WAITS}'\n");
    for _ in 0..4 {
        let id = open_shell(&alice).await;
        let sent = call(
            &alice,
            "shell_send",
            json!({ "id": id, "input": hog, "wait_for": "waiting", "timeout_ms": 30_000 }),
        )
        .await;
        let said = text_of(&sent);
        assert!(said.contains("waiting"), "{who:?}: {said}");
    }
    let six = format!("python3 -c '{BLOCKING_CLIENTS}{SIX_AT_ONCE}'");
    let run = call(&bob, "terminal", json!({ "command": six })).await;
    let text = text_of(&run);
    assert!(
        text.contains("six: ['ok', 'ok', 'ok', 'ok', 'ok', 'ok']"),
        "{who:?}: {text}"
    );
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
}

/// Alice's background job: 400 threads whose blocking connects to a loopback listener with a
/// full backlog wait (the supervisor makes each, on a socket of the server's, and waits for
/// it); after three seconds it prints how many were refused at once.
const HOG_THE_CONNECTIONS: &str = r#"import errno, socket, threading, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
at = l.getsockname()
first = socket.create_connection(at)
refused, tried = [], []
def client():
    tried.append(1)
    try:
        socket.create_connection(at, timeout=None)
    except OSError as e:
        refused.append(e.errno)
for _ in range(400):
    threading.Thread(target=client, daemon=True).start()
seen, since, deadline = -1, time.time(), time.time() + 60
while time.time() < deadline:
    if len(refused) != seen:
        seen, since = len(refused), time.time()
    elif len(tried) == 400 and time.time() - since >= 1:
        break
    time.sleep(0.05)
print("refused", len(refused), sorted(set(refused)), flush=True)
time.sleep(120)
"#;

/// Starts [`HOG_THE_CONNECTIONS`] (written to the workspace as `hog.py`) as a background job
/// of `client`'s: its id.
async fn start_hog(client: &Client, who: Who) -> String {
    let started = call(
        client,
        "terminal",
        json!({ "command": "python3 hog.py", "background": true }),
    )
    .await;
    started
        .structured_content
        .as_ref()
        .and_then(|content| content["job_id"].as_str())
        .unwrap_or_else(|| panic!("{who:?}: no job: {}", text_of(&started)))
        .to_owned()
}

/// What a hog job says once it has said `word` (up to 70 s: [`HOG_THE_CONNECTIONS`] says it
/// once every thread tried and no refusal came for a second, which a loaded machine reaches
/// late).
async fn hog_said(client: &Client, job: &str, word: &str) -> String {
    let mut said = String::new();
    for _ in 0..700 {
        let read = call(client, "task_output", json!({ "id": job, "since": 0 })).await;
        said = text_of(&read);
        if said.contains(word) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    said
}

/// Connects a caller's commands wait for hold one of the server's descriptors each; one
/// caller's hundreds of them (400 against a server that may hold 256) neither run the server
/// out of descriptors nor refuse another caller's connect: past its share, its own are
/// refused at once (EAGAIN). (Review 27.)
async fn anothers_connects_are_left_alone(who: Who) {
    let (_server, _home, alice, bob, said) = alice_hogs(who, HOG_THE_CONNECTIONS, "refused").await;
    let refused: usize = said
        .split("refused ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("{who:?}: {said}"));
    assert!(
        refused >= 300,
        "{who:?}: alice's connects past her share wait: {said}"
    );
    let said = connect_to_a_loopback_listener(&bob).await;
    assert!(said.contains("connected"), "{who:?}: {said}");
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
}

/// A server (run as `who`, that may hold 256 descriptors, its commands 4096, in `allowlist`)
/// where alice runs `hog` (Python, written to the workspace as `hog.py`) as a background job:
/// the server, its home, alice's and bob's clients, and what the hog said once it said `word`.
async fn alice_hogs(
    who: Who,
    hog: &str,
    word: &str,
) -> (HttpServer, impl Sized, Client, Client, String) {
    let (server, home) = HttpServer::start_callers_through(
        who,
        &["prlimit", "--nofile=256:4096", "--"],
        &["--network", "allowlist"],
    );
    let (alice, bob) = (
        server.connect_as(ALICE, false).await,
        server.connect_as(BOB, false).await,
    );
    std::fs::write(server.workspace().join("hog.py"), hog).unwrap();
    let job = start_hog(&alice, who).await;
    let said = hog_said(&alice, &job, word).await;
    (server, home, alice, bob, said)
}

/// What a command of `client`'s says that connects to a listener of this test's on
/// 127.0.0.1 (loopback is allowed): `connected`, or why not.
async fn connect_to_a_loopback_listener(client: &Client) -> String {
    let service = Listener::on("127.0.0.1".parse().unwrap());
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {})); print(\"connected\")'",
        service.at.port()
    );
    text_of(&call(client, "terminal", json!({ "command": connect })).await)
}

/// Keeps fds in flight on unix sockets it never reads from until the kernel refuses more
/// (`ETOOMANYREFS`: the same user's fds in flight past the sender's descriptor limit, which it
/// raises to its hard one first), and says how many.
const HOG_THE_FDS_IN_FLIGHT: &str = r#"import array, errno, os, resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
r, w = os.pipe()
held, sent, stopped = [], 0, None
while stopped is None and len(held) < 400:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    held.append((a, b))
    while True:
        try:
            a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r] * 250))], socket.MSG_DONTWAIT)
            sent += 250
        except BlockingIOError:
            break
        except OSError as e:
            stopped = errno.errorcode.get(e.errno, str(e.errno))
            break
print("in flight", sent, "then", stopped, "limit", hard, flush=True)
time.sleep(120)
"#;

/// One caller's command fills the fds in flight the kernel allows its user (the server's, when
/// it is not root) past the server's own limit: another caller's commands, whose fds can no
/// longer be handed to their launchers, are cloned apart, and their connects are supervised
/// all the same. Before, an apart child's filter had no listener, and the connect failed
/// (ENOSYS: r30 L5, review 32).
async fn anothers_spawns_outlast_fds_in_flight(who: Who) {
    let (_server, _home, alice, bob, said) =
        alice_hogs(who, HOG_THE_FDS_IN_FLIGHT, "in flight").await;
    assert!(
        said.contains("then ETOOMANYREFS"),
        "{who:?}: the hog did not fill its fds in flight: {said}"
    );
    let connected = connect_to_a_loopback_listener(&bob).await;
    assert!(
        connected.contains("connected"),
        "{who:?}: {connected}\n(the hog: {said})"
    );
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_anothers_spawns_outlast_fds_in_flight_as_root() {
    anothers_spawns_outlast_fds_in_flight(Who::Root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_anothers_spawns_outlast_fds_in_flight_as_nobody() {
    anothers_spawns_outlast_fds_in_flight(Who::Nobody).await;
}

/// A blocking connect to a full backlog, made on a thread: whether it still waits a second later
/// (it had a place), or was refused at once.
const ONE_WAIT: &str = r#"import socket, threading, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
at = l.getsockname()
first = socket.create_connection(at)
said = []
def client():
    try:
        socket.create_connection(at, timeout=None)
        said.append("connected")
    except OSError as e:
        said.append("refused %d" % e.errno)
threading.Thread(target=client, daemon=True).start()
time.sleep(1)
print(said[0] if said else "waiting", flush=True)
"#;

/// Four callers whose commands wait for as many connects as each may take every place of all
/// (each has its share); a fifth caller's connect still has a place: each caller has a floor.
async fn callers_that_take_every_wait_leave_another_its_floor(who: Who) {
    let (server, _home) = HttpServer::start_callers_through(
        who,
        &["prlimit", "--nofile=1024:4096", "--"],
        &["--network", "allowlist"],
    );
    std::fs::write(server.workspace().join("hog.py"), HOG_THE_CONNECTIONS).unwrap();
    std::fs::write(server.workspace().join("one.py"), ONE_WAIT).unwrap();
    let mut hogs = Vec::new();
    for token in std::iter::once(ALICE).chain(MORE_CALLERS) {
        let hog = server.connect_as(token, false).await;
        let job = start_hog(&hog, who).await;
        hogs.push((hog, job));
    }
    for (hog, job) in &hogs {
        let said = hog_said(hog, job, "refused").await;
        // 400 connects, 64 of them waiting: the caller's share is full.
        assert!(
            said.contains("refused 336 "),
            "{who:?}: a hog did not fill its share: {said}"
        );
    }
    let bob = server.connect_as(BOB, false).await;
    let within = std::time::Duration::from_secs(60);
    let run = tokio::time::timeout(
        within,
        call(&bob, "terminal", json!({ "command": "python3 one.py" })),
    )
    .await
    .unwrap_or_else(|_| panic!("{who:?}: bob's call did not return"));
    assert!(
        text_of(&run).contains("waiting"),
        "{who:?}: bob's connect had no place: {}",
        text_of(&run)
    );
    for (n, (hog, _)) in hogs.into_iter().enumerate() {
        tokio::time::timeout(within, hog.cancel())
            .await
            .unwrap_or_else(|_| panic!("{who:?}: hog {n}'s session did not end"))
            .unwrap();
    }
    tokio::time::timeout(within, bob.cancel())
        .await
        .unwrap_or_else(|_| panic!("{who:?}: bob's session did not end"))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_callers_that_take_every_wait_leave_another_its_floor_as_root() {
    callers_that_take_every_wait_leave_another_its_floor(Who::Root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_callers_that_take_every_wait_leave_another_its_floor_as_nobody() {
    callers_that_take_every_wait_leave_another_its_floor(Who::Nobody).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_anothers_connects_are_left_alone_as_root() {
    anothers_connects_are_left_alone(Who::Root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_anothers_connects_are_left_alone_as_nobody() {
    anothers_connects_are_left_alone(Who::Nobody).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_loopback_closed_anothers_unix_waits_are_left_alone_as_root() {
    anothers_waits_are_left_alone(Who::Root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_loopback_closed_anothers_unix_waits_are_left_alone_as_nobody() {
    anothers_waits_are_left_alone(Who::Nobody).await;
}
