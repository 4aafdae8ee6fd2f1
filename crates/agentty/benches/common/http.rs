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
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
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
