//! Where a running command's output comes from: its stdout and stderr pipes, or the master side
//! of its terminal. One type, so the loop that drives a command reads both the same way.
//!
//! Pipes are read on a thread of their own ([`PipeThread`]: a command can hold a pipe's lock
//! for as long as it likes), which also keeps the order in which the command wrote to them.
//!
//! A secret the user typed is masked here ([`crate::mask`]), before any sink sees a chunk.

use std::sync::Arc;

use super::pipe_thread::PipeThread;
use crate::mask::{HOLD_MS, Masking, Masks};
use crate::pty::sys::Master;

/// Which stream a chunk came from. A terminal has one stream: what the program wrote to
/// stdout and stderr arrives merged, as on a screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Out,
    Err,
    Terminal,
}

/// The read ends of one command's output, and the masking of the secrets in it.
pub(crate) struct Source {
    raw: Raw,
    masking: Option<Masking>,
    /// The last chunk's bytes are the masking's, not the raw buffer's.
    masked: bool,
}

/// The read ends themselves.
enum Raw {
    Pipes(PipeThread),
    Terminal {
        /// `None` once the terminal is hung up or no longer read.
        master: Option<Arc<Master>>,
        buf: Vec<u8>,
        len: usize,
        /// Keystrokes still to type ([`Source::type_in`]), fed as the program takes them while
        /// its output is read, so neither side waits for the other.
        input: Vec<u8>,
    },
}

/// What one [`Source::read`] got.
pub(crate) enum Read {
    /// Bytes of this stream, in [`Source::bytes`] until the next read.
    Chunk(Stream),
    /// A stream reached its end (or failed) and is no longer read.
    Closed,
}

impl Source {
    /// The pipes the thread `pipes` reads.
    pub(crate) fn pipes(pipes: PipeThread) -> Self {
        Source::of(Raw::Pipes(pipes))
    }

    pub(crate) fn terminal(master: Arc<Master>, chunk: usize) -> Self {
        Source::of(Raw::Terminal {
            master: Some(master),
            buf: vec![0; chunk],
            len: 0,
            input: Vec::new(),
        })
    }

    fn of(raw: Raw) -> Self {
        Source {
            raw,
            masking: None,
            masked: false,
        }
    }

    /// Masks the secrets of `masks` (those entered later too) in everything read from now on.
    pub(crate) fn masked(mut self, masks: Option<Arc<Masks>>) -> Self {
        self.masking = masks.map(Masking::new);
        self
    }

    /// Types `keys` into a terminal (see [`Raw::type_in`]).
    pub(crate) fn type_in(&mut self, keys: Vec<u8>) {
        self.raw.type_in(keys);
    }

    /// Reads at most `chunk` bytes per read from now on (a background job drains in larger
    /// reads than a one-shot call).
    pub(crate) fn read_in(&mut self, chunk: usize) {
        self.raw.read_in(chunk);
    }

    /// Some stream is still being read.
    pub(crate) fn is_open(&self) -> bool {
        self.raw.is_open()
    }

    /// Stops reading every stream (see [`Raw::close`]).
    pub(crate) fn close(&mut self) {
        self.raw.close();
    }

    /// Hangs up a terminal (its processes get SIGHUP); pipes stay as they are.
    pub(crate) fn hang_up(&mut self) {
        self.raw.hang_up();
    }

    /// The bytes of the last [`Read::Chunk`] of `stream`, masked.
    pub(crate) fn bytes(&self, stream: Stream) -> &[u8] {
        match &self.masking {
            Some(masking) if self.masked => masking.out(),
            _ => self.raw.bytes(stream),
        }
    }

