//! Spill files on a real filesystem: private, exclusive, and no disk kept past their end.

use std::os::unix::fs::MetadataExt;

use agentty_core::SpillStore;

/// Bytes the filesystem has allocated to `path` (st_blocks is in 512-byte units).
fn allocated(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn a_finished_spill_keeps_only_its_own_size_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = SpillStore::new(dir.path(), "session");
    let mut file = store.create("c1").unwrap();
    let path = file.path().to_owned();
    let line = "a line of build output\n".repeat(1000);
    file.write(&line).unwrap();
    file.flush().unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(
        meta.len(),
        line.len() as u64,
        "the size is what was written"
    );
    assert_eq!(meta.mode() & 0o777, 0o600);
    // The reservation (1 MiB at least) is given back on flush; the margin leaves room for a
    // filesystem's own small preallocation.
    assert!(
        allocated(&path) < 256 * 1024,
        "{} bytes kept",
        allocated(&path)
    );

    for _ in 0..200 {
        file.write(&line).unwrap();
    }
    let path = file.finish().unwrap();
    let expected = line.len() as u64 * 201;
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().len() as u64,
        expected
    );
    assert!(
        allocated(&path) < expected + 256 * 1024,
        "{} bytes kept",
        allocated(&path)
    );
    assert!(store.create("c1").is_err(), "exclusive create");
}

#[test]
fn a_dropped_spill_gives_back_its_reservation_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = SpillStore::new(dir.path(), "session");
    let mut file = store.create("t1").unwrap();
    let path = file.path().to_owned();
    file.write("short\n").unwrap();
    drop(file);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "short\n");
    assert!(
        allocated(&path) < 256 * 1024,
        "{} bytes kept",
        allocated(&path)
    );
}

/// The server writes spill files unconfined, where a confined command may be able to write (a
/// state dir under /tmp). Swapping the session directory for a symlink, after the first spill
/// or before it, never makes the server write outside, and session cleanup never follows it.
#[test]
fn a_spill_directory_swapped_for_a_symlink_is_never_followed() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("spill");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let written_outside = || std::fs::read_dir(&outside).unwrap().count();

    // After the first spill: the directory is held open; the swap changes nothing.
    let store = SpillStore::new(&root, "session");
    drop(store.create("c1").unwrap());
    let session = root.join("session");
    std::fs::rename(&session, base.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, &session).unwrap();
    let mut file = store.create("c2").unwrap();
    file.write("output\n").unwrap();
    drop(file);
    assert_eq!(written_outside(), 0, "the spill went through the symlink");
    assert!(base.path().join("moved/c2.log").exists());
    assert!(store.remove().is_err(), "cleanup followed the swapped path");
    assert!(outside.exists());

    // Before the first spill: refused, nothing written.
    let other = SpillStore::new(&root, "other");
    std::os::unix::fs::symlink(&outside, root.join("other")).unwrap();
    let err = other.create("c1").unwrap_err();
    assert_eq!(written_outside(), 0, "the spill went through the symlink");
    assert!(
        err.to_string().contains("symlink") || err.to_string().contains("not a directory"),
        "{err}"
    );
}
