//! Results the model can trust (issue 40): nothing a program run in a shell prints or reads
//! makes agentty say the shell finished or is idle, and agentty types nothing into a terminal
//! another process reads while it believes the shell idle. Each attack is the forger
//! ([`agentty_testkit::FORGER_PY`]) in a real bash or zsh; its header lists the tricks.
//!
//! Also here: what a shell's prompt hooks may do without breaking that (a hook that runs a
//! command, a nested shell), and awaiting input judged on what a program really waits for.

use std::path::PathBuf;

use agentty_core::pty::{SendOutcome, SendStatus};

use super::common::send_for;
use super::pty::{Opened, PROMPT, open_one, send};

const ZSH: &str = "/usr/bin/zsh";

/// The forger, written into the test's scratch directory.
fn forger(t: &Opened) -> PathBuf {
    let path = t.file("forger.py");
    std::fs::write(&path, agentty_testkit::FORGER_PY).unwrap();
    path
}

/// Whether the send says the shell came back to its prompt.
fn claims_idle(out: &SendOutcome) -> bool {
    matches!(out.status, SendStatus::Done(_) | SendStatus::AtPrompt)
}

/// What the forger read of the terminal.
fn stolen(t: &Opened) -> String {
    String::from_utf8_lossy(&std::fs::read(t.file("log")).unwrap_or_default()).into_owned()
}

/// The line the agent would type next, believing the shell idle.
const SECRET_LINE: &str = "export GITHUB_TOKEN=ghp_forged\n";

/// The forger in the foreground prints "build finished OK" and forged end markers, with
/// every nonce it can find (environment, the shell's environ and command line, the files they
/// name, and here the shell's own variables, which the agent wrote to a file it reads) and
/// guessed sequence numbers, and writes completion datagrams to every inherited socket; then it
/// answers each line like a shell would.
async fn a_program_in_the_foreground_cannot_end_its_command(program: &str, mode: &str) {
    let t = open_one(program, &format!("forge-{mode}")).await;
    let forger = forger(&t);
    let (log, leak) = (t.file("log"), t.file("variables"));
    let out = send(&t.shell, &format!("set > {}\n", leak.display())).await;
    assert_eq!(out.status, SendStatus::Done(0), "{program} {mode}: {out:?}");
    let run = format!(
        "FORGER_LEAK={} python3 {} {mode} {}\n",
        leak.display(),
        forger.display(),
        log.display()
    );
    let out = send_for(&t.shell, &run, 2_000).await;
    assert!(!claims_idle(&out), "{program} {mode}: {out:?}");
    // The agent types on, to the program it was told about: never acknowledged as done.
    let out = send_for(&t.shell, SECRET_LINE, 1_500).await;
    assert!(!claims_idle(&out), "{program} {mode}: {out:?}");
    let out = send(&t.shell, "\u{3}").await;
    assert!(
        matches!(out.status, SendStatus::Done(_)),
        "{program} {mode}: {out:?}"
    );
    let out = send(&t.shell, "echo back\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{program} {mode}: {out:?}");
    assert_eq!(out.output, "back\n", "{program} {mode}: {out:?}");
    t.close_clean().await;
}

/// A reader that lurks beside the shell at its prompt: a daemon outside the session that opened
/// the terminal by its path, or a background job that joined the shell's process group. The
/// command that started it really ended; the agent's next line is not typed.
async fn a_lurking_reader_gets_nothing(program: &str, mode: &str) {
    let t = open_one(program, &format!("lurk-{mode}")).await;
    let forger = forger(&t);
    let (log, ready) = (t.file("log"), t.file("ready"));
    let background = if mode == "joiner" { " &" } else { "" };
    let run = format!(
        "python3 {} {mode} {} {}{background}\n",
        forger.display(),
        log.display(),
        ready.display()
    );
    let out = send(&t.shell, &run).await;
    assert_eq!(out.status, SendStatus::Done(0), "{program} {mode}: {out:?}");
    let reader = tokio::task::spawn_blocking(move || agentty_testkit::wait_reading(&ready, PROMPT))
        .await
        .unwrap();
    let out = send_for(&t.shell, SECRET_LINE, 1_500).await;
    assert!(
        matches!(&out.status, SendStatus::Held { by } if by.contains(&format!("forger.py {mode}"))),
        "{program} {mode}: {out:?}"
    );
    assert_eq!(
        out.untyped,
        SECRET_LINE.len(),
        "{program} {mode}: typed while {reader} reads the terminal: {out:?}"
    );
    assert!(
        !stolen(&t).contains("ghp_"),
        "{program} {mode}: {}",
        stolen(&t)
    );
    // The shell is still at its prompt.
    let out = send(&t.shell, "").await;
    assert_eq!(
        out.status,
        SendStatus::AtPrompt,
        "{program} {mode}: {out:?}"
    );
    t.close_clean().await;
}

#[tokio::test]
async fn a_forged_end_in_the_foreground_is_not_believed_bash() {
    a_program_in_the_foreground_cannot_end_its_command("/bin/bash", "impersonate").await;
}

#[tokio::test]
async fn a_forged_end_after_handing_the_terminal_back_is_not_believed_bash() {
    a_program_in_the_foreground_cannot_end_its_command("/bin/bash", "handback").await;
}

#[tokio::test]
async fn a_daemon_reading_the_terminal_gets_nothing_typed_bash() {
    a_lurking_reader_gets_nothing("/bin/bash", "daemon").await;
}

#[tokio::test]
async fn a_job_that_joined_the_shells_group_gets_nothing_typed_bash() {
    a_lurking_reader_gets_nothing("/bin/bash", "joiner").await;
}

