//! The listener: bound once, then every connection it accepts is served by hyper (HTTP/1.1) on
//! a task of its own, with the [`Gate`] as its service, until the server stops.
//!
//! It holds up under a flood (docs/BEHAVIOUR.md §9). Connections are capped, and those that
//! have shown no token make room and are closed after a few seconds ([`conns`](super::conns)).
//! When accepting fails, above all for want of file descriptors, the loop waits before it tries
//! again: retrying at once was measured spinning a core and writing 16 million log lines in 26
//! seconds. Out of descriptors, it first closes the oldest connections that have shown no
//! token, and holds the cap below what was open until the trouble has passed; with none to
//! close, it gives up a descriptor kept in reserve to take the waiting connection and close it
//! at once, so that client is told instead of left hanging. What happened is said in one log
//! line per burst ([`Trouble`]).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::conns::{Conn, Conns, PROVE_WITHIN};
use super::gate::Gate;

/// A proven client that sends its next request's headers slowly (or never) is dropped after
/// this long; an unproven one after [`PROVE_WITHIN`].
const HEADER_READ_TIMEOUT_SECS: u64 = 30;

/// Out of descriptors, this many of the oldest unproven connections are closed at once: room
/// for the work of the proven ones (each command takes a few descriptors), not only for the
/// next connection.
const EVICT_WHEN_OUT_OF_FDS: usize = 32;

/// After a failed accept that freed nothing, the loop waits this long, doubled after each
/// further one up to [`BACKOFF_MAX`]; a connection accepted starts it again.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Connections the kernel completes and queues for `accept`. A burst past the queue has its
/// handshakes dropped, and each client waits a second to retry (measured: a real call took 1 s
/// behind a flood of 400 with tokio's 128); the loop drains the queue quickly, so a longer one
/// costs nothing.
const BACKLOG: u32 = 1024;

/// When the server stops, a connection's request being answered gets this long to finish (its
/// reply is written whole); an event stream that goes on is cut then.
pub const CLOSE_WITHIN: Duration = Duration::from_secs(1);

/// A burst of trouble ends after this long without any; then its line is written.
const BURST_QUIET: Duration = Duration::from_secs(1);
/// A burst that goes on is said at most this often.
const BURST_REPORT_EVERY: Duration = Duration::from_secs(10);

/// The listener at `addr`, and the address it got (port 0 picks one).
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr)> {
    let listener = listen_on(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() {
        tracing::warn!(
            "listening on {bound}, which is not loopback: plain HTTP; TLS termination (a reverse \
             proxy) is yours to set up"
        );
    }
    Ok((listener, bound))
}

/// A listening socket with a backlog of [`BACKLOG`] (tokio's `bind` asks for 128).
fn listen_on(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Accepts connections, at most `conns.cap()` open, until `shutdown` resolves; each is served
/// until it closes, or until `stop` is cancelled.
pub async fn accept(
    listener: TcpListener,
    gate: Arc<Gate>,
    conns: Arc<Conns>,
    shutdown: impl std::future::Future<Output = ()>,
    stop: &CancellationToken,
) {
    tokio::pin!(shutdown);
    let mut reserve = Reserve::open();
    let mut trouble = Trouble::default();
    let mut backoff = BACKOFF_MIN;
    loop {
        let report_at = trouble.report_at();
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = tokio::time::sleep_until(report_at.unwrap_or_else(Instant::now)),
                if report_at.is_some() =>
            {
                trouble.report(&conns);
                continue;
            }
            accepted = accept_with_room(&listener, &conns) => accepted,
        };
        let error = match accepted {
            Ok(stream) => {
                backoff = BACKOFF_MIN;
                let (conn, made_room) = conns.admit();
                if made_room {
                    trouble.note().made_room += 1;
                }
                serve_connection(stream, conn, gate.clone(), stop.clone());
                continue;
            }
            Err(e) => e,
        };
        trouble.failed(&error);
        if gone_already(&error) {
            // That connection is gone; the next one is not held up by it.
            continue;
        }
        if out_of_fds(&error) {
            let closed = conns.short_of_fds(EVICT_WHEN_OUT_OF_FDS);
            trouble.note().evicted += closed as u64;
            trouble.lowered_to = Some(conns.cap());
            if closed == 0 && reserve.shed(&listener) {
                trouble.note().shed += 1;
                continue;
            }
        }
        // Descriptors of closed connections come back once their tasks have run; memory and
        // buffers come back with time. Nothing retries before.
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
    if trouble.report_at().is_some() {
        trouble.report(&conns);
    }
}

/// The next connection, once there is room for it.
async fn accept_with_room(listener: &TcpListener, conns: &Conns) -> io::Result<TcpStream> {
    conns.room().await;
    listener.accept().await.map(|(stream, _)| stream)
}

/// An error of one connection that is gone already (Linux passes a new connection's pending
/// network error to `accept`): nothing is short, nothing waits.
fn gone_already(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ECONNABORTED
                | libc::ECONNRESET
                | libc::EINTR
                | libc::EPROTO
                | libc::EPERM
                | libc::ENETDOWN
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::EHOSTUNREACH
                | libc::ENONET
                | libc::ENOPROTOOPT
                | libc::EOPNOTSUPP
                | libc::ETIMEDOUT
        )
    )
}

