//! Typing a secret (a password a person entered in the web view) into a shell's terminal, for
//! the program that asks for it and for nothing else: the agent that drives the shell must not
//! get it, nor steer it to a reader of its own.
//!
//! The person is shown who reads the terminal ([`Shell::foreground`]) and judges; what is typed
//! then must reach that reader, as the whole of the line it reads, and must not outlive that
//! read. So, with the shell's send lock held (no send types meanwhile; TIOCSTI is refused to
//! commands):
//! - the reader must be the one the person was shown (same process group, same leader), and
//!   no process outside the shell's session may hold the terminal open (job control does not
//!   stop its reads);
//! - that reader must be waiting in its read of the terminal first: a line goes to whoever
//!   waits first, and another spawn's command could start a read of the terminal before the
//!   program's (found by its wait for input) and close its fd while it waits (so no fd table
//!   shows it); nor may any other process agentty started wait queued for a terminal's read,
//!   to take the line should the program's read end without it;
//! - the terminal must read a password as `getpass` leaves it: lines edited by the terminal,
//!   echo off, Enter ending the line; and no character of the secret may be one of the keys the
//!   terminal acts on (`stty eol a` would cut the line at an `a`);
//! - a program whose read takes less than the line (`ssh`, `sudo`: a byte at a time) frees the
//!   read lock between two reads, and the rest of a whole line would wait there for any reader:
//!   it is typed the line key by key ([`Shell::type_key_by_key`]), each into a read of its that
//!   waits first; and no resize is made meanwhile (its SIGWINCH would end that read and free
//!   the lock): the model's and the view's wait for the typing's end ([`ResizesHeld`]), a
//!   confined command's fails ([`crate::pty::typed_into`]);
//! - the terminal's settings may not change while the secret goes in (line mode back on would
//!   hold the keys for another reader; echo on would show them): locked where the server may
//!   (`Peer::lock_settings`), and checked around each key everywhere ([`SecretRefused::SettingsChanged`]);
//! - no whole line may wait to be read before it (it would go to whoever reads after them),
//!   and a partial one is dropped first (`echo ` would become its start), as password readers
//!   do (`TCSAFLUSH`);
//! - what is left in the input queue once the program has read the line, or once
//!   [`SECRET_TYPE_MS`] has passed (or the typing is dropped), is taken back out.
//!
//! Sealed (docs/BEHAVIOUR.md §4 *Sealed entry*): nothing else the agent started may read the
//! reader's memory, where the secret lands. Confined commands cannot trace or read another
//! process at all (the sandbox's seccomp filter and dropped `CAP_SYS_PTRACE`), and Landlock keeps
//! each spawn's commands out of every other spawn's processes; what is left is checked here:
//! - no tracer may be attached to the reading group (an unconfined `strace -p`, run in `auto`
//!   mode or approved by the user);
//! - no other process started in the shell may run (a background job, an orphan agentty adopted):
//!   it shares the reader's Landlock domain, so it could read `/proc/<pid>/mem`.
//!
//! Once typed, the value is masked in every output of the session ([`crate::mask`]).
//!
//! The input queue is seen from the terminal's slave side ([`Peer`]), opened from the master for
//! the moment of the typing. Who reads the terminal, and who else could, is found in `reader.rs`.

use std::time::Duration;

use tokio::time::Instant;

use crate::pty::sys::{Master, Peer, asks_password, settings};

use super::reader::{
    ReadOrder, Reader, bytes_read, code_loading_variable, first_read_count, group_members,
    outside_holders, read_order, reader_could_be_overtaken, reading_group, traced, within_reach,
};
use super::*;

