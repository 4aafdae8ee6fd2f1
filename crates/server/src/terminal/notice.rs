//! Every word the `terminal` tool says to a model, in one place (docs/BEHAVIOUR.md §1, §2, §4):
//! its description, its refusals, its results on every path (pipe, `pty: true`, `parse: true`),
//! and its replies when a command goes to the background.
//!
//! English, short, exact. Each sentence states a fact and, where there is one, the next action.
//! Numbers come from `agentty_core::limits`, so the text never disagrees with the engine.

use std::path::Path;

use agentty_core::limits::{CAPTURE_LIMIT_BYTES, COMMAND_MAX_BYTES, TIMEOUT_MAX_MS};

use crate::job_words::one_line;

/// `terminal`'s description. What a parameter's own description says is not said again here.
pub fn terminal_description() -> String {
    format!(
        "Run one command to completion and return its output. Non-interactive: stdin is empty \
         unless `stdin` is given, there is no terminal unless `pty`, pagers and git prompts are \
         off. `cd` does not persist between calls (shell_open keeps a shell). Output over {} KB \
         returns its head and tail and names a file holding all of it. Every process the \
         command started is stopped when it ends, times out or is cancelled. For servers, \
         watchers and long builds use `background` or `on_timeout`.",
        agentty_core::limits::INLINE_LIMIT_BYTES / 1024
    )
}

pub const COMMAND_OR_ARGV: &str =
    "pass exactly one of `command` (a shell command line) or `argv` (program and arguments)";
pub const EMPTY_ARGV: &str = "`argv` must name a program: it is empty";
pub const EMPTY_COMMAND: &str = "`command` is empty";

/// `terminal`'s advice past the bound.
pub const TIMEOUT_PAST_MAX: &str = "run longer commands with background: true";

/// `what`: "`command`", or "an `argv` element".
pub fn command_too_long(what: &str, bytes: usize) -> String {
    format!(
        "{what} is {bytes} bytes; one argument can be at most {COMMAND_MAX_BYTES} bytes \
         (the kernel's limit). Write the script or data to a file in the workspace and pass \
         the file instead"
    )
}

/// `ENOEXEC`: the kernel does not recognise the file as a program it can run.
const EXEC_FORMAT_ERROR: i32 = 8;
/// Linux errnos of a spawn that ran out of something: EAGAIN, ENOMEM, ENFILE, EMFILE.
const OUT_OF_RESOURCES: [i32; 4] = [11, 12, 23, 24];

/// A program that could not be started. `workdir`: where a relative path was looked up.
pub fn spawn_failed(program: &str, workdir: &Path, error: &std::io::Error) -> String {
    let path_given = program.contains('/');
    match error.kind() {
        std::io::ErrorKind::NotFound if !path_given => {
            format!("cannot run {program:?}: no such program (not found in PATH)")
        }
        // The file is there, so what is missing is the interpreter its `#!` line names.
        std::io::ErrorKind::NotFound if workdir.join(program).is_file() => format!(
            "cannot run {program:?}: the interpreter named on its first line (#!) does not exist"
        ),
        std::io::ErrorKind::NotFound => format!("cannot run {program:?}: no such file"),
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot run {program:?}: permission denied (not executable?)")
        }
        _ if error.raw_os_error() == Some(EXEC_FORMAT_ERROR) => format!(
            "cannot run {program:?}: not a program this system can run (built for another \
             platform?)"
        ),
        _ if error
            .raw_os_error()
            .is_some_and(|e| OUT_OF_RESOURCES.contains(&e)) =>
        {
            format!(
                "cannot run {program:?}: {error}; nothing was started (the server is out of \
                 resources: retry later)"
            )
        }
        _ => format!("cannot run {program:?}: {error}"),
    }
}

/// The last lines of a failed command's stderr, which the cut left in the omitted middle.
pub fn stderr_tail(lines: &str) -> String {
    format!("[the last lines it wrote to stderr, left out above:]\n{lines}")
}

/// The head+tail omission marker.
pub fn omitted(bytes: u64, lines: u64) -> String {
    format!("\n[... {bytes} bytes in {lines} lines omitted ...]\n")
}

pub fn spill_hint(path: &Path, bytes: u64, lines: u64) -> String {
    let p = shell_quote(&path.display().to_string());
    format!(
        "[full output ({bytes} bytes, {lines} lines) saved to {p}; read a slice with: \
         sed -n '1,200p' {p}]"
    )
}

