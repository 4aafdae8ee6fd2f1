//! What the unit tests share, once (as ripgrep's `testutil`): a command line made into a
//! [`Stage`], a fixed clock, an [`Output`], a parser run to JSON, and the saved real runs under
//! `tests/fixtures`. Each `*_tests.rs` then says only what is particular to its format.

use serde_json::Value;

use crate::registry::Recognize;
use crate::{Context, Output, Stage};

/// The clock of the tests whose format reads no date; the formats that do (`ls`, `ps`,
/// `git log`) pass their own to [`ctx_at`].
pub(crate) const NOW: &str = "2026-12-01T22:00:00Z";

/// The saved real runs: `<format>/<case>.{cmd,out,err,exit}`.
pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// `line`'s words as one stage. Test lines need no quoting; words are split at whitespace.
pub(crate) fn stage(line: &str) -> Stage {
    let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    Stage::from_argv(&argv).unwrap()
}

/// `line`'s stages, split at ` | `, as the guard would hand them over.
pub(crate) fn stages(line: &str) -> Vec<Stage> {
    line.split(" | ").map(stage).collect()
}

/// A context whose now is `rfc3339`.
pub(crate) fn ctx_at(rfc3339: &str) -> Context {
    Context {
        now: chrono::DateTime::parse_from_rfc3339(rfc3339).unwrap(),
    }
}

/// A context whose now is [`NOW`].
pub(crate) fn ctx() -> Context {
    ctx_at(NOW)
}

/// A finished run's output.
pub(crate) fn output<'a>(stdout: &'a str, stderr: &'a str, exit_code: Option<i32>) -> Output<'a> {
    Output {
        stdout,
        stderr,
        exit_code,
    }
}

/// The parser a family's `recognize` picks for `stage`, run on `out`, as JSON. `Err` is the
/// parser's refusal, or says the family did not recognise the stage.
pub(crate) fn parse_with(
    recognize: Recognize,
    stage: &Stage,
    out: &Output<'_>,
    ctx: &Context,
    filtered: bool,
) -> Result<Value, String> {
    let parser = recognize(stage).ok_or_else(|| {
        format!(
            "`{} {}` not recognised",
            stage.program,
            stage.args.join(" ")
        )
    })?;
    parser.parse(out, ctx, filtered).map(crate::Typed::data)
}

/// The pipeline `line` recognised as the crate's callers do ([`crate::recognize`]), checked to
/// be parsed as `type_name`, and its output parsed as JSON.
pub(crate) fn parse_pipeline(
    line: &str,
    type_name: &str,
    out: &Output<'_>,
    ctx: &Context,
) -> Result<Value, String> {
    let recognized = crate::recognize(&stages(line)).map_err(|e| e.0)?;
    assert_eq!(recognized.type_name(), type_name);
    recognized.parse(out, ctx).map(|p| p.data)
}

/// The type the pipeline `line` is parsed as, or `None` when it is not recognised.
pub(crate) fn type_of(line: &str) -> Option<&'static str> {
    crate::recognize(&stages(line)).ok().map(|r| r.type_name())
}

/// `tests/fixtures/<path>`, or empty when there is none.
pub(crate) fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{path}")).unwrap_or_default()
}

/// A saved real run: `tests/fixtures/<case>.{cmd,out,err,exit}`, a missing part empty.
pub(crate) struct SavedRun {
    /// The command line, trimmed.
    pub(crate) line: String,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) exit_code: Option<i32>,
}

pub(crate) fn saved_run(case: &str) -> SavedRun {
    let read = |ext: &str| fixture(&format!("{case}.{ext}"));
    SavedRun {
        line: read("cmd").trim().to_owned(),
        stdout: read("out"),
        stderr: read("err"),
        exit_code: read("exit").trim().parse().ok(),
    }
}

/// The `name` of each failure of a `TestReport`.
pub(crate) fn failure_names(report: &Value) -> Vec<&str> {
    report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect()
}

/// (severity, file, line, column, code, message) of each record of a `Diagnostics`, a missing
/// text empty and a missing number 0.
pub(crate) fn diagnostic_facts(data: &Value) -> Vec<(String, String, u64, u64, String, String)> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    data["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                text(d, "severity"),
                text(d, "file"),
                num(d, "line"),
                num(d, "column"),
                text(d, "code"),
                text(d, "message"),
            )
        })
        .collect()
}

/// One record as [`diagnostic_facts`] gives it.
pub(crate) fn diagnostic_fact(
    severity: &str,
    file: &str,
    line: u64,
    column: u64,
    code: &str,
    message: &str,
) -> (String, String, u64, u64, String, String) {
    (
        severity.into(),
        file.into(),
        line,
        column,
        code.into(),
        message.into(),
    )
}
