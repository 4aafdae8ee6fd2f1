//! A command's pipes, read and fed on a thread of their own.
//!
//! Why not the reactor's threads: `splice(2)` or `sendfile(2)` into a pipe holds the pipe's
//! lock while it waits for its source (an idle socket, a terminal), and `splice` out of a pipe
//! holds it while the socket it feeds is full. Rust's `io::copy` from a socket to stdout does
//! the first; any command may do it on purpose. Every read, write, `FIONREAD` and last close of
//! that pipe then waits for the lock, in an uninterruptible sleep that `O_NONBLOCK` and
//! `RWF_NOWAIT` do not avoid. On a request worker (one on 2 CPUs) such a command stalled every
//! call of every caller; on the drivers' thread, every job and shell. On a thread of its own it
//! stalls that thread only: the loop that drives the command still sees its deadline, its
//! cancellation and its exit, and stopping the tree ends the wait that holds the lock.
//!
//! The thread waits in `poll` (which takes no lock) on stdout, stderr, stdin while there is
//! input to feed, and a stop signal. It reads stdout first whenever it has bytes, and a stderr
//! chunk is passed on only after what stdout held when that chunk was read: for a command that
//! writes one stream after the other, the order it wrote in (docs/BEHAVIOUR.md §7.2). It reads
//! into at most [`BUFFERS`] buffers that go back and forth with the driving loop, so it reads
//! ahead that far and no further: a command that floods waits for the loop, as it waited for
//! the pipe. The thread closes the pipes itself, and is done when they are closed, when the
//! loop closes them ([`PipeThread::close`]) or when the loop is gone.
//!
//! The threads are kept for the next command ([`super::pipe_pool`]): a call does not pay for a
//! thread's start and end.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use tokio::sync::mpsc as tokio_mpsc;

use super::caller_threads::Counted;
use super::read_buf::ReadBuf;
use super::source::{Read, Stream};

/// How many chunks one command's output may occupy at once: the one the loop is using, and
/// two read ahead.
const BUFFERS: usize = 3;

/// The driving loop's side: chunks and ends, in the order the command wrote them.
pub(crate) struct PipeThread {
    pieces: tokio_mpsc::UnboundedReceiver<Piece>,
    /// Buffers whose bytes were used, going back to the thread; `None` once closed.
    spent: Option<mpsc::Sender<ReadBuf>>,
    /// Wakes the thread (an eventfd) to end, once `stopped` is set.
    wake: Arc<OwnedFd>,
    stopped: Arc<AtomicBool>,
    /// The thread's start, until taken by [`PipeThread::starter`] (or the drop).
    starter: Option<Box<Starter>>,
    /// How many bytes one read takes from now on.
    chunk: Arc<AtomicUsize>,
    /// The last chunk, until the next read.
    current: Option<(Stream, ReadBuf)>,
    /// A piece taken early by [`PipeThread::output_or_end`].
    early: Option<Piece>,
    out_open: bool,
    err_open: bool,
}

/// What the thread passes on.
enum Piece {
    Chunk(Stream, ReadBuf),
    Closed(Stream),
    /// The thread ended without saying more (it could not go on).
    Gone,
}

/// A command's input, fed until written or refused, then closed (end of file).
pub(crate) struct Input {
    pub fd: OwnedFd,
    pub bytes: Vec<u8>,
}

/// The server's ends of a command's pipes, and whose command it is.
pub(crate) struct Ends {
    pub out: OwnedFd,
    pub err: OwnedFd,
    pub input: Option<Input>,
    /// The caller (`None` over stdio): see [`super::caller_threads`].
    pub caller: Option<Arc<str>>,
}

impl PipeThread {
    /// Starts the thread on the read ends of `ends` (enlarged first, best-effort, to
    /// `pipe_bytes`) and the write end of stdin with what to feed it. Reads take `chunk` bytes
    /// at most. Fails if the thread cannot start, or the caller left too many behind
    /// ([`super::caller_threads`]); the fds are closed then (no command has them yet).
    pub(crate) fn start(ends: Ends, chunk: usize, pipe_bytes: Option<usize>) -> io::Result<Self> {
        let Ends {
            out,
            err,
            input,
            caller,
        } = ends;
        let counted = Counted::open(caller)?;
        let wake = Arc::new(eventfd()?);
        let stopped = Arc::new(AtomicBool::new(false));
        let (pieces_tx, pieces) = tokio_mpsc::unbounded_channel();
        let (spent, spent_rx) = mpsc::channel();
        let shared_chunk = Arc::new(AtomicUsize::new(chunk));
        let keeper = Keeper {
            out: Some(out),
            err: Some(err),
            input: input.map(|i| (i, 0)),
            wake: wake.clone(),
            stopped: stopped.clone(),
            child_ends: Vec::new(),
            counted,
            pieces: pieces_tx,
            spent: spent_rx,
            // The first buffer from the calling thread's heap, which has blocks of that size to
            // hand out again; any more (a flood) made on the thread when it needs them.
            spare: vec![ReadBuf::new(chunk)],
            made: 1,
            chunk: shared_chunk.clone(),
        };
        let starter = Box::new(Starter(Some((
            keeper,
            super::pipe_pool::reserve()?,
            pipe_bytes,
        ))));
        Ok(PipeThread {
            pieces,
            spent: Some(spent),
            wake,
            stopped,
            starter: Some(starter),
            chunk: shared_chunk,
            current: None,
            early: None,
            out_open: true,
            err_open: true,
        })
    }

