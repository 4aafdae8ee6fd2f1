//! The workspace boundary on real directories: `..`, symlinks out and in, extra roots, granted
//! paths, missing paths, files, NUL bytes, not-yet-existing paths.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use agentty_guard::{BoundaryError, Workspace};

/// A temporary directory removed on drop (kept dependency-free on purpose).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("agentty-guard-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir.canonicalize().unwrap())
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// root = t/proj (with src/, a file, symlinks), outside = t/outside, extra = t/extra.
fn fixture() -> (TempDir, Workspace) {
    let t = TempDir::new();
    let root = t.mkdir("proj");
    t.mkdir("proj/src");
    t.mkdir("outside/secret");
    t.mkdir("extra/data");
    std::fs::write(root.join("file.txt"), "x").unwrap();
    symlink(t.path("outside"), root.join("link-out")).unwrap();
    symlink(root.join("src"), t.path("outside/link-in")).unwrap();
    symlink(t.path("nowhere"), root.join("dangling")).unwrap();
    let ws = Workspace::new(root, vec![t.path("extra")]).unwrap();
    (t, ws)
}

#[test]
fn inside_and_outside() {
    let (t, ws) = fixture();
    assert_eq!(ws.root(), t.path("proj"));
    assert!(ws.is_in_workspace(&t.path("proj")));
    assert!(ws.is_in_workspace(&t.path("proj/src")));
    assert!(ws.is_in_workspace(Path::new("src")));
    assert!(ws.is_in_workspace(&t.path("extra/data")));
    assert!(!ws.is_in_workspace(&t.path("outside")));
    assert!(!ws.is_in_workspace(Path::new("/etc")));
    assert!(!ws.is_in_workspace(&t.path("proj-sibling")));
}

#[test]
fn dot_dot_is_resolved() {
    let (t, ws) = fixture();
    assert!(!ws.is_in_workspace(&t.path("proj/src/../../outside")));
    assert!(!ws.is_in_workspace(Path::new("../outside")));
    assert!(ws.is_in_workspace(&t.path("outside/../proj/src")));
    assert!(!ws.is_in_workspace(&t.path("proj/not-yet/../../outside/x")));
}

#[test]
fn symlinks_are_resolved() {
    let (t, ws) = fixture();
    // A link inside pointing out is outside; a link outside pointing in is inside.
    assert!(!ws.is_in_workspace(&t.path("proj/link-out")));
    assert!(!ws.is_in_workspace(&t.path("proj/link-out/secret")));
    assert!(!ws.is_in_workspace(&t.path("proj/link-out/new-file")));
    assert!(ws.is_in_workspace(&t.path("outside/link-in")));
    assert!(ws.is_in_workspace(&t.path("outside/link-in/new-file")));
    // A dangling link is judged by where it points.
    assert!(!ws.is_in_workspace(&t.path("proj/dangling")));
    assert!(!ws.is_in_workspace(&t.path("proj/dangling/x")));
}

#[test]
fn not_yet_existing_paths() {
    let (t, ws) = fixture();
    assert!(ws.is_in_workspace(&t.path("proj/new/deeper/file.rs")));
    assert!(!ws.is_in_workspace(&t.path("outside/new/file.rs")));
}

#[test]
fn nul_bytes_are_outside() {
    let (t, ws) = fixture();
    let with_nul = format!("{}/src\0/x", t.path("proj").display());
    assert!(!ws.is_in_workspace(Path::new(&with_nul)));
    assert!(matches!(
        ws.resolve_workdir(Some("src\0")),
        Err(BoundaryError::NulByte)
    ));
}

#[test]
fn grants_widen_the_boundary_but_not_the_writable_roots() {
    let (t, mut ws) = fixture();
    let secret = t.path("outside/secret");
    assert!(!ws.is_in_workspace(&secret));
    ws.grant(secret.clone());
    assert!(ws.is_in_workspace(&secret));
    assert!(ws.is_in_workspace(&secret.join("file")));
    assert!(!ws.is_in_workspace(&t.path("outside")));
    let writable: Vec<&Path> = ws.writable_roots().collect();
    assert_eq!(
        writable,
        vec![t.path("proj").as_path(), t.path("extra").as_path()]
    );
}

#[test]
fn resolve_workdir_cases() {
    let (t, ws) = fixture();
    assert_eq!(ws.resolve_workdir(None).unwrap(), t.path("proj"));
    assert_eq!(ws.resolve_workdir(Some("src")).unwrap(), t.path("proj/src"));
    assert_eq!(
        ws.resolve_workdir(Some("src/../src/.")).unwrap(),
        t.path("proj/src")
    );
    let extra = t.path("extra/data");
    assert_eq!(ws.resolve_workdir(extra.to_str()).unwrap(), extra);
    assert_eq!(
        ws.resolve_workdir(t.path("outside/link-in").to_str())
            .unwrap(),
        t.path("proj/src")
    );

    let err = ws.resolve_workdir(Some("/etc")).unwrap_err();
    assert!(matches!(err, BoundaryError::Outside { .. }));
    let msg = err.to_string();
    let expected = format!(
        "workdir /etc is outside the workspace; allowed: {}, {} (pass a directory inside one of \
         them, or omit workdir)",
        t.path("proj").display(),
        t.path("extra").display()
    );
    assert_eq!(msg, expected);

    let err = ws.resolve_workdir(Some("link-out")).unwrap_err();
    assert!(matches!(err, BoundaryError::Outside { .. }), "{err}");
    let err = ws.resolve_workdir(Some("../outside")).unwrap_err();
    assert!(matches!(err, BoundaryError::Outside { .. }), "{err}");

    let err = ws.resolve_workdir(Some("missing/dir")).unwrap_err();
    assert!(matches!(err, BoundaryError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");

    let err = ws.resolve_workdir(Some("file.txt")).unwrap_err();
    assert!(matches!(err, BoundaryError::NotADirectory { .. }), "{err}");
    assert!(err.to_string().contains("is not a directory"), "{err}");

    // Four distinct messages.
    let msgs = [
        ws.resolve_workdir(Some("/etc")).unwrap_err().to_string(),
        ws.resolve_workdir(Some("missing")).unwrap_err().to_string(),
        ws.resolve_workdir(Some("file.txt"))
            .unwrap_err()
            .to_string(),
        ws.resolve_workdir(Some("a\0b")).unwrap_err().to_string(),
    ];
    for (i, a) in msgs.iter().enumerate() {
        for b in msgs.iter().skip(i + 1) {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn roots_must_exist_and_be_directories() {
    let t = TempDir::new();
    std::fs::write(t.path("f"), "x").unwrap();
    assert!(matches!(
        Workspace::new(t.path("missing"), vec![]),
        Err(BoundaryError::RootMissing { .. })
    ));
    assert!(matches!(
        Workspace::new(t.path("f"), vec![]),
        Err(BoundaryError::RootNotADirectory { .. })
    ));
    assert!(matches!(
        Workspace::new(t.0.clone(), vec![t.path("missing")]),
        Err(BoundaryError::RootMissing {
            which: "extra root",
            ..
        })
    ));
    // A root given through a symlink is stored canonical.
    symlink(&t.0, t.path("alias")).unwrap();
    let ws = Workspace::new(t.path("alias"), vec![]).unwrap();
    assert_eq!(ws.root(), t.0);
}
