//! `Diagnostics` from real `cargo build` / `check` / `clippy`, `rustc`, `go build` and `go vet`
//! runs on projects with bugs put at known places: the parsed file, line, column, code,
//! severity and counts must be where the bugs are, and the human and JSON formats must agree.

// Test helpers may fail loudly (clippy's allow-unwrap-in-tests covers `#[test]` fns only).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use agentty_parse::Output;
use serde_json::Value;

use super::common::{command, parse, stage};
use super::needs;

/// Runs `argv` in `dir` with a fixed locale and zone; stdout, stderr, exit code.
fn run(dir: &Path, argv: &[&str], env: &[(&str, String)]) -> (String, String, Option<i32>) {
    let mut command = command(argv[0]);
    command.args(&argv[1..]).current_dir(dir);
    // CI may ask for `-D warnings`: the warnings here must stay warnings.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "GOFLAGS",
    ] {
        command.env_remove(var);
    }
    command.env("CARGO_TERM_COLOR", "never");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (text(out.stdout), text(out.stderr), out.status.code())
}

/// What the parser makes of the run of `argv`.
fn parsed(argv: &[&str], (stdout, stderr, exit): &(String, String, Option<i32>)) -> Value {
    let out = Output {
        stdout,
        stderr,
        exit_code: *exit,
    };
    let parsed = parse(&[stage(argv)], &out)
        .unwrap_or_else(|why| panic!("{argv:?} refused: {why}\n{stderr}{stdout}"));
    assert_eq!(parsed.type_name, "Diagnostics");
    parsed.data
}

type Fact = (String, Option<String>, String, u64, u64);

/// (severity, code, file, line, column) of each record.
fn facts(data: &Value) -> Vec<Fact> {
    let records = data["diagnostics"].as_array().unwrap();
    let fact = |d: &Value| {
        (
            d["severity"].as_str().unwrap().to_owned(),
            d["code"].as_str().map(str::to_owned),
            d["file"].as_str().unwrap_or("?").to_owned(),
            d["line"].as_u64().unwrap_or(0),
            d["column"].as_u64().unwrap_or(0),
        )
    };
    records.iter().map(fact).collect()
}

/// The 1-based line and column where `needle` first occurs in `source`.
fn position(source: &str, needle: &str) -> (u64, u64) {
    let (n, line) = source
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap();
    ((n + 1) as u64, (line.find(needle).unwrap() + 1) as u64)
}

fn fact(severity: &str, code: Option<&str>, file: &str, (line, column): (u64, u64)) -> Fact {
    (
        severity.into(),
        code.map(str::to_owned),
        file.into(),
        line,
        column,
    )
}

const LIB: &str = "pub fn add(a: u32, b: u32) -> u32 {\n    let unused = 3;\n    a + b\n}\n";
const MAIN: &str =
    "fn main() {\n    let total: String = demo::add(1, 2);\n    println!(\"{total}\");\n}\n";

/// A cargo package `demo` in `dir`: a lib with `lib`, a bin with `main`. `[workspace]` makes it
/// its own root, so a stray Cargo.toml above the temp dir is not taken for its workspace.
fn package(dir: &Path, lib: &str, main: &str) {
    let manifest =
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n";
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
}

