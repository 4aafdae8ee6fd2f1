//! The tools some parser tests run that a machine, or a fresh clone, may lack: Go, clang,
//! cargo-nextest, the npm tools of `tests/parse-tools` and pytest in the workspace's venv. A test
//! that runs one is `#[ignore = "needs <tool>: …"]` and its name ends in `_needs_<tool>`, so a
//! plain `cargo test` shows it as skipped and `scripts/test` selects it by name where the tool is.
//! Run without its tool, such a test fails here on one line naming the tool and how to get it:
//! it never passes having checked nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Panics unless `argv` runs and exits 0. Each check is `#[track_caller]`: the failure points
/// at the test that needed the tool.
#[track_caller]
fn runs(tag: &str, argv: &[&str], how: &str) {
    let ran = Command::new(argv[0]).args(&argv[1..]).output();
    if !ran.is_ok_and(|out| out.status.success()) {
        panic!("{tag}: `{}` does not run here; {how}", argv.join(" "));
    }
}

#[track_caller]
pub fn go() {
    runs(
        "needs_go",
        &["go", "version"],
        "install Go (Debian: apt-get install golang-go)",
    );
}

#[track_caller]
pub fn clang() {
    runs(
        "needs_clang",
        &["clang", "--version"],
        "install clang (Debian: apt-get install clang)",
    );
}

#[track_caller]
pub fn nextest() {
    runs(
        "needs_nextest",
        &["cargo", "nextest", "--version"],
        "install it: cargo install --locked cargo-nextest",
    );
}

/// Not an ignored test's tool: clippy comes with rustup's default profile and the project lints
/// with it (`.ci/run`), so its test runs everywhere and says so where it is missing.
#[track_caller]
pub fn clippy() {
    runs(
        "clippy",
        &["cargo", "clippy", "--version"],
        "install it: rustup component add clippy",
    );
}

/// `node_modules` of the workspace's `tests/parse-tools` (tsc, eslint, jest, vitest).
#[track_caller]
pub fn node_tools() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/parse-tools/node_modules");
    for bin in ["tsc", "eslint", "jest", "vitest"] {
        assert!(
            dir.join(".bin").join(bin).exists(),
            "needs_node_tools: tests/parse-tools/node_modules/.bin/{bin} is missing; run `npm ci --prefix tests/parse-tools` in the workspace root"
        );
    }
    dir
}

/// The Python of the workspace's venv (`target/py-venv`, made by `scripts/test`), with pytest.
#[track_caller]
pub fn pytest() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py-venv/bin/python");
    let ran = Command::new(&python).args(["-c", "import pytest"]).output();
    assert!(
        ran.is_ok_and(|out| out.status.success()),
        "needs_pytest: target/py-venv has no pytest; run `python3 -m venv target/py-venv && target/py-venv/bin/pip install -r tests/python/requirements.txt` in the workspace root"
    );
    python
}
