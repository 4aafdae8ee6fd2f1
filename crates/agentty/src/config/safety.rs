//! The checks that keep what the server trusts out of confined commands' reach: its state dir,
//! a given token file, and roots reached through a symlink a command could plant or re-point.
//! Each one asks the sandbox's plan of the mode in use what commands may write.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use agentty_sandbox::Mode;
use agentty_server::Settings;

/// Refuses a state dir (`state_real`, its real path) that confined commands could write.
///
/// The server trusts what it finds in its state dir (spill files it reads back, names it
/// removes): a confined command must not be able to write there. A workspace that holds the
/// home directory (`/`, home itself) holds the default state dir too: that setup confines
/// little anyway, and every sandbox line says so; it is allowed with a warning.
pub fn refuse_writable_state_dir(
    state_real: &Path,
    workspace: &Path,
    add_dirs: &[PathBuf],
    plan: Option<&agentty_sandbox::Plan>,
    mode: Mode,
) -> Result<()> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(root) = std::iter::once(workspace)
        .chain(add_dirs.iter().map(PathBuf::as_path))
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
        .filter(|_| mode != Mode::Auto)
        .and_then(|p| writable_place(p, state_real))
    {
        bail!(
            "state dir {} is inside {place}, which commands may write: choose a state dir they \
             cannot write, such as the default under your home (--state-dir)",
            state_real.display()
        );
    }
    Ok(())
}

/// Refuses a given token file that a confined command could rewrite, or re-point when it is
/// reached through a symlink: the next start would let in whoever holds the token it wrote.
pub fn refuse_writable_token_file(settings: &Settings, given: &Path) -> Result<()> {
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
pub fn plan_for(mode: Mode, workspace: &Path, add_dirs: &[PathBuf]) -> agentty_sandbox::Plan {
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
pub fn refuse_linked_roots<'a>(
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
