//! Peels command wrappers: `sudo rm -rf /` runs `rm`, `sh -c 'rm -rf /'` runs a script, and the
//! rules must judge what finally runs, not the wrapper.
//!
//! Each wrapper is described by the options that take a value (so `sudo -u root rm` skips `root`)
//! and the flags that mean "no command follows" (`command -v rm` only looks `rm` up). The table is
//! deliberately modest: the wrappers an agent actually types, parsed the way their manuals say.
//! Unknown options are read as flags, which can at worst make us judge an option's value as the
//! command — harmless, since a wrong program name matches no rule.

use crate::command::program_name;
use crate::invocation::{is_shell, shell_args};
use crate::lex::Dialect;
use crate::peel::Peel;
use crate::powershell::{peel_powershell, peel_pwsh};

/// How a wrapper's options are read.
struct Spec {
    /// The programs read this way (`argv[0]` as [`program_name`] resolves it).
    names: &'static [&'static str],
    /// Short options taking a value (`-u root`, `-uroot`).
    short_val: &'static str,
    /// Long options taking a value (`--user root`; `--user=root` is handled regardless).
    long_val: &'static [&'static str],
    /// Short flags meaning "no command is run" (`command -v`).
    short_stop: &'static str,
    /// Long flags meaning the same.
    long_stop: &'static [&'static str],
    /// Positional operands before the command (`timeout DURATION cmd`, `chroot DIR cmd`).
    positional: usize,
    /// `VAR=value` words may precede the command (`sudo`, `env`).
    assignments: bool,
}

const NO_OPTS: Spec = Spec {
    names: &[],
    short_val: "",
    long_val: &[],
    short_stop: "",
    long_stop: &[],
    positional: 0,
    assignments: false,
};

/// The wrappers read by their options (see [`Spec`]).
const WRAPPERS: &[Spec] = &[
    Spec {
        names: &["sudo"],
        short_val: "ugCDhprtTUR",
        long_val: &[
            "user",
            "group",
            "close-from",
            "chdir",
            "host",
            "prompt",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "chroot",
        ],
        short_stop: "lveKV",
        long_stop: &[
            "list",
            "validate",
            "edit",
            "version",
            "help",
            "remove-timestamp",
        ],
        assignments: true,
        ..NO_OPTS
    },
    Spec {
        names: &["doas"],
        short_val: "uC",
        short_stop: "L",
        ..NO_OPTS
    },
    Spec {
        names: &["env"],
        short_val: "uCP",
        long_val: &["unset", "chdir"],
        long_stop: &["help", "version"],
        assignments: true,
        ..NO_OPTS
    },
    Spec {
        names: &["nice"],
        short_val: "n",
        long_val: &["adjustment"],
        ..NO_OPTS
    },
    Spec {
        names: &["nohup", "builtin", "setsid", "unbuffer", "pkexec"],
        long_val: &["user"],
        ..NO_OPTS
    },
    Spec {
        names: &["timeout"],
        short_val: "sk",
        long_val: &["signal", "kill-after"],
        positional: 1,
        ..NO_OPTS
    },
    Spec {
        names: &["time"],
        short_val: "fo",
        long_val: &["format", "output"],
        ..NO_OPTS
    },
    Spec {
        names: &["xargs"],
        short_val: "adEILnPs",
        long_val: &[
            "arg-file",
            "delimiter",
            "eof",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        long_stop: &["help", "version", "show-limits"],
        ..NO_OPTS
    },
    Spec {
        names: &["command"],
        short_stop: "vV",
        ..NO_OPTS
    },
    Spec {
        names: &["exec"],
        short_val: "a",
        ..NO_OPTS
    },
    Spec {
        names: &["stdbuf"],
        short_val: "ioe",
        long_val: &["input", "output", "error"],
        ..NO_OPTS
    },
    Spec {
        names: &["ionice"],
        short_val: "cn",
        long_val: &["class", "classdata"],
        short_stop: "pPu",
        long_stop: &["pid", "pgid", "uid"],
        ..NO_OPTS
    },
    Spec {
        names: &["chroot"],
        long_val: &["userspec", "groups"],
        positional: 1,
        ..NO_OPTS
    },
    Spec {
        names: &["caffeinate"],
        short_val: "wt",
        ..NO_OPTS
    },
    Spec {
        names: &["proxychains", "proxychains4", "torsocks", "tsocks"],
        short_val: "f",
        ..NO_OPTS
    },
    Spec {
        names: &["busybox"],
        long_stop: &["list", "list-full", "install", "help"],
        ..NO_OPTS
    },
];

/// How `program`'s options are read, when it is one of the [`WRAPPERS`].
fn spec_for(program: &str) -> Option<&'static Spec> {
    WRAPPERS.iter().find(|spec| spec.names.contains(&program))
}

