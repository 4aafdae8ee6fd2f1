//! The typed result as the model reads it: the same facts as `data`, in fewer bytes.
//!
//! Records as JSON objects repeat every key in every record, which made a typed `ls -la` about
//! 3.5 times the size of its text: the opposite of the point of typing it. So in the model's
//! text an array of records is a table, `{"columns":[…],"rows":[[…],…]}` (a field a record
//! lacks is `null`), and a timestamp is its RFC 3339 string (programs get the epoch in
//! `structuredContent`, and the printed text where something was inferred). Nothing else
//! changes: same names, same values, same order.

use serde_json::{Map, Value};

/// `data` in the model's form (see the module comment), as compact JSON.
pub fn model_text(data: &Value) -> String {
    tabled(data).to_string()
}

fn tabled(value: &Value) -> Value {
    match value {
        Value::Object(map) => match timestamp(map) {
            Some(text) => Value::String(text.to_owned()),
            None => Value::Object(map.iter().map(|(k, v)| (k.clone(), tabled(v))).collect()),
        },
        Value::Array(items) if items.len() >= 2 && items.iter().all(Value::is_object) => {
            table(items)
        }
        Value::Array(items) => Value::Array(items.iter().map(tabled).collect()),
        other => other.clone(),
    }
}

/// A `crate::time::Timestamp`: its RFC 3339 text.
fn timestamp(map: &Map<String, Value>) -> Option<&str> {
    let text = map.get("rfc3339")?.as_str()?;
    let only_time = map.get("epoch").is_some_and(Value::is_i64)
        && map
            .keys()
            .all(|k| matches!(k.as_str(), "rfc3339" | "epoch" | "raw"));
    only_time.then_some(text)
}

/// Records as columns (every key, in the order first seen) and rows.
fn table(records: &[Value]) -> Value {
    let mut columns: Vec<&String> = Vec::new();
    for record in records {
        if let Value::Object(map) = record {
            for key in map.keys() {
                if !columns.contains(&key) {
                    columns.push(key);
                }
            }
        }
    }
    let rows = records
        .iter()
        .map(|record| {
            Value::Array(
                columns
                    .iter()
                    .map(|c| record.get(c.as_str()).map_or(Value::Null, tabled))
                    .collect(),
            )
        })
        .collect();
    let mut out = Map::new();
    out.insert(
        "columns".into(),
        Value::Array(
            columns
                .into_iter()
                .map(|c| Value::String(c.clone()))
                .collect(),
        ),
    );
    out.insert("rows".into(), Value::Array(rows));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_become_a_table_and_times_their_text() {
        let data = json!({
            "total": 8,
            "entries": [
                {"name": "a", "size_bytes": 1, "modified": {"rfc3339": "2026-12-01T10:00:00+00:00", "epoch": 1, "raw": "Dec  1 10:00"}},
                {"name": "b", "target": "a"}
            ],
            "one": [{"x": 1}]
        });
        let text: Value = serde_json::from_str(&model_text(&data)).unwrap();
        assert_eq!(text["total"], 8);
        assert_eq!(
            text["one"],
            json!([{"x": 1}]),
            "a single record stays an object"
        );
        let columns: Vec<&str> = text["entries"]["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let rows = text["entries"]["rows"].as_array().unwrap();
        let cell = |row: usize, column: &str| {
            let i = columns.iter().position(|c| *c == column).unwrap();
            rows[row][i].clone()
        };
        assert_eq!(columns.len(), 4, "{columns:?}");
        assert_eq!(cell(0, "name"), "a");
        assert_eq!(cell(0, "modified"), "2026-12-01T10:00:00+00:00");
        assert_eq!(cell(0, "target"), Value::Null);
        assert_eq!(cell(1, "target"), "a");
        assert_eq!(cell(1, "size_bytes"), Value::Null);
        // An object that only looks like a time in part is left as it is.
        let other = json!({"rfc3339": "x", "epoch": 1, "zone": "UTC"});
        assert_eq!(model_text(&other), other.to_string());
    }
}