    /// Waits for the next chunk or the end of a stream; pends forever once nothing is open.
    /// Cancel-safe: a read that did not complete took no bytes (what the masking holds back
    /// stays held). A chunk whose end could begin a secret has that end held back until the
    /// next read, or [`HOLD_MS`] without one; a stream's end passes on what it held.
    pub(crate) async fn read(&mut self) -> Read {
        let Source {
            raw,
            masking,
            masked,
        } = self;
        *masked = false;
        let Some(masking) = masking else {
            return raw.read().await;
        };
        loop {
            let read = match masking.holding() {
                Some(which) => {
                    let stream = stream_of(raw, which);
                    tokio::select! {
                        read = raw.read() => read,
                        () = tokio::time::sleep(std::time::Duration::from_millis(HOLD_MS)) => {
                            masking.flush(which);
                            *masked = true;
                            return Read::Chunk(stream);
                        }
                    }
                }
                None => raw.read().await,
            };
            match read {
                Read::Chunk(stream) => match masking.chunk(index(stream), raw.bytes(stream)) {
                    None => return read,
                    // Held back whole: wait for what follows.
                    Some([]) => {}
                    Some(_) => {
                        *masked = true;
                        return read;
                    }
                },
                Read::Closed => {
                    if let Some(which) = masking.holding()
                        && !raw.is_reading(stream_of(raw, which))
                    {
                        masking.flush(which);
                        *masked = true;
                        return Read::Chunk(stream_of(raw, which));
                    }
                    return Read::Closed;
                }
            }
        }
    }
}

/// A stream's place in the masking's state: stdout and a terminal 0, stderr 1.
fn index(stream: Stream) -> usize {
    usize::from(stream == Stream::Err)
}

/// The stream at place `which` of `raw`'s kind.
fn stream_of(raw: &Raw, which: usize) -> Stream {
    match (raw, which) {
        (Raw::Terminal { .. }, _) => Stream::Terminal,
        (Raw::Pipes { .. }, 0) => Stream::Out,
        (Raw::Pipes { .. }, _) => Stream::Err,
    }
}

impl Raw {
    /// Whether `stream` is still read.
    fn is_reading(&self, stream: Stream) -> bool {
        match (self, stream) {
            (Raw::Pipes(pipes), stream) => pipes.is_reading(stream),
            (Raw::Terminal { master, .. }, Stream::Terminal) => master.is_some(),
            _ => false,
        }
    }

    /// Types `keys` into a terminal, as fast as the program reads them. Written in the same
    /// loop that reads its output: a program that prints while it reads its input (or never
    /// reads it) cannot hold up the call, whose timeout and cancellation stay in force. What
    /// is not taken when the terminal is hung up, or once the program has ended, is dropped.
    fn type_in(&mut self, keys: Vec<u8>) {
        if let Raw::Terminal { input, .. } = self {
            input.extend(keys);
        }
    }

    fn read_in(&mut self, chunk: usize) {
        match self {
            Raw::Pipes(pipes) => pipes.read_in(chunk),
            Raw::Terminal { buf, .. } => buf.resize(chunk, 0),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Raw::Pipes(pipes) => pipes.is_open(),
            Raw::Terminal { master, .. } => master.is_some(),
        }
    }

    /// Stops reading every stream: a writer then sees a closed pipe (EPIPE) at once, and a
    /// terminal is hung up.
    fn close(&mut self) {
        match self {
            Raw::Pipes(pipes) => pipes.close(),
            Raw::Terminal { master, .. } => *master = None,
        }
    }

    fn hang_up(&mut self) {
        if let Raw::Terminal { master, .. } = self {
            *master = None;
        }
    }

    fn bytes(&self, stream: Stream) -> &[u8] {
        match (self, stream) {
            (Raw::Pipes(pipes), stream) => pipes.bytes(stream),
            (Raw::Terminal { buf, len, .. }, Stream::Terminal) => &buf[..*len],
            _ => &[],
        }
    }

    /// Waits for the next chunk or the end of a stream; pends forever once nothing is open.
    /// Cancel-safe: a read that did not complete took no bytes.
    async fn read(&mut self) -> Read {
        match self {
            Raw::Pipes(pipes) => pipes.read().await,
            Raw::Terminal {
                master,
                buf,
                len,
                input,
            } => {
                let Some(m) = master else {
                    return std::future::pending().await;
                };
                let read = loop {
                    if input.is_empty() {
                        break m.read(buf).await;
                    }
                    // Cancel-safe too: a write's result is taken in the poll that completes it.
                    tokio::select! {
                        read = m.read(buf) => break read,
                        wrote = m.write_some(input) => match wrote {
                            Ok(n) => drop(input.drain(..n)),
                            // The program is gone (EIO) or the terminal refuses: nobody takes it.
                            Err(_) => input.clear(),
                        },
                    }
                };
                match read {
                    Ok(n) if n > 0 => {
                        *len = n;
                        Read::Chunk(Stream::Terminal)
                    }
                    _ => {
                        *master = None;
                        input.clear();
                        Read::Closed
                    }
                }
            }
        }
    }
}