pub fn spill_failed(reason: &str) -> String {
    format!("[the full output could not be saved ({reason}); only the head and tail above remain]")
}

/// One wording for every path that hits the capture cap.
pub fn over_capture() -> String {
    format!(
        "[output passed {} MB: capture stopped and the process tree was killed. Redirect the \
         output to a file and read parts of it, or filter it (grep, tail)]",
        CAPTURE_LIMIT_BYTES / (1024 * 1024)
    )
}

pub fn exited(code: i32, ms: u64) -> String {
    format!("[exit {code} · {ms} ms]")
}

pub fn signalled(signal: &str, ms: u64) -> String {
    format!("[killed by {signal} · {ms} ms]")
}

pub fn timed_out(timeout_ms: u64) -> String {
    format!(
        "[timed out after {timeout_ms} ms: the process tree was stopped. Raise timeout_ms \
         (max {TIMEOUT_MAX_MS}) or run it with background: true]"
    )
}

pub const CANCELLED: &str = "[cancelled: the process tree was stopped]";

/// `parse: true` where no output could be typed: the reason, and the text follows as usual.
pub fn not_parsed(reason: &str) -> String {
    format!("[note] not parsed: {reason}; the output is plain text")
}

pub const NOT_PARSED_EMPTY: &str = "there is no command whose output could be parsed";
pub const NOT_PARSED_UNCLEAR: &str = "the command line did not parse cleanly";
pub const NOT_PARSED_SHAPE: &str = "only one command, or one pipeline of a command and filters \
(grep, head, tail, sort), is parsed";
pub const NOT_PARSED_REDIRECTED: &str = "its output is redirected away from the result";
pub const NOT_PARSED_UNFINISHED: &str = "the command did not finish";

/// Why an output over the parse limit is text.
pub fn not_parsed_too_big() -> String {
    format!(
        "the output is over {} MB; narrow the command (grep, head) to parse it",
        agentty_core::limits::PARSE_INPUT_MAX_BYTES / (1024 * 1024)
    )
}
pub const PARSE_NOT_HERE: &str = "`parse` applies to a foreground call without `pty`: drop \
`background`/`pty`, or drop `parse`";

/// The typed result's line: its type, then its data as compact JSON.
pub fn parsed_line(type_name: &str, json: &str) -> String {
    format!("{type_name} {json}")
}

/// A typed result cut to fit: how many records were left out, and how to see them.
pub fn parsed_cut(cut: &agentty_parse::Cut, records: &str) -> String {
    let total = cut.kept + cut.omitted;
    let (first, last) = (cut.head, cut.kept - cut.head);
    format!(
        "[note] {} of {total} {records} left out to fit {} KB: the first {first} and the last \
         {last} are shown. Narrow the command (grep, head) or run it without parse",
        cut.omitted,
        agentty_core::limits::INLINE_LIMIT_BYTES / 1024
    )
}

/// The program was started, then the server could not follow its output and stopped it.
pub fn stopped_after_start(program: &str, error: &std::io::Error) -> String {
    format!(
        "{program:?} was started, then stopped at once: the server could not read its output \
         ({error}). It may have begun to run; its process group was killed"
    )
}

pub const CANCELLED_BEFORE_START: &str = "cancelled before it started: nothing ran";

pub fn stray_held_output(count: usize) -> String {
    format!(
        "[note] the command exited but {count} process(es) it started in the background kept \
         its output open; they were stopped. Run servers and watchers with background: true"
    )
}

pub fn stray_lingering(count: usize) -> String {
    format!(
        "[note] {count} process(es) the command left running were stopped: a one-shot call \
         cleans up everything it started. Run servers and watchers with background: true"
    )
}

pub fn stuck(count: usize) -> String {
    format!(
        "[note] {count} process(es) ignored SIGKILL (uninterruptible sleep); the call returned \
         without them"
    )
}

pub fn cd_note(dir: &str) -> String {
    format!(
        "[note] cd only takes effect inside this subshell; the next call still runs in the \
         original working directory. If the following commands have to run in {dir}, pass the \
         workdir parameter, or write it as \"cd {dir} && <command>\"."
    )
}

