//! Shell integration: prompt markers and hooks installed at open, so `shell_send` knows when a
//! command is done and what it exited with (in the spirit of OSC 133, which terminals use for
//! the same), and can trust it (docs/BEHAVIOUR.md §4).
//!
//! Each shell's prompts carry an OSC sequence no program prints by accident:
//! `ESC ] 6973 ; <nonce> ; <kind> [; <n>] BEL`, with a nonce unique to the shell. `C` is printed
//! when a command line was read and is about to run (bash's `PS0`, zsh's `POSTEDIT`), `P` starts
//! a continuation prompt (`PS2`). The end of a command is `E;<seq>` in bash and zsh, `D;<code>`
//! in POSIX shells. The terminal emulator and the cleaner drop unknown OSC sequences, so the
//! markers are invisible in every view.
//!
//! bash and zsh: the markers only say *where* a command's output ends. That it ended, and with
//! what code, is said by the shell's own process on its private channel (`channel.rs`): the
//! prompt hook (a function run in the shell itself: bash's `PROMPT_COMMAND`, zsh's `precmd`)
//! sends `D <seq> <code>` there, then prints `E;<seq>`. An `E` marker with no report of the
//! same number from the shell's pid is just output. The hooks come from a start-up text
//! (`startup.rs`), not the environment, so no program the shell runs inherits them or the
//! nonce: bash starts with `--norc --noprofile` (no user rc, nor the system's
//! `/etc/bash.bashrc`, which `--rcfile` would still read), readline's keys from
//! `/etc/inputrc` only, and a `PROMPT_COMMAND` that reads the
//! text from a sealed memfd at a fixed fd once, on its first prompt, closes that fd and runs
//! it; the text takes `PROMPT_COMMAND` out of the environment and puts the hooks in its place. zsh starts with `-o no_global_rcs` and `ZDOTDIR` naming the
//! file's directory, so it reads `/etc/zsh/zshenv` (which no option skips, `-f` neither) and
//! then only that `.zshrc`, which unsets `ZDOTDIR`. In both the end marker is printed before
//! the prompt proper, so a prefix a venv puts in front of the prompt stays out of the output.
//!
//! dash and other POSIX shells have no hook that runs inside the shell before a prompt: they
//! expand `$?` in `PS1` (`D;<code>`), which must come from the environment, so a program they
//! run can read the nonce and print an end of its own; see `Flavor::Posix`. They have no start
//! marker either, so their output window starts at the send and the echoed input line is
//! removed by text. Other shells (fish, …) run without markers and fall back to idle detection.

use std::path::Path;

use crate::pty::channel::{SHELL_CHANNEL_FD, SHELL_STARTUP_FD};

/// The fixed part of every marker; the nonce follows.
const OSC_PREFIX: &[u8] = b"\x1b]6973;";
const BEL: u8 = 0x07;
/// A marker longer than this is not one of ours (bounds the carry buffer).
const MARKER_MAX_BYTES: usize = 64;

/// Which prompt dialect a shell speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Bash,
    Zsh,
    Posix,
    /// No markers: completion falls back to idle time.
    Unknown,
}

impl Flavor {
    /// Judged by the program's file name.
    pub fn of(program: &std::path::Path) -> Self {
        let name = program
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        match name {
            "bash" => Flavor::Bash,
            "zsh" => Flavor::Zsh,
            "sh" | "dash" | "ash" | "ksh" | "mksh" | "busybox" => Flavor::Posix,
            _ => Flavor::Unknown,
        }
    }

    /// Whether the shell reports a command's end from its own process, on its channel.
    pub fn has_hooks(self) -> bool {
        matches!(self, Flavor::Bash | Flavor::Zsh)
    }

