use super::*;
use crate::testutil::{FIXTURES, ctx, output, parse_with, saved_run, stage};
use serde_json::{Value, json};

pub(super) fn run(
    cmd: &str,
    stdout: &str,
    stderr: &str,
    exit: Option<i32>,
    filtered: bool,
) -> Result<Value, String> {
    let out = output(stdout, stderr, exit);
    parse_with(recognize, &stage(cmd), &out, &ctx(), filtered)
}

/// A saved real run (see [`saved_run`]), parsed.
pub(super) fn fixture(case: &str) -> Result<Value, String> {
    let saved = saved_run(case);
    run(
        &saved.line,
        &saved.stdout,
        &saved.stderr,
        saved.exit_code,
        false,
    )
}

/// severity, code, file, line, column, message of each record.
pub(super) fn facts(data: &Value) -> Vec<(String, Value, Value, Value, Value, String)> {
    let records = data["diagnostics"].as_array().unwrap();
    records
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap().to_owned();
            (
                s("severity"),
                d["code"].clone(),
                d["file"].clone(),
                d["line"].clone(),
                d["column"].clone(),
                s("message"),
            )
        })
        .collect()
}

pub(super) fn fact(
    severity: &str,
    code: Value,
    file: &str,
    line: u64,
    column: u64,
    message: &str,
) -> (String, Value, Value, Value, Value, String) {
    (
        severity.into(),
        code,
        json!(file),
        json!(line),
        json!(column),
        message.into(),
    )
}

#[test]
fn recognises_build_check_clippy_and_rustc() {
    for cmd in [
        "cargo build",
        "cargo b",
        "cargo c",
        "cargo +nightly -q check --workspace --all-targets",
        "cargo build --release -p agentty-parse --features a,b",
        "cargo build -pfoo -j4 --target-dir /tmp/t --message-format short",
        "cargo check --message-format=json-diagnostic-short",
        "cargo clippy --all-targets -- -D warnings -W clippy::pedantic",
        "cargo clippy -v --no-deps -- -Dwarnings",
        "rustc main.rs",
        "rustc --edition 2021 -O -o out -Copt-level=3 src/main.rs",
        "rustc --error-format=json --crate-type lib lib.rs",
    ] {
        assert!(recognize(&stage(cmd)).is_some(), "{cmd}");
    }
    for cmd in [
        "cargo test",
        "cargo nextest run",
        "cargo run",
        "cargo build -vv",
        "cargo -v build -v",
        "cargo clippy --fix",
        "cargo build --message-format=xml",
        "cargo build -- -D warnings",
        "cargo build --bogus",
        "cargo build -p",
        "rustc --version",
        "rustc --explain E0308",
        "rustc --print cfg main.rs",
        "rustc a.rs b.rs",
        "rustc --error-format=pretty-json main.rs",
        "rustc -",
    ] {
        assert!(recognize(&stage(cmd)).is_none(), "{cmd}");
    }
}

#[test]
fn human_build_with_a_warning_in_the_lib_and_an_error_in_the_bin() {
    let data = fixture("cargo-human/lib-warning-bin-error").unwrap();
    assert_eq!(data["tool"], "cargo");
    assert_eq!(
        facts(&data),
        [
            fact(
                "warning",
                json!("unused_variables"),
                "src/lib.rs",
                2,
                9,
                "unused variable: `unused`"
            ),
            fact(
                "error",
                json!("E0308"),
                "src/main.rs",
                2,
                25,
                "mismatched types"
            ),
        ]
    );
    assert_eq!(data["summary"]["errors"], 1);
    assert_eq!(data["summary"]["warnings"], 1);
    assert_eq!(
        data["summary"]["line"],
        "warning: `demo` (lib) generated 1 warning (run `cargo fix --lib -p demo` to apply 1 suggestion)\n\
         error: could not compile `demo` (bin \"demo\") due to 1 previous error"
    );
    assert_eq!(
        data["diagnostics"][1]["notes"],
        json!(["help: try using a conversion method"])
    );
}

#[test]
fn a_clean_build_has_no_records() {
    for case in ["cargo-human/clean-release", "cargo-json/clean"] {
        let data = fixture(case).unwrap();
        assert_eq!(data["diagnostics"], json!([]), "{case}");
        assert_eq!(
            data["summary"],
            json!({"errors": 0, "warnings": 0}),
            "{case}"
        );
    }
    let empty = run("cargo build -q", "", "", Some(0), false).unwrap();
    assert_eq!(empty["diagnostics"], json!([]));
}

#[test]
fn rustc_human_and_json() {
    let human = fixture("rustc/borrow").unwrap();
    assert_eq!(human["tool"], "rustc");
    assert_eq!(
        facts(&human),
        [
            fact(
                "warning",
                json!("unused_imports"),
                "main.rs",
                1,
                5,
                "unused import: `std::collections::HashMap`"
            ),
            fact(
                "error",
                json!("E0382"),
                "main.rs",
                7,
                16,
                "borrow of moved value: `s`"
            ),
            fact(
                "warning",
                json!("unused_variables"),
                "main.rs",
                4,
                9,
                "unused variable: `count`"
            ),
        ]
    );
    assert_eq!(
        human["summary"]["line"],
        "error: aborting due to 1 previous error; 2 warnings emitted"
    );
    let json = fixture("rustc/json").unwrap();
    assert_eq!(facts(&json), facts(&human));
    assert_eq!(json["summary"], human["summary"]);
    let warned = fixture("rustc/warnings").unwrap();
    assert_eq!(
        warned["summary"],
        json!({"errors": 0, "warnings": 1, "line": "warning: 1 warning emitted"})
    );
}

