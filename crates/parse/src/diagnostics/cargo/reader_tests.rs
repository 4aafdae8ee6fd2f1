//! rustc's human and JSON formats read through the whole parser: the same facts from both,
//! notes and causes, lints named by their notes, and the formats mixed on one stream.

use crate::diagnostics::cargo::tests::{fact, facts, fixture, run};
use crate::testutil::FIXTURES;
use serde_json::{Value, json};

#[test]
fn json_gives_the_same_facts_as_human() {
    let human = fixture("cargo-human/lib-warning-bin-error").unwrap();
    let json = fixture("cargo-json/lib-warning-bin-error").unwrap();
    assert_eq!(facts(&json), facts(&human));
    assert_eq!(json["summary"]["errors"], 1);
    assert_eq!(json["summary"]["warnings"], 1);
    // Cargo prints only the `could not compile` line on stderr in JSON mode.
    assert_eq!(
        json["summary"]["line"],
        "error: could not compile `demo` (bin \"demo\") due to 1 previous error"
    );
    let notes = &json["diagnostics"][0]["notes"];
    // The lint-level note is dropped: `code` names the lint.
    assert_eq!(
        notes,
        &json!(["help: if this is intentional, prefix it with an underscore"])
    );
    assert_eq!(human["diagnostics"][0].get("notes"), None);
}

#[test]
fn cargo_errors_keep_their_causes() {
    let data = fixture("cargo-human/missing-dependency").unwrap();
    let record = &data["diagnostics"][0];
    assert_eq!(
        record["message"],
        "failed to load manifest for dependency `nope`"
    );
    assert_eq!(record["severity"], "error");
    assert_eq!(record.get("file"), None);
    assert_eq!(
        record["notes"][0],
        "caused by: failed to read `/tmp/dx/nope/Cargo.toml`"
    );
    assert_eq!(
        record["notes"][1],
        "caused by: No such file or directory (os error 2)"
    );
}

#[test]
fn json_and_cargo_lines_on_one_stream() {
    // `cargo build --message-format=json 2>&1`.
    let json = std::fs::read_to_string(format!("{FIXTURES}/cargo-json/lib-warning-bin-error.out"))
        .unwrap();
    let merged = format!(
        "   Compiling demo v0.1.0 (/tmp/dx/demo)\n{json}error: could not compile `demo` (bin \"demo\") due to 1 previous error\n"
    );
    let data = run(
        "cargo build --message-format=json",
        &merged,
        "",
        Some(101),
        false,
    )
    .unwrap();
    assert_eq!(data["summary"]["errors"], 1);
    assert_eq!(data["summary"]["warnings"], 1);
    assert!(data["summary"]["line"].is_string());
}

#[test]
fn spans_in_std_macros_point_at_the_call_site() {
    let line = json!({"reason": "compiler-message", "message": {
        "level": "error", "message": "x", "code": null, "children": [],
        "spans": [{"is_primary": true, "file_name": "/rustc/abc/library/core/src/macros/mod.rs", "line_start": 1, "column_start": 1,
            "expansion": {"span": {"file_name": "src/main.rs", "line_start": 7, "column_start": 5, "expansion": null}}}]}});
    let data = run(
        "cargo check --message-format=json",
        &format!("{line}\n"),
        "",
        Some(101),
        false,
    )
    .unwrap();
    assert_eq!(
        facts(&data),
        [fact("error", Value::Null, "src/main.rs", 7, 5, "x")]
    );
}

#[test]
fn short_format_keeps_the_label_in_the_message() {
    let data = fixture("cargo-human/short-check").unwrap();
    assert_eq!(
        facts(&data),
        [
            fact(
                "warning",
                Value::Null,
                "src/lib.rs",
                2,
                9,
                "unused variable: `unused`: help: if this is intentional, prefix it with an underscore: `_unused`"
            ),
            fact(
                "error",
                json!("E0308"),
                "src/main.rs",
                2,
                25,
                "mismatched types: expected `String`, found `u32`"
            ),
        ]
    );
}

#[test]
fn clippy_lints_are_named_from_their_notes() {
    let human = fixture("cargo-human/clippy-deny").unwrap();
    let codes: Vec<&Value> = human["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["code"])
        .collect();
    // Only the first message of a lint carries the note that names it.
    assert_eq!(
        codes,
        [
            &json!("unused_variables"),
            &Value::Null,
            &json!("clippy::needless_return")
        ]
    );
    let json = fixture("cargo-json/clippy-deny").unwrap();
    let codes: Vec<&Value> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["code"])
        .collect();
    assert_eq!(
        codes,
        [
            &json!("unused_variables"),
            &json!("unused_variables"),
            &json!("clippy::needless_return")
        ]
    );
    let strip = |mut f: Vec<(String, Value, Value, Value, Value, String)>| {
        f.iter_mut().for_each(|x| x.1 = Value::Null);
        f
    };
    assert_eq!(strip(facts(&human)), strip(facts(&json)));
    let warned = fixture("cargo-human/clippy").unwrap();
    assert_eq!(warned["summary"]["warnings"], 3);
    assert_eq!(warned["diagnostics"][2]["code"], "clippy::needless_return");
}
