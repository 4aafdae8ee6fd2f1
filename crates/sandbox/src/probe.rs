//! The `doctor` probe: measures the sandbox instead of trusting the configuration.
//!
//! It asks the kernel for its Landlock ABI, then runs a real `/bin/sh` under a read-only plan and
//! tries to write a file in a fresh temp directory. Only a refused write with the file absent
//! afterwards counts as "refused"; anything else is reported as it is.

/// What `probe` measured. `Display` (in `notice.rs`) prints a few human lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    /// The kernel's Landlock ABI, `None` when it offers none (or on other platforms).
    pub landlock_abi: Option<u32>,
    pub outcome: ProbeOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The write failed and the file does not exist. `exit_code` is `None` if killed by a signal;
    /// `message` is the shell's first stderr line.
    Refused {
        exit_code: Option<i32>,
        message: String,
    },
    /// The write succeeded: commands are not confined.
    NotRefused,
    /// Nothing to probe (no backend here).
    Skipped(String),
    /// The probe itself could not run (temp dir, prepare or spawn failed).
    Failed(String),
}

/// Unix sockets of daemons that may run commands or act for a caller (tmux, docker, systemd,
/// D-Bus, ssh-agent, podman, containerd) found on this machine: a command in `default` mode can
/// connect to them, and Landlock below ABI 9 cannot refuse that (`plan` mode refuses new unix
/// sockets). Listed by `doctor`.
pub fn daemon_sockets() -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    use std::path::PathBuf;

    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map_or_else(|| PathBuf::from(format!("/run/user/{uid}")), PathBuf::from);
    let mut candidates: Vec<PathBuf> = [
        "/run/docker.sock",
        "/var/run/docker.sock",
        "/run/containerd/containerd.sock",
        "/run/podman/podman.sock",
        "/run/dbus/system_bus_socket",
        "/run/systemd/private",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    candidates.extend(
        [
            "bus",
            "systemd/private",
            "podman/podman.sock",
            "docker.sock",
        ]
        .map(|r| runtime.join(r)),
    );
    candidates.extend(std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from));
    for dir in [format!("/tmp/tmux-{uid}"), format!("/run/screen/S-{uid}")] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            candidates.extend(entries.flatten().map(|e| e.path()));
        }
    }
    candidates.retain(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_socket()));
    candidates.dedup();
    candidates
}

/// Runs the probe: one short-lived `/bin/sh` process.
pub fn probe() -> ProbeReport {
    #[cfg(target_os = "linux")]
    {
        ProbeReport {
            landlock_abi: crate::landlock::kernel_abi(),
            outcome: denied_write_probe(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        ProbeReport {
            landlock_abi: None,
            outcome: ProbeOutcome::Skipped("no denied-write probe on this platform yet".to_owned()),
        }
    }
}

#[cfg(target_os = "linux")]
fn denied_write_probe() -> ProbeOutcome {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    use crate::mode::{Mode, Policy};

    let plan = crate::Plan::with_context(&Policy::new(Mode::Plan, Vec::new()), &Default::default());
    if !plan.confines() {
        return ProbeOutcome::Skipped(plan.enforcement().line());
    }
    let prepared = match plan.prepare() {
        Ok(p) => p,
        Err(e) => return ProbeOutcome::Failed(e.to_string()),
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("agentty-probe-{}-{nanos}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&dir) {
        return ProbeOutcome::Failed(format!("cannot create {}: {e}", dir.display()));
    }
    let file = dir.join("probe");
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", "echo x > \"$1\"", "sh"]).arg(&file);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: apply_in_child only makes raw syscalls on data prepared above.
    unsafe { cmd.pre_exec(move || prepared.apply_in_child()) };
    let result = cmd.output();
    let written = file.exists();
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Err(e) => ProbeOutcome::Failed(format!("cannot run /bin/sh: {e}")),
        Ok(_) if written => ProbeOutcome::NotRefused,
        Ok(out) if out.status.success() => ProbeOutcome::NotRefused,
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let message = stderr.lines().next().unwrap_or("").trim().to_owned();
            ProbeOutcome::Refused {
                exit_code: out.status.code(),
                message,
            }
        }
    }
}