    /// What starts the thread once the command is cloned, given the plan's copies of the
    /// child's ends to close first ([`crate::spawn::ChildEnds`]); dropped unused (nothing was
    /// cloned), it starts the thread all the same. The launcher's hand-off is the thread's one
    /// wake-up before the command's output: a thread already polling would need another, to
    /// take the ends. `None` once taken; a thread whose starter is never taken starts when the
    /// loop lets go.
    pub(crate) fn starter(&mut self) -> Option<crate::spawn::ChildEnds> {
        self.starter.take().map(|s| s as crate::spawn::ChildEnds)
    }

    /// Waits until there is output to read or the output has ended, taking nothing.
    pub(crate) async fn output_or_end(&mut self) {
        if self.early.is_none() && self.is_open() {
            self.early = Some(self.pieces.recv().await.unwrap_or(Piece::Gone));
        }
    }

    /// Waits for the next chunk or the end of a stream; pends forever once nothing is open.
    /// Cancel-safe: a read that did not complete took nothing.
    pub(crate) async fn read(&mut self) -> Read {
        self.give_back();
        if !self.is_open() {
            return std::future::pending().await;
        }
        let piece = match self.early.take() {
            Some(piece) => piece,
            None => self.pieces.recv().await.unwrap_or(Piece::Gone),
        };
        match piece {
            Piece::Chunk(stream, buf) => {
                self.current = Some((stream, buf));
                Read::Chunk(stream)
            }
            Piece::Closed(Stream::Out) => {
                self.out_open = false;
                Read::Closed
            }
            Piece::Closed(_) => {
                self.err_open = false;
                Read::Closed
            }
            Piece::Gone => {
                self.out_open = false;
                self.err_open = false;
                Read::Closed
            }
        }
    }

    /// The bytes of the last chunk, if it was of `stream`.
    pub(crate) fn bytes(&self, stream: Stream) -> &[u8] {
        match &self.current {
            Some((s, buf)) if *s == stream => buf.bytes(),
            _ => &[],
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.out_open || self.err_open
    }

    pub(crate) fn is_reading(&self, stream: Stream) -> bool {
        match stream {
            Stream::Out => self.out_open,
            Stream::Err => self.err_open,
            Stream::Terminal => false,
        }
    }

    /// Reads of `chunk` bytes from now on (never fewer than before).
    pub(crate) fn read_in(&self, chunk: usize) {
        self.chunk.fetch_max(chunk, Ordering::Relaxed);
    }

    /// Stops reading: the thread closes the pipes (a writer then sees EPIPE) and ends. What it
    /// read and the loop did not take is dropped.
    pub(crate) fn close(&mut self) {
        self.out_open = false;
        self.err_open = false;
        self.current = None;
        self.early = None;
        self.spent = None;
        self.stopped.store(true, Ordering::Release);
        signal(&self.wake);
    }

    /// The last chunk's buffer goes back to the thread.
    fn give_back(&mut self) {
        if let Some((_, buf)) = self.current.take()
            && let Some(spent) = &self.spent
        {
            let _ = spent.send(buf);
        }
    }
}

impl Drop for PipeThread {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
        signal(&self.wake);
        // Never started: it starts to close the pipes and be done.
        drop(self.starter.take());
    }
}

/// The thread's start: its keeper, the thread set aside for it, and the pipes' size to ask for.
pub(crate) struct Starter(Option<(Keeper, super::pipe_pool::Reserved, Option<usize>)>);

impl Starter {
    fn start(&mut self, child_ends: Vec<OwnedFd>) {
        if let Some((mut keeper, thread, pipe_bytes)) = self.0.take() {
            keeper.child_ends = child_ends;
            thread.run(Box::new(move || keeper.run(pipe_bytes)));
        }
    }
}

