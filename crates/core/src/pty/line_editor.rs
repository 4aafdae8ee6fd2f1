//! What a shell's line editor (readline, zle, fish's) makes of keys typed at its prompt, as far
//! as the guard needs it: the line it would run.
//!
//! Enter, Backspace (DEL or Ctrl+H), Ctrl+U, Ctrl+C and Ctrl+D are followed: [`edit`] applies
//! them to the line as typed, with the cursor at its end, where every editor agrees on what
//! they do. Every other control key is one the editor may edit the line with: moving the cursor
//! (Ctrl+A, arrows, Home, which come as Escape sequences), recalling or searching history
//! (Ctrl+P, Ctrl+R), completing (Tab), killing and yanking (Ctrl+W, Ctrl+K, Ctrl+Y), Meta
//! commands (Escape then a key). These are not simulated: [`editing_key`] names the first one,
//! and a send holding one is refused while the editor reads. Following them faithfully would
//! mean the user's bindings, inputrc, vi mode and history; refusing cannot be wrong about what
//! runs, and a model has no need of them to type a command.

/// A key a line editor edits the line with (see the module header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditingKey {
    /// How it is typed: `Ctrl+A`, `Tab`, `Escape`.
    pub name: String,
    /// The character sent (`\u{1}`).
    pub code: char,
    /// What editors do with it, in a few words.
    pub does: &'static str,
}

/// Ctrl+Z and Ctrl+\: a signal for a running job (stop, quit), which never reaches a line. At
/// a prompt shells differ (bash drops the line, zsh keeps it): there they are editing keys.
const JOB_SIGNALS: &[char] = &['\u{1a}', '\u{1c}'];

/// The first key of `input` a line editor would edit the line with, if any; with
/// `job_signals_pass`, not Ctrl+Z or Ctrl+\ (a busy job in the foreground takes them).
pub fn editing_key(input: &str, job_signals_pass: bool) -> Option<EditingKey> {
    let code = input.chars().find(|c| {
        c.is_ascii_control()
            && !matches!(
                c,
                '\n' | '\r' | '\u{3}' | '\u{4}' | '\u{8}' | '\u{15}' | '\u{7f}'
            )
            && !(job_signals_pass && JOB_SIGNALS.contains(c))
    })?;
    let name = match code {
        '\t' => "Tab".to_owned(),
        '\u{1b}' => "Escape".to_owned(),
        '\0' => "Ctrl+@".to_owned(),
        c => format!("Ctrl+{}", char::from(b'@' + c as u8)),
    };
    let does = match code {
        '\u{1}' | '\u{2}' | '\u{5}' | '\u{6}' => {
            "moves the cursor, so what follows lands elsewhere"
        }
        '\t' => "completes a word from the files and commands it finds",
        '\u{1b}' => "starts a cursor key (arrows, Home, End) or a Meta command",
        '\u{e}' | '\u{f}' | '\u{10}' | '\u{12}' | '\u{13}' => "recalls a line from history",
        '\u{b}' | '\u{17}' | '\u{19}' | '\u{14}' => "kills, yanks or moves text",
        '\u{16}' => "inserts the next key as it is",
        '\u{18}' => "starts a command (Ctrl+X Ctrl+E edits the line in an editor)",
        '\u{1a}' | '\u{1c}' => "drops the line in some shells and not in others",
        _ => "may run an editing command",
    };
    Some(EditingKey { name, code, does })
}

/// What typing some keys after a pending line comes to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Edited {
    /// Each line an Enter ended, as the editor leaves it.
    pub completed: Vec<String>,
    /// What is typed after the last Enter.
    pub pending: String,
}

/// The lines `input`, typed after `pending` (typed since the last Enter), completes, and what
/// stays pending: Enter (`\n`, `\r`, `\r\n`) ends a line; Backspace (DEL, Ctrl+H) deletes the
/// character before the cursor; Ctrl+U and Ctrl+C drop the line; Ctrl+D adds nothing (at the
/// end of a line it deletes nothing; on an empty one it ends the shell), nor do Ctrl+Z and
/// Ctrl+\ (signals for a busy job). Any other key is kept as typed: it reaches here only when
/// a program, not the line editor, reads it.
pub fn edit(pending: &str, input: &str) -> Edited {
    let mut line = pending.to_owned();
    let mut completed = Vec::new();
    let mut keys = input.chars().peekable();
    while let Some(key) = keys.next() {
        match key {
            '\r' if keys.peek() == Some(&'\n') => {
                keys.next();
                completed.push(std::mem::take(&mut line));
            }
            '\n' | '\r' => completed.push(std::mem::take(&mut line)),
            '\u{3}' | '\u{15}' => line.clear(),
            '\u{7f}' | '\u{8}' => {
                line.pop();
            }
            // Ctrl+D, and the job signals (refused at a prompt): nothing lands in the line.
            '\u{4}' | '\u{1a}' | '\u{1c}' => {}
            key => line.push(key),
        }
    }
    Edited {
        completed,
        pending: line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backspace_ctrl_u_and_ctrl_c_are_applied_before_a_line_ends() {
        let e = edit("", "mkfs.ext4x\u{7f} /dev/sdz\n");
        assert_eq!(e.completed, ["mkfs.ext4 /dev/sdz"]);
        let e = edit("", "echo hi\u{15}rm -rf x\r\nls");
        assert_eq!(e.completed, ["rm -rf x"]);
        assert_eq!(e.pending, "ls");
        let e = edit("echo é", "\u{8}\u{8}x\u{3}pwd\u{4}\n\n");
        assert_eq!(e.completed, ["pwd", ""]);
        let e = edit("ab", "\u{7f}\u{7f}\u{7f}c");
        assert_eq!((e.completed.len(), e.pending.as_str()), (0, "c"));
    }

    #[test]
    fn editing_keys_are_named() {
        assert_eq!(
            editing_key("ls -la\n\u{3}\u{4}\u{7f}\u{8}\u{15}\r", false),
            None
        );
        assert_eq!(
            editing_key("x\u{1}y", false).map(|k| k.name),
            Some("Ctrl+A".into())
        );
        assert_eq!(
            editing_key("\u{1b}[D", false).map(|k| k.name),
            Some("Escape".into())
        );
        assert_eq!(
            editing_key("git chec\t", false).map(|k| k.name),
            Some("Tab".into())
        );
        assert_eq!(
            editing_key("\u{12}rm", false).map(|k| k.name),
            Some("Ctrl+R".into())
        );
        assert_eq!(
            editing_key("\u{1f}", false).map(|k| k.name),
            Some("Ctrl+_".into())
        );
        assert_eq!(
            editing_key("\0", false).map(|k| k.name),
            Some("Ctrl+@".into())
        );
        let stop = editing_key("\u{1a}", false).map(|k| k.name);
        assert_eq!(stop.as_deref(), Some("Ctrl+Z"));
        assert_eq!(editing_key("\u{1a}\u{1c}", true), None);
        assert_eq!(
            editing_key("\u{1a}\u{1}", true).map(|k| k.name),
            Some("Ctrl+A".into())
        );
    }
}
