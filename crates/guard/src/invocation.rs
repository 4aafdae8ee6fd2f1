//! How shells and interpreters take their code: `sh -c CODE`, `sh FILE`, `sh` reading stdin,
//! `python -c CODE`, `node -e CODE`, `source FILE`, and the commands `find -exec` runs.
//!
//! Both the unwrapper (to re-parse `sh -c` bodies and heredocs fed to a shell) and the
//! download rule (`curl … | sh`, `sh <(curl …)`) need the same reading, so it lives here once.

use crate::command::SimpleCommand;
use crate::command::program_name;

/// POSIX shells whose `-c` runs a script.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "rbash", "fish", "csh", "tcsh",
    "posh", "ksh93", "oksh", "loksh",
];

/// Whether `program` (already resolved) is a POSIX-family shell.
pub fn is_shell(program: &str) -> bool {
    SHELLS.contains(&program)
}

/// How a POSIX shell was invoked.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ShellArgs {
    /// The `-c` script.
    pub command: Option<String>,
    /// A script file operand.
    pub script: Option<String>,
    /// Reads its script from stdin (`sh`, `sh -s`, `sh -`, `sh /dev/stdin`).
    pub stdin: bool,
}

/// Reads a shell's options the way `sh`/`bash`/`zsh`/`fish` do.
pub fn shell_args(argv: &[String]) -> ShellArgs {
    let mut out = ShellArgs::default();
    let mut command_mode = false;
    let mut i = 1;
    let mut options_done = false;
    while let Some(arg) = argv.get(i) {
        i += 1;
        if !options_done {
            match arg.as_str() {
                "--" | "-" => {
                    options_done = true;
                    continue;
                }
                "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file" | "-C"
                | "--init-command" => {
                    i += 1;
                    continue;
                }
                "--command" => {
                    out.command = argv.get(i).cloned();
                    return out;
                }
                a if a.starts_with("--command=") => {
                    out.command = a.strip_prefix("--command=").map(str::to_string);
                    return out;
                }
                a if a.starts_with("--") => continue,
                a if a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) => {
                    if a.starts_with('-') && a.contains('c') {
                        command_mode = true;
                    }
                    if a.contains('s') && a.starts_with('-') {
                        out.stdin = true;
                    }
                    if a.ends_with(['o', 'O']) {
                        // `-euxo pipefail`: the cluster's last option takes the next word.
                        i += 1;
                    }
                    continue;
                }
                _ => {}
            }
        }
        if command_mode {
            out.command = Some(arg.clone());
        } else if arg == "/dev/stdin" || arg == "-" {
            out.stdin = true;
        } else if !out.stdin {
            out.script = Some(arg.clone());
        }
        return out;
    }
    if !command_mode {
        out.stdin = true;
    }
    out
}

/// Whether `argv` is a shell that would read a script from stdin (and so from a heredoc).
pub fn shell_reads_stdin(argv: &[String]) -> bool {
    argv.first()
        .is_some_and(|a| is_shell(&program_name(a)) && shell_args(argv).stdin)
}

/// The commands `find … -exec CMD … ;` would run (also `-execdir`, `-ok`, `-okdir`).
pub fn find_exec(argv: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    if argv.first().map(|a| program_name(a)).as_deref() != Some("find") {
        return out;
    }
    let mut words = argv.iter().skip(1);
    while let Some(w) = words.next() {
        if matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let cmd: Vec<String> = words
                .by_ref()
                .take_while(|a| a.as_str() != ";" && a.as_str() != "+")
                .cloned()
                .collect();
            if !cmd.is_empty() {
                out.push(cmd);
            }
        }
    }
    out
}

fn args(c: &SimpleCommand) -> &[String] {
    c.argv.get(1..).unwrap_or_default()
}

/// Interpreters that run code: (program test, flags whose value is code, flags taking a value).
fn interpreter(program: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    if program.starts_with("python") || program.starts_with("pypy") {
        return Some((&["-c"], &["-W", "-X", "-m"]));
    }
    Some(match program {
        "perl" | "ruby" => (&["-e", "-E"], &["-I", "-M", "-r"]),
        "node" | "nodejs" | "bun" | "deno" => (
            &["-e", "--eval", "-p", "--print"],
            &["-r", "--require", "--import"],
        ),
        "php" => (&["-r", "-f"], &["-d", "-c"]),
        "lua" | "luajit" => (&["-e"], &["-l"]),
        _ => return None,
    })
}

/// Whether the command would execute code read from its stdin.
pub fn runs_stdin(c: &SimpleCommand) -> bool {
    let p = c.program.as_str();
    if is_shell(p) {
        return shell_args(&c.argv).stdin;
    }
    if matches!(p, "iex" | "invoke-expression") {
        return true;
    }
    if matches!(p, "pwsh" | "powershell") {
        return args(c).is_empty() || args(c).iter().any(|a| a == "-");
    }
    if matches!(p, "source" | ".") {
        return args(c)
            .first()
            .is_some_and(|a| matches!(a.as_str(), "/dev/stdin" | "-" | "/proc/self/fd/0"));
    }
    match code_arg(c) {
        Some(arg) => arg == "-" || arg == "/dev/stdin",
        None => interpreter(p).is_some() && !args(c).iter().any(|a| a == "-m"),
    }
}

/// The word holding the code an executor runs (`sh FILE`, `python -c CODE`, `source FILE`).
pub fn code_arg(c: &SimpleCommand) -> Option<&str> {
    let p = c.program.as_str();
    if is_shell(p) {
        let sa = shell_args(&c.argv);
        return args(c)
            .iter()
            .map(String::as_str)
            .find(|a| Some(*a) == sa.command.as_deref() || Some(*a) == sa.script.as_deref());
    }
    if matches!(p, "source" | "." | "eval" | "iex" | "invoke-expression") {
        return args(c).first().map(String::as_str);
    }
    let (code_flags, valued) = interpreter(p)?;
    let mut words = args(c).iter();
    while let Some(w) = words.next() {
        if code_flags.contains(&w.as_str()) {
            return words.next().map(String::as_str);
        }
        if valued.contains(&w.as_str()) {
            words.next();
            continue;
        }
        if w.starts_with('-') && w.len() > 1 {
            continue;
        }
        return Some(w.as_str());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<String> {
        words.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn shell_c_forms() {
        assert_eq!(
            shell_args(&v(&["bash", "-lc", "rm -rf /"]))
                .command
                .as_deref(),
            Some("rm -rf /")
        );
        assert_eq!(
            shell_args(&v(&["bash", "-o", "pipefail", "-c", "x"]))
                .command
                .as_deref(),
            Some("x")
        );
        assert!(shell_args(&v(&["bash"])).stdin);
        assert!(shell_args(&v(&["bash", "-s", "--", "a"])).stdin);
        assert!(!shell_args(&v(&["bash", "script.sh"])).stdin);
    }
}
