//! Capture, cleaning, shaping and spilling with real processes.

use std::os::unix::fs::PermissionsExt;

use agentty_core::Exit;
use agentty_core::Shaped;
use agentty_core::limits::{CAPTURE_LIMIT_BYTES, HEAD_CHARS, TAIL_CHARS};
use agentty_core::run::{RunStatus, Spill};

use super::common::*;

#[tokio::test]
async fn stdout_stderr_separate_and_merged_in_order() {
    let m = marker("merged");
    // Two pipes share no clock: writes in the same instant may be read in either order, so the
    // writes are spaced out to make "arrival order" observable.
    let cmd = "echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three; exit 3";
    let out = run_to_end(request(cmd, &m, 10_000)).await;
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(out.exit, Some(Exit::Code(3)));
    assert_eq!(text(&out.stdout), "one\nthree\n");
    assert_eq!(text(&out.stderr), "two\n");
    assert_eq!(text(&out.output), "one\ntwo\nthree\n");
}

#[tokio::test]
async fn stdin_is_fed_then_eof_and_null_by_default() {
    let m = marker("stdin");
    let mut req = request("cat; echo done", &m, 10_000);
    req.stdin = Some(b"hello\nworld\n".to_vec());
    let out = run_to_end(req).await;
    assert_eq!(text(&out.output), "hello\nworld\ndone\n");
    // Without stdin, a reader gets EOF at once instead of hanging.
    let out = run_to_end(request("cat; echo eof", &m, 10_000)).await;
    assert_eq!(text(&out.output), "eof\n");
}

#[tokio::test]
async fn no_controlling_terminal_and_non_interactive_env() {
    let m = marker("notty");
    let out = run_to_end(request(
        "(: < /dev/tty) 2>/dev/null && echo tty || echo notty; echo $GIT_TERMINAL_PROMPT $PAGER",
        &m,
        10_000,
    ))
    .await;
    assert_eq!(text(&out.output), "notty\n0 cat\n");
}

#[tokio::test]
async fn multibyte_character_split_across_reads() {
    let m = marker("utf8split");
    // 世 is E4 B8 96: the first two bytes arrive in one read, the last in a later one.
    let out = run_to_end(request(
        r"printf '\344\270'; sleep 0.2; printf '\226\n'",
        &m,
        10_000,
    ))
    .await;
    assert_eq!(text(&out.output), "世\n");
}

#[tokio::test]
async fn invalid_utf8_becomes_replacement_character() {
    let m = marker("badutf8");
    let out = run_to_end(request(r"printf 'a\377\376b\n'", &m, 10_000)).await;
    assert_eq!(text(&out.output), "a\u{fffd}\u{fffd}b\n");
}

#[tokio::test]
async fn progress_bars_and_colours_are_cleaned() {
    let m = marker("clean");
    let out = run_to_end(request(
        r"printf '\033[32m 10%%\r 50%%\r100%%\033[0m\n\033]0;title\007done\n'",
        &m,
        10_000,
    ))
    .await;
    assert_eq!(text(&out.output), "100%\ndone\n");
}

#[tokio::test]
async fn three_megabytes_bounded_reply_complete_private_spill() {
    let m = marker("3mb");
    let dir = tempfile::tempdir().unwrap();
    let req = with_spill(request("seq 1 400000", &m, 60_000), dir.path(), "c1");
    let out = run_to_end(req).await;
    let expected: String = (1..=400_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(out.status, RunStatus::Success);
    assert_eq!(out.output_bytes as usize, expected.len());
    let Shaped::HeadTail {
        head,
        tail,
        omitted_bytes,
        omitted_lines,
    } = &out.output
    else {
        panic!("expected head+tail");
    };
    // Whole lines, within the character budgets.
    assert!(head.chars().count() <= HEAD_CHARS && head.chars().count() > HEAD_CHARS - 8);
    assert!(tail.chars().count() <= TAIL_CHARS && tail.chars().count() > TAIL_CHARS - 8);
    assert!(head.ends_with('\n'), "{head:?}");
    assert!(expected.starts_with(head.as_str()));
    assert!(expected.ends_with(&format!("\n{tail}")));
    assert_eq!(
        *omitted_bytes as usize,
        expected.len() - head.len() - tail.len()
    );
    assert!(*omitted_lines > 390_000);
    let Spill::Written(path) = &out.spill else {
        panic!("expected a spill file: {:?}", out.spill)
    };
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        expected,
        "spill is the full output"
    );
    let file_mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!((file_mode, dir_mode), (0o600, 0o700));
}

#[tokio::test]
async fn small_output_writes_no_spill_file() {
    let m = marker("nospill");
    let dir = tempfile::tempdir().unwrap();
    let out = run_to_end(with_spill(
        request("echo small", &m, 10_000),
        dir.path(),
        "c1",
    ))
    .await;
    assert_eq!(out.spill, Spill::NotNeeded);
    assert!(!dir.path().join("session").exists());
}

#[tokio::test]
async fn planted_symlink_cannot_redirect_the_spill_and_the_command_still_succeeds() {
    let m = marker("symlink");
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session");
    std::fs::create_dir(&session).unwrap();
    std::fs::set_permissions(&session, std::fs::Permissions::from_mode(0o700)).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, session.join("c1.log")).unwrap();
    let out = run_to_end(with_spill(
        request("seq 1 100000", &m, 60_000),
        dir.path(),
        "c1",
    ))
    .await;
    assert_eq!(out.status, RunStatus::Success);
    assert!(matches!(out.spill, Spill::Failed(_)), "{:?}", out.spill);
    assert!(out.output.is_truncated());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}

#[tokio::test]
async fn over_ten_megabytes_is_truncated_and_killed() {
    let m = marker("cap");
    let out = run_to_end(request("yes 'a line of output'", &m, 60_000)).await;
    assert_eq!(out.status, RunStatus::Killed);
    assert_eq!(out.captured_bytes, CAPTURE_LIMIT_BYTES);
    assert!(out.output.is_truncated());
    assert_eq!(processes_with_marker(&m), Vec::<i32>::new());
}
