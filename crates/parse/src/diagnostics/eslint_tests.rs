use super::*;
use crate::testutil::{ctx, diagnostic_fact as fact, diagnostic_facts as facts};
use crate::testutil::{output, parse_with, stage};
use serde_json::{Value, json};

fn run(cmd: &str, stdout: &str, stderr: &str, exit: i32, filtered: bool) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_with(recognize, &stage(cmd), &out, &ctx(), filtered)
}

fn stylish_of(stdout: &str) -> Result<Value, String> {
    run("eslint .", stdout, "", 1, false)
}

const STYLISH: &str = include_str!("../../tests/fixtures/eslint-stylish/project.out");
const DIRECTIVES: &str = include_str!("../../tests/fixtures/eslint-stylish/directives.out");
const JSON: &str = include_str!("../../tests/fixtures/eslint-json/project.out");
const METADATA: &str = include_str!("../../tests/fixtures/eslint-json/metadata.out");

#[test]
fn recognition() {
    for cmd in [
        "eslint .",
        "eslint src --ext .ts",
        "eslint -f json .",
        "eslint --format=json-with-metadata .",
        "eslint --format stylish --max-warnings 0 src",
        "eslint --fix .",
        "npx eslint .",
        "npx --yes eslint -f json src",
        "npx eslint@9 .",
    ] {
        assert!(recognize(&stage(cmd)).is_some(), "{cmd}");
    }
    for cmd in [
        "eslint -f html .",
        "eslint --format=compact .",
        "eslint -f ./my-formatter.js .",
        "eslint -f",
        "eslint -o out.txt .",
        "eslint --output-file=out.txt .",
        "eslint --version",
        "eslint --print-config a.js",
        "eslint --init",
        "npx prettier .",
        "npx @eslint/js .",
    ] {
        assert!(recognize(&stage(cmd)).is_none(), "{cmd}");
    }
}

#[test]
fn stylish_rows_per_file() {
    let data = stylish_of(STYLISH).unwrap();
    assert_eq!(
        data["summary"],
        json!({"errors": 9, "warnings": 5, "line": "✖ 14 problems (9 errors, 5 warnings)"})
    );
    let facts = facts(&data);
    assert_eq!(facts.len(), 14);
    let a = "/tmp/demo/es/a.js";
    assert_eq!(
        facts[0],
        fact(
            "error",
            a,
            1,
            7,
            "no-unused-vars",
            "'x' is assigned a value but never used"
        )
    );
    assert_eq!(
        facts[2],
        fact(
            "warning",
            a,
            3,
            1,
            "no-console",
            "Unexpected console statement"
        )
    );
    assert_eq!(facts[4].3, 21);
    // A path with a space.
    assert_eq!(
        facts[5],
        fact(
            "error",
            "/tmp/demo/es/b c.js",
            2,
            1,
            "no-undef",
            "'console' is not defined"
        )
    );
}

#[test]
fn rows_without_a_rule() {
    let data = stylish_of(DIRECTIVES).unwrap();
    let facts = facts(&data);
    assert_eq!(
        facts[0],
        fact(
            "error",
            "/tmp/demo/es/bad.js",
            1,
            12,
            "",
            "Parsing error: Unexpected token ;"
        )
    );
    assert_eq!(
        facts[1],
        fact(
            "error",
            "/tmp/demo/es/dis.js",
            1,
            1,
            "",
            "Unused eslint-disable directive (no problems were reported from 'no-console')"
        )
    );
    assert_eq!(facts[2].4, "no-unused-vars");
    let ignored = "\n/x/a.js\n  0:0  warning  File ignored because of a matching ignore pattern. Use \"--no-ignore\" to override\n\n✖ 1 problem (0 errors, 1 warning)\n\n";
    let data = run("eslint .", ignored, "", 0, false).unwrap();
    assert_eq!(data["diagnostics"][0].get("line"), None);
    assert_eq!(data["diagnostics"][0].get("code"), None);
}

#[test]
fn max_warnings_explains_the_exit_code() {
    let data = run(
        "eslint --max-warnings 0 warn.js",
        include_str!("../../tests/fixtures/eslint-stylish/max-warnings.out"),
        "ESLint found too many warnings (maximum: 0).\n",
        1,
        false,
    )
    .unwrap();
    assert_eq!(
        data["summary"],
        json!({"errors": 0, "warnings": 1, "line": "ESLint found too many warnings (maximum: 0)."})
    );
}

