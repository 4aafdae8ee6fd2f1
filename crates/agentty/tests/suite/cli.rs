//! The command line outside `serve`: what `agentty doctor` reports about the environment.

use std::process::Command;

/// The login shell of the current user, read straight from `/etc/passwd`.
fn login_shell() -> String {
    let uid = unsafe { libc::getuid() }.to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.len() == 7 && fields[2] == uid)
        .map(|fields| fields[6].to_owned())
        .expect("current user in /etc/passwd")
}

fn doctor_shell(shell_var: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("doctor").env_remove("SHELL");
    if let Some(value) = shell_var {
        cmd.env("SHELL", value);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("shell: "))
        .unwrap_or_else(|| panic!("no shell line in doctor output:\n{text}"))
        .to_owned()
}

#[test]
fn shell_comes_from_shell_var_then_login_shell() {
    // MCP hosts often start servers without $SHELL; the login shell stands in, as in a terminal.
    assert_eq!(doctor_shell(None), login_shell());
    assert_eq!(doctor_shell(Some("/no/such/shell")), login_shell());
    assert_eq!(doctor_shell(Some("relative-sh")), login_shell());
    assert_eq!(doctor_shell(Some("/bin/sh")), "/bin/sh");
}

/// A service account's login shell (`nologin`, `false`) is executable but refuses every command;
/// started without `$SHELL` as such a user, the server falls back to `/bin/sh` rather than
/// answering every call with "This account is currently not available".
#[test]
fn a_login_shell_that_refuses_logins_is_passed_over() {
    let nobody = std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("nobody:"))
        .map(str::to_owned)
        .expect("a nobody account");
    assert!(
        nobody.ends_with("nologin") || nobody.ends_with("false"),
        "nobody has a real login shell here: {nobody}"
    );
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_agentty"))
        .args(["doctor", "--workspace", "/"])
        .env_remove("SHELL")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let shell = text.lines().find_map(|l| l.strip_prefix("shell: "));
    assert_eq!(shell, Some("/bin/sh"), "doctor output:\n{text}");
}

/// A workspace that is `/` or the home directory confines nothing worth having; the sandbox
/// line every result carries says so rather than just "enforced".
#[test]
fn a_workspace_that_covers_the_system_is_called_out() {
    // Not a temp dir: the default state dir in it would be refused (commands may write there).
    let home = agentty_testkit::state_dir();
    let project = home.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let line = |workspace: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .arg("doctor")
            .arg("--workspace")
            .arg(workspace)
            .env("HOME", home.path())
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("commands would run with: "))
            .unwrap_or_else(|| panic!("no sandbox line in doctor output:\n{text}"))
            .to_owned()
    };
    for broad in [std::path::Path::new("/"), home.path()] {
        let l = line(broad);
        assert!(l.contains("so writes are allowed almost everywhere"), "{l}");
    }
    let l = line(&project);
    assert!(!l.contains("almost everywhere"), "{l}");
}

/// A linked worktree's git dirs (outside the workspace) are writable so commits work: the
/// sandbox line names them; a planted `.git` file adds nothing and the line says nothing.
#[test]
fn the_sandbox_line_names_git_dirs_added_outside_the_workspace() {
    // Not under a temp dir, which is writable anyway (a git dir there would not need adding):
    // the target dir unless the checkout itself lives under /tmp, else the home directory.
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let under_temp = agentty_sandbox::HostContext::from_env()
        .temp_dirs
        .iter()
        .filter_map(|t| t.canonicalize().ok())
        .any(|t| target.canonicalize().unwrap().starts_with(t));
    let home = std::env::var_os("HOME").expect("HOME is set");
    let base = tempfile::tempdir_in(if under_temp { home.as_ref() } else { target }).unwrap();
    let base = base.path().canonicalize().unwrap();
    let (repo, wt, fake) = (base.join("repo"), base.join("wt"), base.join("fake"));
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&fake).unwrap();
    let git = "git -c user.name=a -c user.email=a@example.invalid -c init.defaultBranch=main";
    let script = format!(
        "set -e; {git} init -q; echo a > a; {git} add a; {git} commit -qm base; \
         {git} worktree add -q '{}' -b feature",
        wt.display()
    );
    let status = Command::new("sh")
        .args(["-c", &script])
        .current_dir(&repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(fake.join(".git"), format!("gitdir: {}\n", base.display())).unwrap();
    let line = |workspace: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .arg("doctor")
            .arg("--workspace")
            .arg(workspace)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("commands would run with: "))
            .unwrap_or_else(|| panic!("no sandbox line in doctor output:\n{text}"))
            .to_owned()
    };
    let l = line(&wt);
    let common = repo.join(".git");
    assert!(l.contains("also writable, for git commits"), "{l}");
    assert!(l.contains(&common.display().to_string()), "{l}");
    let l = line(&fake);
    assert!(!l.contains("for git commits"), "{l}");
}

