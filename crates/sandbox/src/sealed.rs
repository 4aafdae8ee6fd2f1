//! Extracted package sources that a confined command must not change once they are there.
//!
//! `workspace-write` keeps the toolchain caches writable (a first `cargo build` must download),
//! and Landlock cannot carve a read-only hole in a writable tree. But some caches hold code that
//! the user's own tools run later, unconfined, with no check: cargo compiles and runs the
//! `build.rs` of an extracted crate (`registry/src/*/*`, `git/checkouts/*/*`) as it finds it, and
//! go builds an extracted module (`pkg/mod/…@version`) as it finds it. A confined command that
//! edits one has planted code in the user's next build of any project using it.
//!
//! So the entries already extracted when a session starts are listed here, and the session's
//! mount namespace (core's `namespace`) makes each a read-only bind mount of itself: a confined
//! command gets "Read-only file system" writing, renaming or deleting them, while a crate or
//! module extracted during the session lands beside them as usual. The server's own namespace,
//! and so the user's and unconfined commands', keeps them writable. A confined command can still
//! change what it extracts during the session, and the other caches (maven, gradle, ccache, pip's
//! built wheels, …): the README says so.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

/// Entries sealed at most, so a huge cache cannot make start-up slow (each is two mount calls).
pub const SEALED_MAX: usize = 20_000;
/// How deep a module path under go's module cache is followed (`host/org/repo/sub@v`).
const GO_DEPTH: usize = 6;

/// What is sealed, and whether [`SEALED_MAX`] cut the list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sealed {
    /// Read-only in the session's namespace.
    pub paths: Vec<PathBuf>,
    /// Every directory from a cache's home down to a sealed entry's parent, parents first:
    /// each is bound onto itself, so it cannot be renamed away with the sealed entries inside
    /// (a mount point cannot be renamed or removed) and replaced by a writable copy.
    pub pinned: Vec<PathBuf>,
    pub truncated: bool,
}

/// The extracted sources under the caches of this environment: `home` and the variables `var`
/// gives (`CARGO_HOME`, `GOMODCACHE`, `GOPATH`).
pub fn extracted_sources(home: Option<&Path>, var: impl Fn(&str) -> Option<OsString>) -> Sealed {
    let mut sealed = list(home, var);
    // Symlinks are resolved here, in the cache homes only the user controls; the session init
    // then refuses any symlink on these paths, so one planted below cannot redirect a mount.
    let mut pinned = std::collections::BTreeSet::new();
    for path in &sealed.paths {
        let home = sealed.homes.iter().find(|h| path.starts_with(h));
        let mut dir = path.parent();
        while let (Some(d), Some(h)) = (dir, home) {
            if !d.starts_with(h) {
                break;
            }
            pinned.insert(d.to_path_buf());
            dir = d.parent();
        }
    }
    Sealed {
        paths: std::mem::take(&mut sealed.paths),
        pinned: pinned.into_iter().collect(),
        truncated: sealed.truncated,
    }
}

/// The entries, under canonical cache homes.
struct Listed {
    homes: Vec<PathBuf>,
    paths: Vec<PathBuf>,
    truncated: bool,
}

impl Listed {
    fn push(&mut self, path: PathBuf) -> bool {
        if self.paths.len() >= SEALED_MAX {
            self.truncated = true;
            return false;
        }
        self.paths.push(path);
        true
    }
}