impl crate::spawn::TakeChildEnds for Starter {
    fn take(mut self: Box<Self>, ends: Vec<OwnedFd>) {
        self.start(ends);
    }
}

impl Drop for Starter {
    fn drop(&mut self) {
        self.start(Vec::new());
    }
}

/// The thread's side.
struct Keeper {
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    /// The input and how much of it was written.
    input: Option<(Input, usize)>,
    wake: Arc<OwnedFd>,
    stopped: Arc<AtomicBool>,
    /// The plan's copies of the child's ends, closed first thing (the child has its own).
    child_ends: Vec<OwnedFd>,
    pieces: tokio_mpsc::UnboundedSender<Piece>,
    spent: mpsc::Receiver<ReadBuf>,
    /// Buffers at hand.
    spare: Vec<ReadBuf>,
    /// Buffers made so far (at most [`BUFFERS`] live at once).
    made: usize,
    chunk: Arc<AtomicUsize>,
    /// Counts this thread for its caller until it is done: the last field, dropped after the
    /// pipes (on a panic too).
    #[expect(dead_code, reason = "held until the thread is done")]
    counted: Counted,
}

/// The loop is gone (or closed the pipes): the thread ends.
struct Gone;

impl Keeper {
    fn run(mut self, pipe_bytes: Option<usize>) {
        // Closed here: the child may hold their lock.
        self.child_ends.clear();
        if let Some(bytes) = pipe_bytes {
            for fd in [&self.out, &self.err].into_iter().flatten() {
                enlarge(fd.as_fd(), bytes);
            }
        }
        if let Some((input, _)) = &self.input
            && set_nonblocking(input.fd.as_fd()).is_err()
        {
            self.input = None;
        }
        let _ = self.serve();
        // Closed here: a close waits for the pipe's lock too.
        self.out = None;
        self.err = None;
        self.input = None;
        // Dropped here, `counted` last: the thread is done.
    }

