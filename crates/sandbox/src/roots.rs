//! Roots reached through a symlink: a confined command must not be able to choose what the
//! next session's workspace is.
//!
//! The attack: the workspace `/tmp/proj` sits in `/tmp`, which commands may write. A command
//! moves it aside and puts a symlink to `$HOME` in its place; at the next start the workspace
//! path resolves to the home directory, and the whole of it is writable. Two checks close it,
//! with no state kept between sessions:
//!
//! - a root whose path, as given, runs through a symlink that lies in a directory commands may
//!   write *this* session is refused: one of its commands could re-point it for the next one;
//! - a root that resolves, through a symlink, to `/`, the home directory (or an ancestor of it)
//!   or a system directory is refused: a previous session with other roots may have made that
//!   link. Naming such a directory directly, without a link, is still allowed.

use std::path::{Component, Path, PathBuf};

use crate::plan::{Plan, SYSTEM_DIRS};

/// Why a root given through a symlink is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkedRoot {
    /// `link` lies in `dir`, which commands may write.
    Repointable { link: PathBuf, dir: PathBuf },
    /// The path runs through `link` and resolves to `target`, a directory no link may lead to.
    Sensitive { link: PathBuf, target: PathBuf },
}

impl std::fmt::Display for LinkedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkedRoot::Repointable { link, dir } => write!(
                f,
                "it runs through the symlink {}, in {}, which commands may write: a command \
                 could re-point it at another directory for the next session; give the real path",
                link.display(),
                dir.display()
            ),
            LinkedRoot::Sensitive { link, target } => write!(
                f,
                "it runs through the symlink {} and resolves to {}, which is the home \
                 directory, `/` or a system directory; name that directory directly if it is \
                 really meant",
                link.display(),
                target.display()
            ),
        }
    }
}

/// Checks the root `given` (absolute, as the user wrote it) against `plan` and `home`.
pub fn linked_root(given: &Path, plan: &Plan, home: Option<&Path>) -> Option<LinkedRoot> {
    let mut prefix = PathBuf::new();
    let mut first_link = None;
    for part in given.components() {
        match part {
            Component::CurDir => continue,
            // `..` after a symlink is resolved by the kernel from the link's target: keep
            // walking lexically only up to it, the canonical path settles the rest.
            Component::ParentDir => break,
            other => prefix.push(other),
        }
        let is_link = std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            continue;
        }
        let dir = prefix.parent().and_then(|p| p.canonicalize().ok());
        if let Some(dir) = dir
            && plan.confines()
            && plan.writable().iter().any(|w| dir.starts_with(&w.path))
        {
            return Some(LinkedRoot::Repointable {
                link: prefix.clone(),
                dir,
            });
        }
        first_link.get_or_insert_with(|| prefix.clone());
    }
    let link = first_link?;
    let target = given.canonicalize().ok()?;
    let home = home.and_then(|h| h.canonicalize().ok());
    let sensitive = target.parent().is_none()
        || home.as_deref().is_some_and(|h| h.starts_with(&target))
        || SYSTEM_DIRS.iter().any(|s| target.starts_with(s));
    sensitive.then_some(LinkedRoot::Sensitive { link, target })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostContext, Mode, Policy};

    fn plan(roots: &[&Path], temp: &Path) -> Plan {
        let host = HostContext {
            home: None,
            temp_dirs: vec![temp.to_path_buf()],
            vars: vec![],
            installed: vec![],
        };
        let roots = roots.iter().map(|r| r.canonicalize().unwrap()).collect();
        Plan::with_context(&Policy::new(Mode::Default, roots), &host)
    }

    /// The attack: the workspace's own name, in a writable directory, swapped for a link.
    #[test]
    fn a_link_in_a_writable_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("proj");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let p = plan(&[&real], tmp.path());
        let found = linked_root(&link, &p, None);
        assert!(
            matches!(&found, Some(LinkedRoot::Repointable { link: l, .. }) if *l == link),
            "{found:?}"
        );
        // Through a link in a directory commands cannot write: fine.
        let other = tempfile::tempdir().unwrap();
        let p = plan(&[&real], other.path());
        assert_eq!(linked_root(&link, &p, None), None);
        // No link at all: fine, even in a writable directory.
        let p = plan(&[&real], tmp.path());
        assert_eq!(linked_root(&real, &p, None), None);
    }

    /// A link made by an earlier session with other roots, now leading home or to `/`.
    #[test]
    fn a_link_to_home_or_a_system_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let p = plan(&[&home], elsewhere.path());
        for target in [home.clone(), PathBuf::from("/"), PathBuf::from("/etc")] {
            let link = tmp.path().join("ws");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let found = linked_root(&link, &p, Some(&home));
            assert!(
                matches!(found, Some(LinkedRoot::Sensitive { .. })),
                "{target:?}: {found:?}"
            );
        }
        // Named directly, home is the user's choice.
        assert_eq!(linked_root(&home, &p, Some(&home)), None);
    }
}
