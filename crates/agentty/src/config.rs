//! Settings from three layers, later wins: built-in defaults, the TOML config file, flags.
//!
//! Every key of the file has a flag of the same meaning; `README.md` lists both. Unknown keys
//! are an error, so a typo is caught instead of silently ignored.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use agentty_core::limits::{TIMEOUT_DEFAULT_MS, TIMEOUT_MAX_MS};
use agentty_guard::GuardConfig;
use agentty_sandbox::Mode;
use agentty_server::Settings;

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
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// false: commands are not confined; results keep the mode and say so.
    pub terminal: Option<bool>,
    /// false: commands get no network (IPv4/IPv6 sockets refused).
    pub network: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardSection {
    /// Guard rules to switch off, by name (`agentty guard --rules` lists them).
    pub allow: Option<Vec<String>>,
}

impl FileConfig {
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
        Ok(file)
    }
}

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
    /// Turn the network off for commands (sandbox.network = false)
    #[arg(long)]
    pub no_network: bool,
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
    /// Also accept this Host header (repeatable; loopback names are always accepted)
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
}

impl HttpFlags {
    /// What the HTTP listener runs with: MCP and the view (`--http`), or the view only beside
    /// stdio (`--view`); `None` with neither.
    pub fn options(
        &self,
        flags: &Flags,
        settings: &agentty_server::Settings,
    ) -> Result<Option<crate::http::HttpOptions>> {
        let (mcp, listen) = match (self.http, self.view) {
            (Some(listen), _) => (true, listen),
            (None, Some(listen)) => (false, listen),
            (None, None) => {
                let given = self.token_file.is_some()
                    || !self.allow_hosts.is_empty()
                    || !self.allow_origins.is_empty()
                    || self.view_control
                    || self.session_grace.is_some()
                    || self.max_sessions.is_some();
                if given {
                    bail!(
                        "--token-file, --allow-host, --allow-origin, --view-control, \
                         --session-grace and --max-sessions need --http or --view"
                    );
                }
                return Ok(None);
            }
        };
        let file = match config_path(flags) {
            Some(path) => FileConfig::load(&path)?.http,
            None => HttpSection::default(),
        };
        let listen = match listen {
            Some(given) => given,
            None if mcp => file
                .listen
                .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 7337))),
            None => std::net::SocketAddr::from(([127, 0, 0, 1], 7338)),
        };
        let or_file = |given: &[String], file: Option<Vec<String>>| {
            if given.is_empty() {
                file.unwrap_or_default()
            } else {
                given.to_vec()
            }
        };
        let grace = self.session_grace.or(file.session_grace).unwrap_or(600.0);
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
        Ok(Some(crate::http::HttpOptions {
            mcp,
            view_control: self.view_control,
            listen,
            token_file,
            default_token_file: state_dir.join("token"),
            allow_hosts: or_file(&self.allow_hosts, file.allow_hosts),
            allow_origins: or_file(&self.allow_origins, file.allow_origins),
            grace: std::time::Duration::from_secs_f64(grace),
            max_sessions: self.max_sessions.or(file.max_sessions).unwrap_or(64).max(1),
        }))
    }
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
    let workspace_given = workspace.clone();
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
    let mode_name = flags
        .mode
        .clone()
        .or(file.mode)
        .unwrap_or_else(|| "default".into());
    let mode: Mode = mode_name
        .parse()
        .map_err(|e| anyhow::anyhow!("mode: {e}"))?;
    let mut add_dirs = Vec::new();
    for dir in flags.add_dirs.iter().chain(file.add_dirs.iter().flatten()) {
        let canonical = dir
            .canonicalize()
            .with_context(|| format!("extra root {} (add-dir) does not exist", dir.display()))?;
        add_dirs.push(canonical);
    }
    let sandbox_enabled = !flags.no_sandbox && file.sandbox.terminal.unwrap_or(true);
    let network = !flags.no_network && file.sandbox.network.unwrap_or(true);
    let guard = merge_guard(file.guard, flags)?;
    // What commands may write, while the sandbox is on.
    let plan = sandbox_enabled.then(|| plan_for(mode, &workspace, &add_dirs));
    if let Some(plan) = &plan {
        let given = std::iter::once(&workspace_given)
            .chain(flags.add_dirs.iter())
            .chain(file.add_dirs.iter().flatten());
        refuse_linked_roots(given, plan)?;
    }
    // The server trusts what it finds in its state dir (spill files it reads back, names it
    // removes): a confined command must not be able to write there. A workspace that holds the
    // home directory (`/`, home itself) holds the default state dir too: that setup confines
    // little anyway, and every sandbox line says so; it is allowed with a warning.
    // Its real path is what the server uses: the records in it are hidden from confined commands
    // by a mount, which cannot be put on a path through a symlink.
    let state_real = agentty_core::canonical_prefix(&state_dir);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(root) = std::iter::once(&workspace)
        .chain(&add_dirs)
        .find(|root| state_real.starts_with(root))
    {
        if home.as_deref().is_some_and(|h| h.starts_with(root)) {
            tracing::warn!(
                "the state dir {} is inside {}, which commands may write",
                state_real.display(),
                root.display()
            );
        } else {
            bail!(
                "state dir {} is inside {}, which commands may write: choose a state dir \
                 outside the workspace and the extra roots (--state-dir)",
                state_real.display(),
                root.display()
            );
        }
    } else if let Some(place) = plan
        .as_ref()
        .filter(|_| mode != Mode::Auto)
        .and_then(|p| writable_place(p, &state_real))
    {
        bail!(
            "state dir {} is inside {place}, which commands may write: choose a state dir they \
             cannot write, such as the default under your home (--state-dir)",
            state_real.display()
        );
    }
    Ok(Settings {
        workspace,
        shell,
        spill_root: state_real.join("spill"),
        default_timeout_ms,
        add_dirs,
        mode,
        sandbox_enabled,
        network,
        guard,
        shell_idle_ms: flags
            .shell_idle_ms
            .or(file.shell_idle_ms)
            .filter(|&ms| ms > 0),
    })
}

