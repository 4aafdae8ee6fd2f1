//! One persistent shell (docs/BEHAVIOUR.md §4): a shell on a PTY that a model keeps talking to.
//!
//! A reader task owns the stream: every chunk goes, in order, through the marker scanner, to the
//! screen emulator (vt100, for `screen: true`), the raw tail, the cleaned output ring (the same
//! ring and spill as background jobs) and the capture of the send in progress. `send` writes
//! keystrokes and then decides when to return, from events rather than sleeps: a prompt marker
//! (done, with the exit code), a `wait_for` match, the foreground job blocked on the keyboard
//! (awaiting input), output quiet for an idle time when the shell has no markers, or the
//! timeout (the command keeps running). One send at a time: a second waits for the first.
//!
//! What no program in the shell can fake (docs/BEHAVIOUR.md §4): in bash and zsh an end marker
//! counts only with the shell's own report of it on its channel (`stream.rs`, `channel.rs`),
//! and a command is done only once the terminal is back with the shell; text is typed at the
//! prompt only while nothing but the shell could read it (`reader.rs`), else nothing is typed
//! and the reply says who could.

use std::collections::VecDeque;
use std::num::NonZeroU16;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use crate::clean::Cleaner;
use crate::engine::{self, Sink, Source, Stream};
use crate::jobs::{Job, JobState, OutputRing};
use crate::limits::KILL_WAIT_MS;
use crate::pty::capture::SendCapture;
use crate::pty::channel::{self, Channel, SHELL_CHANNEL_FD, SHELL_STARTUP_FD};
use crate::pty::integration::{Flavor, Scanner};
use crate::pty::startup::StartupFile;
use crate::pty::sys::{self, Master};
use crate::pty::{
    CLOSE_GRACE_MS, OPEN_PROMPT_WAIT_MS, PROBE_INTERVAL_MS, PtyError, SEND_IDLE_MS, spawn_on_pty,
};
use crate::spawn::{PassedFd, SpawnSpec};
use crate::tree;

mod reader;
mod resize;
mod secret;
mod send;
mod stream;

pub use reader::{Foreground, Reader, looks_blank, quoted};
pub use secret::{SECRET_TYPE_MS, SecretRefused};

/// Why a shell ended at our hands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hangup {
    /// `shell_close`, session end or shutdown.
    Closed,
    /// Idle past the limit.
    Idle,
}

/// What a shell is doing, as `shell_list` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    /// At the prompt it reported last, with the terminal.
    AtPrompt,
    /// Waiting for keys: a program (or the shell's `read`) at a question, or the shell for the
    /// rest of a line; with what runs, if a program does (as [`Activity::Running`]).
    AwaitingInput(Awaiting, Option<String>),
    /// Running a program: its process, command line and pid.
    Running(String),
    /// None of these: between a command and its prompt.
    Busy,
}

/// Who waits for keys now, past the shell's own prompt ([`Shell::awaiting_input`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaiting {
    /// The line it waits at: a program's question as written so far (it need not end in a
    /// newline, so the output ring does not hold it yet); what was typed, when the shell waits
    /// for the rest of a line. Empty when a program shows no prompt.
    pub prompt: String,
    /// The shell itself waits for the rest of a line (a continuation prompt, a line typed
    /// without its Enter).
    pub by_shell: bool,
    /// A full-screen program waits: its screen, not a line, is what it shows.
    pub full_screen: bool,
}

/// How one send ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendStatus {
    /// The shell printed its next prompt: the command finished with this exit code.
    Done(i32),
    /// The shell printed a new prompt and no command ran (an empty line, Ctrl+C at the
    /// prompt): there is no exit code to report (`$?` would be an older command's).
    AtPrompt,
    /// The foreground program (or the shell itself) is blocked reading the keyboard.
    AwaitingInput { prompt: String, by_shell: bool },
    /// The `wait_for` pattern matched.
    Matched,
    /// No markers and the output was quiet for the idle time.
    Quiet,
    /// Still running at the timeout; the shell keeps running it.
    Running,
    /// Nothing was typed: the shell is at its prompt, but another process could read what is
    /// typed there (`by` names it and how): typing would hand it the input meant for the shell.
    Held { by: String },
    /// The shell itself ended during the send.
    ShellEnded,
}

