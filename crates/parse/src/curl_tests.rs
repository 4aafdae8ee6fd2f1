use super::*;
use crate::testutil::{ctx, output, parse_with, stage};
use serde_json::{Value as Json, json};

fn parse_as(
    line: &str,
    stdout: &str,
    filtered: bool,
    exit: i32,
    stderr: &str,
) -> Result<Json, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_with(recognize, &stage(line), &out, &ctx(), filtered)
}

const REDIRECT: &str = "HTTP/1.1 301 Moved Permanently\r\nLocation: /new\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nSet-Cookie: a=1\r\nX-Fold: one\r\n two\r\nX-Empty:\r\nContent-Length: 5\r\n\r\n";

#[test]
fn redirect_chain_keeps_every_response_and_header() {
    let data = parse_as(
        "curl -sIL http://127.0.0.1:8080/old",
        REDIRECT,
        false,
        0,
        "",
    )
    .unwrap();
    let r = &data["responses"];
    assert_eq!(r.as_array().unwrap().len(), 2);
    assert_eq!(r[0]["http_version"], "1.1");
    assert_eq!(r[0]["status"], 301);
    assert_eq!(r[0]["reason"], "Moved Permanently");
    assert_eq!(
        r[0]["headers"][0],
        json!({"name": "Location", "value": "/new"})
    );
    assert_eq!(r[1]["status"], 200);
    let headers = r[1]["headers"].as_array().unwrap();
    assert_eq!(headers.len(), 7);
    assert_eq!(headers[1], json!({"name": "Set-Cookie", "value": "a=1"}));
    assert_eq!(headers[2], json!({"name": "set-cookie", "value": "b=2"}));
    assert_eq!(headers[3], headers[1], "an exact duplicate is kept");
    assert_eq!(
        headers[4]["value"], "one two",
        "a folded line joins its header"
    );
    assert_eq!(headers[5]["value"], "");
}

#[test]
fn head_spellings_are_recognised() {
    for line in [
        "curl -I http://x",
        "curl -sI http://x",
        "curl -sSI http://x",
        "curl -Is http://x",
        "curl --head http://x",
        "curl -IL http://x",
        "curl -LI http://x",
        "curl -iI http://x",
        "curl -sI -H Accept:text/html http://x",
        "curl -I -m 5 --max-time 5 -A agent -Hx:y http://x",
        "curl --url http://x -I",
        "curl -I -X HEAD http://x",
    ] {
        assert!(recognize(&stage(line)).is_some(), "{line}");
    }
    for line in [
        "curl http://x",    // GET: a body follows
        "curl -i http://x", // headers and body
        "curl -vI http://x",
        "curl -I -o out http://x",
        "curl -I -D - http://x",
        "curl -I -w %{http_code} http://x",
        "curl -I -K cfg http://x",
        "curl -I -X GET http://x",
        "curl -I --max-time=5 http://x", // curl has no `=` form
        "curl -I http://x http://y",
        "curl -I",
        "curl -I -m",
        "wget -S http://x",
    ] {
        assert!(recognize(&stage(line)).is_none(), "{line}");
    }
}

#[test]
fn http2_and_preambles() {
    let h2 = "HTTP/2 200 \ncontent-type: text/html\nserver: x\n\n";
    let data = parse_as("curl -sI https://x", h2, false, 0, "").unwrap();
    assert_eq!(data["responses"][0]["http_version"], "2");
    assert!(data["responses"][0].get("reason").is_none());
    let proxied =
        "HTTP/1.1 200 Connection established\n\nHTTP/1.1 100 Continue\n\nHTTP/2 404 \nx: y\n\n";
    let data = parse_as(
        "curl -sI -x http://proxy:3128 https://x",
        proxied,
        false,
        0,
        "",
    )
    .unwrap();
    let statuses: Vec<&Json> = data["responses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert_eq!(statuses, [200, 100, 404]);
    assert_eq!(data["responses"][0]["headers"], json!([]));
}

#[test]
fn failures_are_refused_with_curls_line() {
    let err = parse_as(
        "curl -sSI http://127.0.0.1:1/",
        "",
        false,
        7,
        "curl: (7) Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server\n",
    )
    .unwrap_err();
    assert!(err.starts_with("curl: (7) Failed to connect"), "{err}");
    let err = parse_as("curl -sI http://127.0.0.1:1/", "", false, 7, "").unwrap_err();
    assert!(err.contains("code 7") && err.contains("connect"), "{err}");
    // -f: a 404 whose headers were printed whole is a result, not a failure.
    let not_found = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    let data = parse_as(
        "curl -fsI http://x/404",
        not_found,
        false,
        22,
        "curl: (22) The requested URL returned error: 404\n",
    )
    .unwrap();
    assert_eq!(data["responses"][0]["status"], 404);
    assert!(parse_as("curl -sI http://x/404", not_found, false, 22, "").is_err());
    assert!(
        parse_as("curl -sI http://x", "", false, 0, "")
            .unwrap_err()
            .contains("no response")
    );
}

#[test]
fn what_is_not_a_header_block_is_refused() {
    for text in [
        "<html>\n",
        "Content-Type: text/html\n",
        "HTTP/1.1 200 OK\nnot a header\n",
        "HTTP/1.1 200 OK\nBad Name: x\n",
        "HTTP/1.1 2000 OK\n",
        "HTTP/x 200 OK\n",
        "\n two\n",
    ] {
        let err = parse_as("curl -sI http://x", text, false, 0, "").unwrap_err();
        assert!(err.starts_with("line "), "{text:?}: {err}");
    }
    // Headers of a filtered curl cannot be put back in their response.
    assert!(parse_as("curl -sI http://x", REDIRECT, true, 0, "").is_err());
}

#[test]
fn never_panics_on_odd_text() {
    for text in [
        "",
        "\r",
        "HTTP/",
        "HTTP/1.1",
        "HTTP/1.1 ",
        "HTTP/1.1 2é0 x",
        "HTTP/1.1 200 OK\n\t",
        "é:é",
        "HTTP/1.1 200 OK\n:x\n",
    ] {
        let _ = parse_as("curl -sI http://x", text, false, 0, "");
        let _ = parse_as("curl -fsI http://x", text, false, 22, text);
    }
}