/// Index of the wrapped command's first word, or `None` when nothing is run.
fn command_start(argv: &[String], spec: &Spec) -> Option<usize> {
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            if spec.long_stop.contains(&name) {
                return None;
            }
            i += if !has_value && spec.long_val.contains(&name) {
                2
            } else {
                1
            };
            continue;
        }
        if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            let mut takes_next = false;
            for (j, c) in cluster.char_indices() {
                if spec.short_stop.contains(c) {
                    return None;
                }
                if spec.short_val.contains(c) {
                    // The value is attached (`-uroot`) or the next word.
                    takes_next = j + c.len_utf8() == cluster.len();
                    break;
                }
            }
            i += if takes_next { 2 } else { 1 };
            continue;
        }
        if arg == "-" && spec.assignments {
            // `env -` is `env -i`.
            i += 1;
            continue;
        }
        break;
    }
    i += spec.positional;
    if spec.assignments {
        while argv.get(i).is_some_and(|a| is_assignment(a)) {
            i += 1;
        }
    }
    (i < argv.len()).then_some(i)
}

/// `NAME=value` as a shell assignment word.
pub fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Peels one wrapper layer from `argv`.
pub fn peel(argv: &[String], dialect: Dialect) -> Peel {
    let Some(first) = argv.first() else {
        return Peel::Done;
    };
    let program = program_name(first);
    if dialect == Dialect::PowerShell
        && let Some(p) = peel_powershell(argv, &program)
    {
        return p;
    }
    if let Some(spec) = spec_for(&program) {
        if program == "env"
            && let Some(script) = env_split_string(argv)
        {
            return Peel::Script {
                wrapper: "env -S".to_string(),
                script,
                dialect: Dialect::Posix,
            };
        }
        return match command_start(argv, spec) {
            Some(i) => Peel::Command {
                wrapper: program,
                argv: argv.get(i..).unwrap_or_default().to_vec(),
            },
            None => Peel::Done,
        };
    }
    if is_shell(&program) {
        return match shell_args(argv).command {
            Some(script) => Peel::Script {
                wrapper: format!("{program} -c"),
                script,
                dialect: Dialect::Posix,
            },
            None => Peel::Done,
        };
    }
    match program.as_str() {
        "eval" if argv.len() > 1 => Peel::Script {
            wrapper: "eval".to_string(),
            script: argv.get(1..).unwrap_or_default().join(" "),
            dialect: Dialect::Posix,
        },
        "watch" => peel_watch(argv),
        "su" | "runuser" => peel_su(argv, &program),
        "flock" => peel_flock(argv),
        "pwsh" | "powershell" | "pwsh-preview" => peel_pwsh(argv, &program),
        _ => Peel::Done,
    }
}

