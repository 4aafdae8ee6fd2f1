use super::*;
use crate::testutil::{FIXTURES, stage};

#[test]
fn the_parse_description_names_every_types_commands() {
    let text = parse_param_description();
    for info in TYPES {
        assert!(
            text.contains(info.commands),
            "{}: `{}` missing from {text:?}",
            info.name,
            info.commands
        );
    }
    assert!(text.contains("agentty://schema/<Type>"), "{text}");
}

/// The server's `parse` parameter takes it as its schema description.
#[test]
fn the_parse_description_fits_a_schemars_attribute() {
    #[allow(dead_code)] // only its schema is read
    #[derive(schemars::JsonSchema)]
    struct Params {
        #[schemars(description = crate::parse_param_description())]
        parse: Option<bool>,
    }
    let schema = schemars::schema_for!(Params);
    assert_eq!(
        schema.as_value()["properties"]["parse"]["description"],
        parse_param_description()
    );
}

/// Lines next to the fixtures' that sit where two families meet: the same program with another
/// subcommand, options before it, a runner behind `npx`/`pnpm`.
const BORDER_LINES: &[&str] = &[
    "cargo t",
    "cargo b",
    "cargo c",
    "cargo --config x test",
    "cargo --config x build",
    "cargo -C dir clippy",
    "cargo +nightly -q check",
    "cargo -vv test",
    "cargo-nextest nextest run",
    "go test -v ./...",
    "go vet ./...",
    "go build -o /dev/null .",
    "npx jest",
    "npx -y tsc --noEmit",
    "npx eslint@9 .",
    "npx vitest run",
    "pnpm exec vitest run",
    "yarn jest",
    "python3 -m pytest",
    "rustc main.rs",
    "clang++ -c a.cc",
];

/// Which families take `line` (the types' names, in [`TYPES`] order).
fn takers(line: &str) -> Vec<&'static str> {
    let stage = stage(line);
    TYPES
        .iter()
        .filter(|t| (t.recognize)(&stage).is_some())
        .map(|t| t.name)
        .collect()
}

#[test]
fn no_command_is_taken_by_two_types() {
    let mut lines: Vec<String> = BORDER_LINES.iter().map(|l| (*l).to_owned()).collect();
    for format in std::fs::read_dir(FIXTURES).unwrap() {
        for file in std::fs::read_dir(format.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|x| x == "cmd") {
                lines.push(std::fs::read_to_string(path).unwrap());
            }
        }
    }
    assert!(lines.len() > 100, "only {} lines", lines.len());
    let mut taken = 0;
    for line in &lines {
        let takers = takers(line);
        assert!(
            takers.len() <= 1,
            "`{}` is taken by {takers:?}",
            line.trim()
        );
        taken += takers.len();
    }
    // The corpus reaches every family, so the check above says something of each.
    for info in TYPES {
        assert!(
            lines.iter().any(|l| takers(l) == [info.name]),
            "no line is taken by {}",
            info.name
        );
    }
    assert!(taken > 100, "only {taken} lines recognised");
}