/// Why a secret was not typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretRefused {
    /// The shell has ended.
    Closed,
    /// No program reads a password now as `getpass` asks (the terminal echoes, reads key by
    /// key, or Enter would not end the line): the secret could show, or go to the wrong reader.
    NotAsked,
    /// Another program reads the terminal now than the one the person was shown.
    Changed,
    /// A character of the secret is one of the keys the terminal acts on (`stty -a`).
    SpecialKey,
    /// Lines typed earlier wait to be read: the program would read them first, and the secret
    /// would go to whoever reads after them (the shell, which runs and shows it).
    Pending,
    /// The terminal refuses to be opened (`TIOCEXCL`), so the secret's read cannot be watched.
    Locked,
    /// The shell itself reads the line (a `read -s` at its prompt, a command substitution): the
    /// value would land where the agent reads it (a shell variable).
    ShellItself,
    /// Another process than the one shown could read the line first: it holds the terminal
    /// open outside the shell's session (`setsid`, unhindered by job control), or waits in a
    /// read of it outside the reading group (it started the read in that group, then left, or
    /// it started it before the program did, from anywhere), or waits queued for a terminal's
    /// read, or a process of the reading group is stopped (its read would wait while another
    /// joins).
    OtherReader,
    /// The program did not read it within [`SECRET_TYPE_MS`]: it never started its read (the
    /// secret was not typed), or what was typed was taken back out of the input queue; either
    /// way no later reader (the shell, once the program ends) gets it.
    NotTaken,
    /// A tracer is attached to a process of the reading group (`strace -p`, `gdb -p`).
    Traced,
    /// Another process started in the shell runs (a background job, an orphan): it could read
    /// the reader's memory (`/proc/<pid>/mem`), where the secret lands.
    InReach,
    /// A process of the reading group runs with this variable set, which loads code of the
    /// caller's choosing into it (`LD_PRELOAD`, `PYTHONPATH`, …): not the program shown.
    Injected(&'static str),
    /// The terminal's settings changed while the secret was typed: another process holds the
    /// terminal (one handed its fd, kept out of sight) and set them, to have the keys wait for
    /// its read (line mode) or come back out (echo). The rest was not typed.
    SettingsChanged,
    /// Another process acted on the terminal while the secret was typed key by key (it changed
    /// its settings, or read a key), after the program had read some of it, or Enter could not
    /// follow the secret: the rest was not typed, and the program holds the start of it.
    CutShort,
}

/// How long a secret may wait to be read: a program that asks for a password reads it at
/// once, so only one that does not waits this long.
pub const SECRET_TYPE_MS: u64 = 5_000;

/// Between two looks at whether the program has read the secret, or has started its read.
const SECRET_READ_POLL: Duration = Duration::from_millis(5);

/// Between two looks at whether the program has read a key typed alone, or waits for the next
/// ([`Shell::type_key_by_key`]).
const KEY_READ_POLL: Duration = Duration::from_millis(1);

/// How long a key gone from the terminal may take to show in the program's count of bytes read
/// (its read returns a moment after it takes the key); past it, another read took the key.
const KEY_TAKEN_WAIT: Duration = Duration::from_millis(200);

/// Input flags that change what is typed on its way to the reader: the 8th bit stripped, and
/// (Linux) upper case made lower.
#[cfg(target_os = "linux")]
const ALTERING: libc::tcflag_t = libc::ISTRIP | libc::IUCLC;
#[cfg(not(target_os = "linux"))]
const ALTERING: libc::tcflag_t = libc::ISTRIP;

/// Whether a secret typed with Enter (`\r`) is one line the terminal hands over whole and as
/// typed: it asks for a password, edits lines itself (no `EXTPROC`), turns Enter into a line's
/// end (`ICRNL`, without `IGNCR` or `INLCR`) and alters nothing ([`ALTERING`]), as `getpass`
/// leaves it.
fn takes_a_line(t: &libc::termios) -> bool {
    asks_password(t)
        && t.c_lflag & libc::EXTPROC == 0
        && t.c_iflag & libc::ICRNL != 0
        && t.c_iflag & (libc::IGNCR | libc::INLCR | ALTERING) == 0
}

/// `Ok` while the terminal's settings (seen through `peer`) are still `set`: flags and keys.
fn settings_kept(peer: &Peer, set: &libc::termios) -> Result<(), SecretRefused> {
    let same = |now: libc::termios| {
        now.c_iflag == set.c_iflag
            && now.c_oflag == set.c_oflag
            && now.c_cflag == set.c_cflag
            && now.c_lflag == set.c_lflag
            && now.c_cc == set.c_cc
    };
    if peer.settings().is_some_and(same) {
        Ok(())
    } else {
        Err(SecretRefused::SettingsChanged)
    }
}

