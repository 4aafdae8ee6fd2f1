use serde_json::{Value, json};

use crate::testutil::{ctx, failure_names as names, fixture, output, parse_pipeline, type_of};

fn parse(command: &str, stdout: &str, stderr: &str, exit: i32) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_pipeline(command, "TestReport", &out, &ctx())
}

const CALC: &str = "example.com/demo/calc";

#[test]
fn json_and_verbose_text_agree() {
    for (command, dir) in [
        ("go test -json ./...", "go-test-json"),
        ("go test -v ./...", "go-test"),
    ] {
        let report = parse(command, &fixture(&format!("{dir}/failing.out")), "", 1).unwrap();
        assert_eq!(report["tool"], "go");
        assert_eq!(report["outcome"], "failed", "{dir}");
        // TestAdd, TestTable/one, TestDouble; TestAddWrong, TestTable/two, TestTable.
        assert_eq!(
            (report["passed"].as_u64(), report["failed"].as_u64()),
            (Some(3), Some(3)),
            "{dir}"
        );
        assert_eq!(report["skipped"], 1, "{dir}");
        let mut failed = names(&report);
        failed.sort_unstable();
        assert_eq!(
            failed,
            [
                format!("{CALC} TestAddWrong"),
                format!("{CALC} TestTable"),
                format!("{CALC} TestTable/two")
            ],
            "{dir}"
        );
        let wrong = report["failures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == format!("{CALC} TestAddWrong"));
        assert_eq!(
            wrong.unwrap(),
            &json!({"name": format!("{CALC} TestAddWrong"), "file": "calc_test.go", "line": 14, "message": "calc_test.go:14: got 2 want 3"}),
            "{dir}"
        );
        let two = report["failures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == format!("{CALC} TestTable/two"));
        assert_eq!(
            two.unwrap()["message"],
            "calc_test.go:26: Add(2,2) = 4, want 5\n    second line",
            "{dir}"
        );
        assert!(report["duration_seconds"].as_f64().unwrap() > 0.0, "{dir}");
    }
}

#[test]
fn a_package_that_does_not_build_is_an_error() {
    for (command, dir) in [
        ("go test -json ./...", "go-test-json"),
        ("go test -v ./...", "go-test"),
    ] {
        let stdout = fixture(&format!("{dir}/build-error.out"));
        let stderr = fixture(&format!("{dir}/build-error.err"));
        let report = parse(command, &stdout, &stderr, 2).unwrap();
        assert_eq!(report["outcome"], "error", "{dir}");
        assert_eq!(
            report["failed"], 3,
            "the other packages' tests still ran: {dir}"
        );
        assert_eq!(
            report["build_errors"][1],
            json!({"severity": "error", "message": "undefined: undefinedThing", "file": "broken/b.go", "line": 5, "column": 9}),
            "{dir}"
        );
        assert_eq!(report["build_errors"].as_array().unwrap().len(), 2, "{dir}");
    }
}

#[test]
fn go_1_24_build_events() {
    let stdout = r##"{"ImportPath":"m/b [m/b.test]","Action":"build-output","Output":"# m/b [m/b.test]\n"}
{"ImportPath":"m/b [m/b.test]","Action":"build-output","Output":"b/main_test.go:3:11: undefined: y\n"}
{"ImportPath":"m/b [m/b.test]","Action":"build-fail"}
{"Time":"2026-01-01T00:00:00Z","Action":"start","Package":"m/b"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"m/b","Output":"FAIL\tm/b [build failed]\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"fail","Package":"m/b","Elapsed":0,"FailedBuild":"m/b [m/b.test]"}
"##;
    let report = parse("go test -json ./b", stdout, "", 1).unwrap();
    assert_eq!(report["outcome"], "error");
    assert_eq!(report["failed"], 0);
    assert_eq!(report["failures"], json!([]));
    assert_eq!(report["build_errors"][0]["file"], "b/main_test.go");
    assert_eq!(report["build_errors"][0]["column"], 11);
}

#[test]
fn a_package_that_fails_without_a_failed_test() {
    let stdout = r#"{"Action":"run","Package":"m/p","Test":"TestSlow"}
{"Action":"output","Package":"m/p","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"m/p","Output":"FAIL\tm/p\t1.005s\n"}
{"Action":"fail","Package":"m/p","Elapsed":1.005}
"#;
    let report = parse("go test -json -timeout 1s ./p", stdout, "", 1).unwrap();
    assert_eq!(report["outcome"], "failed");
    assert_eq!(report["failed"], 1);
    assert_eq!(
        report["failures"][0],
        json!({"name": "m/p", "message": "panic: test timed out after 1s"})
    );
    assert_eq!(report["duration_seconds"], 1.005);
    let text =
        "=== RUN   TestMain\npanic: boom\n\ngoroutine 1 [running]:\nFAIL\tm/p\t0.010s\nFAIL\n";
    let report = parse("go test -v ./p", text, "", 1).unwrap();
    assert_eq!(report["failed"], 1);
    assert_eq!(report["failures"][0]["name"], "m/p");
}

#[test]
fn older_go_prints_the_output_after_the_result_line() {
    let text = "=== RUN   TestÜnïcode\n--- FAIL: TestÜnïcode (0.00s)\n    x_test.go:9: got 1 want 2\n\
                === RUN   TestOther\n--- PASS: TestOther (0.01s)\nFAIL\nFAIL\tm/x\t0.011s\n";
    let report = parse("go test -v", text, "", 1).unwrap();
    assert_eq!(
        report["failures"],
        json!([{"name": "m/x TestÜnïcode", "file": "x_test.go", "line": 9, "message": "x_test.go:9: got 1 want 2"}])
    );
    assert_eq!(report["passed"], 1);
}

#[test]
fn plain_filtered_and_garbage_are_refused() {
    let plain = parse("go test ./...", "ok  \tm/x\t0.01s\n", "", 0).unwrap_err();
    assert!(plain.contains("-json"), "{plain}");
    let json = fixture("go-test-json/failing.out");
    assert!(
        parse("go test -json ./... | grep fail", &json, "", 1)
            .unwrap_err()
            .contains("filter")
    );
    assert!(
        parse("go test -json", "{not json}\n", "", 1)
            .unwrap_err()
            .contains("line 1")
    );
    assert!(parse("go test -json", "hello\n", "", 0).is_err());
    assert!(parse("go test -v", "hello\nworld\n", "", 0).is_err());
    assert!(parse("go test -v", "", "", 0).is_err());
    let report = parse("go test -v ./...", "", "go: cannot find main module\n", 1).unwrap();
    assert_eq!(report["outcome"], "error");
    assert_eq!(
        report["build_errors"][0]["message"],
        "go: cannot find main module"
    );
}

#[test]
fn a_passing_run() {
    let report = parse(
        "go test -json -count=1 ./util",
        &fixture("go-test-json/passing.out"),
        "",
        0,
    )
    .unwrap();
    assert_eq!(report["outcome"], "passed");
    assert_eq!(report["passed"], 1);
    let report = parse(
        "go test -v ./util ./notests",
        &fixture("go-test/passing.out"),
        "",
        0,
    )
    .unwrap();
    assert_eq!(report["outcome"], "passed");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(1), Some(0))
    );
}

#[test]
fn recognition() {
    for command in [
        "go test ./...",
        "go test -v -run TestX ./pkg",
        "go test --json ./...",
        "go test -json -v -count=1 -race ./...",
        "go test -v=true -cover .",
        "go test -v ./x -args -bench",
    ] {
        assert!(type_of(command).is_some(), "{command}");
    }
    for command in [
        "go test -bench .",
        "go test -c",
        "go test -list .",
        "go test -fuzz FuzzX",
        "go build",
    ] {
        assert_ne!(type_of(command), Some("TestReport"), "{command}");
    }
}
