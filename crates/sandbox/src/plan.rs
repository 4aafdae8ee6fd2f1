//! `Policy -> Plan`: the exact set of paths a confined command may write.
//!
//! This is the one place that decides what is writable, so the Landlock rules, the mounts
//! and the denial heuristics all agree. Host facts (home, temp dirs, cache variables) come
//! in through `HostContext` so tests can build plans over private directories instead of the real
//! `/tmp`. Only paths that exist are kept: a kernel rule needs an open file to anchor on, and a
//! missing cache directory cannot be created anyway when its parent is not writable.
//!
//! Unlike other agents' sandboxes, `.git` stays writable so `git commit` works: inside a root it is
//! covered by the root; for a linked worktree (`<root>/.git` is a file) the real git dir and its
//! common dir, which live elsewhere, are added explicitly.

use std::path::{Path, PathBuf};

use crate::enforcement::{Backend, Enforcement};
use crate::mode::{Mode, Policy};
use crate::tables::{
    CacheLocation, GPU_DEVICE_PREFIX, HARMLESS_DEVICES, TEMP_DIRS, TERMINAL_DEVICES,
    TOOLCHAIN_CACHES,
};
use crate::unreadable::{HiddenPath, Unreadable};

/// Why a path is writable; shown by `doctor`, and kept so a reviewer can audit the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    Root,
    GitDir,
    Temp,
    Cache(&'static str),
    Device,
}

/// In words: "a temp dir", "cargo's cache" (said where a path is refused for being writable).
impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Root => f.write_str("a root"),
            Why::GitDir => f.write_str("a git dir"),
            Why::Temp => f.write_str("a temp dir"),
            Why::Cache(tool) => write!(f, "{tool}'s cache"),
            Why::Device => f.write_str("a device"),
        }
    }
}

/// A writable path, canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writable {
    pub path: PathBuf,
    pub why: Why,
}

/// Host facts a plan depends on; `from_env` reads the real ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostContext {
    pub home: Option<PathBuf>,
    /// Temp dirs to make writable (the fixed ones plus `$TMPDIR` in `from_env`).
    pub temp_dirs: Vec<PathBuf>,
    /// Values of the environment variables named in `TOOLCHAIN_CACHES`.
    pub vars: Vec<(String, PathBuf)>,
    /// The `TOOLCHAIN_CACHES` tools found on `PATH`.
    pub installed: Vec<&'static str>,
}

impl HostContext {
    pub fn from_env() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let mut temp_dirs: Vec<PathBuf> = TEMP_DIRS.iter().map(PathBuf::from).collect();
        temp_dirs.extend(var("TMPDIR"));
        let mut vars: Vec<(String, PathBuf)> = Vec::new();
        for cache in TOOLCHAIN_CACHES {
            if let CacheLocation::Env(name, _) = cache.location
                && !vars.iter().any(|(n, _)| n == name)
                && let Some(value) = var(name)
            {
                vars.push((name.to_owned(), value));
            }
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut installed: Vec<&'static str> = Vec::new();
        for tool in TOOLCHAIN_CACHES.iter().filter_map(|c| c.tool) {
            if !installed.contains(&tool) && on_path(tool, &path) {
                installed.push(tool);
            }
        }
        HostContext {
            home: var("HOME"),
            temp_dirs,
            vars,
            installed,
        }
    }

    fn var(&self, name: &str) -> Option<&Path> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_path())
    }
}

/// The computed confinement for one policy on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub(crate) mode: Mode,
    pub(crate) enabled: bool,
    pub(crate) network: crate::mode::Network,
    pub(crate) loopback: bool,
    pub(crate) writable: Vec<Writable>,
    pub(crate) backend: Backend,
    /// What confined commands may not read (`unreadable.rs`); set by [`Plan::hide`].
    pub(crate) unreadable: Unreadable,
    /// Paths asked to be hidden that lie in the writable set, which stays readable: not hidden.
    pub(crate) exposed: Vec<HiddenPath>,
}

