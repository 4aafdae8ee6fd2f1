use super::*;
use crate::testutil::{ctx, output, parse_with, saved_run};
use serde_json::{Value, json};

fn stage(cmd: &str) -> Stage {
    // `~` stands for a space inside one argument (`-ldflags=-s~-w`).
    let argv: Vec<String> = cmd.split(' ').map(|w| w.replace('~', " ")).collect();
    Stage::from_argv(&argv).unwrap()
}

fn run(cmd: &str, stdout: &str, stderr: &str, exit: Option<i32>) -> Result<Value, String> {
    run_filtered(cmd, stdout, stderr, exit, false)
}

fn run_filtered(
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
fn fixture(case: &str) -> Result<Value, String> {
    let saved = saved_run(case);
    run(&saved.line, &saved.stdout, &saved.stderr, saved.exit_code)
}

/// (file, line, column, message) of each record; all must be errors.
fn facts(data: &Value) -> Vec<(Value, Value, Value, String)> {
    let records = data["diagnostics"].as_array().unwrap();
    records
        .iter()
        .map(|d| {
            assert_eq!(d["severity"], "error", "{d}");
            (
                d["file"].clone(),
                d["line"].clone(),
                d["column"].clone(),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn at(file: &str, line: u64, column: u64, message: &str) -> (Value, Value, Value, String) {
    (json!(file), json!(line), json!(column), message.to_owned())
}

#[test]
fn recognises_build_and_vet() {
    for cmd in [
        "go build",
        "go build ./...",
        "go build -o bin/app -tags a,b -trimpath .",
        "go build --race -ldflags=-s~-w ./cmd/x",
        "go build -gcflags all=-N~-l .",
        "go build -gcflags=all=-N main.go",
        "go vet ./...",
        "go vet -printf=false -unusedresult.funcs=x ./...",
        "go vet -tags integration .",
    ] {
        assert!(recognize(&stage(cmd)).is_some(), "{cmd}");
    }
    for cmd in [
        "go",
        "go test ./...",
        "go run .",
        "go build -v ./...",
        "go build -x .",
        "go build -json .",
        "go build -gcflags=all=-N~-m .",
        "go build -ldflags=-v .",
        "go build -o",
        "go build -Unknown .",
        "go vet -json ./...",
        "go vet -c=2 ./...",
        "go vet -vettool=/bin/x ./...",
        "gofmt -l .",
    ] {
        assert!(recognize(&stage(cmd)).is_none(), "{cmd}");
    }
}

#[test]
fn build_errors_of_several_packages() {
    let data = fixture("go-build/errors").unwrap();
    assert_eq!(data["tool"], "go");
    assert_eq!(
        facts(&data),
        [
            at(
                "sub/sub.go",
                8,
                11,
                "cannot use 42 (untyped int constant) as string value in argument to F"
            ),
            at("./main.go", 5, 2, "imported and not used: \"os\""),
            at("./main.go", 9, 2, "count declared but not used"),
            at(
                "./main.go",
                10,
                20,
                "cannot use 3 (untyped int constant) as string value in variable declaration"
            ),
        ]
    );
    assert_eq!(data["summary"], json!({"errors": 4, "warnings": 0}));
}

#[test]
fn too_many_errors_is_the_summary() {
    let data = fixture("go-build/too-many").unwrap();
    assert_eq!(
        data["summary"],
        json!({"errors": 10, "warnings": 0, "line": "too many errors"})
    );
}

#[test]
fn continuation_lines_are_notes() {
    let data = fixture("go-build/missing-module").unwrap();
    let record = &data["diagnostics"][0];
    assert_eq!(record["file"], "main.go");
    assert_eq!(record["notes"], json!(["go get example.com/nothere"]));
}

#[test]
fn go_command_errors_have_no_file() {
    let data = fixture("go-build/no-module").unwrap();
    assert_eq!(
        facts(&data),
        [(
            Value::Null,
            Value::Null,
            Value::Null,
            "go: go.mod file not found in current directory or any parent directory; see 'go help modules'".to_owned()
        )]
    );
}

#[test]
fn clean_build_and_vet() {
    assert_eq!(fixture("go-build/clean").unwrap()["diagnostics"], json!([]));
    assert_eq!(
        run("go vet .", "", "", Some(0)).unwrap()["summary"],
        json!({"errors": 0, "warnings": 0})
    );
    let progress = "go: downloading example.com/x v1.0.0\n";
    assert_eq!(
        run("go build", "", progress, Some(0)).unwrap()["diagnostics"],
        json!([])
    );
}

#[test]
fn vet_findings_and_type_errors() {
    let data = fixture("go-vet/printf").unwrap();
    assert_eq!(
        facts(&data),
        [at(
            "./main.go",
            11,
            2,
            "fmt.Printf format %d has arg name of wrong type string"
        )]
    );
    let data = fixture("go-vet/typecheck").unwrap();
    assert_eq!(
        facts(&data),
        [at(
            "./main.go",
            6,
            18,
            "cannot use \"many\" (untyped string constant) as int value in variable declaration"
        )]
    );
}

#[test]
fn unknown_lines() {
    // When the run failed, a line that is not a location is the go command's explanation.
    let failed = run(
        "go build ./x",
        "",
        "package example.com/x is not in GOROOT\n",
        Some(1),
    )
    .unwrap();
    assert_eq!(
        failed["diagnostics"][0]["message"],
        "package example.com/x is not in GOROOT"
    );
    assert_eq!(failed["summary"]["errors"], 1);
    // When it did not, go printed nothing like it: refuse.
    let garbage = run("go build", "", "hello\n", Some(0));
    assert_eq!(garbage, Err("line 1 is not in go's message format".into()));
    assert!(run("go build", "", "", Some(2)).is_err());
    // `go build 2>&1 | grep x` finding nothing: grep's exit 1 says nothing about go.
    assert_eq!(
        run_filtered("go build", "", "", Some(1), true).unwrap()["diagnostics"],
        json!([])
    );
    assert!(run_filtered("go build", "", "package x is not in std\n", Some(1), true).is_err());
    let note = run(
        "go build",
        "",
        "# m\nnote: module requires Go 1.99\n",
        Some(1),
    )
    .unwrap();
    assert_eq!(note["diagnostics"][0]["severity"], "note");
    // An indented line after a package header belongs to no record.
    let stray = run("go build", "", "./a.go:1:2: x\n# m\n\tstray\n", Some(1)).unwrap();
    assert_eq!(stray["diagnostics"][0].get("notes"), None);
}

#[test]
fn hostile_lines_do_not_panic() {
    let colons = "a:1: ".repeat(200_000);
    let data = run("go build", "", &colons, Some(1)).unwrap();
    assert_eq!(data["diagnostics"][0]["file"], "a");
    for text in [
        ":",
        ": ",
        "::1: x",
        "\t",
        "# ",
        "vet: ",
        "go: ",
        "é:1:é: x",
        "x.go:1:2:",
    ] {
        let _ = run("go vet .", text, text, Some(2));
        let _ = run("go vet .", text, text, None);
    }
}