/// Whether a byte of `secret` is a key the terminal acts on rather than types: a line's end,
/// an erase, a kill, a signal, a literal-next, flow control (0 turns one off).
fn has_special_key(t: &libc::termios, secret: &[u8]) -> bool {
    [
        libc::VEOF,
        libc::VEOL,
        libc::VEOL2,
        libc::VERASE,
        libc::VWERASE,
        libc::VKILL,
        libc::VREPRINT,
        libc::VLNEXT,
        libc::VDISCARD,
        libc::VINTR,
        libc::VQUIT,
        libc::VSUSP,
        libc::VSTART,
        libc::VSTOP,
    ]
    .iter()
    .map(|&key| t.c_cc[key])
    .any(|c| c != 0 && secret.contains(&c))
}

impl Shell {
    /// Masks `value` in this shell's output from now on, as a secret typed into it is (where
    /// the session masks secrets; too short a value is not: `crate::mask`).
    pub fn mask(&self, value: &[u8]) {
        if let Some(masks) = &self.masks {
            masks.add(value);
        }
    }

    /// Whether a program waits for a password: a line with echo off.
    pub fn asks_password(&self) -> bool {
        self.master()
            .and_then(|m| settings(m.raw()))
            .is_some_and(|t| asks_password(&t))
    }

    /// Types `secret` and Enter for `reader` (the foreground the person was shown; `None`:
    /// whoever reads now), within [`SECRET_TYPE_MS`] (see the module header). It is not
    /// recorded as typed text nor captured as a send's input; with echo off, nothing of it
    /// reaches the output either.
    pub async fn type_secret(
        &self,
        secret: &[u8],
        reader: Option<&Reader>,
    ) -> Result<(), SecretRefused> {
        self.type_secret_within(secret, reader, Duration::from_millis(SECRET_TYPE_MS))
            .await
    }

    /// [`Shell::type_secret`] with the program given `bound` to read it (tests shorten it).
    #[doc(hidden)]
    pub async fn type_secret_within(
        &self,
        secret: &[u8],
        reader: Option<&Reader>,
        bound: Duration,
    ) -> Result<(), SecretRefused> {
        let _one_at_a_time = self.send_lock.lock().await;
        let master = self.master().ok_or(SecretRefused::Closed)?;
        let _no_resize = ResizesHeld::new(self, &master)?;
        let (peer, group) = self
            .open_when_first(&master, secret, reader, Instant::now() + bound)
            .await?;
        // Its read takes the whole line at once (held under the read lock it waits with), or
        // not: then the secret goes key by key, each into that read.
        let whole = crate::blocking::section(|| {
            first_read_count(&reading_group(group), self.terminal())
                .is_some_and(|count| count > secret.len() as u64)
        });
        // The program has the whole bound to read the line once it waits for it.
        let bound = Instant::now() + bound;
        // From here on, whatever happens (this future dropped included), what is left in the
        // input queue is taken back and the prompt owed for the secret is given back.
        let mut typing = Typing {
            peer,
            shell: self,
            owed_here: false,
            done: false,
            lines_back: None,
            locked: false,
        };
        // No other fd of the terminal may change its settings from here on (a root server; an
        // unprivileged one checks them around each write instead): as they are now, they must
        // read a password, as checked before.
        typing.locked = typing.peer.lock_settings(true).is_ok();
        let asked = typing.peer.settings().ok_or(SecretRefused::Closed)?;
        if !takes_a_line(&asked) || has_special_key(&asked, secret) {
            return Err(SecretRefused::SettingsChanged);
        }
        typing
            .peer
            .discard_input()
            .map_err(|_| SecretRefused::Closed)?;
        lock(&self.typed).clear();
        // Masked before it can come back out (a program that echoes it).
        if let Some(masks) = &self.masks {
            masks.add(secret);
        }
        typing.owed_here = self.owe_prompt_for_secret();
        let read = if whole {
            self.type_and_wait_read(&master, &mut typing, &asked, secret, group, bound)
                .await?
        } else {
            self.type_key_by_key(&master, &mut typing, asked, secret, group, bound)
                .await?
        };
        typing.done = read;
        drop(typing);
        if read {
            *lock(&self.sealed) = reader.map(|r| r.group).or(self.reader().map(|r| r.group));
            Ok(())
        } else {
            Err(SecretRefused::NotTaken)
        }
    }

