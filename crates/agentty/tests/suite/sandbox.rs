//! The write sandbox, guard and workspace boundary on the pipe path, through the real binary.
//! The kernel (Landlock) does the refusing here, not a mock.

use std::path::PathBuf;

use serde_json::json;

use super::client::*;

/// A path outside every writable root (not under the workspace, temp dirs or caches).
fn outside(name: &str) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    home.join(format!("agentty-escape-{name}-{}", std::process::id()))
}

#[tokio::test]
async fn writes_outside_are_refused_with_2008_and_inside_succeed() {
    let server = start().await;
    let target = outside("plain");
    let (text, s) = server
        .terminal(json!({"command": format!("echo x > {}", target.display())}))
        .await;
    assert!(!target.exists(), "the write went through");
    assert_eq!(s["status"], "failed");
    assert_eq!(s["error_code"], 2008, "{text}");
    assert!(text.contains("[error 2008]"), "{text}");
    assert!(
        s["sandbox"]
            .as_str()
            .unwrap()
            .contains("workspace-write: enforced"),
        "{s}"
    );

    let (_, s) = server
        .terminal(
            json!({"command": "echo a > inside && mkdir -p d/e && mv inside d/e/ && \
                         t=$(mktemp) && echo b > $t && rm $t && cat d/e/inside"}),
        )
        .await;
    assert_eq!(s["stdout"], "a\n", "{s}");
}

#[tokio::test]
async fn escapes_through_links_rename_proc_and_home_are_refused() {
    let server = start().await;
    let dir = outside("links");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("victim"), "keep").unwrap();
    let d = dir.display();
    let attempts = [
        format!("ln -s {d} link && echo x > link/new"),
        format!("ln {d}/victim hard && echo x >> hard"),
        format!("mv {d}/victim stolen"),
        format!("echo x > /proc/self/root{d}/new"),
        "echo x > \"$HOME/agentty-escape-home-$$\"".to_owned(),
    ];
    for cmd in attempts {
        let (text, s) = server.terminal(json!({"command": cmd})).await;
        assert_ne!(s["status"], "success", "{cmd}: {text}");
    }
    assert_eq!(std::fs::read_to_string(dir.join("victim")).unwrap(), "keep");
    assert!(!dir.join("new").exists());
    let leaked: Vec<_> = std::fs::read_dir(std::env::var("HOME").unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("agentty-escape-home-")
        })
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(leaked.is_empty(), "{leaked:?}");
}

#[tokio::test]
async fn git_commit_works_in_the_workspace() {
    let server = start().await;
    let (text, s) = server
        .terminal(
            json!({"command": "git init -q . && echo hi > f && git add f && \
            git -c user.name=t -c user.email=t@t commit -qm first && git log --oneline | wc -l"}),
        )
        .await;
    assert_eq!(s["stdout"], "1\n", "{text}");
}

#[tokio::test]
async fn plan_mode_refuses_every_write() {
    let server = start_with(&["--mode", "plan"]).await;
    let (text, s) = server.terminal(json!({"command": "echo x > inside"})).await;
    assert_ne!(s["status"], "success", "{text}");
    assert!(!server.workspace().join("inside").exists());
    assert!(
        s["sandbox"]
            .as_str()
            .unwrap()
            .contains("read-only: enforced"),
        "{s}"
    );
    let (_, s) = server
        .terminal(json!({"command": "echo ok > /dev/null && echo ok"}))
        .await;
    assert_eq!(s["stdout"], "ok\n");
}

#[tokio::test]
async fn disabled_by_configuration_says_so_and_does_not_confine() {
    let server = start_with(&["--no-sandbox"]).await;
    let target = outside("disabled");
    let (_, s) = server
        .terminal(json!({"command": format!("echo x > {} && cat {}", target.display(), target.display())}))
        .await;
    let existed = target.exists();
    let _ = std::fs::remove_file(&target);
    assert!(existed);
    assert_eq!(
        s["sandbox"],
        "[sandbox] workspace-write: not confined: disabled by configuration (sandbox.terminal = false)"
    );
}

