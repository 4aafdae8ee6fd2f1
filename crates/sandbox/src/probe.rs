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

/// Listening unix sockets with a path this user may connect to (from `/proc/net/unix`): a
/// daemon behind one (tmux, docker, systemd, D-Bus, ssh-agent, a `tmux -S <any path>`) may run
/// commands or act for its caller, and a command in `default` mode can connect to it, since
/// Landlock below ABI 9 cannot refuse that (`plan` mode refuses new unix sockets). Listed by
/// `doctor`, whatever their path: a known list missed `tmux -S /any/path`.
pub fn daemon_sockets() -> Vec<std::path::PathBuf> {
    let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let mut found: Vec<std::path::PathBuf> = listening_paths(&table)
        .into_iter()
        .filter(|path| connectable(path))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The paths of the listening sockets in `/proc/net/unix`'s text (abstract ones, `@name`, are
/// scoped by Landlock and not listed).
fn listening_paths(table: &str) -> Vec<std::path::PathBuf> {
    /// `__SO_ACCEPTCON`: the socket listens.
    const ACCEPTS: u32 = 0x0001_0000;
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            // Num RefCount Protocol Flags Type St Inode Path
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = u32::from_str_radix(fields.get(3)?, 16).ok()?;
            let path = fields.get(7)?;
            (flags & ACCEPTS != 0 && path.starts_with('/')).then(|| std::path::PathBuf::from(path))
        })
        .collect()
}

/// Whether this user may connect to the socket at `path` (write permission on it).
fn connectable(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;
    if !std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        return false;
    }
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access reads a NUL-terminated path and checks it against the caller's ids.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
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

#[cfg(test)]
mod socket_tests {
    use super::*;

    #[test]
    fn listening_path_sockets_are_read_from_proc_net_unix() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 1001 /tmp/any/path/tmux.sock\n\
            0000000000000000: 00000002 00000000 00000000 0001 03 1002 /run/connected.sock\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 1003 @abstract\n\
            0000000000000000: 00000002 00000000 00010000 0005 01 1004\n";
        assert_eq!(
            listening_paths(table),
            vec![std::path::PathBuf::from("/tmp/any/path/tmux.sock")]
        );
    }

    /// A daemon listening at a path nobody guessed (`tmux -S <any path>`) is found.
    #[test]
    fn a_socket_at_any_path_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my-tmux-socket");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(daemon_sockets().contains(&path), "{:?}", daemon_sockets());
    }
}