    /// Whether typing `input` now would stop the program that read a secret here while it still
    /// runs: it holds the terminal's suspend key (Ctrl+Z) and a process of that program's group
    /// lives. Stopped, it would give the shell back to the agent with the secret in its memory,
    /// which a command started then (in the shell's Landlock domain) could read. Ctrl+C and
    /// Ctrl+\ stay: they end it.
    pub(super) fn would_stop_sealed(&self, input: &str) -> bool {
        let Some(group) = *lock(&self.sealed) else {
            return false;
        };
        let suspend = self
            .master()
            .and_then(|m| settings(m.raw()))
            .filter(|t| t.c_lflag & libc::ISIG != 0)
            .map(|t| t.c_cc[libc::VSUSP])
            .filter(|&key| key != 0);
        let Some(key) = suspend else {
            return false;
        };
        if !input.as_bytes().contains(&key) {
            return false;
        }
        let alive = crate::blocking::section(|| {
            crate::tree::read_stat(group).is_some_and(|s| !s.zombie && s.pgid == group)
                || !group_members(group).is_empty()
        });
        if !alive {
            *lock(&self.sealed) = None;
        }
        alive
    }

    /// [`Shell::open_for_secret`] once the reading group waits first in a read of the terminal
    /// and no other process waits queued for a terminal's read (the module header); the program
    /// may start its read until `bound` (`getpass` sets the terminal, then reads). The checks
    /// run in full before the wait and again once it is over; the wait itself looks at the
    /// reading group's threads alone.
    async fn open_when_first(
        &self,
        master: &Master,
        secret: &[u8],
        reader: Option<&Reader>,
        bound: Instant,
    ) -> Result<(Peer, i32), SecretRefused> {
        let (peer, group) = self.open_for_secret(master, secret, reader)?;
        drop(peer);
        loop {
            // `/proc` reads: off the worker's other tasks.
            match crate::blocking::section(|| read_order(&reading_group(group), self.terminal())) {
                ReadOrder::First => break,
                ReadOrder::Behind => return Err(SecretRefused::OtherReader),
                ReadOrder::NotReading if Instant::now() >= bound => {
                    return Err(SecretRefused::NotTaken);
                }
                ReadOrder::NotReading => tokio::time::sleep(SECRET_READ_POLL).await,
            }
        }
        let (peer, group) = self.open_for_secret(master, secret, reader)?;
        crate::blocking::section(|| {
            let readers = reading_group(group);
            match read_order(&readers, self.terminal()) {
                ReadOrder::First if self.queued_readers(&readers).is_empty() => Ok((peer, group)),
                ReadOrder::NotReading => Err(SecretRefused::NotTaken),
                ReadOrder::First | ReadOrder::Behind => Err(SecretRefused::OtherReader),
            }
        })
    }

    /// Every check made before a byte of the secret is typed (see the module header), in order;
    /// once all pass, the terminal's slave side, opened for the typing, and the reading group.
    fn open_for_secret(
        &self,
        master: &Master,
        secret: &[u8],
        reader: Option<&Reader>,
    ) -> Result<(Peer, i32), SecretRefused> {
        let t = settings(master.raw()).ok_or(SecretRefused::Closed)?;
        if !takes_a_line(&t) {
            return Err(SecretRefused::NotAsked);
        }
        if reader.is_some_and(|shown| self.reader().as_ref() != Some(shown)) {
            return Err(SecretRefused::Changed);
        }
        if has_special_key(&t, secret) {
            return Err(SecretRefused::SpecialKey);
        }
        if self.reads_itself() {
            return Err(SecretRefused::ShellItself);
        }
        let peer = self.open_peer(master)?;
        if peer.line_waiting() {
            return Err(SecretRefused::Pending);
        }
        // Full `/proc` scans: off the worker's other tasks.
        let id = peer.file_id().map_err(|_| SecretRefused::Closed)?;
        let tty = crate::pty::probe::Terminal {
            path: &self.tty_path,
            id,
        };
        let group = reader.map_or_else(|| self.reader().map(|r| r.group), |r| Some(r.group));
        let overtaken = crate::blocking::section(|| {
            !outside_holders(tty, self.pid).is_empty()
                || group.is_none_or(|g| reader_could_be_overtaken(self.pid, g, tty))
        });
        if overtaken {
            return Err(SecretRefused::OtherReader);
        }
        let group = self.sealed(group)?;
        Ok((peer, group))
    }