fn list(home: Option<&Path>, var: impl Fn(&str) -> Option<OsString>) -> Listed {
    let mut sealed = Listed {
        homes: Vec::new(),
        paths: Vec::new(),
        truncated: false,
    };
    let cargo = var("CARGO_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".cargo")));
    if let Some(cargo) = cargo.and_then(|c| fs::canonicalize(c).ok()) {
        sealed.homes.push(cargo.clone());
        for parent in [cargo.join("registry/src"), cargo.join("git/checkouts")] {
            for group in entries(&parent) {
                for entry in entries(&group) {
                    if !sealed.push(entry) {
                        return sealed;
                    }
                }
            }
        }
    }
    let go = var("GOMODCACHE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            var("GOPATH")
                .filter(|v| !v.is_empty())
                .and_then(|p| std::env::split_paths(&p).next())
                .map(|p| p.join("pkg/mod"))
        })
        .or_else(|| home.map(|h| h.join("go/pkg/mod")));
    if let Some(go) = go.and_then(|g| fs::canonicalize(g).ok()) {
        sealed.homes.push(go.clone());
        // `cache/` holds the downloads go checks against go.sum; the modules are the rest.
        let tops = entries(&go).filter(|p| p.file_name().is_none_or(|n| n != "cache"));
        for top in tops {
            if !go_modules(top, GO_DEPTH, &mut sealed) {
                return sealed;
            }
        }
    }
    sealed
}

/// Real directories (not symlinks) in `dir`, sorted so the list is the same on every start.
fn entries(dir: &Path) -> impl Iterator<Item = PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.into_iter()
}

/// Adds the module directories (`name@version`) at or below `dir`; false once the list is full.
fn go_modules(dir: PathBuf, depth: usize, sealed: &mut Listed) -> bool {
    let is_module = dir
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().contains(&b'@'));
    if is_module {
        return sealed.push(dir);
    }
    if depth == 0 {
        return true;
    }
    entries(&dir).all(|sub| go_modules(sub, depth - 1, sealed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_extracted_crates_checkouts_and_go_modules_but_not_downloads() {
        let home = tempfile::tempdir().unwrap();
        let h = &fs::canonicalize(home.path()).unwrap();
        for dir in [
            ".cargo/registry/src/index.crates.io-1/serde-1.0.0",
            ".cargo/registry/src/index.crates.io-1/libc-0.2.0",
            ".cargo/registry/cache/index.crates.io-1",
            ".cargo/git/checkouts/repo-abc/1234567",
            "go/pkg/mod/github.com/org/mod@v1.2.3/sub",
            "go/pkg/mod/golang.org/x/text@v0.3.0",
            "go/pkg/mod/cache/download/github.com/org/mod/@v",
        ] {
            fs::create_dir_all(h.join(dir)).unwrap();
        }
        let sealed = extracted_sources(Some(h), |_| None);
        let rel: Vec<_> = sealed
            .paths
            .iter()
            .map(|p| p.strip_prefix(h).unwrap().to_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            rel,
            [
                ".cargo/registry/src/index.crates.io-1/libc-0.2.0",
                ".cargo/registry/src/index.crates.io-1/serde-1.0.0",
                ".cargo/git/checkouts/repo-abc/1234567",
                "go/pkg/mod/github.com/org/mod@v1.2.3",
                "go/pkg/mod/golang.org/x/text@v0.3.0",
            ]
        );
        assert!(!sealed.truncated);
        let pinned: Vec<_> = sealed
            .pinned
            .iter()
            .map(|p| p.strip_prefix(h).unwrap().to_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            pinned,
            [
                ".cargo",
                ".cargo/git",
                ".cargo/git/checkouts",
                ".cargo/git/checkouts/repo-abc",
                ".cargo/registry",
                ".cargo/registry/src",
                ".cargo/registry/src/index.crates.io-1",
                "go/pkg/mod",
                "go/pkg/mod/github.com",
                "go/pkg/mod/github.com/org",
                "go/pkg/mod/golang.org",
                "go/pkg/mod/golang.org/x",
            ]
        );
    }

    #[test]
    fn relocated_caches_are_followed() {
        let root = tempfile::tempdir().unwrap();
        let cargo = fs::canonicalize(root.path()).unwrap().join("cargo-home");
        fs::create_dir_all(cargo.join("registry/src/idx/anyhow-1.0.0")).unwrap();
        let sealed = extracted_sources(None, |name| {
            (name == "CARGO_HOME").then(|| cargo.clone().into_os_string())
        });
        assert_eq!(sealed.paths, [cargo.join("registry/src/idx/anyhow-1.0.0")]);
    }
}
