//! Property tests: no input panics or hangs. Case count: PROPTEST_CASES (default 256 per property).

use std::time::{Duration, Instant};

use agentty_guard::{GuardConfig, analyze, check, check_argv, report};
use proptest::prelude::*;

/// A single check must stay far below this even for hostile input.
const MAX_CHECK_MS: u64 = 2_000;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Shell-ish tokens, including every operator and wrapper the parser special-cases.
const TOKENS: &[&str] = &[
    "rm",
    "-rf",
    "/",
    "~",
    "$HOME",
    "sudo",
    "env",
    "A=1",
    "sh",
    "bash",
    "-c",
    "-lc",
    "eval",
    "'",
    "\"",
    "`",
    "$(",
    "(",
    ")",
    "{",
    "}",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "\n",
    "<(",
    ">",
    ">>",
    "<<",
    "EOF",
    "<<<",
    "\\",
    "$'",
    "#",
    "find",
    "-exec",
    "{}",
    "\\;",
    "xargs",
    "timeout",
    "10",
    "curl",
    "x",
    "|&",
    "pwsh",
    "-Command",
    "iex",
    "Remove-Item",
    "-Recurse",
    "C:\\",
    "dd",
    "of=/dev/sda",
    ":",
    "()",
    "kill",
    "-9",
    "-1",
    "if",
    "then",
    "fi",
    "case",
    "esac",
    ";;",
    "do",
    "done",
    "\0",
    "\u{fffd}",
    "$((",
    "))",
    "[[",
    "]]",
    "${",
    "watch",
    "nohup",
    "exec",
    "function",
    "D=$HOME",
    "D=",
    "$D",
    "\"$D\"",
    "${D:-/}",
    "${D:?}",
    "cd",
    "pushd",
    "export",
    "local",
    "unset",
    "read",
    "source",
    "$(dirname",
    "$(pwd)",
    "$(realpath",
    ".[a-z]*",
    "~/.??*",
    "chmod",
    "000",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(TOKENS), prop::bool::ANY), 0..60).prop_map(
        |parts| {
            let mut s = String::new();
            for (tok, space) in parts {
                s.push_str(tok);
                if space {
                    s.push(' ');
                }
            }
            s
        },
    )
}

fn timed(line: &str) {
    let started = Instant::now();
    let cfg = GuardConfig::default();
    let _ = check(line, &cfg);
    let _ = analyze(line);
    let (_, _) = report(line, &cfg, None);
    let _ = super::corpus::as_a_call(line, &cfg);
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(MAX_CHECK_MS),
        "took {elapsed:?} on {line:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(line in any::<String>()) {
        timed(&line);
    }

    #[test]
    fn token_soup_never_panics(line in token_soup()) {
        timed(&line);
    }

    #[test]
    fn argv_soup_never_panics(words in prop::collection::vec(prop::sample::select(TOKENS), 0..20)) {
        let argv: Vec<String> = words.iter().map(std::string::ToString::to_string).collect();
        let _ = check_argv(&argv, &GuardConfig::default());
    }

    #[test]
    fn dangerous_line_stays_blocked_after_harmless_prefix(prefix in "[a-z]{1,8}( [a-z0-9.-]{1,8}){0,3}") {
        // A safe command before `;` must never hide the dangerous one after it.
        let line = format!("{prefix}; rm -rf /");
        prop_assert!(check(&line, &GuardConfig::default()).is_blocked(), "{}", line);
    }
}

#[test]
fn corpus_mutations_never_panic() {
    // Every corpus line cut at every char boundary: truncated quotes, heredocs, substitutions.
    // Judged as a call: the place and environment known, so every expansion path runs.
    for line in super::corpus::all_lines() {
        for (i, _) in line.char_indices() {
            if let Some(head) = line.get(..i) {
                let _ = super::corpus::as_a_call(head, &GuardConfig::default());
            }
        }
    }
}