#[test]
fn odd_names_and_long_notes() {
    let long = "é".repeat(2000);
    let stderr = format!(
        "error[E0425]: cannot find value `ü` in this scope\n --> src/my dir:x/naïve file.rs:10:3\n  |\n10 |     ü\n  |     ^\n  |\n  = note: {long}\n\n"
    );
    let data = run("cargo build", "", &stderr, Some(101), false).unwrap();
    let record = &data["diagnostics"][0];
    assert_eq!(record["file"], "src/my dir:x/naïve file.rs");
    assert_eq!(
        (record["line"].as_u64(), record["column"].as_u64()),
        (Some(10), Some(3))
    );
    let note = record["notes"][0].as_str().unwrap();
    assert_eq!(note.chars().count(), 501);
    assert!(note.ends_with('…'));
}

#[test]
fn refuses_what_is_not_rustc_output() {
    let garbage = run("cargo build", "", "hello world\n", Some(0), false);
    assert_eq!(
        garbage,
        Err("line 1 is not in rustc's message format".into())
    );
    let panic = "   Compiling x v0.1.0\nthread 'rustc' panicked at src/x.rs:1:1\n";
    assert!(run("cargo build", "", panic, Some(101), false).is_err());
    let silent = run(
        "cargo build",
        "",
        "   Compiling x v0.1.0 (/x)\n",
        Some(101),
        false,
    );
    assert_eq!(
        silent,
        Err("`cargo` failed without a compiler error: ".into())
    );
    let bad_json = run(
        "cargo build --message-format=json",
        "{\"reason\":\n",
        "",
        Some(0),
        false,
    );
    assert_eq!(bad_json, Err("line 1: not a JSON message".into()));
    let level =
        "{\"reason\":\"compiler-message\",\"message\":{\"level\":\"shout\",\"message\":\"x\"}}\n";
    assert!(
        run(
            "cargo build --message-format=json",
            level,
            "",
            Some(0),
            false
        )
        .is_err()
    );
}

#[test]
fn filtered_output() {
    // `cargo build 2>&1 | grep -A2 '^error'`: everything on stdout, groups split by `--`.
    let grep = "error[E0308]: mismatched types\n --> src/main.rs:2:25\n  |\n--\nerror: could not compile `demo` (bin \"demo\") due to 1 previous error\n";
    let data = run("cargo build", grep, "", Some(0), true).unwrap();
    assert_eq!(
        facts(&data),
        [fact(
            "error",
            json!("E0308"),
            "src/main.rs",
            2,
            25,
            "mismatched types"
        )]
    );
    // `| tail -1` of a clean build.
    let tail = run(
        "cargo build",
        "    Finished `dev` profile [unoptimized] target(s) in 0.1s\n",
        "",
        Some(0),
        true,
    );
    assert_eq!(tail.unwrap()["diagnostics"], json!([]));
    // `| grep -- -->`: nothing left to say what happened.
    let lost = run("cargo build", " --> src/main.rs:2:25\n", "", Some(0), true);
    assert!(lost.is_err());
    // A location line that does not follow a header is not taken.
    let stray = "warning: a\n\n --> src/x.rs:1:1\n";
    let data = run("cargo check", "", stray, Some(0), true).unwrap();
    assert_eq!(data["diagnostics"][0].get("file"), None);
}

#[test]
fn human_diagnostics_for_the_test_runner() {
    let stderr =
        std::fs::read_to_string(format!("{FIXTURES}/cargo-human/lib-warning-bin-error.err"))
            .unwrap();
    let records = human_diagnostics(&stderr);
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].code.as_deref(), Some("E0308"));
    let test_run = "   Compiling x v0.1.0\nerror[E0425]: cannot find value `y`\n --> src/lib.rs:3:5\n\nerror: could not compile `x` (lib test) due to 1 previous error\n";
    let records = human_diagnostics(test_run);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].line, Some(3));
    assert!(human_diagnostics("").is_empty());
}

#[test]
fn hostile_lines_do_not_panic() {
    let started = std::time::Instant::now();
    let colons = format!("error: {}\n", "a:1:2: ".repeat(200_000));
    assert!(run("cargo build", "", &colons, Some(101), false).is_ok());
    let short = format!("{}\n", "x:1:2: ".repeat(200_000));
    assert!(
        run(
            "cargo check --message-format=short",
            "",
            &short,
            Some(101),
            false
        )
        .is_err()
    );
    let deep = format!("{}\n", "[".repeat(100_000));
    assert!(
        run(
            "cargo build --message-format=json",
            &deep.replacen('[', "{", 1),
            "",
            None,
            false
        )
        .is_err()
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    for text in [
        "error",
        "error[",
        "error[]: x",
        "warning[E1]:",
        " --> ",
        "  = ",
        "Caused by:",
        "     Finished",
        "{}",
        "{\"reason\":1}",
    ] {
        let _ = run(
            "cargo build --message-format=json",
            text,
            text,
            Some(1),
            true,
        );
        let _ = run("rustc a.rs", text, text, None, false);
    }
}