#[test]
fn json_gives_what_stylish_gives() {
    let data = run("eslint -f json a.js bad.js dis.js", JSON, "", 1, false).unwrap();
    assert_eq!(data["summary"], json!({"errors": 6, "warnings": 3}));
    let mut json_facts = facts(&data);
    let bad = fact(
        "error",
        "/tmp/demo/es/bad.js",
        1,
        12,
        "",
        "Parsing error: Unexpected token ;",
    );
    assert_eq!(json_facts[5], bad);
    assert_eq!(json_facts[6].4, "");
    // The same files in stylish, which drops the final period.
    let stylish = facts(&stylish_of(STYLISH).unwrap());
    for f in &mut json_facts {
        f.5 = f.5.trim_end_matches('.').to_owned();
    }
    assert_eq!(json_facts[..5], stylish[..5]);
    assert_eq!(json_facts[5..], stylish[7..11]);
    let data = run(
        "eslint -f json-with-metadata warn.js",
        METADATA,
        "",
        1,
        false,
    )
    .unwrap();
    assert_eq!(data["diagnostics"].as_array().unwrap().len(), 3);
    let clean = run(
        "eslint -f json ok.js",
        "[{\"filePath\":\"/x/ok.js\",\"messages\":[]}]",
        "",
        0,
        false,
    )
    .unwrap();
    assert_eq!(clean["diagnostics"], json!([]));
    assert!(run("eslint -f json .", "[{\"filePath\":1}]", "", 1, false).is_err());
    assert!(
        run(
            "eslint -f json .",
            "[{\"filePath\":\"a\",\"messages\":[",
            "",
            1,
            true
        )
        .unwrap_err()
        .contains("filter")
    );
}

#[test]
fn counts_that_do_not_match_the_rows_are_refused() {
    let text = "\n/x/a.js\n  1:1  error  bad  no-undef\n\n✖ 2 problems (2 errors, 0 warnings)\n";
    assert!(
        stylish_of(text)
            .unwrap_err()
            .contains("eslint counted 2 errors")
    );
    // Unless a filter dropped rows: then the closing line counts them all.
    let data = run("eslint .", text, "", 1, true).unwrap();
    assert_eq!(data["summary"]["errors"], 2);
}

#[test]
fn failures_and_clean_runs() {
    assert_eq!(
        run("eslint .", "", "", 0, false).unwrap(),
        json!({"tool": "eslint", "summary": {"errors": 0, "warnings": 0}, "diagnostics": []})
    );
    let oops = "\nOops! Something went wrong! :(\n\nESLint: 10.15.0\n\nNo files matching the pattern \"x.js\" were found.\n";
    let why = run("eslint x.js", "", oops, 2, false).unwrap_err();
    assert_eq!(
        why,
        "`eslint` exited 2 without a message: No files matching the pattern \"x.js\" were found."
    );
    let why = run("eslint -f json x.js", "", oops, 2, false).unwrap_err();
    assert!(why.contains("exited 2"), "{why}");
}

#[test]
fn unknown_lines_are_refused() {
    for text in [
        "  1:7  fatal  x  y\n",
        "/x/a.js\n  not a row\n",
        "/x/a.js\n  1:7 error x\n",
        "  1:7  error  x  rule\n",
        "/x/a.js\n  1:1  error  x  r\n\n✖ 1 problem (1 error, 0 warnings)\n/y/b.js\n",
        "✖ lots of problems\n",
    ] {
        let why = stylish_of(text).unwrap_err();
        assert!(
            why.contains("is not in eslint's stylish format"),
            "{text}: {why}"
        );
    }
}

#[test]
fn filtered_rows_without_their_file() {
    let rows: String = STYLISH
        .lines()
        .filter(|l| l.contains("no-undef"))
        .map(|l| format!("{l}\n"))
        .collect();
    let data = run("eslint .", &rows, "", 0, true).unwrap();
    assert_eq!(data["summary"]["errors"], 5);
    assert_eq!(data["diagnostics"][0].get("file"), None);
}

#[test]
fn hostile_input() {
    for text in [
        "/a\n  99999999999999999999:1  error  x  y\n",
        "/a\n  1:1  error    \n",
        "/a\n  1:1  error  ünïcödé  ✖\n",
        "✖ 1 problem (18446744073709551616 errors, 0 warnings)\n",
        "✖ 1 problem (1 error, 0 warnings",
    ] {
        let _ = stylish_of(text);
        let _ = run("eslint .", text, "", 1, true);
    }
    let data = stylish_of("/a\n  1:1  error  ünïcödé  message  ✖\n").unwrap();
    assert_eq!(data["diagnostics"][0]["message"], "ünïcödé  message  ✖");
}
