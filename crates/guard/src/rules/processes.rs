//! Rules against taking the machine down: `fork-bomb` (and endless background loops),
//! `shutdown`, `kill-all` (pid -1, every process of a user).

use super::*;

pub(super) fn fork_bomb(a: &Analysis) -> Option<String> {
    for (id, name) in a.functions.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        let calls: Vec<&SimpleCommand> = a
            .commands
            .iter()
            .filter(|c| c.function == Some(id) && c.argv.first() == Some(name))
            .collect();
        if calls.len() >= 2 && calls.iter().any(|c| c.pipeline.is_some() || c.background) {
            return calls
                .first()
                .map(|c| format!("{name}() {{ … {} … }}", c.text));
        }
    }
    a.scanned
        .iter()
        .find(|t| fork_bomb_text(t))
        .cloned()
        .or_else(|| fork_loop(&a.source))
}

/// An endless loop that starts a process in the background on every turn and never waits or
/// pauses: `while true; do bash & done`, `while :; do ./a.out & done`, `for ((;;)); do x & done`.
/// The number of processes grows without bound, as with a fork bomb.
pub(super) fn fork_loop(source: &str) -> Option<String> {
    let compact: String = source.split_whitespace().collect::<Vec<_>>().join(" ");
    let heads = [
        "while true; do ",
        "while :; do ",
        "while [ 1 ]; do ",
        "until false; do ",
        "for ((;;)); do ",
        "for (( ; ; )); do ",
    ];
    for head in heads {
        let mut rest = compact.as_str();
        while let Some(at) = rest.find(head) {
            let body_start = &rest[at + head.len()..];
            let body = body_start.split("done").next().unwrap_or(body_start);
            let bytes = body.as_bytes();
            let backgrounds = bytes.iter().enumerate().any(|(i, &b)| {
                b == b'&'
                    && bytes.get(i + 1) != Some(&b'&')
                    && (i == 0 || bytes[i - 1] != b'&')
                    && bytes.get(i + 1) != Some(&b'>')
                    && (i == 0 || !matches!(bytes[i - 1], b'>' | b'<'))
            });
            let paced = ["sleep", "wait", "break", "exit", "read", "return"]
                .iter()
                .any(|w| {
                    body.split(|c: char| !c.is_ascii_alphanumeric())
                        .any(|t| t == *w)
                });
            if backgrounds && !paced {
                return Some(format!("{head}{body}done"));
            }
            rest = &body_start[body.len().min(body_start.len())..];
        }
    }
    None
}

/// Text-level fork-bomb check for lines that did not parse: `NAME(){ … NAME|NAME … }` or
/// `NAME&` inside NAME's own body.
pub(super) fn fork_bomb_text(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut from = 0;
    while let Some(pos) = compact.get(from..).and_then(|s| s.find("(){")) {
        let at = from + pos;
        from = at + 3;
        let head = compact.get(..at).unwrap_or_default();
        let name_start = head
            .rfind([';', '&', '|', '{', '}', '(', ')', '\n'])
            .map_or(0, |i| i + 1);
        let name = head.get(name_start..).unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        let body = compact.get(from..).unwrap_or_default();
        let body = body.split('}').next().unwrap_or(body);
        let piped = format!("{name}|{name}");
        let backgrounded = format!("{name}&");
        if body.contains(&piped) || body.matches(name).count() >= 2 && body.contains(&backgrounded)
        {
            return true;
        }
    }
    false
}

pub(super) fn shutdown(a: &Analysis) -> Option<String> {
    first(a, |c| {
        let first_operand = operands(c).next().map(String::as_str);
        match c.program.as_str() {
            "shutdown" | "reboot" | "halt" | "poweroff" => !args(c)
                .iter()
                .any(|w| matches!(w.as_str(), "-c" | "--help" | "--version")),
            "init" | "telinit" => matches!(first_operand, Some("0" | "6")),
            "systemctl" | "loginctl" => {
                let mut words = args(c).iter();
                let mut verb = None;
                while let Some(w) = words.next() {
                    if matches!(
                        w.as_str(),
                        "-H" | "-M" | "--host" | "--machine" | "-t" | "-p"
                    ) {
                        words.next();
                    } else if !w.starts_with('-') {
                        verb = Some(w.as_str());
                        break;
                    }
                }
                matches!(
                    verb,
                    Some("poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot")
                )
            }
            "stop-computer" | "restart-computer" => true,
            // The magic SysRq key: `b` reboots, `o` powers off, `c` crashes the kernel.
            _ if c
                .redirects
                .iter()
                .any(|r| r.writes() && r.target.ends_with("sysrq-trigger")) =>
            {
                true
            }
            "tee" => operands(c).any(|o| o.ends_with("sysrq-trigger")),
            _ => false,
        }
    })
}

pub(super) fn kill_all(a: &Analysis) -> Option<String> {
    first(a, |c| {
        if c.program == "killall5" || signals_every_process_of_a_user(c) {
            return true;
        }
        if c.program != "kill" {
            return false;
        }
        let mut words = args(c).iter();
        let mut signal_seen = false;
        let mut signal = String::new();
        while let Some(w) = words.next() {
            match w.as_str() {
                "-l" | "-L" | "--list" | "--table" => return false,
                "-s" | "-n" | "--signal" => {
                    signal = words.next().cloned().unwrap_or_default();
                    signal_seen = true;
                }
                "--" => return words.any(|p| p == "-1") && signal != "0",
                "-1" if signal_seen => return signal != "0",
                s if s.starts_with('-') && !signal_seen => {
                    signal = s.trim_start_matches('-').to_string();
                    signal_seen = true;
                }
                _ => {}
            }
        }
        false
    })
}

/// `pkill -9 -u $USER`, `pkill -KILL .`, `killall -u me`: no name, or a pattern matching every
/// name, so every process of the user (the agent's host and the user's session included) goes.
pub(super) fn signals_every_process_of_a_user(c: &SimpleCommand) -> bool {
    let takes_value = |w: &str| {
        matches!(
            w,
            "-u" | "-U"
                | "-g"
                | "-G"
                | "-P"
                | "-s"
                | "-t"
                | "-F"
                | "--euid"
                | "--uid"
                | "--group"
                | "--pgroup"
                | "--parent"
                | "--session"
                | "--terminal"
                | "--pidfile"
                | "--signal"
                | "--ns"
                | "--nslist"
                | "-o"
                | "-y"
                | "--older-than"
                | "--younger-than"
                | "-n"
        )
    };
    let mut words = args(c).iter();
    let mut patterns = Vec::new();
    let mut query = false;
    while let Some(w) = words.next() {
        if matches!(
            w.as_str(),
            "-l" | "--list" | "-V" | "--version" | "-h" | "--help" | "-0"
        ) {
            query = true;
        } else if takes_value(w) {
            words.next();
        } else if !w.starts_with('-') {
            patterns.push(w.as_str());
        }
    }
    let matches_all = |p: &str| matches!(p, "" | "." | ".*" | "^" | "$" | "^.*" | ".+" | "^.*$");
    match c.program.as_str() {
        "pkill" => !query && (patterns.is_empty() || patterns.iter().all(|p| matches_all(p))),
        "killall" => {
            !query
                && args(c)
                    .iter()
                    .any(|w| matches!(w.as_str(), "-u" | "--user"))
                && (patterns.is_empty() || patterns.iter().all(|p| matches_all(p)))
        }
        _ => false,
    }
}