#[test]
fn cargo_human_json_and_short_agree_with_the_planted_bugs() {
    let tmp = tempfile::TempDir::new().unwrap();
    package(tmp.path(), LIB, MAIN);
    let env = [(
        "CARGO_TARGET_DIR",
        tmp.path().join("target").display().to_string(),
    )];
    let expected = [
        fact(
            "warning",
            Some("unused_variables"),
            "src/lib.rs",
            position(LIB, "unused"),
        ),
        fact(
            "error",
            Some("E0308"),
            "src/main.rs",
            position(MAIN, "demo::add"),
        ),
    ];

    let argv = ["cargo", "build"];
    let out = run(tmp.path(), &argv, &env);
    assert_ne!(out.2, Some(0), "the build must fail");
    let human = parsed(&argv, &out);
    assert_eq!(facts(&human), expected);
    assert_eq!(
        (&human["summary"]["errors"], &human["summary"]["warnings"]),
        (&1.into(), &1.into())
    );
    let line = human["summary"]["line"].as_str().unwrap();
    assert!(line.contains("could not compile `demo`"), "{line}");
    assert_eq!(human["diagnostics"][1]["message"], "mismatched types");

    // Cargo replays the lib's cached warning, so the JSON run sees the same two messages.
    let argv = ["cargo", "build", "--message-format=json"];
    let json = parsed(&argv, &run(tmp.path(), &argv, &env));
    assert_eq!(facts(&json), expected);
    assert_eq!(json["summary"]["errors"], 1);
    assert_eq!(json["summary"]["warnings"], 1);

    // Short: same places; rustc names no lint in this format.
    let argv = ["cargo", "check", "--message-format=short"];
    let short = parsed(&argv, &run(tmp.path(), &argv, &env));
    let no_lint = |mut f: Vec<Fact>| {
        f.iter_mut()
            .filter(|x| x.0 == "warning")
            .for_each(|x| x.1 = None);
        f
    };
    assert_eq!(facts(&short), no_lint(expected.to_vec()));
}

#[test]
fn a_clean_cargo_build_has_no_records() {
    let tmp = tempfile::TempDir::new().unwrap();
    package(
        tmp.path(),
        "pub fn one() -> u32 {\n    1\n}\n",
        "fn main() {\n    println!(\"{}\", demo::one());\n}\n",
    );
    let env = [(
        "CARGO_TARGET_DIR",
        tmp.path().join("target").display().to_string(),
    )];
    for argv in [
        &["cargo", "build"][..],
        &["cargo", "build", "--message-format=json"],
    ] {
        let out = run(tmp.path(), argv, &env);
        assert_eq!(out.2, Some(0), "{}", out.1);
        let data = parsed(argv, &out);
        assert_eq!(data["diagnostics"], Value::Array(vec![]), "{argv:?}");
        assert_eq!(data["summary"]["errors"], 0);
        assert_eq!(data["summary"]["warnings"], 0);
    }
}

#[test]
fn clippy_lints_are_named_in_both_formats() {
    needs::clippy();
    let tmp = tempfile::TempDir::new().unwrap();
    let lib = "pub fn one() -> u32 {\n    return 1;\n}\n";
    package(tmp.path(), lib, "fn main() {}\n");
    let env = [(
        "CARGO_TARGET_DIR",
        tmp.path().join("target").display().to_string(),
    )];
    let expected = [fact(
        "warning",
        Some("clippy::needless_return"),
        "src/lib.rs",
        position(lib, "return"),
    )];
    for argv in [
        &["cargo", "clippy", "-q"][..],
        &["cargo", "clippy", "--message-format=json"],
    ] {
        let data = parsed(argv, &run(tmp.path(), argv, &env));
        assert_eq!(facts(&data), expected, "{argv:?}");
    }
}

#[test]
fn rustc_on_one_file() {
    let tmp = tempfile::TempDir::new().unwrap();
    let source = "use std::collections::HashMap;\n\nfn main() {\n    let n: u8 = \"one\";\n}\n";
    std::fs::write(tmp.path().join("main.rs"), source).unwrap();
    // A borrow error: its JSON lists a secondary span (the move) before the primary one.
    let moved =
        "fn main() {\n    let s = String::new();\n    let t = s;\n    println!(\"{s}{t}\");\n}\n";
    std::fs::write(tmp.path().join("moved.rs"), moved).unwrap();
    let cases = [
        (
            "main.rs",
            vec![
                fact(
                    "warning",
                    Some("unused_imports"),
                    "main.rs",
                    position(source, "std::collections"),
                ),
                fact(
                    "error",
                    Some("E0308"),
                    "main.rs",
                    position(source, "\"one\""),
                ),
            ],
        ),
        (
            "moved.rs",
            vec![fact(
                "error",
                Some("E0382"),
                "moved.rs",
                position(moved, "{s}"),
            )],
        ),
    ];
    for (file, expected) in cases {
        for argv in [
            &["rustc", file][..],
            &["rustc", "--error-format=json", file],
        ] {
            let out = run(tmp.path(), argv, &[]);
            assert_ne!(out.2, Some(0));
            let data = parsed(argv, &out);
            let mut expected = expected.clone();
            // rustc points at the `s` inside `{s}`.
            if file == "moved.rs" {
                expected[0].4 += 1;
            }
            assert_eq!(facts(&data), expected, "{argv:?}");
            let line = data["summary"]["line"].as_str().unwrap();
            assert!(
                line.starts_with("error: aborting due to 1 previous error"),
                "{line}"
            );
        }
    }
}

