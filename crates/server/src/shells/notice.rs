//! Every word the persistent-shell family (`shell_*`) says to a model, in one place
//! (docs/BEHAVIOUR.md §1, §4).
//!
//! The recurring facts are stated the same way everywhere: a newline is never added for you,
//! a command still running at the bound keeps running, and a shell that is gone took its cwd,
//! env and programs with it. Numbers come from the engine's constants.

use std::time::Duration;

use agentty_core::jobs::table::MAX_SHELLS;
use agentty_core::jobs::{Job, JobState, READ_MAX_BYTES};
use agentty_core::pty::{Gone, SIZE_MAX};
use agentty_core::signal_name;

/// `shell_send` while the person watching holds the shell's keyboard (web view).
pub fn held_by_user(id: &str) -> String {
    format!(
        "the user has taken {id}'s keyboard in the web view: nothing was typed. Wait for the \
         user to hand it back (your next result will say what they did), read it with \
         shell_read, or use another shell"
    )
}

/// Told in the model's next result once the person hands a shell back.
pub fn user_typed(id: &str, typed: &[String], screen: &str) -> String {
    let lines: usize = typed.iter().map(|t| t.matches('\n').count()).sum();
    let what: Vec<String> = typed.iter().map(|t| format!("{t:?}")).collect();
    let mut said = format!(
        "[note] the user typed {lines} line{} into {id} from the web view ({}) and gave it back; \
         the screen now shows:\n{screen}",
        if lines == 1 { "" } else { "s" },
        what.join(", ")
    );
    // What the screen shows is the programs' (`own_lines.rs`).
    crate::own_lines::push_note(&mut said, screen);
    said
}

/// What the model is told of keys the user typed at a password prompt from the web view
/// ([`user_typed`] lists it as typed): their count, and the Enter if they ended with one.
pub fn keys_at_password(keys: &str) -> String {
    let enter = if keys.ends_with('\n') { "\n" } else { "" };
    let count = keys.trim_end_matches(['\r', '\n']).chars().count();
    format!("[{count} keys at a password prompt, not shown]{enter}")
}

pub fn busy(id: &str, timeout_ms: u64) -> String {
    format!(
        "nothing was typed: another shell_send to {id} was still waiting after {timeout_ms} ms; \
         wait for it, or send again"
    )
}

/// A `shell_send` whose Ctrl+Z would stop the program that read a secret (docs/BEHAVIOUR.md §4
/// *Sealed entry*).
pub const STOPS_SEALED: &str = "nothing was typed: Ctrl+Z would stop the program the user typed a \
secret into while it still runs, and hand the shell back with the secret in its memory. Wait for \
it to end (shell_read), answer it, or end it with \"\\u0003\" (Ctrl+C)";

/// A `shell_send` holding a key the shell's line editor edits the line with.
pub fn editing_key(key: &agentty_core::pty::line_editor::EditingKey) -> String {
    format!(
        "refused: the input holds {} (\\u{:04x}), which the shell's line editor uses to edit \
         the line ({}); the guard judges the line as typed, so an edited line could run \
         something other than what it judged. Nothing was typed. Send the line plainly: its \
         text, Backspace (\\u007f) or Ctrl+U (\\u0015) to correct it, and \\n to run it. A \
         program that reads the keyboard itself (vim, less, a REPL) gets such keys while it \
         waits for them (an empty send waits until it does).",
        key.name,
        u32::from(key.code),
        key.does
    )
}

pub fn line_too_long(len: usize, max: usize) -> String {
    format!(
        "the line typed so far would be {len} bytes without an Enter, over the {max} bytes a \
         command line may have; send Ctrl+U (\\u0015) to clear it"
    )
}

/// A shell as the user's questions name it (escalation, a host of network `ask`).
pub fn shell_what(shell: &str) -> String {
    format!("an interactive shell ({shell})")
}

/// zsh where its start-up file would lie where confined commands may write (review 39 M1).
pub const ZSH_START_UP_WRITABLE: &str = "no shell was opened: zsh reads its start-up file from \
    a directory, and here confined commands may write agentty's state dir, which holds it (no \
    mount namespace keeps it read-only), so a command could change what every later zsh runs. \
    Ask the user to restart agentty with --shell /bin/bash, or with a --state-dir outside what \
    commands may write.";
