//! Claims of the README that had no test, each checked through the real binary.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::json;

use super::client::*;

fn agentty(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A line of `doctor`'s output that starts with `prefix`.
fn doctor_line(out: &Output, prefix: &str) -> String {
    let text = stdout(out);
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{text}\n{}", stderr(out)))
        .to_owned()
}

#[test]
fn help_and_version() {
    let out = agentty(&["--help"], &[]);
    assert!(out.status.success());
    for sub in ["serve", "doctor", "guard"] {
        assert!(stdout(&out).contains(sub), "{}", stdout(&out));
    }
    let out = agentty(&["--version"], &[]);
    assert_eq!(
        stdout(&out).trim(),
        format!("agentty {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn the_guard_command_judges_without_running_and_exits_1_when_blocked() {
    let out = agentty(&["guard", "--", "rm -rf /"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("BLOCKED by rule `rm-root`"),
        "{}",
        stdout(&out)
    );
    let out = agentty(&["guard", "--", "ls -la"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = agentty(&["guard", "--rules"], &[]);
    assert!(stdout(&out).contains("too-deep"), "{}", stdout(&out));
}

/// `--allow-rule` and `[guard] allow` switch a rule off; an unknown rule name or config key is
/// an error that names it; a flag wins over the file.
#[test]
fn guard_allow_config_rules_and_flags_over_file() {
    let dir = tempfile::tempdir().unwrap();
    let line = "mkfs.ext4 /dev/agentty-nonexistent-disk";
    let out = agentty(&["guard", "--allow-rule", "format-disk", "--", line], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let config = dir.path().join("agentty.toml");
    std::fs::write(&config, "[guard]\nallow = [\"format-disk\"]\n").unwrap();
    let c = config.to_str().unwrap();
    let out = agentty(&["guard", "--config", c, "--", line], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let out = agentty(&["guard", "--allow-rule", "no-such-rule", "--", "ls"], &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no-such-rule"), "{}", stderr(&out));
    std::fs::write(&config, "mdoe = \"plan\"\n").unwrap();
    let out = agentty(&["doctor", "--config", c], &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("mdoe"), "{}", stderr(&out));
    // The file says plan, the flag says auto: the flag wins.
    std::fs::write(&config, "mode = \"plan\"\n").unwrap();
    let ws = dir.path().to_str().unwrap();
    let out = agentty(&["doctor", "--config", c, "--workspace", ws], &[]);
    assert!(doctor_line(&out, "commands would run with: ").contains("read-only"));
    let out = agentty(
        &["doctor", "--config", c, "--workspace", ws, "--mode", "auto"],
        &[],
    );
    let l = doctor_line(&out, "commands would run with: ");
    assert!(!l.contains("read-only") && !l.contains("enforced"), "{l}");
}

/// Without `--state-dir`, spill files go under `$XDG_STATE_HOME/agentty`, else
/// `~/.local/state/agentty`; the config file is found under `$XDG_CONFIG_HOME/agentty`.
#[test]
fn state_and_config_follow_xdg() {
    // Not in a temp dir: a state dir there is refused (commands may write it).
    let dir = agentty_testkit::state_dir();
    let (state, config) = (dir.path().join("state"), dir.path().join("config"));
    std::fs::create_dir_all(config.join("agentty")).unwrap();
    std::fs::write(config.join("agentty/config.toml"), "mode = \"plan\"\n").unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.to_str().unwrap();
    let env = [
        ("XDG_STATE_HOME", state.as_path()),
        ("XDG_CONFIG_HOME", config.as_path()),
    ];
    let out = agentty(&["doctor", "--workspace", ws], &env);
    let spill = doctor_line(&out, "spill files: ");
    assert_eq!(spill, state.join("agentty/spill").display().to_string());
    assert!(doctor_line(&out, "config file: ").ends_with("agentty/config.toml"));
    assert!(doctor_line(&out, "commands would run with: ").contains("read-only"));
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.args(["doctor", "--workspace", ws])
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", &home);
    let out = cmd.output().unwrap();
    let spill = doctor_line(&out, "spill files: ");
    assert_eq!(
        spill,
        home.join(".local/state/agentty/spill")
            .display()
            .to_string()
    );
    // A host that starts servers without HOME: the home of the password database, not a temp
    // dir (which a confining server refuses).
    let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["doctor", "--workspace", ws])
        .env_remove("XDG_STATE_HOME")
        .env_remove("HOME")
        .output()
        .unwrap();
    let spill = doctor_line(&out, "spill files: ");
    assert!(spill.ends_with("/.local/state/agentty/spill"), "{spill}");
    assert!(!spill.starts_with("/tmp"), "{spill}");
}

#[tokio::test]
async fn no_network_and_auto_mode_through_the_binary() {
    let server = start_with(&["--no-network"]).await;
    let (text, s) = server
        .terminal(json!({"argv": ["bash", "-c", "echo > /dev/tcp/127.0.0.1/1"]}))
        .await;
    assert!(text.contains("Permission denied"), "{text}");
    assert!(
        s["sandbox"].as_str().unwrap().contains("network off"),
        "{s}"
    );

    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("written");
    let server = start_with(&["--mode", "auto"]).await;
    let (text, s) = server
        .terminal(json!({"command": format!("echo x > {}", target.display())}))
        .await;
    assert_eq!(s["status"], "success", "{text}");
    assert!(target.exists());
    assert!(
        s["sandbox"].as_str().unwrap().contains("not confined"),
        "{s}"
    );
}

/// The environment that keeps commands from waiting on a person.
#[tokio::test]
async fn commands_get_pager_editor_and_prompt_defaults() {
    let server = start().await;
    let (_, s) = server
        .terminal(json!({"command": "echo $PAGER $GIT_PAGER $GIT_EDITOR $GIT_TERMINAL_PROMPT"}))
        .await;
    assert_eq!(s["stdout"], "cat cat true 0\n", "{s}");
    let (_, s) = server
        .terminal(json!({"command": "echo $GIT_EDITOR", "env": {"GIT_EDITOR": "vi"}}))
        .await;
    assert_eq!(s["stdout"], "vi\n", "an override wins: {s}");
}

#[tokio::test]
async fn signal_and_duration_fields() {
    let server = start().await;
    let (text, s) = server.terminal(json!({"command": "kill -TERM $$"})).await;
    assert_eq!(s["signal"], "SIGTERM", "{text}");
    assert!(s["exit_code"].is_null(), "{s}");
    assert_eq!(s["status"], "failed", "{s}");
    let (_, s) = server.terminal(json!({"command": "sleep 0.3"})).await;
    let ms = s["duration_ms"].as_u64().unwrap();
    assert!(ms >= 300, "{s}");
}

/// Shells without prompt markers (here Python's REPL as the shell) fall back to output going
/// quiet; `sh`/dash report exit codes.
#[tokio::test]
async fn other_shells_fall_back() {
    let server = start_with(&["--shell", "/bin/sh"]).await;
    let id = server.open_shell().await;
    let (text, s) = server.shell_send(&id, "false\n").await;
    assert_eq!(s["exit_code"], 1, "{text} {s}");
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let server = start_with(&["--shell", python]).await;
    let id = server.open_shell().await;
    let (text, s) = server.shell_send(&id, "print(6 * 7)\n").await;
    assert!(text.contains("42"), "{text} {s}");
    assert!(s["exit_code"].is_null(), "{s}");
}

/// SIGINT, SIGHUP and SIGTERM end the server, and every job with it; stdin EOF too, and the
/// session's spill directory is removed at its end.
#[tokio::test]
async fn every_ending_stops_the_jobs_and_removes_the_spill_dir() {
    for signal in [
        Some(libc::SIGINT),
        Some(libc::SIGHUP),
        Some(libc::SIGTERM),
        None,
    ] {
        let server = start().await;
        let arg = format!("3600.{}{}", std::process::id(), signal.unwrap_or(0));
        server
            .background(json!({"command": format!("sleep {arg}")}))
            .await;
        let (_, s) = server.terminal(json!({"command": "seq 1 300000"})).await;
        let spill = std::path::PathBuf::from(s["spill_path"].as_str().unwrap());
        assert!(spill.exists());
        let server_pid = server.pid;
        match signal {
            Some(sig) => {
                // SAFETY: kill takes a pid and a signal number.
                unsafe { libc::kill(server_pid, sig) };
            }
            None => {
                let Server { client, .. } = server;
                let _ = client.cancel().await; // closes its stdin
                wait_gone(server_pid).await;
                assert_eq!(
                    processes_with_arg(&arg),
                    Vec::<i32>::new(),
                    "EOF: job survived"
                );
                assert!(!spill.exists(), "EOF: spill dir left behind");
                continue;
            }
        }
        wait_gone(server_pid).await;
        assert_eq!(
            processes_with_arg(&arg),
            Vec::<i32>::new(),
            "{signal:?}: job survived"
        );
        assert!(!spill.exists(), "{signal:?}: spill dir left behind");
    }
}

/// Session spill directories untouched for more than 7 days are removed when a server starts.
#[tokio::test]
async fn old_spill_directories_are_pruned_at_start() {
    let state = agentty_testkit::state_dir();
    let spill = state.path().join("spill");
    let _ = &spill;
    let (old, recent) = (spill.join("old-session"), spill.join("recent-session"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&recent).unwrap();
    std::fs::write(old.join("c1.log"), "x").unwrap();
    let eight_days = std::time::SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
    std::fs::File::open(&old)
        .unwrap()
        .set_modified(eight_days)
        .unwrap();
    let server = start_in(state, &[]).await;
    server.terminal(json!({"command": "true"})).await;
    assert!(!old.exists(), "an 8-day-old spill dir was kept");
    assert!(recent.exists(), "a recent spill dir was removed");
}

async fn wait_gone(pid: i32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    // SAFETY: kill with signal 0 only checks.
    while unsafe { libc::kill(pid, 0) } == 0 && tokio::time::Instant::now() < deadline {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rfind(')')
            .is_some_and(|i| stat[i + 2..].starts_with('Z'))
        {
            return; // exited; our client reaps it
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A sandbox that cannot start is error 2009 and the command does not run. Made real here: the
/// server is started inside 16 nested Landlock domains (the kernel's limit), each allowing every
/// write, so it runs normally but cannot add the domain of its own sandbox.
#[tokio::test]
async fn a_sandbox_that_cannot_start_is_2009_and_nothing_runs() {
    let workspace = tempfile::tempdir().unwrap();
    let state = agentty_testkit::state_dir();
    let ruleset = allow_all_ruleset();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state.path());
    // SAFETY: prctl and landlock_restrict_self are plain syscalls on a prepared fd.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for _ in 0..16 {
                if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let client = rmcp::ServiceExt::serve((), transport).await.unwrap();
    let marker = workspace.path().join("ran");
    let args = json!({"command": format!("touch {}", marker.display())});
    let serde_json::Value::Object(args) = args else {
        unreachable!()
    };
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("terminal").with_arguments(args))
        .await
        .unwrap();
    let text = text_of(&result);
    assert_eq!(result.is_error, Some(true), "{text}");
    assert!(
        text.contains("[error 2009]") && text.contains("did not run"),
        "{text}"
    );
    assert!(!marker.exists(), "the command ran");
    let _ = client.cancel().await;
}

/// A Landlock ruleset that handles file writes and allows them under `/`: a domain that
/// changes nothing but counts toward the 16-layer limit.
fn allow_all_ruleset() -> i32 {
    const WRITE_FILE: u64 = 1 << 1;
    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
    }
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    let attr = RulesetAttr {
        handled_access_fs: WRITE_FILE,
    };
    // SAFETY: the syscalls read the structs given, of the sizes given.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            size_of::<RulesetAttr>(),
            0u32,
        ) as i32;
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        let root = libc::open(c"/".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        let rule = PathBeneath {
            allowed_access: WRITE_FILE,
            parent_fd: root,
        };
        let rc = libc::syscall(libc::SYS_landlock_add_rule, fd, 1u32, &raw const rule, 0u32);
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        fd
    }
}