/// `env -S 'cmd args'` / `--split-string=…`: the string is split into the command.
fn env_split_string(argv: &[String]) -> Option<String> {
    let mut words = argv.iter().skip(1);
    while let Some(arg) = words.next() {
        if let Some(v) = arg.strip_prefix("--split-string=") {
            return Some(join_rest(v, words));
        }
        if arg == "--split-string" || arg == "-S" {
            let v = words.next()?;
            return Some(join_rest(v, words));
        }
        if let Some(v) = arg.strip_prefix("-S") {
            return Some(join_rest(v, words));
        }
        if !arg.starts_with('-') && !is_assignment(arg) {
            return None;
        }
    }
    None
}

fn join_rest<'a>(first: &str, rest: impl Iterator<Item = &'a String>) -> String {
    let mut out = first.to_string();
    for w in rest {
        out.push(' ');
        out.push_str(&crate::command::quote_for_display(w));
    }
    out
}

/// `watch [opts] cmd…` runs `sh -c "cmd …"` unless `-x`.
fn peel_watch(argv: &[String]) -> Peel {
    let mut i = 1;
    let mut exec = false;
    while let Some(arg) = argv.get(i) {
        match arg.as_str() {
            "--" => {
                i += 1;
                break;
            }
            "-x" | "--exec" => exec = true,
            "-n" | "--interval" | "-q" | "--equexit" => i += 1,
            a if a.starts_with("--") => {}
            a if a.starts_with('-') && a.len() > 1 => {
                if a.contains('x') {
                    exec = true;
                }
                if a.ends_with('n') {
                    i += 1;
                }
            }
            _ => break,
        }
        i += 1;
    }
    let rest = argv.get(i..).unwrap_or_default();
    if rest.is_empty() {
        return Peel::Done;
    }
    if exec {
        Peel::Command {
            wrapper: "watch".to_string(),
            argv: rest.to_vec(),
        }
    } else {
        Peel::Script {
            wrapper: "watch".to_string(),
            script: rest.join(" "),
            dialect: Dialect::Posix,
        }
    }
}

/// `su [-] [user] -c 'cmd'`, `runuser -u user -- cmd`.
fn peel_su(argv: &[String], program: &str) -> Peel {
    let mut words = argv.iter().skip(1);
    while let Some(arg) = words.next() {
        let script = if arg == "-c" || arg == "--command" {
            words.next().cloned()
        } else {
            arg.strip_prefix("--command=").map(str::to_string)
        };
        if let Some(script) = script {
            return Peel::Script {
                wrapper: format!("{program} -c"),
                script,
                dialect: Dialect::Posix,
            };
        }
    }
    if program == "runuser" && argv.iter().any(|a| a == "-u" || a.starts_with("--user")) {
        let spec = Spec {
            short_val: "ugGsw",
            long_val: &[
                "user",
                "group",
                "supp-group",
                "shell",
                "whitelist-environment",
            ],
            ..NO_OPTS
        };
        if let Some(i) = command_start(argv, &spec) {
            return Peel::Command {
                wrapper: "runuser".to_string(),
                argv: argv.get(i..).unwrap_or_default().to_vec(),
            };
        }
    }
    Peel::Done
}

/// `flock [opts] FILE cmd…` or `flock [opts] FILE -c 'cmd'`.
fn peel_flock(argv: &[String]) -> Peel {
    let spec = Spec {
        short_val: "wE",
        long_val: &["timeout", "wait", "conflict-exit-code"],
        positional: 1,
        ..NO_OPTS
    };
    let Some(i) = command_start(argv, &spec) else {
        return Peel::Done;
    };
    let rest = argv.get(i..).unwrap_or_default();
    match rest.first().map(String::as_str) {
        Some("-c" | "--command") => match rest.get(1) {
            Some(script) => Peel::Script {
                wrapper: "flock -c".to_string(),
                script: script.clone(),
                dialect: Dialect::Posix,
            },
            None => Peel::Done,
        },
        _ => Peel::Command {
            wrapper: "flock".to_string(),
            argv: rest.to_vec(),
        },
    }
}

#[cfg(test)]
#[path = "unwrap_tests.rs"]
mod tests;
