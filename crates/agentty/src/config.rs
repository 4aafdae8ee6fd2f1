//! Settings from three layers, later wins: built-in defaults, the TOML config file, flags.
//!
//! Every key of the file has a flag of the same meaning; `README.md` lists both. Unknown keys
//! are an error, so a typo is caught instead of silently ignored.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use agentty_core::limits::{TIMEOUT_DEFAULT_MS, TIMEOUT_MAX_MS};
use agentty_server::Settings;

/// The config file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub workspace: Option<PathBuf>,
    pub shell: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub default_timeout_ms: Option<u64>,
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))
    }
}

/// Values given on the command line (each overrides the file).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Flags {
    /// Workspace root: the default workdir [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// TOML config file [default: $XDG_CONFIG_HOME/agentty/config.toml, if it exists]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Shell that runs `command` strings [default: $SHELL, else /bin/sh]
    #[arg(long, value_name = "PATH")]
    pub shell: Option<PathBuf>,
    /// Directory for spill files and other state [default: $XDG_STATE_HOME/agentty]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Default `terminal` timeout in milliseconds [default: 120000, max 600000]
    #[arg(long, value_name = "MS")]
    pub default_timeout_ms: Option<u64>,
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

pub fn resolve(flags: &Flags) -> Result<Settings> {
    let file = match config_path(flags) {
        Some(path) => FileConfig::load(&path)?,
        None => FileConfig::default(),
    };
    let workspace = match flags.workspace.clone().or(file.workspace) {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
    if !workspace.is_dir() {
        bail!("workspace {} is not a directory", workspace.display());
    }
    let shell = flags
        .shell
        .clone()
        .or(file.shell)
        .unwrap_or_else(default_shell);
    if !is_executable(&shell) {
        bail!("shell {} is not an executable file", shell.display());
    }
    let state_dir = flags
        .state_dir
        .clone()
        .or(file.state_dir)
        .unwrap_or_else(default_state_dir);
    let default_timeout_ms = flags
        .default_timeout_ms
        .or(file.default_timeout_ms)
        .unwrap_or(TIMEOUT_DEFAULT_MS);
    if default_timeout_ms == 0 || default_timeout_ms > TIMEOUT_MAX_MS {
        bail!("default_timeout_ms must be between 1 and {TIMEOUT_MAX_MS}");
    }
    Ok(Settings {
        workspace,
        shell,
        spill_root: state_dir.join("spill"),
        default_timeout_ms,
    })
}

/// `$SHELL` when it names an executable, else `/bin/sh`. The one place that chooses the shell.
fn default_shell() -> PathBuf {
    std::env::var_os("SHELL")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && is_executable(p))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn default_state_dir() -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("agentty")
}
