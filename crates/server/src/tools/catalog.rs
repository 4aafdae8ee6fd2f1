//! The tool list as hosts receive it: standard JSON Schema only, in the order a model should
//! read it, built once per server.
//!
//! schemars writes `format: "uint64"` (and `uint`, `int32`, …) for Rust integers: these are not
//! JSON Schema formats, and every Ajv-based host (the TypeScript SDK's) prints a warning for each
//! one at every connect. It also puts a `$schema` key in every tool's schemas and keeps the line
//! breaks of wrapped doc comments. [`tidy`] turns all of that into plain, standard schema: the
//! integer's range as `minimum`/`maximum`, no `$schema`, one-line descriptions, and a
//! definition used once written in place of its `$ref`.
//!
//! Output schemas keep their shape (types, required fields, enums) and lose their descriptions
//! and an integer's `minimum: 0` and `maximum`: a host validates `structuredContent` with them, and the model
//! reads the text result, where every fact is said in words. Their descriptions were ~6 KB of a
//! ~26 KB `tools/list` that some hosts put in the model's context at every turn.

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

/// The order tools are listed in: the one a model needs first, then each family in the order
/// its tools are used. It names every tool the router has, no more (`every_tool_is_ordered`).
pub(crate) const ORDER: [&str; 10] = [
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

// `/metrics` has a slot per tool and one for a name no tool has.
const _: () = assert!(crate::metrics::TOOLS == ORDER.len() + 1);

/// The place of tool `name` in [`ORDER`] (`ORDER.len()` for a name no tool has): its slot in
/// `/metrics`.
pub(crate) fn tool_index(name: &str) -> usize {
    ORDER.iter().position(|n| *n == name).unwrap_or(ORDER.len())
}

/// `tools`, tidied and in [`ORDER`] (any tool not named there goes last, by name).
pub(crate) fn catalog(mut tools: Vec<Tool>) -> Vec<Tool> {
    tools.sort_by_key(|t| {
        let rank = ORDER.iter().position(|n| *n == t.name);
        (rank.unwrap_or(ORDER.len()), t.name.clone())
    });
    for tool in &mut tools {
        let mut input = tidied(&tool.input_schema);
        optional_without_null(std::sync::Arc::make_mut(&mut input));
        tool.input_schema = input;
        if let Some(out) = &tool.output_schema {
            let mut out = tidied(out);
            strip_descriptions(std::sync::Arc::make_mut(&mut out));
            strip_integer_bounds(std::sync::Arc::make_mut(&mut out));
            tool.output_schema = Some(out);
        }
    }
    tools
}

/// The catalog for a client that cannot be asked to lift the sandbox (no elicitation, or over
/// HTTP): `sandbox_permissions` says it is refused here instead of promising a question.
pub(crate) fn without_escalation(tools: &[Tool]) -> Vec<Tool> {
    tools
        .iter()
        .cloned()
        .map(|mut tool| {
            let mut schema = tool.input_schema.as_ref().clone();
            let described = schema
                .get_mut("properties")
                .and_then(|p| p.get_mut("sandbox_permissions"))
                .and_then(Value::as_object_mut);
            if let Some(property) = described {
                property.insert(
                    "description".into(),
                    Value::String(crate::escalation::notice::NO_ESCALATION_HERE.into()),
                );
                tool.input_schema = std::sync::Arc::new(schema);
            }
            tool
        })
        .collect()
}

fn tidied(schema: &JsonObject) -> std::sync::Arc<JsonObject> {
    let mut schema = schema.clone();
    schema.remove("$schema");
    tidy(&mut schema);
    inline_single_use_defs(&mut schema);
    std::sync::Arc::new(schema)
}

/// Puts each `$defs` entry that one `$ref` uses in place of that `$ref`, until none is left: a
/// definition pays for its name, its `$ref` and the `$defs` wrapper only when it is shared.
/// MCP gives every tool a schema of its own, so sharing across tools is not possible.
fn inline_single_use_defs(schema: &mut JsonObject) {
    loop {
        let Some(Value::Object(defs)) = schema.get("$defs") else {
            return;
        };
        let mut uses = std::collections::BTreeMap::<String, usize>::new();
        count_refs(&Value::Object(schema.clone()), &mut uses);
        let Some((name, def)) = defs.iter().find_map(|(name, def)| {
            let target = format!("#/$defs/{name}");
            let mut inner = std::collections::BTreeMap::new();
            count_refs(def, &mut inner);
            // A type that refers to itself cannot be written out in place.
            let once = uses.get(&target) == Some(&1) && !inner.contains_key(&target);
            once.then(|| (name.clone(), def.clone()))
        }) else {
            return;
        };
        if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
            defs.remove(&name);
            if defs.is_empty() {
                schema.remove("$defs");
            }
        }
        let target = format!("#/$defs/{name}");
        replace_ref(schema, &target, &def);
    }
}

fn count_refs(value: &Value, uses: &mut std::collections::BTreeMap<String, usize>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                *uses.entry(target.clone()).or_default() += 1;
            }
            map.values().for_each(|v| count_refs(v, uses));
        }
        Value::Array(items) => items.iter().for_each(|v| count_refs(v, uses)),
        _ => {}
    }
}

