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

use super::client::*;
use super::network::serve;

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