/// Quotes a path for a POSIX shell when it needs it.
fn shell_quote(text: &str) -> String {
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%".contains(&b));
    if plain && !text.is_empty() {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// A program that needs a terminal, refused before it starts (it would wait until the timeout).
pub fn needs_terminal(needs: &agentty_guard::NeedsTerminal) -> String {
    use agentty_guard::TerminalKind;
    let p = &needs.program;
    match needs.kind {
        TerminalKind::Editor => format!(
            "`{p}` is an interactive editor and needs a terminal; on this call it would wait for \
             keys until the timeout, so it was not started. To change a file, write it (`cat > \
             FILE <<'EOF'`, `sed -i`, `patch`); to drive the editor, open a shell with shell_open \
             and type into it, or pass `pty: true` with the keys in `stdin`."
        ),
        TerminalKind::Monitor => format!(
            "`{p}` is a full-screen program and needs a terminal, so it was not started. For one \
             snapshot use its batch mode (`top -b -n 1`) or `ps aux --sort=-%cpu | head`; to watch \
             it live, open a shell with shell_open, or pass `pty: true`."
        ),
        TerminalKind::Watch => "`watch` repeats a command forever on a terminal, so it was not \
             started. Run the command once, or loop it in the background (`background: true`, \
             `while true; do CMD; sleep 2; done`) and read it with task_output."
            .to_owned(),
    }
}

pub const PTY_NOT_BACKGROUND: &str = "`pty: true` runs one command to its end; it cannot be \
combined with `background` or `on_timeout: \"background\"`. For a long-lived program on a \
terminal, use shell_open and shell_send";

/// `terminal` with `pty: true` when a full-screen program (`top`, an editor) waited for keys.
pub const PTY_FULL_SCREEN: &str = "[note] a full-screen program drew its screen (above, as \
text) and waited for keys, which a one-shot call cannot send, so it was stopped. For one \
snapshot use its batch mode (`top -b -n 1`); to use it interactively, shell_open + shell_send \
(shell_read with `screen: true` shows its screen)";

/// `terminal` with `pty: true` when the command waited for input.
/// `password`: it read with echo off, or its prompt reads like a password's.
pub fn pty_awaiting_input(prompt: &str, password: bool) -> String {
    let at = if prompt.is_empty() {
        "(it showed no prompt)".to_owned()
    } else {
        format!("at {prompt:?}")
    };
    if password {
        return format!(
            "[note] the command stopped to wait for a password {at}, which a one-shot call \
             cannot answer, so it was stopped. Run it in a shell (shell_open, then shell_send \
             the command) and, at its prompt, have the user type the password with \
             shell_send({{\"id\": \"<the shell's id>\", \"secret\": \"<what it is>\"}}); \
             never pass a password in `stdin` or `input`"
        );
    }
    format!(
        "[note] the command stopped to wait for keyboard input {at}, which a one-shot \
         call cannot answer, so it was stopped. Pass the answer with `stdin`, use a \
         non-interactive flag (e.g. --yes), or run it in a shell (shell_open + shell_send) and \
         answer the prompt there"
    )
}

pub fn started(id: &str, pid: i32, display: &str) -> String {
    format!(
        "Started {id} in the background (pid {pid}): {}\nIt runs until it ends or is stopped; \
         no timeout applies. Read its output with task_output({{\"id\": \"{id}\"}}), wait for \
         it with task_wait({{\"id\": \"{id}\", \"timeout_ms\": 30000}}), stop it with \
         task_stop({{\"id\": \"{id}\"}}).",
        one_line(display)
    )
}

pub fn moved_to_background(timeout_ms: u64, id: &str, cursor: u64) -> String {
    let read_so_far = if cursor == 0 {
        "It printed nothing yet".to_owned()
    } else {
        format!("The output above ends at byte {cursor}")
    };
    format!(
        "[timed out after {timeout_ms} ms: moved to the background as {id}, nothing was \
         stopped. {read_so_far}; continue with \
         task_output({{\"id\": \"{id}\", \"since\": {cursor}}}), wait with task_wait, stop \
         with task_stop]"
    )
}

pub fn not_moved(timeout_ms: u64, refusal: &str) -> String {
    format!(
        "[timed out after {timeout_ms} ms and could not move to the background, so the process \
         tree was stopped. {refusal}]"
    )
}

pub fn spill_so_far(path: &Path) -> String {
    format!(
        "[the full output so far is in {}; the job keeps writing to it]",
        path.display()
    )
}
