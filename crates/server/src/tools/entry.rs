//! What a shell will execute that does not arrive as the command line: the guard judges it all.
//!
//! A script fed on stdin to a shell (`argv: ["bash"]` with `stdin`), code the environment makes a
//! shell run (`BASH_ENV`/`ENV` name a file it sources; `PROMPT_COMMAND` and `PS0`…`PS4` are run
//! or expanded; `BASH_FUNC_name%%` defines a function), and a line typed into a persistent shell
//! in several `shell_send` calls. One validator for `env` serves `terminal` and `shell_open`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;

use agentty_guard::{GuardConfig, Place, Verdict};
use agentty_sandbox::deputy::NotRead;

use super::notice;

/// Largest sourced file (`BASH_ENV`, `ENV`) the guard reads; larger ones are refused.
const SOURCED_MAX_BYTES: u64 = 256 * 1024;

/// Variables the shell integration of `shell_open` sets: overriding them would break knowing
/// when a command is done.
const SHELL_OWNED: &[&str] = &[
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "POSTEDIT",
    "PROMPT_EOL_MARK",
    "ZDOTDIR",
    "INPUTRC",
];

/// Why a call was refused before anything ran: the sentence for the model, and whether the
/// guard refused code it would run (the command, or code in its `env` or `stdin`: the web
/// view's history marks those).
pub(crate) struct Refused {
    pub(crate) text: String,
    pub(crate) by_guard: bool,
}

impl Refused {
    fn by_guard(text: String) -> Self {
        Refused {
            text,
            by_guard: true,
        }
    }
}

impl From<String> for Refused {
    fn from(text: String) -> Self {
        Refused {
            text,
            by_guard: false,
        }
    }
}

impl From<&str> for Refused {
    fn from(text: &str) -> Self {
        Refused::from(text.to_owned())
    }
}

/// Checks `env` (names, NUL bytes, what a shell would run from it) and returns it ready for a
/// spawn. `for_shell`: it is for `shell_open`, whose integration owns some variables.
pub(crate) fn check_env(
    env: Option<BTreeMap<String, String>>,
    workdir: &Path,
    guard: &GuardConfig,
    for_shell: bool,
) -> Result<Vec<(OsString, OsString)>, Refused> {
    let env = env.unwrap_or_default();
    // The code runs with the server's environment plus these: judged so, as the line is.
    let place =
        Place::at(workdir).with_env(env.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    let mut out = Vec::new();
    for (key, value) in env {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(notice::bad_env_name(&key).into());
        }
        if value.contains('\0') {
            return Err(notice::nul_byte(&format!("env.{key}")).into());
        }
        if for_shell && SHELL_OWNED.contains(&key.as_str()) {
            return Err(notice::shell_owned_env(&key).into());
        }
        if let Some(code) = code_in_env(&key, &value, workdir)? {
            judge(&code, &place, guard)
                .map_err(|m| Refused::by_guard(notice::blocked_in(&format!("env.{key}"), &m)))?;
        }
        // An exported function stands in for a builtin the integration's hooks use
        // (`BASH_FUNC_printf%%`, review 39 L1): a shell's functions are defined in it. After
        // the guard, which says so first when the function's code is what it refuses.
        if for_shell && key.starts_with("BASH_FUNC_") {
            return Err(notice::shell_function_env(&key).into());
        }
        out.push((OsString::from(key), OsString::from(value)));
    }
    Ok(out)
}

/// The shell code variable `key` = `value` makes a shell run, if any.
fn code_in_env(key: &str, value: &str, workdir: &Path) -> Result<Option<String>, String> {
    Ok(match key {
        "BASH_ENV" | "ENV" => read_sourced(key, value, workdir)?,
        "PROMPT_COMMAND" => Some(value.to_owned()),
        // Prompts are expanded: their `$(…)` and backquotes run.
        "PS0" | "PS1" | "PS2" | "PS3" | "PS4" => Some(format!("echo {value}")),
        _ if key.starts_with("BASH_FUNC_") => Some(format!("__agentty_fn{value}")),
        _ => None,
    })
}

/// The file a `BASH_ENV`/`ENV` names (tilde and variables aside, as the shell would read it).
fn read_sourced(key: &str, value: &str, workdir: &Path) -> Result<Option<String>, String> {
    if value.is_empty() {
        return Ok(None);
    }
    let path = workdir.join(value);
    // Never blocks (a FIFO a confined command made would hold this thread until a writer came),
    // reads only a regular file (the shell would wait on anything else), and none a confined
    // command could not read: unjudged, refused, its lines never quoted (`deputy.rs`).
    let file = match agentty_sandbox::deputy::open(&path) {
        Ok(file) => file,
        // Nothing there for the shell to source either.
        Err(NotRead::Missing) => return Ok(None),
        Err(NotRead::NotAFile | NotRead::Kept) => {
            return Err(notice::sourced_unreadable(key, &path));
        }
    };
    let mut text = String::new();
    let read = file.take(SOURCED_MAX_BYTES + 1).read_to_string(&mut text);
    if read.is_err() || text.len() as u64 > SOURCED_MAX_BYTES {
        return Err(notice::sourced_unreadable(key, &path));
    }
    Ok(Some(text))
}

/// Judges `code` as a command line run at `place`; the block's message on refusal.
pub(crate) fn judge(code: &str, place: &Place, guard: &GuardConfig) -> Result<(), String> {
    match agentty_guard::check_at(code, guard, place.clone()) {
        Verdict::Block(block) => {
            crate::metrics::METRICS.guard_blocked(block.rule);
            Err(block.message())
        }
        Verdict::Allow { .. } => Ok(()),
    }
}

/// Text fed on stdin is a script when the command makes a shell read one from stdin; it is
/// judged at `place`, the line's (with its environment). `typed`:
/// it is typed on a terminal (`pty`), where the shell's line editor reads it: a key it edits
/// the line with is refused, Backspace and Ctrl+U are applied, as for `shell_send`.
pub(crate) fn check_stdin(
    stdin: Option<&str>,
    reads_script: impl FnOnce() -> bool,
    typed: bool,
    place: &Place,
    guard: &GuardConfig,
) -> Result<(), Refused> {
    use agentty_core::pty::line_editor::{edit, editing_key};
    match stdin {
        Some(text) if reads_script() => {
            let script = if typed {
                if let Some(key) = editing_key(text, false) {
                    return Err(notice::editing_key_in_stdin(&key).into());
                }
                // What is left without an Enter is read at the end of input too.
                let edited = edit("", text);
                let mut lines = edited.completed;
                lines.push(edited.pending);
                lines.join("\n")
            } else {
                text.to_owned()
            };
            judge(&script, place, guard)
                .map_err(|m| Refused::by_guard(notice::blocked_in("stdin", &m)))
        }
        _ => Ok(()),
    }
}

/// The lines a `shell_send` completes, as the shell's line editor leaves them: what was typed
/// since the last Enter, then `input`, with Backspace, Ctrl+U and Ctrl+C applied, up to its
/// last Enter (see `agentty_core::pty::line_editor::edit`); `None` when `input` types no Enter.
pub(crate) fn completed_lines(pending: &str, input: &str) -> Option<String> {
    let edited = agentty_core::pty::line_editor::edit(pending, input);
    (!edited.completed.is_empty()).then(|| edited.completed.join("\n"))
}
