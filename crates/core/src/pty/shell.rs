//! One persistent shell (docs/BEHAVIOUR.md §4): a shell on a PTY that a model keeps talking to.
//!
//! A reader task owns the stream: every chunk goes, in order, through the marker scanner, to the
//! screen emulator (vt100, for `screen: true`), the raw tail, the cleaned output ring (the same
//! ring and spill as background jobs) and the capture of the send in progress. `send` writes
//! keystrokes and then decides when to return, from events rather than sleeps: a prompt marker
//! (done, with the exit code), a `wait_for` match, the foreground job blocked on the keyboard
//! (awaiting input), output quiet for an idle time when the shell has no markers, or the
//! timeout (the command keeps running). One send at a time: a second waits for the first.

use std::collections::VecDeque;
use std::num::NonZeroU16;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use crate::clean::Cleaner;
use crate::jobs::{Job, JobState, OutputRing};
use crate::limits::KILL_WAIT_MS;
use crate::pty::capture::SendCapture;
use crate::pty::integration::{Flavor, Marker, Piece, Scanner, keystrokes};
use crate::pty::probe::{InputWait, input_wait};
use crate::pty::sys::{self, Master};
use crate::pty::{
    CLOSE_GRACE_MS, OPEN_PROMPT_WAIT_MS, PROBE_INTERVAL_MS, PROBE_QUIET_MS, PtyError,
    RAW_TAIL_BYTES, SEND_IDLE_MS, spawn_on_pty,
};
use crate::reaper::Exit;
use crate::spawn::SpawnSpec;
use crate::tree;

