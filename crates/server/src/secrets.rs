//! Secrets the model never sees (docs/BEHAVIOUR.md §4): when a program in a shell asks for a
//! password (the terminal stops echoing), the model calls `shell_send({id, secret: "<what it
//! is>"})`. The user types it on a page of the web view (`/secret/<id>`), reached by URL-mode
//! elicitation where the client has it, or by the address the model is given to pass on; the
//! server types it into the terminal with echo off and answers only that it was entered. It is
//! never in a result, a log line, a spill file or an output buffer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use agentty_core::pty::{Reader, SecretRefused, Shell};
use tokio::sync::Notify;

/// How long a request for a secret waits for the user.
pub const SECRET_WAIT: Duration = Duration::from_secs(300);
/// Requests one caller's sessions may have waiting (the stdio session counts as one caller),
/// so that one caller cannot hold every other caller's secret entry off (review 36 M1). A shell
/// has one request at a time: a new one replaces its earlier one, and one of a shell that ended
/// is let go.
pub const PENDING_PER_CALLER: usize = 4;
/// Requests one caller's sessions may have kept, typed ones included (kept until they expire,
/// for the sends that wait on them): every bound on the table is a caller's own, so no caller's
/// requests can fill it for another (review 38: a shared bound of 64 could be filled with
/// requests typed or of shells closed).
pub const KEPT_PER_CALLER: usize = 16;
/// The longest secret typed.
pub const SECRET_MAX_BYTES: usize = 1024;

/// Requests for a secret not yet answered, by id (128 random bits).
#[derive(Default)]
pub struct Pending {
    requests: Mutex<HashMap<String, Request>>,
}

struct Request {
    shell: Weak<Shell>,
    shell_id: String,
    what: String,
    /// The program that reads the password (the terminal's foreground process group), for the
    /// user to judge: a shell's `read -s` could hand it to the agent.
    asker: String,
    /// That foreground, as the terminal knows it: the secret is typed only while it reads.
    reader: Option<Reader>,
    /// Reached only with the view's key (a logged-in page): the model knows this request's id.
    needs_login: bool,
    /// The caller whose session asks.
    caller: Option<crate::session::Caller>,
    until: Instant,
    /// The shell's output cursor when it was asked: what follows the secret starts there.
    from: u64,
    /// Set when the secret was typed (a `shell_send` may wait on it, even one that came back
    /// for it later); the request then takes nothing more.
    entered: Arc<Entered>,
}

/// Whether a request's secret was typed, and the wake-up of those waiting for it.
#[derive(Default)]
pub struct Entered {
    done: AtomicBool,
    notify: Notify,
}

impl Entered {
    /// Resolves once the secret was typed, or after `wait`; true if it was.
    pub async fn wait(&self, wait: Duration) -> bool {
        let until = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.notify.notified();
            if self.done.load(Ordering::Acquire) {
                return true;
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                return self.done.load(Ordering::Acquire);
            }
        }
    }
}

/// What the page shows of a request.
pub struct Asked {
    pub id: String,
    pub shell_id: String,
    pub what: String,
    pub asker: String,
    pub needs_login: bool,
    /// The caller whose session asks: only that caller's view lists it and may answer it
    /// (`None`: the stdio session, the local user's).
    pub caller: Option<crate::session::Caller>,
}

