//! Shell integration: prompt markers injected at open, so `shell_send` knows when a command is
//! done and what it exited with (in the spirit of OSC 133, which terminals use for the same).
//!
//! Each shell gets prompts that carry an OSC sequence no program prints by accident:
//! `ESC ] 6973 ; <nonce> ; <kind> [; <exit code>] BEL`, with a nonce unique to the shell.
//! `D;<code>` comes just before the primary prompt (the previous command ended with `<code>`),
//! `C` is printed when a command line was read and is about to run (bash's `PS0`, zsh's
//! `POSTEDIT`), `P` starts a continuation prompt (`PS2`). The terminal emulator and the cleaner
//! drop unknown OSC sequences, so the markers are invisible in every view.
//!
//! Injection is by environment only, no rc file written anywhere. bash (`--norc --noprofile`,
//! so a user's rc cannot replace them, and start-up stays fast and deterministic) takes `PS0`,
//! `PS1`, `PS2` and `PROMPT_COMMAND`; zsh (`-f`) takes `POSTEDIT`, `PS1`, `PS2` and
//! `PROMPT_EOL_MARK`. In both the end marker is printed before the prompt proper, so a prefix a
//! venv puts in front of the prompt stays out of the output. dash and other POSIX shells expand
//! `$?` in `PS1` but have no start marker, so their output window starts at the send and the
//! echoed input line is removed by text. Other shells (fish, …) run without markers and fall
//! back to idle detection.

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

    /// Arguments that make the shell interactive and keep rc files from replacing the prompts.
    pub fn args(self) -> Vec<&'static str> {
        match self {
            Flavor::Bash => vec!["--norc", "--noprofile", "-i"],
            Flavor::Zsh => vec!["-f", "-o", "promptsp", "-o", "promptcr", "-i"],
            Flavor::Posix | Flavor::Unknown => vec!["-i"],
        }
    }

    /// Environment that installs the markers.
    pub fn env(self, nonce: &str) -> Vec<(String, String)> {
        let osc = |kind: &str| format!("\x1b]6973;{nonce};{kind}\x07");
        match self {
            // The end marker comes from PROMPT_COMMAND, which runs before the prompt is
            // printed: whatever is later put in front of the prompt (a venv's `(.venv) `, a
            // conda env, a git branch) then stays outside the command's output.
            Flavor::Bash => vec![
                ("PS0".into(), osc("C")),
                (
                    "PROMPT_COMMAND".into(),
                    format!("printf '\\033]6973;{nonce};D;%s\\007' \"$?\""),
                ),
                ("PS1".into(), "\\$ ".into()),
                ("PS2".into(), format!("\\[{}\\]> ", osc("P"))),
            ],
            // zsh prints POSTEDIT when the line editor hands over a line (its PS0), and
            // PROMPT_EOL_MARK (prompt-expanded) before every prompt while PROMPT_SP is on: the
            // end marker there comes before whatever is put in front of PS1, as with bash.
            Flavor::Zsh => vec![
                ("POSTEDIT".into(), osc("C")),
                ("PROMPT_EOL_MARK".into(), format!("%{{{}%}}", osc("D;%?"))),
                ("PS1".into(), "%# ".into()),
                ("PS2".into(), format!("%{{{}%}}> ", osc("P"))),
            ],
            Flavor::Posix => vec![
                ("PS1".into(), format!("{}{POSIX_PROMPT}", osc("D;$?"))),
                ("PS2".into(), format!("{}> ", osc("P"))),
            ],
            Flavor::Unknown => Vec::new(),
        }
    }

    /// Whether the shell marks where a command's output starts.
    pub fn marks_start(self) -> bool {
        matches!(self, Flavor::Bash | Flavor::Zsh)
    }
}

/// What a POSIX shell prints after its prompt marker (the visible prompt).
pub(crate) const POSIX_PROMPT: &str = "$ ";

/// A marker found in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A command line was read and starts running.
    Start,
    /// The primary prompt: the previous command exited with this code.
    Prompt(i32),
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
            b"hi\r\n\x1b[1m\x1b]6973;n1;D;130\x07$ \x1b]6973;other;C\x07x\x1b]6973;n1;C\x07";
        for cut in 0..stream.len() {
            let mut s = Scanner::new("n1");
            let (mut bytes, mut markers) = pieces(&mut s, &stream[..cut]);
            let (b2, m2) = pieces(&mut s, &stream[cut..]);
            bytes.extend(b2);
            markers.extend(m2);
            assert_eq!(
                markers,
                vec![Marker::Prompt(130), Marker::Start],
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
