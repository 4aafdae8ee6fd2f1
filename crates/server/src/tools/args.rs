//! Tool arguments: parsed, and when they do not fit, told in words that name the field.
//!
//! serde says `invalid type: string "1000", expected u64` and leaves the reader to guess which
//! field; a model then retries blindly. [`parse`] tracks the path of the field that failed
//! (`serde_path_to_error`) and [`explain`] rewrites serde's wording:
//! `` `timeout_ms` must be an integer (got the string "1000") ``.

use rmcp::model::{CallToolResult, JsonObject};
use serde::de::DeserializeOwned;

use super::notice;

/// Parses a tool's arguments, or the error result that names the field and says what is wrong.
#[expect(
    clippy::result_large_err,
    reason = "the error is the tool's answer itself, made once on a failed call"
)]
pub(crate) fn parse<T: DeserializeOwned>(args: JsonObject) -> Result<T, CallToolResult> {
    let value = serde_json::Value::Object(args);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let text = explain(&path, &e.into_inner().to_string());
        crate::tools::tool_error(format!("{}: {text}", notice::INVALID_ARGS))
    })
}

/// One sentence for serde's message `msg` about the field at `path` (`.` for the whole object).
pub(crate) fn explain(path: &str, msg: &str) -> String {
    let field = (path != ".").then(|| format!("`{path}`"));
    if let Some(name) = between(msg, "missing field `", "`") {
        let full = match &field {
            Some(_) => format!("{path}.{name}"),
            None => name.to_owned(),
        };
        return format!("`{full}` is required");
    }
    if let Some(name) = between(msg, "unknown field `", "`") {
        let known = msg
            .split_once("expected one of ")
            .or_else(|| msg.split_once("expected "))
            .map(|(_, list)| format!("; known: {list}"))
            .unwrap_or_default();
        return format!("unknown field `{name}`{known}");
    }
    let field = field.unwrap_or_else(|| "the arguments".to_owned());
    if let Some(rest) = msg.strip_prefix("unknown variant ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let expected = expected
            .strip_prefix("one of ")
            .unwrap_or(expected)
            .replace('`', "\"");
        return format!(
            "{field} must be one of {expected} (got {})",
            got.replace('`', "\"")
        );
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = msg.strip_prefix(prefix)
            && let Some((got, expected)) = rest.split_once(", expected ")
        {
            return format!(
                "{field} must be {} (got {})",
                wanted(expected),
                got_words(got)
            );
        }
    }
    format!("{field}: {msg}")
}

/// serde's "expected …" in words.
fn wanted(expected: &str) -> String {
    let unsigned = ["u8", "u16", "u32", "u64", "u128", "usize"];
    let signed = ["i8", "i16", "i32", "i64", "i128", "isize"];
    if unsigned.contains(&expected) {
        "an integer ≥ 0".to_owned()
    } else if signed.contains(&expected) || expected == "an integer" {
        "an integer".to_owned()
    } else if expected == "a boolean" {
        "true or false".to_owned()
    } else if expected == "a map" || expected.starts_with("struct ") {
        "an object".to_owned()
    } else if expected == "a sequence" {
        "an array".to_owned()
    } else if expected == "f32" || expected == "f64" {
        "a number".to_owned()
    } else {
        expected.replace('`', "\"")
    }
}

/// serde's "invalid type: …" value in words: `string "1000"` → `the string "1000"`.
fn got_words(got: &str) -> String {
    let unquote = |s: &str| s.trim_matches('`').to_owned();
    if let Some(s) = got.strip_prefix("string ") {
        format!("the string {s}")
    } else if let Some(n) = got
        .strip_prefix("integer ")
        .or_else(|| got.strip_prefix("floating point "))
    {
        unquote(n)
    } else if let Some(b) = got.strip_prefix("boolean ") {
        unquote(b)
    } else if got == "map" {
        "an object".to_owned()
    } else if got == "sequence" {
        "an array".to_owned()
    } else if got == "null" || got == "unit value" {
        "null".to_owned()
    } else {
        got.to_owned()
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &text[text.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        id: String,
        timeout_ms: Option<u64>,
        pty: Option<bool>,
        env: Option<std::collections::BTreeMap<String, String>>,
        argv: Option<Vec<String>>,
        mode: Option<Mode>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Kill,
        Background,
    }

    fn said(args: serde_json::Value) -> String {
        let serde_json::Value::Object(args) = args else {
            unreachable!()
        };
        let err = parse::<Args>(args).unwrap_err();
        let text = err.content[0].as_text().unwrap().text.clone();
        assert!(
            !text.contains("invalid type") && !text.contains("expected u64"),
            "{text}"
        );
        text
    }

    #[test]
    fn every_wrong_argument_names_its_field_in_words() {
        use serde_json::json;
        let cases = [
            (
                json!({"id": "t1", "timeout_ms": "1000"}),
                "`timeout_ms` must be an integer ≥ 0 (got the string \"1000\")",
            ),
            (
                json!({"id": "t1", "timeout_ms": -5}),
                "`timeout_ms` must be an integer ≥ 0 (got -5)",
            ),
            (
                json!({"id": "t1", "pty": "yes"}),
                "`pty` must be true or false (got the string \"yes\")",
            ),
            (json!({"id": 7}), "`id` must be a string (got 7)"),
            (
                json!({"id": "t1", "env": {"A": 1}}),
                "`env.A` must be a string (got 1)",
            ),
            (
                json!({"id": "t1", "argv": ["ls", false]}),
                "`argv[1]` must be a string (got false)",
            ),
            (
                json!({"id": "t1", "mode": "later"}),
                "`mode` must be one of \"kill\" or \"background\" (got \"later\")",
            ),
            (json!({}), "`id` is required"),
            (json!({"id": "t1", "colour": 1}), "unknown field `colour`"),
            (
                json!({"id": "t1", "env": []}),
                "`env` must be an object (got an array)",
            ),
        ];
        for (args, want) in cases {
            let text = said(args.clone());
            assert!(text.contains(want), "{args}: {text}");
        }
    }
}
