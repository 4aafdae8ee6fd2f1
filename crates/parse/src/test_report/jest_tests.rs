use serde_json::{Value, json};

use crate::testutil::{ctx, fixture, output, parse_pipeline, type_of};

fn parse(command: &str, stdout: &str, stderr: &str, exit: i32) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_pipeline(command, "TestReport", &out, &ctx())
}

#[test]
fn jest_summary_and_failures() {
    let report = parse("npx jest", "", &fixture("jest/failing.err"), 1).unwrap();
    assert_eq!(report["tool"], "jest");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(report["skipped"], 1);
    assert_eq!(report["duration_seconds"], 0.634);
    assert_eq!(
        report["failures"][0],
        json!({
            "name": "sum › adds 2 + 2 to equal 5",
            "file": "src/sum.test.js",
            "line": 9,
            "message": "expect(received).toBe(expected) // Object.is equality\n\nExpected: 5\nReceived: 4"
        })
    );
    assert_eq!(
        report["failures"][1]["file"], "src/sum.js",
        "the first frame outside node_modules"
    );
    assert_eq!(report["failures"][1]["line"], 5);
    assert_eq!(
        report["failures"][1]["message"],
        "TypeError: Cannot read properties of undefined (reading 'length')"
    );
}

#[test]
fn jest_verbose_todo_and_a_repeated_summary() {
    let report = parse("jest src/sum.test.js", "", &fixture("jest/verbose.err"), 1).unwrap();
    assert_eq!(
        (report["passed"].as_u64(), report["skipped"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(report["duration_seconds"], 1.203);
    assert_eq!(report["failures"].as_array().unwrap().len(), 1);
    // More than 20 suites: jest repeats each failure under "Summary of all failing tests".
    let failing = fixture("jest/failing.err");
    let (body, summary) = failing.split_once("Test Suites:").unwrap();
    let repeated = format!("{body}Summary of all failing tests\n{body}Test Suites:{summary}");
    let report = parse("jest", "", &repeated, 1).unwrap();
    assert_eq!(report["failures"].as_array().unwrap().len(), 2);
}

#[test]
fn a_test_file_that_does_not_load_is_a_build_error() {
    let report = parse("jest", "", &fixture("jest/suite-error.err"), 1).unwrap();
    assert_eq!(report["outcome"], "error");
    assert_eq!(report["passed"], 2);
    assert_eq!(
        report["build_errors"],
        json!([{"severity": "error", "message": "Cannot find module './nope' from 'src/broken.test.js'",
                "file": "src/broken.test.js"}])
    );
    let stdout = fixture("vitest/suite-error.out");
    let report = parse("vitest run", &stdout, &fixture("vitest/suite-error.err"), 1).unwrap();
    assert_eq!(report["outcome"], "error");
    assert_eq!(report["failed"], 0);
    assert_eq!(report["build_errors"][0]["file"], "src/broken.test.ts");
    assert_eq!(
        report["build_errors"][0]["message"],
        "Error: Failed to resolve import \"./nope\" from \"src/broken.test.ts\". Does the file exist?"
    );
}

#[test]
fn vitest_summary_and_failures() {
    let stdout = fixture("vitest/failing.out");
    let report = parse("npx vitest run", &stdout, &fixture("vitest/failing.err"), 1).unwrap();
    assert_eq!(report["tool"], "vitest");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(report["skipped"], 1);
    assert_eq!(report["duration_seconds"], 0.412);
    assert_eq!(
        report["failures"],
        json!([{
            "name": "src/sum.test.ts > sum > adds 2 + 2 to equal 5",
            "file": "src/sum.test.ts",
            "line": 9,
            "message": "AssertionError: expected 4 to be 5 // Object.is equality\n\n- Expected\n+ Received\n\n- 5\n+ 4"
        }])
    );
    let report = parse(
        "vitest run --reporter=verbose",
        &fixture("vitest/passing.out"),
        "",
        0,
    )
    .unwrap();
    assert_eq!(report["outcome"], "passed");
    assert_eq!(
        (report["passed"].as_u64(), report["skipped"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(report["duration_seconds"], 1.38);
}

#[test]
fn filtered_and_refused() {
    // `| tail`: the summary alone still gives the counts.
    let tail = "Tests:       2 failed, 1 skipped, 3 passed, 6 total\nTime:        0.634 s\n";
    let report = parse("jest 2>&1 | tail -n 5", tail, "", 1).unwrap();
    assert_eq!(report["failed"], 2);
    assert_eq!(report["failures"], json!([]));
    assert!(
        parse("jest | head -n 3", " FAIL  src/a.test.js\n", "", 1)
            .unwrap_err()
            .contains("summary")
    );
    assert!(parse("jest", "", "", 0).is_err());
    assert!(parse("jest", "", "Tests:       2 exploded, 2 total\n", 1).is_err());
    assert!(parse("vitest run", "      Tests  2 wobbly (2)\n", "", 1).is_err());
    assert!(
        parse(
            "vitest run",
            "",
            "No test files found, exiting with code 1\n",
            1
        )
        .is_err()
    );
}

#[test]
fn recognition() {
    for command in [
        "jest",
        "npx jest --ci --coverage",
        "yarn jest src/",
        "pnpm exec jest -t adds",
        "vitest run",
        "npx vitest run src/sum.test.ts",
        "bunx vitest --run",
        "vitest run --reporter verbose",
        "pnpm vitest run --reporter=dot",
    ] {
        assert!(type_of(command).is_some(), "{command}");
    }
    for command in [
        "vitest",
        "npx vitest",
        "vitest watch",
        "jest --watch",
        "jest --json",
        "jest --json --outputFile=r.json",
        "vitest run --reporter=json",
        "vitest run --reporter junit",
        "jest --listTests",
        "npx eslint .",
    ] {
        assert_ne!(type_of(command), Some("TestReport"), "{command}");
    }
}
