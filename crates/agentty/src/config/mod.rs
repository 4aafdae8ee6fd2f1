//! Settings from three layers, later wins: built-in defaults, the TOML config file, flags.
//!
//! Every key of the file has a flag of the same meaning; `README.md` lists both. Unknown keys
//! are an error, so a typo is caught instead of silently ignored.
//!
//! Here: [`resolve`], the settings of `serve` and `doctor`, as its steps, and the defaults it
//! falls back on. The flags are clap's ([`flags`]), the file's shape and place is [`file`], the
//! HTTP listener's options are [`http`]'s, and the checks that keep the state dir and the token
//! file out of confined commands' reach are [`safety`]'s.

mod file;
mod flags;
mod http;
mod safety;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use agentty_core::limits::{TIMEOUT_DEFAULT_MS, TIMEOUT_MAX_MS};
use agentty_guard::GuardConfig;
use agentty_sandbox::Mode;
use agentty_server::Settings;

use file::{FileConfig, GuardSection};
pub(crate) use safety::{
    TokenUse, landlock_cannot_hide, plan_for, refuse_readable_login_pages, refuse_readable_tokens,
};
use safety::{refuse_linked_roots, refuse_writable_state_dir};

pub use file::config_path;
pub use flags::{Flags, GuardFlags, HttpFlags};

/// The settings of `serve` and `doctor`: each value from the flags, else the config file, else
/// its default, checked as it is read; then the places the server trusts are checked against
/// what confined commands may write.
pub fn resolve(flags: &Flags) -> Result<Settings> {
    let mut file = FileConfig::in_effect(flags)?;
    let workspace_given = match flags.workspace.clone().or(file.workspace) {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = existing_workspace(&workspace_given)?;
    let shell = executable_shell(flags.shell.clone().or(file.shell))?;
    let state_dir = flags
        .state_dir
        .clone()
        .or(file.state_dir)
        .unwrap_or_else(default_state_dir);
    let default_timeout_ms =
        default_timeout_ms(flags.default_timeout_ms.or(file.default_timeout_ms))?;
    let max_processes = max_processes(flags.max_processes.or(file.sandbox.max_processes))?;
    let mode = mode(flags.mode.clone().or(file.mode))?;
    let add_dirs = extra_roots(flags.add_dirs.iter().chain(file.add_dirs.iter().flatten()))?;
    let sandbox_enabled = !flags.no_sandbox && file.sandbox.terminal.unwrap_or(true);
    let network = network(flags, file.sandbox.network.take())?;
    let allow_net: Vec<String> = file
        .sandbox
        .allow_net
        .take()
        .into_iter()
        .flatten()
        .chain(flags.allow_net.iter().cloned())
        .collect();
    let builtin_net = !flags.no_builtin_net && file.sandbox.builtin_net.unwrap_or(true);
    let allowlist = agentty_server::network::Allowlist::new(builtin_net, &allow_net)?;
    let loopback = !flags.no_loopback && file.sandbox.loopback.unwrap_or(true);
    let guard = merge_guard(file.guard, flags)?;
    // What commands may write, while the sandbox is on.
    let plan = sandbox_enabled.then(|| plan_for(mode, &workspace, &add_dirs));
    if let Some(plan) = &plan {
        let given = std::iter::once(&workspace_given)
            .chain(flags.add_dirs.iter())
            .chain(file.add_dirs.iter().flatten());
        refuse_linked_roots(given, plan)?;
    }
    // The state dir's real path is what the server uses: the records in it are hidden from
    // confined commands by a mount, which cannot be put on a path through a symlink.
    let state_real = agentty_core::canonical_prefix(&state_dir);
    refuse_writable_state_dir(&state_real, &workspace, &add_dirs, plan.as_ref(), mode)?;
    let opened: Vec<String> = file
        .sandbox
        .writable_protected
        .into_iter()
        .flatten()
        .chain(flags.writable_protected.iter().cloned())
        .collect();
    agentty_sandbox::check_protected_names(&opened)
        .map_err(|e| anyhow::anyhow!("sandbox.writable_protected: {e}"))?;
    let mut protected = plan
        .as_ref()
        .map(|plan| protected_paths(plan, flags, &workspace, &add_dirs, &opened))
        .unwrap_or_default();
    if let Some(plan) = &plan {
        protected.keep_read_only(plan, &state_real);
    }
    let unreadable = unreadable(
        &state_real,
        file.sandbox.deny_read.into_iter().flatten(),
        flags,
        plan.as_ref(),
        &workspace,
        &add_dirs,
    )?;
    Ok(Settings {
        workspace,
        shell,
        spill_root: state_real.join("spill"),
        default_timeout_ms,
        add_dirs,
        mode,
        sandbox_enabled,
        network,
        loopback,
        allowlist,
        guard,
        shell_idle_ms: flags
            .shell_idle_ms
            .or(file.shell_idle_ms)
            .filter(|&ms| ms > 0),
        max_processes,
        protected,
        unreadable,
        start_up_files_writable: false,
    })
}

/// What confined commands may not read: the state dir, and each `deny_read` path (the file's,
/// then the flags'; `~/` is the home directory), refused when it cannot be hidden under `plan`
/// (see `agentty_sandbox::check_deny_read`). The token file is added once it is known.
fn unreadable(
    state_real: &Path,
    from_file: impl Iterator<Item = PathBuf>,
    flags: &Flags,
    plan: Option<&agentty_sandbox::Plan>,
    workspace: &Path,
    add_dirs: &[PathBuf],
) -> Result<agentty_sandbox::Unreadable> {
    use agentty_sandbox::HiddenWhy;
    let mut unreadable = agentty_sandbox::Unreadable::default();
    unreadable.hide(state_real.to_path_buf(), HiddenWhy::State);
    let roots: Vec<PathBuf> = std::iter::once(workspace.to_path_buf())
        .chain(add_dirs.iter().cloned())
        .collect();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let given_flags = flags.deny_read.iter().map(|p| {
        if p.starts_with("~") {
            p.clone()
        } else {
            cwd.join(p)
        }
    });
    for given in from_file.chain(given_flags) {
        let path = expand_home(&given);
        if let Some(plan) = plan {
            agentty_sandbox::check_deny_read(&path, plan, &roots)
                .map_err(|e| anyhow::anyhow!("sandbox.deny_read: {e}"))?;
        }
        unreadable.hide(path, HiddenWhy::Configured);
    }
    Ok(unreadable)
}

/// `~` or `~/x` as the home directory or a path in it; any other path as it is.
fn expand_home(path: &Path) -> PathBuf {
    let Ok(rest) = path.strip_prefix("~") else {
        return path.to_path_buf();
    };
    match home_dir() {
        Some(home) => home.join(rest),
        None => path.to_path_buf(),
    }
}

/// The paths that run code later that commands under `plan` may write (see
/// `agentty_sandbox::Protected`): under the roots, the plan's git dirs, home, and agentty's own
/// config file.
fn protected_paths(
    plan: &agentty_sandbox::Plan,
    flags: &Flags,
    workspace: &Path,
    add_dirs: &[PathBuf],
    opened: &[String],
) -> agentty_sandbox::Protected {
    let roots: Vec<PathBuf> = std::iter::once(workspace.to_path_buf())
        .chain(add_dirs.iter().cloned())
        .collect();
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| h.canonicalize().ok());
    let config = config_path(flags).and_then(|p| p.canonicalize().ok());
    agentty_sandbox::Protected::find(plan, &roots, home.as_deref(), config.as_deref(), opened)
}