impl Plan {
    /// The plan for `policy` on this host (real environment, real kernel).
    pub fn new(policy: &Policy) -> Plan {
        Plan::with_context(policy, &HostContext::from_env())
    }

    /// The plan for `policy` with explicit host facts (tests, or a server with its own env).
    pub fn with_context(policy: &Policy, host: &HostContext) -> Plan {
        Plan {
            mode: policy.mode,
            enabled: policy.enabled,
            network: policy.network,
            loopback: policy.loopback,
            writable: writable_set(policy, host),
            backend: Backend::detect(),
            unreadable: Unreadable::default(),
            exposed: Vec::new(),
        }
    }

    /// This plan keeping `unreadable` from confined commands' reads. A hidden path inside the
    /// writable set cannot be hidden (the writable set stays readable, and new entries beside a
    /// hidden path would be unreadable to the command that made them): it is kept in
    /// [`Plan::exposed`] instead, for the `[sandbox]` line to say so.
    pub fn hide(mut self, unreadable: Unreadable) -> Plan {
        let Unreadable {
            hidden,
            readable,
            seen_from,
        } = unreadable;
        let (exposed, hidden): (Vec<HiddenPath>, Vec<HiddenPath>) =
            hidden.into_iter().partition(|h| {
                let real = resolve(&h.path);
                self.writable.iter().any(|w| real.starts_with(&w.path))
            });
        self.unreadable = Unreadable {
            hidden,
            readable,
            seen_from,
        };
        self.exposed = exposed;
        self
    }

    /// What confined commands may not read.
    pub fn unreadable(&self) -> &Unreadable {
        &self.unreadable
    }

    /// Paths asked to be hidden that the writable set holds: readable.
    pub fn exposed(&self) -> &[HiddenPath] {
        &self.exposed
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The writable set (empty in `danger-full-access`, where everything is writable).
    pub fn writable(&self) -> &[Writable] {
        &self.writable
    }

    /// What confined commands may reach over the network.
    pub fn network(&self) -> crate::mode::Network {
        self.network
    }

    /// What this plan will do on this host, before anything is prepared.
    pub fn enforcement(&self) -> Enforcement {
        Enforcement::decide(self.mode, self.enabled, &self.backend)
    }

    /// True when writes are actually confined, i.e. a refused write may be the sandbox's doing.
    pub fn confines(&self) -> bool {
        self.enforcement().confines()
    }

    /// Whether a write to `path` is allowed by the plan (ignoring ordinary file permissions).
    /// Symlinks are resolved on the longest existing prefix, as the kernel would.
    pub fn allows_write(&self, path: &Path) -> bool {
        if self.mode == Mode::Auto {
            return true;
        }
        let resolved = resolve(path);
        self.writable.iter().any(|w| resolved.starts_with(&w.path))
    }
}

/// Canonicalizes the longest existing prefix of `path`, keeping the missing tail (the file being
/// created is usually the part that does not exist yet).
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let mut tail = Vec::new();
    let mut cur = path;
    loop {
        if let Ok(canon) = cur.canonicalize() {
            let mut out = canon;
            for part in tail.iter().rev() {
                // The missing tail cannot contain symlinks, so `..` is lexical here.
                if part == ".." {
                    out.pop();
                } else if part != "." {
                    out.push(part);
                }
            }
            return out;
        }
        let Some(parent) = cur.parent() else {
            return path.to_path_buf();
        };
        // `file_name` is None for a trailing `..`; keep it as a component.
        tail.push(
            cur.components()
                .next_back()
                .map_or_else(Default::default, |c| c.as_os_str().to_owned()),
        );
        cur = parent;
    }
}

