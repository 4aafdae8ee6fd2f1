//! Protocol hygiene under the transport's line reader (see `mod.rs`): a line that is not JSON is
//! answered with a parse error, a `tools/call` whose params are not `{name, arguments}` with
//! invalid params, and the end of input is said at once.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::model::{NumberOrString, RequestId};
use tokio::io::{AsyncRead, ReadBuf};

/// A line the filter kept from rmcp, to be answered.
#[derive(Debug)]
pub enum Refusal {
    /// Not JSON: answered -32700 with id null.
    Parse(String),
    /// A `tools/call` whose params are not `{name, arguments}`: answered -32602 with its id.
    InvalidParams(RequestId, String),
}

/// Refusals shared between a [`LineFilter`] and the [`LookAhead`] that answers them.
#[derive(Debug, Clone, Default)]
pub struct Refused(Arc<Mutex<VecDeque<Refusal>>>);

impl Refused {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Refusal>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The method of the notification the filter puts where it refused a line, so the transport
/// wakes up and answers it (no client sends it: the filter drops any line that uses it).
pub(super) const REFUSED_MARK_METHOD: &str = "notifications/agentty.refused";

pub(super) const REFUSED_MARK: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/agentty.refused\"}\n";

/// Refusals kept at most: a client sending nothing but garbage gets the first ones answered.
const REFUSALS_KEPT: usize = 64;

/// A line longer than this is refused whole (rmcp's own reader has a limit as well).
const LINE_MAX_BYTES: usize = 64 << 20;
/// What one read of the client's bytes takes at most.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// The stdin reader under the transport: passes through the lines that are JSON, refuses the
/// others (see the module header).
pub struct LineFilter<R> {
    inner: R,
    /// The start of a line not yet complete.
    partial: Vec<u8>,
    /// Checked lines ready to be read.
    ready: Vec<u8>,
    ready_at: usize,
    /// Discarding the rest of a line that was too long.
    skipping: bool,
    refused: Refused,
    /// What each read of `inner` fills: made once, not zeroed again at every read.
    chunk: Box<[u8]>,
}

impl<R> LineFilter<R> {
    pub fn new(inner: R, refused: Refused) -> Self {
        Self {
            inner,
            partial: Vec::new(),
            ready: Vec::new(),
            ready_at: 0,
            skipping: false,
            refused,
            chunk: vec![0u8; READ_CHUNK_BYTES].into_boxed_slice(),
        }
    }

    fn refuse(&mut self, refusal: Refusal) {
        let mut refused = self.refused.lock();
        if refused.len() < REFUSALS_KEPT {
            refused.push_back(refusal);
        }
        drop(refused);
        self.ready.extend_from_slice(REFUSED_MARK);
    }

    /// Checks one complete line (without its newline) and passes it on or refuses it.
    fn check(&mut self, line: &[u8]) {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // The syntax check does not limit nesting; rmcp's parser does, and would drop such a
        // line silently: a deeply nested one is read fully here, which applies the same limit.
        let deep = text.iter().filter(|&&b| b == b'[' || b == b'{').count() > 100;
        let may_be_tool_call = deep || text.windows(10).any(|w| w == b"tools/call");
        let marked = text
            .windows(REFUSED_MARK_METHOD.len())
            .any(|w| w == REFUSED_MARK_METHOD.as_bytes());
        if !may_be_tool_call && !marked {
            // Checking the syntax allocates nothing.
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(text) {
                self.refuse(Refusal::Parse(e.to_string()));
                return;
            }
            self.ready.extend_from_slice(text);
            self.ready.push(b'\n');
            return;
        }
        // Only a line that may be a tools/call is read into a value, once: that is its syntax
        // check too.
        match serde_json::from_slice::<serde_json::Value>(text) {
            Err(e) => self.refuse(Refusal::Parse(e.to_string())),
            // A client's own copy of the mark would answer refusals that were never made.
            Ok(value)
                if value.get("method").and_then(|m| m.as_str()) == Some(REFUSED_MARK_METHOD) => {}
            Ok(value) => match tool_call_params_error(&value) {
                Some((id, why)) => self.refuse(Refusal::InvalidParams(id, why)),
                None => {
                    self.ready.extend_from_slice(text);
                    self.ready.push(b'\n');
                }
            },
        }
    }

    /// Splits what was read into lines; keeps an incomplete one for later.
    fn take_lines(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = (&rest[..at], &rest[at + 1..]);
            if std::mem::take(&mut self.skipping) {
                // The end of a line too long: already refused.
            } else if self.partial.is_empty() {
                self.check(line);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.check(&whole);
            }
            rest = tail;
        }
        if self.skipping {
            return;
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > LINE_MAX_BYTES {
            self.partial = Vec::new();
            self.skipping = true;
            self.refuse(Refusal::Parse(format!(
                "a line over {LINE_MAX_BYTES} bytes"
            )));
        }
    }
}

/// For a `tools/call` request whose params are not `{name: string, arguments?: object}`: its
/// id and what is wrong.
fn tool_call_params_error(value: &serde_json::Value) -> Option<(RequestId, String)> {
    let object = value.as_object()?;
    if object.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let id = match object.get("id")? {
        serde_json::Value::String(s) => NumberOrString::String(s.as_str().into()),
        serde_json::Value::Number(n) => NumberOrString::Number(n.as_i64()?),
        _ => return None,
    };
    let why = match object.get("params") {
        None => "tools/call needs `params` with the tool's `name`".to_owned(),
        Some(params) => match params.as_object() {
            None => "tools/call `params` must be an object".to_owned(),
            Some(p) => match (p.get("name"), p.get("arguments")) {
                (Some(serde_json::Value::String(_)), None | Some(serde_json::Value::Object(_))) => {
                    return None;
                }
                (Some(serde_json::Value::String(_)), Some(_)) => {
                    "tools/call `params.arguments` must be an object".to_owned()
                }
                _ => "tools/call `params.name` must be the tool's name, a string".to_owned(),
            },
        },
    };
    Some((id, why))
}

impl<R: AsyncRead + Unpin> AsyncRead for LineFilter<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.ready_at < this.ready.len() {
                let n = out.remaining().min(this.ready.len() - this.ready_at);
                out.put_slice(&this.ready[this.ready_at..this.ready_at + n]);
                this.ready_at += n;
                if this.ready_at == this.ready.len() {
                    this.ready.clear();
                    this.ready_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut read = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let got = read.filled().len();
            if let Poll::Ready(Ok(())) = polled
                && got > 0
            {
                this.take_lines(&chunk[..got]);
            }
            this.chunk = chunk;
            match polled {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if got > 0 => {}
                Poll::Ready(Ok(())) => {
                    // End of input: an incomplete last line is passed on as it is.
                    let rest = std::mem::take(&mut this.partial);
                    if rest.is_empty() || this.skipping {
                        return Poll::Ready(Ok(()));
                    }
                    this.ready = rest;
                    this.ready_at = 0;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "line_filter_tests.rs"]
mod tests;
