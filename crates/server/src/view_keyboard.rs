//! The user's hand on a shell's keyboard from the web view (`--view-control` only,
//! docs/BEHAVIOUR.md §12): the person takes a shell, types lines and the keys a shell needs
//! (Tab, arrows, Esc, Ctrl+C/D/Z) into it, and hands it back; a line left edited by such a key
//! at the prompt is cleared with Ctrl+C then, as the guard never read it. While the person holds it the model's `shell_send` is refused with a sentence that
//! says so (reading stays allowed); once it is handed back, the model's next result in that
//! session says what the person typed and what the screen shows. Every keystroke is logged with
//! the caller's name, but those typed where a program reads a password: only their count. The keys go through the shell's own send, the one the model's keys go
//! through, so the shell's prompt accounting stays right.

use std::time::Duration;

use agentty_core::pty::SendRequest;
use agentty_core::pty::line_editor::editing_key;
use agentty_core::pty::probe::KeyReader;

use crate::server::Agentty;
use crate::view::Viewer;

/// How long a line typed by the person is waited on before the page gets its answer (the
/// command goes on running; the page shows the screen).
const USER_SEND_WAIT_MS: u64 = 1_500;
/// Lines of the screen the model is shown when the person hands a shell back.
const SCREEN_LINES_TOLD: usize = 12;

/// The shells whose keyboard the person holds, with the keys typed into each.
type Held = std::collections::HashMap<String, Vec<String>>;

/// What the person does with a shell's keyboard.
pub enum Keyboard {
    Take,
    Type(String),
    GiveBack,
}

/// Why the view's keyboard call did nothing.
#[derive(Debug, thiserror::Error)]
pub enum KeyboardRefused {
    #[error("no such shell")]
    Unknown,
    #[error("the shell has ended")]
    Ended,
    #[error("take the keyboard first")]
    NotHeld,
    #[error("the shell is busy with another send")]
    Busy,
}

impl Agentty {
    /// `action` on shell `id` of session `key`, for `viewer`.
    pub async fn view_keyboard(
        &self,
        viewer: &Viewer,
        key: &str,
        id: &str,
        action: Keyboard,
    ) -> Result<(), KeyboardRefused> {
        let session = self
            .view_session(viewer, key)
            .ok_or(KeyboardRefused::Unknown)?;
        let state = session.state.get().ok_or(KeyboardRefused::Unknown)?;
        let shell = state.shells.peek(id).ok_or(KeyboardRefused::Unknown)?;
        if shell.has_ended() {
            return Err(KeyboardRefused::Ended);
        }
        let who = match viewer {
            Viewer::Caller(caller) => caller.0.to_string(),
            Viewer::Operator => "an operator".to_owned(),
        };
        let holds = |change: &mut dyn FnMut(&mut Held) -> Option<Vec<String>>| {
            let mut held = state
                .held_by_user
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            change(&mut held)
        };
        match action {
            Keyboard::Take => {
                tracing::info!(caller = %who, shell = %id, "the user took the shell's keyboard from the web view");
                holds(&mut |held| {
                    held.entry(id.to_owned()).or_default();
                    None
                });
                Ok(())
            }
            Keyboard::Type(keys) => {
                // Keys typed where a program reads a password (a line, echo off) are the user's
                // secret: the model is told how many, the log too, and they are masked in any
                // output that echoes them, as a secret typed on its own page is (review 36 M5).
                let at_password = shell.asks_password()
                    || (!shell.reads_itself() && asks_a_secret_on(&shell.screen()));
                let told = if at_password {
                    crate::shells::notice::keys_at_password(&keys)
                } else {
                    keys.clone()
                };
                let noted = holds(&mut |held| {
                    let typed = held.get_mut(id)?;
                    typed.push(told.clone());
                    Some(Vec::new())
                });
                if noted.is_none() {
                    return Err(KeyboardRefused::NotHeld);
                }
                if at_password {
                    shell.mask(keys.trim_end_matches(['\r', '\n']).as_bytes());
                    tracing::info!(caller = %who, shell = %id, keys = keys.chars().count(), "the user typed at a password prompt from the web view (the keys are not logged)");
                } else {
                    tracing::info!(caller = %who, shell = %id, keys = ?keys, "the user typed into the shell from the web view");
                }
                let request = SendRequest {
                    input: &keys,
                    timeout: Duration::from_millis(USER_SEND_WAIT_MS),
                    wait_for: None,
                };
                shell
                    .send(request)
                    .await
                    .map(|_| ())
                    .map_err(|_| KeyboardRefused::Busy)
            }
            Keyboard::GiveBack => {
                let typed = holds(&mut |held| held.remove(id)).ok_or(KeyboardRefused::NotHeld)?;
                tracing::info!(caller = %who, shell = %id, "the user gave the shell's keyboard back");
                if edited_since_enter(&typed) && shell.key_reader() == KeyReader::LineEditor {
                    // An arrow or a Tab made the line one the guard has not read (a line from
                    // history, a completed word): the agent's Enter would run it unjudged.
                    let request = SendRequest {
                        input: "\u{3}",
                        timeout: Duration::from_millis(USER_SEND_WAIT_MS),
                        wait_for: None,
                    };
                    shell
                        .send(request)
                        .await
                        .map_err(|_| KeyboardRefused::Busy)?;
                }
                let screen = shell.screen().text;
                let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
                let shown = lines[lines.len().saturating_sub(SCREEN_LINES_TOLD)..].join("\n");
                if let Ok(mut notes) = session.user_notes.lock() {
                    notes.push(crate::shells::notice::user_typed(id, &typed, &shown));
                }
                Ok(())
            }
        }
    }
}

/// Whether the line the cursor is on, left of the cursor, asks for a secret in words (a
/// password, passphrase, PIN, token, secret, API key, OTP or 2FA code), whole words only: a
/// program that reads it key by key in raw mode (`gh auth login`, `npm login`) turns no echo off
/// that `Shell::asks_password` could see (review 37 #9; whole words and the shell's own line
/// editor left out, review 38).
fn asks_a_secret_on(screen: &agentty_core::pty::Screen) -> bool {
    let Some(line) = screen.text.lines().nth(usize::from(screen.cursor_row)) else {
        return false;
    };
    let asked: String = line
        .chars()
        .take(usize::from(screen.cursor_col))
        .collect::<String>()
        .to_lowercase();
    let words: Vec<&str> = asked
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    agentty_core::pty::reads_like_password(&asked)
        || words.iter().any(|word| {
            matches!(
                *word,
                "token" | "secret" | "apikey" | "otp" | "2fa" | "mfa" | "totp"
            )
        })
        || words.windows(2).any(|pair| pair == ["api", "key"])
}

/// Whether the person's keys since their last Enter or Ctrl+C hold a key the line editor edits
/// the line with (the line at the prompt is then not the one the keys spell).
fn edited_since_enter(typed: &[String]) -> bool {
    let keys = typed.concat();
    let since = keys.rfind(['\n', '\r', '\u{3}']).map_or(0, |at| at + 1);
    editing_key(&keys[since..], false).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_edited_since_the_last_enter_is_told_apart() {
        let keys = |k: &[&str]| k.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(edited_since_enter(&keys(&["ls\n", "\u{1b}[A"])));
        assert!(edited_since_enter(&keys(&["ec\t"])));
        assert!(!edited_since_enter(&keys(&["\u{1b}[A", "\n"])));
        assert!(!edited_since_enter(&keys(&["ec\t", "\u{3}", "echo hi"])));
        assert!(!edited_since_enter(&keys(&[])));
    }
}