fn writable_set(policy: &Policy, host: &HostContext) -> Vec<Writable> {
    let mut out = Vec::new();
    let mut push = |path: &Path, why: Why| {
        if let Ok(canon) = path.canonicalize() {
            out.push(Writable { path: canon, why });
        }
    };
    match policy.mode {
        Mode::Auto => return Vec::new(),
        Mode::Plan => {}
        Mode::Default => {
            for root in &policy.writable_roots {
                push(root, Why::Root);
                for git in worktree_git_dirs(root, host.home.as_deref()) {
                    push(&git, Why::GitDir);
                }
            }
            for temp in &host.temp_dirs {
                push(temp, Why::Temp);
            }
            for cache in TOOLCHAIN_CACHES {
                let path = match cache.location {
                    CacheLocation::Home(rel) => host.home.as_ref().map(|h| h.join(rel)),
                    CacheLocation::Env(var, rel) => host.var(var).map(|v| v.join(rel)),
                };
                if let Some(path) = path {
                    let installed = cache.tool.is_some_and(|t| host.installed.contains(&t));
                    create_missing_cache(&path, host.home.as_deref(), installed);
                    push(&path, Why::Cache(cache.reason));
                }
            }
            for dev in HARMLESS_DEVICES {
                push(Path::new(dev), Why::Device);
            }
            for gpu in gpu_devices() {
                push(&gpu, Why::Device);
            }
        }
    }
    for dev in TERMINAL_DEVICES {
        push(Path::new(dev), Why::Device);
    }
    dedup_nested(out)
}

/// Creates a missing cache directory when its tool is installed: on `PATH` (`installed`; then
/// the tool's home above it too), or evidently used (the parent exists and is not the home
/// directory itself); or when it is the XDG cache dir (`~/.cache`, a standard directory).
/// Best-effort: a cache that cannot be created stays read-only, as before.
fn create_missing_cache(path: &Path, home: Option<&Path>, installed: bool) {
    if path.exists() {
        return;
    }
    if installed && home.is_some_and(|h| path.starts_with(h)) {
        let _ = std::fs::DirBuilder::new().recursive(true).create(path);
        return;
    }
    let Some(parent) = path.parent() else {
        return;
    };
    let is_home = |p: &Path| home.is_some_and(|h| h == p);
    let xdg_cache = is_home(parent) && path.file_name().is_some_and(|n| n == ".cache");
    if parent.is_dir() && (!is_home(parent) || xdg_cache) {
        let _ = std::fs::DirBuilder::new().create(path);
    }
}

/// Whether `program` is an executable file in one of the `PATH` directories.
fn on_path(program: &str, path: &std::ffi::OsStr) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Drops paths already covered by a writable ancestor: fewer kernel rules, same meaning.
fn dedup_nested(mut all: Vec<Writable>) -> Vec<Writable> {
    all.sort_by(|a, b| a.path.cmp(&b.path));
    let mut out: Vec<Writable> = Vec::with_capacity(all.len());
    for w in all {
        if !out.iter().any(|kept| w.path.starts_with(&kept.path)) {
            out.push(w);
        }
    }
    out
}

fn gpu_devices() -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir("/dev") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(GPU_DEVICE_PREFIX)
        })
        .map(|e| e.path())
        .collect()
}