/// Refuses a given token file that a confined command could rewrite, or re-point when it is
/// reached through a symlink: the next start would let in whoever holds the token it wrote.
fn refuse_writable_token_file(settings: &Settings, given: &Path) -> Result<()> {
    if !settings.sandbox_enabled || settings.mode == Mode::Auto {
        return Ok(());
    }
    let plan = plan_for(settings.mode, &settings.workspace, &settings.add_dirs);
    // The name as given (its directory resolved), and the file it leads to.
    let named = match (given.parent(), given.file_name()) {
        (Some(parent), Some(name)) => agentty_core::canonical_prefix(parent).join(name),
        _ => given.to_path_buf(),
    };
    for path in [named, agentty_core::canonical_prefix(given)] {
        if let Some(place) = writable_place(&plan, &path) {
            bail!(
                "token file {} is inside {place}, which commands may write: keep it where they \
                 cannot (--token-file)",
                given.display()
            );
        }
    }
    Ok(())
}

/// The sandbox plan of confined commands in `mode` with these roots, on this host.
fn plan_for(mode: Mode, workspace: &Path, add_dirs: &[PathBuf]) -> agentty_sandbox::Plan {
    let roots = std::iter::once(workspace.to_path_buf())
        .chain(add_dirs.iter().cloned())
        .collect();
    agentty_sandbox::Plan::new(&agentty_sandbox::Policy::new(mode, roots))
}

/// Where `plan` lets a confined command write `path` (canonical), said as the writable place
/// and why it is writable (a temp dir, a toolchain's cache); `None` when it may not.
fn writable_place(plan: &agentty_sandbox::Plan, path: &Path) -> Option<String> {
    let place = plan.writable().iter().find(|w| path.starts_with(&w.path))?;
    Some(format!("{} ({})", place.path.display(), place.why))
}

/// Refuses a root reached through a symlink that a confined command could have planted or could
/// re-point (see `agentty_sandbox::linked_root`).
fn refuse_linked_roots<'a>(
    given: impl Iterator<Item = &'a PathBuf>,
    plan: &agentty_sandbox::Plan,
) -> Result<()> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    for path in given {
        let path = cwd.join(path);
        if let Some(why) = agentty_sandbox::linked_root(&path, plan, home.as_deref()) {
            bail!("refusing the root {}: {why}", path.display());
        }
    }
    Ok(())
}

fn merge_guard(section: GuardSection, flags: &Flags) -> Result<GuardConfig> {
    let mut allow = section.allow.unwrap_or_default();
    allow.extend(flags.allow_rules.iter().cloned());
    let guard = GuardConfig { allow };
    guard
        .validate()
        .map_err(|e| anyhow::anyhow!("guard.allow: {e}"))?;
    Ok(guard)
}

/// Only the guard part of the settings, for `agentty guard` (which needs no workspace).
pub fn guard_config(flags: &Flags) -> Result<GuardConfig> {
    let file = match config_path(flags) {
        Some(path) => FileConfig::load(&path)?,
        None => FileConfig::default(),
    };
    merge_guard(file.guard, flags)
}

/// The one place that chooses the shell, as a terminal emulator does: `$SHELL` when it names an
/// executable, else the user's login shell from the password database, else `/bin/sh`. MCP hosts
/// often start servers with a bare environment, and falling straight to `/bin/sh` (dash on Debian)
/// would take `read -s`, `[[ ]]` and the rest of bash away from a user who never chose that.
fn default_shell() -> PathBuf {
    let from_env = std::env::var_os("SHELL").map(PathBuf::from);
    let login = || {
        nix::unistd::User::from_uid(nix::unistd::Uid::current())
            .ok()
            .flatten()
            .map(|user| user.shell)
    };
    from_env
        .filter(|p| usable_shell(p))
        .or_else(|| login().filter(|p| usable_shell(p)))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn usable_shell(path: &Path) -> bool {
    path.is_absolute() && is_executable(path)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `$XDG_STATE_HOME/agentty`, else `~/.local/state/agentty`, home being `$HOME` or, where a host
/// starts servers without it, the user's home in the password database. A temp dir is the last
/// resort, which a confining server then refuses (commands may write there) with the fix named.
fn default_state_dir() -> PathBuf {
    let home = || {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute())
            .or_else(|| {
                nix::unistd::User::from_uid(nix::unistd::Uid::current())
                    .ok()
                    .flatten()
                    .map(|user| user.dir)
                    .filter(|h| h.is_absolute() && h.is_dir())
            })
    };
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home().map(|h| h.join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("agentty")
}