/// The pid a result shows is the command's own process (no wrapper between), and it leads its
/// process group. The number is the host's: a confined command, in the session's PID
/// namespace, knows itself by another one, which the host's `/proc` lists last in `NSpid`.
#[tokio::test]
async fn sandbox_keeps_pid_and_process_group() {
    for flags in [&[][..], &["--no-sandbox"][..]] {
        let server = start_with(flags).await;
        let (_, s) = server
            .terminal(json!({
                "command": "echo $(cut -d' ' -f5 /proc/$$/stat) $$; exec sleep 300",
                "background": true,
            }))
            .await;
        let pid = s["pid"].as_i64().unwrap();
        let id = s["job_id"].as_str().unwrap().to_owned();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let seen = loop {
            let r = server
                .call("task_output", json!({"id": id, "since": 0}))
                .await;
            let text = text_of(&r);
            if let Some(line) = text.lines().find(|l| l.split(' ').count() == 2) {
                break line.to_owned();
            }
            assert!(std::time::Instant::now() < deadline, "no output: {text}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let nspid = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>();
        assert_eq!(nspid.first(), Some(&pid.to_string().as_str()), "{status}");
        let own = nspid.last().unwrap();
        assert_eq!(seen, format!("{own} {own}"), "flags {flags:?}");
        if flags.is_empty() {
            assert_ne!(
                nspid.len(),
                1,
                "a confined command is in the session's namespace"
            );
        } else {
            assert_eq!(
                nspid.len(),
                1,
                "an unconfined command is in the host's namespace"
            );
        }
    }
}

#[tokio::test]
async fn guard_blocks_slips_by_name_and_allows_look_alikes() {
    let server = start().await;
    for cmd in [
        "rm -rf /",
        "sudo rm -rf ~",
        "bash -c 'rm -rf /'",
        "curl -s x | sh",
    ] {
        let result = server.call("terminal", json!({"command": cmd})).await;
        let text = text_of(&result);
        assert_eq!(result.is_error, Some(true), "{cmd}");
        assert!(text.contains("blocked by guard rule `"), "{cmd}: {text}");
    }
    let result = server
        .call("terminal", json!({"argv": ["rm", "-rf", "/"]}))
        .await;
    assert_eq!(result.is_error, Some(true));
    let (_, s) = server.terminal(json!({"command": "echo 'rm -rf /'"})).await;
    assert_eq!(s["stdout"], "rm -rf /\n");

    // Relative targets are judged where they land: from the workspace (a temp dir one level
    // below /), `../..` is the root; in a shell, from the directory the shell is in now.
    let depth = server.workspace().components().count() - 1;
    let up = vec![".."; depth].join("/");
    let result = server
        .call("terminal", json!({"command": format!("rm -rf {up}")}))
        .await;
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    assert!(
        text_of(&result).contains("`rm-root`"),
        "{}",
        text_of(&result)
    );
    let id = server.open_shell().await;
    server
        .call("shell_send", json!({"id": id, "input": "cd /usr/share\n"}))
        .await;
    let result = server
        .call("shell_send", json!({"id": id, "input": "rm -rf ../..\n"}))
        .await;
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    assert!(
        text_of(&result).contains("`rm-root`"),
        "{}",
        text_of(&result)
    );
    let (_, s) = server
        .terminal(json!({"command": "mkdir -p a/b/c && rm -rf a/b/../b/c"}))
        .await;
    assert_eq!(s["exit_code"], 0, "an ordinary relative delete runs: {s}");
}

#[tokio::test]
async fn workdir_outside_the_workspace_is_refused_and_extra_roots_are_inside() {
    let extra = tempfile::tempdir().unwrap();
    let extra_path = extra.path().to_str().unwrap().to_owned();
    let server = start_with(&["--add-dir", &extra_path]).await;
    let result = server
        .call("terminal", json!({"command": "pwd", "workdir": "/etc"}))
        .await;
    let text = text_of(&result);
    assert_eq!(result.is_error, Some(true));
    assert!(
        text.contains("outside the workspace") && text.contains("allowed:"),
        "{text}"
    );
    let result = server
        .call("terminal", json!({"command": "pwd", "workdir": "../.."}))
        .await;
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    let (_, s) = server
        .terminal(json!({"command": "pwd && echo x > f && cat f", "workdir": extra_path}))
        .await;
    let canonical = extra.path().canonicalize().unwrap();
    assert_eq!(s["stdout"], format!("{}\nx\n", canonical.display()));
}

#[tokio::test]
async fn a_background_job_refused_a_write_reports_2008_when_it_ends() {
    let server = start().await;
    let target = outside("background-2008");
    let cmd = format!("echo x > {}", target.display());
    let id = server.background(json!({"command": cmd})).await;
    let r = server
        .call("task_wait", json!({"id": id, "timeout_ms": 20_000}))
        .await;
    let text = text_of(&r);
    let s = r.structured_content.unwrap();
    assert!(!target.exists(), "the write went through");
    assert_eq!(s["ended"], true, "{text}");
    assert_eq!(s["job"]["error_code"], 2008, "{text}");
    assert!(text.contains("[error 2008]"), "{text}");
    let r = server.call("task_output", json!({"id": id})).await;
    assert!(text_of(&r).contains("[error 2008]"), "{}", text_of(&r));

    // A job that wrote only inside ends without one.
    let id = server
        .background(json!({"command": "echo ok > inside-job && cat inside-job"}))
        .await;
    let r = server
        .call("task_wait", json!({"id": id, "timeout_ms": 20_000}))
        .await;
    let s = r.structured_content.unwrap();
    assert_eq!(s["job"]["exit_code"], 0, "{s}");
    assert!(s["job"]["error_code"].is_null(), "{s}");
}

#[tokio::test]
async fn a_shell_command_refused_a_write_reports_2008() {
    let server = start().await;
    let target = outside("shell-2008");
    let id = server.open_shell().await;
    let input = format!("echo x > {}\n", target.display());
    let (text, s) = server.shell_send(&id, &input).await;
    assert!(!target.exists(), "the write went through");
    assert_eq!(s["status"], "done", "{text}");
    assert_eq!(s["error_code"], 2008, "{text}");
    assert!(text.contains("[error 2008]"), "{text}");
    // This client has no elicitation: no advice to escalate, which would be refused.
    assert!(text.contains("cannot ask the user"), "{text}");
    assert!(!text.contains("require_escalated"), "{text}");
    let r = server
        .call(
            "shell_send",
            json!({"id": id, "input": "echo fine > inside-shell\n"}),
        )
        .await;
    let s = r.structured_content.unwrap();
    assert_eq!(s["exit_code"], 0, "{s}");
    assert!(s["error_code"].is_null(), "{s}");
}

/// The same escapes on the other three paths: background job, `terminal(pty)`, persistent shell.
/// Each path also makes one write inside, so a path that ran nothing cannot pass.
#[tokio::test]
async fn escapes_are_refused_on_the_background_pty_and_shell_paths() {
    let server = start().await;
    let dir = outside("paths");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("victim"), "keep").unwrap();
    let d = dir.display();
    let escapes = format!(
        "echo x > {d}/new; ln -s {d} link && echo x > link/new2; ln {d}/victim hard && echo x >> hard; \
         mv {d}/victim stolen; echo x > /proc/self/root{d}/new3; echo x >> {d}/victim; \
         echo inside > inside-$P"
    );
    for path in ["background", "pty", "shell"] {
        let cmd = escapes
            .replace("$P", path)
            .replace("link", &format!("link-{path}"))
            .replace(" hard", &format!(" hard-{path}"));
        match path {
            "background" => {
                let id = server.background(json!({"command": cmd})).await;
                let r = server
                    .call("task_wait", json!({"id": id, "timeout_ms": 20_000}))
                    .await;
                assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
            }
            "pty" => {
                let r = server
                    .call("terminal", json!({"command": cmd, "pty": true}))
                    .await;
                assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
            }
            _ => {
                let id = server.open_shell().await;
                let r = server
                    .call(
                        "shell_send",
                        json!({"id": id, "input": format!("{cmd}\n"), "timeout_ms": 20_000}),
                    )
                    .await;
                assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
            }
        }
        let inside = server.workspace().join(format!("inside-{path}"));
        assert!(
            inside.exists(),
            "{path}: the command did not run (no inside write)"
        );
        for name in ["new", "new2", "new3"] {
            assert!(
                !dir.join(name).exists(),
                "{path}: {name} was written outside"
            );
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("victim")).unwrap(),
            "keep",
            "{path}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn plan_mode_is_read_only_in_a_shell_too() {
    let server = start_with(&["--mode", "plan"]).await;
    let id = server.open_shell().await;
    let r = server
        .call(
            "shell_send",
            json!({"id": id, "input": "echo x > inside; echo done\n"}),
        )
        .await;
    assert!(text_of(&r).contains("done"), "{}", text_of(&r));
    assert!(!server.workspace().join("inside").exists());
}

/// A refused write to a relative path, after `cd` out of the workspace: judged where the
/// command ran (from the line's `cd` in `terminal`, from the shell's own cwd in a shell).
#[tokio::test]
async fn a_relative_path_refused_after_cd_outside_reports_2008() {
    let server = start().await;
    let dir = outside("relative");
    std::fs::create_dir_all(&dir).unwrap();
    let line = format!("cd {} && touch made-here", dir.display());
    let (text, s) = server.terminal(json!({ "command": line })).await;
    assert!(!dir.join("made-here").exists(), "the write went through");
    assert_eq!(s["error_code"], 2008, "{text}");
    let full = dir.join("made-here").display().to_string();
    assert!(text.contains(&full), "{text}");

    let id = server.open_shell().await;
    let input = format!("cd {} && echo x > from-shell\n", dir.display());
    let (text, s) = server.shell_send(&id, &input).await;
    assert_eq!(s["error_code"], 2008, "{text}");
    let full = dir.join("from-shell").display().to_string();
    assert!(text.contains(&full), "{text}");

    // The same message about a path inside the workspace is not the sandbox's doing. (This
    // test runs as root, which no permission bit stops, so the command prints it itself.)
    let fake = r#"echo "touch: cannot touch 'x': Permission denied" >&2; exit 1"#;
    let (text, s) = server.terminal(json!({ "command": fake })).await;
    assert_eq!(s["status"], "failed", "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    let moved = format!("cd {} && {fake}", dir.display());
    let (text, s) = server.terminal(json!({ "command": moved })).await;
    assert_eq!(s["error_code"], 2008, "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Signals and extended attributes outside, on every path a command can take (pipe, `pty`,
/// background job, persistent shell), in `default` and `plan`: the same sandbox applies to all.
#[tokio::test]
async fn signals_and_xattrs_outside_are_refused_on_every_path() {
    for flags in [&[][..], &["--mode", "plan"][..]] {
        let server = start_with(flags).await;
        for path in ["pipe", "pty", "background", "shell"] {
            let file = outside(&format!("xattr-{path}"));
            std::fs::write(&file, "keep").unwrap();
            let mut victim = std::process::Command::new("sleep")
                .arg("100")
                .spawn()
                .unwrap();
            let attack = format!(
                "kill -KILL {}; /usr/bin/python3 -c 'import os; os.setxattr(\"{}\", \"user.planted\", b\"1\")'; echo done",
                victim.id(),
                file.display()
            );
            let said = match path {
                "pipe" => server.terminal(json!({"command": attack})).await.0,
                "pty" => {
                    server
                        .terminal(json!({"command": attack, "pty": true}))
                        .await
                        .0
                }
                "background" => {
                    let id = server.background(json!({"command": attack})).await;
                    let waited = server
                        .call("task_wait", json!({"id": id, "timeout_ms": 30000}))
                        .await;
                    text_of(&waited)
                }
                _ => {
                    let shell = server.open_shell().await;
                    server.shell_send(&shell, &format!("{attack}\n")).await.0
                }
            };
            assert!(
                said.contains("done"),
                "{flags:?} {path}: the attack did not run: {said}"
            );
            let alive = victim.try_wait().unwrap().is_none();
            let names = xattr_names(&file);
            let _ = victim.kill();
            victim.wait().unwrap();
            std::fs::remove_file(&file).unwrap();
            assert!(alive, "{flags:?} {path}: the signal got through");
            assert!(
                !names.contains("user.planted"),
                "{flags:?} {path}: an xattr was set outside"
            );
        }
    }
}

/// Two commands of one session are two sandboxes: one cannot signal the other, nor connect to
/// an abstract unix socket the other listens on. Landlock scopes both to a domain, so each
/// command must make its own; commands share the launcher that clones them (and its seccomp
/// filter), never a domain. The other command is a background job; the attack runs on every
/// path.
#[tokio::test]
async fn commands_cannot_signal_or_reach_each_other() {
    let server = start().await;
    let name = format!("agentty-sibling-{}", std::process::id());
    let py = "/usr/bin/python3 -c";
    let listen = format!(
        "exec {py} 'import socket,time; s=socket.socket(socket.AF_UNIX); s.bind(\"\\0{name}\"); \
         s.listen(); print(\"listening\", flush=True); time.sleep(300)'"
    );
    let listener = server.background(json!({ "command": listen })).await;
    let mut seen = String::new();
    for _ in 0..500 {
        seen.push_str(&text_of(
            &server.call("task_output", json!({ "id": listener })).await,
        ));
        if seen.contains("listening") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(seen.contains("listening"), "{seen}");
    let (text, s) = server
        .terminal(json!({"command": "exec sleep 300", "background": true}))
        .await;
    let victim = s["pid"].as_i64().unwrap_or_else(|| panic!("{text}")) as i32;
    let attack = format!(
        "pkill -KILL -x sleep; {py} 'import socket; s=socket.socket(socket.AF_UNIX); \
         s.connect(\"\\0{name}\"); print(\"ESCAPED-abstract-socket\")'; echo done"
    );
    for path in ["pipe", "pty", "background", "shell"] {
        let said = match path {
            "pipe" => server.terminal(json!({ "command": attack })).await.0,
            "pty" => {
                server
                    .terminal(json!({"command": attack, "pty": true}))
                    .await
                    .0
            }
            "background" => {
                let id = server.background(json!({ "command": attack })).await;
                let waited = server
                    .call("task_wait", json!({"id": id, "timeout_ms": 30_000}))
                    .await;
                text_of(&waited)
            }
            _ => {
                let shell = server.open_shell().await;
                server.shell_send(&shell, &format!("{attack}\n")).await.0
            }
        };
        assert!(
            said.contains("done"),
            "{path}: the attack did not run: {said}"
        );
        assert!(!said.contains("ESCAPED"), "{path}: {said}");
        let alive = agentty_testkit::stat(victim).is_some_and(|s| !s.zombie());
        assert!(
            alive,
            "{path}: one command killed another's process: {said}"
        );
    }
}

/// A confined command cannot read the server's memory or environment, where its random pool
/// holds the next run markers and handles, and the HTTP token lives: not through
/// `/proc/<pid>/mem` nor `/proc/<pid>/environ`, on the pipe path and in a shell. Without the
/// sandbox the same attack reads both (as root here), so the attack itself works.
#[tokio::test]
async fn a_command_cannot_read_the_servers_memory() {
    for (flags, confined) in [(&[][..], true), (&["--no-sandbox"][..], false)] {
        let server = start_with(flags).await;
        let serving = serving_pid(server.pid);
        let attack = format!(
            "S={serving}; (exec 3</proc/$S/mem) 2>/dev/null && echo READ-mem; \
             head -c 16 /proc/$S/environ >/dev/null 2>&1 && echo READ-environ; echo done"
        );
        for path in ["pipe", "shell"] {
            let said = if path == "pipe" {
                server.terminal(json!({ "command": attack })).await.0
            } else {
                let shell = server.open_shell().await;
                server.shell_send(&shell, &format!("{attack}\n")).await.0
            };
            assert!(
                said.contains("done"),
                "{path}: the attack did not run: {said}"
            );
            let read = said.contains("READ-mem") || said.contains("READ-environ");
            assert_eq!(read, !confined, "{flags:?} {path}: {said}");
        }
    }
}

fn xattr_names(path: &std::path::Path) -> String {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: listxattr writes at most `len` bytes into buf.
    let n = unsafe { libc::listxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.max(0) as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// `.git` is writable so commits work, so a command can plant a hook or a `core.fsmonitor`
/// that git runs unconfined at the user's next commit. In a repository made during the session
/// nothing is read-only (nothing existed at start to mount over), so it is said in the result of
/// the command that did it, on the pipe path and in a shell (`planted.rs` has the rest).
#[tokio::test]
async fn a_planted_git_hook_or_config_is_reported() {
    let server = start().await;
    // `git init` by a command: the repository is watched from then on.
    let (text, _) = server
        .terminal(json!({"command": "git init -q && echo ok"}))
        .await;
    assert!(text.contains("ok") && !text.contains("[warning]"), "{text}");
    let plant = "printf '#!/bin/sh\\necho planted\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit";
    let (text, s) = server.terminal(json!({"command": plant})).await;
    assert!(
        text.contains("[warning] changed since the last command"),
        "{text}"
    );
    assert!(text.contains("hooks/pre-commit"), "{text}");
    assert!(s["notes"].to_string().contains("pre-commit"), "{s}");
    let (text, _) = server
        .terminal(json!({"command": "git status --short; true"}))
        .await;
    assert!(!text.contains("[warning]"), "reported twice: {text}");
    // The same, with the times put back: a new hook with its directory's mtime restored, and an
    // edit of the config of the same length with its mtime restored.
    let hidden = "old=$(stat -c %y .git/hooks) && printf '#!/bin/sh\\n' > .git/hooks/post-checkout \
                  && chmod +x .git/hooks/post-checkout && touch -m -d \"$old\" .git/hooks";
    let (text, _) = server.terminal(json!({ "command": hidden })).await;
    assert!(text.contains("hooks/post-checkout"), "{text}");
    let same_length = "old=$(stat -c %y .git/config) && /usr/bin/python3 -c 'f = open(\".git/config\", \"r+b\"); \
                       d = f.read(); f.seek(0); f.write(d.replace(b\"[core]\", b\"[CORE]\", 1))' \
                       && touch -m -d \"$old\" .git/config";
    let (text, _) = server.terminal(json!({ "command": same_length })).await;
    assert!(text.contains(".git/config"), "{text}");
    // A submodule's git dir that appears holding nothing that runs code (what `git submodule
    // update --init` makes) is watched from then on, and not worth a warning yet.
    let (text, _) = server
        .terminal(json!({
            "command": "mkdir -p .git/modules/lib/hooks && printf '[core]\\n' > .git/modules/lib/config"
        }))
        .await;
    assert!(!text.contains("[warning]"), "{text}");
    // The other files git takes code from: a submodule's git dir (its config, changed),
    // config.worktree, a file the config includes, the directory core.hooksPath names.
    let reported = [
        (
            "printf '\\tfsmonitor = ./run-me\\n' >> .git/modules/lib/config",
            ".git/modules/lib/config",
        ),
        (
            "printf '[core]\\n\\tfsmonitor = ./run-me\\n' > .git/config.worktree",
            ".git/config.worktree",
        ),
        ("git config include.path extra.cfg", ".git/config"),
        (
            "printf '[core]\\n\\tfsmonitor = ./run-me\\n' > .git/extra.cfg",
            ".git/extra.cfg",
        ),
        ("git config core.hooksPath .husky/_", ".git/config"),
        (
            "mkdir -p .husky/_ && printf '#!/bin/sh\\n' > .husky/_/pre-commit",
            ".husky/_/pre-commit",
        ),
    ];
    for (command, path) in reported {
        let (text, _) = server.terminal(json!({ "command": command })).await;
        assert!(
            text.contains("[warning] changed since the last command") && text.contains(path),
            "{command}: {text}"
        );
    }
    let id = server.open_shell().await;
    let (text, _) = server
        .shell_send(
            &id,
            "git config core.fsmonitor 'touch /tmp/agentty-planted'\n",
        )
        .await;
    assert!(
        text.contains("[warning]") && text.contains(".git/config"),
        "{text}"
    );
}

/// A command swaps the workspace, which sits in a directory commands may write (`/tmp`), for a
/// symlink to a directory outside: the next session on that path must not make the link's
/// target writable. It refuses to start, and says why.
#[tokio::test]
async fn a_workspace_swapped_for_a_symlink_is_refused_at_the_next_start() {
    let parent = tempfile::tempdir().unwrap();
    let workspace = tempfile::Builder::new()
        .prefix("proj")
        .tempdir_in(parent.path())
        .unwrap();
    let ws = workspace.path().to_path_buf();
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("linked-root-{}", std::process::id()));
    std::fs::create_dir_all(&target).unwrap();
    let server = start_at(workspace, agentty_testkit::state_dir(), &[]).await;
    let swap = format!(
        "cd / && mv {ws} {ws}.old && ln -s {target} {ws} && echo swapped",
        ws = ws.display(),
        target = target.display()
    );
    let (text, _) = server.terminal(json!({ "command": swap })).await;
    assert!(
        text.contains("swapped"),
        "the swap itself is allowed: {text}"
    );
    let next = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .arg("serve")
        .arg("--workspace")
        .arg(&ws)
        .arg("--state-dir")
        .arg(agentty_testkit::state_dir().path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&next.stderr);
    drop(server);
    std::fs::remove_dir_all(&target).unwrap();
    assert!(!next.status.success(), "the next session started: {said}");
    assert!(
        said.contains("refusing the root") && said.contains("symlink"),
        "{said}"
    );
}

/// Runs `script` on `path` (pipe, pty, background, shell) and returns what the model was told.
pub(super) async fn run_on_path(server: &Server, path: &str, script: &str) -> String {
    match path {
        "pipe" => server.terminal(json!({"command": script})).await.0,
        "pty" => {
            server
                .terminal(json!({"command": script, "pty": true}))
                .await
                .0
        }
        "background" => {
            let id = server.background(json!({"command": script})).await;
            let waited = server
                .call("task_wait", json!({"id": id, "timeout_ms": 60_000}))
                .await;
            let out = server
                .call("task_output", json!({"id": id, "since": 0}))
                .await;
            format!("{}\n{}", text_of(&waited), text_of(&out))
        }
        _ => {
            let shell = server.open_shell().await;
            let r = server
                .call(
                    "shell_send",
                    json!({"id": shell, "input": format!("{script}\n"), "timeout_ms": 60_000}),
                )
                .await;
            text_of(&r)
        }
    }
}

/// The attacker's matrix: every escape class at once, on all four paths, in `default` and
/// `plan`. Each attempt prints `ESCAPED-<name>` only if the kernel let it through, and the
/// effects outside are checked on disk and in the process table too. A last line proves the
/// script ran to the end.
#[tokio::test]
async fn the_escape_matrix_holds_on_every_path_in_default_and_plan() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let py = "/usr/bin/python3 -c";
    let abstract_name = format!("agentty-matrix-{}", std::process::id());
    let abstract_listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&abstract_name).unwrap()).unwrap();
    let daemon_dir = tempfile::tempdir().unwrap();
    let daemon_sock = daemon_dir.path().join("daemon.sock");
    let daemon_listener = UnixListener::bind(&daemon_sock).unwrap();
    // Another terminal of the user's: the command must neither type into it nor write to it
    // (the session's /dev/pts is a devpts of its own; the same number there is another terminal).
    let (other_master, other_slave) = agentty_testkit::open_terminal();
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&other_slave)
        .unwrap();
    for flags in [&[][..], &["--mode", "plan"][..]] {
        let plan = !flags.is_empty();
        let server = start_with(flags).await;
        for path in ["pipe", "pty", "background", "shell"] {
            let dir = outside(&format!(
                "matrix-{}-{path}",
                if plan { "plan" } else { "default" }
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let victim_file = dir.join("victim");
            std::fs::write(&victim_file, "keep").unwrap();
            let mut victim = std::process::Command::new("sleep")
                .arg("300")
                .spawn()
                .unwrap();
            let d = dir.display();
            let v = victim.id();
            let mut attempts = vec![
                format!("echo x > {d}/write && echo ESCAPED-write"),
                format!("echo x | tee {d}/tee >/dev/null && echo ESCAPED-tee"),
                format!(
                    "ln -s {d} sl-{path} && echo x > sl-{path}/symlink && echo ESCAPED-symlink"
                ),
                format!("ln {d}/victim hl-{path} && echo x >> hl-{path} && echo ESCAPED-hardlink"),
                format!("mv {d}/victim stolen-{path} && echo ESCAPED-rename"),
                format!("truncate -s 0 {d}/victim && echo ESCAPED-truncate"),
                format!("echo x > /proc/self/root{d}/proc && echo ESCAPED-proc-root"),
                format!("(cd {d} && echo x > cwd) && echo ESCAPED-cwd"),
                format!("mknod node-{path} c 1 11 && echo ESCAPED-mknod"),
                format!("kill -TERM {v} && echo ESCAPED-signal"),
                format!(
                    "{py} 'import os; os.setxattr(\"{d}/victim\", \"user.x\", b\"1\"); print(\"ESCAPED-xattr\")'"
                ),
                format!(
                    "{py} 'import os,fcntl,array; f=os.open(\"{d}/victim\", os.O_RDONLY); a=array.array(\"l\",[0]); \
                     fcntl.ioctl(f,0x80086601,a); a[0]|=0x20; fcntl.ioctl(f,0x40086602,a); print(\"ESCAPED-chattr\")'"
                ),
                format!(
                    "{py} 'import os,fcntl,termios; f=os.open(\"{other_slave}\", os.O_RDWR|os.O_NOCTTY); \
                     fcntl.ioctl(f, termios.TIOCSTI, b\"#\"); print(\"ESCAPED-tiocsti\")'"
                ),
                format!("echo written-to-another-terminal > {other_slave}"),
                format!("echo written > /proc/self/root{other_slave}"),
                format!("umount -l /dev/pts && echo unmounted > {other_slave}"),
                format!(
                    "{py} 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0{abstract_name}\"); print(\"ESCAPED-abstract-socket\")'"
                ),
                format!("unshare -Urm sh -c 'mount --bind {d} /mnt && echo ESCAPED-mount'"),
            ];
            if plan {
                attempts.push(format!(
                    "{py} 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"ESCAPED-daemon-socket\")'",
                    daemon_sock.display()
                ));
                attempts.push(format!(
                    "echo x > in-workspace-{path} && echo ESCAPED-plan-write"
                ));
            }
            let script = attempts
                .iter()
                .map(|a| format!("{{ {a}; }} 2>/dev/null"))
                .chain(std::iter::once("echo matrix-ran-to-the-end".to_owned()))
                .collect::<Vec<_>>()
                .join("; ");
            let said = run_on_path(&server, path, &script).await;
            let alive = victim.try_wait().unwrap().is_none();
            let _ = victim.kill();
            victim.wait().unwrap();
            let case = format!("{flags:?} {path}");
            assert!(
                said.contains("matrix-ran-to-the-end"),
                "{case}: did not run: {said}"
            );
            assert!(!said.contains("ESCAPED-"), "{case}: {said}");
            assert!(alive, "{case}: the signal got through");
            assert_eq!(
                std::fs::read_to_string(&victim_file).unwrap(),
                "keep",
                "{case}"
            );
            for name in ["write", "tee", "symlink", "proc", "cwd"] {
                assert!(!dir.join(name).exists(), "{case}: {name} written outside");
            }
            assert!(!xattr_names(&victim_file).contains("user.x"), "{case}");
            let node = server.workspace().join(format!("node-{path}"));
            assert!(!node.exists(), "{case}: a device node was made");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    // Nothing was typed into the other terminal.
    let mut buf = [0u8; 64];
    // SAFETY: a non-blocking read into a buffer we own.
    let n = unsafe {
        libc::read(
            std::os::fd::AsRawFd::as_raw_fd(&other_master),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert!(
        n <= 0,
        "typed into or wrote to another terminal: {:?}",
        String::from_utf8_lossy(&buf[..n.max(0) as usize])
    );
    drop((abstract_listener, daemon_listener));
}

/// Confined commands run in the session's PID namespace with a `/proc` of their own: the pid
/// a result shows is the command's `$$`, a pid read from `ps`/`pgrep` is one `kill` can use,
/// the session's other commands are seen, the user's processes (this test) are not, and the
/// namespace's init cannot be killed from inside. (`pgrep` is asked until the background
/// child has exec'd `sleep`: right after the fork it is still a copy of the shell.)
#[tokio::test]
async fn confined_commands_see_the_session_processes_with_pids_kill_can_use() {
    let server = start().await;
    let marker = tag("ns-visible");
    let (_, s) = server
        .terminal(json!({"command": format!("exec -a {marker} sleep 300"), "background": true}))
        .await;
    assert_eq!(s["status"], "background", "{s}");
    let script = format!(
        "sleep 301 & until pgrep -f '^sleep 301$' > /tmp/agentty-ns-$$; do sleep 0.01; done; \
         kill $(cat /tmp/agentty-ns-$$); \
         wait $!; echo waited=$?; rm -f /tmp/agentty-ns-$$; \
         pgrep -f '^{marker}' >/dev/null && echo sees-session; \
         test -e /proc/{me} && echo sees-host; \
         kill -9 1 2>/dev/null || echo init-kept",
        me = std::process::id()
    );
    for path in ["pipe", "pty", "background", "shell"] {
        let said = run_on_path(&server, path, &script).await;
        assert!(
            said.contains("waited=143"),
            "{path}: kill by pgrep's pid: {said}"
        );
        assert!(said.contains("sees-session"), "{path}: {said}");
        assert!(!said.contains("sees-host"), "{path}: {said}");
        assert!(said.contains("init-kept"), "{path}: {said}");
    }
    let (_, s) = server.terminal(json!({"command": "echo still"})).await;
    assert_eq!(s["stdout"], "still\n");
}

/// A confined command run by a root server gives up the capabilities that reach past the
/// sandbox (`CAP_SYS_ADMIN`, `CAP_DAC_READ_SEARCH` and the like) and keeps those ordinary work needs
/// (`CAP_DAC_OVERRIDE`, `CAP_CHOWN`): it cannot enter namespaces or copy a mount from under the
/// session's covers (`open_tree`, which would show the hidden records), on every path.
#[tokio::test]
async fn confined_root_commands_drop_the_capabilities_that_reach_past_the_sandbox() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root");
    let server = start().await;
    let state = server.state.path().display().to_string();
    let script = format!(
        "grep -E '^Cap(Eff|Bnd)' /proc/self/status; \
         unshare -m true 2>/dev/null && echo unshared; \
         /usr/bin/python3 -c 'import ctypes, sys; l = ctypes.CDLL(None, use_errno=True); \
         fd = l.syscall(428, -100, sys.argv[1].encode(), 1); \
         print(\"cloned\" if fd >= 0 else \"clone refused\")' {state}; \
         echo caps-done"
    );
    for path in ["pipe", "pty", "background", "shell"] {
        let said = run_on_path(&server, path, &script).await;
        assert!(said.contains("caps-done"), "{path}: {said}");
        for set in ["CapEff", "CapBnd"] {
            let line = said
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("{set}:")))
                .unwrap_or_else(|| panic!("{path}: no {set}: {said}"));
            let bits = u64::from_str_radix(line.trim(), 16).unwrap();
            assert_eq!(
                bits & (1 << 21),
                0,
                "{path}: {set} has CAP_SYS_ADMIN: {line}"
            );
            assert_eq!(
                bits & (1 << 16),
                0,
                "{path}: {set} has CAP_SYS_MODULE: {line}"
            );
            // `open_by_handle_at` opens by inode, past the read rules' paths.
            assert_eq!(
                bits & (1 << 2),
                0,
                "{path}: {set} has CAP_DAC_READ_SEARCH: {line}"
            );
            assert_ne!(
                bits & (1 << 1),
                0,
                "{path}: {set} lost CAP_DAC_OVERRIDE: {line}"
            );
            assert_ne!(bits & 1, 0, "{path}: {set} lost CAP_CHOWN: {line}");
        }
        assert!(!said.contains("unshared"), "{path}: {said}");
        assert!(said.contains("clone refused"), "{path}: {said}");
    }
    // An unconfined command keeps them (nothing to confine).
    let server = start_with(&["--mode", "auto"]).await;
    let (_, s) = server
        .terminal(json!({"command": "grep CapEff /proc/self/status"}))
        .await;
    assert!(s["stdout"].as_str().unwrap().contains("000001ff"), "{s}");
}

/// A container masks parts of `/proc` (`/proc/keys` under `/dev/null`, `/proc/sys` read-only);
/// the session's own `/proc` keeps those masks, so a confined command sees what the server's
/// `/proc` shows and no more. The server runs here in a mount namespace masked that way.
#[tokio::test]
async fn the_sessions_proc_keeps_the_masks_of_the_servers() {
    let server = start_wrapped(
        &[
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount --bind /dev/null /proc/keys && mount --bind /proc/sys /proc/sys && \
             mount -o remount,bind,ro /proc/sys && exec \"$0\" \"$@\"",
        ],
        tempfile::tempdir().unwrap(),
        agentty_testkit::state_dir(),
        &[],
        &[],
    )
    .await;
    let (_, s) = server
        .terminal(json!({"command": "stat -L -c %F /proc/keys; \
            awk '$5 == \"/proc/sys\" && $6 ~ /^ro/' /proc/self/mountinfo | wc -l; \
            ps -e | wc -l"}))
        .await;
    let out = s["stdout"].as_str().unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"character special file"), "{out}");
    // Two read-only mounts on /proc/sys: the server's (covered by the session's /proc, still
    // listed) and the session's own on top.
    assert_eq!(lines.get(1).map(|l| l.trim()), Some("2"), "{out}");
    // Still the session's own /proc: its init, the shell, ps, wc and the header.
    assert!(
        lines.get(2).and_then(|n| n.trim().parse::<u32>().ok()) < Some(10),
        "{out}"
    );
}

/// Package sources already extracted in the caches (a crate's `build.rs`, a git checkout) are
/// read-only to confined commands on every path, so nothing planted there runs at the user's
/// next unconfined `cargo build`; a crate extracted during the session is written as usual.
#[tokio::test]
async fn extracted_crates_are_read_only_to_confined_commands_and_new_ones_extract() {
    let cargo = tempfile::tempdir().unwrap();
    let crate_dir = cargo.path().join("registry/src/idx/planted-1.0.0");
    let checkout = cargo.path().join("git/checkouts/repo-1/abc");
    for dir in [&crate_dir, &checkout] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("build.rs"), "fn main() {}\n").unwrap();
    }
    let server = start_at_with_env(
        tempfile::tempdir().unwrap(),
        agentty_testkit::state_dir(),
        &[],
        &[("CARGO_HOME", cargo.path())],
    )
    .await;
    // Also the detours: renaming a folder above the crate away (to put a writable copy in its
    // place), and making the read-only mount writable again with the mount API (root).
    let script = "src=$CARGO_HOME/registry/src/idx; \
         echo 'planted' >> $src/planted-1.0.0/build.rs && echo appended; \
         mv $src/planted-1.0.0 $src/gone-1.0.0 2>/dev/null && echo moved; \
         rm $src/planted-1.0.0/build.rs 2>/dev/null && echo removed; \
         mv $src $src.old 2>/dev/null && echo index-moved; \
         mv $CARGO_HOME/registry $CARGO_HOME/registry.old 2>/dev/null && echo registry-moved; \
         mv $CARGO_HOME $CARGO_HOME.old 2>/dev/null && echo home-moved; \
         /usr/bin/python3 -c 'import ctypes, os, sys; l = ctypes.CDLL(None, use_errno=True); \
         a = (ctypes.c_uint64 * 4)(0, 1, 0, 0); \
         rc = l.syscall(442, -100, sys.argv[1].encode(), 0, a, 32); \
         print(\"remounted\" if rc == 0 else \"remount refused\")' $src/planted-1.0.0; \
         echo 'planted' >> $src/planted-1.0.0/build.rs && echo appended-after; \
         echo 'planted' >> $CARGO_HOME/git/checkouts/repo-1/abc/build.rs && echo git-appended; \
         mkdir $src/new-$$ && echo 'fn main() {}' > $src/new-$$/build.rs && echo extracted; \
         rm $src/new-$$/build.rs; rmdir $src/new-$$; echo sources-done";
    for path in ["pipe", "pty", "background", "shell"] {
        let said = run_on_path(&server, path, script).await;
        assert!(said.contains("sources-done"), "{path}: {said}");
        assert!(said.contains("extracted"), "{path}: {said}");
        assert!(said.contains("remount refused"), "{path}: {said}");
        for planted in [
            "appended",
            "moved",
            "removed",
            "index-moved",
            "registry-moved",
            "home-moved",
            "remounted",
            "appended-after",
            "git-appended",
        ] {
            assert!(
                !said.lines().any(|l| l.trim() == planted),
                "{path}: {planted}: {said}"
            );
        }
        assert!(said.contains("Read-only file system"), "{path}: {said}");
    }
    for dir in [&crate_dir, &checkout] {
        assert_eq!(
            std::fs::read_to_string(dir.join("build.rs")).unwrap(),
            "fn main() {}\n"
        );
    }
}

/// Confined commands have terminals of their own (a devpts of the session's): `tty`, `stty`,
/// `script` and Python's `pty` work on every path, and the user's other terminals are not there.
#[tokio::test]
async fn own_terminals_work_on_every_path_and_other_terminals_are_not_there() {
    let (_other_master, other_slave) = agentty_testkit::open_terminal();
    let server = start().await;
    let script = "script -qec 'tty && stty size' /dev/null && \
         /usr/bin/python3 -c 'import os, pty; m, s = pty.openpty(); os.write(s, b\"ok\"); print(\"py-pty\", os.read(m, 2))' && \
         ls /dev/pts | tr '\\n' ' ' && echo && echo terminals-done";
    for path in ["pipe", "pty", "background", "shell"] {
        let said = run_on_path(&server, path, script).await;
        assert!(said.contains("terminals-done"), "{path}: {said}");
        assert!(
            said.contains("/dev/pts/"),
            "{path}: script got no tty: {said}"
        );
        assert!(said.contains("py-pty b'ok'"), "{path}: {said}");
        assert!(!said.contains("not a tty"), "{path}: {said}");
    }
    // On its own terminal (`pty`, a shell), the command can name and write to it.
    let said = run_on_path(&server, "pty", "tty && echo mine > $(tty) && stty size").await;
    assert!(said.contains("mine"), "{said}");
    assert!(!said.contains("not a tty"), "{said}");
    // The session's /dev/pts is another devpts instance than the user's (so the user's
    // terminals, e.g. `other_slave`, are not in it): its device number differs.
    use std::os::unix::fs::MetadataExt;
    let host = std::fs::metadata("/dev/pts").unwrap().dev();
    let (_, s) = server
        .terminal(json!({"command": "stat -c %d /dev/pts"}))
        .await;
    let seen: u64 = s["stdout"].as_str().unwrap().trim().parse().unwrap();
    assert_ne!(
        seen, host,
        "commands see the user's /dev/pts ({other_slave} among them)"
    );
}

/// A shell's terminal is out of every other spawn's reach: each PTY has a terminal of its own,
/// its `/dev/pts/0` for a root server, named by no path for an unprivileged one (made in a user
/// namespace). Commands on every other path (and another shell) write to every terminal they
/// can name; none of it shows in the first shell, which would take it as its own output
/// (forged text), and had they opened it for reading, they would have taken the keys typed
/// into it.
#[tokio::test]
async fn no_other_spawn_reaches_a_shells_terminal() {
    no_other_spawn_reaches_a_shells_terminal_as(Who::Root).await;
}

#[tokio::test]
async fn no_other_spawn_reaches_a_shells_terminal_as_nobody() {
    no_other_spawn_reaches_a_shells_terminal_as(Who::Nobody).await;
}

/// An unprivileged server's terminal maker (the helper in a user namespace that makes each PTY
/// spawn's terminal) stopped from outside the sandbox (the user's SIGSTOP): the next PTY spawn
/// waits for it a bounded time, ends it and takes its terminal from a new one; it used to hold
/// the server's worker, and every session with it, until the maker went on.
#[tokio::test]
async fn a_stopped_terminal_maker_is_replaced() {
    let (server, _log, _home) = serve_as(Who::Nobody, &[], tempfile::tempdir().unwrap(), &[]).await;
    let (said, _) = server
        .terminal(json!({"command": "echo first", "pty": true}))
        .await;
    assert!(said.contains("first"), "{said}");
    let serving = serving_pid(server.pid);
    let makers = || {
        agentty_testkit::children(serving)
            .into_iter()
            .filter(|&pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|comm| comm.trim() == "agentty-ttys")
            })
            .collect::<Vec<i32>>()
    };
    let stopped = makers();
    assert_eq!(stopped.len(), 1, "one maker: {stopped:?}");
    // SAFETY: kill with a pid of the server's child, found above.
    assert_eq!(unsafe { libc::kill(stopped[0], libc::SIGSTOP) }, 0);
    let second = server.terminal(json!({"command": "echo second", "pty": true}));
    let second = tokio::time::timeout(std::time::Duration::from_secs(30), second).await;
    let now = makers();
    if now.contains(&stopped[0]) {
        // A failed run leaves neither the stopped maker nor, held by it, the server behind.
        // SAFETY: kill with a pid of the server's child, found again above.
        unsafe { libc::kill(stopped[0], libc::SIGKILL) };
    }
    let (said, _) = second.expect("the PTY spawn waited on the stopped maker");
    assert!(said.contains("second"), "{said}");
    assert_eq!(now.len(), 1, "one maker: {now:?}");
    assert_ne!(now[0], stopped[0], "the stopped maker is still the one");
}

