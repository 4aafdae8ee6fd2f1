//! Where a running command's output comes from: its stdout and stderr pipes, or the master side
//! of its terminal. One type, so the loop that drives a command reads both the same way.
//!
//! Two pipes lose the order in which a command wrote to them: what it wrote to stdout may still
//! sit in the pipe when a later line on stderr is read. A build that floods stdout and then
//! prints its error on stderr would get that error placed before the flood's last lines, and
//! the head+tail cut would drop it (docs/BEHAVIOUR.md §7.2). So stdout is read first whenever
//! it has bytes, and a stderr chunk is placed only after what stdout held when that chunk was
//! read: for a command that writes one stream after the other, that is the order it wrote in.
//!
//! A secret the user typed is masked here ([`crate::mask`]), before any sink sees a chunk.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use tokio::net::unix::pipe;

use super::read_buf::ReadBuf;
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
    Pipes {
        out: Option<pipe::Receiver>,
        err: Option<pipe::Receiver>,
        buf_out: ReadBuf,
        buf_err: ReadBuf,
        /// A stderr chunk read while stdout still held earlier bytes: placed once those are.
        held_err: ReadBuf,
        /// Bytes of stdout still to place before `held_err`.
        owed_out: usize,
    },
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
    /// Pipes read `chunk` bytes at a time at most; the buffers are never zero-filled.
    pub(crate) fn pipes(out: pipe::Receiver, err: pipe::Receiver, chunk: usize) -> Self {
        Source::of(Raw::Pipes {
            out: Some(out),
            err: Some(err),
            buf_out: ReadBuf::new(chunk),
            buf_err: ReadBuf::new(chunk),
            held_err: ReadBuf::empty(),
            owed_out: 0,
        })
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
            (Raw::Pipes { out, .. }, Stream::Out) => out.is_some(),
            (Raw::Pipes { err, .. }, Stream::Err) => err.is_some(),
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
            Raw::Pipes {
                buf_out, buf_err, ..
            } => {
                buf_out.reserve(chunk);
                buf_err.reserve(chunk);
            }
            Raw::Terminal { buf, .. } => buf.resize(chunk, 0),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Raw::Pipes {
                out, err, held_err, ..
            } => out.is_some() || err.is_some() || !held_err.is_empty(),
            Raw::Terminal { master, .. } => master.is_some(),
        }
    }

    /// Stops reading every stream: a writer then sees a closed pipe (EPIPE) at once, and a
    /// terminal is hung up.
    fn close(&mut self) {
        match self {
            Raw::Pipes { out, err, .. } => {
                *out = None;
                *err = None;
            }
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
            (Raw::Pipes { buf_out, .. }, Stream::Out) => buf_out.bytes(),
            (Raw::Pipes { buf_err, .. }, Stream::Err) => buf_err.bytes(),
            (Raw::Terminal { buf, len, .. }, Stream::Terminal) => &buf[..*len],
            _ => &[],
        }
    }

    /// Waits for the next chunk or the end of a stream; pends forever once nothing is open.
    /// Cancel-safe: a read that did not complete took no bytes.
    async fn read(&mut self) -> Read {
        match self {
            Raw::Pipes {
                out,
                err,
                buf_out,
                buf_err,
                held_err,
                owed_out,
            } => {
                // First what a held stderr chunk waits on, then that chunk.
                if *owed_out > 0 {
                    match take_owed(out, buf_out, owed_out) {
                        Some(read) => return read,
                        None => *owed_out = 0,
                    }
                }
                if !held_err.is_empty() {
                    std::mem::swap(buf_err, held_err);
                    held_err.clear();
                    return Read::Chunk(Stream::Err);
                }
                let read = tokio::select! {
                    biased;
                    r = read_pipe(out, buf_out) => pipe_read(r, out, Stream::Out),
                    r = read_pipe(err, buf_err) => pipe_read(r, err, Stream::Err),
                };
                if matches!(read, Read::Chunk(Stream::Err)) {
                    let waiting = out.as_ref().map_or(0, pending_bytes);
                    if waiting > 0 {
                        // stdout's readiness was not seen yet: its bytes were written first.
                        std::mem::swap(buf_err, held_err);
                        *owed_out = waiting;
                        return match take_owed(out, buf_out, owed_out) {
                            Some(read) => read,
                            None => {
                                *owed_out = 0;
                                std::mem::swap(buf_err, held_err);
                                held_err.clear();
                                Read::Chunk(Stream::Err)
                            }
                        };
                    }
                }
                read
            }
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

/// Reads what stdout already holds (at most `owed` bytes) without waiting: `None` when nothing
/// more is there to take (or the pipe is gone), so the held stderr chunk goes next.
fn take_owed(
    out: &mut Option<pipe::Receiver>,
    buf: &mut ReadBuf,
    owed: &mut usize,
) -> Option<Read> {
    let pipe = out.as_ref()?;
    match buf.try_read_from(pipe, *owed) {
        Ok(n) if n > 0 => {
            *owed = owed.saturating_sub(n);
            Some(Read::Chunk(Stream::Out))
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
        _ => {
            *out = None;
            Some(Read::Closed)
        }
    }
}

/// Bytes waiting in a pipe (`FIONREAD`); 0 when it cannot be told.
fn pending_bytes(pipe: &pipe::Receiver) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD on a pipe fd we own writes one int.
    let r = unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &raw mut n) };
    if r == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

fn pipe_read(r: io::Result<usize>, pipe: &mut Option<pipe::Receiver>, stream: Stream) -> Read {
    match r {
        Ok(n) if n > 0 => Read::Chunk(stream),
        _ => {
            *pipe = None;
            Read::Closed
        }
    }
}

/// Reads into `buf` (cleared first, capacity kept), or waits forever once the pipe is closed.
async fn read_pipe(pipe: &mut Option<pipe::Receiver>, buf: &mut ReadBuf) -> io::Result<usize> {
    match pipe {
        Some(p) => buf.read_from(p).await,
        None => std::future::pending().await,
    }
}
