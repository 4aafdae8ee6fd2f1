//! `HttpResponseHeader`: what `curl -I` prints, one header block per response.
//!
//! With `-I` curl sends HEAD and writes each response's status line and headers to stdout,
//! followed by an empty line; with `-L` every redirect adds a block, and a proxy's
//! `200 Connection established` or an interim `100 Continue` is a block of its own. So the
//! output is read as a sequence of blocks, each kept as printed: header names keep their case,
//! duplicates (`Set-Cookie`) and order are kept, and nothing is merged into a map (the model
//! compares names case-insensitively; a map would cost bytes and lose duplicates).
//!
//! Only flags that leave stdout as pure header blocks are recognised: `-i` without `-I` adds a
//! body, `-v`, `-o`, `-D`, `-w` and `-K` change what stdout holds. A filter after curl is
//! refused: without the status line and the blank lines, headers cannot be put back in their
//! response. A nonzero exit is refused with curl's own error line, except `-f`'s 22 (an HTTP
//! error whose headers were printed whole).

use schemars::JsonSchema;
use serde::Serialize;

use crate::{Context, Output, Parser, Stage, Typed};

/// The responses `curl -I` printed, in order: redirects first, the final response last.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HttpResponseHeader {
    /// One record per response header block.
    pub responses: Vec<Response>,
}

/// One response: its status line and headers.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Response {
    /// HTTP version from the status line, without `HTTP/` (`1.1`, `2`).
    pub http_version: String,
    /// Status code (`200`, `301`).
    pub status: u16,
    /// Reason phrase (`Moved Permanently`); absent when the server sent none (HTTP/2, HTTP/3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Header fields in the order received, duplicates kept.
    pub headers: Vec<Header>,
}

/// One header field.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Header {
    /// Field name as sent (case kept; HTTP/2 sends lower case).
    pub name: String,
    /// Field value, surrounding whitespace removed; folded continuation lines joined by a space.
    pub value: String,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    if stage.program != "curl" {
        return None;
    }
    let flags = flags(&stage.args)?;
    (flags.head && flags.urls == 1)
        .then(|| Box::new(CurlHead { fail: flags.fail }) as Box<dyn Parser>)
}

struct Flags {
    head: bool,
    fail: bool,
    urls: usize,
}

/// Short options that take no value and leave stdout alone (`i` only matters without `-I`).
const SHORT_SWITCHES: &str = "IiSsLkf46012gNnjpRq";
/// Short options that take a value and leave stdout alone.
const SHORT_VALUED: &str = "HAeubcxmUErYyzCtX";
/// Long options that take no value and leave stdout alone.
const LONG_SWITCHES: &[&str] = &[
    "head",
    "include",
    "silent",
    "show-error",
    "location",
    "location-trusted",
    "insecure",
    "ipv4",
    "ipv6",
    "fail",
    "fail-with-body",
    "compressed",
    "http1.0",
    "http1.1",
    "http2",
    "http2-prior-knowledge",
    "http3",
    "globoff",
    "no-buffer",
    "netrc",
    "path-as-is",
    "no-progress-meter",
    "proxytunnel",
    "tcp-nodelay",
    "disable",
    "no-keepalive",
    "ssl-no-revoke",
    "tlsv1",
    "tlsv1.2",
    "tlsv1.3",
    "no-sessionid",
    "junk-session-cookies",
    "remote-time",
    "post301",
    "post302",
    "post303",
];
/// Long options that take a value and leave stdout alone.
const LONG_VALUED: &[&str] = &[
    "header",
    "user-agent",
    "referer",
    "user",
    "cookie",
    "cookie-jar",
    "proxy",
    "proxy-user",
    "max-time",
    "connect-timeout",
    "max-redirs",
    "retry",
    "retry-delay",
    "retry-max-time",
    "cacert",
    "capath",
    "cert",
    "key",
    "resolve",
    "connect-to",
    "noproxy",
    "proto",
    "proto-redir",
    "interface",
    "limit-rate",
    "range",
    "oauth2-bearer",
    "unix-socket",
    "abstract-unix-socket",
    "request",
    "time-cond",
    "continue-at",
    "url",
];