/// Why a secret from the page was not typed.
#[derive(Debug, thiserror::Error)]
pub enum EnterRefused {
    #[error("no such request: it was answered already, or it expired")]
    Unknown,
    #[error("the shell has ended")]
    Closed,
    #[error(
        "nothing in the shell asks for a password now (a line read with echo off, Enter ending \
         it), so it would show or go astray"
    )]
    NotAsked,
    #[error("a secret is one line of at most 1024 bytes, without control characters")]
    Unfit,
    #[error("another program reads the terminal now than the one this request named")]
    Changed,
    #[error(
        "a character of it is one the terminal acts on (a line's end, an erase, a signal: \
         `stty -a`), so it would not arrive as typed"
    )]
    SpecialKey,
    #[error("the terminal refuses to be opened (TIOCEXCL), so its reading cannot be watched")]
    Locked,
    #[error(
        "the agent's shell itself reads this line (a `read -s` at its prompt), so the value would \
         land where the agent reads it"
    )]
    ShellItself,
    #[error(
        "another process than the program shown could read the secret first: it holds the \
         terminal open from outside the shell's session, or waits in a read of a terminal \
         started before the program's"
    )]
    OtherReader,
    #[error(
        "lines typed earlier wait to be read first, so the secret would go to whoever reads \
         after them; let the program read them (or stop it) and ask again"
    )]
    Pending,
    #[error(
        "the program did not read it within {} s: nothing of it is left in the terminal's \
         input for another program to read",
        agentty_core::pty::SECRET_TYPE_MS / 1000
    )]
    NotTaken,
    #[error(
        "a tracer (strace, gdb) is attached to the program that reads it, and would see the \
         secret: stop the tracer and ask again"
    )]
    Traced,
    #[error(
        "another process started in this shell runs (a background job, another program of the \
         reading pipeline, or one that joined its process group) and could read the program's \
         memory, where the secret lands: let it end (or stop it), run the program alone, and \
         ask again"
    )]
    InReach,
    #[error(
        "the program that reads it runs with {0} set, which loads code of the caller's choosing \
         into it: it may not be the program shown; run it without {0} (env -u {0} …) and ask again"
    )]
    Injected(&'static str),
    #[error(
        "the terminal's settings changed while the secret was typed (another process holds \
         the terminal and set them): none of it reached the program; stop that process and \
         ask again"
    )]
    SettingsChanged,
    #[error(
        "another process acted on the terminal while the secret was typed (it changed the \
         terminal's settings, or read from it), so the rest of it was not typed; the program \
         has read the start of it: interrupt it (Ctrl+C), stop that process, start the program \
         again and ask again"
    )]
    CutShort,
}

impl From<SecretRefused> for EnterRefused {
    fn from(refused: SecretRefused) -> Self {
        match refused {
            SecretRefused::Closed => EnterRefused::Closed,
            SecretRefused::NotAsked => EnterRefused::NotAsked,
            SecretRefused::Changed => EnterRefused::Changed,
            SecretRefused::SpecialKey => EnterRefused::SpecialKey,
            SecretRefused::Pending => EnterRefused::Pending,
            SecretRefused::Locked => EnterRefused::Locked,
            SecretRefused::ShellItself => EnterRefused::ShellItself,
            SecretRefused::OtherReader => EnterRefused::OtherReader,
            SecretRefused::NotTaken => EnterRefused::NotTaken,
            SecretRefused::Traced => EnterRefused::Traced,
            SecretRefused::InReach => EnterRefused::InReach,
            SecretRefused::Injected(variable) => EnterRefused::Injected(variable),
            SecretRefused::SettingsChanged => EnterRefused::SettingsChanged,
            SecretRefused::CutShort => EnterRefused::CutShort,
        }
    }
}

impl Pending {
    /// A new request for `what`, for `shell` (in place of one it had waiting): its id and what
    /// tells of its entry; `None` when [`PENDING_PER_CALLER`] requests of `caller` wait, or it
    /// keeps [`KEPT_PER_CALLER`]. `needs_login`: its id goes to the model.
    pub fn ask(
        &self,
        shell: &Arc<Shell>,
        shell_id: &str,
        what: &str,
        needs_login: bool,
        caller: Option<crate::session::Caller>,
    ) -> Option<(String, Arc<Entered>)> {
        let id = agentty_core::random::hex(16);
        let entered = Arc::new(Entered::default());
        let foreground = shell.foreground();
        let reader = foreground.as_ref().map(|f| f.reader.clone());
        let asker = foreground.map_or_else(|| "an unknown program".to_owned(), |f| f.described);
        {
            let mut requests = self.requests.lock().ok()?;
            let now = Instant::now();
            let this_shell = Arc::downgrade(shell);
            // A shell's earlier request goes, and so does one of a shell that ended: nothing
            // can be typed into it any more.
            requests.retain(|_, r| {
                r.until > now && !r.shell.ptr_eq(&this_shell) && r.shell.strong_count() > 0
            });
            let theirs = || requests.values().filter(|r| r.caller == caller);
            // Only those still to answer wait: one typed is kept for its wait's sake.
            let waiting = theirs()
                .filter(|r| !r.entered.done.load(Ordering::Acquire))
                .count();
            if waiting >= PENDING_PER_CALLER || theirs().count() >= KEPT_PER_CALLER {
                return None;
            }
            requests.insert(
                id.clone(),
                Request {
                    shell: Arc::downgrade(shell),
                    shell_id: shell_id.to_owned(),
                    what: what.to_owned(),
                    asker,
                    reader,
                    needs_login,
                    caller,
                    until: now + SECRET_WAIT,
                    from: shell.output_total(),
                    entered: entered.clone(),
                },
            );
        }
        Some((id, entered))
    }

