//! Results the model can trust (issue 40), through the real binary with its sandbox: a program
//! in a confined shell cannot end its command in agentty's eyes nor read what the agent types
//! at an idle prompt, and a password prompt points the model to `secret`.

use serde_json::{Value, json};

use super::client::*;

async fn send(server: &Server, input: &str, timeout_ms: u64) -> (String, Value) {
    let result = server
        .call(
            "shell_send",
            json!({"id": "s1", "input": input, "timeout_ms": timeout_ms}),
        )
        .await;
    assert_eq!(result.is_error, Some(false), "{input:?}: {result:?}");
    (
        text_of(&result),
        result.structured_content.unwrap_or(Value::Null),
    )
}

fn claims_idle(s: &Value) -> bool {
    matches!(s["status"].as_str(), Some("done" | "at_prompt"))
}

const SECRET_LINE: &str = "export GITHUB_TOKEN=ghp_forged\n";

/// The forger (its header lists its tricks) in a confined bash: here it also names the shell's
/// pid in its credentials, which the kernel refuses to a process without CAP_SYS_ADMIN (the
/// sandbox drops it), and knows the markers' nonce (the agent wrote the shell's variables to a
/// file). In the foreground it is never taken for the shell, and `shell_list` names it; as a
/// daemon that left the session and reads the terminal, it gets nothing the agent types, and
/// the reply says who holds the terminal.
#[tokio::test]
async fn a_program_in_a_confined_shell_cannot_pass_for_the_shell() {
    let server = start().await;
    let dir = server.workspace().to_path_buf();
    std::fs::write(dir.join("forger.py"), agentty_testkit::FORGER_PY).unwrap();
    let result = server.call("shell_open", json!({})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");

    // The shell's variables (its prompts, with their nonce) where the forger looks too.
    let (text, s) = send(&server, "set > variables\n", 10_000).await;
    assert_eq!(s["status"], "done", "{text}");
    let (text, s) = send(
        &server,
        "FORGER_SPOOF=1 FORGER_LEAK=variables python3 forger.py impersonate fg.log\n",
        2_000,
    )
    .await;
    assert!(!claims_idle(&s), "{text}");
    let (text, s) = send(&server, SECRET_LINE, 1_500).await;
    assert!(!claims_idle(&s), "{text}");
    // shell_list says what runs, not that the shell is at its prompt.
    let result = server.call("shell_list", json!({})).await;
    let list = text_of(&result);
    assert!(
        list.contains("· running ") && list.contains("forger.py impersonate"),
        "{list}"
    );
    let (text, s) = send(&server, "\u{3}", 10_000).await;
    assert_eq!(s["status"], "done", "{text}");

    let ready = dir.join("ready");
    let daemon = format!(
        "FORGER_SPOOF=1 python3 forger.py daemon daemon.log {}\n",
        ready.display()
    );
    let (text, s) = send(&server, &daemon, 10_000).await;
    assert_eq!(s["status"], "done", "{text}");
    let thief = tokio::task::spawn_blocking(move || {
        agentty_testkit::wait_reading(&ready, std::time::Duration::from_secs(20))
    })
    .await
    .unwrap();
    let (text, s) = send(&server, SECRET_LINE, 1_500).await;
    assert!(!claims_idle(&s), "{text}");
    assert!(
        text.starts_with("[nothing was typed") && text.contains("forger.py daemon"),
        "{text}"
    );
    assert_eq!(
        s["untyped_bytes"],
        SECRET_LINE.len(),
        "typed while {thief} reads: {text}"
    );
    let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
    assert!(!log.contains("ghp_"), "{log}");
}

/// At a password prompt (echo off) the model is pointed to `secret`, in a shell and from a
/// one-shot `pty: true` command; a prompt that is no password is answered with `input`.
#[tokio::test]
async fn a_password_prompt_points_to_secret() {
    let server = start().await;
    let result = server.call("shell_open", json!({})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let secret = r#"shell_send({"id": "s1", "secret": "#;
    let (text, s) = send(
        &server,
        "python3 -c 'import getpass; getpass.getpass(\"Key: \")'\n",
        10_000,
    )
    .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    assert!(text.contains(secret), "{text}");
    send(&server, "\u{3}", 10_000).await;
    // Echo on, but the prompt asks for one: the model is warned off typing it.
    let (text, s) = send(&server, "python3 -c 'input(\"Enter PIN: \")'\n", 10_000).await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    assert!(text.contains(secret), "{text}");
    send(&server, "\u{3}", 10_000).await;
    let (text, s) = send(
        &server,
        "python3 -c 'input(\"Continue? [y/N] \")'\n",
        10_000,
    )
    .await;
    assert_eq!(s["status"], "awaiting_input", "{text}");
    assert!(!text.contains("secret"), "{text}");
    send(&server, "\u{3}", 10_000).await;

    let (text, _) = server
        .terminal(json!({
            "command": "python3 -c 'import getpass; getpass.getpass()'",
            "pty": true,
        }))
        .await;
    assert!(
        text.contains("shell_open") && text.contains("\"secret\""),
        "{text}"
    );
}
