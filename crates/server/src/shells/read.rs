//! `shell_read`: a shell's output from a cursor, or its rendered screen.

use agentty_core::jobs::READ_MAX_BYTES;
use rmcp::model::{CallToolResult, JsonObject};

use super::notice as say;
use crate::server::Agentty;
use crate::tools::{parse_args, tool_error};

use super::*;

impl Agentty {
    pub(super) async fn read_shell(&self, args: JsonObject) -> CallToolResult {
        let p: ShellReadParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (want_screen, want_raw) = (p.screen.unwrap_or(false), p.raw.unwrap_or(false));
        if want_screen && want_raw {
            return tool_error(say::SCREEN_AND_RAW.into());
        }
        let resize = match size(p.cols, p.rows) {
            Ok(r) => r,
            Err(e) => return tool_error(e),
        };
        // A closed shell's output stays readable; only screen, raw and resize need it open.
        let (job, shell) = match self.shells().get(&p.id) {
            Ok((job, shell)) => (job, Some(shell)),
            Err(why) => match self.jobs().get(&p.id) {
                Some(job) if why != agentty_core::pty::Gone::NotAShell => (job, None),
                _ => return self.shell_gone(&p.id, &why),
            },
        };
        if want_screen || want_raw || resize.is_some() {
            let Some(shell) = &shell else {
                return tool_error(say::NO_SCREEN.into());
            };
            if let Some((cols, rows)) = resize
                && let Err(e) = shell.resize(cols, rows)
            {
                return tool_error(say::open_failed(&e.to_string()));
            }
            if want_screen {
                return screen(&job, shell);
            }
            if want_raw {
                return raw(&job, shell);
            }
        }
        if let Some(shell) = &shell {
            shell.touch_read();
        }
        let total = job.output.total();
        if let Some(since) = p.since
            && since > total
        {
            return tool_error(say::cursor_past_end(since, total));
        }
        stream(&job, shell.as_deref(), p.since)
    }
}

/// `screen: true`: the rendered screen, as a terminal shows it (with the look-alike note,
/// `own_lines.rs`: what is on it is the programs').
fn screen(job: &Job, shell: &Shell) -> CallToolResult {
    let screen = shell.screen();
    let mut text = screen.text.clone();
    crate::own_lines::push_note(&mut text, &screen.text);
    success(
        text,
        &ShellReadResult {
            screen: Some(ScreenInfo {
                cols: screen.cols,
                rows: screen.rows,
                cursor_row: screen.cursor_row,
                cursor_col: screen.cursor_col,
                alternate: screen.alternate,
            }),
            ..not_a_stream(job, screen.text)
        },
    )
}

/// `raw: true`: the newest bytes, escape sequences shown escaped.
fn raw(job: &Job, shell: &Shell) -> CallToolResult {
    let raw = shell.raw_tail(READ_MAX_BYTES);
    success(raw.escape_debug().to_string(), &not_a_stream(job, raw))
}

/// A read of `text` that is not a slice of the output stream (no cursors).
fn not_a_stream(job: &Job, text: String) -> ShellReadResult {
    ShellReadResult {
        id: job.id.clone(),
        state: say::state_word(&job.state()),
        text,
        from: None,
        next: None,
        dropped: 0,
        remaining: 0,
        total: job.output.total(),
        spill_path: None,
        spill_error: None,
        screen: None,
        awaiting_input: None,
    }
}

/// The output stream from `since` (default: the newest), always with the cursor to read on:
/// a host that shows only the text still lets the model go on reading. Read to its end while a
/// program waits for keys (`shell`: the shell, if open), it says so and at what line: a
/// question without a newline is not in the stream yet, and "nothing more yet" would leave the
/// model waiting on a program that waits on it.
fn stream(job: &Job, shell: Option<&Shell>, since: Option<u64>) -> CallToolResult {
    let slice = job.output.read(since, READ_MAX_BYTES);
    let mut text = String::new();
    if slice.dropped > 0 {
        // One wording with task_output: the buffer is the same kind, and so is its spill.
        text.push_str(&crate::job_words::scrolled_out(
            slice.dropped,
            slice.spill_path.as_deref(),
            slice.spill_error.as_deref(),
        ));
        text.push('\n');
    }
    text.push_str(if slice.text.is_empty() {
        crate::job_words::NO_OUTPUT
    } else {
        &slice.text
    });
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let awaiting = shell
        .filter(|_| slice.remaining == 0)
        .and_then(|shell| awaiting_note(shell, &job.id));
    if let Some((_, line)) = &awaiting {
        text.push_str(line);
        text.push('\n');
    }
    if slice.remaining > 0 {
        text.push_str(&say::more(slice.next, slice.remaining, &job.id));
    } else if awaiting.is_some() {
        text.push_str(&say::next_read(slice.next, &job.id));
    } else if shell.is_some() {
        text.push_str(&say::read_on(slice.next, &job.id));
    } else {
        text.push_str(say::END_OF_OUTPUT);
    }
    crate::own_lines::push_note(&mut text, &slice.text);
    success(
        text,
        &ShellReadResult {
            id: job.id.clone(),
            state: say::state_word(&job.state()),
            text: slice.text,
            from: Some(slice.from),
            next: Some(slice.next),
            dropped: slice.dropped,
            remaining: slice.remaining,
            total: slice.total,
            spill_path: slice.spill_path.map(|p| p.display().to_string()),
            spill_error: slice.spill_error,
            screen: None,
            awaiting_input: awaiting.map(|(prompt, _)| prompt),
        },
    )
}

/// For a read that reached the end of an open shell's output: the line a program waits at for
/// keys (`""` when it shows none, or draws a whole screen) and the bracketed line that says so
/// and how to answer, as a send says it; `None` when nobody waits (see `Shell::awaiting_input`).
pub(crate) fn awaiting_note(shell: &Shell, id: &str) -> Option<(String, String)> {
    let awaiting = shell.awaiting_input()?;
    if awaiting.full_screen {
        return Some((String::new(), say::full_screen(id)));
    }
    Some(super::send::awaiting_line(
        shell,
        &awaiting.prompt,
        awaiting.by_shell,
        id,
    ))
}