/// zsh: ignored by default like the other `needs_zsh` tests (`scripts/test` runs them).
#[tokio::test]
#[ignore = "needs zsh: scripts/test runs it where zsh is installed"]
async fn forged_ends_and_lurking_readers_fail_in_zsh_too_needs_zsh() {
    assert!(std::path::Path::new(ZSH).exists(), "needs_zsh: no {ZSH}");
    a_program_in_the_foreground_cannot_end_its_command(ZSH, "impersonate").await;
    a_program_in_the_foreground_cannot_end_its_command(ZSH, "handback").await;
    a_lurking_reader_gets_nothing(ZSH, "daemon").await;
    a_lurking_reader_gets_nothing(ZSH, "joiner").await;
}

/// A prompt hook that runs commands (as zoxide's and direnv's do: a command substitution and a
/// program, before the prompt; or appended after agentty's) keeps exit codes and output exact.
#[tokio::test]
async fn prompt_hooks_that_run_commands_keep_results_exact() {
    let t = open_one("/bin/bash", "hooks").await;
    let hook = "__zh() { local r=$?; command true \"$(pwd)\"; return $r; }; \
                PROMPT_COMMAND=\"__zh;${PROMPT_COMMAND#;}\"\n";
    let out = send(&t.shell, hook).await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let out = send(&t.shell, "echo hi; (exit 3)\n").await;
    assert_eq!(out.status, SendStatus::Done(3), "{out:?}");
    assert_eq!(out.output, "hi\n", "{out:?}");
    let out = send(&t.shell, "PROMPT_COMMAND+='; /bin/true'\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let out = send(&t.shell, "false\n").await;
    assert_eq!(out.status, SendStatus::Done(1), "{out:?}");
    let out = send(&t.shell, "echo there\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert_eq!(out.output, "there\n", "{out:?}");
    t.close_clean().await;
}

/// The same for zsh's `precmd` hooks.
#[tokio::test]
#[ignore = "needs zsh: scripts/test runs it where zsh is installed"]
async fn zsh_prompt_hooks_that_run_commands_keep_results_exact_needs_zsh() {
    assert!(std::path::Path::new(ZSH).exists(), "needs_zsh: no {ZSH}");
    let t = open_one(ZSH, "zsh-hooks").await;
    let hook = "__zh() { command true \"$(pwd)\" }; precmd_functions=(__zh $precmd_functions)\n";
    let out = send(&t.shell, hook).await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let out = send(&t.shell, "echo hi; (exit 3)\n").await;
    assert_eq!(out.status, SendStatus::Done(3), "{out:?}");
    assert_eq!(out.output, "hi\n", "{out:?}");
    let out = send(&t.shell, "precmd_functions+=(__zh)\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let out = send(&t.shell, "false\n").await;
    assert_eq!(out.status, SendStatus::Done(1), "{out:?}");
    t.close_clean().await;
}

/// A shell started in the shell is a program like any other: at its prompt it waits for keyboard
/// input (its prompts are its own, not the end of a command); the outer shell's prompt after it
/// exits is the end, with its exit code.
#[tokio::test]
async fn a_nested_shell_waits_for_input_and_its_exit_ends_the_command() {
    let t = open_one("/bin/bash", "nested").await;
    let out = send(&t.shell, "bash --norc --noprofile\n").await;
    assert!(
        matches!(
            out.status,
            SendStatus::AwaitingInput {
                by_shell: false,
                ..
            }
        ),
        "{out:?}"
    );
    let out = send(&t.shell, "echo inner\n").await;
    assert!(out.output.contains("inner"), "{out:?}");
    assert!(!claims_idle(&out), "{out:?}");
    let out = send(&t.shell, "exit 3\n").await;
    assert_eq!(out.status, SendStatus::Done(3), "{out:?}");
    let out = send(&t.shell, "echo outer\n").await;
    assert_eq!(out.output, "outer\n", "{out:?}");
    t.close_clean().await;
}

/// A server polls its socket with the terminal as its stdin: it is running, not waiting for the
/// keyboard (issue 40 item 6). Programs that do wait on the terminal through `poll`, `select`
/// or `epoll` are still seen at once, prompt without newline included.
#[tokio::test]
async fn only_a_program_that_waits_on_the_terminal_awaits_input() {
    let t = open_one("/bin/bash", "await-truly").await;
    let out = send_for(
        &t.shell,
        "python3 -u -m http.server 0 --bind 127.0.0.1\n",
        1_500,
    )
    .await;
    assert_eq!(out.status, SendStatus::Running, "{out:?}");
    assert!(out.output.contains("Serving HTTP"), "{out:?}");
    let out = send(&t.shell, "\u{3}").await;
    assert!(matches!(out.status, SendStatus::Done(_)), "{out:?}");
    for (how, program) in [
        (
            "poll",
            "import select,sys; print('poll? ', end='', flush=True); p = select.poll(); \
             p.register(0, select.POLLIN); p.poll(); sys.stdin.readline()",
        ),
        (
            "select",
            "import select,sys; print('select? ', end='', flush=True); \
             select.select([sys.stdin], [], []); sys.stdin.readline()",
        ),
        (
            "epoll",
            "import select,sys; print('epoll? ', end='', flush=True); e = select.epoll(); \
             e.register(0, select.EPOLLIN); e.poll(); sys.stdin.readline()",
        ),
    ] {
        let out = send(&t.shell, &format!("python3 -c \"{program}\"\n")).await;
        assert!(
            matches!(&out.status, SendStatus::AwaitingInput { prompt, by_shell: false } if prompt == &format!("{how}?")),
            "{how}: {out:?}"
        );
        let out = send(&t.shell, "y\n").await;
        assert_eq!(out.status, SendStatus::Done(0), "{how}: {out:?}");
    }
    t.close_clean().await;
}
