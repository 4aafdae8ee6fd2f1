//! This agent's own socket of the view (see `peers.rs`): every agent, the hub too, answers the
//! view's calls there, through the same gate as the listener, for the hub to pass on.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

use super::conns::Conns;
use super::gate::Gate;
use super::peers::Peers;

/// Answers the view's calls on this agent's socket until `stop`; the socket file goes with it.
pub fn serve(peers: &Peers, gate: Arc<Gate>, stop: CancellationToken) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // A socket of a pid that died and was reused: nothing listens there any more.
    let _ = std::fs::remove_file(peers.own_socket());
    let listener = UnixListener::bind(peers.own_socket())
        .with_context(|| format!("cannot listen on {}", peers.own_socket().display()))?;
    std::fs::set_permissions(peers.own_socket(), std::fs::Permissions::from_mode(0o600))?;
    // The server listens on it itself, as it does for confined commands' listeners.
    agentty_sandbox::keep_from_commands(peers.own_socket())?;
    let own = peers.own_socket().to_path_buf();
    // Every request must carry a token: a connection here is counted as proven.
    let conns = Conns::new(usize::MAX, 1);
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = stop.cancelled() => break,
            };
            let (conn, _) = conns.admit();
            conn.prove(&Arc::from("agent socket"));
            let gate = gate.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let (gate, conn) = (gate.clone(), conn.clone());
                    async move { Ok::<_, std::convert::Infallible>(gate.handle(request, &conn).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::select! {
                    _ = connection => {}
                    () = stop.cancelled() => {}
                }
            });
        }
        let _ = std::fs::remove_file(&own);
    });
    Ok(())
}
