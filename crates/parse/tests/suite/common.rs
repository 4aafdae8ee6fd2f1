//! What the integration tests share, once: the clock, a command run the way every test reads
//! output (UTC, C locale), a command line made into a stage, a run parsed as the server would
//! parse it, the saved fixtures, and the node tools of `tests/parse-tools`.

// Helpers outside `#[test]` functions unwrap too: a failed setup is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentty_parse::{Context, Output, Parsed, Stage};

/// Now, as the server would pass it: the real programs print today's dates.
pub fn now() -> Context {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Context::utc_at(i64::try_from(secs).unwrap()).unwrap()
}

/// `program`, in UTC and the C locale, so dates and messages read the same on every machine.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    command.env("TZ", "UTC").env("LC_ALL", "C");
    command
}

/// The stage of `argv`.
pub fn stage<S: AsRef<str>>(argv: &[S]) -> Stage {
    let words: Vec<String> = argv.iter().map(|w| w.as_ref().to_owned()).collect();
    Stage::from_argv(&words).unwrap()
}

/// `line`'s words as one stage (fixture and filter lines need no quoting).
pub fn stage_of(line: &str) -> Stage {
    stage(&line.split_whitespace().collect::<Vec<_>>())
}

/// `output` parsed as the output of the pipeline `stages`, as the server would parse it; `Err`
/// says why the pipeline is not recognised or why the parser refused.
pub fn parse(stages: &[Stage], output: &Output<'_>) -> Result<Parsed, String> {
    agentty_parse::recognize(stages)
        .map_err(|e| e.0)?
        .parse(output, &now())
}

/// Parses every saved real output under `tests/fixtures/<format>` (stderr and exit code
/// included), each of which must parse; the results, with each fixture's `.cmd` path.
pub fn parsed_fixtures(format: &str) -> Vec<(PathBuf, Parsed)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format);
    let mut parsed = Vec::new();
    for file in std::fs::read_dir(&dir).unwrap() {
        let cmd = file.unwrap().path();
        if cmd.extension().is_none_or(|e| e != "cmd") {
            continue;
        }
        let read = |ext: &str| std::fs::read_to_string(cmd.with_extension(ext)).unwrap_or_default();
        let (stdout, stderr) = (read("out"), read("err"));
        let output = Output {
            stdout: &stdout,
            stderr: &stderr,
            exit_code: read("exit").trim().parse().ok().or(Some(0)),
        };
        let result = parse(&[stage_of(&read("cmd"))], &output);
        assert!(result.is_ok(), "{}: {result:?}", cmd.display());
        parsed.push((cmd, result.unwrap()));
    }
    parsed
}

/// `node_modules` of the workspace's `tests/parse-tools` (tsc, eslint, jest, vitest).
pub fn node_modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/parse-tools/node_modules")
}
