use super::*;
use crate::testutil::{ctx, output, parse_with, stage};
use serde_json::{Value, json};

fn parse(stdout: &str, exit: i32, filtered: bool) -> Result<Value, String> {
    let out = output(stdout, "", Some(exit));
    parse_with(recognize, &stage("tsc --noEmit"), &out, &ctx(), filtered)
}

const PLAIN: &str = include_str!("../../tests/fixtures/tsc/plain.out");
const PRETTY: &str = include_str!("../../tests/fixtures/tsc/pretty.out");
const PRETTY_TSC5: &str = include_str!("../../tests/fixtures/tsc/pretty-tsc5.out");

/// (file, line, column, code, message, notes) of each record.
fn facts(data: &Value) -> Vec<(String, u64, u64, String, String, Value)> {
    data["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["severity"], "error");
            (
                d["file"].as_str().unwrap_or("").to_owned(),
                d["line"].as_u64().unwrap_or(0),
                d["column"].as_u64().unwrap_or(0),
                d["code"].as_str().unwrap().to_owned(),
                d["message"].as_str().unwrap().to_owned(),
                d.get("notes").cloned().unwrap_or(json!([])),
            )
        })
        .collect()
}

#[test]
fn recognition() {
    for cmd in [
        "tsc",
        "tsc --noEmit",
        "tsc -p tsconfig.json",
        "tsc --pretty false a.ts",
        "tsc --pretty",
        "tsc -b",
        "tsc -d",
        "npx tsc --noEmit",
        "npx -y tsc -p .",
        "node_modules/.bin/tsc",
    ] {
        assert!(recognize(&stage(cmd)).is_some(), "{cmd}");
    }
    for cmd in [
        "tsc --watch",
        "tsc -w",
        "tsc -v",
        "tsc --version",
        "tsc --init",
        "tsc --showConfig",
        "tsc --listfiles",
        "tsc --extendedDiagnostics",
        "tsc -b --verbose",
        "tsc -b -d",
        "npx eslint",
        "npx",
        "npx -p typescript tsc",
        "tsx a.ts",
    ] {
        assert!(recognize(&stage(cmd)).is_none(), "{cmd}");
    }
}

#[test]
fn plain_layout_with_chained_messages() {
    let data = parse(PLAIN, 1, false).unwrap();
    assert_eq!(data["summary"], json!({"errors": 8, "warnings": 0}));
    let facts = facts(&data);
    assert_eq!(facts.len(), 8);
    assert_eq!(
        facts[0],
        (
            "a.ts".into(),
            1,
            5,
            "TS2322".into(),
            "Type 'string' is not assignable to type 'number'.".into(),
            json!([])
        )
    );
    assert_eq!(facts[6].1, 4);
    assert_eq!(
        facts[6].5,
        json!([
            "Types of parameters 'x' and 'x' are incompatible.",
            "Type 'number' is not assignable to type 'string'."
        ])
    );
}

#[test]
fn pretty_layouts_of_tsc_7_and_5_give_what_the_plain_one_gives() {
    let plain = facts(&parse(PLAIN, 1, false).unwrap());
    for pretty in [PRETTY, PRETTY_TSC5] {
        let data = parse(pretty, 1, false).unwrap();
        assert_eq!(data["summary"]["line"], "Found 8 errors in 3 files.");
        let facts = facts(&data);
        assert_eq!(facts.len(), plain.len());
        for (pretty, plain) in facts.iter().zip(&plain) {
            let key = |f: &(String, u64, u64, String, String, Value)| {
                (f.0.clone(), f.1, f.2, f.3.clone(), f.4.clone())
            };
            assert_eq!(key(pretty), key(plain));
        }
        // The related location becomes a note, in the same words from both versions.
        assert_eq!(facts[3].5, json!(["a.ts:6:29 - 'age' is declared here."]));
        assert_eq!(facts[6].5.as_array().unwrap().len(), 2);
        assert_eq!(
            facts[5].5,
            json!([
                "c.ts:1:20 - The expected type comes from property 'b' which is declared here on type '{ b: number; }'"
            ])
        );
    }
}

