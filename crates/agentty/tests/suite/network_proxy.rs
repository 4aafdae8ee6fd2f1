//! One cleartext request per proxied connection, with the `Host` the proxy judged
//! (docs/BEHAVIOUR.md §13, `server/src/network/framing.rs`). An attacker's pass found that a
//! request sent inside a `CONNECT` tunnel to a listed name's port 80 reached the origin with a
//! `Host` of the command's choice (another site on the listed host's servers, a CDN's), and
//! that a second request pipelined after a forwarded one reached it raw. `proxy_probe.py`
//! tries both, with bodies of each framing, against a recording origin of the test on the
//! loopback; nothing leaves this machine.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::client::*;
use super::network::{serve, unshared};

/// A loopback origin that answers the first request of each connection and records every byte
/// each connection brought.
fn recording_origin() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let record = Arc::clone(&record);
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_millis(1500)));
                let (mut got, mut answered, mut chunk) = (Vec::new(), false, [0u8; 4096]);
                while let Ok(n) = stream.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&chunk[..n]);
                    if !answered && got.windows(4).any(|w| w == b"\r\n\r\n") {
                        answered = true;
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        );
                    }
                }
                record
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&got).into_owned());
            });
        }
    });
    (port, seen)
}

async fn one_request_per_connection(who: Who) {
    let (port, seen) = recording_origin();
    let setup = serve(who, &["--network", "allowlist"], &[]).await;
    std::fs::write(
        setup.server.workspace().join("proxy_probe.py"),
        include_str!("proxy_probe.py"),
    )
    .unwrap();
    let (text, s) = setup
        .run(&format!("/usr/bin/python3 proxy_probe.py {port} 2>&1"))
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    for (name, status) in [
        ("tunnel", "HTTP/1.1 200 Connection established"),
        ("tunnel-crlf", "HTTP/1.1 200 Connection established"),
        ("tunnel-spaces", "HTTP/1.1 200 Connection established"),
        ("forward", "HTTP/1.1 200 OK"),
        ("chunked", "HTTP/1.1 200 OK"),
        ("ambiguous", "HTTP/1.1 400 Bad Request"),
    ] {
        assert!(text.contains(&format!("{name} {status}")), "{name}: {text}");
    }
    // The origin's connections end after its answer and the proxy's close: one for each
    // tunnel (the refused one brought nothing) and each forwarded request but the refused one.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < 5 && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5, "{seen:#?}");
    assert_eq!(
        seen.iter().filter(|b| b.is_empty()).count(),
        1,
        "only the request a server could read two ways brought nothing: {seen:#?}"
    );
    let host = format!("Host: 127.0.0.1:{port}\r\n");
    for (path, body) in [
        ("/tunnelled", ""),
        ("/tunnelled-crlf", ""),
        ("/forwarded", "hello"),
        ("/chunked", "5\r\nhello\r\n0\r\n\r\n"),
    ] {
        let got = seen
            .iter()
            .find(|b| b.contains(path))
            .unwrap_or_else(|| panic!("no request for {path}: {seen:#?}"));
        assert!(got.contains(&host), "{path}: {got:?}");
        assert!(got.ends_with(&format!("\r\n\r\n{body}")), "{path}: {got:?}");
        assert_eq!(got.matches("HTTP/1.1\r\n").count(), 1, "{path}: {got:?}");
    }
    let all = seen.concat();
    assert!(
        !all.contains("evil"),
        "a Host of the command's reached the origin: {all:?}"
    );
    assert!(
        !all.contains("/second"),
        "a pipelined request reached the origin: {all:?}"
    );
}

#[tokio::test]
async fn net_the_origin_gets_one_request_with_the_judged_host_as_root() {
    one_request_per_connection(Who::Root).await;
}

#[tokio::test]
async fn net_the_origin_gets_one_request_with_the_judged_host_as_nobody() {
    one_request_per_connection(Who::Nobody).await;
}

