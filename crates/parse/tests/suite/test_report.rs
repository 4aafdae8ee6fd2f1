//! `TestReport` against real test runs: a cargo project, a pytest directory and a Go module made
//! for the test, each with known passing, failing and skipped tests, run for real (`cargo test`,
//! `cargo nextest run`, pytest from the workspace's venv, `go test`), and the parsed counts,
//! names and failure locations compared with what the sources say. jest and vitest, on a node
//! project, are in `test_report_js`, with the runs and checks from here. The tests of a tool
//! that may be missing are ignored and named for it (see `needs`).

// The helpers below run outside `#[test]` functions, where clippy's allow-unwrap-in-tests does
// not reach; in a test a failed unwrap is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use agentty_parse::Output;
use serde_json::Value;
use tempfile::TempDir;

use super::common::{command, parse as parse_stages, stage};
use super::needs;

/// A finished run, as the parser will read it.
pub(super) struct Run {
    pub(super) argv: Vec<String>,
    pub(super) stdout: String,
    pub(super) stderr: String,
    pub(super) code: Option<i32>,
}

/// Runs `argv` in `dir` with TZ=UTC, the C locale and `env`; output to pipes.
pub(super) fn run(dir: &Path, program: &str, argv: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = command(program);
    command
        .args(argv.get(1..).unwrap_or(&[]))
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUSTFLAGS");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    Run {
        argv: argv.iter().map(|w| (*w).to_owned()).collect(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

/// The run's output parsed as its argv says; `Err` is the parser's refusal.
fn parse(run: &Run) -> Result<Value, String> {
    let output = Output {
        stdout: &run.stdout,
        stderr: &run.stderr,
        exit_code: run.code,
    };
    let parsed = parse_stages(&[stage(&run.argv)], &output)?;
    assert_eq!(parsed.type_name, "TestReport");
    Ok(parsed.data)
}

pub(super) fn parsed(run: &Run) -> Value {
    parse(run).unwrap_or_else(|e| {
        panic!(
            "{e}\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout, run.stderr
        )
    })
}

pub(super) fn counts(report: &Value) -> (u64, u64, u64) {
    let n = |key: &str| report[key].as_u64().unwrap();
    (n("passed"), n("failed"), n("skipped"))
}

/// The 1-based line of `source` that contains `needle`.
pub(super) fn line_of(source: &str, needle: &str) -> u64 {
    let index = source.lines().position(|l| l.contains(needle)).unwrap();
    u64::try_from(index + 1).unwrap()
}

const LIB_RS: &str = r#"pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    fn adds_negative() {
        assert_eq!(add(-1, -2), -3);
    }

    #[test]
    fn fails() {
        assert_eq!(add(1, 1), 3, "one plus one is not three");
    }

    #[test]
    #[ignore]
    fn slow() {}
}
"#;

/// A cargo project with no dependencies, its own workspace root (a stray `Cargo.toml` above the
/// temp dir must not adopt it) and its own target dir.
fn cargo_project(lib_rs: &str) -> (TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"tr_demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), lib_rs).unwrap();
    let target = dir.path().join("target").display().to_string();
    (dir, target)
}

fn check_cargo_report(report: &Value, tool: &str, name_suffix: &str) {
    assert_eq!(report["tool"], tool);
    assert_eq!(report["outcome"], "failed");
    assert_eq!(counts(report), (2, 1, 1), "{report}");
    let failures = report["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{report}");
    let failure = &failures[0];
    assert!(
        failure["name"].as_str().unwrap().ends_with(name_suffix),
        "{failure}"
    );
    assert_eq!(failure["file"], "src/lib.rs");
    assert_eq!(
        failure["line"],
        line_of(LIB_RS, "one plus one is not three")
    );
    let message = failure["message"].as_str().unwrap();
    assert!(
        message.starts_with("assertion `left == right` failed: one plus one is not three"),
        "{message}"
    );
    assert!(message.contains("left: 2"), "{message}");
    assert!(report["duration_seconds"].as_f64().is_some());
}

#[test]
fn cargo_test_on_a_real_project() {
    let (dir, target) = cargo_project(LIB_RS);
    let env = [("CARGO_TARGET_DIR", target.as_str())];
    for argv in [
        &["cargo", "test", "--offline"][..],
        &["cargo", "test", "--offline", "-q"],
        &[
            "cargo",
            "test",
            "--offline",
            "--",
            "--nocapture",
            "--test-threads",
            "1",
        ],
    ] {
        let run = run(dir.path(), "cargo", argv, &env);
        check_cargo_report(&parsed(&run), "cargo", "tests::fails");
    }
}

/// cargo-nextest is a tool of its own: without it this test is skipped (`scripts/test` runs
/// it where cargo-nextest is installed).
#[test]
#[ignore = "needs cargo-nextest: scripts/test runs it where cargo-nextest is installed"]
fn nextest_on_a_real_project_needs_nextest() {
    needs::nextest();
    let (dir, target) = cargo_project(LIB_RS);
    let env = [("CARGO_TARGET_DIR", target.as_str())];
    let nextest = run(
        dir.path(),
        "cargo",
        &["cargo", "nextest", "run", "--offline"],
        &env,
    );
    check_cargo_report(&parsed(&nextest), "nextest", "tr_demo tests::fails");
}