/// Why a shell ended at our hands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hangup {
    /// `shell_close`, session end or shutdown.
    Closed,
    /// Idle past the limit.
    Idle,
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
}

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
    master: Mutex<Option<Arc<Master>>>,
    live: Mutex<Live>,
    output: Arc<OutputRing>,
    /// Bumped on every chunk of output and at the end.
    changed: watch::Sender<u64>,
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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn nz(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

impl Shell {
    /// What was typed since the last Enter, Ctrl+C or Ctrl+U.
    pub fn pending_line(&self) -> String {
        lock(&self.typed).clone()
    }

    /// The pending line after typing `input`: Enter (`\n`, `\r`), Ctrl+C and Ctrl+U end it.
    fn typed_after(pending: &str, input: &str) -> String {
        let mut next = pending.to_owned();
        for c in input.chars() {
            match c {
                '\n' | '\r' | '\u{3}' | '\u{15}' => next.clear(),
                _ => next.push(c),
            }
        }
        next
    }

    /// Fails with the length the pending line would have if `input` made it pass `max` bytes.
    pub fn check_typed(&self, input: &str, max: usize) -> Result<(), usize> {
        let len = Self::typed_after(&lock(&self.typed), input).len();
        if len > max { Err(len) } else { Ok(()) }
    }

    /// Records keystrokes that were typed.
    fn note_typed(&self, input: &str) {
        let mut typed = lock(&self.typed);
        *typed = Self::typed_after(&typed, input);
    }

    /// Starts the shell and returns once it printed its first prompt (bounded by
    /// [`OPEN_PROMPT_WAIT_MS`]): the next send then always sees the same framing.
    pub async fn open(spec: OpenSpec) -> Result<Arc<Shell>, PtyError> {
        let OpenSpec {
            mut spawn,
            cols,
            rows,
            output,
        } = spec;
        let flavor = Flavor::of(std::path::Path::new(&spawn.program));
        let nonce = format!("{:x}{:x}", std::process::id(), rand_u64());
        spawn.args = flavor.args().into_iter().map(Into::into).collect();
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
            ("TERM".into(), "xterm-256color".into()),
            ("COLUMNS".into(), cols.to_string().into()),
            ("LINES".into(), rows.to_string().into()),
        ];
        env.extend(
            flavor
                .env(&nonce)
                .into_iter()
                .map(|(k, v)| (k.into(), v.into())),
        );
        env.append(&mut spawn.env);
        spawn.env = env;
        let marker = spawn.marker.clone();
        let (master, tty_path, started) = spawn_on_pty(spawn, cols, rows)?;
        let master = Arc::new(master);
        let (changed, _) = watch::channel(0u64);
        let (stop_reader, stop_rx) = watch::channel(false);
        let (ended, _) = watch::channel(false);
        let shell = Arc::new(Shell {
            pid: started.pid,
            marker,
            flavor,
            tty_path,
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
                eof: false,
            }),
            output,
            changed,
            stop_reader,
            end: Mutex::new(End::default()),
            ended,
            last_used: Mutex::new(Instant::now()),
            typed: Mutex::new(String::new()),
            send_lock: tokio::sync::Mutex::new(()),
            cols: AtomicU16::new(cols),
            rows: AtomicU16::new(rows),
        });
        // The first prompt is captured like a send's output, so open can wait for its marker.
        lock(&shell.live).send = Some(SendCapture::new("", flavor.marks_start()));
        crate::drivers::spawn(read_loop(Arc::downgrade(&shell), master, stop_rx));
        crate::drivers::spawn(watch_exit(Arc::downgrade(&shell), started.exit));
        shell.wait_first_prompt().await?;
        Ok(shell)
    }

    async fn wait_first_prompt(&self) -> Result<(), PtyError> {
        let deadline = Instant::now() + Duration::from_millis(OPEN_PROMPT_WAIT_MS);
        let mut rx = self.changed.subscribe();
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

    fn master(&self) -> Option<Arc<Master>> {
        lock(&self.master).clone()
    }

    /// Resizes the terminal and the emulator (the program gets SIGWINCH).
    pub fn resize(&self, cols: u16, rows: u16) -> Result<(), PtyError> {
        let master = self.master().ok_or(PtyError::Closed)?;
        sys::set_size(master.raw(), cols, rows)?;
        lock(&self.live).screen.set_size(nz(rows), nz(cols));
        self.cols.store(cols, Ordering::Relaxed);
        self.rows.store(rows, Ordering::Relaxed);
        self.touch();
        Ok(())
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

    /// Types `input` and waits for the outcome (see the module header).
    pub async fn send(&self, req: SendRequest<'_>) -> Result<SendOutcome, PtyError> {
        // The timeout counts from the request, the wait for an earlier send included.
        let start = Instant::now();
        let deadline = start + req.timeout;
        let Ok(_one_at_a_time) = tokio::time::timeout_at(deadline, self.send_lock.lock()).await
        else {
            return Err(PtyError::Busy);
        };
        let master = self.master().ok_or(PtyError::Closed)?;
        let newlines = req.input.matches('\n').count() as u32;
        let mut rx = self.changed.subscribe();
        let cursor_from = self.output.total();
        // Blank lines or Ctrl+C: nothing a shell at its prompt would run.
        let blank = req
            .input
            .chars()
            .all(|ch| ch.is_whitespace() || ch == '\x03');
        let (idle_before, raw_from, ended_before) = {
            let mut live = lock(&self.live);
            let idle_before = live.at_prompt && live.owed_prompts == 0;
            let raw_from = live.raw_total;
            let ended_before = std::mem::take(&mut live.ended_unseen);
            if !blank {
                // Text goes in: until the next prompt, the line is not empty or something other
                // than the prompt reads the keyboard (shells without a start marker give no
                // other sign of it).
                live.at_prompt = false;
            }
            let mut cap = SendCapture::new(req.input, self.flavor.marks_start());
            // Only typed-ahead lines wait behind the earlier commands' prompts; a bare key
            // (Ctrl+C) is for the running command, and its prompt is this send's answer.
            if live.owed_prompts > 0 && newlines > 0 {
                cap = cap.after_running_commands(live.owed_prompts);
                live.owed_prompts = 0;
            }
            live.send = Some(cap);
            (idle_before, raw_from, ended_before)
        };
        self.touch();
        if req.input.is_empty() && idle_before {
            // Nothing typed and nothing running: nothing to wait for.
            lock(&self.live).send = None;
            return Ok(SendOutcome {
                status: SendStatus::AtPrompt,
                output: String::new(),
                dropped: 0,
                cursor_from,
                cursor_next: cursor_from,
                elapsed: start.elapsed(),
                ended_before,
                full_screen: false,
            });
        }
        master.write_all(&keystrokes(req.input)).await?;
        self.note_typed(req.input);
        drop(master);
        let probe_quiet = Duration::from_millis(PROBE_QUIET_MS);
        let idle = Duration::from_millis(SEND_IDLE_MS);
        let mut next_probe = start;
        // A verdict from process state must hold on two probes in a row: a line editor
        // consuming typed-ahead input passes through the same wait between two keys.
        let mut agreed: Option<SendStatus> = None;

        let status = loop {
            let now = Instant::now();
            let (verdict, quiet_since, any_output) = {
                let live = lock(&self.live);
                let Some(cap) = live.send.as_ref() else {
                    break SendStatus::ShellEnded;
                };
                let done =
                    matches!(cap.last, Some(Marker::Prompt(_))) && cap.prompts >= newlines.max(1);
                let verdict = if done {
                    Some(SendStatus::Done(cap.exit.unwrap_or_default()))
                } else if req.wait_for.is_some_and(|re| re.is_match(&cap.for_match())) {
                    Some(SendStatus::Matched)
                } else if live.eof {
                    Some(SendStatus::ShellEnded)
                } else {
                    None
                };
                (verdict, live.last_output.max(start), cap.any_output)
            };
            if let Some(v) = verdict {
                break v;
            }
            if self.has_ended() {
                break SendStatus::ShellEnded;
            }
            let quiet_for = now.saturating_duration_since(quiet_since);
            if quiet_for >= probe_quiet && now >= next_probe {
                next_probe = now + Duration::from_millis(PROBE_INTERVAL_MS);
                match self.probe(any_output) {
                    Some(status) if agreed.as_ref() == Some(&status) => break status,
                    seen => agreed = seen,
                }
            }
            if self.flavor == Flavor::Unknown && quiet_for >= idle {
                break SendStatus::Quiet;
            }
            if now >= deadline {
                break SendStatus::Running;
            }
            let mut wake = deadline.min(quiet_since + probe_quiet).max(next_probe);
            if self.flavor == Flavor::Unknown {
                wake = wake.min(quiet_since + idle);
            }
            tokio::select! {
                _ = rx.changed() => {}
                () = sleep_until(wake.min(deadline).max(now + Duration::from_millis(1))) => {}
            }
        };
        let (cap, full_screen) = {
            let mut live = lock(&self.live);
            let full_screen = !matches!(
                status,
                SendStatus::Done(_) | SendStatus::AtPrompt | SendStatus::ShellEnded
            ) && Self::draws_full_screen(&live, raw_from);
            let (unseen, own_missing, seen) = live.send.as_ref().map_or((0, 0, 0), |c| {
                (
                    c.stale_left(),
                    newlines.saturating_sub(c.prompts),
                    c.prompts,
                )
            });
            live.owed_prompts = match status {
                // This send's lines still run or wait: their prompts come later.
                SendStatus::Matched | SendStatus::Running | SendStatus::Quiet => {
                    live.owed_prompts + unseen + own_missing
                }
                // A wait (nothing typed) ended at the first prompt: later lines may still run.
                SendStatus::Done(_) | SendStatus::AtPrompt if req.input.is_empty() => {
                    live.owed_prompts.saturating_sub(seen)
                }
                // At a prompt again after typing (Ctrl+C flushes what was queued): nothing owed.
                SendStatus::Done(_) | SendStatus::AtPrompt => 0,
                // A program reads the input (not the shell), or the shell is gone.
                SendStatus::AwaitingInput { .. } | SendStatus::ShellEnded => {
                    live.owed_prompts + unseen
                }
            };
            (live.send.take(), full_screen)
        };
        // The shell sat at its prompt and the new prompt ended nothing: the input was blank lines
        // or Ctrl+C (any shell), or no command started in between (a start marker says so).
        let status = match (status, &cap) {
            (SendStatus::Done(_), Some(c))
                if idle_before && (blank || (self.flavor.marks_start() && !c.ran_command())) =>
            {
                SendStatus::AtPrompt
            }
            (status, _) => status,
        };
        self.touch();
        let (output, dropped) = match &cap {
            // Nothing ran: what came back is the echo of the key and a prompt.
            _ if status == SendStatus::AtPrompt => (String::new(), 0),
            Some(c) => (c.output(matches!(status, SendStatus::Done(_))), c.dropped),
            None => (String::new(), 0),
        };
        Ok(SendOutcome {
            status,
            output,
            dropped,
            cursor_from,
            cursor_next: self.output.total(),
            elapsed: start.elapsed(),
            ended_before,
            full_screen,
        })
    }

    /// Checks whether someone in the foreground waits for the keyboard.
    fn probe(&self, any_output: bool) -> Option<SendStatus> {
        let master = self.master()?;
        if sys::unread_output(master.raw()) > 0 {
            return None; // output is still in flight: not quiet after all
        }
        let fg = sys::foreground_group(master.raw());
        let wait = input_wait(self.pid, fg, &self.tty_path);
        let live = lock(&self.live);
        let cap = live.send.as_ref()?;
        match wait {
            InputWait::No => None,
            // The earlier command's prompt came and the shell reads again with nothing of this
            // send run: the input was that command's (typed into a REPL still busy).
            InputWait::Shell if let Some(code) = cap.input_went_to_earlier_command() => {
                Some(SendStatus::Done(code))
            }
            // The shell reads again after a prompt: done, even if fewer prompts came than
            // lines were typed (a program consumed some of them).
            InputWait::Shell if matches!(cap.last, Some(Marker::Prompt(_))) => {
                Some(SendStatus::Done(cap.exit.unwrap_or_default()))
            }
            // Before the shell echoed anything it may simply not have read the input yet.
            InputWait::Shell if !any_output => None,
            // A command line was accepted and runs: the shell reading now is a builtin of that
            // command (`read -p`, `select`), which waits for an answer like any program.
            InputWait::Shell if matches!(cap.last, Some(Marker::Start)) => {
                Some(SendStatus::AwaitingInput {
                    prompt: cap.prompt_line(),
                    by_shell: false,
                })
            }
            InputWait::Shell => Some(SendStatus::AwaitingInput {
                prompt: cap.prompt_line(),
                by_shell: true,
            }),
            InputWait::Program => Some(SendStatus::AwaitingInput {
                prompt: cap.prompt_line(),
                by_shell: false,
            }),
        }
    }

    /// Closes the master side (the kernel hangs up the terminal: SIGHUP to the session).
    fn hang_up(&self) {
        lock(&self.master).take();
        self.stop_reader.send_replace(true);
    }

    /// Hangs up, then stops the whole tree (setsid escapees included); resolves once the shell
    /// is gone or the bounded wait ran out.
    pub async fn close(&self, why: Hangup) {
        lock(&self.end).hangup.get_or_insert(why);
        self.hang_up();
        tree::terminate(
            self.pid,
            &self.marker,
            Duration::from_millis(CLOSE_GRACE_MS),
        )
        .await;
        let mut ended = self.ended.subscribe();
        let _ =
            tokio::time::timeout(Duration::from_millis(KILL_WAIT_MS), ended.wait_for(|e| *e)).await;
    }

    fn ingest(&self, chunk: &[u8]) {
        let mut guard = lock(&self.live);
        let live = &mut *guard;
        live.last_output = Instant::now();
        live.raw_tail.extend(chunk);
        live.raw_total += chunk.len() as u64;
        let excess = live.raw_tail.len().saturating_sub(RAW_TAIL_BYTES);
        live.raw_tail.drain(..excess);
        let (ring_cleaner, screen, send, owed, ended, at_prompt, output) = (
            &mut live.ring_cleaner,
            &mut live.screen,
            &mut live.send,
            &mut live.owed_prompts,
            &mut live.ended_unseen,
            &mut live.at_prompt,
            &self.output,
        );
        live.scanner.scan(chunk, |piece| match piece {
            Piece::Bytes(bytes) => {
                screen.process(bytes);
                output.push(ring_cleaner.feed(bytes));
                if let Some(cap) = send.as_mut() {
                    cap.bytes(bytes);
                }
            }
            Piece::Marker(marker) => {
                *at_prompt = matches!(marker, Marker::Prompt(_));
                match send.as_mut() {
                    Some(cap) => cap.marker(marker),
                    None => {
                        if let Marker::Prompt(code) = marker
                            && *owed > 0
                        {
                            *owed -= 1;
                            ended.push(code);
                        }
                    }
                }
            }
        });
    }

    fn record_end(&self, exit: Option<Exit>) {
        let mut end = lock(&self.end);
        let state = match (end.hangup, exit) {
            (Some(Hangup::Idle), _) => JobState::Reaped,
            (Some(Hangup::Closed), _) => JobState::Stopped,
            (None, Some(Exit::Code(code))) => JobState::Exited(code),
            (None, Some(Exit::Signal(sig))) => JobState::Signalled(sig),
            (None, None) => JobState::Stopped,
        };
        if let Some(job) = end.job.as_ref().and_then(Weak::upgrade) {
            job.set_state(state.clone());
        }
        end.state = Some(state);
        drop(end);
        {
            let mut live = lock(&self.live);
            let rest = live.ring_cleaner.finish().to_owned();
            self.output.push(&rest);
            live.eof = true;
        }
        self.output.close();
        self.ended.send_replace(true);
        self.changed.send_modify(|n| *n += 1);
    }
}

async fn read_loop(shell: Weak<Shell>, master: Arc<Master>, mut stop: watch::Receiver<bool>) {
    let mut buf = vec![0u8; crate::limits::READ_CHUNK_BYTES];
    loop {
        let n = tokio::select! {
            r = master.read(&mut buf) => r.unwrap_or(0),
            _ = stop.wait_for(|s| *s) => 0,
        };
        let Some(shell) = shell.upgrade() else {
            return;
        };
        if n == 0 {
            lock(&shell.live).eof = true;
            shell.changed.send_modify(|g| *g += 1);
            return;
        }
        shell.ingest(&buf[..n]);
        shell.changed.send_modify(|g| *g += 1);
        drop(shell);
        crate::drivers::fair().await;
    }
}

async fn watch_exit(shell: Weak<Shell>, mut exit: crate::reaper::ExitWatch) {
    let status = exit.wait().await.ok();
    let Some(shell) = shell.upgrade() else {
        return;
    };
    let by_us = lock(&shell.end).hangup.is_some();
    if !by_us {
        // The shell ended by itself (`exit`): nothing it started may outlive it.
        shell.hang_up();
        tree::terminate(
            shell.pid,
            &shell.marker,
            Duration::from_millis(CLOSE_GRACE_MS),
        )
        .await;
    }
    shell.record_end(status);
}

/// A nonce that a program printing our marker prefix by chance will not guess.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}
