//! What the HTTP listener runs with (`--http`, `--view`), from `serve`'s HTTP flags over the
//! config file's `[http]`.

use std::net::SocketAddr;

use anyhow::{Result, bail};

use agentty_server::Settings;

use super::file::FileConfig;
use super::flags::{Flags, HttpFlags};
use super::safety::refuse_writable_token_file;
use crate::http::HttpOptions;

/// Where a bare `--http` listens, unless the file's `[http] listen` says otherwise.
const MCP_LISTEN_DEFAULT: ([u8; 4], u16) = ([127, 0, 0, 1], 7337);

/// Where a bare `--view` listens.
const VIEW_LISTEN_DEFAULT: ([u8; 4], u16) = ([127, 0, 0, 1], 7338);

/// How long a session lives without a request (`--session-grace`), in seconds.
const SESSION_GRACE_DEFAULT_SECS: f64 = 600.0;

/// How long calls in flight get after SIGTERM (`--drain-grace`), in seconds: below Kubernetes'
/// default `terminationGracePeriodSeconds` (30), which must also cover stopping the jobs.
const DRAIN_GRACE_DEFAULT_SECS: f64 = 20.0;

/// How many sessions may be live at once (`--max-sessions`).
const MAX_SESSIONS_DEFAULT: usize = 64;

impl HttpFlags {
    /// What the HTTP listener runs with: MCP and the view (`--http`), or the view only beside
    /// stdio (`--view`); `None` with neither.
    pub fn options(&self, flags: &Flags, settings: &Settings) -> Result<Option<HttpOptions>> {
        let (mcp, listen) = match (self.http, self.view) {
            (Some(listen), _) => (true, listen),
            (None, Some(listen)) => (false, listen),
            (None, None) => {
                self.refuse_without_listener()?;
                return Ok(None);
            }
        };
        let file = FileConfig::in_effect(flags)?.http;
        let listen = match listen {
            Some(given) => given,
            None if mcp => file
                .listen
                .unwrap_or_else(|| SocketAddr::from(MCP_LISTEN_DEFAULT)),
            None => SocketAddr::from(VIEW_LISTEN_DEFAULT),
        };
        let or_file = |given: &[String], file: Option<Vec<String>>| {
            if given.is_empty() {
                file.unwrap_or_default()
            } else {
                given.to_vec()
            }
        };
        let grace = self
            .session_grace
            .or(file.session_grace)
            .unwrap_or(SESSION_GRACE_DEFAULT_SECS);
        if !(grace.is_finite() && grace > 0.0) {
            bail!("--session-grace must be a positive number of seconds");
        }
        let drain_grace = self
            .drain_grace
            .or(file.drain_grace)
            .unwrap_or(DRAIN_GRACE_DEFAULT_SECS);
        if !(drain_grace.is_finite() && (0.0..=3600.0).contains(&drain_grace)) {
            bail!("--drain-grace must be a number of seconds from 0 to 3600");
        }
        let token_header = self
            .token_header
            .clone()
            .or(file.token_header)
            .map(|name| token_header(&name))
            .transpose()?;
        let state_dir = settings
            .spill_root
            .parent()
            .unwrap_or(settings.spill_root.as_path());
        let allow_hosts = or_file(&self.allow_hosts, file.allow_hosts);
        for entry in &allow_hosts {
            crate::http::hosts::check(entry).map_err(anyhow::Error::msg)?;
        }
        let token_file = self.token_file.clone().or(file.token_file);
        if let Some(given) = &token_file {
            refuse_writable_token_file(settings, given)?;
        }
        Ok(Some(HttpOptions {
            mcp,
            view_control: self.view_control,
            listen,
            token_file,
            default_token_file: state_dir.join("token"),
            allow_hosts,
            allow_origins: or_file(&self.allow_origins, file.allow_origins),
            grace: std::time::Duration::from_secs_f64(grace),
            max_sessions: self
                .max_sessions
                .or(file.max_sessions)
                .unwrap_or(MAX_SESSIONS_DEFAULT)
                .max(1),
            max_sessions_per_caller: self
                .max_sessions_per_caller
                .or(file.max_sessions_per_caller),
            max_connections: self.max_connections.or(file.max_connections),
            token_header,
            drain_grace: std::time::Duration::from_secs_f64(drain_grace),
        }))
    }

    /// The listener's flags mean nothing without a listener: given alone, they are refused
    /// rather than ignored.
    fn refuse_without_listener(&self) -> Result<()> {
        let given = self.token_file.is_some()
            || !self.allow_hosts.is_empty()
            || !self.allow_origins.is_empty()
            || self.view_control
            || self.session_grace.is_some()
            || self.max_sessions.is_some()
            || self.max_sessions_per_caller.is_some()
            || self.max_connections.is_some()
            || self.token_header.is_some();
        if given {
            bail!(
                "--token-file, --allow-host, --allow-origin, --view-control, \
                 --session-grace, --max-sessions, --max-sessions-per-caller, \
                 --max-connections and --token-header need --http or --view"
            );
        }
        Ok(())
    }
}

/// Headers a token may not be named after: they mean something else to HTTP, to MCP or to the
/// web view, or a proxy sets them.
const NOT_A_TOKEN_HEADER: &[&str] = &[
    "authorization",
    "host",
    "origin",
    "cookie",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "accept",
    "last-event-id",
    "mcp-session-id",
    "mcp-protocol-version",
    "x-agentty-view",
    "x-forwarded-for",
    "forwarded",
];

/// The header `--token-header` names, checked: a valid header name that means nothing else.
fn token_header(name: &str) -> Result<hyper::header::HeaderName> {
    let header = hyper::header::HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| anyhow::anyhow!("--token-header {name:?} is not a header name"))?;
    if NOT_A_TOKEN_HEADER.contains(&header.as_str()) || header.as_str().starts_with("x-sandbox-") {
        bail!(
            "--token-header {name:?}: that header means something else (to HTTP, MCP, the web \
             view or a router); name one of your own, e.g. X-Agentty-Token"
        );
    }
    Ok(header)
}