#[derive(Debug, Clone)]
pub struct SendOutcome {
    pub status: SendStatus,
    pub output: String,
    /// Bytes of this send's output dropped from the head of `output`.
    pub dropped: u64,
    /// Ring cursors: the send's output lies between them in `shell_read`.
    pub cursor_from: u64,
    pub cursor_next: u64,
    pub elapsed: Duration,
    /// Exit codes of earlier commands (sends that returned while they ran) that ended before
    /// this send, oldest first.
    pub ended_before: Vec<i32>,
    /// A program drew a whole screen during the send and still shows it: the alternate screen
    /// is up (vim, less), or the output since the send homed the cursor or cleared the screen
    /// (top draws in place). Its stream is then no reading matter; its screen is.
    pub full_screen: bool,
    /// Bytes at the end of the input the terminal had not taken by the timeout (the program
    /// does not read its input): they were not typed.
    pub untyped: usize,
    /// What runs in the shell (its process and command line), when the send ended `Running`.
    pub running: Option<String>,
    /// The input went to a command an earlier send left running, which read it and then ended
    /// (`status` is that command's end): the shell never ran it as a command line.
    pub read_by_earlier: bool,
}

pub struct SendRequest<'a> {
    pub input: &'a str,
    pub timeout: Duration,
    pub wait_for: Option<&'a regex::Regex>,
}

/// What `screen: true` shows.
#[derive(Debug, Clone)]
pub struct Screen {
    pub text: String,
    pub cols: u16,
    pub rows: u16,
    pub cursor_row: u16,
    pub cursor_col: u16,
    pub alternate: bool,
}

/// Everything needed to open a shell.
pub struct OpenSpec {
    /// `program` is the shell; its arguments are chosen here by flavor.
    pub spawn: SpawnSpec,
    pub cols: u16,
    pub rows: u16,
    pub output: Arc<OutputRing>,
    /// Where bash's and zsh's start-up file is written (each in a fresh private directory,
    /// removed after the first prompt): a private directory confined commands cannot write,
    /// the server's state dir.
    pub startup_dir: std::path::PathBuf,
}

/// Reports of ended commands kept until their end marker arrives; more are not waiting for
/// one (a shell prints the marker right after the report).
const REPORTS_MAX: usize = 64;

struct Live {
    scanner: Scanner,
    ring_cleaner: Cleaner,
    screen: vt100::Parser,
    raw_tail: VecDeque<u8>,
    /// Raw bytes received since the shell opened (positions in `raw_tail`).
    raw_total: u64,
    last_output: Instant,
    send: Option<SendCapture>,
    /// Prompts still owed to command lines whose sends returned while they ran or waited in
    /// the queue (matched, timed out, quiet): they arrive before the next send's own.
    owed_prompts: u32,
    /// Exit codes of commands whose sends returned early and that ended between sends, oldest
    /// first: told by the next send, since no reply carried them.
    ended_unseen: Vec<i32>,
    /// The last marker was a primary prompt: the shell sits at its prompt, running nothing.
    at_prompt: bool,
    /// The last marker was a command's start: a command line runs (a `read` of the shell is
    /// that command's, not the shell's prompt).
    started: bool,
    /// The shell's own reports of ended commands (bash, zsh: number and exit code, from its
    /// channel), oldest first, until their end marker arrives.
    reports: VecDeque<(u64, i32)>,
    /// A send at this prompt was not typed, and said who else could read the terminal: the
    /// next one, made knowing it, types.
    held_told: bool,
    eof: bool,
}

#[derive(Default)]
struct End {
    job: Option<Weak<Job>>,
    hangup: Option<Hangup>,
    state: Option<JobState>,
}

