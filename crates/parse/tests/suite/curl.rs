//! Real `curl -I` against a tiny HTTP/1.1 server in a thread: the parsed responses must be
//! exactly what the server sent (a redirect, duplicate and empty headers), and a refused
//! connection must come back as curl's own error line.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use agentty_parse::Output;
use serde_json::{Value, json};

use super::common::{command, parse, stage};

/// What the server answers, by path: the status line and the headers, in order.
fn answer(path: &str) -> (&'static str, Vec<(&'static str, &'static str)>) {
    match path {
        "/old" => (
            "HTTP/1.1 301 Moved Permanently",
            vec![("Location", "/new"), ("Content-Length", "0")],
        ),
        "/new" => (
            "HTTP/1.1 200 OK",
            vec![
                ("Content-Type", "text/html; charset=utf-8"),
                ("Set-Cookie", "a=1; Path=/"),
                ("Set-Cookie", "b=2; HttpOnly"),
                ("X-Empty", ""),
                ("Content-Length", "12"),
            ],
        ),
        _ => ("HTTP/1.1 404 Not Found", vec![("Content-Length", "0")]),
    }
}

/// Serves every request of one connection; records the request lines.
fn serve(mut stream: TcpStream, seen: Arc<Mutex<Vec<String>>>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let request = String::from_utf8_lossy(&buffer[..end]).into_owned();
            buffer.drain(..end + 4);
            let line = request.lines().next().unwrap_or_default().to_owned();
            let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
            seen.lock().unwrap().push(line);
            let (status, headers) = answer(&path);
            let mut response = format!("{status}\r\n");
            for (name, value) in headers {
                response.push_str(&format!("{name}: {value}\r\n"));
            }
            response.push_str("\r\n");
            if stream.write_all(response.as_bytes()).is_err() {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A server on 127.0.0.1:0; returns its port and the request lines it has seen.
fn server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || serve(stream, log));
        }
    });
    (port, seen)
}

fn curl(args: &[&str]) -> Result<Value, String> {
    let out = command("curl").args(args).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    let argv = [&["curl"], args].concat();
    let output = Output {
        stdout: &stdout,
        stderr: &stderr,
        exit_code: out.status.code(),
    };
    let parsed = parse(&[stage(&argv)], &output)?;
    assert_eq!(parsed.type_name, "HttpResponseHeader");
    Ok(parsed.data)
}

/// The response record the parser should make of what the server sent for `path`.
fn expected(path: &str) -> Value {
    let (status_line, headers) = answer(path);
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap().trim_start_matches("HTTP/");
    let status: u16 = parts.next().unwrap().parse().unwrap();
    let reason = parts.next().unwrap();
    let headers: Vec<Value> = headers
        .iter()
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    json!({"http_version": version, "status": status, "reason": reason, "headers": headers})
}

#[test]
fn redirect_chain_is_what_the_server_sent() {
    let (port, seen) = server();
    let url = format!("http://127.0.0.1:{port}/old");
    for flags in ["-sIL", "-LI", "-sSIL"] {
        let data = curl(&[flags, &url]).unwrap();
        assert_eq!(
            data,
            json!({"responses": [expected("/old"), expected("/new")]}),
            "{flags}"
        );
    }
    let data = curl(&["--head", "--silent", &url]).unwrap();
    assert_eq!(data, json!({"responses": [expected("/old")]}));
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|l| l.starts_with("HEAD ")), "{seen:?}");
    assert!(seen.iter().any(|l| l == "HEAD /new HTTP/1.1"), "{seen:?}");
}

#[test]
fn http_error_with_fail_keeps_its_headers() {
    let (port, _) = server();
    let url = format!("http://127.0.0.1:{port}/missing");
    let data = curl(&["-fsSI", &url]).unwrap();
    assert_eq!(data["responses"][0], expected("/missing"));
    let data = curl(&["-sI", &url]).unwrap();
    assert_eq!(data["responses"][0]["status"], 404);
}

#[test]
fn refused_connection_is_curls_error() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    let err = curl(&["-sSI", &url]).unwrap_err();
    assert!(err.starts_with("curl: (7) "), "{err}");
    let err = curl(&["-sI", &url]).unwrap_err();
    assert!(err.contains("code 7"), "{err}");
}