/// The workspace's real path: a directory that exists.
fn existing_workspace(given: &Path) -> Result<PathBuf> {
    let workspace = given
        .canonicalize()
        .with_context(|| format!("workspace {} does not exist", given.display()))?;
    if !workspace.is_dir() {
        bail!("workspace {} is not a directory", workspace.display());
    }
    Ok(workspace)
}

/// The shell given, else [`default_shell`]: an executable file.
fn executable_shell(given: Option<PathBuf>) -> Result<PathBuf> {
    let shell = given.unwrap_or_else(default_shell);
    if !is_executable(&shell) {
        bail!("shell {} is not an executable file", shell.display());
    }
    Ok(shell)
}

/// The default `terminal` timeout given, else the built-in one: 1 ms to [`TIMEOUT_MAX_MS`].
fn default_timeout_ms(given: Option<u64>) -> Result<u64> {
    let ms = given.unwrap_or(TIMEOUT_DEFAULT_MS);
    if ms == 0 || ms > TIMEOUT_MAX_MS {
        bail!("default_timeout_ms must be between 1 and {TIMEOUT_MAX_MS}");
    }
    Ok(ms)
}

/// The bound on one caller's processes given, else the built-in one: at least
/// [`PROCESSES_PER_CALLER_MIN`], at most the kernel's largest `pid_max`.
fn max_processes(given: Option<u32>) -> Result<u32> {
    use agentty_core::limits::{PROCESSES_PER_CALLER_DEFAULT, PROCESSES_PER_CALLER_MIN};
    /// `PID_MAX_LIMIT` on 64-bit Linux.
    const LARGEST: u32 = 4_194_304;
    let n = given.unwrap_or(PROCESSES_PER_CALLER_DEFAULT);
    if !(PROCESSES_PER_CALLER_MIN..=LARGEST).contains(&n) {
        bail!("sandbox.max_processes must be between {PROCESSES_PER_CALLER_MIN} and {LARGEST}");
    }
    Ok(n)
}

