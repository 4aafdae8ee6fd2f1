//! The PTY paths with real terminals, real shells and real signals: persistent shells
//! (cd/env persistence, exit codes, Ctrl+C, REPLs, input prompts, screens, caps, idle reaping,
//! closing) and `pty: true` one-shot commands.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentty_core::jobs::{JobState, JobTable, READ_MAX_BYTES};
use agentty_core::pty::once::{self, PtyRunRequest};
use agentty_core::pty::{Gone, OpenError, SecretRefused, SendRequest, SendStatus, Shell, Shells};
use agentty_core::run::RunStatus;

use super::common::{leftovers_after, marker, open_spec, send_for, spec, text};

/// Generous bound for "returns promptly": never a measure of speed, only of not hanging.
pub(super) const PROMPT: Duration = Duration::from_secs(10);

async fn shells(idle: Option<Duration>) -> Arc<Shells> {
    agentty_core::init().expect("reaper");
    Shells::new(Arc::new(JobTable::new()), idle)
}

async fn open(shells: &Arc<Shells>, program: &str, marker: &str) -> Arc<Shell> {
    let (_, shell) = shells
        .open(open_spec(program, marker), program.into())
        .await
        .expect("open");
    shell
}

pub(super) async fn send(shell: &Shell, input: &str) -> agentty_core::pty::SendOutcome {
    let started = Instant::now();
    let outcome = shell
        .send(SendRequest {
            input,
            timeout: PROMPT,
            wait_for: None,
        })
        .await
        .expect("send");
    assert!(started.elapsed() < PROMPT, "send hung: {outcome:?}");
    outcome
}