/// A state dir that commands may write (inside the workspace or an extra root, directly or
/// through a symlink, or in a temp dir) is refused at start: the server trusts what it finds
/// there.
#[test]
fn a_state_dir_commands_may_write_is_refused() {
    let base = agentty_testkit::state_dir();
    let base = base.path().canonicalize().unwrap();
    let temp = tempfile::tempdir().unwrap();
    let (ws, extra) = (base.join("ws"), base.join("extra"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&extra).unwrap();
    std::os::unix::fs::symlink(&ws, base.join("link")).unwrap();
    for state in [
        ws.join(".agentty"),
        extra.join("state"),
        base.join("link/state"),
        temp.path().join("state"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(["doctor", "--workspace"])
            .arg(&ws)
            .arg("--add-dir")
            .arg(&extra)
            .arg("--state-dir")
            .arg(&state)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: accepted", state.display());
        assert!(err.contains("which commands may write"), "{err}");
    }
    assert_ran(
        Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(["doctor", "--workspace"])
            .arg(&ws)
            .arg("--state-dir")
            .arg(base.join("state")),
    );
}

/// Runs `command` to its end and asserts it succeeded, saying its stderr if not.
fn assert_ran(command: &mut Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `--token-file` that commands may write (in a temp dir, or reached through a symlink there)
/// is refused at start: a command that rewrote it would hold the next start's token.
#[test]
fn a_token_file_commands_may_write_is_refused() {
    let (workspace, state, temp) = (
        tempfile::tempdir().unwrap(),
        agentty_testkit::state_dir(),
        tempfile::tempdir().unwrap(),
    );
    let private = state.path().join("token");
    let in_temp = temp.path().join("token");
    for file in [&private, &in_temp] {
        std::fs::write(file, format!("{}\n", "ab".repeat(32))).unwrap();
        std::fs::set_permissions(file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
    }
    let link = temp.path().join("link");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    // The link also as a bare name from its directory (review 40 L6: its directory was empty,
    // so the link itself was never judged).
    let bare = std::path::PathBuf::from("link");
    for (given, cwd) in [
        (&in_temp, std::env::current_dir().unwrap()),
        (&link, std::env::current_dir().unwrap()),
        (&bare, temp.path().to_path_buf()),
    ] {
        let mut server = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .current_dir(&cwd)
            .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
            .arg(workspace.path())
            .arg("--state-dir")
            .arg(state.path())
            .arg("--token-file")
            .arg(given)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A refusal ends the start at once; a server that accepted serves until killed.
        let started = std::time::Instant::now();
        while server.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(20) {
                server.kill().unwrap();
                server.wait().unwrap();
                panic!("{}: accepted", given.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = server.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("which commands may write"), "{err}");
    }
}

/// Relative paths in a config file are relative to the file, wherever the server starts.
#[test]
fn config_paths_are_relative_to_the_config_file() {
    // Not a temp dir: the state dir in it would be refused (commands may write there).
    let dir = agentty_testkit::state_dir();
    let dir_path = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(dir_path.join("ws")).unwrap();
    std::fs::create_dir_all(dir_path.join("extra")).unwrap();
    let config = dir_path.join("agentty.toml");
    std::fs::write(
        &config,
        "workspace = \"ws\"\nadd_dirs = [\"extra\"]\nstate_dir = \"state\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .arg("doctor")
        .arg("--config")
        .arg(&config)
        .current_dir("/")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains(&format!("workspace: {}", dir_path.join("ws").display())),
        "{text}{stderr}"
    );
    assert!(
        text.contains(&format!("extra root: {}", dir_path.join("extra").display())),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "spill files: {}",
            dir_path.join("state/spill").display()
        )),
        "{text}"
    );
}

/// `doctor` says which protections beyond writes are in force on this machine.
#[test]
fn doctor_says_which_protections_beyond_writes_are_in_force() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let scoped = agentty_sandbox::landlock_abi().is_some_and(|abi| abi >= 6);
    let wanted = if scoped {
        "signals and abstract unix sockets: scoped to the command's own tree"
    } else {
        "signals and abstract unix sockets: NOT scoped"
    };
    assert!(text.contains(wanted), "{text}");
    assert!(
        text.contains("refused by seccomp: TIOCSTI/TIOCLINUX/TIOCSETD"),
        "{text}"
    );
    assert!(
        text.contains("listening unix sockets a confined command could connect to"),
        "{text}"
    );
}

/// `serve` typed by hand in a terminal says what it is and how to check the machine, instead of
/// looking hung; started by a host (stdin a pipe), it says nothing of the kind.
#[test]
fn serve_in_a_terminal_says_it_waits_for_a_client() {
    use std::io::{BufRead, BufReader};
    use std::os::fd::FromRawFd;
    let workspace = tempfile::tempdir().unwrap();
    let state = agentty_testkit::state_dir();
    let serve = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
        cmd.args(["serve", "--workspace"])
            .arg(workspace.path())
            .arg("--state-dir")
            .arg(state.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        cmd
    };
    // SAFETY: plain libc calls; the slave fd is handed to a File that owns it.
    let (master, slave) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0);
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let name = libc::ptsname(master);
        let slave = libc::open(name, libc::O_RDWR | libc::O_NOCTTY);
        assert!(slave >= 0);
        (master, std::fs::File::from_raw_fd(slave))
    };
    let mut child = serve().stdin(slave).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        let _ = BufReader::new(stderr).read_line(&mut first);
        let _ = tx.send(first);
    });
    // A hang guard only: the line is printed before the server does anything else.
    let first = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_default();
    // SAFETY: kill takes a pid and a signal number; close takes the fd we opened.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
        libc::close(master);
    }
    child.wait().unwrap();
    assert!(
        first.contains("waiting for an MCP client on stdin") && first.contains("agentty doctor"),
        "{first}"
    );
    let piped = serve().stdin(std::process::Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&piped.stderr);
    assert!(!said.contains("waiting for an MCP client"), "{said}");
}