pub const CANCELLED_BEFORE_OPEN: &str = "cancelled before it started: no shell was opened";
pub const CANCELLED_BEFORE_TYPING: &str = "cancelled before it started: nothing was typed";
pub fn shell_open_description() -> String {
    format!(
        "Open a persistent interactive shell on a terminal (PTY) and return its id (s1, …). \
         Unlike `terminal`, cd, exported variables, an activated virtualenv and running REPLs \
         persist between calls. Returns after the first prompt. At most {MAX_SHELLS} shells per \
         session; one unused for a while ({} by default) is closed.",
        crate::job_words::human_duration(Duration::from_millis(
            agentty_core::pty::SHELL_IDLE_DEFAULT_MS
        ))
    )
}

pub const SHELL_SEND_DESCRIPTION: &str = "Type `input` into a shell and return what it printed. \
No newline is added: \"pwd\" only types three characters, \"pwd\\n\" runs it; \"\\u0003\" is \
Ctrl+C, \"\\u0004\" Ctrl+D; \"\" types nothing and waits for a command still running. Returns \
when the command finished (with its exit code and only its output), when the program waits for \
keyboard input (status awaiting_input: answer with another shell_send), when `wait_for` \
matches, or at `timeout_ms`; a command still running keeps running (shell_read reads on, \
\"\\u0003\" stops it). At a prompt, line-editing keys (Ctrl+A, arrows, Tab) are refused.";

pub fn shell_read_description() -> String {
    format!(
        "Read a shell's output without typing anything, as task_output does: at most {} KB per \
         call, cleaned text, from a byte cursor; says when a program waits for keys. Runs \
         nothing.",
        READ_MAX_BYTES / 1024
    )
}

pub const SHELL_LIST_DESCRIPTION: &str = "List this session's shells: id, state, shell, \
workdir, size, idle time and output size. Runs nothing.";

pub const SHELL_CLOSE_DESCRIPTION: &str = "Close a shell: hang up its terminal and stop every \
process started in it. Its output stays readable with shell_read and task_output.";

pub const SCREEN_AND_RAW: &str = "pass at most one of `screen` and `raw`";

pub fn bad_size(cols: u16, rows: u16) -> String {
    format!(
        "terminal size {cols}x{rows} is out of range: cols and rows must be between 1 and {SIZE_MAX}"
    )
}

pub fn half_size() -> String {
    "pass both `cols` and `rows` to resize the terminal".to_owned()
}

pub fn bad_regex(error: &str) -> String {
    format!("`wait_for` is not a valid regular expression: {error}")
}

/// A `shell_send` cancelled while it waited for the shell (another send held it).
pub const SEND_CANCELLED: &str = "cancelled; the shell keeps running";

/// `shell_send`'s advice past the `timeout_ms` bound.
pub const SEND_PAST_MAX: &str = "the command keeps running at the bound anyway, so send again \
or read with shell_read to wait longer";

/// An open shell's directory, where the kernel cannot tell it (`shell_list`).
pub const CWD_UNKNOWN: &str = "a directory agentty cannot read (a path too long to tell)";

/// The open shells, each with where it is now (`where_now`, as `shell_list` shows it).
pub fn cap_reached(running: &[(std::sync::Arc<Job>, String)]) -> String {
    let mut text = format!(
        "this session already has {MAX_SHELLS} open shells, the maximum. Close one with \
         shell_close, or reuse one with shell_send:"
    );
    for (job, shown) in running {
        text.push_str(&format!("\n  {} {} (in {shown})", job.id, job.label));
    }
    text
}

pub fn no_prompt(waited_ms: u64) -> String {
    format!(
        "the shell printed no prompt within {waited_ms} ms and was stopped; nothing was left \
         running"
    )
}

pub fn ended_at_start(output: &str) -> String {
    let output = output.trim();
    if output.is_empty() {
        "the shell exited as soon as it started".to_owned()
    } else {
        format!("the shell exited as soon as it started, saying:\n{output}")
    }
}

pub fn open_failed(error: &str) -> String {
    format!("cannot open a shell: {error}")
}

/// Why an id has no open shell, as the error for send/close/screen.
pub fn gone(id: &str, why: &Gone, idle: Duration) -> String {
    match why {
        Gone::Unknown => format!(
            "there is no shell {id} in this session. shell_list shows the open ones; \
             shell_open starts a new one"
        ),
        Gone::NotAShell => {
            format!("{id} is a background command, not a shell: use task_output / task_stop for it")
        }
        Gone::Closed => format!(
            "shell {id} was closed (shell_close); everything in it (cwd, env, running \
             programs) is gone. Open a new one with shell_open"
        ),
        Gone::Reaped => format!(
            "shell {id} was closed for inactivity (unused for {}); everything in it (cwd, env, \
             running programs) is gone. Open a new one with shell_open and redo the setup \
             (cd, export, activate)",
            crate::job_words::human_duration(idle)
        ),
        Gone::Exited(code) => format!(
            "shell {id} has exited (exit {code}, e.g. after `exit` or Ctrl+D); everything in \
             it is gone. Open a new one with shell_open"
        ),
        Gone::Signalled(sig) => format!(
            "shell {id} was killed by {}; everything in it is gone. Open a new one with \
             shell_open",
            signal_name(*sig)
        ),
    }
}