/// Replaces the object that holds `"$ref": target` with `def`, keeping that object's other keys
/// (a description given where the type is used wins over the type's own).
fn replace_ref(map: &mut JsonObject, target: &str, def: &Value) -> bool {
    if map.get("$ref").and_then(Value::as_str) == Some(target) {
        map.remove("$ref");
        if let Value::Object(fields) = def {
            for (key, value) in fields {
                map.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
        return true;
    }
    map.values_mut().any(|value| match value {
        Value::Object(inner) => replace_ref(inner, target, def),
        Value::Array(items) => items.iter_mut().any(|item| match item {
            Value::Object(inner) => replace_ref(inner, target, def),
            _ => false,
        }),
        _ => false,
    })
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

/// An argument a call may leave out is left out, not sent as `null`: its schema offers the
/// value's own type only (`"type": "boolean"`, not `["boolean", "null"]`; an enum without its
/// `anyOf` null branch). The server still reads a `null` as absent.
fn optional_without_null(schema: &mut JsonObject) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        let Value::Object(property) = property else {
            continue;
        };
        if required.contains(name) {
            continue;
        }
        if let Some(Value::Array(types)) = property.get("type") {
            let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
            if let [only] = kept.as_slice() {
                property.insert("type".into(), only.clone());
            }
        }
        if let Some(Value::Array(branches)) = property.get("anyOf") {
            let kept: Vec<&Value> = branches
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if let [Value::Object(only)] = kept.as_slice() {
                let only = only.clone();
                property.remove("anyOf");
                for (key, value) in only {
                    property.entry(key).or_insert(value);
                }
            }
        }
    }
}

/// Removes `"minimum": 0` and every `maximum` under an output schema: every count, size and
/// duration the server returns is unsigned, and a value's bound is the server's to keep, not a
/// host's to check (saying so for each of them cost ~500 bytes of the list, and the bound of a
/// terminal's size 16 bytes a field).
fn strip_integer_bounds(schema: &mut JsonObject) {
    if schema.get("minimum") == Some(&Value::from(0)) {
        schema.remove("minimum");
    }
    if matches!(schema.get("maximum"), Some(Value::Number(_))) {
        schema.remove("maximum");
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(inner) => strip_integer_bounds(inner),
            Value::Array(items) => items.iter_mut().for_each(|item| {
                if let Value::Object(inner) = item {
                    strip_integer_bounds(inner);
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
/// range is past what JSON numbers carry exactly, or the bound says nothing useful: no value
/// anyone sends comes near 2^32, and the server refuses one past its type in words); `None`
/// when `format` is not one of them (a real format such as `date-time` stays).
fn integer_format_max(format: &str) -> Option<Option<u64>> {
    Some(match format {
        "uint8" => Some(u8::MAX.into()),
        "uint16" => Some(u16::MAX.into()),
        "uint" | "uint32" | "uint64" | "uint128" | "int" | "int8" | "int16" | "int32" | "int64"
        | "int128" | "float" | "double" => None,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool added to a family's router and forgotten here would be listed last, unordered;
    /// a name here that no router has would order nothing.
    #[test]
    fn every_tool_is_ordered() {
        let routed: std::collections::BTreeSet<String> = crate::server::Agentty::tool_router()
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        let ordered: std::collections::BTreeSet<String> =
            ORDER.iter().map(ToString::to_string).collect();
        assert_eq!(
            routed, ordered,
            "tools/catalog.rs ORDER and the routers differ"
        );
        let listed: Vec<String> = catalog(crate::server::Agentty::tool_router().list_all())
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(listed, ORDER, "the catalog is not in ORDER");
    }

    #[test]
    fn integer_formats_become_ranges_and_real_formats_stay() {
        let Value::Object(mut schema) = json!({
            "$defs": {"A": {"properties": {
                "n": {"type": "integer", "format": "uint16", "minimum": 0},
                "m": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
                "k": {"type": "integer", "format": "uint32", "minimum": 0},
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
        assert!(schema["$defs"]["A"]["properties"]["k"]["maximum"].is_null());
        assert_eq!(
            schema["$defs"]["A"]["properties"]["when"]["format"],
            "date-time"
        );
        assert_eq!(schema["description"], "two lines");
    }

    #[test]
    fn a_definition_used_once_is_inlined_and_a_shared_one_stays() {
        let Value::Object(mut schema) = json!({
            "$defs": {
                "Job": {"type": "object", "properties": {"kind": {"$ref": "#/$defs/Kind"}}},
                "Kind": {"enum": ["a", "b"], "description": "what it is"},
                "Id": {"type": "string"},
                "Tree": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Tree"}}},
            },
            "properties": {
                "job": {"$ref": "#/$defs/Job"},
                "first": {"$ref": "#/$defs/Id"},
                "items": {"type": "array", "items": [{"$ref": "#/$defs/Id", "description": "own"}]},
            },
        }) else {
            unreachable!()
        };
        inline_single_use_defs(&mut schema);
        assert_eq!(
            schema["properties"]["job"]["properties"]["kind"]["enum"],
            json!(["a", "b"])
        );
        assert_eq!(schema["$defs"]["Id"], json!({"type": "string"}));
        assert!(
            schema["$defs"]["Tree"].is_object(),
            "a recursive type stays"
        );
        assert!(schema["$defs"].get("Job").is_none() && schema["$defs"].get("Kind").is_none());
        assert_eq!(schema["properties"]["first"], json!({"$ref": "#/$defs/Id"}));
        assert_eq!(
            schema["properties"]["items"]["items"][0]["description"],
            "own"
        );
    }
}