pub struct Shell {
    pub pid: i32,
    pub marker: String,
    pub flavor: Flavor,
    pub tty_path: String,
    /// The terminal's file (device and inode), to know it among other processes' fds.
    tty_id: (u64, u64),
    /// The shell's children list, held open from its start (`reader.rs` reads it on every
    /// send at its prompt; see [`crate::children::HeldChildren`]).
    children: Option<crate::children::HeldChildren>,
    /// The server's end of the shell's channel (bash, zsh; see `channel.rs`).
    channel: Option<Channel>,
    master: Mutex<Option<Arc<Master>>>,
    live: Mutex<Live>,
    output: Arc<OutputRing>,
    /// Bumped on every chunk of output and at the end (a watcher of the screen).
    changed: watch::Sender<u64>,
    /// Bumped where a send or the open may have its answer: a marker, every chunk once the
    /// send's prompt came or where it watches for a pattern, and the end. A send waits on this,
    /// not on every chunk: a line editor's echo comes in several, and each wake-up of the
    /// waiting worker is a trip across threads for nothing.
    answers: watch::Sender<u64>,
    stop_reader: watch::Sender<bool>,
    end: Mutex<End>,
    ended: watch::Sender<bool>,
    last_used: Mutex<Instant>,
    /// What was typed since the last Enter (or Ctrl+C, Ctrl+U): a line typed in several sends
    /// is judged whole.
    typed: Mutex<String>,
    send_lock: tokio::sync::Mutex<()>,
    cols: AtomicU16,
    rows: AtomicU16,
    /// The secrets masked in its output (the session's): a secret typed here joins them.
    masks: Option<Arc<crate::mask::Masks>>,
    /// The process group that last read a secret here: while it lives, it is not stopped by a
    /// key the model types (`secret.rs`).
    sealed: Mutex<Option<i32>>,
    /// Resizes, held while a secret is typed (see [`resize::Resizes`]).
    resizes: Mutex<resize::Resizes>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn nz(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

impl Shell {
    /// Its terminal, as other processes' fds show it.
    fn terminal(&self) -> crate::pty::probe::Terminal<'_> {
        crate::pty::probe::Terminal {
            path: &self.tty_path,
            id: self.tty_id,
        }
    }

    /// Starts the shell and returns once it printed its first prompt (bounded by
    /// [`OPEN_PROMPT_WAIT_MS`]): the next send then always sees the same framing.
    pub async fn open(spec: OpenSpec) -> Result<Arc<Shell>, PtyError> {
        let OpenSpec {
            mut spawn,
            cols,
            rows,
            output,
            startup_dir,
        } = spec;
        let flavor = Flavor::of(std::path::Path::new(&spawn.program));
        let nonce = crate::random::hex(16);
        // bash and zsh: the hooks in a start-up text (bash: a sealed memfd at a fixed fd; zsh:
        // a file), the channel they report on at a fixed fd. The file is removed when this
        // function returns: by then the shell has read it (its first prompt comes from it), or
        // is gone.
        let (channel, startup) = match flavor.startup(&nonce) {
            Some((name, text)) => {
                let (channel, shell_end) = channel::pair()?;
                spawn.pass_fds.push(PassedFd {
                    fd: Arc::new(shell_end),
                    at: SHELL_CHANNEL_FD,
                });
                let file = if flavor == Flavor::Bash {
                    spawn.pass_fds.push(PassedFd {
                        fd: Arc::new(crate::pty::startup::sealed_text(&text)?),
                        at: SHELL_STARTUP_FD,
                    });
                    None
                } else {
                    Some(StartupFile::write(&startup_dir, name, &text)?)
                };
                (Some(channel), file)
            }
            None => (None, None),
        };
        spawn.args = flavor.args().into_iter().map(Into::into).collect();
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
            ("TERM".into(), "xterm-256color".into()),
            ("COLUMNS".into(), cols.to_string().into()),
            ("LINES".into(), rows.to_string().into()),
        ];
        env.extend(
            flavor
                .env(&nonce, startup.as_ref().map(StartupFile::path))
                .into_iter()
                .map(|(k, v)| (k.into(), v.into())),
        );
        env.append(&mut spawn.env);
        spawn.env = env;
        let marker = spawn.marker.clone();
        let masks = spawn.masks.clone();
        let (master, tty, started) = spawn_on_pty(spawn, cols, rows).await?;
        // Its reader runs on the drivers' thread (below).
        let master = Arc::new(started.exit.or_kill(master.watched_by_drivers())?);
        // Opened now, while the shell is a child not yet waited for: its pid is still its own.
        let children = crate::children::HeldChildren::open(started.pid, started.pid);
        let (changed, _) = watch::channel(0u64);
        let (answers, _) = watch::channel(0u64);
        let (stop_reader, stop_rx) = watch::channel(false);
        let (ended, _) = watch::channel(false);
        let shell = Arc::new(Shell {
            pid: started.pid,
            marker,
            flavor,
            tty_path: tty.path,
            tty_id: tty.id,
            children,
            channel,
            master: Mutex::new(Some(master.clone())),
            live: Mutex::new(Live {
                scanner: Scanner::new(&nonce),
                ring_cleaner: Cleaner::new(),
                screen: vt100::Parser::new(nz(rows), nz(cols), 0),
                raw_tail: VecDeque::new(),
                raw_total: 0,
                last_output: Instant::now(),
                send: None,
                owed_prompts: 0,
                ended_unseen: Vec::new(),
                at_prompt: false,
                started: false,
                reports: VecDeque::new(),
                held_told: false,
                eof: false,
            }),
            output,
            changed,
            answers,
            stop_reader,
            end: Mutex::new(End::default()),
            ended,
            last_used: Mutex::new(Instant::now()),
            typed: Mutex::new(String::new()),
            send_lock: tokio::sync::Mutex::new(()),
            cols: AtomicU16::new(cols),
            rows: AtomicU16::new(rows),
            masks,
            sealed: Mutex::new(None),
            resizes: Mutex::new(resize::Resizes::default()),
        });
        // The first prompt is captured like a send's output, so open can wait for its marker.
        lock(&shell.live).send = Some(SendCapture::new("", flavor.marks_start()));
        crate::drivers::spawn(stream::read_loop(
            Arc::downgrade(&shell),
            master,
            shell.masks.clone(),
            stop_rx,
        ));
        crate::drivers::spawn(stream::watch_exit(Arc::downgrade(&shell), started.exit));
        shell.wait_first_prompt().await?;
        drop(startup);
        Ok(shell)
    }

