//! `agentty serve --http`: MCP streamable HTTP at `/mcp`, for several clients at once
//! (docs/BEHAVIOUR.md §9).
//!
//! rmcp's `StreamableHttpService` speaks the protocol and checks `Host` and `Origin`; this
//! module puts it on a loopback listener (hyper, HTTP/1.1) behind what rmcp does not do:
//! - a bearer token on every request, compared in constant time; without it: 401 and nothing
//!   else happens. Each token of the token file is a caller ([`token`]): a client session
//!   belongs to the caller that opened it, and callers without a session are kept apart by it;
//! - only `/mcp` (404 elsewhere), bodies of at most 4 MiB (413);
//! - a cap on open connections; one that has shown no token is closed after a few seconds, or
//!   sooner when room is needed; accept errors are waited out and said once per burst;
//! - a cap on live sessions, and a share of it for each caller (503 with a JSON-RPC error that
//!   says which).
//!
//! Each client session gets its own [`Agentty`] session (jobs, shells, spill files, caps), made by
//! rmcp through [`Agentty::new_session`]; it ends when the client sends `DELETE /mcp`, when it
//! has sent nothing for the grace period, or when the server stops, and its jobs are stopped
//! then.
//!
//! It also answers the operator (docs/BEHAVIOUR.md §14): `/livez` and `/readyz` to anyone,
//! `/metrics` behind the token; and a client session comes back after a restart under its id.
//!
//! Where each part lives: [`listen`] binds and accepts, [`conns`] caps the connections and
//! chooses which one makes room, [`gate`] is what every request goes
//! through (the checks above, in order, then rmcp), [`sessions`] knows whose each session is and
//! keeps the caps, [`view`] is the web view, [`token`] reads the token file and finds a
//! request's token, [`hosts`] the `Host` names accepted, [`health`] the operator's paths,
//! [`resume`] the store that brings sessions back, [`hold`] sends a reply that is ready soon in
//! one write.

mod agent_socket;
mod body;
mod conns;
mod gate;
mod health;
mod hold;
pub mod hosts;
mod listen;
pub mod login;
mod options;
mod peers;
mod resume;
mod sessions;
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
    // rmcp's sessions and the view's agent sockets end with `stop`; connections with
    // `conns_stop`, first, so a reply being written at the end goes out whole.
    let stop = CancellationToken::new();
    let conns_stop = CancellationToken::new();
    // Shared among the token file's callers and the operator's view (see `conns`).
    let conns = conns::Conns::new(
        options.max_connections.unwrap_or_else(conns::default_cap),
        callers.len() + 1,
    );
    tokio::pin!(shutdown);
    let bound = match listen::bind(options.listen).await {
        Ok(bound) => bound,
        // `--view` beside stdio, on a port another agent of this user already serves the page
        // on: this agent's sessions show on that page (see `peers`).
        Err(e) if !options.mcp && options.listen.port() != 0 && address_in_use(&e) => {
            let gate = Arc::new(Gate::new(
                agentty.clone(),
                &options,
                options.listen,
                callers,
                &stop,
            ));
            let peers = agents_of(&options, &gate)?;
            agent_socket::serve(&peers, gate.clone(), stop.clone())?;
            let origin = format!("http://{}", options.listen);
            agentty.set_view_url(origin.clone());
            eprintln!(
                "agentty: web view at {origin}/, served by another agentty of this user; this \
                 agent's sessions show there (and it takes the address over if that one ends)"
            );
            let bound = loop {
                tokio::select! {
                    () = tokio::time::sleep(peers::RETRY_PORT_EVERY) => {}
                    () = &mut shutdown => {
                        stop.cancel();
                        return Ok(());
                    }
                }
                if let Ok(bound) = listen::bind(options.listen).await {
                    break bound;
                }
            };
            tracing::info!("took over the web view at {origin}/");
            gate.view().serve_peers(peers);
            listen::accept(bound.0, gate, conns.clone(), shutdown, &conns_stop).await;
            close(&conns, &conns_stop, &stop).await;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let (listener, bound) = bound;
    let origin = format!("http://{bound}");
    if options.mcp {
        agentty.set_handle_grace(options.grace);
        // Sessions and their job tables are kept in the state dir across a restart.
        agentty.kept().enable();
    }
    agentty.set_view_url(origin);
    let gate = Arc::new(Gate::new(agentty, &options, bound, callers, &stop));
    if !options.mcp && options.listen.port() != 0 {
        let peers = agents_of(&options, &gate)?;
        agent_socket::serve(&peers, gate.clone(), stop.clone())?;
        gate.view().serve_peers(peers);
    }
    announce(&options, bound, &gate, &token_file, made);
    listen::accept(listener, gate, conns.clone(), shutdown, &conns_stop).await;
    close(&conns, &conns_stop, &stop).await;
    Ok(())
}

/// Closes the connections (a reply being written gets [`listen::CLOSE_WITHIN`]), then every
/// session: rmcp closes them.
async fn close(conns: &conns::Conns, conns_stop: &CancellationToken, stop: &CancellationToken) {
    conns_stop.cancel();
    conns.all_closed(listen::CLOSE_WITHIN).await;
    stop.cancel();
}

/// Whether binding failed because the address is taken.
fn address_in_use(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::AddrInUse)
}

/// The agents of this server's state dir (the token file's directory), as this one sees them.
fn agents_of(options: &HttpOptions, gate: &Gate) -> Result<Arc<peers::Peers>> {
    let state_dir = options
        .default_token_file
        .parent()
        .unwrap_or_else(|| Path::new("."));
    let token = gate.callers().token_of(None).unwrap_or_default().to_owned();
    Ok(Arc::new(peers::Peers::new(state_dir, token)?))
}

/// Says on stderr where MCP (with `--http`) and the view are served, and where their tokens
/// are: never a token itself (see [`token`]).
fn announce(options: &HttpOptions, bound: SocketAddr, gate: &Gate, file: &Path, made: bool) {
    let callers = gate.callers();
    let url = format!("http://{bound}/mcp");
    let tokens = match callers.len() {
        1 => "token".to_owned(),
        n => format!("{n} tokens (one per caller)"),
    };
    if options.mcp {
        let first = if callers.len() > 1 {
            ", with the first caller's token:"
        } else {
            ""
        };
        eprintln!(
            "agentty: serving MCP over HTTP at {url}\n\
             agentty: {tokens} {} {} (send it as `Authorization: Bearer <token>`{})\n\
             agentty: e.g.{first} claude mcp add --transport http agentty {url} --header \
             \"Authorization: Bearer {}\"",
            if made { "written to" } else { "read from" },
            file.display(),
            options
                .token_header
                .as_ref()
                .map(|name| format!(" or `{name}: <token>`"))
                .unwrap_or_default(),
            callers.paste(file),
        );
        if callers.len() > 1 {
            eprintln!(
                "agentty: each caller may hold {} of the {} sessions (--max-sessions-per-caller)",
                gate.session_share(),
                options.max_sessions
            );
        }
    }
    eprintln!(
        "agentty: web view at http://{bound}/ (open it and enter a token once; {tokens} in {})",
        file.display()
    );
}

/// Makes `dir` (and what is missing above it) readable by this user only, as every directory
/// the HTTP side keeps in the state dir is (the token file's, the agents' sockets, the view's
/// lead pages); one there already is taken as it is.
fn private_dir(dir: &Path) -> Result<()> {
    use anyhow::Context;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}