    fn serve(&mut self) -> Result<(), Gone> {
        while self.out.is_some() || self.err.is_some() || self.input.is_some() {
            let mut fds = [
                pollfd(Some(&self.wake), libc::POLLIN),
                pollfd(self.out.as_ref(), libc::POLLIN),
                pollfd(self.err.as_ref(), libc::POLLIN),
                pollfd(self.input.as_ref().map(|(i, _)| &i.fd), libc::POLLOUT),
            ];
            // SAFETY: poll on an array of pollfd we own; -1 fds are skipped.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if n < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(Gone);
            }
            if fds[0].revents != 0 {
                if self.stopped.load(Ordering::Acquire) {
                    return Err(Gone);
                }
                drain(&self.wake);
            }
            if fds[3].revents != 0 {
                self.feed();
            }
            if fds[1].revents != 0 {
                self.pass_on(Stream::Out)?;
            } else if fds[2].revents != 0 {
                self.pass_on_err()?;
            }
        }
        Ok(())
    }

    /// Reads a chunk of `stream` and passes it on, or its end.
    fn pass_on(&mut self, stream: Stream) -> Result<(), Gone> {
        let want = self.chunk.load(Ordering::Relaxed);
        match self.read(stream, want)? {
            Got::Chunk(buf) => self.send(Piece::Chunk(stream, buf)),
            Got::Nothing => Ok(()),
            Got::End => self.end(stream),
        }
    }

    /// Reads a chunk of stderr and passes it on after what stdout held when it was read.
    fn pass_on_err(&mut self) -> Result<(), Gone> {
        let want = self.chunk.load(Ordering::Relaxed);
        let chunk = match self.read(Stream::Err, want)? {
            Got::Chunk(buf) => buf,
            Got::Nothing => return Ok(()),
            Got::End => return self.end(Stream::Err),
        };
        // stdout's readiness was not seen yet: its bytes were written first.
        let mut owed = self.out.as_ref().map_or(0, |fd| pending_bytes(fd.as_fd()));
        while owed > 0 {
            match self.read(Stream::Out, owed.min(want))? {
                Got::Chunk(buf) => {
                    owed = owed.saturating_sub(buf.bytes().len());
                    self.send(Piece::Chunk(Stream::Out, buf))?;
                }
                Got::Nothing => break,
                Got::End => {
                    self.end(Stream::Out)?;
                    break;
                }
            }
        }
        self.send(Piece::Chunk(Stream::Err, chunk))
    }

    /// One read of at most `want` bytes of `stream`.
    fn read(&mut self, stream: Stream, want: usize) -> Result<Got, Gone> {
        let mut buf = self.buffer()?;
        let fd = match stream {
            Stream::Out => self.out.as_ref(),
            _ => self.err.as_ref(),
        };
        let Some(fd) = fd else {
            self.spare.push(buf);
            return Ok(Got::Nothing);
        };
        match buf.read_fd(fd.as_fd(), want) {
            Ok(n) if n > 0 => Ok(Got::Chunk(buf)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.spare.push(buf);
                Ok(Got::Nothing)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                self.spare.push(buf);
                Ok(Got::Nothing)
            }
            _ => {
                self.spare.push(buf);
                Ok(Got::End)
            }
        }
    }

    /// `stream` ended (or failed): closed here, and said so once both have (nothing waits on
    /// one stream's end alone, and one wake-up of the loop is cheaper than two).
    fn end(&mut self, stream: Stream) -> Result<(), Gone> {
        match stream {
            Stream::Out => self.out = None,
            _ => self.err = None,
        }
        if self.out.is_some() || self.err.is_some() {
            return Ok(());
        }
        self.send(Piece::Closed(Stream::Out))?;
        self.send(Piece::Closed(Stream::Err))
    }

    fn send(&self, piece: Piece) -> Result<(), Gone> {
        self.pieces.send(piece).map_err(|_| Gone)
    }

    /// A buffer for the next read, of the current chunk size: one at hand, one the loop gave
    /// back, a new one while fewer than [`BUFFERS`] were made, or the next one the loop gives
    /// back (the thread waits for the loop here).
    fn buffer(&mut self) -> Result<ReadBuf, Gone> {
        let chunk = self.chunk.load(Ordering::Relaxed);
        let buf = match self.spare.pop() {
            Some(buf) => buf,
            None => match self.spent.try_recv() {
                Ok(buf) => buf,
                Err(mpsc::TryRecvError::Disconnected) => return Err(Gone),
                Err(mpsc::TryRecvError::Empty) if self.made < BUFFERS => {
                    self.made += 1;
                    return Ok(ReadBuf::new(chunk));
                }
                Err(mpsc::TryRecvError::Empty) => self.spent.recv().map_err(|_| Gone)?,
            },
        };
        Ok(if buf.capacity() < chunk {
            ReadBuf::new(chunk)
        } else {
            buf
        })
    }

    /// Writes what the pipe takes of the input; closes stdin once all is written or the
    /// command will take no more.
    fn feed(&mut self) {
        let Some((input, written)) = &mut self.input else {
            return;
        };
        let rest = &input.bytes[*written..];
        // SAFETY: write from a live slice to an fd we own.
        let n = unsafe { libc::write(input.fd.as_raw_fd(), rest.as_ptr().cast(), rest.len()) };
        if n >= 0 {
            *written += n.unsigned_abs();
            if *written >= input.bytes.len() {
                self.input = None;
            }
            return;
        }
        let e = io::Error::last_os_error().kind();
        if e != io::ErrorKind::WouldBlock && e != io::ErrorKind::Interrupted {
            // Gone (EPIPE) or refused: a process that exits without reading is not an error.
            self.input = None;
        }
    }
}

/// What one read got.
enum Got {
    Chunk(ReadBuf),
    /// Nothing there yet.
    Nothing,
    /// The stream ended or failed.
    End,
}

fn pollfd(fd: Option<&impl AsRawFd>, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.map_or(-1, AsRawFd::as_raw_fd),
        events,
        revents: 0,
    }
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd returns a fresh fd or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes the eventfd readable: the thread's poll sees it.
fn signal(wake: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: an 8-byte write to an eventfd we own; failure (the counter full) leaves it set.
    let _ = unsafe { libc::write(wake.as_raw_fd(), (&raw const one).cast(), 8) };
}

/// Makes the eventfd unreadable again (it is non-blocking).
fn drain(wake: &OwnedFd) {
    let mut count: u64 = 0;
    // SAFETY: an 8-byte read from an eventfd we own into a u64.
    let _ = unsafe { libc::read(wake.as_raw_fd(), (&raw mut count).cast(), 8) };
}

/// Bytes waiting in a pipe (`FIONREAD`); 0 when it cannot be told.
fn pending_bytes(pipe: BorrowedFd<'_>) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD on a pipe fd we own writes one int.
    let r = unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &raw mut n) };
    if r == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

/// Asks the kernel for a pipe of `bytes` (it may grant less: `/proc/sys/fs/pipe-max-size`).
fn enlarge(pipe: BorrowedFd<'_>, bytes: usize) {
    // SAFETY: F_SETPIPE_SZ on a pipe fd we own; failure leaves the pipe as it was.
    unsafe {
        libc::fcntl(
            pipe.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX),
        );
    }
}

fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on an fd we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "pipe_thread_tests.rs"]
mod tests;
