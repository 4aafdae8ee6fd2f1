use serde_json::{Value, json};

use crate::testutil::{ctx, failure_names as names, output, parse_pipeline, type_of};

fn parse(command: &str, stdout: &str, stderr: &str, exit: i32) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_pipeline(command, "TestReport", &out, &ctx())
}

fn fixture(name: &str) -> String {
    crate::testutil::fixture(&format!("pytest/{name}"))
}

#[test]
fn default_quiet_and_verbose_agree() {
    for (command, case) in [
        ("pytest", "default.out"),
        ("python3 -m pytest -q", "quiet.out"),
        ("py.test -v --tb=short", "verbose-short.out"),
    ] {
        let report = parse(command, &fixture(case), "", 1).unwrap();
        assert_eq!(report["tool"], "pytest");
        assert_eq!(report["outcome"], "failed", "{case}");
        assert_eq!(report["passed"], 5, "{case}");
        assert_eq!(report["failed"], 3, "{case}");
        assert_eq!(report["skipped"], 2, "{case}: one skipped, one xfailed");
        assert_eq!(
            names(&report),
            [
                "test_math.py::test_fails",
                "test_math.py::test_raises",
                "test_math.py::TestGroup::test_param[2]"
            ],
            "{case}"
        );
        assert_eq!(
            report["failures"][0],
            json!({
                "name": "test_math.py::test_fails",
                "file": "test_math.py",
                "line": 10,
                "message": "AssertionError: one plus one is not three\nassert 2 == 3"
            }),
            "{case}"
        );
        assert_eq!(
            report["failures"][1]["message"],
            "ValueError: bad value\nsecond line"
        );
        assert_eq!(report["failures"][2]["line"], 28, "{case}");
        assert!(report["duration_seconds"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn fixture_errors_are_failures() {
    let report = parse(
        "pytest -q -rA test_fix.py",
        &fixture("fixture-error.out"),
        "",
        1,
    )
    .unwrap();
    assert_eq!(report["outcome"], "failed");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        report["failures"][0],
        json!({
            "name": "test_fix.py::test_uses",
            "file": "test_fix.py",
            "line": 6,
            "message": "RuntimeError: fixture broke"
        })
    );
}

#[test]
fn collection_errors_are_build_errors() {
    let report = parse("pytest", &fixture("collection-error.out"), "", 2).unwrap();
    assert_eq!(report["outcome"], "error");
    assert_eq!(report["failed"], 0);
    assert_eq!(report["failures"], json!([]));
    assert_eq!(
        report["build_errors"],
        json!([
            {"severity": "error", "message": "ModuleNotFoundError: No module named 'nope_not_a_module'",
             "file": "test_bad.py", "line": 1},
            {"severity": "error", "message": "SyntaxError: invalid syntax", "file": "test_syntax.py", "line": 1}
        ])
    );
}

#[test]
fn a_broken_conftest_and_usage_errors() {
    let report = parse("pytest c", "", &fixture("conftest-error.err"), 4).unwrap();
    assert_eq!(report["outcome"], "error");
    let messages: Vec<&str> = report["build_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            "ImportError while loading conftest '/tmp/tr/py2/c/conftest.py'.",
            "ModuleNotFoundError: No module named 'nope'"
        ]
    );
    let stdout =
        "=== test session starts ===\ncollected 0 items\n\n=== no tests ran in 0.01s ===\n";
    let stderr = "ERROR: file or directory not found: nonexist.py\n\n";
    let report = parse("pytest nonexist.py", stdout, stderr, 4).unwrap();
    assert_eq!(report["outcome"], "error");
    assert_eq!(
        report["build_errors"][0]["message"],
        "file or directory not found: nonexist.py"
    );
}

#[test]
fn no_tests_ran_is_a_pass_with_nothing_counted() {
    let report = parse("pytest", &fixture("no-tests.out"), "", 5).unwrap();
    assert_eq!(report["outcome"], "passed");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(0), Some(0))
    );
    let deselected = parse("pytest -q -k nothing", "\n2 deselected in 0.02s\n", "", 5).unwrap();
    assert_eq!(deselected["duration_seconds"], 0.02);
}

#[test]
fn short_summary_alone_names_and_explains() {
    // `--tb=no` prints no blocks: the summary's message is all there is.
    let stdout = ".F.                                    [100%]\n\
        ======== short test summary info ========\n\
        FAILED tests/test_ü.py::test_p[a - b] - assert 'a - b' == 'c'\n\
        1 failed, 2 passed in 75.32s (0:01:15)\n";
    let report = parse("pytest -q --tb=no", stdout, "", 1).unwrap();
    assert_eq!(
        report["failures"][0],
        json!({"name": "tests/test_ü.py::test_p[a - b]", "message": "assert 'a - b' == 'c'"})
    );
    assert_eq!(report["duration_seconds"], 75.32);
}

#[test]
fn without_a_short_summary_the_headers_name_the_failures() {
    let stdout = "F.\n=== FAILURES ===\n___ TestA.test_x ___\n\n    def test_x(self):\n\
        >       assert f() == 1\nE       assert 2 == 1\nE        +  where 2 = f()\n\n\
        pkg/test_a.py:7: AssertionError\n\
        ----------------------------- Captured stdout call -----------------------------\n\
        noise.py:99: not a location\n\
        1 failed, 1 passed in 0.10s\n";
    let report = parse("pytest -rN", stdout, "", 1).unwrap();
    assert_eq!(
        report["failures"][0],
        json!({
            "name": "TestA.test_x",
            "file": "pkg/test_a.py",
            "line": 7,
            "message": "assert 2 == 1\n +  where 2 = f()"
        })
    );
}

#[test]
fn filtered_output_needs_the_closing_line() {
    let quiet = fixture("quiet.out");
    let tail: String = quiet
        .lines()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .map(|l| format!("{l}\n"))
        .collect();
    let report = parse("pytest -q | tail -n 4", &tail, "", 1).unwrap();
    assert_eq!(report["failed"], 3);
    assert_eq!(names(&report).len(), 3);
    let head: String = quiet.lines().take(5).map(|l| format!("{l}\n")).collect();
    let why = parse("pytest -q | head", &head, "", 1).unwrap_err();
    assert!(why.contains("closing line"), "{why}");
}

#[test]
fn refuses_what_is_not_pytest_output() {
    assert!(parse("pytest", "", "", 0).is_err());
    assert!(parse("pytest", "hello\n3 failed in a while\n", "", 1).is_err());
    assert!(parse("pytest", "=== 3 exploded in 0.1s ===\n", "", 1).is_err());
    assert!(parse("pytest", "", "Segmentation fault\n", 139).is_err());
}

#[test]
fn recognition() {
    for command in [
        "pytest",
        "pytest -q tests/",
        "python -m pytest -x -k foo",
        "python3.12 -m pytest -rA --tb=short",
        "py.test -v -s",
        "pytest -q -v",
    ] {
        assert!(type_of(command).is_some(), "{command}");
    }
    for command in [
        "pytest --collect-only",
        "pytest --co -q",
        "pytest -qq",
        "pytest -q --quiet",
        "pytest --fixtures",
        "pytest --pdb",
        "pytest -p no:terminal",
        "pytest --version",
        "python -m http.server",
        "python -c pytest",
    ] {
        assert_ne!(type_of(command), Some("TestReport"), "{command}");
    }
}