    /// The wait of request `id`, while it lives (entered or not), and its output cursor.
    pub fn entered(&self, id: &str) -> Option<(Arc<Entered>, u64)> {
        let requests = self.requests.lock().ok()?;
        let request = requests.get(id).filter(|r| r.until > Instant::now())?;
        Some((request.entered.clone(), request.from))
    }

    /// What request `id` asks for, while it waits.
    pub fn asked(&self, id: &str) -> Option<Asked> {
        self.waiting().into_iter().find(|a| a.id == id)
    }

    /// Every request still waiting (the view lists them).
    pub fn waiting(&self) -> Vec<Asked> {
        let Ok(requests) = self.requests.lock() else {
            return Vec::new();
        };
        let now = Instant::now();
        requests
            .iter()
            .filter(|(_, r)| r.until > now && !r.entered.done.load(Ordering::Acquire))
            .map(|(id, r)| Asked {
                id: id.clone(),
                shell_id: r.shell_id.clone(),
                what: r.what.clone(),
                asker: r.asker.clone(),
                needs_login: r.needs_login,
                caller: r.caller.clone(),
            })
            .collect()
    }

    /// Types `secret` for request `id` (once), then wipes it.
    pub async fn enter(&self, id: &str, secret: String) -> Result<(), EnterRefused> {
        // Wiped however this ends, this future dropped while it types included.
        let secret = Wiped(secret);
        let secret = &secret.0;
        // One line, as typed at a prompt: a control character (Enter, Ctrl+C) would go on to
        // the shell as keystrokes of its own.
        if secret.len() > SECRET_MAX_BYTES || secret.chars().any(char::is_control) {
            return Err(EnterRefused::Unfit);
        }
        // Taken once: the shell is let go of here, whatever happens next.
        let request = self.requests.lock().ok().and_then(|mut requests| {
            let request = requests
                .get_mut(id)
                .filter(|r| r.until > Instant::now() && !r.entered.done.load(Ordering::Acquire))?;
            Some((
                std::mem::take(&mut request.shell),
                request.entered.clone(),
                request.reader.take(),
            ))
        });
        let typed = match request.as_ref().map(|(shell, _, _)| shell.upgrade()) {
            None => Err(EnterRefused::Unknown),
            Some(None) => Err(EnterRefused::Closed),
            Some(Some(shell)) => {
                let reader = request.as_ref().and_then(|(_, _, reader)| reader.as_ref());
                match reader {
                    // Nobody read the terminal when it was asked: there is no one to type for.
                    None => Err(EnterRefused::Changed),
                    Some(reader) => shell
                        .type_secret(secret.as_bytes(), Some(reader))
                        .await
                        .map_err(EnterRefused::from),
                }
            }
        };
        if let Some((_, entered, _)) = request {
            if typed.is_ok() {
                entered.done.store(true, Ordering::Release);
                entered.notify.notify_waiters();
            } else if let Ok(mut requests) = self.requests.lock() {
                // Not typed: the request is spent all the same (one value per request).
                requests.remove(id);
            }
        }
        typed
    }
}

/// A secret, wiped when dropped.
struct Wiped(String);

impl Drop for Wiped {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// Overwrites a string's bytes before it is freed.
pub fn wipe(secret: &mut String) {
    // SAFETY: zero bytes are valid UTF-8.
    unsafe { secret.as_bytes_mut() }.fill(0);
    secret.clear();
}