/// An allowed host the proxy cannot reach is said as what it is, not as a refusal: the model
/// learns that the sandbox let it through (so asking the user to allow it would change
/// nothing), on `terminal`, `shell_send` and a background job's reports (which say its
/// refusals too, once it ended), and the log has a line for it. Two such hosts: a listed name
/// that resolves to nothing, and a listed name whose address and port are listed but take no
/// connection. No packet can leave this machine: the server runs in a network namespace of its
/// own with loopback alone, its hosts file names nothing of the test's `.invalid` names, its
/// resolver is that loopback's port 53, and its name service is files and DNS only (no
/// systemd-resolved, which is reached over a unix socket).
#[tokio::test]
async fn net_an_allowed_host_not_reached_is_said_as_such_not_refused() {
    let port = 9; // discard: nothing listens in the server's own network namespace
    let dir = tempfile::Builder::new()
        .prefix("names-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let files = [
        (
            "hosts",
            "127.0.0.1 localhost\n127.0.0.1 closed-host.invalid\n",
        ),
        (
            "resolv.conf",
            "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
        ),
        ("nsswitch.conf", "hosts: files dns\n"),
    ];
    let mut mounts = String::from("ip link set lo up");
    for (name, text) in files {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        mounts.push_str(&format!(" && mount --bind {} /etc/{name}", file.display()));
    }
    let mount = format!("{mounts} && exec \"$@\"");
    let wrapper = unshared(&["-m", "-n"], &mount);
    let (nowhere, closed_host, job_only) = (
        "nowhere.invalid:80".to_owned(),
        format!("closed-host.invalid:{port}"),
        "job-only.invalid:80".to_owned(),
    );
    let address = format!("127.0.0.1:{port}");
    let flags = [
        "--network",
        "allowlist",
        "--allow-net",
        &nowhere,
        "--allow-net",
        &closed_host,
        "--allow-net",
        &address,
        "--allow-net",
        &job_only,
    ];
    let setup = serve(Who::Root, &flags, &wrapper).await;
    let said = |text: &str, target: &str, why: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with("[network] allowed, but agentty's proxy could not reach"))
            .unwrap_or_else(|| panic!("no note of a host not reached: {text}"));
        assert!(
            line.contains(&format!("{target} ({why})")),
            "{target}: {line}"
        );
        assert!(line.contains("Not a sandbox refusal"), "{line}");
        assert!(!text.contains("[error 2010]"), "said as a refusal: {text}");
    };

    let (text, s) = setup
        .run("curl -sS --max-time 20 http://nowhere.invalid/ 2>&1 | tail -n 2")
        .await;
    said(&text, &nowhere, "the name does not resolve here");
    assert_eq!(s["error_code"], serde_json::Value::Null, "{s}");
    assert!(
        s["notes"]
            .to_string()
            .contains("could not reach nowhere.invalid:80"),
        "not among the notes: {s}"
    );

    let (text, _) = setup
        .run(&format!(
            "curl -sS --max-time 20 http://closed-host.invalid:{port}/ 2>&1 | tail -n 2"
        ))
        .await;
    said(&text, &closed_host, "connecting failed: connection refused");

    let shell = setup.server.open_shell().await;
    let (text, _) = setup
        .server
        .shell_send(
            &shell,
            "curl -sS --max-time 20 http://nowhere.invalid/ 2>&1 | tail -n 2\n",
        )
        .await;
    said(&text, &nowhere, "the name does not resolve here");

    // A background job's reports say what its own commands met once it ended, whatever the
    // exit code, and nothing the calls before it met.
    let job = setup
        .server
        .background(json!({
            "command": "curl -sS --max-time 20 http://job-only.invalid/ 2>&1 | tail -n 1; \
                        curl -sS --max-time 20 https://exfil.invalid/ 2>&1 | tail -n 1"
        }))
        .await;
    let waited = setup
        .server
        .call("task_wait", json!({ "id": job, "timeout_ms": 30000 }))
        .await;
    let s = waited.structured_content.clone().unwrap_or_default();
    assert_eq!(s["job"]["state"], "exited", "{}", text_of(&waited));
    assert_eq!(s["job"]["error_code"], 2010, "{s}");
    let read = setup
        .server
        .call("task_output", json!({ "id": job, "since": 0 }))
        .await;
    for text in [text_of(&waited), text_of(&read)] {
        let refused = text
            .lines()
            .find(|l| l.starts_with("[error 2010] network: the sandbox refused"))
            .unwrap_or_else(|| panic!("the job's refusal is not said: {text}"));
        assert!(refused.contains("exfil.invalid:443"), "{refused}");
        let unreached = text
            .lines()
            .find(|l| l.starts_with("[network] allowed, but"))
            .unwrap_or_else(|| panic!("the job's host not reached is not said: {text}"));
        assert!(
            unreached.contains("job-only.invalid:80 (the name does not resolve here)"),
            "{unreached}"
        );
        assert!(
            !text.contains("nowhere.invalid") && !text.contains("closed-host"),
            "the job's report names what earlier calls met: {text}"
        );
    }

    for words in [
        ["network: allowed", "nowhere.invalid:80", "call c"],
        [
            "network: not reached",
            "nowhere.invalid:80",
            "does not resolve",
        ],
        ["network: not reached", &closed_host, "connection refused"],
    ] {
        assert!(
            logged(&setup.log, &words, Duration::from_secs(5))
                .await
                .is_some(),
            "no log line with {words:?}: {}",
            setup.log.lock().unwrap()
        );
    }
}
