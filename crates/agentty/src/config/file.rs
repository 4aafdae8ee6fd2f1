//! The config file: where it is, and its shape. Unknown keys are an error (a typo is caught,
//! not silently ignored), and relative paths in it are anchored at the file's directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use super::flags::Flags;

/// The config file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub workspace: Option<PathBuf>,
    pub mode: Option<String>,
    pub add_dirs: Option<Vec<PathBuf>>,
    pub shell: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub default_timeout_ms: Option<u64>,
    pub shell_idle_ms: Option<u64>,
    #[serde(default)]
    pub sandbox: SandboxSection,
    #[serde(default)]
    pub guard: GuardSection,
    #[serde(default)]
    pub http: HttpSection,
}

/// `[http]`: what `serve --http` uses unless its flags say otherwise. HTTP itself is only
/// served with `--http`, so a host that starts `agentty serve` over stdio is never changed by it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// The address for a bare `--http`.
    pub listen: Option<std::net::SocketAddr>,
    pub token_file: Option<PathBuf>,
    pub allow_hosts: Option<Vec<String>>,
    pub allow_origins: Option<Vec<String>>,
    /// Seconds.
    pub session_grace: Option<f64>,
    pub max_sessions: Option<usize>,
    pub max_sessions_per_caller: Option<usize>,
    pub max_connections: Option<usize>,
    /// A header that may carry the token instead of `Authorization`.
    pub token_header: Option<String>,
    /// Seconds.
    pub drain_grace: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// false: commands are not confined; results keep the mode and say so.
    pub terminal: Option<bool>,
    /// `on`, `off`, `allowlist` or `ask` (docs/BEHAVIOUR.md §13); `true`/`false` are the
    /// older spellings of `on`/`off`.
    pub network: Option<NetworkSetting>,
    /// Most processes and threads one caller's confined commands may have at once.
    pub max_processes: Option<u32>,
    /// Hosts confined commands may reach in `allowlist` and `ask`, beside the built-in list.
    pub allow_net: Option<Vec<String>>,
    /// false: the built-in list of registries and code hosts is left out.
    pub builtin_net: Option<bool>,
    /// false: loopback is closed to confined commands in `allowlist` and `ask`.
    pub loopback: Option<bool>,
    /// Paths that run code later left writable to confined commands, by name (`.git/config`,
    /// `.envrc`, `~/.bashrc`, …: `agentty_sandbox::protected_names`); they stay watched.
    pub writable_protected: Option<Vec<String>>,
    /// Paths confined commands may not read (`~/.aws`, `~/.ssh`), beside agentty's own state.
    pub deny_read: Option<Vec<PathBuf>>,
}

/// `sandbox.network` as written: a mode's name, or the older switch.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum NetworkSetting {
    Switch(bool),
    Mode(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardSection {
    /// Guard rules to switch off, by name (`agentty guard --rules` lists them).
    pub allow: Option<Vec<String>>,
}

impl FileConfig {
    /// The file in effect ([`config_path`]), or the defaults when there is none.
    pub fn in_effect(flags: &Flags) -> Result<Self> {
        match config_path(flags) {
            Some(path) => FileConfig::load(&path),
            None => Ok(FileConfig::default()),
        }
    }

    /// Reads `path`; relative paths in it are relative to the file's directory (as in other
    /// tools' config files), not to wherever the server happens to start.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        let mut file: FileConfig = toml::from_str(&text)
            .with_context(|| format!("invalid config file {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let anchor = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        file.workspace.as_mut().map(anchor);
        file.state_dir.as_mut().map(anchor);
        if let Some(shell) = file.shell.as_mut()
            && shell.components().count() > 1
        {
            anchor(shell);
        }
        file.add_dirs.iter_mut().flatten().for_each(anchor);
        file.http.token_file.as_mut().map(anchor);
        file.sandbox
            .deny_read
            .iter_mut()
            .flatten()
            .filter(|p| !p.starts_with("~"))
            .for_each(anchor);
        Ok(file)
    }
}

/// The config file in effect: the flag, else the default path if that file exists.
pub fn config_path(flags: &Flags) -> Option<PathBuf> {
    if let Some(path) = &flags.config {
        return Some(path.clone());
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let path = base.join("agentty").join("config.toml");
    path.is_file().then_some(path)
}