#[test]
fn a_reader_that_stops_early_is_no_crash() {
    // `agentty guard --rules | head -1`: the pipe is closed before the report is written.
    let cases: &[&[&str]] = &[
        &["guard", "--rules"],
        &["guard", "--", "rm -rf /"],
        &["doctor"],
        &["parse", "--schema", "list"],
    ];
    for args in cases {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(*args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        assert!(out.status.code().is_some(), "{args:?}: killed by a signal");
    }
}

/// `deny_read` (the config file's, `~/` meaning home, and the flag's) is stated on the sandbox
/// line and by `doctor`; a path that cannot be kept from reads, because commands may write
/// around it (in the workspace, a temp dir) or it holds the workspace, is refused at start.
#[test]
fn deny_read_is_stated_and_what_cannot_be_hidden_is_refused() {
    let home = agentty_testkit::state_dir();
    let workspace = home.path().join("project");
    std::fs::create_dir(&workspace).unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "[sandbox]\ndeny_read = [\"~/.aws\"]\n").unwrap();
    let doctor = |extra: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_agentty"))
            .arg("doctor")
            .arg("--workspace")
            .arg(&workspace)
            .arg("--config")
            .arg(&config)
            .args(extra)
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    let out = doctor(&["--deny-read".as_ref(), "/etc/ssh".as_ref()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("; unreadable: agentty's keys and state, ~/.aws, /etc/ssh"),
        "{text}"
    );
    let aws = home.path().join(".aws").display().to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with("kept from reads by confined commands") && l.contains(&aws)),
        "{text}"
    );
    let inside = workspace.join(".env");
    for (given, why) in [
        (inside.as_os_str(), "which commands may write"),
        ("/tmp/agentty-secret".as_ref(), "which commands may write"),
        (home.path().as_os_str(), "holds the root"),
    ] {
        let out = doctor(&["--deny-read".as_ref(), given]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{given:?}: accepted");
        assert!(
            err.contains("sandbox.deny_read") && err.contains(why),
            "{err}"
        );
    }
}

/// A token file with a second name (a hard link made by an unconfined command, in a place
/// confined commands may read) is refused at start: the read rules judge paths, and the other
/// name reaches the same file.
#[test]
fn a_token_file_with_another_name_is_refused() {
    let (workspace, state) = (tempfile::tempdir().unwrap(), agentty_testkit::state_dir());
    let token = state.path().join("token");
    std::fs::write(&token, format!("{}\n", "ab".repeat(32))).unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::hard_link(&token, workspace.path().join("copy")).unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state.path())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A refusal ends the start at once; a server that accepted serves until killed.
    let started = std::time::Instant::now();
    while server.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(20) {
            server.kill().unwrap();
            server.wait().unwrap();
            panic!("a token file with two names was accepted");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = server.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("2 names (hard links)"), "{err}");
}

