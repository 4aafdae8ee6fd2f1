use serde_json::{Value, json};

use crate::testutil::{ctx, output, parse_pipeline, type_of};

fn parse(command: &str, stdout: &str, stderr: &str, exit: i32) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_pipeline(command, "TestReport", &out, &ctx())
}

const FAILING_OUT: &str = include_str!("../../tests/fixtures/cargo-test/failing.out");
const FAILING_ERR: &str = include_str!("../../tests/fixtures/cargo-test/failing.err");

#[test]
fn sums_every_binary_and_reads_each_panic() {
    let report = parse("cargo test --no-fail-fast", FAILING_OUT, FAILING_ERR, 101).unwrap();
    assert_eq!(report["tool"], "cargo");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(report["skipped"], 2);
    assert!(report.get("build_errors").is_none());
    assert_eq!(
        report["failures"][0],
        json!({
            "name": "tests::fails",
            "file": "src/lib.rs",
            "line": 27,
            "message": "assertion `left == right` failed: one plus one is not 3\n  left: 2\n right: 3"
        })
    );
    assert_eq!(report["failures"][1]["name"], "integration_panics");
    assert_eq!(report["failures"][1]["file"], "tests/it.rs");
    assert_eq!(report["failures"][1]["message"], "boom\nsecond line");
    assert_eq!(report["failures"].as_array().unwrap().len(), 2);
    let seconds = report["duration_seconds"].as_f64().unwrap();
    assert!((seconds - 0.18).abs() < 1e-9, "{seconds}");
}

#[test]
fn quiet_nocapture_and_backtrace_give_the_same_facts() {
    for (command, name) in [
        ("cargo test -q --no-fail-fast", "quiet"),
        (
            "cargo test --no-fail-fast -- --nocapture --test-threads 1",
            "nocapture",
        ),
    ] {
        let dir = format!("{}/tests/fixtures/cargo-test", env!("CARGO_MANIFEST_DIR"));
        let stdout = std::fs::read_to_string(format!("{dir}/{name}.out")).unwrap();
        let stderr = std::fs::read_to_string(format!("{dir}/{name}.err")).unwrap();
        let report = parse(command, &stdout, &stderr, 101).unwrap();
        assert_eq!(report["passed"], 4, "{name}");
        assert_eq!(report["failed"], 2, "{name}");
        assert_eq!(report["failures"][0]["line"], 27, "{name}");
        assert_eq!(
            report["failures"][1]["message"], "boom\nsecond line",
            "{name}"
        );
    }
    let backtrace = include_str!("../../tests/fixtures/cargo-test/backtrace.out");
    let report = parse("cargo test", backtrace, "", 101).unwrap();
    assert_eq!(report["failed"], 1);
    let message = report["failures"][0]["message"].as_str().unwrap();
    assert!(
        message.ends_with(" right: 3"),
        "the backtrace is left out: {message}"
    );
}

#[test]
fn a_passing_run_and_names_with_spaces() {
    let stdout = "\nrunning 2 tests\ntest src/lib.rs - add (line 3) ... ok\n\
                  test tests::ünïcode ... ignored, slow\n\n\
                  test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 1.25s\n\n";
    let report = parse(
        "cargo +nightly --offline test --workspace --release",
        stdout,
        "",
        0,
    )
    .unwrap();
    assert_eq!(report["outcome"], "passed");
    assert_eq!(report["skipped"], 1);
    assert_eq!(report["duration_seconds"], 1.25);
    assert_eq!(report["failures"], json!([]));
}

#[test]
fn a_failing_doc_test_and_a_test_returning_err() {
    let stdout = "\nrunning 2 tests\ntest tests::errs ... FAILED\ntest src/lib.rs - add (line 3) ... FAILED\n\n\
        failures:\n\n---- tests::errs stdout ----\nError: \"nope\"\n\n\
        ---- src/lib.rs - add (line 3) stdout ----\nTest executable failed (exit status: 101).\n\nstderr:\n\n\
        thread 'main' (77) panicked at src/lib.rs:6:1:\nassertion failed: false\n\n\n\
        failures:\n    tests::errs\n    src/lib.rs - add (line 3)\n\n\
        test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s\n\n";
    let report = parse("cargo test --doc", stdout, "", 101).unwrap();
    assert_eq!(report["failed"], 2);
    assert_eq!(
        report["failures"][0],
        json!({"name": "tests::errs", "message": "Error: \"nope\""})
    );
    assert_eq!(report["failures"][1]["name"], "src/lib.rs - add (line 3)");
    assert_eq!(report["failures"][1]["line"], 6);
    assert_eq!(report["failures"][1]["message"], "assertion failed: false");
}

#[test]
fn the_old_panic_format() {
    let stdout = "running 1 test\ntest t ... FAILED\n\nfailures:\n\n---- t stdout ----\n\
        thread 't' panicked at 'it broke', src/main.rs:2:5\nnote: run with `RUST_BACKTRACE=1`\n\n\n\
        failures:\n    t\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    let report = parse("cargo test", stdout, "", 101).unwrap();
    assert_eq!(
        report["failures"][0],
        json!({"name": "t", "file": "src/main.rs", "line": 2, "message": "it broke"})
    );
}

#[test]
fn a_build_that_failed_is_an_error() {
    let stderr = include_str!("../../tests/fixtures/cargo-test/build-error.err");
    for command in ["cargo test", "cargo nextest run"] {
        let report = parse(command, "", stderr, 101).unwrap();
        assert_eq!(report["outcome"], "error", "{command}");
        assert_eq!(report["passed"], 0);
        assert!(
            !report["build_errors"].as_array().unwrap().is_empty(),
            "{command}"
        );
        assert!(report.get("duration_seconds").is_none());
    }
}

