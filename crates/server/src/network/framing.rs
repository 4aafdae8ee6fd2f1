//! One cleartext HTTP/1 request per proxied connection (docs/BEHAVIOUR.md §13): where a
//! request's body ends (RFC 9112 §6), so that nothing after it reaches the origin, and whether
//! what a command sends inside a `CONNECT` tunnel is such a request, whose `Host` the proxy then
//! sets as it does for one in absolute form.
//!
//! Passed on raw, a second request pipelined after the first (or hidden in a body the proxy and
//! the origin would delimit two ways) went to the origin with a `Host` of the command's choice,
//! and so did any request sent in a tunnel to a listed name's port 80: another site served by
//! the listed host's servers (a CDN's) was reached in cleartext.

/// How a request's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Body {
    None,
    Length(u64),
    Chunked,
}

/// The body framing of a request with `headers`; the error is the 400's body: a request an
/// origin could delimit otherwise than the proxy (both `Transfer-Encoding` and
/// `Content-Length`, lengths that differ, a coding other than `chunked`).
pub(super) fn framing(headers: &[httparse::Header<'_>]) -> Result<Body, &'static str> {
    fn named<'a>(
        headers: &'a [httparse::Header<'a>],
        name: &'static str,
    ) -> impl Iterator<Item = &'a str> {
        headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| std::str::from_utf8(h.value).unwrap_or("\u{0}"))
    }
    let codings: Vec<&str> = named(headers, "transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let mut lengths = named(headers, "content-length")
        .flat_map(|v| v.split(','))
        .map(str::trim);
    if !codings.is_empty() {
        if lengths.next().is_some() {
            return Err("both Transfer-Encoding and Content-Length");
        }
        return match codings.as_slice() {
            [only] if only.eq_ignore_ascii_case("chunked") => Ok(Body::Chunked),
            _ => Err("a Transfer-Encoding other than chunked"),
        };
    }
    let mut found: Option<u64> = None;
    for length in lengths {
        let length = length
            .parse::<u64>()
            .ok()
            .filter(|_| length.bytes().all(|b| b.is_ascii_digit()))
            .ok_or("an invalid Content-Length")?;
        if found.is_some_and(|f| f != length) {
            return Err("Content-Lengths that differ");
        }
        found = Some(length);
    }
    Ok(found.map_or(Body::None, Body::Length))
}

/// A chunk-size line or the trailers longer than this are refused.
const LINE_MAX_BYTES: usize = 4096;
const TRAILERS_MAX_BYTES: usize = 16 * 1024;

/// Follows a request body as its bytes come and says where it ends.
#[derive(Debug)]
pub(super) struct BodyEnd {
    state: State,
}

#[derive(Debug)]
enum State {
    /// `u64` bytes of data left (a `Content-Length`, or the current chunk).
    Data {
        left: u64,
        chunked: bool,
    },
    /// The CRLF after a chunk's data: bytes of it left.
    ChunkEnd(u8),
    /// A chunk-size line read so far.
    Size(Vec<u8>),
    /// The trailers after the last chunk: bytes of the current line, and all so far.
    Trailers {
        line: usize,
        total: usize,
    },
    Done,
}

impl BodyEnd {
    pub(super) fn new(body: Body) -> Self {
        let state = match body {
            Body::None | Body::Length(0) => State::Done,
            Body::Length(left) => State::Data {
                left,
                chunked: false,
            },
            Body::Chunked => State::Size(Vec::new()),
        };
        BodyEnd { state }
    }

    /// Whether the body has ended: nothing more of the client's goes to the origin.
    pub(super) fn done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// How many of `bytes` (what the client sent next) belong to the body; the rest follows
    /// its end. The error: a chunked body that is not well formed.
    pub(super) fn take(&mut self, bytes: &[u8]) -> Result<usize, &'static str> {
        let mut at = 0;
        while at < bytes.len() {
            match &mut self.state {
                State::Done => break,
                State::Data { left, chunked } => {
                    let n = usize::try_from(*left)
                        .unwrap_or(usize::MAX)
                        .min(bytes.len() - at);
                    at += n;
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = if *chunked {
                            State::ChunkEnd(2)
                        } else {
                            State::Done
                        };
                    }
                }
                State::ChunkEnd(left) => {
                    let want = if *left == 2 { b'\r' } else { b'\n' };
                    if bytes[at] != want {
                        return Err("a chunk not ended by CRLF");
                    }
                    at += 1;
                    *left -= 1;
                    if *left == 0 {
                        self.state = State::Size(Vec::new());
                    }
                }
                State::Size(line) => {
                    let byte = bytes[at];
                    at += 1;
                    if byte != b'\n' {
                        line.push(byte);
                        if line.len() > LINE_MAX_BYTES {
                            return Err("a chunk-size line too long");
                        }
                        continue;
                    }
                    let text = std::str::from_utf8(line.strip_suffix(b"\r").unwrap_or(line))
                        .map_err(|_| "a chunk size that is not text")?;
                    let hex = text.split(';').next().unwrap_or("").trim();
                    let size = u64::from_str_radix(hex, 16)
                        .ok()
                        .filter(|_| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                        .ok_or("an invalid chunk size")?;
                    self.state = if size == 0 {
                        State::Trailers { line: 0, total: 0 }
                    } else {
                        State::Data {
                            left: size,
                            chunked: true,
                        }
                    };
                }
                State::Trailers { line, total } => {
                    let byte = bytes[at];
                    at += 1;
                    *total += 1;
                    if *total > TRAILERS_MAX_BYTES {
                        return Err("trailers too long");
                    }
                    match byte {
                        b'\n' if *line == 0 => self.state = State::Done,
                        b'\n' => *line = 0,
                        b'\r' => {}
                        _ => *line += 1,
                    }
                }
            }
        }
        Ok(at)
    }
}

/// Whether `prefix` (the first bytes a command sent in a tunnel) may start an HTTP/1 request:
/// `None` while it cannot tell yet. Read as leniently as any server reads a request line (RFC
/// 9112 §2.2, §3): empty lines before it are skipped, and a method (a token) followed by any
/// whitespace is taken for one, whatever follows (an attacker's pass got requests with a
/// leading CRLF or two spaces past a stricter look, which node served). TLS (a first byte of
/// 0x16) and SSH (`SSH-2.0-…` and CRLF, no space) are told at once; a request that is not well
/// formed is then refused whole (`proxy.rs`).
pub(super) fn starts_http_request(prefix: &[u8]) -> Option<bool> {
    /// An undecided prefix longer than this is taken for a request (then refused whole if it
    /// is not one).
    const DECIDE_BYTES: usize = 8192;
    let is_tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    let start = prefix
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(prefix.len());
    let line = &prefix[start..];
    let Some(method_end) = line.iter().position(|&b| !is_tchar(b)) else {
        return (prefix.len() > DECIDE_BYTES).then_some(true);
    };
    let separated = matches!(line[method_end], b' ' | b'\t' | 0x0b | 0x0c);
    Some(method_end > 0 && separated)
}

#[cfg(test)]
#[path = "framing_tests.rs"]
mod tests;
