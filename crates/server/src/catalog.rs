//! The tool list as hosts receive it: standard JSON Schema only, in the order a model should
//! read it, built once per server.
//!
//! schemars writes `format: "uint64"` (and `uint`, `int32`, …) for Rust integers: these are not
//! JSON Schema formats, and every Ajv-based host (the TypeScript SDK's) prints a warning for each
//! one at every connect. It also puts a `$schema` key in every tool's schemas and keeps the line
//! breaks of wrapped doc comments. [`tidy`] turns all of that into plain, standard schema: the
//! integer's range as `minimum`/`maximum`, no `$schema`, one-line descriptions.
//!
//! Output schemas keep their shape and lose their descriptions: a host validates
//! `structuredContent` with them, and the model reads the text result, where every fact is
//! said in words. Their descriptions were ~6 KB of a ~26 KB `tools/list` that some hosts put in
//! the model's context at every turn.

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

/// The order tools are listed in: the one a model needs first, then each family in the order
/// its tools are used.
const ORDER: [&str; 10] = [
    "terminal",
    "task_list",
    "task_output",
    "task_wait",
    "task_stop",
    "shell_open",
    "shell_send",
    "shell_read",
    "shell_list",
    "shell_close",
];

/// `tools`, tidied and in [`ORDER`] (any tool not named there goes last, by name).
pub(crate) fn catalog(mut tools: Vec<Tool>) -> Vec<Tool> {
    tools.sort_by_key(|t| {
        let rank = ORDER.iter().position(|n| *n == t.name);
        (rank.unwrap_or(ORDER.len()), t.name.clone())
    });
    for tool in &mut tools {
        tool.input_schema = tidied(&tool.input_schema);
        if let Some(out) = &tool.output_schema {
            let mut out = tidied(out);
            strip_descriptions(std::sync::Arc::make_mut(&mut out));
            tool.output_schema = Some(out);
        }
    }
    tools
}

fn tidied(schema: &JsonObject) -> std::sync::Arc<JsonObject> {
    let mut schema = schema.clone();
    schema.remove("$schema");
    tidy(&mut schema);
    std::sync::Arc::new(schema)
}

/// Rewrites one schema object and everything under it (see the module comment).
pub(crate) fn tidy(schema: &mut JsonObject) {
    if let Some(Value::String(format)) = schema.get("format")
        && let Some(max) = integer_format_max(format)
    {
        schema.remove("format");
        if let Some(max) = max {
            schema.insert("maximum".into(), Value::from(max));
        }
    }
    if let Some(Value::String(text)) = schema.get_mut("description")
        && text.contains('\n')
    {
        *text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(inner) => tidy(inner),
            Value::Array(items) => items.iter_mut().for_each(|item| {
                if let Value::Object(inner) = item {
                    tidy(inner);
                }
            }),
            _ => {}
        }
    }
}

/// Removes every `description` under `schema` (property names inside `properties` are kept,
/// even one called "description").
fn strip_descriptions(schema: &mut JsonObject) {
    if matches!(schema.get("description"), Some(Value::String(_))) {
        schema.remove("description");
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(inner) => strip_descriptions(inner),
            Value::Array(items) => items.iter_mut().for_each(|item| {
                if let Value::Object(inner) = item {
                    strip_descriptions(inner);
                }
            }),
            _ => {}
        }
    }
}

/// For a schemars integer format: `Some(maximum)` to state instead (`None` when the type's own
/// range is past what JSON numbers carry exactly, or the bound says nothing useful); `None`
/// when `format` is not one of them (a real format such as `date-time` stays).
fn integer_format_max(format: &str) -> Option<Option<u64>> {
    Some(match format {
        "uint8" => Some(u8::MAX.into()),
        "uint16" => Some(u16::MAX.into()),
        "uint32" => Some(u32::MAX.into()),
        "uint" | "uint64" | "uint128" | "int" | "int8" | "int16" | "int32" | "int64" | "int128"
        | "float" | "double" => None,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_formats_become_ranges_and_real_formats_stay() {
        let Value::Object(mut schema) = json!({
            "$defs": {"A": {"properties": {
                "n": {"type": "integer", "format": "uint16", "minimum": 0},
                "m": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
            }}},
            "anyOf": [{"type": "integer", "format": "int32"}],
            "description": "two\nlines",
        }) else {
            unreachable!()
        };
        tidy(&mut schema);
        let text = Value::Object(schema.clone()).to_string();
        assert!(!text.contains("uint") && !text.contains("int32"), "{text}");
        assert_eq!(schema["$defs"]["A"]["properties"]["n"]["maximum"], 65535);
        assert_eq!(
            schema["$defs"]["A"]["properties"]["when"]["format"],
            "date-time"
        );
        assert_eq!(schema["description"], "two lines");
    }
}