/// The git directories a commit in `root` writes, when they lie outside it: the `.git` of the
/// repository `root` is a subfolder of (a package of a monorepo), or a linked worktree's own git
/// dir and the common dir it shares with the main checkout. A repository rooted at `root` keeps
/// its `.git` inside the root, so nothing is added for it. A repository at `home` or `/` (a
/// dotfiles repo) is never opened up: its hooks would run outside the sandbox in every git call
/// the user makes at home.
///
/// What a confined command wrote must never widen a later session's sandbox, and `.git` files
/// (and the `commondir` of a git dir already writable) are writable. So nothing here is taken
/// on the word of one file: a `.git` directory must be a real directory (not a symlink) that
/// holds a repository, and a linked worktree is trusted only in git's own layout, where the
/// git dir is `<common>/worktrees/<name>`, `<common>` is a repository, and the git dir's
/// `gitdir` file points back at this very `.git` file. No path that is `/`, the home directory,
/// an ancestor of it, a home-level `.git`, or a system directory is ever returned.
pub fn worktree_git_dirs(root: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let Some(top) = root
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
    else {
        return Vec::new();
    };
    if top.parent().is_none() || (top != root && home.is_some_and(|h| h == top)) {
        return Vec::new();
    }
    let dot_git = top.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Vec::new();
    };
    let found = if meta.is_dir() {
        // Inside the root it is already writable; above it, only a real repository counts.
        (top != root && is_repository(&dot_git))
            .then(|| dot_git.canonicalize().ok())
            .flatten()
            .map(|dir| vec![dir])
    } else if meta.is_file() {
        linked_worktree(&dot_git)
    } else {
        None
    };
    let found = found.unwrap_or_default();
    if found.iter().all(|dir| safe_git_dir(dir, home)) {
        found
    } else {
        Vec::new()
    }
}

/// The git dir and common dir of the linked worktree whose `.git` file is `dot_git`, when git's
/// own layout vouches for them (see [`worktree_git_dirs`]).
fn linked_worktree(dot_git: &Path) -> Option<Vec<PathBuf>> {
    let text = read_small(dot_git)?;
    let named = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = dot_git.parent()?.join(named).canonicalize().ok()?;
    let worktrees = gitdir.parent()?;
    if worktrees.file_name()? != "worktrees" {
        return None;
    }
    let common = worktrees.parent()?.to_path_buf();
    if !is_repository(&common) || !is_repository_dir(&gitdir) {
        return None;
    }
    // The back-link git keeps: the worktree's git dir names the `.git` file that uses it.
    let back = read_small(&gitdir.join("gitdir"))?;
    let back = Path::new(back.trim()).canonicalize().ok()?;
    if back != dot_git.canonicalize().ok()? {
        return None;
    }
    // `commondir`, when there, must say what the layout says (git writes `../..`).
    if let Some(said) = read_small(&gitdir.join("commondir"))
        && gitdir.join(said.trim()).canonicalize().ok()? != common
    {
        return None;
    }
    Some(vec![gitdir, common])
}

/// A git dir's control files are a few hundred bytes; anything larger is not one. Read as a
/// confined command could (`deputy.rs`: a FIFO planted as a worktree's `gitdir` held the next
/// server's start on this workspace forever), as UTF-8 text or not at all.
fn read_small(path: &Path) -> Option<String> {
    let bytes = crate::git_files::read_head_bytes(path, crate::git_files::POINTER_READ_BYTES)?;
    String::from_utf8(bytes).ok()
}

/// A repository's git dir: `HEAD`, `objects` and `refs`, none of them a symlink.
fn is_repository(dir: &Path) -> bool {
    is_repository_dir(dir)
        && ["objects", "refs"]
            .iter()
            .all(|d| std::fs::symlink_metadata(dir.join(d)).is_ok_and(|m| m.is_dir()))
}

/// A linked worktree's git dir: its own `HEAD`, not a symlink.
fn is_repository_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("HEAD")).is_ok_and(|m| m.is_file())
}

/// Directories no git dir may be, or be inside.
pub(crate) const SYSTEM_DIRS: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run", "/sbin", "/sys",
    "/usr", "/var/lib", "/var/log",
];

/// Not `/`, not home or an ancestor of it, not a home-level `.git`, not a system directory.
fn safe_git_dir(dir: &Path, home: Option<&Path>) -> bool {
    let Some(parent) = dir.parent() else {
        return false;
    };
    let home = home.and_then(|h| h.canonicalize().ok());
    let near_home = home
        .as_deref()
        .is_some_and(|h| h.starts_with(dir) || h == parent);
    !near_home && parent != Path::new("/") && !SYSTEM_DIRS.iter().any(|s| dir.starts_with(s))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