    /// The terminal's slave side, opened for the typing.
    fn open_peer(&self, master: &Master) -> Result<Peer, SecretRefused> {
        Peer::open(master.raw(), &self.tty_path).map_err(|e| {
            if e.raw_os_error() == Some(libc::EBUSY) {
                SecretRefused::Locked
            } else {
                SecretRefused::Closed
            }
        })
    }

    /// The checks that keep the secret out of other processes' reach once the reader has it
    /// (the module header): no tracer on the reading group, no other process of the shell.
    /// The reading group, once they pass.
    fn sealed(&self, group: Option<i32>) -> Result<i32, SecretRefused> {
        let group = group.ok_or(SecretRefused::Changed)?;
        crate::blocking::section(|| {
            let readers = reading_group(group);
            if traced(&readers).is_some() {
                return Err(SecretRefused::Traced);
            }
            if let Some(variable) = code_loading_variable(&readers) {
                return Err(SecretRefused::Injected(variable));
            }
            if !within_reach(self.pid, group).is_empty() {
                return Err(SecretRefused::InReach);
            }
            Ok(group)
        })
    }

    /// Owes the shell's next prompt to the program that asked, and says whether this secret is
    /// what owes it (to give it back if the secret is not read).
    ///
    /// The program finishes with the shell's next prompt: owed, so its exit code is told by the
    /// next send. Owed before it can read (it may end at once), and once: a send that returned
    /// while it ran (before it was seen asking) owes that prompt already, and no line waits
    /// behind the secret.
    fn owe_prompt_for_secret(&self) -> bool {
        let mut live = lock(&self.live);
        let owed_here = live.owed_prompts == 0;
        live.owed_prompts = live.owed_prompts.max(1);
        owed_here
    }

    /// Types `secret` and Enter until `bound`, then waits (until `bound` too) for the program to
    /// read the line off the input queue (seen through `typing`'s peer): whether it did. The
    /// secret goes first, into the terminal's line, which nobody can read before its end; then,
    /// once the terminal has taken it in (echo judged, under the settings `asked`, locked where
    /// they can be), the settings are let go, for the program to set its own once it has read,
    /// and Enter goes.
    async fn type_and_wait_read(
        &self,
        master: &Master,
        typing: &mut Typing<'_>,
        asked: &libc::termios,
        secret: &[u8],
        group: i32,
        bound: Instant,
    ) -> Result<bool, SecretRefused> {
        settings_kept(&typing.peer, asked)?;
        let written = master.write_until(secret, bound).await;
        if written.map_err(|_| SecretRefused::Closed)? < secret.len() {
            return Ok(false);
        }
        // Its poll moves what the master wrote into the line first.
        let _ = typing.peer.line_waiting();
        settings_kept(&typing.peer, asked)?;
        typing.unlock();
        settings_kept(&typing.peer, asked)?;
        // Enter makes the line readable: the program must still wait first in its read.
        let order = crate::blocking::section(|| read_order(&reading_group(group), self.terminal()));
        if order != ReadOrder::First {
            return Err(SecretRefused::OtherReader);
        }
        let entered = master.write_until(b"\r", bound).await;
        self.touch();
        if entered.map_err(|_| SecretRefused::Closed)? == 0 {
            return Ok(false);
        }
        loop {
            if !typing.peer.line_waiting() {
                break Ok(true);
            }
            if Instant::now() >= bound {
                break Ok(false);
            }
            tokio::time::sleep(SECRET_READ_POLL).await;
        }
    }
}

