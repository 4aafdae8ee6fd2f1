//! The flags of `serve`, `doctor` and `guard`, as clap reads them. Each one that has a key in
//! the config file means the same as that key and wins over it (`README.md` lists both); what
//! they resolve to is [`resolve`](super::resolve)'s and [`HttpFlags::options`]'s to say.

use std::path::PathBuf;

/// Values given on the command line (each overrides the file).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Flags {
    /// Workspace root: the default workdir [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Close a shell (shell_open) unused for this many milliseconds [default: 600000]
    #[arg(long, value_name = "MS")]
    pub shell_idle_ms: Option<u64>,
    /// TOML config file [default: $XDG_CONFIG_HOME/agentty/config.toml, if it exists]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Shell that runs `command` strings [default: $SHELL, else the login shell, else /bin/sh]
    #[arg(long, value_name = "PATH")]
    pub shell: Option<PathBuf>,
    /// Directory for spill files and other state [default: $XDG_STATE_HOME/agentty]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Default `terminal` timeout in milliseconds [default: 120000, max 600000]
    #[arg(long, value_name = "MS")]
    pub default_timeout_ms: Option<u64>,
    /// Permission mode: plan (read-only), default (workspace-write), auto (no write sandbox)
    /// [default: default]
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Extra writable root, inside the workspace boundary too (repeatable)
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,
    /// Do not confine commands (sandbox.terminal = false); results still state the mode
    #[arg(long)]
    pub no_sandbox: bool,
    /// What confined commands may reach: on, off, allowlist or ask [default: ask]
    /// (sandbox.network)
    #[arg(long, value_name = "MODE", conflicts_with = "no_network")]
    pub network: Option<String>,
    /// Turn the network off for commands (--network off)
    #[arg(long)]
    pub no_network: bool,
    /// A host confined commands may reach through agentty's proxy, in allowlist and ask:
    /// example.com, *.example.com, example.com:8443, 10.0.0.5:5432 (repeatable;
    /// sandbox.allow_net)
    #[arg(long = "allow-net", value_name = "HOST")]
    pub allow_net: Vec<String>,
    /// Leave out the built-in list of package registries and code hosts (sandbox.builtin_net =
    /// false)
    #[arg(long)]
    pub no_builtin_net: bool,
    /// Close the machine's loopback to confined commands in allowlist and ask (sandbox.loopback
    /// = false)
    #[arg(long)]
    pub no_loopback: bool,
    /// Leave a path that runs code later writable to confined commands, by name, e.g.
    /// .git/config (repeatable; sandbox.writable_protected)
    #[arg(long = "writable-protected", value_name = "NAME")]
    pub writable_protected: Vec<String>,
    /// Most processes and threads one caller's confined commands may have at once (as root on
    /// Linux 6.14+) [default: 4096] (sandbox.max_processes)
    #[arg(long, value_name = "N")]
    pub max_processes: Option<u32>,
    /// Keep a path from confined commands' reads, e.g. ~/.aws (repeatable; sandbox.deny_read)
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// Switch off a guard rule by name (repeatable; guard.allow)
    #[arg(long = "allow-rule", value_name = "RULE")]
    pub allow_rules: Vec<String>,
}

/// `serve`'s HTTP flags (docs/BEHAVIOUR.md §9).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct HttpFlags {
    /// Serve MCP streamable HTTP at http://ADDR/mcp instead of stdio [ADDR default:
    /// 127.0.0.1:7337; port 0 picks a free one]. A non-loopback address must be spelled out.
    #[arg(long, value_name = "ADDR", num_args = 0..=1)]
    pub http: Option<Option<std::net::SocketAddr>>,
    /// Serve MCP over stdio as usual, and the web view (watch the jobs and shells live) at
    /// http://ADDR/ [ADDR default: 127.0.0.1:7338]. With --http the view is at its `/` anyway.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, conflicts_with = "http")]
    pub view: Option<Option<std::net::SocketAddr>>,
    /// Let the web view stop a job or close a shell (the model is told in its next result)
    #[arg(long)]
    pub view_control: bool,
    /// Token file (one token per line, or NAME TOKEN), which must exist and be private (0600
    /// or 0400) [default: <state dir>/token, made (0600) if absent]
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Also accept this Host header: a name, name:port, or *.NAME for any one label before NAME,
    /// e.g. *.agents.svc.cluster.local:8888 (repeatable; loopback names are always accepted)
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Accept requests from this browser Origin, e.g. http://localhost:3000 (repeatable; by
    /// default every request with an Origin is refused)
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// End a session (and stop its jobs) after this many seconds without a request
    /// [default: 600]
    #[arg(long, value_name = "SECS", requires = "http")]
    pub session_grace: Option<f64>,
    /// Refuse a new session while this many are live [default: 64]
    #[arg(long, value_name = "N", requires = "http")]
    pub max_sessions: Option<usize>,
    /// Refuse a caller (a token of the token file) a new session while it holds this many
    /// [default: --max-sessions divided equally among the callers, at least 1]
    #[arg(long, value_name = "N", requires = "http")]
    pub max_sessions_per_caller: Option<usize>,
    /// Keep at most this many connections open; past it, the oldest one that has shown no token
    /// is closed [default: half the file descriptors agentty may hold, at most 1024]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Also accept the token in this header, e.g. X-Agentty-Token (for a router that strips
    /// `Authorization`, as agent-sandbox's sandbox-router does)
    #[arg(long, value_name = "NAME")]
    pub token_header: Option<String>,
    /// After SIGTERM, give calls in flight this many seconds to answer before jobs and shells
    /// are stopped [default: 20, below Kubernetes' 30 s terminationGracePeriodSeconds]
    #[arg(long, value_name = "SECS", requires = "http")]
    pub drain_grace: Option<f64>,
}

/// The flags `agentty guard` takes: only what changes a verdict.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct GuardFlags {
    /// TOML config file [default: $XDG_CONFIG_HOME/agentty/config.toml, if it exists]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Switch off a guard rule by name (repeatable; guard.allow)
    #[arg(long = "allow-rule", value_name = "RULE")]
    pub allow_rules: Vec<String>,
}

impl From<GuardFlags> for Flags {
    fn from(g: GuardFlags) -> Flags {
        Flags {
            config: g.config,
            allow_rules: g.allow_rules,
            ..Flags::default()
        }
    }
}