    async fn wait_first_prompt(&self) -> Result<(), PtyError> {
        let deadline = Instant::now() + Duration::from_millis(OPEN_PROMPT_WAIT_MS);
        let mut rx = self.answers.subscribe();
        loop {
            {
                let live = lock(&self.live);
                let cap = live.send.as_ref();
                let prompted = cap.is_some_and(|c| c.prompts > 0);
                let quiet = live.last_output.elapsed() >= Duration::from_millis(SEND_IDLE_MS);
                let unmarked = self.flavor == Flavor::Unknown && cap.is_some_and(|c| c.any_output);
                if prompted || (unmarked && quiet) {
                    drop(live);
                    lock(&self.live).send = None;
                    return Ok(());
                }
                if live.eof || self.has_ended() {
                    let text = cap.map(|c| c.output(false)).unwrap_or_default();
                    drop(live);
                    self.hang_up();
                    return Err(PtyError::EndedAtStart(text));
                }
            }
            if Instant::now() >= deadline {
                self.close(Hangup::Closed).await;
                return Err(PtyError::NoPrompt(OPEN_PROMPT_WAIT_MS));
            }
            let wake = (Instant::now() + Duration::from_millis(PROBE_INTERVAL_MS)).min(deadline);
            tokio::select! {
                _ = rx.changed() => {}
                () = sleep_until(wake) => {}
            }
        }
    }

    /// Links the shell to its job-table entry, so its end is recorded there.
    pub fn attach(&self, job: &Arc<Job>) {
        let mut end = lock(&self.end);
        if let Some(state) = &end.state {
            job.set_state(state.clone());
            self.output.close();
        }
        end.job = Some(Arc::downgrade(job));
    }

    pub fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    pub fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    pub fn size(&self) -> (u16, u16) {
        (
            self.cols.load(Ordering::Relaxed),
            self.rows.load(Ordering::Relaxed),
        )
    }