/// Waits until the shell runs no command (it has no children), then a moment more for its
/// prompt to be read. Bounded; used to let a command end between two sends.
async fn wait_until_idle(shell: i32) {
    let started = Instant::now();
    while started.elapsed() < PROMPT {
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .unwrap_or_default();
        if children.trim().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// One shell opened for a test, with its run marker and a scratch directory for the files that
/// sequence its steps (removed on drop, a failed assertion's unwinding included).
pub(super) struct Opened {
    shells: Arc<Shells>,
    pub(super) shell: Arc<Shell>,
    marker: String,
    scratch: tempfile::TempDir,
}

/// Opens `program` as the test's only shell (`s1`).
pub(super) async fn open_one(program: &str, name: &str) -> Opened {
    let marker = marker(name);
    let shells = shells(None).await;
    let shell = open(&shells, program, &marker).await;
    Opened {
        shells,
        shell,
        marker,
        scratch: tempfile::tempdir().unwrap(),
    }
}

impl Opened {
    /// A path in the scratch directory.
    pub(super) fn file(&self, name: &str) -> std::path::PathBuf {
        self.scratch.path().join(name)
    }

    /// Closes the shell and checks that nothing it started is left.
    pub(super) async fn close_clean(self) {
        self.shells.close("s1").await.expect("close");
        assert!(leftovers_after(&self.marker, PROMPT).await.is_empty());
    }
}

#[tokio::test]
async fn cd_and_export_persist_and_output_is_only_the_commands() {
    for program in ["/bin/bash", "/bin/sh"] {
        let t = open_one(program, &format!("persist-{}", program.len())).await;
        let shell = t.shell.clone();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        let out = send(&shell, &format!("cd {}\n", path.display())).await;
        assert_eq!(out.status, SendStatus::Done(0), "{program}: {out:?}");
        assert_eq!(
            out.output, "",
            "{program}: the echo and prompt are not output"
        );
        send(&shell, "export AGENTTY_X=42\n").await;
        let out = send(&shell, "pwd; echo $AGENTTY_X\n").await;
        assert_eq!(
            out.output,
            format!("{}\n42\n", path.display()),
            "{program}: {out:?}"
        );
        let out = send(&shell, "false\n").await;
        assert_eq!(out.status, SendStatus::Done(1), "{program}: {out:?}");
        let out = send(&shell, "echo a\necho b\n").await;
        assert_eq!(out.status, SendStatus::Done(0), "{program}");
        if program.ends_with("bash") {
            assert_eq!(out.output, "a\nb\n", "both commands' output, nothing else");
        }
        t.close_clean().await;
    }
}

#[tokio::test]
async fn a_prompt_prefix_like_a_venvs_stays_out_of_the_output() {
    let t = open_one("/bin/bash", "venv-prompt").await;
    let shell = t.shell.clone();
    // What `source .venv/bin/activate` does to the prompt.
    let out = send(&shell, "PS1=\"(.venv) ${PS1-}\"\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let out = send(&shell, "echo hi; false\n").await;
    assert_eq!(out.status, SendStatus::Done(1), "{out:?}");
    assert_eq!(out.output, "hi\n", "{out:?}");
    t.close_clean().await;
}

#[tokio::test]
async fn ctrl_c_interrupts_a_command_and_the_prompt_comes_back() {
    for program in ["/bin/bash", "/bin/sh"] {
        let t = open_one(program, &format!("ctrl-c-{}", program.len())).await;
        let shell = t.shell.clone();
        let out = send_for(&shell, "sleep 100\n", 300).await;
        assert_eq!(out.status, SendStatus::Running, "{program}: {out:?}");
        let out = send(&shell, "\x03").await;
        assert_eq!(out.status, SendStatus::Done(130), "{program}: {out:?}");
        let out = send(&shell, "echo back\n").await;
        assert_eq!(out.output, "back\n", "{program}");
        // The same for a program reading the keyboard: the key ends it, it is not "nothing".
        let out = send(&shell, "cat\n").await;
        assert!(
            matches!(out.status, SendStatus::AwaitingInput { .. }),
            "{program}: {out:?}"
        );
        let out = send(&shell, "\x03").await;
        assert_eq!(out.status, SendStatus::Done(130), "{program}: {out:?}");
        t.close_clean().await;
    }
}

/// An empty line or Ctrl+C at an idle prompt ran nothing: no exit code is made up for it (the
/// shell's `$?` still holds the last command's, here 3).
#[tokio::test]
async fn a_new_prompt_with_no_command_reports_no_exit_code() {
    for program in ["/bin/bash", "/bin/sh"] {
        let t = open_one(program, &format!("at-prompt-{}", program.len())).await;
        let shell = t.shell.clone();
        let out = send(&shell, "(exit 3)\n").await;
        assert_eq!(out.status, SendStatus::Done(3), "{program}: {out:?}");
        let out = send(&shell, "\n").await;
        assert_eq!(out.status, SendStatus::AtPrompt, "{program}: {out:?}");
        assert_eq!(out.output, "", "{program}: {out:?}");
        // Ctrl+C: a new prompt, or (when the key lands while bash still draws the last prompt,
        // so readline acts on it only at the next key) the line waiting; never the stale code.
        let out = send(&shell, "\x03").await;
        assert!(
            matches!(
                out.status,
                SendStatus::AtPrompt | SendStatus::AwaitingInput { by_shell: true, .. }
            ),
            "{program}: {out:?}"
        );
        let out = send(&shell, "\n").await;
        assert_eq!(out.status, SendStatus::AtPrompt, "{program}: {out:?}");
        let out = send(&shell, "true\n").await;
        assert_eq!(out.status, SendStatus::Done(0), "{program}: {out:?}");
        t.close_clean().await;
    }
}

/// Two sends that timed out leave two command lines running or queued; the third send's reply
/// is its own command's, not the second one's.
#[tokio::test]
async fn two_timed_out_sends_then_a_third_gets_its_own_result() {
    for program in ["/bin/bash", "/bin/sh"] {
        let t = open_one(program, &format!("owed-{}", program.len())).await;
        let shell = t.shell.clone();
        let out = send_for(&shell, "sleep 0.5; echo A; (exit 4)\n", 50).await;
        assert_eq!(out.status, SendStatus::Running, "{program}: {out:?}");
        let out = send_for(&shell, "sleep 0.5; echo B; (exit 6)\n", 50).await;
        assert_eq!(out.status, SendStatus::Running, "{program}: {out:?}");
        let out = send(&shell, "echo C\n").await;
        assert_eq!(out.status, SendStatus::Done(0), "{program}: {out:?}");
        assert_eq!(out.output, "C\n", "{program}: {out:?}");
        // An empty send waits for a running command; at an idle prompt it returns at once.
        let out = send_for(&shell, "sleep 0.3; (exit 5)\n", 50).await;
        assert_eq!(out.status, SendStatus::Running, "{program}: {out:?}");
        let out = send(&shell, "").await;
        assert_eq!(out.status, SendStatus::Done(5), "{program}: {out:?}");
        let out = send(&shell, "").await;
        assert_eq!(out.status, SendStatus::AtPrompt, "{program}: {out:?}");
        // A command that ends between sends: the next send tells its exit code.
        let out = send_for(&shell, "sleep 0.2; (exit 4)\n", 50).await;
        assert_eq!(out.status, SendStatus::Running, "{program}: {out:?}");
        wait_until_idle(shell.pid).await;
        let out = send(&shell, "true\n").await;
        assert_eq!(out.status, SendStatus::Done(0), "{program}: {out:?}");
        assert_eq!(out.ended_before, vec![4], "{program}: {out:?}");
        t.close_clean().await;
    }
}

#[tokio::test]
async fn python_repl_round_trip() {
    let t = open_one("/bin/bash", "repl").await;
    let shell = t.shell.clone();
    let out = send(&shell, "python3 -q\n").await;
    assert!(
        matches!(&out.status, SendStatus::AwaitingInput { prompt, by_shell: false } if prompt.contains(">>>")),
        "{out:?}"
    );
    let out = send(&shell, "print(6 * 7)\n").await;
    assert!(out.output.contains("42"), "{out:?}");
    assert!(
        matches!(out.status, SendStatus::AwaitingInput { .. }),
        "{out:?}"
    );
    let out = send(&shell, "exit()\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    t.close_clean().await;
}

/// A send that timed out leaves its command running; the next line may be for that command
/// (typed into the REPL still busy) rather than for the shell. Then the command's own end is
/// the answer, not a shell "waiting for the rest of the line".
#[tokio::test]
async fn input_for_a_command_that_outran_its_send_gets_that_commands_exit() {
    for program in ["/bin/bash", "/bin/sh"] {
        let t = open_one(program, &format!("outran-{}", program.len())).await;
        let shell = t.shell.clone();
        let out = send(&shell, "python3 -q\n").await;
        assert!(
            matches!(out.status, SendStatus::AwaitingInput { .. }),
            "{program}: {out:?}"
        );
        let out = send_for(&shell, "import time; time.sleep(0.5)\n", 100).await;
        assert_eq!(out.status, SendStatus::Running, "{program}: {out:?}");
        // Typed while the REPL still sleeps: the REPL reads it once it is done.
        let out = send(&shell, "print(6 * 7); exit(3)\n").await;
        assert_eq!(out.status, SendStatus::Done(3), "{program}: {out:?}");
        assert!(out.output.contains("42"), "{program}: {out:?}");
        // And the shell is in step again.
        let out = send(&shell, "echo back\n").await;
        assert_eq!(out.status, SendStatus::Done(0), "{program}: {out:?}");
        assert!(out.output.contains("back"), "{program}: {out:?}");
        t.close_clean().await;
    }
}

#[tokio::test]
async fn a_password_prompt_is_detected_and_answered_next() {
    let t = open_one("/bin/bash", "password").await;
    let shell = t.shell.clone();
    let out = send(
        &shell,
        "read -s -p 'Password: ' pw; echo; echo got ${#pw}\n",
    )
    .await;
    // The status says why it returned (the keyboard is awaited), not the clock.
    assert!(
        matches!(&out.status, SendStatus::AwaitingInput { prompt, by_shell: false } if prompt == "Password:"),
        "{out:?}"
    );
    let out = send(&shell, "hunter2\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert!(out.output.contains("got 7"), "{out:?}");
    assert!(!out.output.contains("hunter2"), "no echo of a silent read");

    // A program's prompt too, not only the shell's builtin.
    let out = send(&shell, "python3 -c 'input(\"Continue? [y/N] \")'\n").await;
    assert!(
        matches!(&out.status, SendStatus::AwaitingInput { prompt, by_shell: false } if prompt == "Continue? [y/N]"),
        "{out:?}"
    );
    let out = send(&shell, "y\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    t.close_clean().await;
}

#[tokio::test]
async fn wait_for_and_partial_input() {
    let t = open_one("/bin/bash", "wait-for").await;
    let shell = t.shell.clone();
    let re = regex::Regex::new("ready").unwrap();
    let out = shell
        .send(SendRequest {
            input: "echo ready; sleep 0.3; echo late\n",
            timeout: PROMPT,
            wait_for: Some(&re),
        })
        .await
        .unwrap();
    assert_eq!(out.status, SendStatus::Matched, "{out:?}");
    // The earlier command's prompt arrives during this send: it must not end it.
    let out = send(&shell, "echo after\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert_eq!(out.output, "after\n", "{out:?}");
    // Typing without Enter runs nothing: the shell waits for the rest of the line.
    let out = send(&shell, "echo typed").await;
    assert!(
        matches!(
            &out.status,
            SendStatus::AwaitingInput { by_shell: true, .. }
        ),
        "{out:?}"
    );
    let out = send(&shell, "\n").await;
    assert_eq!(out.status, SendStatus::Done(0));
    assert!(out.output.contains("typed"), "{out:?}");
    t.close_clean().await;
}

#[tokio::test]
async fn the_screen_of_a_program_that_clears_the_terminal_is_rendered() {
    let t = open_one("/bin/bash", "screen").await;
    let shell = t.shell.clone();
    send(&shell, "seq 1 100\n").await;
    let out = send(
        &shell,
        "printf '\\033[2J\\033[H\\033[1mTOP\\033[0m\\n\\033[5;10Hmiddle'; read -s -n1\n",
    )
    .await;
    assert!(
        matches!(out.status, SendStatus::AwaitingInput { .. }),
        "{out:?}"
    );
    let screen = shell.screen();
    let lines: Vec<&str> = screen.text.lines().collect();
    assert_eq!(lines[0], "TOP", "{}", screen.text);
    assert_eq!(lines[4], "         middle", "{}", screen.text);
    assert!(!screen.text.contains("100"), "cleared: {}", screen.text);
    shell.resize(100, 30).unwrap();
    assert_eq!(shell.screen().cols, 100);
    send(&shell, "q").await;
    let out = send(&shell, "stty size\n").await;
    assert_eq!(out.output, "30 100\n", "the program sees the new size");
    t.close_clean().await;
}

/// What bash does after every command, and what raced a model's resize: the size read, then
/// written back. A resize made between the two was undone by the write-back (CI of 875a847).
/// This program does the same on purpose: it reads the size, waits for the resize's SIGWINCH,
/// then writes back the size it read.
const WRITES_BACK_THE_SIZE: &str = "python3 -c '
import fcntl, signal, termios
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
size = fcntl.ioctl(0, termios.TIOCGWINSZ, bytes(8))
print(\"ready\", flush=True)
signal.sigtimedwait([signal.SIGWINCH], 10)
fcntl.ioctl(0, termios.TIOCSWINSZ, size)
'\n";

#[tokio::test]
async fn a_resize_outlasts_a_write_back_of_the_size_it_replaced() {
    let t = open_one("/bin/bash", "write-back").await;
    let shell = t.shell.clone();
    send(&shell, "stty cols 80 rows 24\n").await;
    let re = regex::Regex::new("ready").unwrap();
    let out = shell
        .send(SendRequest {
            input: WRITES_BACK_THE_SIZE,
            timeout: PROMPT,
            wait_for: Some(&re),
        })
        .await
        .unwrap();
    assert_eq!(out.status, SendStatus::Matched, "{out:?}");
    shell.resize(100, 30).unwrap();
    // An empty send waits for the program's end, its prompt.
    let out = send(&shell, "").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert_eq!(shell.size(), (100, 30), "the model's size is kept");
    assert_eq!(shell.screen().cols, 100);
    let out = send(&shell, "stty size\n").await;
    assert_eq!(out.output, "30 100\n", "the program sees the model's size");
    // A resize at the prompt (nothing writes back there): a size a command sets after it
    // stays, the replaced one included.
    shell.resize(90, 28).unwrap();
    let out = send(&shell, "stty cols 100 rows 30; stty size\n").await;
    assert_eq!(out.output, "30 100\n", "{out:?}");
    assert_eq!(shell.size(), (100, 30), "a command's own size is kept");
    let out = send(&shell, "stty size\n").await;
    assert_eq!(out.output, "30 100\n", "{out:?}");
    // A resize while a command runs that nothing writes back is done with at the prompt.
    let out = send_for(&shell, "sleep 0.3\n", 50).await;
    assert_eq!(out.status, SendStatus::Running, "{out:?}");
    shell.resize(110, 35).unwrap();
    let out = send(&shell, "").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let out = send(&shell, "stty cols 80 rows 24; stty size\n").await;
    assert_eq!(out.output, "24 80\n", "{out:?}");
    assert_eq!(shell.size(), (80, 24), "a command's own size is kept");
    t.close_clean().await;
}

/// bash 5.2 writes its size back after its prompt hook, so after agentty's prompt marker, and
/// before its prompt: a write-back made after the marker is undone too, as long as the model
/// has not typed since (review 37). Here a program left in the background does it, once it
/// sees the resize.
#[tokio::test]
async fn a_resize_outlasts_a_write_back_made_after_the_prompt_marker() {
    let t = open_one("/bin/bash", "write-back-late").await;
    let shell = t.shell.clone();
    send(&shell, "stty cols 80 rows 24\n").await;
    let ready = t.scratch.path().join("ready");
    let program = format!(
        "python3 -c '
import fcntl, termios, time
size = fcntl.ioctl(0, termios.TIOCGWINSZ, bytes(8))
open(\"{}\", \"w\").close()
end = time.time() + 10
while fcntl.ioctl(0, termios.TIOCGWINSZ, bytes(8)) == size and time.time() < end:
    time.sleep(0.005)
fcntl.ioctl(0, termios.TIOCSWINSZ, size)
print(\"wrote\" + \"-back\", flush=True)
' &\n",
        ready.display()
    );
    let out = send(&shell, &program).await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    // The program is waiting, and bash's own write-back is made: it comes before the prompt
    // (a resize between bash's two calls is undone once, and the program's would not be).
    let until = Instant::now() + PROMPT;
    let prompted = || shell.screen().text.trim_end().ends_with('#');
    while !(ready.exists() && prompted()) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shell.resize(100, 30).unwrap();
    // Not the echo of the command line, which holds the two words apart. Looked for in what
    // the terminal sent, not on the screen: the write-back's SIGWINCH has readline redraw its
    // prompt line, which the program's word may share, and the redraw can erase it.
    let wrote_back = || shell.raw_tail(4096).contains("wrote-back");
    while !wrote_back() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(wrote_back(), "{:?}", shell.raw_tail(4096));
    assert_eq!(shell.size(), (100, 30), "the model's size is kept");
    let out = send(&shell, "stty size\n").await;
    // bash tells of the background job's end after it.
    assert!(out.output.starts_with("30 100\n"), "{out:?}");
    t.close_clean().await;
}

/// A `!` the model types is text, not a history reference, and no history file is kept
/// (review 41 L5: with bash's defaults `echo "Hello!World"` failed with `event not found`, `!!`
/// ran the last line of the user's `~/.bash_history`, and a history file a command planted
/// could put its text in the model's line).
async fn a_bang_is_text_and_no_history_file_is_kept(program: &str) {
    let t = open_one(program, "bang").await;
    let out = send(
        &t.shell,
        "echo \"Hello!World\" a!!b; echo \"${HISTFILE-none}\"\n",
    )
    .await;
    assert_eq!(out.output, "Hello!World a!!b\nnone\n", "{out:?}");
    t.close_clean().await;
}

#[tokio::test]
async fn a_bang_is_text_and_no_history_file_is_kept_in_bash() {
    a_bang_is_text_and_no_history_file_is_kept("/bin/bash").await;
}

#[tokio::test]
#[ignore = "needs zsh: scripts/test runs it where zsh is installed"]
async fn a_bang_is_text_and_no_history_file_is_kept_in_zsh_needs_zsh() {
    a_bang_is_text_and_no_history_file_is_kept("/usr/bin/zsh").await;
}

/// A program with no prompt markers (a REPL): a size it sets once the model typed again is its
/// own, the size a resize replaced included.
#[tokio::test]
async fn a_size_set_after_the_models_keys_stays_in_a_program_without_prompts() {
    let t = open_one("/usr/bin/python3", "unmarked-size").await;
    let shell = t.shell.clone();
    let (cols, rows) = shell.size();
    shell.resize(cols + 20, rows + 6).unwrap();
    let set_back = format!("import os; os.system('stty cols {cols} rows {rows}')\n");
    send(&shell, &set_back).await;
    send(&shell, "print('after')\n").await;
    assert_eq!(shell.size(), (cols, rows), "the program's size is kept");
    let out = send(&shell, "print(os.get_terminal_size())\n").await;
    assert!(
        out.output
            .contains(&format!("columns={cols}, lines={rows}")),
        "{out:?}"
    );
    t.close_clean().await;
}

#[tokio::test]
async fn a_fifth_shell_is_refused_and_closed_shells_say_why() {
    // One run marker per shell, as the server gives each: closing one stops only its tree.
    let markers: Vec<String> = (1..=6).map(|i| marker(&format!("cap-{i}"))).collect();
    let shells = shells(None).await;
    for m in &markers[..4] {
        open(&shells, "/bin/sh", m).await;
    }
    let refused = shells
        .open(open_spec("/bin/sh", &markers[4]), "sh".into())
        .await;
    let Err(OpenError::Cap(cap)) = refused else {
        panic!("a fifth shell opened")
    };
    assert_eq!(cap.0.running.len(), 4);
    shells.close("s2").await.unwrap();
    assert_eq!(shells.get("s2").err(), Some(Gone::Closed));
    assert_eq!(shells.get("s9").err(), Some(Gone::Unknown));
    open(&shells, "/bin/sh", &markers[5]).await; // a slot is free again
    let (_, s1) = shells.get("s1").unwrap();
    let out = send(&s1, "exit 3\n").await;
    assert_eq!(out.status, SendStatus::ShellEnded, "{out:?}");
    let deadline = Instant::now() + PROMPT;
    while shells.get("s1").is_ok() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(shells.get("s1").err(), Some(Gone::Exited(3)));
    shells.table().stop_all().await;
    for m in &markers {
        assert!(leftovers_after(m, PROMPT).await.is_empty());
    }
}

#[tokio::test]
async fn an_idle_shell_is_reaped_with_everything_in_it() {
    let m = marker("idle");
    let shells = shells(Some(Duration::from_millis(300))).await;
    let shell = open(&shells, "/bin/bash", &m).await;
    send(&shell, "sleep 1000 &\n").await;
    let deadline = Instant::now() + PROMPT;
    while shells.get("s1").is_ok() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(shells.get("s1").err(), Some(Gone::Reaped));
    let job = shells.table().get("s1").unwrap();
    assert_eq!(job.state(), JobState::Reaped);
    assert!(
        leftovers_after(&m, PROMPT).await.is_empty(),
        "background job too"
    );
    assert!(matches!(
        shell
            .send(SendRequest {
                input: "pwd\n",
                timeout: PROMPT,
                wait_for: None
            })
            .await,
        Err(agentty_core::pty::PtyError::Closed)
    ));
}

#[tokio::test]
async fn shell_output_lands_in_the_job_ring() {
    let m = marker("ring");
    let shells = shells(None).await;
    let shell = open(&shells, "/bin/bash", &m).await;
    let out = send(&shell, "echo one; echo two\n").await;
    let job = shells.table().get("s1").unwrap();
    let slice = job.output.read(Some(out.cursor_from), READ_MAX_BYTES);
    assert!(slice.text.contains("one\ntwo\n"), "{slice:?}");
    let raw = shell.raw_tail(4096);
    assert!(
        raw.contains("one\r\n") && raw.contains('\x1b'),
        "raw keeps escapes: {raw:?}"
    );
    shells.close("s1").await.unwrap();
}

/// Input the program does not read (more than the terminal's queues hold) cannot hold up a
/// one-shot PTY call: its timeout and its cancellation still stop the tree, and what the
/// program did read arrives. Typed in the loop that reads the output, not before it.
#[tokio::test]
async fn pty_once_input_nobody_reads_does_not_hold_up_the_timeout_or_the_cancel() {
    agentty_core::init().unwrap();
    let big = "x".repeat(300_000) + "\n";
    for cancel_it in [false, true] {
        let m = marker("once-unread-input");
        let mut s = spec("/bin/sh", &m);
        s.args = vec!["-c".into(), "stty raw -echo; echo begun; sleep 30".into()];
        let started = Instant::now();
        let request = PtyRunRequest {
            spec: s,
            input: Some(big.clone()),
            timeout: if cancel_it {
                PROMPT
            } else {
                Duration::from_millis(1_000)
            },
            spill: None,
            cols: 80,
            rows: 24,
            view: None,
        };
        let cancel = async {
            if cancel_it {
                tokio::time::sleep(Duration::from_millis(1_000)).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let out = once::run(request, cancel).await.unwrap();
        let expected = if cancel_it {
            RunStatus::Cancelled
        } else {
            RunStatus::Timeout
        };
        assert_eq!(out.run.status, expected, "{:?}", out.run);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "held up by its input: {:?}",
            started.elapsed()
        );
        // What the terminal echoed before `stty` may cut the output to head and tail.
        let output = format!("{:?}", out.run.output);
        assert!(output.contains("begun"), "{output}");
        let left = leftovers_after(&m, Duration::from_secs(1)).await;
        assert_eq!(left, Vec::<i32>::new());
    }
}

#[tokio::test]
async fn pty_once_runs_on_a_terminal_and_stops_at_a_prompt() {
    agentty_core::init().unwrap();
    let m = marker("once");
    let mut s = spec("/bin/sh", &m);
    s.args = vec!["-c".into(), "test -t 1 && echo on a tty; exit 5".into()];
    let out = once::run(
        PtyRunRequest {
            spec: s,
            input: None,
            timeout: PROMPT,
            spill: None,
            cols: 80,
            rows: 24,
            view: None,
        },
        std::future::pending(),
    )
    .await
    .unwrap();
    assert_eq!(text(&out.run.output), "on a tty\n");
    assert_eq!(out.run.status, RunStatus::Failed);
    assert_eq!(out.run.exit, Some(agentty_core::Exit::Code(5)));

    let m = marker("once-prompt");
    let mut s = spec("/bin/sh", &m);
    s.args = vec![
        "-c".into(),
        "echo start; printf 'Overwrite? [y/N] '; read answer; echo never".into(),
    ];
    let started = Instant::now();
    let out = once::run(
        PtyRunRequest {
            spec: s,
            input: None,
            timeout: Duration::from_secs(60),
            spill: None,
            cols: 80,
            rows: 24,
            view: None,
        },
        std::future::pending(),
    )
    .await
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "did not wait out the timeout"
    );
    assert_eq!(out.awaiting_input.as_deref(), Some("Overwrite? [y/N]"));
    assert!(!out.full_screen, "a line-by-line prompt is not a screen");
    assert!(!text(&out.run.output).contains("never"));
    assert!(leftovers_after(&m, PROMPT).await.is_empty());
}

/// The 10 MB capture cap counts what the program wrote, not the carriage returns the terminal
/// adds before each newline: 7 MB of two-byte lines (10.5 MB through the terminal) completes.
#[tokio::test]
async fn the_capture_cap_does_not_count_the_terminals_carriage_returns() {
    agentty_core::init().unwrap();
    let m = marker("once-crlf");
    let mut s = spec("/bin/sh", &m);
    s.args = vec!["-c".into(), "yes a | head -c 7000000; echo end".into()];
    let dir = tempfile::tempdir().unwrap();
    let out = once::run(
        PtyRunRequest {
            spec: s,
            input: None,
            timeout: Duration::from_secs(300),
            spill: Some((
                std::sync::Arc::new(agentty_core::SpillStore::new(dir.path(), "s")),
                "c1".into(),
            )),
            cols: 80,
            rows: 24,
            view: None,
        },
        std::future::pending(),
    )
    .await
    .unwrap();
    assert_eq!(out.run.status, RunStatus::Success, "{:?}", out.run.exit);
    assert_eq!(out.run.captured_bytes, 7_000_004);
    assert!(leftovers_after(&m, PROMPT).await.is_empty());
}

/// zsh. Ignored by default so that without zsh the run shows it as skipped, and named for it:
/// `scripts/test` runs the `needs_zsh` tests where zsh is installed, and `.ci/run` installs zsh
/// and requires it.
#[tokio::test]
#[ignore = "needs zsh: scripts/test runs it where zsh is installed"]
async fn zsh_knows_when_a_command_is_done_too_needs_zsh() {
    let zsh = "/usr/bin/zsh";
    assert!(
        std::path::Path::new(zsh).exists(),
        "needs_zsh: {zsh} is not there; install zsh (Debian: apt-get install zsh)"
    );
    let t = open_one(zsh, "zsh").await;
    let shell = t.shell.clone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    let out = send(
        &shell,
        &format!("cd {} && export AGENTTY_X=42\n", path.display()),
    )
    .await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert_eq!(out.output, "", "{out:?}");
    let out = send(&shell, "pwd; echo $AGENTTY_X; false\n").await;
    assert_eq!(out.status, SendStatus::Done(1), "{out:?}");
    assert_eq!(out.output, format!("{}\n42\n", path.display()), "{out:?}");
    let out = send(&shell, "echo a\necho b\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert_eq!(out.output, "a\nb\n", "{out:?}");
    // A venv's prompt prefix stays out of the output.
    let out = send(&shell, "PS1=\"(.venv) $PS1\"\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let out = send(&shell, "echo hi\n").await;
    assert_eq!(out.output, "hi\n", "{out:?}");
    // A question asked by the read builtin, answered by the next send.
    let out = send(&shell, "read -s 'pw?Password: '; echo; echo got ${#pw}\n").await;
    assert!(
        matches!(&out.status, SendStatus::AwaitingInput { prompt, .. } if prompt == "Password:"),
        "{out:?}"
    );
    let out = send(&shell, "hunter2\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert!(out.output.contains("got 7"), "{out:?}");
    // Ctrl+C.
    let out = send_for(&shell, "sleep 100\n", 300).await;
    assert_eq!(out.status, SendStatus::Running, "{out:?}");
    let out = send(&shell, "\x03").await;
    assert!(matches!(out.status, SendStatus::Done(_)), "{out:?}");
    let out = send(&shell, "echo back\n").await;
    assert_eq!(out.output, "back\n", "{out:?}");
    t.close_clean().await;
}

/// A bash (marked `tag`) running `command`, which does not read its input, and the outcome of
/// sending it `lines` with a 1 s timeout.
async fn shell_behind_unread_input(
    tag: &str,
    command: &str,
    lines: &str,
) -> (
    String,
    Arc<Shells>,
    Arc<Shell>,
    agentty_core::pty::SendOutcome,
) {
    let m = marker(tag);
    let shells = shells(None).await;
    let shell = open(&shells, "/bin/bash", &m).await;
    send_for(&shell, command, 500).await;
    let out = send_for(&shell, lines, 1_000).await;
    (m, shells, shell, out)
}

/// Input the running command does not read (more than the terminal's queues hold) cannot
/// hold a shell send past its timeout: the send answers that the command is still running and
/// how much of the input was not typed. The lines that were typed run once the command ends;
/// the untyped ones are owed no prompt, so a wait after them answers at once.
#[tokio::test]
async fn shell_send_input_nobody_reads_does_not_hold_up_the_timeout() {
    let line = format!(": {}\n", "x".repeat(997));
    let lines = line.repeat(300);
    let (m, shells, shell, out) = shell_behind_unread_input(
        "send-unread-input",
        "stty raw -echo; echo begun; sleep 4\n",
        &lines,
    )
    .await;
    assert_eq!(out.status, SendStatus::Running, "{out:?}");
    assert!(
        out.untyped > 0 && out.untyped < lines.len(),
        "{} of {}",
        out.untyped,
        lines.len()
    );
    // The typed part may end inside a line: an Enter finishes it. Once all typed lines have
    // run, a wait answers at once: no prompt is owed for a line that was never typed.
    send_for(&shell, "\n", 500).await;
    wait_until_idle(shell.pid).await;
    let wait = send_for(&shell, "", 5_000).await;
    assert_ne!(wait.status, SendStatus::Running, "{wait:?}");
    shells.close("s1").await.unwrap();
    assert_eq!(leftovers_after(&m, PROMPT).await, Vec::<i32>::new());
}

/// A program that reads one line of the terminal, as a job of its own (the shell's own `read`
/// is refused: its value would be the agent's).
const READER: &str = "head -n1 > /dev/null";

/// Types `command` and waits (bounded) until a program it started asks for a password.
async fn ask_with(shell: &Shell, command: &str) {
    send_for(shell, command, 50).await;
    until_it_asks_a_password(shell).await;
}

/// Waits (bounded) until a program of `shell` asks for a password: the terminal reads a line
/// with echo off, its foreground is not the shell, and a process of the foreground waits in a
/// read of a terminal. Echo off and a foreground not the shell's alone are true while `stty
/// -echo` itself is the foreground; once it ends the shell holds the terminal for a moment
/// before the reader starts.
async fn until_it_asks_a_password(shell: &Shell) {
    until_asked(shell, Some(&agentty_testkit::group_reads_a_terminal)).await;
}

/// Waits (bounded) until the terminal reads a line with echo off, asked by a program whose
/// process group `program` accepts when given (and the shell does not hold the terminal), else
/// by anyone (the shell's own `read -s`).
async fn until_asked(shell: &Shell, program: Option<&dyn Fn(i32) -> bool>) {
    let started = Instant::now();
    let asked_by_it = |program: &dyn Fn(i32) -> bool| {
        !shell.reads_itself() && shell.foreground_leader().is_some_and(program)
    };
    while !shell.asks_password() || program.is_some_and(|p| !asked_by_it(p)) {
        assert!(started.elapsed() < PROMPT, "no password asked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A shell whose command turns echo off and reads nothing until the test's file exists: a
/// program that asks for a password but does not read (yet). Returns the file to create.
/// Waits until that program (`sh`, not the `stty` before it) is the foreground.
async fn shell_asking_without_reading(name: &str) -> (Opened, std::path::PathBuf) {
    let t = open_one("/bin/bash", name).await;
    let go = t.file("go");
    let command = format!(
        "stty -echo; sh -c 'until [ -e {} ]; do sleep 0.05; done'; stty echo\n",
        go.display()
    );
    send_for(&t.shell, &command, 300).await;
    let the_loop = |leader: i32| {
        std::fs::read_to_string(format!("/proc/{leader}/comm")).is_ok_and(|c| c.trim() == "sh")
    };
    until_asked(&t.shell, Some(&the_loop)).await;
    (t, go)
}

/// Lets the command of [`shell_asking_without_reading`] end, waits for the shell's prompt,
/// and returns everything the terminal showed (the agent's view of it).
async fn let_it_end(t: &Opened, go: &std::path::Path) -> String {
    std::fs::write(go, b"").unwrap();
    wait_until_idle(t.shell.pid).await;
    let out = send(&t.shell, "echo ended\n").await;
    assert!(out.output.contains("ended"), "{out:?}");
    t.shell.raw_tail(1 << 20)
}

/// A secret the program does not read in time (it never starts its read) is not left in the
/// terminal's input: once the program ends, the shell does not read it as a command (and show
/// it).
#[tokio::test]
async fn a_secret_nobody_reads_is_not_left_for_the_shell_to_run() {
    let (t, go) = shell_asking_without_reading("secret-unread").await;
    let typed = t
        .shell
        .type_secret_within(b"hunter2", None, Duration::from_millis(300))
        .await;
    assert_eq!(typed, Err(SecretRefused::NotTaken));
    let seen = let_it_end(&t, &go).await;
    assert!(!seen.contains("hunter2"), "{seen}");
    t.close_clean().await;
}

/// A line typed before the secret and not read yet would be read first, and the secret by
/// whoever reads after it (the shell, which runs and shows it): the secret is refused at once.
/// The shell's sends go on, and the earlier line runs as typed.
#[tokio::test]
async fn a_secret_behind_lines_not_yet_read_is_refused() {
    let (t, go) = shell_asking_without_reading("secret-behind").await;
    send_for(&t.shell, "echo typed-before\n", 300).await;
    let typed = tokio::time::timeout(PROMPT, t.shell.type_secret(b"hunter2", None))
        .await
        .expect("refused at once");
    assert_eq!(typed, Err(SecretRefused::Pending));
    let seen = let_it_end(&t, &go).await;
    assert!(seen.contains("typed-before"), "{seen}");
    assert!(!seen.contains("hunter2"), "{seen}");
    t.close_clean().await;
}

/// A partial line typed before the secret (with echo off, unseen) does not become its start:
/// the program reads the secret alone, as a password reader that flushes its input would.
/// The send that started it returned before it was seen asking (50 ms): the secret owes its
/// prompt once, so the next wait ends there.
#[tokio::test]
async fn a_secret_is_the_whole_line_the_program_reads() {
    let t = open_one("/bin/bash", "secret-whole").await;
    ask_with(&t.shell, "stty -echo; python3 -c 'import sys; print(\"read\", len(sys.stdin.readline().rstrip(\"\\n\")), \"bytes\")'; stty echo\n").await;
    send_for(&t.shell, "echo leaked-", 300).await;
    let reader = t.shell.foreground().map(|f| f.reader);
    assert_eq!(
        t.shell.type_secret(b"hunter2", reader.as_ref()).await,
        Ok(())
    );
    let out = send(&t.shell, "").await;
    let told = out.status == SendStatus::Done(0)
        || (out.status == SendStatus::AtPrompt && out.ended_before == [0]);
    assert!(told, "the command's end is told once: {out:?}");
    let seen = t.shell.raw_tail(1 << 20);
    assert!(seen.contains("read 7 bytes"), "{seen}");
    assert!(!seen.contains("hunter2"), "{seen}");
    t.close_clean().await;
}

/// A terminal where Enter would not end the line (`stty -icrnl`), or where a character of the
/// secret is a key the terminal acts on (`stty eol 2`), is refused: the secret would stay in
/// the queue as a partial line, or be cut, and reach a later reader.
#[tokio::test]
async fn a_secret_the_terminal_would_not_take_as_one_line_is_refused() {
    for (settings, refused) in [
        ("-echo -icrnl", SecretRefused::NotAsked),
        ("-echo igncr", SecretRefused::NotAsked),
        ("-echo eol 2", SecretRefused::SpecialKey),
    ] {
        let t = open_one("/bin/bash", "secret-odd-terminal").await;
        ask_with(&t.shell, &format!("stty {settings}; {READER}\n")).await;
        let typed = t.shell.type_secret(b"hunter2", None).await;
        assert_eq!(typed, Err(refused), "stty {settings}");
        assert!(!t.shell.raw_tail(1 << 20).contains("hunter2"));
        t.close_clean().await;
    }
}

/// The secret goes only to the reader the person was shown: once another program reads the
/// terminal (the agent stopped the first and started its own), it is refused.
#[tokio::test]
async fn a_secret_for_a_reader_that_is_gone_is_refused() {
    let t = open_one("/bin/bash", "secret-changed").await;
    ask_with(&t.shell, &format!("stty -echo; {READER}; stty echo\n")).await;
    let shown = t.shell.foreground().expect("a foreground").reader;
    send_for(&t.shell, "\u{3}", 300).await;
    wait_until_idle(t.shell.pid).await;
    ask_with(
        &t.shell,
        "stty echo; python3 -c 'import getpass; print(len(getpass.getpass()))'\n",
    )
    .await;
    let typed = t.shell.type_secret(b"hunter2", Some(&shown)).await;
    assert_eq!(typed, Err(SecretRefused::Changed));
    let now = t.shell.foreground().expect("a foreground").reader;
    assert_eq!(t.shell.type_secret(b"hunter2", Some(&now)).await, Ok(()));
    let out = send(&t.shell, "").await;
    let seen = t.shell.raw_tail(1 << 20);
    assert!(
        seen.contains("\n7\r") || seen.contains("7\r\n"),
        "{out:?} {seen}"
    );
    assert!(!seen.contains("hunter2"), "{seen}");
    t.close_clean().await;
}

/// A typing dropped while it waits for the program to read (the page that entered it went
/// away) still takes the secret back: the shell does not read it once the program ends.
#[tokio::test]
async fn a_secret_whose_typing_is_dropped_is_taken_back() {
    let (t, go) = shell_asking_without_reading("secret-dropped").await;
    let typing = t
        .shell
        .type_secret_within(b"hunter2", None, Duration::from_secs(60));
    let dropped = tokio::time::timeout(Duration::from_millis(300), typing).await;
    assert!(dropped.is_err(), "answered before the bound: {dropped:?}");
    let seen = let_it_end(&t, &go).await;
    assert!(!seen.contains("hunter2"), "{seen}");
    t.close_clean().await;
}

/// The person is shown every process of the reading group, and the file one runs when its
/// command line names another (`exec -a sudo`).
#[tokio::test]
async fn the_reader_shown_names_its_whole_group_and_what_each_runs() {
    let t = open_one("/bin/bash", "secret-shown").await;
    send_for(&t.shell, "bash -c 'exec -a sudo sleep 30' | cat\n", 50).await;
    let started = Instant::now();
    let described = loop {
        let described = t
            .shell
            .foreground()
            .map(|f| f.described)
            .unwrap_or_default();
        if described.contains("cat (cat)") && described.contains("sleep (sudo") {
            break described;
        }
        assert!(started.elapsed() < PROMPT, "{described}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The file it runs first (its command line is its own to set), then that command line.
    assert!(described.starts_with('/'), "{described}");
    assert!(described.contains("sleep (sudo 30);"), "{described}");
    assert!(
        described.contains("; in its process group too (1): /") && described.ends_with("cat (cat)"),
        "{described}"
    );
    t.close_clean().await;
}

/// A process outside the shell's session that holds the terminal open (`setsid -f` with the
/// terminal as its input) could read the secret first, with no job control to stop it: the
/// secret is refused while it does.
#[tokio::test]
async fn a_secret_is_refused_while_a_process_outside_the_session_holds_the_terminal() {
    let t = open_one("/bin/bash", "secret-outside").await;
    send(&t.shell, "setsid -f sleep 60 < \"$(tty)\"\n").await;
    // `setsid -f` returns before its child has left the session: wait until it has.
    let started = Instant::now();
    while !outside_sleep(&t.marker, t.shell.pid) {
        assert!(
            started.elapsed() < PROMPT,
            "the setsid child never left the session"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // It could read a command typed at the prompt too: the first is not typed, and the reply
    // says why; the next, made knowing it, is.
    let out = send(&t.shell, "true\n").await;
    assert!(
        matches!(&out.status, SendStatus::Held { by } if by.contains("outside the shell's session")),
        "{out:?}"
    );
    ask_with(&t.shell, &format!("stty -echo; {READER}; stty echo\n")).await;
    let typed = t.shell.type_secret(b"hunter2", None).await;
    assert_eq!(typed, Err(SecretRefused::OtherReader));
    t.close_clean().await;
}

/// Whether a `sleep` carrying `marker` runs in another session than `session`'s.
fn outside_sleep(marker: &str, session: i32) -> bool {
    agentty_testkit::processes_with_env(agentty_core::spawn::RUN_MARKER_VAR, marker)
        .into_iter()
        .any(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let sid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(3)?.parse::<i32>().ok());
            comm == "sleep\n" && sid.is_some_and(|sid| sid != session)
        })
}

/// A process that joins the reading group after the person was shown it (`setpgid` into the
/// foreground group: it may then read without being stopped) makes the reader another: the
/// secret is refused.
#[tokio::test]
async fn a_secret_is_refused_once_a_process_joined_the_reading_group() {
    let t = open_one("/bin/bash", "secret-joined").await;
    let go = t.file("go");
    // A background job that, told to, moves itself into the foreground group and waits.
    let joiner = format!(
        "python3 -c 'import os,time\nwhile not os.path.exists(\"{go}\"): time.sleep(0.02)\n\
         os.setpgid(0, os.tcgetpgrp(os.open(\"/dev/tty\", os.O_RDONLY)))\ntime.sleep(60)' \
         < /dev/null &\n",
        go = go.display()
    );
    send(&t.shell, &joiner).await;
    ask_with(&t.shell, &format!("stty -echo; {READER}; stty echo\n")).await;
    let shown = t.shell.foreground().expect("a foreground").reader;
    std::fs::write(&go, b"").unwrap();
    let started = Instant::now();
    while t.shell.foreground().expect("a foreground").reader == shown {
        assert!(started.elapsed() < PROMPT, "the job never joined the group");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let typed = t.shell.type_secret(b"hunter2", Some(&shown)).await;
    assert_eq!(typed, Err(SecretRefused::Changed));
    t.close_clean().await;
}

/// A process that started a read of the terminal inside the foreground group and then left it
/// waits ahead of the program shown, outside the group the person judged: the secret is
/// refused, and the waiting process gets nothing.
///
/// Each step waits for the one before it, not for time: the thief joins the group of a
/// foreground job that waits for it (once the shell has put it in the foreground), starts a
/// read there and sees it blocked in the kernel, leaves, and only then lets the job end and the
/// program that asks start.
#[tokio::test]
async fn a_secret_is_refused_while_a_process_outside_the_group_waits_to_read() {
    let t = open_one("/bin/bash", "secret-overtaken").await;
    let (go, got, left) = (t.file("go"), t.file("got"), t.file("left"));
    let thief = format!(
        "python3 -c 'import os,threading,time\n\
         fd = os.open(\"/dev/tty\", os.O_RDONLY)\n\
         while not os.path.exists(\"{go}\"): time.sleep(0.02)\n\
         while os.tcgetpgrp(fd) == os.getsid(0): time.sleep(0.01)\n\
         os.setpgid(0, os.tcgetpgrp(fd))\n\
         def take(): open(\"{got}\", \"wb\").write(os.read(fd, 100))\n\
         t = threading.Thread(target=take, daemon=True)\nt.start()\n\
         call = \"/proc/self/task/%d/syscall\" % t.native_id\n\
         read = {{\"x86_64\": \"0\", \"aarch64\": \"63\"}}[os.uname().machine]\n\
         while open(call).read().split()[0] != read: time.sleep(0.01)\n\
         os.setpgid(0, 0)\nopen(\"{left}\", \"w\").close()\ntime.sleep(60)' < /dev/null &\n",
        go = go.display(),
        got = got.display(),
        left = left.display(),
    );
    send(&t.shell, &thief).await;
    // The foreground job the thief joins: one process group that lasts until the thief left it.
    let wait_for_left = format!(
        "sh -c 'while [ ! -e \"{}\" ]; do sleep 0.02; done'; stty -echo; {READER}; stty echo\n",
        left.display()
    );
    send_for(&t.shell, &wait_for_left, 50).await;
    std::fs::write(&go, b"").unwrap();
    until_it_asks_a_password(&t.shell).await;
    assert!(
        left.exists(),
        "the program asked before the thief left its group"
    );
    let typed = t.shell.type_secret(b"hunter2", None).await;
    assert_eq!(typed, Err(SecretRefused::OtherReader));
    let stolen = std::fs::read(&got).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&stolen).contains("hunter2"));
    t.close_clean().await;
}

/// A process the shell never started, a background job of another shell (another spawn's
/// command, as an attacker's pass wrote it): it opens the terminal, starts a read of it in a
/// thread, waits until that thread sleeps in `wchan` (`wait_woken`: first in line; `n_tty_read`:
/// queued behind a reader), then closes its fd while the read goes on (no fd table shows it)
/// and makes `armed`, which this waits for. What it reads lands in `got`. Returns the other
/// shell's name. Each shell's terminal is in a `/dev/pts` of its own where the tests may mount
/// one (root), so the thief opens it as a process outside both shells could: through the
/// shell's fd in `/proc` (a confined command cannot, Landlock scopes ptrace to its own tree);
/// these checks are what holds for such a process.
async fn terminal_thief(
    t: &Opened,
    wchan: &str,
    armed: &std::path::Path,
    got: &std::path::Path,
) -> String {
    let script = t.file("thief.py");
    std::fs::write(
        &script,
        "import os, sys, threading, time\n\
         path, wanted, armed, got = sys.argv[1:5]\n\
         fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)\n\
         def take(): open(got, 'wb').write(os.read(fd, 100))\n\
         t = threading.Thread(target=take, daemon=True)\nt.start()\n\
         wchan = '/proc/self/task/%d/wchan' % t.native_id\n\
         while open(wchan).read() != wanted: time.sleep(0.005)\n\
         os.close(fd)\nopen(armed, 'w').close()\ntime.sleep(60)\n",
    )
    .unwrap();
    // A marker of its own: closing a shell stops every process that carries its marker.
    let mut spec = open_spec("/bin/bash", &marker("secret-thief"));
    spec.spawn.confine = Some(Arc::new(SeccompAllowingAll));
    let (name, other) = t.shells.open(spec, "/bin/bash".into()).await.expect("open");
    let job = format!(
        "python3 {} /proc/{}/fd/0 {wchan} {} {} < /dev/null &\n",
        script.display(),
        t.shell.pid,
        armed.display(),
        got.display()
    );
    let out = send(&other, &job).await;
    assert!(out.output.contains("[1]"), "{out:?}");
    let started = Instant::now();
    while !armed.exists() {
        assert!(
            started.elapsed() < PROMPT,
            "the thief never waited in its read"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    name.id.clone()
}

/// Closes the [`terminal_thief`]'s shell and checks nothing of it is left.
async fn stop_thief(t: &Opened, shell: &str) {
    t.shells.close(shell).await.expect("close");
    assert!(
        leftovers_after(&marker("secret-thief"), PROMPT)
            .await
            .is_empty()
    );
}

/// A spawn's "confinement" that only installs a seccomp filter allowing every call: its
/// processes show `Seccomp: 2`, as a confined command's do (another spawn's commands that run
/// unconfined are within reach of a sealed program's memory, and refused before any reader
/// is looked at).
struct SeccompAllowingAll;

impl agentty_core::spawn::Confine for SeccompAllowingAll {
    fn apply_own(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn apply_shared(&self) -> std::io::Result<()> {
        let mut allow = [libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        }];
        let program = libc::sock_fprog {
            len: 1,
            filter: allow.as_mut_ptr(),
        };
        // SAFETY: prctl with integer arguments, then a pointer to a filter that outlives the call.
        let rc = unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
                | libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &raw const program,
                )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// Whether a `head` carrying `marker` waits queued behind another reader of a terminal.
fn queued_head(marker: &str) -> bool {
    agentty_testkit::processes_with_env(agentty_core::spawn::RUN_MARKER_VAR, marker)
        .into_iter()
        .any(|pid| {
            let read =
                |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_default();
            read("comm") == "head\n" && read("wchan") == "n_tty_read"
        })
}

/// A line goes to whoever waits first: a [`terminal_thief`] whose read started before the
/// program's gets the secret, though no fd table shows it holds the terminal. The secret is
/// refused, and the thief gets nothing.
#[tokio::test]
async fn a_secret_is_refused_while_a_process_waits_to_read_the_terminal_before_the_program() {
    let t = open_one("/bin/bash", "secret-first").await;
    let (armed, got) = (t.file("armed"), t.file("got"));
    // Nobody reads the terminal while this waits (the shell waits for its job): the thief's read
    // comes first; then the program's, behind it.
    let program = format!(
        "stty -echo; sh -c 'while [ ! -e \"{}\" ]; do sleep 0.02; done'; {READER}; stty echo\n",
        armed.display()
    );
    send_for(&t.shell, &program, 50).await;
    let other = terminal_thief(&t, "wait_woken", &armed, &got).await;
    // The program (`head`, the foreground now) waits behind the thief's read.
    let started = Instant::now();
    while !queued_head(&t.marker) {
        assert!(
            started.elapsed() < PROMPT,
            "the program never read behind the thief"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let typed = t.shell.type_secret(b"hunter2", None).await;
    stop_thief(&t, &other).await;
    assert_eq!(typed, Err(SecretRefused::OtherReader));
    let stolen = std::fs::read(&got).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&stolen).contains("hunter2"));
    t.close_clean().await;
}

/// A [`terminal_thief`] queued behind the program's read would take the line should that read
/// end without it (a signal the program handles) before the program reads again: refused too.
#[tokio::test]
async fn a_secret_is_refused_while_a_process_waits_queued_for_a_terminal_read() {
    let t = open_one("/bin/bash", "secret-queued").await;
    let (armed, got) = (t.file("armed"), t.file("got"));
    ask_with(&t.shell, &format!("stty -echo; {READER}; stty echo\n")).await;
    let other = terminal_thief(&t, "n_tty_read", &armed, &got).await;
    let typed = t.shell.type_secret(b"hunter2", None).await;
    stop_thief(&t, &other).await;
    assert_eq!(typed, Err(SecretRefused::OtherReader));
    t.close_clean().await;
}

/// The shell's own `read -s` (or a command substitution, in its process group) would put the
/// value in a variable the agent reads: refused.
#[tokio::test]
async fn a_secret_for_the_shells_own_read_is_refused() {
    let t = open_one("/bin/bash", "secret-own-read").await;
    send_for(&t.shell, "read -r -s pw; echo \"${#pw}\"\n", 50).await;
    until_asked(&t.shell, None).await;
    assert!(t.shell.reads_itself());
    let typed = t.shell.type_secret(b"hunter2", None).await;
    assert_eq!(typed, Err(SecretRefused::ShellItself));
    t.close_clean().await;
}

/// A send waits on the shell's answers, not on every chunk: output without a prompt marker
/// wakes nobody who waits for the command's end (each wake-up a trip across threads), a send
/// that watches for a pattern is woken by every chunk, and the end of the command by its prompt.
#[tokio::test]
async fn a_send_is_woken_by_its_prompt_not_by_every_chunk() {
    let t = open_one("/bin/bash", "answers").await;
    let shell = t.shell.clone();
    // Five lines, each a chunk of its own (a pause between them).
    let lines = "for i in 1 2 3 4 5; do echo line$i; sleep 0.1; done\n";
    let (changes, answers) = (shell.changes(), shell.answers());
    let (changed_before, answered_before) = (*changes.borrow(), *answers.borrow());
    let out = send(&shell, lines).await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert_eq!(out.output, "line1\nline2\nline3\nline4\nline5\n");
    let changed = *changes.borrow() - changed_before;
    let answered = *answers.borrow() - answered_before;
    assert!(changed >= 6, "{changed} chunks: the lines came apart");
    assert!(
        (1..=3).contains(&answered),
        "answers told {answered} times for {changed} chunks: by the prompt only"
    );

    // Waiting for a pattern: every chunk may bring it. What the first send's prompt drew after
    // it returned (nobody's answer) is let land first: it is not this send's to tell.
    until_still(&changes).await;
    let pattern = regex::Regex::new("never printed").unwrap();
    let answered_before = *answers.borrow();
    let changed_before = *changes.borrow();
    let out = shell
        .send(SendRequest {
            input: lines,
            timeout: PROMPT,
            wait_for: Some(&pattern),
        })
        .await
        .expect("send");
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    let changed = *changes.borrow() - changed_before;
    let answered = *answers.borrow() - answered_before;
    assert!(changed >= 6, "{changed} chunks");
    // A chunk of the prompt may land after the send returned, before the count is read.
    assert!(
        answered >= 6 && answered + 2 >= changed,
        "a pattern's send was told {answered} times for {changed} chunks"
    );
    t.close_clean().await;
}

/// Waits until the screen has not changed for 300 ms (at most 10 s).
async fn until_still(changes: &tokio::sync::watch::Receiver<u64>) {
    let give_up = Instant::now() + Duration::from_secs(10);
    let mut seen = *changes.borrow();
    while Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = *changes.borrow();
        if now == seen {
            return;
        }
        seen = now;
    }
}

/// Review 35, F3: (b) an earlier command that ended during a later send lost its exit code;
/// (a) a line the still-running earlier command read came back as if the shell had run it.
#[tokio::test]
async fn earlier_commands_ending_during_a_send_are_told_and_a_line_they_read_says_so() {
    let t = open_one("/bin/bash", "type-ahead").await;
    let shell = t.shell.clone();
    let out = send_for(&shell, "sleep 0.5; echo 'migration FAILED'; (exit 7)\n", 50).await;
    assert_eq!(out.status, SendStatus::Running, "{out:?}");
    let out = send(&shell, "echo mine\n").await;
    assert_eq!(out.status, SendStatus::Done(0), "{out:?}");
    assert_eq!(out.output, "mine\n", "{out:?}");
    assert_eq!(out.ended_before, vec![7], "{out:?}");
    assert!(!out.read_by_earlier, "{out:?}");
    // Still running when the model types ahead: a program it runs then reads the line.
    let out = send_for(
        &shell,
        "sleep 0.5; python3 -c 'import sys; sys.stdin.readline(); sys.exit(3)'\n",
        50,
    )
    .await;
    assert_eq!(out.status, SendStatus::Running, "{out:?}");
    let out = send(&shell, "pytest -q\n").await;
    assert_eq!(out.status, SendStatus::Done(3), "{out:?}");
    assert!(out.read_by_earlier, "{out:?}");
    assert!(out.ended_before.is_empty(), "{out:?}");
    t.close_clean().await;
}
