//! The listener: bound once, then every connection it accepts is served by hyper (HTTP/1.1) on
//! a task of its own, with the [`Gate`] as its service, until the server stops.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::gate::Gate;

/// A client that sends its headers slowly (or never) is dropped after this long.
const HEADER_READ_TIMEOUT_SECS: u64 = 30;

/// The listener at `addr`, and the address it got (port 0 picks one).
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() {
        tracing::warn!(
            "listening on {bound}, which is not loopback: plain HTTP; TLS termination (a reverse \
             proxy) is yours to set up"
        );
    }
    Ok((listener, bound))
}

/// Accepts connections until `shutdown` resolves; each is served until it closes, or until
/// `stop` is cancelled.
pub async fn accept(
    listener: TcpListener,
    gate: Arc<Gate>,
    shutdown: impl std::future::Future<Output = ()>,
    stop: &CancellationToken,
) {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        serve_connection(stream, gate.clone(), stop.clone());
    }
}

/// Serves one connection on a task of its own.
fn serve_connection(stream: TcpStream, gate: Arc<Gate>, stop: CancellationToken) {
    // Replies go out in several writes (headers, then events): without this, Nagle's
    // algorithm and the client's delayed ACK hold each reply ~40 ms (measured).
    let _ = stream.set_nodelay(true);
    tokio::spawn(async move {
        let service = hyper::service::service_fn(move |request| {
            let gate = gate.clone();
            async move { Ok::<_, Infallible>(gate.handle(request).await) }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(Duration::from_secs(HEADER_READ_TIMEOUT_SECS))
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        tokio::select! {
            _ = connection => {}
            () = stop.cancelled() => {}
        }
    });
}