    /// Arguments that make the shell interactive and keep the user's and the system's rc files
    /// from replacing the prompts (and from slowing the start down).
    pub fn args(self) -> Vec<&'static str> {
        match self {
            Flavor::Bash => vec!["--norc", "--noprofile", "-i"],
            Flavor::Zsh => vec!["-o", "no_global_rcs", "-i"],
            Flavor::Posix | Flavor::Unknown => vec!["-i"],
        }
    }

    /// The start-up file's name, and its text (the hooks), for a shell that has hooks.
    pub fn startup(self, nonce: &str) -> Option<(&'static str, String)> {
        let (name, template) = match self {
            Flavor::Bash => ("rc", BASH_STARTUP),
            Flavor::Zsh => (".zshrc", ZSH_STARTUP),
            Flavor::Posix | Flavor::Unknown => return None,
        };
        let text = template
            .replace("{nonce}", nonce)
            .replace("{fd}", &SHELL_CHANNEL_FD.to_string());
        Some((name, text))
    }

    /// Environment that installs the markers: for bash, how to read its start-up text at
    /// [`SHELL_STARTUP_FD`]; for zsh only where the start-up file (`startup`, see
    /// [`Flavor::startup`]) is; for POSIX shells the prompts themselves, nonce included (the
    /// limit named in the module header).
    pub fn env(self, nonce: &str, startup: Option<&Path>) -> Vec<(String, String)> {
        let osc = |kind: &str| format!("\x1b]6973;{nonce};{kind}\x07");
        match (self, startup) {
            // The text is read whole (up to a NUL it has none of) with builtins only, its fd
            // closed before it runs, so nothing the shell starts inherits it.
            // Readline's keys from the system's file only: a `~/.inputrc` a command wrote could
            // make Enter run another line than the one typed (review 39 H1). No history file
            // read at start (the user's own, or one a command planted, which `!` would run:
            // review 41 L5) nor written at the end; the start-up text unsets the variable.
            (Flavor::Bash, _) => vec![
                (
                    "PROMPT_COMMAND".into(),
                    format!(
                        "IFS= read -r -d '' -u {SHELL_STARTUP_FD} __agentty_rc; \
                         exec {SHELL_STARTUP_FD}<&-; eval \"$__agentty_rc\"; unset __agentty_rc"
                    ),
                ),
                ("INPUTRC".into(), "/etc/inputrc".into()),
                ("HISTFILE".into(), String::new()),
            ],
            (Flavor::Zsh, Some(file)) => {
                let dir = file.parent().unwrap_or(file);
                vec![("ZDOTDIR".into(), dir.to_string_lossy().into_owned())]
            }
            (Flavor::Posix, _) => vec![
                ("PS1".into(), format!("{}{POSIX_PROMPT}", osc("D;$?"))),
                ("PS2".into(), format!("{}> ", osc("P"))),
            ],
            _ => Vec::new(),
        }
    }

    /// Whether the shell marks where a command's output starts.
    pub fn marks_start(self) -> bool {
        matches!(self, Flavor::Bash | Flavor::Zsh)
    }
}

/// bash's start-up text, read and run by the bootstrap `PROMPT_COMMAND` at the first prompt (which
/// it then draws itself). The report goes to the channel before the marker is printed: once
/// the server reads the marker, the report is queued already. Errors are not silenced: a
/// channel someone closed (`exec 100>&-`) says so at each prompt, and silencing costs an `open`
/// per prompt. A `!` typed is text, not a history reference (`echo "Hello!World"` ran as typed
/// only so), and no history file is kept.
const BASH_STARTUP: &str = r#"export -n PROMPT_COMMAND PS0 PS1 PS2 INPUTRC
set +H
unset HISTFILE
__agentty_seq=0
__agentty_end() {
	local code=$?
	__agentty_seq=$((__agentty_seq + 1))
	printf 'D %s %s' "$__agentty_seq" "$code" >&{fd}
	printf '\033]6973;{nonce};E;%s\007' "$__agentty_seq"
	return $code
}
PROMPT_COMMAND=__agentty_end
PS0=$'\e]6973;{nonce};C\a'
PS1='\$ '
PS2=$'\\[\e]6973;{nonce};P\a\\]> '
__agentty_end
"#;

/// zsh's `.zshrc`. `precmd` hooks run before every primary prompt, so the end marker comes
/// before whatever is put in front of PS1, as with bash. zsh's own PROMPT_SP (which moves the
/// prompt to a new line after output without a final newline) runs before the hooks, so its
/// spaces would end up in the command's output: it is done by the hook instead, after the
/// marker (a line of spaces, which wraps only when the cursor was not at the start of a line,
/// then a carriage return). `POSTEDIT` is printed when the line editor hands a line over. As in
/// bash, a `!` is text and no history file is kept.
const ZSH_STARTUP: &str = r#"unset ZDOTDIR HISTFILE
unsetopt prompt_sp prompt_cr bang_hist
typeset +x PS1 PS2 POSTEDIT
typeset -gi __agentty_seq=0
__agentty_end() {
	local code=$?
	(( ++__agentty_seq ))
	print -rn -u {fd} -- "D $__agentty_seq $code"
	print -rn -- $'\e]6973;{nonce};E;'$__agentty_seq$'\a'
	printf '%*s\r' $COLUMNS ''
	return $code
}
precmd_functions=(__agentty_end $precmd_functions)
POSTEDIT=$'\e]6973;{nonce};C\a'
PS1='%# '
PS2=$'%{\e]6973;{nonce};P\a%}> '
"#;

/// What a POSIX shell prints after its prompt marker (the visible prompt).
pub(crate) const POSIX_PROMPT: &str = "$ ";

/// A marker found in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A command line was read and starts running.
    Start,
    /// The primary prompt: the previous command exited with this code. bash and zsh print
    /// [`Marker::End`] instead; the shell turns one into this once the shell's own report of
    /// that number came (`channel.rs`).
    Prompt(i32),
    /// bash's and zsh's end of a command, numbered: where its output ends. The number says which
    /// of the shell's reports tells that it ended and with what code.
    End(u64),
    /// A continuation prompt: the shell needs more lines.
    Continue,
}

/// One piece of output: plain bytes or a marker.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Bytes(&'a [u8]),
    Marker(Marker),
}