impl Shell {
    /// Types `secret` and Enter for a program whose read takes less than the line (`ssh` and
    /// `sudo` read a byte at a time): between two of its reads the rest of a whole line would
    /// wait in the terminal for whoever reads first, such as a command of another spawn handed
    /// the terminal and keeping it out of sight (in flight on a unix socket) but to read. So
    /// the terminal reads key by key meanwhile (`ICANON` off, `VMIN` 1), and each key is typed
    /// only once the program waits first in its read, holding the terminal's read lock (so no
    /// other read takes it), and the key before was read. Enter ends the line in the program's
    /// own mode again (`lines`, the settings as the program set them), alone. Whether the
    /// program read it all by `bound`; `OtherReader` when another read took the lock between two
    /// keys (it got none of them).
    async fn type_key_by_key(
        &self,
        master: &Master,
        typing: &mut Typing<'_>,
        lines: libc::termios,
        secret: &[u8],
        group: i32,
        bound: Instant,
    ) -> Result<bool, SecretRefused> {
        let mut keys = lines;
        keys.c_lflag &= !libc::ICANON;
        keys.c_cc[libc::VMIN] = 1;
        keys.c_cc[libc::VTIME] = 0;
        typing.set(&keys)?;
        typing.lines_back = Some((lines, keys.c_lflag));
        for (at, &key) in secret.iter().enumerate() {
            let typed = self
                .typed_into_first_read(master, &typing.peer, Some(&keys), key, group, bound)
                .await
                .map_err(|refused| match refused {
                    // The program holds the keys before this one.
                    SecretRefused::OtherReader | SecretRefused::SettingsChanged if at > 0 => {
                        SecretRefused::CutShort
                    }
                    other => other,
                })?;
            if !typed {
                return Ok(false);
            }
        }
        // All read: the settings are let go (the program sets its own once it has Enter), and
        // its own line mode is given back.
        typing.unlock();
        if typing.lines_back.take().is_some() {
            typing.set(&lines)?;
        }
        // The program holds the whole secret now: what stops Enter leaves it so.
        let read = self
            .typed_into_first_read(master, &typing.peer, None, b'\r', group, bound)
            .await
            .map_err(|_| SecretRefused::CutShort)?;
        self.touch();
        if read {
            Ok(true)
        } else {
            Err(SecretRefused::CutShort)
        }
    }

    /// Types `key` once `group` waits first in a read of the terminal and nothing waits to be
    /// read, then waits for it to be read; each wait until `bound`. Whether it was read. For a
    /// key of the secret, the terminal's settings must stay `kept` before it and until it was
    /// read: changed, they could hold the key in a line for another reader, or echo it. (Enter,
    /// after the secret, is no secret; the program sets its own settings once it has it.)
    async fn typed_into_first_read(
        &self,
        master: &Master,
        peer: &Peer,
        kept: Option<&libc::termios>,
        key: u8,
        group: i32,
        bound: Instant,
    ) -> Result<bool, SecretRefused> {
        let unchanged = || kept.map_or(Ok(()), |set| settings_kept(peer, set));
        loop {
            unchanged()?;
            let order =
                crate::blocking::section(|| read_order(&reading_group(group), self.terminal()));
            match order {
                ReadOrder::First if !peer.line_waiting() => break,
                ReadOrder::Behind => return Err(SecretRefused::OtherReader),
                _ if Instant::now() >= bound => return Ok(false),
                _ => tokio::time::sleep(KEY_READ_POLL).await,
            }
        }
        unchanged()?;
        let readers = reading_group(group);
        let before = crate::blocking::section(|| bytes_read(&readers));
        if master
            .write_until(&[key], bound)
            .await
            .map_err(|_| SecretRefused::Closed)?
            == 0
        {
            return Ok(false);
        }
        while peer.line_waiting() {
            unchanged()?;
            if Instant::now() >= bound {
                return Ok(false);
            }
            tokio::time::sleep(KEY_READ_POLL).await;
        }
        unchanged()?;
        // Gone from the terminal: read by the program, whose count of bytes read grows as its
        // read returns, or by another read that took the lock in a moment the program's read
        // was ended (a signal it handles, such as SIGWINCH from a resize made through another
        // fd): then the rest is not typed.
        if let Some(before) = before {
            let taken_by_program = async {
                while crate::blocking::section(|| bytes_read(&readers)).unwrap_or(u64::MAX)
                    <= before
                {
                    tokio::time::sleep(KEY_READ_POLL).await;
                }
            };
            if tokio::time::timeout(KEY_TAKEN_WAIT, taken_by_program)
                .await
                .is_err()
            {
                return Err(SecretRefused::OtherReader);
            }
        }
        Ok(true)
    }
}

/// A secret being typed: on drop, what is left of it in the input queue is taken back (the
/// program read its line, or did not: nothing legitimate is left there, since the send lock is
/// held), and when it was not read the prompt owed for it is given back.
struct Typing<'s> {
    peer: Peer,
    shell: &'s Shell,
    owed_here: bool,
    /// The program read the line.
    done: bool,
    /// While the terminal reads key by key for the typing ([`Shell::type_key_by_key`]): its
    /// own settings, which read lines, to give back unless the program set others meanwhile
    /// (the local modes set for the typing, to tell).
    lines_back: Option<(libc::termios, libc::tcflag_t)>,
    /// The terminal's settings are locked against every fd of it (`Peer::lock_settings`).
    locked: bool,
}