#[test]
fn a_cargo_project_that_does_not_compile() {
    build_errors_of_a_broken_project(&["cargo", "test", "--offline"]);
}

#[test]
#[ignore = "needs cargo-nextest: scripts/test runs it where cargo-nextest is installed"]
fn a_cargo_project_that_does_not_compile_under_nextest_needs_nextest() {
    needs::nextest();
    build_errors_of_a_broken_project(&["cargo", "nextest", "run", "--offline"]);
}

/// `argv` run on a project whose library does not compile: an error report naming the line.
fn build_errors_of_a_broken_project(argv: &[&str]) {
    let broken = LIB_RS.replace("a + b\n", "a + undefined_name\n");
    let (dir, target) = cargo_project(&broken);
    let env = [("CARGO_TARGET_DIR", target.as_str())];
    let report = parsed(&run(dir.path(), "cargo", argv, &env));
    assert_eq!(report["outcome"], "error", "{argv:?}: {report}");
    assert_eq!(counts(&report), (0, 0, 0));
    let errors = report["build_errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["file"] == "src/lib.rs" && e["line"] == 2),
        "{argv:?}: {report}"
    );
}

const TEST_PY: &str = r#"import pytest


def test_adds():
    assert 1 + 1 == 2


def test_also_adds():
    assert 2 + 2 == 4


def test_fails():
    x = 1 + 1
    assert x == 3, "one plus one is not three"


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass
"#;

#[test]
#[ignore = "needs pytest: scripts/test runs it after making target/py-venv"]
fn pytest_default_and_quiet_needs_pytest() {
    let python = needs::pytest();
    let python = python.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("test_x.py"), TEST_PY).unwrap();
    for argv in [
        &["python", "-m", "pytest", "-p", "no:cacheprovider"][..],
        &["python", "-m", "pytest", "-p", "no:cacheprovider", "-q"],
        &[
            "python",
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-v",
            "--tb=short",
        ],
    ] {
        let run = run(dir.path(), python, argv, &[]);
        let report = parsed(&run);
        assert_eq!(report["outcome"], "failed", "{argv:?}");
        assert_eq!(counts(&report), (2, 1, 1), "{argv:?}: {report}");
        let failure = &report["failures"][0];
        assert_eq!(failure["name"], "test_x.py::test_fails", "{argv:?}");
        assert_eq!(failure["file"], "test_x.py", "{argv:?}");
        assert_eq!(
            failure["line"],
            line_of(TEST_PY, "one plus one"),
            "{argv:?}"
        );
        let message = failure["message"].as_str().unwrap();
        assert!(
            message.starts_with("AssertionError: one plus one is not three"),
            "{message}"
        );
    }
    std::fs::write(
        dir.path().join("test_broken.py"),
        "import not_a_module_here\n",
    )
    .unwrap();
    let run = run(
        dir.path(),
        python,
        &["python", "-m", "pytest", "-p", "no:cacheprovider"],
        &[],
    );
    let report = parsed(&run);
    assert_eq!(report["outcome"], "error", "{report}");
    assert_eq!(report["build_errors"][0]["file"], "test_broken.py");
    assert_eq!(report["build_errors"][0]["line"], 1);
}

const GO_TEST: &str = r#"package demo

import "testing"

func TestAdds(t *testing.T) {}

func TestAlsoAdds(t *testing.T) {}

func TestFails(t *testing.T) {
	if got := 1; got != 2 {
		t.Errorf("got %d want %d", got, 2)
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not today")
}
"#;

#[test]
#[ignore = "needs go: scripts/test runs it where go is installed"]
fn go_test_json_and_verbose_needs_go() {
    needs::go();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("go.mod"),
        "module example.com/demo\n\ngo 1.19\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("demo_test.go"), GO_TEST).unwrap();
    let env = [
        ("GOFLAGS", "-mod=mod"),
        ("GOPROXY", "off"),
        ("GOTOOLCHAIN", "local"),
    ];
    for argv in [
        &["go", "test", "-json", "-count=1", "./..."][..],
        &["go", "test", "-v", "-count=1", "./..."],
    ] {
        let report = parsed(&run(dir.path(), "go", argv, &env));
        assert_eq!(report["outcome"], "failed", "{argv:?}");
        assert_eq!(counts(&report), (2, 1, 1), "{argv:?}: {report}");
        let failure = &report["failures"][0];
        assert_eq!(failure["name"], "example.com/demo TestFails", "{argv:?}");
        assert_eq!(failure["file"], "demo_test.go");
        assert_eq!(failure["line"], line_of(GO_TEST, "t.Errorf"));
        assert!(
            failure["message"]
                .as_str()
                .unwrap()
                .ends_with("got 1 want 2"),
            "{failure}"
        );
    }
    let plain = parse(&run(dir.path(), "go", &["go", "test", "./..."], &env)).unwrap_err();
    assert!(plain.contains("-json"), "{plain}");
    std::fs::write(
        dir.path().join("broken.go"),
        "package demo\n\nvar x int = \"no\"\n",
    )
    .unwrap();
    let report = parsed(&run(
        dir.path(),
        "go",
        &["go", "test", "-json", "./..."],
        &env,
    ));
    assert_eq!(report["outcome"], "error", "{report}");
    assert_eq!(report["build_errors"][0]["line"], 3, "{report}");
}