/// Finds this shell's markers in a byte stream, across read boundaries.
pub struct Scanner {
    prefix: Vec<u8>,
    /// The start of a possible marker cut by the end of the previous read.
    carry: Vec<u8>,
    joined: Vec<u8>,
}

impl Scanner {
    pub fn new(nonce: &str) -> Self {
        let mut prefix = OSC_PREFIX.to_vec();
        prefix.extend_from_slice(nonce.as_bytes());
        prefix.push(b';');
        Self {
            prefix,
            carry: Vec::new(),
            joined: Vec::new(),
        }
    }

    /// Splits `chunk` into pieces, calling `each` in order. A trailing partial marker is held
    /// back until the next chunk completes or refutes it.
    pub fn scan(&mut self, chunk: &[u8], mut each: impl FnMut(Piece<'_>)) {
        self.joined.clear();
        self.joined.append(&mut self.carry);
        self.joined.extend_from_slice(chunk);
        let data = std::mem::take(&mut self.joined);
        let mut plain_from = 0;
        let mut i = 0;
        while let Some(off) = memchr_esc(&data[i..]) {
            let at = i + off;
            let rest = &data[at..];
            let n = rest.len().min(self.prefix.len());
            if rest[..n] != self.prefix[..n] {
                i = at + 1;
                continue;
            }
            if n < self.prefix.len() {
                // A possible marker cut at the end of the chunk.
                each(Piece::Bytes(&data[plain_from..at]));
                self.carry.extend_from_slice(rest);
                self.joined = data;
                return;
            }
            let body_start = at + self.prefix.len();
            let end = data[body_start..]
                .iter()
                .take(MARKER_MAX_BYTES)
                .position(|&b| b == BEL);
            match end {
                Some(len) => {
                    let body = &data[body_start..body_start + len];
                    if let Some(marker) = parse_body(body) {
                        each(Piece::Bytes(&data[plain_from..at]));
                        each(Piece::Marker(marker));
                        plain_from = body_start + len + 1;
                    }
                    i = body_start + len + 1;
                }
                None if data.len() - body_start < MARKER_MAX_BYTES => {
                    each(Piece::Bytes(&data[plain_from..at]));
                    self.carry.extend_from_slice(rest);
                    self.joined = data;
                    return;
                }
                None => i = at + 1,
            }
        }
        each(Piece::Bytes(&data[plain_from..]));
        self.joined = data;
    }
}

fn memchr_esc(data: &[u8]) -> Option<usize> {
    memchr::memchr(0x1b, data)
}

fn parse_body(body: &[u8]) -> Option<Marker> {
    let text = std::str::from_utf8(body).ok()?;
    match text.split_once(';') {
        None if text == "C" => Some(Marker::Start),
        None if text == "P" => Some(Marker::Continue),
        Some(("D", code)) => Some(Marker::Prompt(code.trim().parse().ok()?)),
        Some(("E", seq)) => Some(Marker::End(seq.parse().ok()?)),
        _ => None,
    }
}

/// Translates a model's text into keystrokes: `\n` (and `\r\n`) become the Enter key (`\r`),
/// nothing is appended, every other byte (`\x03` = Ctrl+C, `\x04` = Ctrl+D) passes unchanged.
pub fn keystrokes(input: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let bytes = input.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                out.push(b'\r');
                i += 1;
            }
            b'\n' => out.push(b'\r'),
            b => out.push(b),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(scanner: &mut Scanner, chunk: &[u8]) -> (Vec<u8>, Vec<Marker>) {
        let (mut bytes, mut markers) = (Vec::new(), Vec::new());
        scanner.scan(chunk, |p| match p {
            Piece::Bytes(b) => bytes.extend_from_slice(b),
            Piece::Marker(m) => markers.push(m),
        });
        (bytes, markers)
    }

    #[test]
    fn markers_are_found_and_removed_even_when_split() {
        let stream =
            b"hi\r\n\x1b[1m\x1b]6973;n1;D;130\x07$ \x1b]6973;other;C\x07x\x1b]6973;n1;C\x07\
                       \x1b]6973;n1;E;7\x07";
        for cut in 0..stream.len() {
            let mut s = Scanner::new("n1");
            let (mut bytes, mut markers) = pieces(&mut s, &stream[..cut]);
            let (b2, m2) = pieces(&mut s, &stream[cut..]);
            bytes.extend(b2);
            markers.extend(m2);
            assert_eq!(
                markers,
                vec![Marker::Prompt(130), Marker::Start, Marker::End(7)],
                "cut {cut}"
            );
            assert_eq!(
                bytes,
                b"hi\r\n\x1b[1m$ \x1b]6973;other;C\x07x".to_vec(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn newline_becomes_enter_and_nothing_is_appended() {
        assert_eq!(keystrokes("pwd"), b"pwd");
        assert_eq!(keystrokes("ls\n"), b"ls\r");
        assert_eq!(keystrokes("a\r\nb\n"), b"a\rb\r");
        assert_eq!(keystrokes("\x03"), b"\x03");
    }
}