impl Typing<'_> {
    /// Lets the terminal's settings go, if they are locked.
    fn unlock(&mut self) {
        if std::mem::take(&mut self.locked) {
            let _ = self.peer.lock_settings(false);
        }
    }

    /// Sets the terminal's settings to `t`, through the lock if it holds one.
    fn set(&self, t: &libc::termios) -> Result<(), SecretRefused> {
        let set = if self.locked {
            self.peer
                .lock_settings(false)
                .and_then(|()| self.peer.apply(t))
                .and_then(|()| self.peer.lock_settings(true))
        } else {
            self.peer.apply(t)
        };
        set.map_err(|_| SecretRefused::Closed)
    }
}

impl Drop for Typing<'_> {
    fn drop(&mut self) {
        self.unlock();
        if let Some((lines, keys)) = self.lines_back.take()
            && self.peer.settings().is_some_and(|now| now.c_lflag == keys)
        {
            let _ = self.peer.apply(&lines);
        }
        let _ = self.peer.discard_input();
        if !self.done && self.owed_here {
            let mut live = lock(&self.shell.live);
            live.owed_prompts = live.owed_prompts.saturating_sub(1);
        }
    }
}

/// Resizes held while a secret is typed (a signal to the program would free the terminal's
/// read lock it waits with), let go when dropped: the model's and the view's wait (`Resizes`
/// in `resize.rs`), confined commands' fail ([`crate::pty::typed_into`]).
struct ResizesHeld<'s> {
    shell: &'s Shell,
    _typing: crate::pty::typed_into::Typing,
}

impl<'s> ResizesHeld<'s> {
    fn new(shell: &'s Shell, master: &Master) -> Result<Self, SecretRefused> {
        let peer = shell.open_peer(master)?;
        let typing = crate::pty::typed_into::Typing::new(std::os::fd::AsFd::as_fd(&peer))
            .map_err(|_| SecretRefused::Closed)?;
        shell.hold_resizes();
        Ok(Self {
            shell,
            _typing: typing,
        })
    }
}

impl Drop for ResizesHeld<'_> {
    fn drop(&mut self) {
        self.shell.release_resizes();
    }
}

#[cfg(test)]
mod tests {
    use super::{has_special_key, takes_a_line};

    fn password_prompt() -> libc::termios {
        // SAFETY: a zeroed termios is a valid value; fields are set below.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        t.c_lflag = libc::ICANON | libc::ISIG | libc::IEXTEN;
        t.c_iflag = libc::ICRNL;
        t.c_cc[libc::VINTR] = 3;
        t.c_cc[libc::VEOF] = 4;
        t.c_cc[libc::VERASE] = 0x7f;
        t
    }

    #[test]
    fn a_line_is_taken_only_as_getpass_leaves_the_terminal() {
        let t = password_prompt();
        assert!(takes_a_line(&t));
        for (flag, on_lflag) in [
            (libc::ECHO, true),
            (libc::EXTPROC, true),
            (libc::IGNCR, false),
            (libc::INLCR, false),
            (libc::ISTRIP, false),
            (libc::IUCLC, false),
        ] {
            let mut odd = t;
            if on_lflag {
                odd.c_lflag |= flag;
            } else {
                odd.c_iflag |= flag;
            }
            assert!(!takes_a_line(&odd), "{flag:#x}");
        }
        let mut no_icrnl = t;
        no_icrnl.c_iflag &= !libc::ICRNL;
        assert!(!takes_a_line(&no_icrnl));
        let mut raw = t;
        raw.c_lflag &= !libc::ICANON;
        assert!(!takes_a_line(&raw));
    }

    #[test]
    fn a_secret_with_a_key_the_terminal_acts_on_is_found() {
        let mut t = password_prompt();
        assert!(!has_special_key(&t, b"hunter2"));
        t.c_cc[libc::VEOL] = b'n';
        assert!(has_special_key(&t, b"hunter2"));
        t.c_cc[libc::VEOL] = 0;
        t.c_cc[libc::VKILL] = b'2';
        assert!(has_special_key(&t, b"hunter2"));
    }
}