    /// The leader of the terminal's foreground process group (the shell itself when it waits
    /// at its prompt): one `tcgetpgrp`, for the web view's label of the shell.
    pub fn foreground_leader(&self) -> Option<i32> {
        sys::foreground_group(self.master()?.raw())
    }

    fn master(&self) -> Option<Arc<Master>> {
        lock(&self.master).clone()
    }

    /// The rendered screen, as a terminal would show it now.
    pub fn screen(&self) -> Screen {
        self.touch();
        let live = lock(&self.live);
        let screen = live.screen.screen();
        let (rows, cols) = screen.size();
        let (cursor_row, cursor_col) = screen.cursor_position();
        let text = screen
            .rows(0, cols.get())
            .map(|r| r.trim_end().to_owned())
            .collect::<Vec<_>>()
            .join("\n");
        Screen {
            text: text.trim_end_matches('\n').to_owned(),
            cols: cols.get(),
            rows: rows.get(),
            cursor_row,
            cursor_col,
            alternate: screen.alternate_screen(),
        }
    }

    /// The screen with its colours, for a person watching: unlike [`Shell::screen`], looking
    /// does not count as use (a watched shell still closes when the model leaves it idle).
    pub fn styled(&self) -> crate::pty::StyledScreen {
        crate::pty::styled::styled(lock(&self.live).screen.screen())
    }

    /// Bytes of cleaned output so far: the cursor of the end.
    pub fn output_total(&self) -> u64 {
        self.output.total()
    }

    /// Changes with every chunk of output and at the end.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Changes where a send may have its answer (what a send waits on; see `answers`).
    pub fn answers(&self) -> watch::Receiver<u64> {
        self.answers.subscribe()
    }

    /// Whether a program draws a whole screen now, judged on the raw bytes after `raw_from`.
    fn draws_full_screen(live: &Live, raw_from: u64) -> bool {
        if live.screen.screen().alternate_screen() {
            return true;
        }
        let new = usize::try_from(live.raw_total.saturating_sub(raw_from)).unwrap_or(usize::MAX);
        let skip = live.raw_tail.len().saturating_sub(new);
        let since: Vec<u8> = live.raw_tail.iter().skip(skip).copied().collect();
        super::draws_screen(&since)
    }

    /// The newest raw bytes (escape sequences intact), at most `max`, lossily decoded.
    pub fn raw_tail(&self, max: usize) -> String {
        self.touch();
        let live = lock(&self.live);
        let skip = live.raw_tail.len().saturating_sub(max);
        let bytes: Vec<u8> = live.raw_tail.iter().skip(skip).copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Marks a read as activity (reading keeps a shell from being reaped).
    pub fn touch_read(&self) {
        self.touch();
    }

    /// Closes the master side (the kernel hangs up the terminal: SIGHUP to the session).
    fn hang_up(&self) {
        lock(&self.master).take();
        self.stop_reader.send_replace(true);
    }

    /// Hangs up, then stops the whole tree (setsid escapees included); resolves once the shell
    /// is gone or the bounded wait ran out. The stop runs to its end even if this future is
    /// dropped: the shell's exit watch leaves the tree's end to it.
    pub async fn close(&self, why: Hangup) {
        lock(&self.end).hangup.get_or_insert(why);
        self.hang_up();
        let stopping = tree::terminate_detached(
            self.pid,
            &self.marker,
            Duration::from_millis(CLOSE_GRACE_MS),
        );
        let _ = stopping.await;
        let mut ended = self.ended.subscribe();
        let _ =
            tokio::time::timeout(Duration::from_millis(KILL_WAIT_MS), ended.wait_for(|e| *e)).await;
    }
}

impl Drop for Shell {
    /// A shell nobody holds any more (its open was dropped while it waited for the first
    /// prompt, its table went without closing it) takes its tree with it: the hang-up alone
    /// spares what ignores SIGHUP or left the session.
    fn drop(&mut self) {
        if !self.has_ended() {
            let grace = Duration::from_millis(crate::limits::CANCEL_GRACE_MS);
            tree::stop_unowned(self.pid, &self.marker, grace);
        }
    }
}