/// The network mode: `--no-network` (off), else `--network`, else the file's (`true`/`false`
/// read as `on`/`off`), else `ask` (docs/BEHAVIOUR.md §13).
fn network(flags: &Flags, file: Option<file::NetworkSetting>) -> Result<agentty_sandbox::Network> {
    use agentty_sandbox::Network;
    if flags.no_network {
        return Ok(Network::Off);
    }
    let text = match (flags.network.clone(), file) {
        (Some(text), _) | (None, Some(file::NetworkSetting::Mode(text))) => text,
        (None, Some(file::NetworkSetting::Switch(on))) => {
            return Ok(if on { Network::On } else { Network::Off });
        }
        (None, None) => return Ok(Network::Ask),
    };
    text.parse()
        .map_err(|e| anyhow::anyhow!("sandbox.network: {e}"))
}

/// The permission mode given, else `default`.
fn mode(given: Option<String>) -> Result<Mode> {
    given
        .unwrap_or_else(|| "default".into())
        .parse()
        .map_err(|e| anyhow::anyhow!("mode: {e}"))
}

/// The extra roots' real paths, the flags' first; each must exist.
fn extra_roots<'a>(given: impl Iterator<Item = &'a PathBuf>) -> Result<Vec<PathBuf>> {
    given
        .map(|dir| {
            dir.canonicalize()
                .with_context(|| format!("extra root {} (add-dir) does not exist", dir.display()))
        })
        .collect()
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
    merge_guard(FileConfig::in_effect(flags)?.guard, flags)
}

/// The one place that chooses the shell, as a terminal emulator does: `$SHELL` when it names an
/// executable, else the user's login shell from the password database when it is a real one, else
/// `/bin/sh`. MCP hosts often start servers with a bare environment, and falling straight to
/// `/bin/sh` (dash on Debian) would take `read -s`, `[[ ]]` and the rest of bash away from a user
/// who never chose that. A service account's `nologin` or `false` is executable but refuses every
/// command, so a login shell counts only when `/etc/shells` lists it (where that file exists).
fn default_shell() -> PathBuf {
    let from_env = std::env::var_os("SHELL").map(PathBuf::from);
    let login = || {
        nix::unistd::User::from_uid(nix::unistd::Uid::current())
            .ok()
            .flatten()
            .map(|user| user.shell)
    };
    let valid_shells = std::fs::read_to_string("/etc/shells").ok();
    from_env
        .filter(|p| usable_shell(p))
        .or_else(|| {
            login().filter(|p| usable_shell(p) && is_login_shell(p, valid_shells.as_deref()))
        })
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// Whether `/etc/shells` (its text, when readable) lists `path` as a valid login shell.
fn is_login_shell(path: &Path, etc_shells: Option<&str>) -> bool {
    let Some(text) = etc_shells else {
        return true;
    };
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .any(|listed| !listed.is_empty() && Path::new(listed) == path)
}

fn usable_shell(path: &Path) -> bool {
    path.is_absolute() && is_executable(path)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The state dir `serve` uses when no flag names one: the config file's `state_dir`, else the
/// default (`agentty view` puts its page there, which confined commands cannot read).
pub fn state_dir_in_effect() -> Result<PathBuf> {
    let file = FileConfig::in_effect(&Flags::default())?;
    Ok(file.state_dir.unwrap_or_else(default_state_dir))
}

/// `$XDG_STATE_HOME/agentty`, else `~/.local/state/agentty` ([`home_dir`]). A temp dir is the
/// last resort, which a confining server then refuses (commands may write there) with the fix
/// named.
pub fn default_state_dir() -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home_dir().map(|h| h.join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("agentty")
}

/// The home directory: `$HOME`, or, where a host starts servers without it, the user's home in
/// the password database.
fn home_dir() -> Option<PathBuf> {
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
}