#[test]
fn a_crashed_binary_is_an_error_and_a_stray_failure_too() {
    let crashed = "\nrunning 3 tests\ntest a ... ok\n";
    let stderr = "error: test failed, to rerun pass `--lib`\n\nCaused by:\n  process didn't exit successfully (signal: 11, SIGSEGV)\n";
    assert_eq!(
        parse("cargo test", crashed, stderr, 101).unwrap()["outcome"],
        "error"
    );
    let ok_but_failed = "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    assert_eq!(
        parse("cargo test", ok_but_failed, "", 1).unwrap()["outcome"],
        "error"
    );
}

#[test]
fn refuses_what_it_cannot_read() {
    let garbage = parse("cargo test", "hello\nworld\n", "", 0).unwrap_err();
    assert!(garbage.contains("no test results"), "{garbage}");
    assert!(parse("cargo test", "", "", 0).is_err());
    let bad = "running 1 test\ntest result: ok. many passed; finished in 0.00s\n";
    assert!(
        parse("cargo test", bad, "", 0)
            .unwrap_err()
            .contains("result line")
    );
    let filtered = parse("cargo test | tail -n 5", FAILING_OUT, "", 101).unwrap_err();
    assert!(filtered.contains("filter"), "{filtered}");
}

#[test]
fn recognition() {
    for command in [
        "cargo test",
        "cargo t -p agentty-parse --lib",
        "cargo test --test it -- --nocapture --test-threads 1",
        "cargo test -- --format terse",
        "cargo -q test foo -- --exact",
        "cargo --color never test",
        "cargo nextest run",
        "cargo nextest run --no-fail-fast -E test(foo)",
        "cargo-nextest nextest run --workspace",
    ] {
        assert!(type_of(command).is_some(), "{command}");
    }
    for command in [
        "cargo test --no-run",
        "cargo test --message-format json",
        "cargo test -- --format json -Z unstable-options",
        "cargo test -- --format=json",
        "cargo test -- --list",
        "cargo test -- --bench",
        "cargo test --help",
        "cargo nextest list",
        "cargo nextest run --message-format libtest-json",
        "cargo nextest run --stress-count 10",
        "cargo build",
        "cargo --weird test",
    ] {
        assert_ne!(type_of(command), Some("TestReport"), "{command}");
    }
}

const NEXTEST: &str = include_str!("../../tests/fixtures/nextest/no-fail-fast.err");

#[test]
fn nextest_reads_the_summary_and_each_failure_once() {
    let report = parse("cargo nextest run --no-fail-fast", "", NEXTEST, 100).unwrap();
    assert_eq!(report["tool"], "nextest");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(report["skipped"], 2);
    assert_eq!(report["duration_seconds"], 0.028);
    let failures = report["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 2, "the final status lines repeat them");
    assert_eq!(failures[0]["name"], "demo tests::fails");
    assert_eq!(failures[0]["file"], "src/lib.rs");
    assert_eq!(failures[0]["line"], 27);
    assert_eq!(
        failures[0]["message"],
        "assertion `left == right` failed: one plus one is not 3\n  left: 2\n right: 3"
    );
    assert_eq!(failures[1]["name"], "demo::it integration_panics");
    assert_eq!(failures[1]["message"], "boom\nsecond line");
}

#[test]
fn nextest_on_stdout_filtered_and_cancelled() {
    // `2>&1 | tail`: the summary and the final status lines are kept.
    let tail: String = NEXTEST.lines().skip(48).map(|l| format!("{l}\n")).collect();
    let report = parse("cargo nextest run | tail -n 6", &tail, "", 100).unwrap();
    assert_eq!(report["failed"], 2);
    assert_eq!(report["failures"][1]["name"], "demo::it integration_panics");
    assert_eq!(report["failures"][1]["message"], "");
    let head: String = NEXTEST.lines().take(10).map(|l| format!("{l}\n")).collect();
    assert!(
        parse("cargo nextest run | head", &head, "", 100)
            .unwrap_err()
            .contains("Summary")
    );
    let cancelled = include_str!("../../tests/fixtures/nextest/fail-fast.err");
    let report = parse("cargo nextest run", "", cancelled, 100).unwrap();
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(report["failures"].as_array().unwrap().len(), 1);
}

#[test]
fn nextest_retries_and_other_statuses() {
    let stderr = "    Starting 4 tests across 1 binary\n\
        \x20 TRY 1 FAIL [   0.010s] (─────────) b flaky::one\n\
        \x20 TRY 2 PASS [   0.010s] (1/4) b flaky::one\n\
        \x20    SIGSEGV [   0.100s] (2/4) b crash::now\n\
        \x20    TIMEOUT [  60.000s] (3/4) b slow::one\n\
        \x20      SLOW [> 60.000s] (─────────) b slow::two\n\
        \x20       PASS [  61.000s] (4/4) b slow::two\n\
        ────────────\n\
        \x20    Summary [  61.500s] 4 tests run: 2 passed (1 slow, 1 flaky), 1 failed, 1 timed out, 0 skipped\n";
    let report = parse("cargo nextest run --retries 1", "", stderr, 100).unwrap();
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(2), Some(2))
    );
    let names: Vec<&str> = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b crash::now", "b slow::one"]);
}

#[test]
fn nextest_refuses_a_summary_it_does_not_know() {
    let stderr = "     Summary [   1.000s] 3 stress run iterations: 3 passed\n";
    assert!(parse("cargo nextest run", "", stderr, 0).is_err());
    let stderr = "     Summary [   1.000s] 3 tests run: 3 passed, 2 wobbled\n";
    assert!(parse("cargo nextest run", "", stderr, 0).is_err());
    assert!(parse("cargo nextest run", "", "", 0).is_err());
}