/// How a shell tells that a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    /// bash, zsh: its own process reports it; no program it runs can.
    FromTheShell,
    /// POSIX shells: a marker in its prompt, which a program it runs could print too.
    FromItsPrompt,
    /// No markers at all.
    Unmarked,
}

pub fn opened(id: &str, shell: &str, workdir: &str, cols: u16, rows: u16, ends: Ends) -> String {
    let done = match ends {
        Ends::FromTheShell => {
            "each shell_send returns when its command finishes, with the exit code".to_owned()
        }
        Ends::FromItsPrompt => {
            "each shell_send returns when its command finishes, with the exit code; this shell \
             has no prompt hook, so a program it runs could fake that end (bash and zsh report \
             it from the shell itself)"
                .to_owned()
        }
        Ends::Unmarked => {
            "this shell has no prompt markers, so shell_send returns once output is quiet"
                .to_owned()
        }
    };
    format!(
        "{id} open: {shell} in {workdir} ({cols}x{rows}). Type with shell_send({{\"id\": \"{id}\", \
         \"input\": \"…\\n\"}}); {done}."
    )
}

pub fn done(code: i32, ms: u64) -> String {
    format!("[exit {code} · {ms} ms]")
}

/// Longest prompt quoted back: a program may write a long line without a newline.
const PROMPT_MAX_CHARS: usize = 120;

/// The end of `prompt`, at most [`PROMPT_MAX_CHARS`] characters ("…" marks a cut).
pub fn short_prompt(prompt: &str) -> String {
    let count = prompt.chars().count();
    if count <= PROMPT_MAX_CHARS {
        return prompt.to_owned();
    }
    let tail: String = prompt.chars().skip(count - PROMPT_MAX_CHARS).collect();
    format!("…{tail}")
}

/// A full-screen program is up: the reply's text is its rendered screen.
pub fn full_screen(id: &str) -> String {
    format!(
        "[awaiting input: a full-screen program waits for keys; above is its screen as a \
         terminal shows it. Send keys with shell_send, see the screen again with \
         shell_read({{\"id\": \"{id}\", \"screen\": true}})]"
    )
}

/// Whether a program waits for a password, as the awaiting-input line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asks {
    /// An ordinary answer.
    Input,
    /// A password: a line read with echo off (as `getpass` reads), not by the shell itself.
    Password,
    /// A prompt that reads like a password's, but the terminal echoes what is typed.
    PasswordEchoed,
}

/// The awaiting-input line. `reader`: the program that reads the terminal, as the shell's
/// `foreground` describes it (its file and command line, escaped), named where a password is
/// asked: a prompt is any program's to print, and who reads the answer is what the model and
/// the user judge it by (review 35 F9).
pub fn awaiting_input(
    prompt: &str,
    by_shell: bool,
    asks: Asks,
    id: &str,
    reader: Option<&str>,
) -> String {
    let secret = format!("shell_send({{\"id\": \"{id}\", \"secret\": \"<what it is>\"}})");
    // One quoted value: the command line is the program's to choose, words and all.
    let program = reader.map_or_else(
        || "the program".to_owned(),
        |r| format!("the program {r:?}"),
    );
    match asks {
        Asks::Password if !by_shell => {
            return format!(
                "[awaiting input: {program} asks for a password at {prompt:?}. Have the user \
                 type it: {secret}; never send a password as input. Or send \"\\u0003\" to \
                 interrupt it]"
            );
        }
        Asks::PasswordEchoed if !by_shell => {
            return format!(
                "[awaiting input: the program waits at {prompt:?}, which reads like a password \
                 prompt, with echo on: what is typed shows in the output. A password is for the \
                 user to type with {secret}, once a program reads it with echo off; answer with \
                 shell_send only what may be seen, or send \"\\u0003\" to interrupt it]"
            );
        }
        _ => {}
    }
    if prompt.is_empty() && !by_shell {
        return "[awaiting input: the program waits for keyboard input (it shows no prompt). \
                Answer with shell_send (end the line with \\n), send \"\\u0004\" for end of input, \
                or \"\\u0003\" to interrupt it]"
            .to_owned();
    }
    if by_shell {
        format!(
            "[awaiting input: the shell waits for the rest of the line at {prompt:?}. Send \
             more keystrokes, \"\\n\" to run it, or \"\\u0003\" to discard it]"
        )
    } else {
        format!(
            "[awaiting input: the program waits for keyboard input at {prompt:?}. Answer with \
             shell_send (end the line with \\n), or send \"\\u0003\" to interrupt it]"
        )
    }
}

