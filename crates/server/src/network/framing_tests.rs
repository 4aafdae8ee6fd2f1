use super::*;

fn framing_of(head: &str) -> Result<Body, &'static str> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut request = httparse::Request::new(&mut headers);
    assert!(request.parse(head.as_bytes()).unwrap().is_complete());
    framing(request.headers)
}

#[test]
fn a_body_is_delimited_one_way_only() {
    let h = |extra: &str| format!("POST / HTTP/1.1\r\nHost: h\r\n{extra}\r\n");
    assert_eq!(framing_of(&h("")), Ok(Body::None));
    assert_eq!(framing_of(&h("Content-Length: 5\r\n")), Ok(Body::Length(5)));
    assert_eq!(
        framing_of(&h("Content-Length: 5\r\nContent-Length: 5\r\n")),
        Ok(Body::Length(5))
    );
    assert_eq!(
        framing_of(&h("Transfer-Encoding: chunked\r\n")),
        Ok(Body::Chunked)
    );
    for refused in [
        "Content-Length: 5\r\nContent-Length: 6\r\n",
        "Content-Length: 5, 6\r\n",
        "Content-Length: +5\r\n",
        "Content-Length: -1\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked, identity\r\n",
        "Transfer-Encoding: identity\r\n",
    ] {
        assert!(framing_of(&h(refused)).is_err(), "{refused:?}");
    }
}

/// Feeds `bytes` in pieces of `step`: how many were the body's, and whether it ended.
fn body_of(body: Body, bytes: &[u8], step: usize) -> Result<(usize, bool), &'static str> {
    let mut end = BodyEnd::new(body);
    let mut taken = 0;
    for piece in bytes.chunks(step) {
        let n = end.take(piece)?;
        taken += n;
        if n < piece.len() {
            break;
        }
    }
    Ok((taken, end.done()))
}

#[test]
fn the_end_of_a_body_is_found_whatever_the_pieces() {
    let next = b"GET /second HTTP/1.1\r\nHost: evil\r\n\r\n";
    let chunked = b"5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nTrailer: x\r\n\r\n";
    for step in [1, 2, 3, 7, 1000] {
        let mut stream = b"hello".to_vec();
        stream.extend_from_slice(next);
        assert_eq!(body_of(Body::Length(5), &stream, step), Ok((5, true)));
        let mut stream = chunked.to_vec();
        stream.extend_from_slice(next);
        assert_eq!(
            body_of(Body::Chunked, &stream, step),
            Ok((chunked.len(), true)),
            "step {step}"
        );
        assert_eq!(body_of(Body::None, next, step), Ok((0, true)));
    }
    assert_eq!(body_of(Body::Length(10), b"hello", 2), Ok((5, false)));
    assert_eq!(body_of(Body::Chunked, b"5\r\nhel", 2), Ok((6, false)));
    assert!(body_of(Body::Chunked, b"5\r\nhelloXX", 100).is_err());
    assert!(body_of(Body::Chunked, b"zz\r\n", 100).is_err());
    assert!(body_of(Body::Chunked, b"\r\n", 100).is_err());
}

#[test]
fn a_request_line_is_told_from_tls_and_ssh() {
    for http in [
        &b"GET /b?d=1 HTTP/1.1\r\n"[..],
        b"post http://x/ http/1.0",
        b"PRI * HTTP/2.0\r\n",
        // As leniently as servers read one: empty lines first, any whitespace between words.
        b"\r\nGET /r1 HTTP/1.1\r\n",
        b"\n\n\nGET /r1 HTTP/1.1",
        b"GET  /r2 HTTP/1.1",
        b"GET /r3  HTTP/1.1",
        b"GET\t/r4 HTTP/1.1",
        b"GET /\r\n",
        b"GET / FTP/1.0\r\n",
        b"GET ",
    ] {
        assert_eq!(
            starts_http_request(http),
            Some(true),
            "{:?}",
            String::from_utf8_lossy(http)
        );
    }
    assert_eq!(starts_http_request(b"G"), None);
    assert_eq!(starts_http_request(b"\r\n"), None);
    assert_eq!(starts_http_request(b"\x16\x03\x01\x02\x00"), Some(false));
    assert_eq!(starts_http_request(b"SSH-2.0-OpenSSH_9.2\r\n"), Some(false));
    assert_eq!(starts_http_request(b"\x16GET / HTTP/1.1"), Some(false));
    assert_eq!(starts_http_request(&[b'A'; 9000]), Some(true));
}