#[test]
fn closing_lines_and_global_errors() {
    let data = parse(
        "b.ts:1:14 - error TS2322: Type 'number' is not assignable to type 'string'.\n\n1 export const z: string = 42;\n               ~\n\n\nFound 1 error in b.ts:1\n\n",
        1,
        false,
    )
    .unwrap();
    assert_eq!(data["summary"]["line"], "Found 1 error in b.ts:1");
    let data = parse(
        "error TS5023: Unknown compiler option '--bogus'.\n",
        1,
        false,
    )
    .unwrap();
    assert_eq!(facts(&data)[0].0, "");
    assert_eq!(facts(&data)[0].3, "TS5023");
    let data = parse(
        "error TS6053: File 'nonexist.ts' not found.\n  The file is in the program because:\n    Root file specified for compilation\n",
        2,
        false,
    )
    .unwrap();
    assert_eq!(data["diagnostics"][0]["notes"].as_array().unwrap().len(), 2);
}

#[test]
fn empty_and_failed_runs() {
    assert_eq!(
        parse("", 0, false).unwrap(),
        json!({"tool": "tsc", "summary": {"errors": 0, "warnings": 0}, "diagnostics": []})
    );
    let out = output(
        "",
        "npm ERR! could not determine executable to run\n",
        Some(1),
    );
    let why = parse_with(recognize, &stage("npx tsc"), &out, &ctx(), false).unwrap_err();
    assert!(why.contains("could not determine executable"), "{why}");
}

#[test]
fn unknown_lines_are_refused() {
    for text in [
        "Version 7.0.2\n",
        "a.ts(1,5): oops TS1: x\n",
        "  indented first line\n",
        "a.ts(1,5): error TS2322: x\nrandom text\n",
        "Found many errors.\n",
        "[21:07:06] Starting compilation in watch mode...\n",
    ] {
        let why = parse(text, 1, false).unwrap_err();
        assert!(why.contains("is not a tsc message"), "{text}: {why}");
    }
}

#[test]
fn filtered_output() {
    let errors: String = PLAIN
        .lines()
        .filter(|l| l.contains("TS2322"))
        .map(|l| format!("{l}\n"))
        .collect();
    let data = parse(&errors, 1, true).unwrap();
    assert_eq!(data["summary"]["errors"], 4);
    // A chain line whose message was dropped is skipped, not refused.
    let data = parse("    Type 'number' is not assignable.\n", 0, true).unwrap();
    assert_eq!(data["diagnostics"], json!([]));
    assert!(parse("    Type 'number' is not assignable.\n", 1, true).is_err());
    // The closing count stands for the lines a filter dropped.
    let tail: String = PRETTY.lines().skip(20).map(|l| format!("{l}\n")).collect();
    let data = parse(&tail, 1, true).unwrap();
    assert_eq!(data["summary"]["errors"], 8);
}

#[test]
fn odd_names_and_hostile_input() {
    let data = parse(
        "src/my (old) ünï.ts(12,3): error TS1005: ';' expected.\nC:\\x\\a.ts:3:4 - error TS1: y\n",
        1,
        false,
    )
    .unwrap();
    assert_eq!(facts(&data)[0].0, "src/my (old) ünï.ts");
    assert_eq!(facts(&data)[1].0, "C:\\x\\a.ts");
    for text in [
        "a.ts(99999999999999999999,1): error TS1: x",
        "a.ts(1,1): error TS99999999999999999999999: x",
        "(1,1): error TS1: x",
        "x:1:1 - error TS: y",
        "Found 18446744073709551616 errors.",
    ] {
        let _ = parse(text, 1, false);
        let _ = parse(text, 1, true);
    }
    let long = "a.ts(1,1): error TS1: (".repeat(10_000);
    assert!(parse(&long, 1, false).is_ok());
}