fn out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// A descriptor kept for the moment there are none (`/dev/null`, opened at start): given up to
/// accept a waiting connection and close it, then taken again.
struct Reserve(Option<std::fs::File>);

impl Reserve {
    fn open() -> Self {
        Reserve(std::fs::File::open("/dev/null").ok())
    }

    /// Takes one waiting connection and closes it at once; whether there was one to take.
    fn shed(&mut self, listener: &TcpListener) -> bool {
        let had = self.0.take().is_some();
        let shed = had
            && matches!(
                listener.poll_accept(&mut TaskContext::from_waker(Waker::noop())),
                Poll::Ready(Ok(_))
            );
        // The connection taken is dropped (closed) above, before the reserve is taken again.
        *self = Reserve::open();
        shed
    }
}

/// What went wrong in the accept loop since its last line, said in one line per burst: when
/// the burst ends ([`BURST_QUIET`] without trouble), or every [`BURST_REPORT_EVERY`] while it
/// goes on.
#[derive(Default)]
struct Trouble {
    /// When the period this line covers began, and the last trouble in it.
    since: Option<Instant>,
    last: Option<Instant>,
    failed: u64,
    error: Option<String>,
    /// Unproven connections closed: for a newcomer at the cap, for want of descriptors.
    made_room: u64,
    evicted: u64,
    /// New connections closed at once, no descriptor being free.
    shed: u64,
    /// The cap held lower for want of descriptors.
    lowered_to: Option<usize>,
}

impl Trouble {
    fn note(&mut self) -> &mut Self {
        let now = Instant::now();
        self.since.get_or_insert(now);
        self.last = Some(now);
        self
    }

    fn failed(&mut self, e: &io::Error) {
        self.note().failed += 1;
        self.error = Some(e.to_string());
    }

    /// When the next line is due, if there is anything to say.
    fn report_at(&self) -> Option<Instant> {
        let (since, last) = (self.since?, self.last?);
        Some((last + BURST_QUIET).min(since + BURST_REPORT_EVERY))
    }

    /// Writes the line; when the burst is over, the cap is restored.
    fn report(&mut self, conns: &Conns) {
        let Some(since) = self.since else { return };
        let cap = conns.cap();
        let mut said = Vec::new();
        if self.failed > 0 {
            said.push(format!(
                "{} accepts failed (last: {})",
                self.failed,
                self.error.as_deref().unwrap_or_default()
            ));
        }
        if self.made_room > 0 {
            let flag = if self.lowered_to.is_some() {
                ""
            } else {
                ", --max-connections"
            };
            said.push(format!(
                "{} connections that had shown no token were closed to make room (at most \
                 {cap} open{flag})",
                self.made_room
            ));
        }
        if self.evicted > 0 {
            said.push(format!(
                "{} connections that had shown no token were closed for want of file descriptors",
                self.evicted
            ));
        }
        if let Some(lowered) = self.lowered_to {
            said.push(format!(
                "at most {lowered} connections were kept open meanwhile, leaving descriptors for \
                 the work"
            ));
        }
        if self.shed > 0 {
            said.push(format!(
                "{} new connections were closed at once, no file descriptor being free",
                self.shed
            ));
        }
        let now = Instant::now();
        tracing::warn!(
            "listener: in {:.1} s, {}",
            now.duration_since(since).as_secs_f64(),
            said.join("; ")
        );
        let goes_on = self.last.is_some_and(|last| now < last + BURST_QUIET);
        *self = Trouble::default();
        if goes_on {
            self.since = Some(now);
        } else {
            conns.restore_cap();
        }
    }
}

/// Serves one connection on a task of its own, until it closes, the server stops (a request
/// being answered then gets [`CLOSE_WITHIN`]), it is closed to make room, or it has not proven
/// itself within [`PROVE_WITHIN`].
fn serve_connection(stream: TcpStream, conn: Arc<Conn>, gate: Arc<Gate>, stop: CancellationToken) {
    // Replies go out in several writes (headers, then events): without this, Nagle's
    // algorithm and the client's delayed ACK hold each reply ~40 ms (measured).
    let _ = stream.set_nodelay(true);
    tokio::spawn(async move {
        let service = hyper::service::service_fn({
            let conn = conn.clone();
            move |request| {
                let (gate, conn) = (gate.clone(), conn.clone());
                async move { Ok::<_, Infallible>(gate.handle(request, &conn).await) }
            }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(Duration::from_secs(HEADER_READ_TIMEOUT_SECS))
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        tokio::pin!(connection);
        let deadline = tokio::time::sleep(PROVE_WITHIN);
        tokio::pin!(deadline);
        let mut waited = false;
        loop {
            tokio::select! {
                _ = &mut connection => break,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(CLOSE_WITHIN, &mut connection).await;
                    break;
                }
                () = conn.evicted() => break,
                () = &mut deadline, if !waited => {
                    if !conn.is_proven() {
                        break;
                    }
                    waited = true;
                }
            }
        }
    });
}

#[cfg(test)]
#[path = "listen_tests.rs"]
mod tests;