pub fn matched(ms: u64) -> String {
    format!("[wait_for matched after {ms} ms; the command may still be running]")
}

pub fn quiet(ms: u64) -> String {
    format!("[output quiet; returned after {ms} ms. The command may still be running]")
}

pub fn running(ms: u64, id: &str, cursor: u64, program: Option<&str>) -> String {
    let what = program.map_or_else(String::new, |p| format!(": {p}"));
    format!(
        "[still running after {ms} ms{what}; the shell keeps running it. Read more with \
         shell_read({{\"id\": \"{id}\", \"since\": {cursor}}}), wait for it with shell_send({{\"id\": \"{id}\", \
         \"input\": \"\"}}), or stop it with shell_send({{\"id\": \"{id}\", \"input\": \"\\u0003\"}})]"
    )
}

/// Nothing was typed at the shell's prompt: `by` could have read it (docs/BEHAVIOUR.md §4).
pub fn held(by: &str, id: &str) -> String {
    format!(
        "[nothing was typed: the shell is at its prompt, but {by}: what you type could go to it \
         instead. Stop it if it should not get your input (kill it, or \
         shell_close({{\"id\": \"{id}\"}}), which stops everything the shell started); the next \
         shell_send types, and goes to whichever reads first]"
    )
}

/// The terminal took only part of a send's input before its timeout.
pub fn untyped(bytes: usize, id: &str) -> String {
    format!(
        "[the last {bytes} bytes of the input were not typed: the program is not reading its \
         input and the terminal took no more before the timeout. Send them again once it reads; \
         if it takes no keys at all, shell_close({{\"id\": \"{id}\"}}) stops it]"
    )
}

/// `how`: its end as [`state_word`] says it (`exited 0`), when known.
pub fn shell_ended(id: &str, how: Option<&str>) -> String {
    match how {
        Some(how) => {
            format!("[the shell {id} ended during this send ({how}); everything in it is gone]")
        }
        None => format!("[the shell {id} ended during this send; everything in it is gone]"),
    }
}

/// The head of a send's output was left out of the reply. `spill`: the ring no longer holds it
/// either, and this file does.
pub fn dropped(bytes: u64, id: &str, cursor: u64, spill: Option<&std::path::Path>) -> String {
    crate::job_words::not_shown("shell_read", id, cursor, bytes, spill)
}

/// A send whose input the command an earlier send left running read (the shell never ran it),
/// and which then ended: the exit code that follows is that command's.
pub const READ_BY_EARLIER: &str = "[the command still running from an earlier send read this \
input (the shell did not run it as a command line), then ended: the exit code below is that \
command's]";