/// Reads curl's options; `None` for one that changes what stdout holds, or one not known.
fn flags(args: &[String]) -> Option<Flags> {
    let mut flags = Flags {
        head: false,
        fail: false,
        urls: 0,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if let Some(long) = arg.strip_prefix("--") {
            if LONG_SWITCHES.contains(&long) {
                flags.head |= long == "head";
                flags.fail |= long.starts_with("fail");
            } else if LONG_VALUED.contains(&long) {
                let value = args.next()?;
                if long == "request" && value != "HEAD" {
                    return None;
                }
                flags.urls += usize::from(long == "url");
            } else {
                return None;
            }
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (i, letter) in cluster.char_indices() {
                if SHORT_SWITCHES.contains(letter) {
                    flags.head |= letter == 'I';
                    flags.fail |= letter == 'f';
                    continue;
                }
                if !SHORT_VALUED.contains(letter) {
                    return None;
                }
                let rest = cluster.get(i + letter.len_utf8()..).unwrap_or("");
                let value = if rest.is_empty() {
                    args.next()?.as_str()
                } else {
                    rest
                };
                if letter == 'X' && value != "HEAD" {
                    return None;
                }
                break;
            }
        } else {
            flags.urls += 1;
        }
    }
    Some(flags)
}

struct CurlHead {
    fail: bool,
}

impl Parser for CurlHead {
    fn type_name(&self) -> &'static str {
        "HttpResponseHeader"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        if filtered {
            return Err("a filter after `curl -I` may drop the status lines that tell which response a header belongs to".into());
        }
        let code = out.exit_code.unwrap_or(0);
        let responses = blocks(out.stdout);
        let http_error = code == 22
            && self.fail
            && responses
                .as_ref()
                .is_ok_and(|r| r.last().is_some_and(|last| last.status >= 400));
        if code != 0 && !http_error {
            return Err(failure(code, out.stderr));
        }
        let responses = responses?;
        if responses.is_empty() {
            return Err("curl printed no response headers".into());
        }
        Ok(Typed::new(HttpResponseHeader { responses }))
    }
}

/// The header blocks of `text`: a status line, header lines, an empty line.
fn blocks(text: &str) -> Result<Vec<Response>, String> {
    let mut responses: Vec<Response> = Vec::new();
    let mut open = false;
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        let n = index + 1;
        if line.trim().is_empty() {
            open = false;
        } else if let Some(response) = status_line(line) {
            responses.push(response);
            open = true;
        } else if !open {
            return Err(format!("line {n} is not an HTTP status line"));
        } else if line.starts_with([' ', '\t']) {
            // An obsolete folded header: the line continues the previous value.
            let header = responses
                .last_mut()
                .and_then(|r| r.headers.last_mut())
                .ok_or_else(|| format!("line {n} continues no header"))?;
            if !header.value.is_empty() {
                header.value.push(' ');
            }
            header.value.push_str(line.trim());
        } else {
            let (name, value) = line
                .split_once(':')
                .filter(|(name, _)| is_token(name))
                .ok_or_else(|| format!("line {n} is not a `Name: value` header"))?;
            if let Some(response) = responses.last_mut() {
                response.headers.push(Header {
                    name: name.to_owned(),
                    value: value.trim().to_owned(),
                });
            }
        }
    }
    Ok(responses)
}

/// `HTTP/1.1 301 Moved Permanently`, `HTTP/2 200`.
fn status_line(line: &str) -> Option<Response> {
    let rest = line.strip_prefix("HTTP/")?;
    let (version, rest) = rest.split_once(' ')?;
    let version_ok = !version.is_empty()
        && version.len() <= 3
        && version.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let (code, reason) = rest.split_once(' ').unwrap_or((rest, ""));
    if !version_ok || code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let reason = reason.trim();
    Some(Response {
        http_version: version.to_owned(),
        status: code.parse().ok()?,
        reason: (!reason.is_empty()).then(|| reason.to_owned()),
        headers: Vec::new(),
    })
}

/// An RFC 9110 token: what a header name is made of.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Why curl failed: its own `curl: (N) …` line, else what exit code N means.
fn failure(code: i32, stderr: &str) -> String {
    if let Some(line) = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("curl:"))
    {
        return line.to_owned();
    }
    let meaning = match code {
        3 => "the URL is malformed",
        5 => "the proxy could not be resolved",
        6 => "the host could not be resolved",
        7 => "could not connect to the server",
        22 => "the server answered with an HTTP error",
        28 => "the operation timed out",
        35 => "the TLS handshake failed",
        47 => "too many redirects",
        52 => "the server sent nothing",
        56 => "receiving data failed",
        60 => "the server's certificate was not trusted",
        _ => "see `man curl`, EXIT CODES",
    };
    format!("curl exited with code {code} ({meaning}) and printed no error line")
}

#[cfg(test)]
#[path = "curl_tests.rs"]
mod tests;
