//! Fixture: a private base directory with a workspace, an "outside" dir, a fake home and a temp
//! dir, and a host context that makes only the plan's own paths writable. The base may sit under
//! /tmp because the context does not list /tmp as a temp dir.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use agentty_sandbox::{HostContext, Mode, Plan, Policy, Prepared};

pub struct Fixture {
    _base: tempfile::TempDir,
    pub ws: PathBuf,
    pub outside: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        assert!(
            agentty_sandbox::landlock_abi().is_some(),
            "these tests need a kernel with Landlock"
        );
        let base = tempfile::tempdir().unwrap();
        let root = base.path().canonicalize().unwrap();
        let f = Fixture {
            ws: root.join("ws"),
            outside: root.join("outside"),
            home: root.join("home"),
            tmp: root.join("tmp"),
            _base: base,
        };
        for d in [&f.ws, &f.outside, &f.home.join(".cargo/registry"), &f.tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        f
    }

    pub fn ctx(&self) -> HostContext {
        HostContext {
            home: Some(self.home.clone()),
            temp_dirs: vec![self.tmp.clone()],
            vars: vec![],
            installed: vec![],
        }
    }

    pub fn plan(&self, mode: Mode, roots: Vec<PathBuf>) -> Plan {
        Plan::with_context(&Policy::new(mode, roots), &self.ctx())
    }

    pub fn prepared(&self, mode: Mode) -> Arc<Prepared> {
        Arc::new(self.plan(mode, vec![self.ws.clone()]).prepare().unwrap())
    }
}

/// Runs `sh -c script` confined by `prepared`, in `cwd`, with `HOME` set to `home`.
pub fn sh(prepared: &Arc<Prepared>, cwd: &Path, home: &Path, script: &str) -> Output {
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", script])
        .current_dir(cwd)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1");
    cmd.stdin(Stdio::null());
    confine(&mut cmd, prepared);
    cmd.output().unwrap()
}

pub fn confine(cmd: &mut Command, prepared: &Arc<Prepared>) {
    let p = Arc::clone(prepared);
    // SAFETY: apply_in_child makes only raw syscalls on data prepared before the fork.
    unsafe { cmd.pre_exec(move || p.apply_in_child()) };
}

/// Asserts the script failed; returns its stderr for further checks.
#[track_caller]
pub fn refused(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "expected a refusal, got success; stderr: {stderr}"
    );
    stderr
}

#[track_caller]
pub fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "expected success: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Unsandboxed shell, for fixtures.
pub fn setup(cwd: &Path, script: &str) {
    let out = Command::new("/bin/sh")
        .args(["-c", script])
        .current_dir(cwd)
        .output()
        .unwrap();
    ok(&out);
}