/// Commands whose sends returned while they ran, and that ended since the last reply (before
/// this send or during it).
pub fn ended_before(codes: &[i32]) -> String {
    let list = codes
        .iter()
        .map(|c| format!("exit {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (which, its) = if codes.len() == 1 {
        ("command", "its output")
    } else {
        ("commands", "their output")
    };
    format!("[since the last reply, the earlier {which} ended: {list}; shell_read has {its}]")
}

/// What a shell is doing, in `shell_list`.
pub fn activity(activity: &agentty_core::pty::Activity) -> String {
    use agentty_core::pty::Activity;
    match activity {
        Activity::AtPrompt => "at its prompt".to_owned(),
        Activity::AwaitingInput(a, _) if a.by_shell => {
            format!(
                "waiting for the rest of the line at {:?}",
                short_prompt(&a.prompt)
            )
        }
        Activity::AwaitingInput(a, program) => {
            let waits = if a.full_screen {
                "waiting for keys (full screen)".to_owned()
            } else if a.prompt.is_empty() {
                "waiting for keyboard input (no prompt shown)".to_owned()
            } else {
                format!(
                    "waiting for keyboard input at {:?}",
                    short_prompt(&a.prompt)
                )
            };
            match program {
                Some(program) => format!("running {program}, {waits}"),
                None => waits,
            }
        }
        Activity::Running(program) => format!("running {program}"),
        Activity::Busy => "not at its prompt".to_owned(),
    }
}

pub const AT_PROMPT: &str = "[at the prompt: no command ran, so there is no exit code]";

pub const END_OF_OUTPUT: &str = "[end of output: the shell is closed]";

/// The cursor to read on from, after a line that says a program waits for keys.
pub fn next_read(next: u64, id: &str) -> String {
    format!("[next read: shell_read({{\"id\": \"{id}\", \"since\": {next}}})]")
}

pub fn read_on(next: u64, id: &str) -> String {
    format!("[nothing more yet; next read: shell_read({{\"id\": \"{id}\", \"since\": {next}}})]")
}

pub fn more(next: u64, remaining: u64, id: &str) -> String {
    format!("[{remaining} more bytes: shell_read({{\"id\": \"{id}\", \"since\": {next}}})]")
}

pub fn cursor_past_end(since: u64, total: u64) -> String {
    format!("`since` {since} is past the end of the output ({total} bytes so far)")
}

pub const NO_SCREEN: &str = "the shell is no longer open, so it has no screen or raw tail; its \
output is readable without `screen` and `raw`";

pub fn closed(id: &str) -> String {
    format!("{id} closed: the shell and every process started in it were stopped.")
}

pub fn state_word(state: &JobState) -> String {
    crate::job_words::state_words(agentty_core::jobs::JobKind::Shell, state)
}

pub const NO_SHELLS: &str = "no shells in this session; shell_open starts one";

pub const INPUT_OR_SECRET: &str = "give `input` or `secret`, not both";

pub const INPUT_NEEDED: &str = "`input` is required (the keystrokes to type), or `secret` to have \
the user type a password";

pub const SECRET_WHAT: &str = "`secret` names what the program asks for, in a few words (e.g. \
\"sudo password\"): never the secret itself";

pub const SECRET_NOT_ASKED: &str = "nothing in the shell asks for a password now (a line with \
echo off), so a secret would show or go to the wrong reader. Send the command that asks first; \
once it waits at its password prompt (awaiting_input), send `secret`";

pub const SECRET_SHELL_ITSELF: &str = "the shell itself reads this line (a `read -s` at its \
prompt, or a command substitution), so the value would land in a variable you can read: the user \
is not asked. Run the program that needs the password (sudo, ssh, git) and send `secret` once it \
asks";

pub const SECRET_NO_VIEW: &str = "secrets are typed by the user in agentty's web view, which is \
not running: ask the user to restart agentty with --view (or --http), or to type it themselves";

/// The handler's word when the page's address goes back as `input_required` (never shown).
pub const SECRET_ASKED: &str = "asked the user to open the page";

pub const SECRETS_FULL: &str = "4 requests for a secret from this caller's shells already wait \
(or 16 were made in the last 5 minutes): answer them or let them expire first";

pub const SECRET_NOT_ASKED_URL: &str = "the client could not open agentty's page for the user: \
nothing was typed. Ask the user to enter it in agentty's web view";

pub const SECRET_DECLINED: &str = "the user declined to enter it: nothing was typed";

pub const SECRET_NOT_ENTERED: &str = "nobody entered it within 5 minutes: nothing was typed";

/// The URL elicitation's message.
pub fn secret_question(what: &str, id: &str) -> String {
    format!(
        "A program in the agent's shell {id} asks for: {}. Type it on agentty's page, which \
         shows which program reads it; agentty types it with echo off and keeps it nowhere.",
        crate::job_words::visible(what)
    )
}

/// The first line of the send after the user entered the secret.
pub fn secret_entered(what: &str, id: &str) -> String {
    format!("[{what} entered by the user into {id}; it is not shown]")
}

/// `what` with "the" before it, unless it has an article or a possessive already ("the sudo
/// password", "your passphrase").
fn with_article(what: &str) -> String {
    let first = what.split_whitespace().next().unwrap_or_default();
    let has_one = ["the", "a", "an", "your", "my", "its", "their"]
        .iter()
        .any(|article| first.eq_ignore_ascii_case(article));
    if has_one {
        what.to_owned()
    } else {
        format!("the {what}")
    }
}

/// The reply when the client cannot open the page for the user.
pub fn secret_later(what: &str, id: &str, address: &str) -> String {
    let what = with_article(what);
    format!(
        "Ask the user to enter {what} in agentty's web view ({address}), which lists this \
         request; you will not see it. It is typed into {id} when they do; then \
         shell_read({{\"id\": \"{id}\"}}) shows what followed."
    )
}

#[cfg(test)]
mod article_tests {
    #[test]
    fn what_is_asked_gets_one_article() {
        assert_eq!(super::with_article("sudo password"), "the sudo password");
        assert_eq!(
            super::with_article("the test password"),
            "the test password"
        );
        assert_eq!(
            super::with_article("Your SSH passphrase"),
            "Your SSH passphrase"
        );
        assert_eq!(super::with_article("an API token"), "an API token");
        assert_eq!(super::with_article("thesis key"), "the thesis key");
    }
}
