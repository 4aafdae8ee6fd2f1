//! What the HTTP listener is set up with. `config` makes it from `serve`'s flags and the
//! config file's `[http]`; the listener, the gate and the view read it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How the HTTP listener is set up (from `serve`'s flags).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Serve MCP at `/mcp` (`--http`); without it only the web view is served (`--view`).
    pub mcp: bool,
    /// `--view-control`: the view may stop jobs and close shells.
    pub view_control: bool,
    pub listen: SocketAddr,
    /// `--token-file`: must exist.
    pub token_file: Option<PathBuf>,
    /// Where the token is kept when no file is given: `<state dir>/token`.
    pub default_token_file: PathBuf,
    pub allow_hosts: Vec<String>,
    pub allow_origins: Vec<String>,
    pub grace: Duration,
    pub max_sessions: usize,
    /// `--max-sessions-per-caller`: else an equal share of `max_sessions` for each caller.
    pub max_sessions_per_caller: Option<usize>,
    /// `--max-connections`: else half the file descriptors the process may hold, at most 1024.
    pub max_connections: Option<usize>,
    /// `--token-header`: a header that may carry the token instead of `Authorization`.
    pub token_header: Option<hyper::header::HeaderName>,
    /// `--drain-grace`: how long calls in flight get after SIGTERM.
    pub drain_grace: Duration,
}
