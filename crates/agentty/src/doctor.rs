//! `agentty doctor`: the *measured* state of this machine for agentty, not the configured one.
//!
//! Every line comes from something it tried: the Landlock ABI from the kernel, an actual
//! write that a read-only sandbox must refuse, a PTY actually opened, the sandbox line a session
//! would print, and the config file actually in effect.

use std::fmt::Write as _;

use anyhow::Result;

use crate::config::{self, Flags};

pub fn run(flags: &Flags) -> Result<String> {
    let mut out = String::new();
    writeln!(out, "agentty {}", env!("CARGO_PKG_VERSION"))?;
    match config::config_path(flags) {
        Some(path) => writeln!(out, "config file: {}", path.display())?,
        None => writeln!(out, "config file: none (defaults and flags only)")?,
    }
    let settings = config::resolve(flags)?;
    writeln!(out, "workspace: {}", settings.workspace.display())?;
    for dir in &settings.add_dirs {
        writeln!(out, "extra root: {}", dir.display())?;
    }
    writeln!(out, "shell: {}", settings.shell.display())?;
    writeln!(out, "spill files: {}", settings.spill_root.display())?;
    // The probe's report starts with the Landlock line.
    writeln!(out, "{}", agentty_sandbox::probe())?;
    writeln!(
        out,
        "{}",
        agentty_sandbox::notice::hardening_report(
            agentty_sandbox::landlock_abi(),
            &agentty_sandbox::private_terminals(),
            &terminal_each(),
            agentty_core::pty::sys::settings_lockable(),
            &agentty_sandbox::Supervisor::available(),
            &agentty_sandbox::daemon_sockets()
        )
    )?;
    writeln!(out, "{}", agentty_sandbox::notice::DENIAL_SOURCE)?;
    // What a session's commands would get: no confinement when the sandbox is off.
    let mode = if settings.sandbox_enabled {
        settings.mode
    } else {
        agentty_sandbox::Mode::Auto
    };
    let protected = settings.protected.clone();
    let max_processes = settings.max_processes;
    let session = agentty_server::Agentty::new(settings, "doctor".into())?;
    writeln!(out, "commands would run with: {}", session.sandbox_line())?;
    writeln!(out, "{}", session.network_report())?;
    writeln!(out, "{}", session.unreadable_report())?;
    writeln!(out, "pty: {}", pty_probe())?;
    writeln!(out, "{}", agentty_core::watchdog::describe())?;
    let namespace = agentty_core::namespace::available();
    writeln!(out, "{}", agentty_core::namespace::describe(&namespace))?;
    if mode == agentty_sandbox::Mode::Auto {
        writeln!(
            out,
            "confined commands' processes and threads: no bound (commands are not confined)"
        )?;
    } else {
        writeln!(
            out,
            "{}",
            agentty_core::namespace::describe_bounds(&namespace, max_processes)
        )?;
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let sources =
        agentty_sandbox::extracted_sources(home.as_deref(), |name| std::env::var_os(name));
    writeln!(
        out,
        "{}",
        agentty_sandbox::notice::sealed_sources_line(mode, &sources, &namespace)
    )?;
    writeln!(
        out,
        "{}",
        agentty_sandbox::notice::protected_report(mode, &protected, &namespace)
    )?;
    Ok(out)
}

/// Opens a pseudo-terminal pair and reports the slave's name, or why it failed.
fn pty_probe() -> String {
    // SAFETY: plain libc calls on a fd we own and close; ptsname's buffer is copied at once.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if fd < 0 {
            return format!("not available ({})", std::io::Error::last_os_error());
        }
        let result = if libc::grantpt(fd) == 0 && libc::unlockpt(fd) == 0 {
            let name = libc::ptsname(fd);
            if name.is_null() {
                "available".to_owned()
            } else {
                let name = std::ffi::CStr::from_ptr(name)
                    .to_string_lossy()
                    .into_owned();
                format!("available (opened {name})")
            }
        } else {
            format!("not usable ({})", std::io::Error::last_os_error())
        };
        libc::close(fd);
        result
    }
}

/// Whether each shell and `pty` command gets a terminal of its own here: `true` when it is its
/// `/dev/pts/0`, `false` when no path names it (made in a user namespace).
fn terminal_each() -> Result<bool, String> {
    #[cfg(target_os = "linux")]
    {
        agentty_core::spawn::own_terminals()
            .map(|own| own == agentty_core::spawn::OwnTerminals::Named)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("Linux only".to_owned())
    }
}