const GO_BAD: &str = "package bad\n\nfunc F() int {\n\tunused := 1\n\treturn 2\n}\n";
const GO_MAIN: &str = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tname := \"bob\"\n\tfmt.Printf(\"%d\\n\", name)\n}\n";

/// A module with a package `bad` that does not compile (an unused variable) and a main
/// package that compiles but has a Printf format mismatch for vet; the environment to run go in.
fn go_module(dir: &Path) -> Vec<(&'static str, String)> {
    std::fs::create_dir_all(dir.join("bad")).unwrap();
    // An old `go` line: no toolchain download, no "module requires" note on an older go.
    std::fs::write(dir.join("go.mod"), "module example.com/m\n\ngo 1.16\n").unwrap();
    std::fs::write(dir.join("bad/bad.go"), GO_BAD).unwrap();
    std::fs::write(dir.join("main.go"), GO_MAIN).unwrap();
    let inside = |name: &str| dir.join(name).display().to_string();
    vec![
        ("GOCACHE", inside(".cache")),
        ("GOPATH", inside(".gopath")),
        ("GOTOOLCHAIN", "local".into()),
        ("GOPROXY", "off".into()),
    ]
}

fn go(dir: &Path, env: &[(&str, String)], argv: &[&str]) -> Value {
    parsed(argv, &run(dir, argv, env))
}

#[test]
#[ignore = "needs go: scripts/test runs it where go is installed"]
fn go_build_and_vet_find_the_planted_bugs_needs_go() {
    needs::go();
    let tmp = tempfile::TempDir::new().unwrap();
    let env = go_module(tmp.path());
    let unused = position(GO_BAD, "unused");
    let printf = position(GO_MAIN, "fmt.Printf");
    let at = |d: &Value| {
        (
            d["file"].as_str().unwrap().to_owned(),
            d["line"].as_u64().unwrap(),
            d["column"].as_u64().unwrap(),
        )
    };

    let build = go(tmp.path(), &env, &["go", "build", "./..."]);
    assert_eq!(build["summary"]["errors"], 1, "{build}");
    let record = &build["diagnostics"][0];
    let (file, line, column) = at(record);
    assert!(file.ends_with("bad/bad.go"), "{file}");
    assert_eq!((line, column), unused);
    let message = record["message"].as_str().unwrap();
    assert!(
        message.contains("unused") && message.contains("not used"),
        "{message}"
    );

    let vet = go(tmp.path(), &env, &["go", "vet", "."]);
    assert_eq!(vet["summary"]["errors"], 1, "{vet}");
    let record = &vet["diagnostics"][0];
    let (file, line, column) = at(record);
    assert!(file.ends_with("main.go"), "{file}");
    assert_eq!((line, column), printf);
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("Printf format %d has arg name"),
        "{record}"
    );

    // `bad` does not type-check: vet says so as `vet: bad/bad.go:...`, the prefix dropped.
    let both = go(tmp.path(), &env, &["go", "vet", "./..."]);
    let mut places: Vec<(String, u64, u64)> = both["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(at)
        .collect();
    places
        .iter_mut()
        .for_each(|p| p.0 = p.0.trim_start_matches("./").to_owned());
    places.sort();
    let expected = [
        ("bad/bad.go".to_owned(), unused.0, unused.1),
        ("main.go".to_owned(), printf.0, printf.1),
    ];
    assert_eq!(places, expected, "{both}");

    let clean = go(tmp.path(), &env, &["go", "build", "-o", "app", "."]);
    assert_eq!(clean["diagnostics"], Value::Array(vec![]));
}
