//! What the server runs with, resolved by the binary from its flags and config file
//! (docs/BEHAVIOUR.md §10). Read-only once the server starts; every session shares it.

use std::path::PathBuf;

use agentty_guard::GuardConfig;
use agentty_sandbox::{Mode, Network};

/// Settings the server runs with (resolved by the binary from flags and the config file).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The workspace root: default `workdir`, and the boundary later checks judge against.
    pub workspace: PathBuf,
    /// Shell for `command`.
    pub shell: PathBuf,
    /// Root of spill directories (`<state dir>/spill`); this server's are in
    /// `<spill root>/<its session name>/`.
    pub spill_root: PathBuf,
    pub default_timeout_ms: u64,
    /// Extra writable roots (`--add-dir`), inside the workspace boundary too.
    pub add_dirs: Vec<PathBuf>,
    /// Permission mode: plan (read-only), default (workspace-write), auto (full access).
    pub mode: Mode,
    /// `sandbox.terminal`: false keeps the mode but confines nothing, and says so.
    pub sandbox_enabled: bool,
    /// `sandbox.network`: what confined commands may reach (docs/BEHAVIOUR.md §13).
    pub network: Network,
    /// `sandbox.loopback`: in `allowlist` and `ask`, whether loopback stays reachable.
    pub loopback: bool,
    /// The hosts `allowlist` and `ask` let through (`sandbox.allow_net` and the built-in list,
    /// unless `sandbox.builtin_net = false`).
    pub allowlist: crate::network::Allowlist,
    /// Guard rules switched off by the user.
    pub guard: GuardConfig,
    /// Close a shell unused for this long (`None`: 10 minutes).
    pub shell_idle_ms: Option<u64>,
    /// `sandbox.max_processes`: processes and threads one caller's confined commands may have
    /// at once, where the kernel can hold it (`agentty_core::namespace::ProcessBounds`).
    pub max_processes: u32,
    /// The paths that run code later, found at start: read-only to confined commands where the
    /// session's mount namespace exists, watched everywhere (docs/BEHAVIOUR.md §5).
    pub protected: agentty_sandbox::Protected,
    /// What confined commands may not read: the state dir, the token file, `deny_read`
    /// (docs/BEHAVIOUR.md §5). The server adds its own spill directory as readable.
    pub unreadable: agentty_sandbox::Unreadable,
    /// zsh's start-up files (under [`Settings::shells_root`]) would lie where confined commands
    /// may write, with no mount namespace to keep them read-only: zsh is refused then (bash
    /// reads its start-up text from no file). Set by the binary once the namespace is known.
    pub start_up_files_writable: bool,
}

impl Settings {
    /// Where shells write their start-up files (docs/BEHAVIOUR.md §4), a directory per server
    /// (and over HTTP per caller, `own_dirs.rs`) in it: the state dir, which a confining server
    /// keeps out of its commands' reach save their own directory (a shell must read its file).
    pub fn shells_root(&self) -> PathBuf {
        self.state_dir().join("shells")
    }

    /// The state dir (its real path): the spill root's parent.
    pub fn state_dir(&self) -> &std::path::Path {
        self.spill_root
            .parent()
            .unwrap_or(self.spill_root.as_path())
    }
}
