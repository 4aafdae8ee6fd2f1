//! gcc, clang, tsc and eslint run for real on files with bugs put at known places: the parsed
//! file, line, column, code, severity and counts must be where the bugs are, and a clean file
//! must give no record. clang may be missing, and tsc and eslint come from `tests/parse-tools`
//! (`npm ci` there first): their tests are ignored and named for what they need (see `needs`).

// The helpers below are test code too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use agentty_parse::Output;
use serde_json::Value;

use super::common::{command, node_modules, parse as parse_stages, stage, stage_of};
use super::needs;

/// `node_modules/.bin/<name>` of the workspace's `tests/parse-tools`.
#[track_caller]
fn node_tool(name: &str) -> PathBuf {
    needs::node_tools().join(".bin").join(name)
}

/// What a run printed.
struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

/// Runs `argv` in `dir` (TZ=UTC, C locale, output to a pipe).
fn run(dir: &Path, argv: &[String]) -> Run {
    let out = command(&argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .env("NODE_PATH", node_modules())
        .env_remove("FORCE_COLOR")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", argv[0]));
    Run {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code(),
    }
}

/// The output as the server hands it to parsers: without terminal escapes (`--pretty` colours).
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Parses a run of `argv` as the pipeline `argv | filter…` would be parsed.
fn parse(argv: &[String], filters: &[&str], run: &Run) -> Value {
    let mut stages = vec![stage(argv)];
    stages.extend(filters.iter().map(|filter| stage_of(filter)));
    let (stdout, stderr) = (clean(&run.stdout), clean(&run.stderr));
    let output = Output {
        stdout: &stdout,
        stderr: &stderr,
        exit_code: run.code,
    };
    let parsed = parse_stages(&stages, &output)
        .unwrap_or_else(|e| panic!("{e}\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr));
    assert_eq!(parsed.type_name, "Diagnostics");
    parsed.data
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// 1-based (line, column) of the first `token` in `source`, or of the character after it.
fn place(source: &str, token: &str, after: bool) -> (u64, u64) {
    for (n, line) in source.lines().enumerate() {
        if let Some(at) = line.find(token) {
            let column = if after { at + token.len() } else { at };
            return ((n + 1) as u64, (column + 1) as u64);
        }
    }
    panic!("{token} is not in the source");
}

/// (severity, line, column, code) of each record, sorted; 0 and "" for what is absent.
fn facts(data: &Value) -> Vec<(String, u64, u64, String)> {
    let mut facts: Vec<_> = data["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap().to_owned(),
                d["line"].as_u64().unwrap_or(0),
                d["column"].as_u64().unwrap_or(0),
                d["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    facts.sort();
    facts
}

fn fact(severity: &str, (line, column): (u64, u64), code: &str) -> (String, u64, u64, String) {
    (severity.to_owned(), line, column, code.to_owned())
}

const C_BUGS: &str = "#include <stdlib.h>

static int helper(void) {
    return 1;
}

int main(void) {
    int unused_local = 0;
    undeclared_name = 1;
    return 0
}
";

const C_CLEAN: &str = "int main(void) { return 0; }\n";

/// Where gcc and clang put the bugs of [`C_BUGS`]: same places, different words.
fn c_expected() -> Vec<(String, u64, u64, String)> {
    let mut expected = vec![
        fact(
            "warning",
            place(C_BUGS, "helper", false),
            "-Wunused-function",
        ),
        fact(
            "warning",
            place(C_BUGS, "unused_local", false),
            "-Wunused-variable",
        ),
        fact("error", place(C_BUGS, "undeclared_name", false), ""),
        fact("error", place(C_BUGS, "return 0", true), ""),
    ];
    expected.sort();
    expected
}

fn c_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bugs.c"), C_BUGS).unwrap();
    std::fs::write(dir.path().join("clean.c"), C_CLEAN).unwrap();
    std::fs::write(
        dir.path().join("main.c"),
        "int missing_fn(void);\nint main(void) { return missing_fn(); }\n",
    )
    .unwrap();
    dir
}

#[test]
fn gcc_reports_the_bugs_where_they_are() {
    let dir = c_dir();
    let words = argv(&["gcc", "-Wall", "-c", "bugs.c"]);
    let out = run(dir.path(), &words);
    assert_eq!(out.code, Some(1));
    let data = parse(&words, &[], &out);
    assert_eq!(data["tool"], "gcc");
    assert_eq!(facts(&data), c_expected());
    assert_eq!(data["summary"]["errors"], 2);
    assert_eq!(data["summary"]["warnings"], 2);
    assert!(
        data["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["file"] == "bugs.c")
    );
    let undeclared = data["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("undeclared_name"))
        .unwrap();
    assert_eq!(undeclared["notes"][0], "In function 'main'");

    // The machine format gives the same facts.
    let words = argv(&["gcc", "-Wall", "-fdiagnostics-format=json", "-c", "bugs.c"]);
    let json = parse(&words, &[], &run(dir.path(), &words));
    assert_eq!(facts(&json), c_expected());

    // `| grep error` keeps the errors' lines only.
    let words = argv(&["gcc", "-Wall", "-c", "bugs.c"]);
    let mut filtered = run(dir.path(), &words);
    filtered.stdout = filtered
        .stderr
        .lines()
        .filter(|l| l.contains("error"))
        .map(|l| format!("{l}\n"))
        .collect();
    filtered.stderr.clear();
    let data = parse(&words, &["grep error"], &filtered);
    assert_eq!(data["summary"]["errors"], 2);
    assert_eq!(data["summary"]["warnings"], 0);
}

#[test]
fn gcc_link_errors_and_clean_files() {
    let dir = c_dir();
    let words = argv(&["gcc", "main.c", "-o", "prog"]);
    let data = parse(&words, &[], &run(dir.path(), &words));
    let records = data["diagnostics"].as_array().unwrap();
    let undefined = records
        .iter()
        .find(|d| d["message"] == "undefined reference to `missing_fn'")
        .unwrap();
    assert_eq!(undefined["severity"], "error");
    assert_eq!(undefined["file"], "main.c");
    assert_eq!(undefined.get("line"), None);
    assert_eq!(undefined["notes"][0], "in function `main'");
    assert!(
        records
            .iter()
            .any(|d| d["message"] == "ld returned 1 exit status")
    );

    let words = argv(&["gcc", "-Wall", "-Wextra", "-c", "clean.c"]);
    let out = run(dir.path(), &words);
    assert_eq!(out.code, Some(0));
    let data = parse(&words, &[], &out);
    assert_eq!(data["diagnostics"], Value::Array(vec![]));
    assert_eq!(data["summary"]["errors"], 0);
}

#[test]
#[ignore = "needs clang: scripts/test runs it where clang is installed"]
fn clang_reports_the_bugs_where_they_are_needs_clang() {
    needs::clang();
    let dir = c_dir();
    let words = argv(&["clang", "-Wall", "-c", "bugs.c"]);
    let data = parse(&words, &[], &run(dir.path(), &words));
    assert_eq!(data["tool"], "clang");
    // After an error clang looks for no unused names: the warnings need a file of their own.
    let (warnings, errors): (Vec<_>, Vec<_>) =
        c_expected().into_iter().partition(|f| f.0 == "warning");
    assert_eq!(facts(&data), errors);
    assert_eq!(data["summary"]["line"], "2 errors generated.");
    let unused = C_BUGS
        .replace("undeclared_name = 1;", "")
        .replace("return 0\n", "return 0;\n");
    std::fs::write(dir.path().join("unused.c"), &unused).unwrap();
    let out = run(dir.path(), &argv(&["clang", "-Wall", "-c", "unused.c"]));
    // Parsed as `cc` (which may be either compiler): clang's closing line names it.
    let data = parse(&argv(&["cc", "-Wall", "-c", "unused.c"]), &[], &out);
    assert_eq!(data["tool"], "clang");
    assert_eq!(facts(&data), warnings);
    assert_eq!(data["summary"]["line"], "2 warnings generated.");

    let words = argv(&["clang", "-Wall", "-c", "clean.c"]);
    let data = parse(&words, &[], &run(dir.path(), &words));
    assert_eq!(data["diagnostics"], Value::Array(vec![]));
}

const TS_BUGS: &str = "let count: number = \"three\";
function twice(n: number): number {
  return n * 2;
}
twice(\"x\");
const label: string = zzqqMissing;
";

const TS_OTHER: &str = "export const flag: boolean = 1;\n";

fn ts_expected() -> Vec<(String, u64, u64, String)> {
    let mut expected = vec![
        fact("error", place(TS_BUGS, "count", false), "TS2322"),
        fact("error", place(TS_BUGS, "\"x\"", false), "TS2345"),
        fact("error", place(TS_BUGS, "zzqqMissing", false), "TS2304"),
        fact("error", place(TS_OTHER, "flag", false), "TS2322"),
    ];
    expected.sort();
    expected
}

#[test]
#[ignore = "needs node tools: scripts/test runs it after npm ci --prefix tests/parse-tools"]
fn tsc_reports_the_bugs_where_they_are_needs_node_tools() {
    let tsc = node_tool("tsc");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bugs.ts"), TS_BUGS).unwrap();
    std::fs::write(dir.path().join("other.ts"), TS_OTHER).unwrap();
    let tsc = tsc.to_str().unwrap();
    for (layout, extra) in [("plain", None), ("pretty", Some("--pretty"))] {
        let mut words = argv(&[tsc, "--noEmit"]);
        words.extend(extra.map(str::to_owned));
        words.extend(argv(&["bugs.ts", "other.ts"]));
        let out = run(dir.path(), &words);
        assert_ne!(out.code, Some(0));
        let data = parse(&words, &[], &out);
        assert_eq!(data["tool"], "tsc");
        assert_eq!(facts(&data), ts_expected(), "{layout}");
        assert_eq!(data["summary"]["errors"], 4);
        let files: Vec<&str> = data["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["file"].as_str().unwrap())
            .collect();
        assert_eq!(
            files,
            ["bugs.ts", "bugs.ts", "bugs.ts", "other.ts"],
            "{layout}"
        );
        if layout == "pretty" {
            assert_eq!(data["summary"]["line"], "Found 4 errors in 2 files.");
        }
    }

    // A clean project.
    std::fs::remove_file(dir.path().join("bugs.ts")).unwrap();
    std::fs::write(
        dir.path().join("other.ts"),
        "export const ok: number = 1;\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tsconfig.json"),
        r#"{ "compilerOptions": { "strict": true, "noEmit": true }, "files": ["other.ts"] }"#,
    )
    .unwrap();
    let words = argv(&[tsc, "-p", "."]);
    let out = run(dir.path(), &words);
    assert_eq!(out.code, Some(0), "{}", out.stdout);
    let data = parse(&words, &[], &out);
    assert_eq!(data["diagnostics"], Value::Array(vec![]));
}

const JS_BUGS: &str = "const unusedThing = 1;
let neverChanged = 2;
export function f() {
  return neverChanged + undefinedVar;
}
debugger;
";

const JS_PARSE_ERROR: &str = "const a = (;\n";

const ESLINT_CONFIG: &str = "const js = require(\"@eslint/js\");
module.exports = [js.configs.recommended, { rules: { \"prefer-const\": \"warn\" } }];
";

fn js_expected() -> Vec<(String, u64, u64, String)> {
    let mut expected = vec![
        fact(
            "error",
            place(JS_BUGS, "unusedThing", false),
            "no-unused-vars",
        ),
        fact(
            "warning",
            place(JS_BUGS, "neverChanged", false),
            "prefer-const",
        ),
        fact("error", place(JS_BUGS, "undefinedVar", false), "no-undef"),
        fact("error", place(JS_BUGS, "debugger", false), "no-debugger"),
        fact("error", place(JS_PARSE_ERROR, ";", false), ""),
    ];
    expected.sort();
    expected
}

#[test]
#[ignore = "needs node tools: scripts/test runs it after npm ci --prefix tests/parse-tools"]
fn eslint_reports_the_bugs_where_they_are_needs_node_tools() {
    let eslint = node_tool("eslint");
    let eslint = eslint.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("eslint.config.cjs"), ESLINT_CONFIG).unwrap();
    std::fs::write(dir.path().join("bugs.js"), JS_BUGS).unwrap();
    std::fs::write(dir.path().join("broken.js"), JS_PARSE_ERROR).unwrap();
    std::fs::write(dir.path().join("clean.js"), "export const ok = 1;\n").unwrap();

    let mut by_format = Vec::new();
    for format in [None, Some("json")] {
        let mut words = argv(&[eslint]);
        if let Some(format) = format {
            words.extend(argv(&["-f", format]));
        }
        words.extend(argv(&["bugs.js", "broken.js", "clean.js"]));
        let out = run(dir.path(), &words);
        assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
        let data = parse(&words, &[], &out);
        assert_eq!(data["tool"], "eslint");
        assert_eq!(facts(&data), js_expected(), "{format:?}");
        assert_eq!(data["summary"]["errors"], 4);
        assert_eq!(data["summary"]["warnings"], 1);
        let records = data["diagnostics"].as_array().unwrap();
        for record in records {
            let file = if record.get("code").is_some() {
                "bugs.js"
            } else {
                "broken.js"
            };
            assert_eq!(record["file"], dir.path().join(file).display().to_string());
        }
        let messages: Vec<String> = records
            .iter()
            .map(|d| {
                d["message"]
                    .as_str()
                    .unwrap()
                    .trim_end_matches('.')
                    .to_owned()
            })
            .collect();
        by_format.push(messages);
    }
    // Stylish drops the final period, nothing else.
    assert_eq!(by_format[0], by_format[1]);

    // `--max-warnings` turns warnings into a failure; the line on stderr says so.
    std::fs::write(
        dir.path().join("warn.js"),
        "let w = 1;\nexport default w;\n",
    )
    .unwrap();
    let words = argv(&[eslint, "--max-warnings", "0", "warn.js"]);
    let out = run(dir.path(), &words);
    assert_eq!(out.code, Some(1));
    let data = parse(&words, &[], &out);
    assert_eq!(data["summary"]["errors"], 0);
    assert_eq!(data["summary"]["warnings"], 1);
    assert_eq!(
        data["summary"]["line"],
        "ESLint found too many warnings (maximum: 0)."
    );

    let words = argv(&[eslint, "clean.js"]);
    let out = run(dir.path(), &words);
    assert_eq!(out.code, Some(0));
    assert_eq!(
        parse(&words, &[], &out)["diagnostics"],
        Value::Array(vec![])
    );
}
