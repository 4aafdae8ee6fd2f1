//! Results the model can trust (issue 40): awaiting input judged on what a program really
//! waits for.

use agentty_core::pty::SendStatus;

use super::common::send_for;
use super::pty::{open_one, send};

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
