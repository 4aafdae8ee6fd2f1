//! `agentty serve --http`: MCP streamable HTTP at `/mcp`, for several clients at once
//! (docs/BEHAVIOUR.md §9).
//!
//! rmcp's `StreamableHttpService` speaks the protocol and checks `Host` and `Origin`; this
//! module puts it on a loopback listener (hyper, HTTP/1.1) behind what rmcp does not do:
//! - a bearer token on every request, compared in constant time; without it: 401 and nothing
//!   else happens. Each token of the token file is a caller ([`token`]): a client session
//!   belongs to the caller that opened it, and callers without a session are kept apart by it;
//! - only `/mcp` (404 elsewhere), bodies of at most 4 MiB (413);
//! - a cap on live sessions (503 with a JSON-RPC error that says why).
//!
//! Each client session gets its own [`Agentty`] session (jobs, shells, spill files, caps), made by
//! rmcp through [`Agentty::new_session`]; it ends when the client sends `DELETE /mcp`, when it
//! has sent nothing for the grace period, or when the server stops, and its jobs are stopped
//! then.
//!
//! Where each part lives: [`listen`] binds and accepts, [`gate`] is what every request goes
//! through (the checks above, in order, then rmcp), [`view`] is the web view, [`token`] reads
//! the token file, [`hold`] sends a reply that is ready soon in one write.

mod body;
mod gate;
mod hold;
mod listen;
mod options;
mod token;
mod view;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use agentty_server::Agentty;
use gate::Gate;
use token::Callers;

pub use options::HttpOptions;

/// The listener's tokens, read or made before anything is served.
pub struct Tokens {
    callers: Callers,
    file: PathBuf,
    made: bool,
}

impl Tokens {
    /// The token file of `options` (`--token-file`, or the state dir's, made if missing).
    pub fn load(options: &HttpOptions) -> Result<Self> {
        let (callers, file, made) =
            token::load_or_make(options.token_file.as_deref(), &options.default_token_file)?;
        Ok(Tokens {
            callers,
            file,
            made,
        })
    }

    /// How many callers (tokens) the file names.
    pub fn callers(&self) -> usize {
        self.callers.len()
    }

    /// The file as confined commands would reach it (symlinks resolved), to cover it there.
    pub fn file_to_hide(&self) -> Option<PathBuf> {
        std::fs::canonicalize(&self.file).ok()
    }
}

/// Serves `agentty` over HTTP until `shutdown` resolves; then every session ends (its jobs are
/// stopped).
pub async fn serve(
    agentty: Agentty,
    options: HttpOptions,
    tokens: Tokens,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let Tokens {
        callers,
        file: token_file,
        made,
    } = tokens;
    let (listener, bound) = listen::bind(options.listen).await?;
    let origin = format!("http://{bound}");
    announce(&options, bound, &callers, &token_file, made);
    if options.mcp {
        agentty.set_handle_grace(options.grace);
    }
    agentty.set_view_url(origin);
    let stop = CancellationToken::new();
    let gate = Gate::new(agentty, &options, bound, callers, &stop);
    listen::accept(listener, Arc::new(gate), shutdown, &stop).await;
    // Every session ends: rmcp closes them, each one's jobs are stopped as it goes.
    stop.cancel();
    Ok(())
}

/// Says on stderr where MCP (with `--http`) and the view are served, and where their tokens
/// are.
fn announce(options: &HttpOptions, bound: SocketAddr, callers: &Callers, file: &Path, made: bool) {
    let url = format!("http://{bound}/mcp");
    let tokens = match callers.len() {
        1 => "token".to_owned(),
        n => format!("{n} tokens (one per caller)"),
    };
    if options.mcp {
        eprintln!(
            "agentty: serving MCP over HTTP at {url}\n\
             agentty: {tokens} {} {} (send it as `Authorization: Bearer <token>`)\n\
             agentty: e.g. claude mcp add --transport http agentty {url} --header \
             \"Authorization: Bearer {}\"",
            if made { "written to" } else { "read from" },
            file.display(),
            callers.first_token(),
        );
    }
    eprintln!(
        "agentty: web view at http://{bound}/ (open it and enter a token once; {tokens} in {})",
        file.display()
    );
}