/// A process that left a shell's session (`setsid -f`) with the shell's terminal as its input
/// reads it unhindered by job control: a line typed at the prompt is held, and the reply names
/// why. Known by the terminal's file: an unprivileged server's terminals are named by no path
/// (every one's fds read `/0`), a root server's are each `/dev/pts/0` of an instance of its own.
#[tokio::test]
async fn a_process_outside_a_shells_session_holding_its_terminal_is_found() {
    outside_holder_is_found_as(Who::Root).await;
}

#[tokio::test]
async fn a_process_outside_a_shells_session_holding_its_terminal_is_found_as_nobody() {
    outside_holder_is_found_as(Who::Nobody).await;
}

async fn outside_holder_is_found_as(who: Who) {
    let (server, _log, _home) = serve_as(who, &[], tempfile::tempdir().unwrap(), &[]).await;
    let shell = server.open_shell().await;
    server.shell_send(&shell, "setsid -f sleep 60\n").await;
    // `setsid -f` returns before its child has left the session: until then, lines are typed.
    let started = std::time::Instant::now();
    let said = loop {
        let (said, s) = server.shell_send(&shell, "true\n").await;
        if s["status"] != "done" || started.elapsed() > std::time::Duration::from_secs(10) {
            break said;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        said.contains("holds the terminal open from outside the shell's session"),
        "{said}"
    );
}

async fn no_other_spawn_reaches_a_shells_terminal_as(who: Who) {
    let (server, _log, _home) = serve_as(who, &[], tempfile::tempdir().unwrap(), &[]).await;
    let shell = server.open_shell().await;
    let (said, _) = server.shell_send(&shell, "tty\n").await;
    let named = match who {
        Who::Root => "/dev/pts/0",
        Who::Nobody => "not a tty",
    };
    assert!(said.contains(named), "{said}");
    for path in ["pipe", "pty", "background", "shell"] {
        let attack = format!(
            "mine=$(tty 2>/dev/null); for f in /dev/pts/[0-9]*; do \
             [ \"$f\" = \"$mine\" ] || echo FORGED-{path} > $f; done 2>/dev/null; \
             ls /dev/pts | tr '\\n' ' '; echo attack-done"
        );
        let said = run_on_path(&server, path, &attack).await;
        assert!(said.contains("attack-done"), "{path}: {said}");
    }
    // Its screen shows whatever reached the terminal since it opened, in order.
    server.shell_send(&shell, "echo still-mine\n").await;
    let screen = server
        .call("shell_read", json!({"id": &shell, "screen": true}))
        .await;
    let screen = text_of(&screen);
    assert!(screen.contains("still-mine"), "{screen}");
    assert!(
        !screen.contains("FORGED"),
        "another spawn wrote into the shell's terminal: {screen}"
    );
}

/// A refused write inside a pipeline that exits 0 (`cp … 2>&1 | tail -3`, the shape models
/// write most) is still reported as 2008, on every path; a denial that is not the sandbox's
/// (`ssh`'s, no path) is not, whatever the exit code.
#[tokio::test]
async fn a_refused_write_is_reported_even_when_the_command_exits_0() {
    let server = start().await;
    let dir = outside("exit0");
    std::fs::create_dir_all(&dir).unwrap();
    for path in ["pipe", "pty", "background", "shell"] {
        let target = dir.join(format!("copied-{path}"));
        let cmd = format!(
            "echo data > src-{path} && cp src-{path} {} 2>&1 | tail -3",
            target.display()
        );
        let said = run_on_path(&server, path, &cmd).await;
        assert!(!target.exists(), "{path}: the copy got out");
        assert!(said.contains("Permission denied"), "{path}: {said}");
        assert!(said.contains("2008"), "{path}: not reported: {said}");
    }
    let (text, s) = server
        .terminal(json!({"command": "echo 'git@host: Permission denied (publickey).' | tail -1"}))
        .await;
    assert!(s["error_code"].is_null(), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A refused *read* is not the write sandbox's: a `cat` of another process's environment, or a
/// redirection from it, is said as a read, with no 2008 and no advice to add a writable root.
/// It was reported as `[error 2008] … a write to /proc/1/environ was refused`, with `--add-dir`.
#[tokio::test]
async fn a_refused_read_is_worded_as_a_read_not_as_2008() {
    let server = start().await;
    // The session's init (pid 1 of its PID namespace, or the system's init without one):
    // confined commands may not read its environment.
    for command in [
        "cat /proc/1/environ | head -c 20",
        "wc -c < /proc/1/environ",
        "grep -c PATH /proc/1/environ",
    ] {
        let (text, structured) = server.terminal(json!({"command": command})).await;
        assert!(!text.contains("2008"), "{command}: {text}");
        assert!(!text.contains("add-dir"), "{command}: {text}");
        assert!(
            structured["error_code"].is_null(),
            "{command}: {structured}"
        );
        // Where this server can read it itself (as root), the note says what was refused.
        if std::fs::read("/proc/1/environ").is_ok() {
            assert!(
                text.contains("[note] reading /proc/1/environ was refused"),
                "{command}: {text}"
            );
        }
    }
    // A refused write outside is still 2008.
    let (text, structured) = server
        .terminal(json!({"command": "touch /etc/agentty-read-test 2>&1 | tail -1"}))
        .await;
    assert_eq!(structured["error_code"], 2008, "{text}");
}