/// `agentty guard` judges a line as a `terminal` call would, with its own environment standing
/// for the server's: the same verdict, the same rule. Every call here also asks for
/// `pty` with `background`, which is refused right after the guard's verdict: a line the guard
/// allows is refused for that instead, so nothing runs.
#[tokio::test]
async fn the_cli_and_a_call_give_the_same_verdict() {
    let unset = "AGENTTY_E2E_SURELY_UNSET";
    assert!(std::env::var_os(unset).is_none());
    let server = super::client::start().await;
    let workspace = server.workspace.path().to_owned();
    let cli = |line: &str, env: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(["guard", "--", line])
            .envs(env.iter().copied())
            .current_dir(&workspace)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        let rule = report
            .lines()
            .find_map(|l| l.strip_prefix("verdict: BLOCKED by rule `"))
            .and_then(|rest| rest.split('`').next())
            .map(str::to_owned);
        assert_eq!(out.status.code(), Some(if rule.is_some() { 1 } else { 0 }));
        rule
    };
    let call = async |line: &str, env: &[(&str, &str)]| {
        let env: serde_json::Map<String, serde_json::Value> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
            .collect();
        let result = server
            .call(
                "terminal",
                serde_json::json!({"command": line, "pty": true, "background": true, "env": env}),
            )
            .await;
        let text = super::client::text_of(&result);
        assert_eq!(result.is_error, Some(true), "nothing may run: {text}");
        text.strip_prefix("blocked by guard rule `")
            .and_then(|rest| rest.split('`').next())
            .map(str::to_owned)
    };
    let lines = [
        (format!("rm -rf \"${unset}/\"*"), Some("rm-root")),
        (format!("cd ${unset} && rm -rf *"), Some("rm-root")),
        ("D=$HOME; rm -rf \"$D\"".to_owned(), Some("rm-root")),
        ("rm -rf ~/.[a-z]*".to_owned(), Some("rm-root")),
        (
            "rm -rf \"$(dirname \"$HOME\")\"".to_owned(),
            Some("rm-root"),
        ),
        (
            "find ~/ -name '*' -delete".to_owned(),
            Some("find-delete-root"),
        ),
        ("chmod 000 /".to_owned(), Some("chmod-root")),
        (format!("rm -rf \"${unset}/x\""), None),
        (format!("cd \"${unset}\" && rm -rf ./build"), None),
        ("D=./build; rm -rf \"$D\"".to_owned(), None),
        ("echo hi".to_owned(), None),
    ];
    for (line, expected) in &lines {
        let by_cli = cli(line, &[]);
        assert_eq!(by_cli.as_deref(), *expected, "agentty guard -- {line}");
        assert_eq!(call(line, &[]).await, by_cli, "terminal: {line}");
    }
    // A variable the call sets is judged by its value, as the CLI judges its own.
    let line = "rm -rf \"$OUT/\"*";
    for (value, expected) in [("", Some("rm-root")), ("./build", None)] {
        let by_cli = cli(line, &[("OUT", value)]);
        assert_eq!(by_cli.as_deref(), expected, "OUT={value:?}");
        assert_eq!(
            call(line, &[("OUT", value)]).await,
            by_cli,
            "env OUT={value:?}"
        );
    }
    let help = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["guard", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("as a `terminal` call") && help.contains("environment"),
        "{help}"
    );
}

/// `--max-processes` (and `[sandbox] max_processes`) below what a PID namespace's `pid_max`
/// and a shell with a build need, or above the kernel's largest, is refused with the range.
#[test]
fn a_process_bound_out_of_range_is_refused_with_the_range() {
    for given in ["10", "511", "4194305"] {
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(["doctor", "--max-processes", given])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{given}: accepted");
        assert!(
            err.contains("sandbox.max_processes must be between 512 and 4194304"),
            "{given}: {err}"
        );
    }
    assert_ran(Command::new(env!("CARGO_BIN_EXE_agentty")).args([
        "doctor",
        "--max-processes",
        "512",
    ]));
}

/// A relative state dir or token file that does not exist yet is judged where it will be: from
/// the current directory (review 39 M2: it stayed relative, so no check found it inside the
/// workspace, and the first start made it there).
#[test]
fn a_relative_state_dir_or_token_file_in_the_workspace_is_refused() {
    let base = agentty_testkit::state_dir();
    let ws = base.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    for flags in [
        &["--state-dir", "new-state"][..],
        &["--token-file", "new-token", "--http", "127.0.0.1:0"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .current_dir(&ws)
            .args(["serve", "--workspace", "."])
            .args(flags)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?}: accepted");
        assert!(err.contains("which commands may write"), "{flags:?}: {err}");
        assert!(
            !ws.join("new-state").exists(),
            "{flags:?}: made in the workspace"
        );
    }
    // A state dir that is the workspace, or holds it, is refused even where home is inside
    // (review 40 L7: nothing of it could be kept read-only).
    for state in [ws.clone(), ws.parent().unwrap().to_path_buf()] {
        let out = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(["doctor", "--workspace"])
            .arg(&ws)
            .arg("--state-dir")
            .arg(&state)
            .env("HOME", &ws)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: accepted", state.display());
        assert!(err.contains(&format!("holds {}", ws.display())), "{err}");
    }
}
