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
        let state_dir = settings
            .spill_root
            .parent()
            .unwrap_or(settings.spill_root.as_path());
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
            allow_hosts: or_file(&self.allow_hosts, file.allow_hosts),
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
            || self.max_connections.is_some();
        if given {
            bail!(
                "--token-file, --allow-host, --allow-origin, --view-control, \
                 --session-grace, --max-sessions, --max-sessions-per-caller and \
                 --max-connections need --http or --view"
            );
        }
        Ok(())
    }
}
