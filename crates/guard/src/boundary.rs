//! The workspace boundary: the one `is_in_workspace()` for the whole program.
//!
//! Inside means under the workspace root, an extra root (`--add-dir`), or a granted path, judged on
//! the *resolved* path: symlinks and `..` are resolved before comparing, so `root/link-to-etc` is
//! outside and `/elsewhere/link-into-root` is inside. A path that does not exist yet is resolved
//! through its nearest existing ancestor, component by component, so a symlink on the way still
//! counts. Granted paths widen this boundary only; `writable_roots()` (what the sandbox may write)
//! never includes them.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::notice;

/// Why a root or a `workdir` was refused. Display texts come from `notice.rs`.
#[derive(Debug, thiserror::Error)]
pub enum BoundaryError {
    /// The workspace root or an extra root does not exist.
    #[error("{}", notice::root_unusable(.which, .path, "does not exist"))]
    RootMissing {
        /// "workspace root" or "extra root".
        which: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// The workspace root or an extra root is not a directory.
    #[error("{}", notice::root_unusable(.which, .path, "is not a directory"))]
    RootNotADirectory {
        /// "workspace root" or "extra root".
        which: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// `workdir` contains a NUL byte.
    #[error("{}", notice::workdir_nul())]
    NulByte,
    /// `workdir` does not exist.
    #[error("{}", notice::workdir_missing(.path, .allowed))]
    Missing {
        /// The path as resolved.
        path: PathBuf,
        /// Root and extra roots.
        allowed: Vec<PathBuf>,
    },
    /// `workdir` is not a directory.
    #[error("{}", notice::workdir_not_directory(.path))]
    NotADirectory {
        /// The path as resolved.
        path: PathBuf,
    },
    /// `workdir` resolves outside the workspace.
    #[error("{}", notice::workdir_outside(.path, .allowed))]
    Outside {
        /// The path as resolved.
        path: PathBuf,
        /// Root and extra roots.
        allowed: Vec<PathBuf>,
    },
}

/// The workspace: root, extra roots and granted paths, all canonical.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    extra_roots: Vec<PathBuf>,
    granted: Vec<PathBuf>,
}

fn canonical_dir(path: &Path, which: &'static str) -> Result<PathBuf, BoundaryError> {
    let canonical = path
        .canonicalize()
        .map_err(|_| BoundaryError::RootMissing {
            which,
            path: path.to_path_buf(),
        })?;
    if !canonical.is_dir() {
        return Err(BoundaryError::RootNotADirectory {
            which,
            path: path.to_path_buf(),
        });
    }
    Ok(canonical)
}

impl Workspace {
    /// Canonicalizes the roots; each must exist and be a directory.
    pub fn new(root: PathBuf, extra_roots: Vec<PathBuf>) -> Result<Self, BoundaryError> {
        let root = canonical_dir(&root, "workspace root")?;
        let extra_roots = extra_roots
            .iter()
            .map(|p| canonical_dir(p, "extra root"))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            root,
            extra_roots,
            granted: Vec::new(),
        })
    }

    /// Adds a granted path (a file or directory, existing or not). Widens `is_in_workspace` only.
    pub fn grant(&mut self, path: PathBuf) {
        let absolute = if path.is_absolute() {
            path
        } else {
            self.root.join(path)
        };
        if let Ok(resolved) = resolve(&absolute)
            && !self.granted.contains(&resolved)
        {
            self.granted.push(resolved);
        }
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Root and extra roots (what a sandbox may write); never granted paths.
    pub fn writable_roots(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.root.as_path()).chain(self.extra_roots.iter().map(PathBuf::as_path))
    }

    /// Whether `path` (relative paths are taken from the root) resolves inside the root, an extra
    /// root or a granted path.
    pub fn is_in_workspace(&self, path: &Path) -> bool {
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return false;
        }
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        match resolve(&absolute) {
            Ok(resolved) => self.contains_resolved(&resolved),
            Err(_) => false,
        }
    }

    fn contains_resolved(&self, resolved: &Path) -> bool {
        self.writable_roots()
            .chain(self.granted.iter().map(PathBuf::as_path))
            .any(|r| resolved.starts_with(r))
    }

    fn allowed(&self) -> Vec<PathBuf> {
        self.writable_roots().map(Path::to_path_buf).collect()
    }

    /// Resolves a tool call's `workdir`: `None` is the root, relative is joined to the root. It
    /// must exist, be a directory and be inside; the canonical path is returned.
    pub fn resolve_workdir(&self, workdir: Option<&str>) -> Result<PathBuf, BoundaryError> {
        let Some(workdir) = workdir else {
            return Ok(self.root.clone());
        };
        if workdir.contains('\0') {
            return Err(BoundaryError::NulByte);
        }
        let given = Path::new(workdir);
        let absolute = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let resolved = resolve(&absolute).unwrap_or_else(|_| absolute.clone());
        if !self.contains_resolved(&resolved) {
            return Err(BoundaryError::Outside {
                path: resolved,
                allowed: self.allowed(),
            });
        }
        match std::fs::metadata(&resolved) {
            Ok(meta) if meta.is_dir() => Ok(resolved),
            Ok(_) => Err(BoundaryError::NotADirectory { path: resolved }),
            Err(_) => Err(BoundaryError::Missing {
                path: resolved,
                allowed: self.allowed(),
            }),
        }
    }
}

/// Resolves symlinks and `..` in an absolute path. For a path that does not fully exist, the
/// existing part is canonicalized and the rest applied one component at a time (a component that
/// appears on disk later is canonicalized again, so symlinks are never skipped).
fn resolve(path: &Path) -> io::Result<PathBuf> {
    if let Ok(canonical) = path.canonicalize() {
        return Ok(canonical);
    }
    let mut current = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => current.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                // `current` is canonical (no symlinks), so dropping its last part is exact.
                current.pop();
            }
            Component::Normal(part) => {
                current.push(part);
                if std::fs::symlink_metadata(&current).is_ok() {
                    // One canonicalize or one lexical read_link per component: no loop can spin.
                    match current.canonicalize() {
                        Ok(c) => current = c,
                        // A dangling symlink: judge where it points, lexically.
                        Err(_) => {
                            if let Ok(target) = std::fs::read_link(&current) {
                                current.pop();
                                let joined = current.join(target);
                                current = resolve_lexically(&joined);
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(current)
}

/// Applies `.` and `..` without touching the filesystem (used only for dangling symlink targets).
fn resolve_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c.as_os_str()),
        }
    }
    out
}
