//! What confined commands may not read (docs/BEHAVIOUR.md §5), through the real binary, by a
//! root server (the session's mount namespace exists) and by the same server as nobody (none):
//! agentty's token file (the web view's and every MCP capability), another session's spill
//! file, another server's shell start-up file, a `deny_read` path, and the server's memory and
//! environment (the view's keys and login codes) are refused on every path, each file said as a
//! refused read; the same server unconfined reads them all (so the attack
//! is real); and ordinary work still reads what it read before: the workspace, `~/.gitconfig`,
//! `/usr`, git, Python, its own spill files, and a file made in home after the server started.
//! Over HTTP, a caller's commands (in a PID namespace of the caller's own, as root) read their
//! own `/proc` and not the token.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::client::*;

/// A server with a home of its own (outside every place commands may write), its state dir in
/// `~/.local/state` with a token made by `--view`, another session's spill file in it, a secret
/// in `~/.aws` kept by `--deny-read`, and a repository as its workspace.
struct Setup {
    server: Server,
    home: tempfile::TempDir,
    who: Who,
}

const SECRET: &str = "SECRET-aws-key";
const OTHER_SPILL: &str = "OTHER-session-output";
const OTHER_STARTUP: &str = "OTHER-shell-nonce";

impl Setup {
    fn state(&self) -> PathBuf {
        self.server.state.path().to_path_buf()
    }

    fn token_file(&self) -> PathBuf {
        self.state().join("token")
    }

    /// The token the server made: what a confined command must not learn.
    fn token(&self) -> String {
        std::fs::read_to_string(self.token_file())
            .unwrap()
            .trim()
            .to_owned()
    }

    fn other_spill(&self) -> PathBuf {
        self.state().join("spill/1-2-3/c1.log")
    }

    /// Another server's shell start-up file (its prompt hooks' nonce), beside this server's
    /// own start-up directory, which its commands may read.
    fn other_startup(&self) -> PathBuf {
        self.state()
            .join("shells")
            .join(live_server_name())
            .join("shell-0a/bashrc")
    }

    fn secret(&self) -> PathBuf {
        self.home.path().join(".aws/credentials")
    }

