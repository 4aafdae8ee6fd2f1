//! The guard judges what a shell will execute however it arrives, not only the command line: a
//! script on a shell's stdin, code the environment makes a shell run, a line typed in pieces.
//! The payload is blocked by the guard and harmless if it ran (no such disk).

use serde_json::json;

use super::client::*;

const PAYLOAD: &str = "mkfs.ext4 /dev/agentty-nonexistent-disk";

async fn refused(server: &Server, args: serde_json::Value, says: &str) {
    let result = server.call("terminal", args.clone()).await;
    let text = text_of(&result);
    assert_eq!(result.is_error, Some(true), "{args}: ran: {text}");
    assert!(text.contains("format-disk"), "{args}: {text}");
    assert!(text.contains(says), "{args}: {text}");
}

#[tokio::test]
async fn a_script_on_a_shells_stdin_is_judged() {
    let server = start().await;
    let stdin = format!("echo hi\n{PAYLOAD}\n");
    refused(&server, json!({"argv": ["bash"], "stdin": stdin}), "stdin").await;
    refused(
        &server,
        json!({"argv": ["sudo", "sh", "-s"], "stdin": stdin}),
        "stdin",
    )
    .await;
    refused(
        &server,
        json!({"command": "cat | bash", "stdin": stdin}),
        "stdin",
    )
    .await;
    refused(
        &server,
        json!({"command": "bash", "stdin": stdin, "pty": true}),
        "stdin",
    )
    .await;
    // Data for a program that is not a shell is data.
    let (text, _) = server
        .terminal(json!({"argv": ["cat"], "stdin": stdin}))
        .await;
    assert!(text.contains(PAYLOAD), "{text}");
}

#[tokio::test]
async fn code_the_environment_makes_a_shell_run_is_judged() {
    let server = start().await;
    std::fs::write(server.workspace().join("evil.sh"), format!("{PAYLOAD}\n")).unwrap();
    for (key, value) in [
        ("BASH_ENV", "evil.sh"),
        ("ENV", "evil.sh"),
        ("PROMPT_COMMAND", PAYLOAD),
        ("PS4", "$(mkfs.ext4 /dev/agentty-nonexistent-disk)"),
        (
            "BASH_FUNC_ls%%",
            "() { mkfs.ext4 /dev/agentty-nonexistent-disk; }",
        ),
    ] {
        let args = json!({"command": "ls", "env": {key: value}});
        refused(&server, args, &format!("env.{key}")).await;
    }
    let (_, s) = server
        .terminal(json!({"command": "echo $GREETING", "env": {"GREETING": "hello"}}))
        .await;
    assert_eq!(s["stdout"], "hello\n");
    // shell_open: the integration's own variables cannot be overridden.
    let r = server
        .call("shell_open", json!({"env": {"PROMPT_COMMAND": "true"}}))
        .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text_of(&r).contains("shell integration"), "{}", text_of(&r));
    let r = server
        .call("shell_open", json!({"env": {"BASH_ENV": "evil.sh"}}))
        .await;
    assert!(text_of(&r).contains("format-disk"), "{}", text_of(&r));
}

#[tokio::test]
async fn a_line_typed_in_pieces_is_judged_whole() {
    let server = start().await;
    let id = server.open_shell().await;
    let (text, _) = server.shell_send(&id, "mkfs.ext4 ").await;
    assert!(!text.contains("format-disk"), "{text}");
    let r = server
        .call(
            "shell_send",
            json!({"id": id, "input": "/dev/agentty-nonexistent-disk\n"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text_of(&r));
    assert!(text_of(&r).contains("format-disk"), "{}", text_of(&r));
    // Ctrl+U clears the typed line; the shell goes on.
    server.shell_send(&id, "\u{15}").await;
    let (text, _) = server.shell_send(&id, "echo piece; echo wise\n").await;
    assert!(text.contains("piece") && text.contains("wise"), "{text}");
    let (text, _) = server.shell_send(&id, "echo one").await;
    assert!(!text.contains("format-disk"), "{text}");
    let (text, _) = server.shell_send(&id, " two\n").await;
    assert!(text.contains("one two"), "{text}");
}

/// Keys typed into a shell on a terminal (`pty` with `stdin`) are judged as its line editor
/// would leave the lines: a key it edits with is refused (Ctrl+A would make
/// `/dev/…\u{1}mkfs.ext4 ` run `mkfs.ext4 /dev/…`), Backspace and Ctrl+U are applied.
#[tokio::test]
async fn keys_typed_into_a_shell_on_a_terminal_are_judged_as_edited() {
    let server = start().await;
    for stdin in [
        "/dev/agentty-nonexistent-disk\u{1}mkfs.ext4 \n",
        "/dev/agentty-nonexistent-disk\u{1b}[Hmkfs.ext4 \n",
    ] {
        let args = json!({"command": "bash --norc", "stdin": stdin, "pty": true});
        let result = server.call("terminal", args.clone()).await;
        let text = text_of(&result);
        assert_eq!(result.is_error, Some(true), "{args}: ran: {text}");
        assert!(text.contains("line editor"), "{args}: {text}");
    }
    for stdin in [
        format!("echo hi\u{15}{PAYLOAD}\n"),
        format!("echo \u{7f}\u{7f}\u{7f}\u{7f}\u{7f}{PAYLOAD}\n"),
    ] {
        let args = json!({"command": "bash --norc", "stdin": stdin, "pty": true});
        refused(&server, args, "stdin").await;
    }
}

/// A `BASH_ENV` naming a FIFO (a confined command can make one) must not hold the server: only a
/// regular file is read, without blocking; anything else is refused, and the server answers.
#[tokio::test]
async fn a_sourced_file_that_is_a_fifo_does_not_hold_the_server() {
    let server = start().await;
    let (_, s) = server
        .terminal(json!({"command": "mkfifo trap && echo made"}))
        .await;
    assert_eq!(s["stdout"], "made\n", "{s}");
    let r = server
        .call(
            "terminal",
            json!({"command": "true", "env": {"BASH_ENV": "trap"}}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text_of(&r));
    assert!(text_of(&r).contains("could not be read"), "{}", text_of(&r));
    let (_, s) = server.terminal(json!({"command": "echo still here"})).await;
    assert_eq!(s["stdout"], "still here\n");
}
