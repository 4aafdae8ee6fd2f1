//! MCP over stdio: the client's connection is the one session, and whatever ends the
//! connection (the client, stdin closing, a signal) ends the session and stops its jobs.
//! With `--view`, the web view is served beside it for as long as the session lasts.

use anyhow::{Context, Result};
use rmcp::transport::IntoTransport;
use rmcp::{RoleServer, ServiceExt};
use tokio_util::sync::CancellationToken;

use agentty_server::Agentty;
use agentty_server::transport::{LineFilter, LookAhead, Refused};

use crate::http::{self, HttpOptions, Tokens};
use crate::shutdown;

/// Serves the stdio session, and `view` beside it, until the session ends; then its jobs are
/// stopped.
pub async fn serve(agentty: Agentty, view: Option<(HttpOptions, Tokens)>) -> Result<()> {
    // `--view`: the web view beside stdio, until the stdio session ends.
    let view_done = CancellationToken::new();
    if let Some((options, tokens)) = view {
        serve_view(agentty.clone(), options, tokens, view_done.clone());
    }
    // Decodes what is already readable ahead, so a request cancelled in the same breath
    // starts nothing.
    // Lines that are not JSON are answered (-32700), not dropped; see server::transport.
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let refused = Refused::default();
    let stdio = IntoTransport::<RoleServer, _, _>::into_transport((
        LineFilter::new(stdin, refused.clone()),
        stdout,
    ));
    let transport = LookAhead::new(stdio, agentty.early_cancels(), refused);
    let input_closed = transport.input_closed();
    let service = agentty
        .clone()
        .serve(transport)
        .await
        .context("MCP initialization failed")?;
    let cancel = service.cancellation_token();
    let ended = tokio::select! {
        quit = service.waiting() => quit.map(drop).context("server task failed"),
        // The client closed stdin: the session is over, even if stdout is still full.
        () = input_closed => {
            tracing::info!("input ended, shutting down");
            cancel.cancel();
            Ok(())
        }
        signal = shutdown::signal() => {
            shutdown::shutting_down(signal);
            cancel.cancel();
            Ok(())
        }
    };
    // The stdio connection is the session: whatever ended it, no job outlives it.
    view_done.cancel();
    agentty.end_session().await;
    ended
}

/// The web view on its own task, until `done`; a view that cannot be served is said, and the
/// stdio session goes on without it.
fn serve_view(agentty: Agentty, options: HttpOptions, tokens: Tokens, done: CancellationToken) {
    tokio::spawn(async move {
        let served = http::serve(agentty, options, tokens, done.cancelled_owned()).await;
        if let Err(e) = served {
            tracing::error!("the web view is not served: {e:#}");
        }
    });
}