    async fn run(&self, command: &str) -> (String, Value) {
        self.server.terminal(json!({ "command": command })).await
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The name of a server that is alive while the test runs (this process stands for its
/// watchdog: its pid and start tick), so a server starting does not take its directories for
/// a killed server's leftovers.
fn live_server_name() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let start_tick = after.split_whitespace().nth(19).unwrap();
    format!("1-{}-{start_tick}", std::process::id())
}

async fn serve(who: Who, flags: &[&str]) -> Setup {
    let home = tempfile::Builder::new()
        .prefix("keys-home-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".local/state")).unwrap();
    let state = tempfile::Builder::new()
        .prefix("agentty-")
        .tempdir_in(h.join(".local/state"))
        .unwrap();
    let other = state.path().join("spill/1-2-3");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("c1.log"), OTHER_SPILL).unwrap();
    let startup = state
        .path()
        .join("shells")
        .join(live_server_name())
        .join("shell-0a");
    std::fs::create_dir_all(&startup).unwrap();
    std::fs::write(startup.join("bashrc"), OTHER_STARTUP).unwrap();
    std::fs::create_dir_all(h.join(".aws")).unwrap();
    std::fs::write(h.join(".aws/credentials"), SECRET).unwrap();
    std::fs::write(h.join(".gitconfig"), "[user]\n\tname = keys-test\n").unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "WS-FILE\n").unwrap();
    git(workspace.path(), &["init", "-q"]);
    let mut all = vec!["--view", "127.0.0.1:0", "--deny-read", "~/.aws"];
    all.extend_from_slice(flags);
    let (server, _) = start_as(who, &[], workspace, state, &all, Some(h)).await;
    Setup { server, home, who }
}

/// Every attack, in one script: each prints its marker only if it read something. The server's
/// memory holds the view's keys and login codes (and its environment what it was started with).
fn attacks(s: &Setup) -> String {
    format!(
        "cat {token} && echo READ-token; cat {spill} && echo READ-spill; \
         cat {startup} && echo READ-startup; cat {secret} && echo READ-secret; \
         (exec 3</proc/{serving}/mem) && echo READ-mem; \
         head -c 16 /proc/{serving}/environ >/dev/null && echo READ-environ; echo attacks-done",
        serving = serving_pid(s.server.pid),
        token = s.token_file().display(),
        spill = s.other_spill().display(),
        startup = s.other_startup().display(),
        secret = s.secret().display(),
    )
}

async fn keys_and_secrets_are_unreadable(who: Who) {
    let s = serve(who, &[]).await;
    let token = s.token();
    for path in ["pipe", "pty", "background", "shell"] {
        let said = super::sandbox::run_on_path(&s.server, path, &attacks(&s)).await;
        assert!(said.contains("attacks-done"), "{who:?} {path}: {said}");
        for leaked in [token.as_str(), OTHER_SPILL, OTHER_STARTUP, SECRET, "READ-"] {
            assert!(
                !said.contains(leaked),
                "{who:?} {path}: read {leaked}: {said}"
            );
        }
    }
    // Each refusal is said as a read of that path, with why, and never as a refused write.
    let keys = "the sandbox keeps agentty's own keys and state from commands";
    let user = "the user keeps it from commands (deny_read in agentty's config)";
    for (file, why) in [
        (s.token_file(), keys),
        (s.other_spill(), keys),
        (s.other_startup(), keys),
        (s.secret(), user),
    ] {
        let (text, structured) = s
            .run(&format!("cat {} | head -c 100", file.display()))
            .await;
        assert!(
            text.contains(&format!(
                "[note] the output shows reading {:?} refused: {why}",
                file.display()
            )),
            "{who:?}: {text}"
        );
        assert!(structured["error_code"].is_null(), "{who:?}: {structured}");
        let line = structured["sandbox"].as_str().unwrap();
        assert!(
            line.contains("; unreadable: agentty's keys and state, ~/.aws"),
            "{who:?}: {line}"
        );
    }
    // Nor through the server's own view of its files (`/proc/<pid>/root`, its fds).
    let serving = serving_pid(s.server.pid);
    let (text, _) = s
        .run(&format!(
            "cat /proc/{serving}/root{} /proc/{serving}/fd/* 2>&1 | head -c 300",
            s.token_file().display()
        ))
        .await;
    assert!(!text.contains(&token), "{who:?}: {text}");
    // Only the command's own stdio, and the directory `ls` reads: nothing inherited, not even
    // what the server's own parent leaked to it (a harness or host may start it with more).
    let (text, structured) = s.run("ls /proc/self/fd").await;
    assert_eq!(structured["stdout"], "0\n1\n2\n3\n", "{who:?}: {text}");
    ordinary_work_still_reads(&s).await;
}

/// What worked before still works: the workspace, home's dotfiles, the system, git, Python, the
/// session's own spill files, and a file made in home (and one replaced there) after start.
async fn ordinary_work_still_reads(s: &Setup) {
    let who = s.who;
    let (text, structured) = s
        .run(
            "cat notes.txt ~/.gitconfig && git status --short && head -c 0 /usr/bin/env && \
             /usr/bin/python3 -c 'import json, sqlite3, email.parser; print(\"py-ok\")' && \
             ls ~/.aws",
        )
        .await;
    let out = structured["stdout"].as_str().unwrap();
    for word in ["WS-FILE", "keys-test", "py-ok", "credentials"] {
        assert!(out.contains(word), "{who:?}: {word}: {text}");
    }
    let (text, structured) = s.run("seq 1 40000").await;
    let spill = structured["spill_path"]
        .as_str()
        .unwrap_or_else(|| panic!("{who:?}: no spill: {text}"));
    let (_, structured) = s.run(&format!("sed -n '2p;39999p' {spill}")).await;
    assert_eq!(structured["stdout"], "2\n39999\n", "{who:?}");
    // Made by the user after the server started, one new and one replaced by rename (as `git
    // config --global` does): read by the next command.
    let h = s.home.path();
    std::fs::write(h.join(".later-rc"), "LATER\n").unwrap();
    std::fs::write(h.join(".gitconfig.new"), "[user]\n\tname = replaced\n").unwrap();
    std::fs::rename(h.join(".gitconfig.new"), h.join(".gitconfig")).unwrap();
    if who == Who::Nobody {
        chown_to_nobody(h);
    }
    let (text, structured) = s.run("cat ~/.later-rc ~/.gitconfig").await;
    let out = structured["stdout"].as_str().unwrap();
    assert!(
        out.contains("LATER") && out.contains("replaced"),
        "{who:?}: {text}"
    );
}

/// The same attacks by the same server with the sandbox off read everything: what the tests
/// above refuse is really there to be read.
async fn unconfined_the_same_reads_succeed(who: Who) {
    let s = serve(who, &["--no-sandbox"]).await;
    let (text, _) = s.run(&attacks(&s)).await;
    for read in [
        "READ-token",
        "READ-spill",
        "READ-startup",
        "READ-secret",
        "READ-mem",
        "READ-environ",
        SECRET,
        OTHER_SPILL,
        OTHER_STARTUP,
    ] {
        assert!(text.contains(read), "{who:?}: {read}: {text}");
    }
    assert!(text.contains(&s.token()), "{who:?}: {text}");
}

#[tokio::test]
async fn keys_state_and_deny_read_are_unreadable_to_confined_commands_as_root() {
    keys_and_secrets_are_unreadable(Who::Root).await;
}

#[tokio::test]
async fn keys_state_and_deny_read_are_unreadable_to_confined_commands_as_nobody() {
    keys_and_secrets_are_unreadable(Who::Nobody).await;
}

#[tokio::test]
async fn unconfined_commands_read_the_same_files_as_root() {
    unconfined_the_same_reads_succeed(Who::Root).await;
}

#[tokio::test]
async fn unconfined_commands_read_the_same_files_as_nobody() {
    unconfined_the_same_reads_succeed(Who::Nobody).await;
}

/// Over HTTP a root server runs each caller's confined commands in a PID namespace of the
/// caller's own, whose `/proc` is a mount of its own: the read rules are made for it too, so
/// `/proc` reads there as it does for the session's commands (`ps`, `/proc/self`), through a
/// session and without one, and the token file stays out of reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_callers_commands_read_their_own_proc_and_not_the_token() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root");
    let server = super::http::HttpServer::start();
    let token_file = server.state.path().join("token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let script = format!(
        "head -1 /proc/self/status; ps -o pid= -p $$ >/dev/null && echo ps-ok; \
         cat {} && echo READ-token; echo done",
        token_file.display()
    );
    for modern in [false, true] {
        let client = server.connect(modern).await;
        let result = super::http::call(&client, "terminal", json!({ "command": &script })).await;
        let text = text_of(&result);
        let out = result.structured_content.as_ref().unwrap()["stdout"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(out.starts_with("Name:\t"), "modern {modern}: {text}");
        assert!(
            out.contains("ps-ok") && out.contains("done"),
            "modern {modern}: {text}"
        );
        assert!(
            !out.contains("READ-token") && !text.contains(token.trim()),
            "modern {modern}: {text}"
        );
        assert!(
            text.contains(&format!(
                "[note] the output shows reading {:?} refused",
                token_file.display()
            )),
            "modern {modern}: {text}"
        );
        client.cancel().await.unwrap();
    }
}

/// A token file given with `--token-file` outside the state dir (here `~/.config/agentty-tokens`)
/// is kept from confined commands' reads as the state dir is, root or not; the same server
/// unconfined reads it.
async fn a_token_file_elsewhere_is_unreadable(who: Who) {
    const TOKEN: &str = "0123456789abcdef0123456789abcdef-elsewhere";
    let home = tempfile::Builder::new()
        .prefix("keys-token-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let file = home.path().join(".config/agentty-tokens");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    if who == Who::Nobody {
        chown_to_nobody(home.path());
    }
    let given = file.display().to_string();
    for (flags, confined) in [
        (vec!["--token-file", &given], true),
        (vec!["--token-file", &given, "--no-sandbox"], false),
    ] {
        let s = serve(who, &flags).await;
        let (text, _) = s
            .run(&format!("cat {given} && echo READ-token; echo done"))
            .await;
        assert!(text.contains("done"), "{who:?}: {text}");
        assert_eq!(text.contains(TOKEN), !confined, "{who:?} {flags:?}: {text}");
        if confined {
            assert!(
                text.contains(&format!(
                    "[note] the output shows reading {given:?} refused: the sandbox keeps agentty's own keys"
                )),
                "{who:?}: {text}"
            );
        }
    }
}

#[tokio::test]
async fn a_token_file_elsewhere_is_unreadable_to_confined_commands_as_root() {
    a_token_file_elsewhere_is_unreadable(Who::Root).await;
}

#[tokio::test]
async fn a_token_file_elsewhere_is_unreadable_to_confined_commands_as_nobody() {
    a_token_file_elsewhere_is_unreadable(Who::Nobody).await;
}

/// Over HTTP, each caller's sessions spill in a directory of the caller's own, which only that
/// caller's confined commands may read: bob cannot read alice's spill file (through a session
/// and without one), alice can, as root (each caller in a PID namespace of its own) and as
/// nobody (no namespace, one mount view).
async fn a_callers_spill_files_are_its_own(who: Who) {
    let (server, _home) = super::http::HttpServer::start_callers(who, &[]);
    let stdout = |result: &rmcp::model::CallToolResult| -> String {
        result.structured_content.as_ref().unwrap()["stdout"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for modern in [false, true] {
        let (alice, bob) = (
            server.connect_as(super::http::ALICE, modern).await,
            server.connect_as(super::http::BOB, modern).await,
        );
        let spilled = super::http::call(
            &alice,
            "terminal",
            json!({ "command": "seq 1 40000 | sed 's/^/ALICE-LINE-/'" }),
        )
        .await;
        let spill = spilled.structured_content.as_ref().unwrap()["spill_path"]
            .as_str()
            .unwrap_or_else(|| panic!("{who:?}: no spill: {}", text_of(&spilled)))
            .to_owned();
        let read = format!("sed -n '39999p' {spill} && echo READ-spill; echo done");
        let by_bob = super::http::call(&bob, "terminal", json!({ "command": &read })).await;
        let text = text_of(&by_bob);
        assert!(
            stdout(&by_bob).contains("done"),
            "{who:?} modern {modern}: {text}"
        );
        assert!(
            !text.contains("ALICE-LINE-") && !text.contains("READ-spill"),
            "{who:?} modern {modern}: bob read alice's spill file: {text}"
        );
        assert!(
            text.contains(&format!(
                "[note] the output shows reading {spill:?} refused"
            )),
            "{who:?} modern {modern}: {text}"
        );
        let by_alice = super::http::call(&alice, "terminal", json!({ "command": &read })).await;
        assert!(
            stdout(&by_alice).contains("ALICE-LINE-39999"),
            "{who:?} modern {modern}: {}",
            text_of(&by_alice)
        );
        alice.cancel().await.unwrap();
        bob.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_spill_files_are_its_own_as_root() {
    a_callers_spill_files_are_its_own(Who::Root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_spill_files_are_its_own_as_nobody() {
    a_callers_spill_files_are_its_own(Who::Nobody).await;
}
