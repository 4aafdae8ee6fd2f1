//! Talking to `serve --http` in benchmarks: an MCP session over one HTTP/1.1 connection
//! (hyper's own client, so what is measured is the server), and starting the server.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use serde_json::{Value, json};

/// One MCP session over one HTTP/1.1 connection.
pub struct Session {
    send: SendRequest<Full<Bytes>>,
    authority: String,
    token: String,
    id: Option<String>,
    next: u64,
}

impl Session {
    pub async fn connect(addr: &str, token: &str) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        let mut session = Session {
            send,
            authority: addr.to_owned(),
            token: token.to_owned(),
            id: None,
            next: 0,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}});
        let (status, id, _) = session.post(&init).await;
        assert_eq!(status, 200);
        session.id = id;
        session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    /// (status, session id header, body).
    pub async fn post(&mut self, body: &Value) -> (u16, Option<String>, String) {
        let mut request = hyper::Request::post("/mcp")
            .header("host", &self.authority)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = &self.id {
            request = request.header("mcp-session-id", id);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        self.send.ready().await.unwrap();
        let response = self.send.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let id = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, id, String::from_utf8_lossy(&body).into_owned())
    }

    /// Calls `tool` with `args`; returns the response body (an SSE stream's text).
    pub async fn call(&mut self, tool: &str, args: Value) -> String {
        self.next += 1;
        let call = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let (status, _, body) = self.post(&call).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// A trivial `terminal` call; panics on anything but a successful result.
    pub async fn trivial(&mut self) {
        self.next += 1;
        let call = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": "terminal", "arguments": {"argv": ["true"]}}});
        let (status, _, body) = self.post(&call).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"isError\":false"), "{body}");
    }
}

/// Starts `serve --http` on a free port: (process, address, token).
pub fn start_http(
    workspace: &std::path::Path,
    state: &std::path::Path,
) -> (std::process::Child, String, String) {
    start_http_of(env!("CARGO_BIN_EXE_agentty").as_ref(), workspace, state)
}

/// [`start_http`] with another build of agentty (`binary`).
pub fn start_http_of(
    binary: &std::path::Path,
    workspace: &std::path::Path,
    state: &std::path::Path,
) -> (std::process::Child, String, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(binary)
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--max-sessions",
            "128",
            "--workspace",
        ])
        .arg(workspace)
        .arg("--state-dir")
        .arg(state)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .unwrap();
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.trim_end_matches("/mcp").to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    let token = std::fs::read_to_string(state.join("token"))
        .unwrap()
        .trim()
        .to_owned();
    (child, addr, token)
}

pub fn raw_true() {
    let _ = std::process::Command::new("true").status().unwrap();
}

/// A raw spawn of `true`: whether it succeeded.
fn raw_true_status() -> bool {
    std::process::Command::new("true")
        .status()
        .is_ok_and(|s| s.success())
}

/// One MCP session over one HTTP/1.1 connection, spoken by hand on a blocking socket: each call
/// is one write and reads on the calling thread, so no task or thread of the client's own lies
/// between the request and its answer (hyper's client runs the connection as a task of its
/// own, a hand-off each way). The raw spawn it is compared with runs on the calling thread too.
pub struct Blocking {
    stream: std::io::BufReader<std::net::TcpStream>,
    head: String,
    next: u64,
}

impl Blocking {
    /// A keep-alive connection to `addr` that posts to `/mcp` with `token`; no MCP yet.
    pub fn open(addr: &str, token: &str) -> Self {
        let stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        Blocking {
            stream: std::io::BufReader::new(stream),
            head: format!(
                "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\n\
                 content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
            ),
            next: 0,
        }
    }

    /// An MCP session (initialized) over a connection of its own.
    pub fn connect(addr: &str, token: &str) -> Self {
        let mut session = Blocking::open(addr, token);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}});
        let (status, headers, _) = session.post(&init.to_string());
        assert_eq!(status, 200);
        let id = headers
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .expect("a session id");
        session.head.push_str(&format!("mcp-session-id: {id}\r\n"));
        let (status, _, _) =
            session.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(status == 202 || status == 200, "{status}");
        session
    }

    /// (status, header block, body) of one POST.
    pub fn post(&mut self, body: &str) -> (u16, String, String) {
        use std::io::{BufRead, Read, Write};
        let request = format!("{}content-length: {}\r\n\r\n{body}", self.head, body.len());
        self.stream.get_mut().write_all(request.as_bytes()).unwrap();
        let mut headers = String::new();
        loop {
            let before = headers.len();
            self.stream.read_line(&mut headers).unwrap();
            if headers[before..] == *"\r\n" {
                break;
            }
        }
        let status: u16 = headers.split(' ').nth(1).unwrap().parse().unwrap();
        let header = |name: &str| {
            headers.lines().find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        let mut body = Vec::new();
        if let Some(length) = header("content-length") {
            body.resize(length.parse().unwrap(), 0);
            self.stream.read_exact(&mut body).unwrap();
        } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            loop {
                let mut size = String::new();
                self.stream.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                let start = body.len();
                body.resize(start + size + 2, 0); // the chunk and its CRLF
                self.stream.read_exact(&mut body[start..]).unwrap();
                body.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        }
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    /// One request to the floor server ([`floor`]); panics unless its spawn succeeded.
    pub fn floor_call(&mut self) {
        let (status, _, body) = self.post("{}");
        assert_eq!((status, body.as_str()), (200, r#"{"ran":true}"#));
    }

    /// A trivial `terminal` call; panics on anything but a successful result.
    pub fn trivial(&mut self) {
        self.next += 1;
        let call = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": "terminal", "arguments": {"argv": ["true"]}}});
        let (status, _, body) = self.post(&call.to_string());
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"isError\":false"), "{body}");
    }
}

/// The floor a server that runs a command per HTTP request cannot go below here: a bare hyper
/// server (HTTP/1.1, tokio with two workers, as agentty) whose every POST spawns `true` and
/// waits for it on the worker, then answers a few bytes of JSON. No MCP, no sandbox, no
/// capture: what the HTTP exchange and the spawn cost together on this machine.
pub mod floor {
    use std::convert::Infallible;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};

    /// Set in the environment of the bench binary started as the floor server.
    const ROLE: &str = "AGENTTY_BENCH_FLOOR";

    /// Starts this bench binary again as the floor server: (process, address).
    pub fn start() -> (std::process::Child, String) {
        use std::io::BufRead;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .env(ROLE, "1")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        (child, line.trim().to_owned())
    }

    /// In the bench binary's `main`, first: serves as the floor (never returns) when started
    /// so by [`start`].
    pub fn serve_if_asked() {
        if std::env::var_os(ROLE).is_none() {
            return;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            println!("{}", listener.local_addr().unwrap());
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                stream.set_nodelay(true).unwrap();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        |request: hyper::Request<hyper::body::Incoming>| async {
                            let _ = request.into_body().collect().await;
                            let ran = super::raw_true_status();
                            let body = format!("{{\"ran\":{ran}}}");
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(body))))
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    }
}
