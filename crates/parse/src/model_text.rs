//! The typed result as the model reads it: the same facts as `data`, in fewer bytes.
//!
//! Records as JSON objects repeat every key in every record, which made a typed `ls -la` about
//! 3.5 times the size of its text: the opposite of the point of typing it. So in the model's
//! text an array of records is a table, `{"columns":[…],"rows":[[…],…]}` (a field a record
//! lacks is `null`), and a timestamp is its RFC 3339 string (programs get the epoch in
//! `structuredContent`, and the printed text where something was inferred). Nothing else
//! changes: same names, same values, same order.

use serde_json::{Map, Value};

/// `data` in the model's form (see the module comment), as compact JSON. Written straight out,
/// without building a second tree: for a 1 MB listing that tree cost as much as the parse.
pub fn model_text(data: &Value) -> String {
    let mut out = Vec::with_capacity(4096);
    write(data, &mut out);
    // Only whole JSON tokens were written, from valid strings: valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => match timestamp(map) {
            Some(text) => scalar(&text, out),
            None => {
                out.push(b'{');
                for (i, (key, v)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    scalar(key, out);
                    out.push(b':');
                    write(v, out);
                }
                out.push(b'}');
            }
        },
        Value::Array(items) if items.len() >= 2 && items.iter().all(Value::is_object) => {
            table(items, out);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, out);
            }
            out.push(b']');
        }
        other => scalar(other, out),
    }
}

/// One JSON token (a string, number, bool or null).
fn scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(out, value);
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
fn table(records: &[Value], out: &mut Vec<u8>) {
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
    out.extend_from_slice(b"{\"columns\":[");
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        scalar(column.as_str(), out);
    }
    out.extend_from_slice(b"],\"rows\":[");
    for (r, record) in records.iter().enumerate() {
        if r > 0 {
            out.push(b',');
        }
        out.push(b'[');
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match record.get(column.as_str()) {
                Some(cell) => write(cell, out),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b']');
    }
    out.extend_from_slice(b"]}");
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
