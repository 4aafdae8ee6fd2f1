//! `cargo test` and `cargo nextest run` as `TestReport`s: which command lines are read (cargo's
//! own options skipped, then the harness's flags checked), and which reader gets the output.
//! `libtest` and `nextest` each read one format; `shared` holds what both build a report from:
//! the counts, the failures with their messages, and the reading of a run in which nothing ran
//! because the build failed (its messages read by the diagnostics parser, the outcome `error`).

use crate::{Parser, Stage};

mod libtest;
mod nextest;
mod shared;

use libtest::Libtest;
use nextest::Nextest;

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    match stage.program.as_str() {
        "cargo" => {
            let (sub, rest) = skip_cargo_options(&stage.args)?.split_first()?;
            match sub.as_str() {
                "test" | "t" => libtest_args_known(rest).then(|| Box::new(Libtest) as _),
                "nextest" => nextest_run(rest),
                _ => None,
            }
        }
        "cargo-nextest" => {
            let (sub, rest) = stage.args.split_first()?;
            (sub == "nextest").then(|| nextest_run(rest)).flatten()
        }
        _ => None,
    }
}

/// The arguments after cargo's own options (`+nightly`, `--offline`, `-C dir`), which change
/// nothing in the output.
fn skip_cargo_options(args: &[String]) -> Option<&[String]> {
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        let arg = first.as_str();
        if arg.starts_with('+')
            || matches!(
                arg,
                "--offline"
                    | "--locked"
                    | "--frozen"
                    | "-q"
                    | "--quiet"
                    | "-v"
                    | "-vv"
                    | "--verbose"
            )
            || arg.starts_with("--color=")
            || arg.starts_with("--config=")
        {
            rest = tail;
        } else if matches!(arg, "--color" | "--config" | "-C" | "-Z") {
            rest = tail.get(1..)?;
        } else if arg.starts_with('-') {
            return None;
        } else {
            return Some(rest);
        }
    }
    None
}

/// `cargo test` arguments whose output is libtest's human format. Refused: what prints no
/// results (`--no-run`, `--list`, `--help`), machine formats (`--message-format`, `--format
/// json`, `-Z`), benchmarks (`--bench` after `--`) and `--logfile`.
fn libtest_args_known(args: &[String]) -> bool {
    let (cargo, harness) = match args.iter().position(|a| a == "--") {
        Some(split) => (
            args.get(..split).unwrap_or(&[]),
            args.get(split + 1..).unwrap_or(&[]),
        ),
        None => (args, &[][..]),
    };
    let cargo_ok = !cargo.iter().any(|a| {
        matches!(
            a.as_str(),
            "--no-run" | "-h" | "--help" | "--unit-graph" | "--build-plan"
        ) || a.starts_with("--message-format")
    });
    let mut previous = "";
    let harness_ok = harness.iter().all(|a| {
        let arg = a.as_str();
        let machine_format = (previous == "--format" && arg != "pretty" && arg != "terse")
            || (arg.starts_with("--format=")
                && arg != "--format=pretty"
                && arg != "--format=terse");
        previous = arg;
        !machine_format
            && !matches!(arg, "--list" | "--bench" | "-h" | "--help")
            && !arg.starts_with("--logfile")
            && !arg.starts_with("-Z")
    });
    cargo_ok && harness_ok
}

/// `nextest run` with its human output; `--message-format` (libtest-json) and stress runs
/// (counted in iterations, not tests) are refused.
fn nextest_run(args: &[String]) -> Option<Box<dyn Parser>> {
    let (sub, rest) = args.split_first()?;
    let known = sub == "run"
        && !rest.iter().any(|a| {
            matches!(a.as_str(), "-h" | "--help" | "--no-run")
                || a.starts_with("--message-format")
                || a.starts_with("--stress-")
        });
    known.then(|| Box::new(Nextest) as _)
}

#[cfg(test)]
#[path = "cargo_tests.rs"]
mod tests;
