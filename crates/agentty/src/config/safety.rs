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
    let roots: Vec<&Path> = std::iter::once(workspace)
        .chain(add_dirs.iter().map(PathBuf::as_path))
        .collect();
    // A state dir that is, or holds, a root: nothing of it could be kept from commands.
    if let Some(root) = roots.iter().find(|root| root.starts_with(state_real)) {
        bail!(
            "state dir {} holds {}, which commands may write: choose a state dir outside the \
             workspace and the extra roots (--state-dir)",
            state_real.display(),
            root.display()
        );
    }
    if let Some(root) = roots.iter().find(|root| state_real.starts_with(root)) {
        if home.as_deref().is_some_and(|h| h.starts_with(root)) {
            tracing::warn!(
                "the state dir {} is inside {}, which commands may write: it is read-only to \
                 them, its token hidden, only where the session has its mount namespace (as \
                 root); elsewhere a command can read the tokens there and rewrite the output \
                 kept there, and zsh shells are refused while commands are confined (their \
                 start-up files would be there)",
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

/// What a token file that confined commands could read would give them.
#[derive(Debug, Clone, Copy)]
pub enum TokenUse {
    /// It names several callers: one caller's commands would act as another (review 40 L7).
    SeveralCallers,
    /// The view may type into shells (`--view-control`): a command logged in with the token
    /// would type as the user, into an escalated (unconfined) shell too (review 41 M3).
    ViewControl,
}

/// Refuses serving where confined commands could read the token file (`file`, its real path)
/// and the token would give them more than their own caller's calls ([`TokenUse`]). That is
/// where the file lies where they may write (the workspace holds the state dir: Landlock's read
/// rules cannot leave it out there) or the kernel has no Landlock, with no mount namespace to
/// cover it (the caller of this knows there is none).
pub fn refuse_readable_tokens(
    plan: &agentty_sandbox::Plan,
    file: Option<PathBuf>,
    exposed: TokenUse,
) -> Result<()> {
    let Some(file) = file else {
        bail!("cannot resolve the token file's path, to judge whether commands could read it");
    };
    let Some((why, remedy)) = readable_to_commands(plan, &file) else {
        return Ok(());
    };
    let what = match exposed {
        TokenUse::SeveralCallers => {
            "names several callers, and each caller's commands could read the others' tokens \
             and act as them"
        }
        TokenUse::ViewControl => {
            "would let a command log in to the view and, with --view-control, type into the \
             user's shells as the user (an escalated one runs unconfined; serve without \
             --view-control to keep the view)"
        }
    };
    bail!(
        "token file {}: {why}, and it {what}. {remedy}",
        file.display()
    )
}

/// The same for the pages `agentty view` leaves in the state dir (`dir`), with their login
/// codes, when the token file lies elsewhere (review 42 M3).
pub fn refuse_readable_login_pages(
    plan: &agentty_sandbox::Plan,
    dir: &Path,
    exposed: TokenUse,
) -> Result<()> {
    let Some((why, remedy)) = readable_to_commands(plan, dir) else {
        return Ok(());
    };
    let what = match exposed {
        TokenUse::SeveralCallers => "another caller's login code, and act as them in the view",
        TokenUse::ViewControl => {
            "the login code, and with --view-control type into the user's shells as the user"
        }
    };
    bail!(
        "the view's login pages ({}): {why}, so a command could take {what}. {remedy}",
        dir.display()
    )
}

/// Whether Landlock cannot keep `plan`'s confined commands from reading `path`: the kernel has
/// none, or the path lies where they may write (its read rules cannot leave a path out of a
/// writable root; review 39 L5). Only a mount namespace's cover keeps it from them then.
pub fn landlock_cannot_hide(plan: &agentty_sandbox::Plan, path: &Path) -> bool {
    agentty_sandbox::landlock_abi().is_none() || plan.allows_write(path)
}

/// Why confined commands could read `path` without a mount namespace to cover it
/// ([`landlock_cannot_hide`]), and what the user can do; `None` when they cannot.
fn readable_to_commands(
    plan: &agentty_sandbox::Plan,
    path: &Path,
) -> Option<(String, &'static str)> {
    if !landlock_cannot_hide(plan, path) {
        return None;
    }
    match writable_place(plan, path) {
        Some(place) => Some((
            format!("it is inside {place}, which commands may write"),
            "Keep it where they cannot (--token-file, or --state-dir for the state dir's), or \
             serve where the session has its mount namespace (CAP_SYS_ADMIN, as root)",
        )),
        None => Some((
            "this kernel has no Landlock to keep commands from reading it".to_owned(),
            "Serve where the session has its mount namespace (CAP_SYS_ADMIN, as root)",
        )),
    }
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
