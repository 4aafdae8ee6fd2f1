//! The typed result as the model reads it: the same facts as `data`, in fewer bytes.
//!
//! Records as JSON objects repeat every key in every record, which made a typed `ls -la` about
//! 3.5 times the size of its text: the opposite of the point of typing it. So in the model's
//! text:
//! - an array of records is a table, `{"same":{…},"columns":[…],"rows":[[…],…]}`: `same` holds
//!   the fields whose value is the same in every record (an owner, a type), `columns` the
//!   others, in the type's order (a field a record lacks is `null`);
//! - a timestamp is its RFC 3339 string (the epoch is in `structuredContent`);
//! - fields a program wants but the model can read off another are left out (each type lists
//!   them in the registry: `mode` beside `permissions`, the header map of `ps`).

use serde_json::{Map, Value};

impl crate::Parsed {
    /// `data` in the model's form (see the module comment), as compact JSON. Written straight
    /// out, without building a second tree.
    pub fn model_text(&self) -> String {
        model_text(&self.data, crate::registry::model_skips(self.type_name))
    }
}

/// `skip`: `"field"` (a top-level field) or `"records.field"` (a column of a records table).
fn model_text(data: &Value, skip: &[&str]) -> String {
    let mut out = Vec::with_capacity(4096);
    write(data, skip, &mut out);
    // Only whole JSON tokens were written, from valid strings: valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// `skip` (see [`model_text`]) applies at this level; what is nested is written whole.
fn write(value: &Value, skip: &[&str], out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => match timestamp(map) {
            Some(text) => scalar(&text, out),
            None => {
                let fields = map.iter().filter(|(k, _)| !skip.contains(&k.as_str()));
                delimited(out, b'{', b'}', fields, |(key, v), out| {
                    scalar(key, out);
                    out.push(b':');
                    match v {
                        Value::Array(items) if is_table(items) => {
                            let skipped = |column: &str| {
                                skip.iter()
                                    .any(|s| s.split_once('.') == Some((key, column)))
                            };
                            table(items, &skipped, out);
                        }
                        other => write(other, &[], out),
                    }
                });
            }
        },
        Value::Array(items) if is_table(items) => table(items, &|_| false, out),
        Value::Array(items) => delimited(out, b'[', b']', items, |item, out| {
            write(item, &[], out);
        }),
        other => scalar(other, out),
    }
}

/// `open`, each item written by `each` with commas between, `close`.
fn delimited<T>(
    out: &mut Vec<u8>,
    open: u8,
    close: u8,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(T, &mut Vec<u8>),
) {
    out.push(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        each(item, out);
    }
    out.push(close);
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

fn is_table(items: &[Value]) -> bool {
    items.len() >= 2 && items.iter().all(Value::is_object)
}

/// Records as a table: the fields every record has with one value under `same`, the others as
/// columns (every key, in the type's order) and rows.
fn table(records: &[Value], skipped: &dyn Fn(&str) -> bool, out: &mut Vec<u8>) {
    // The type's order: a key first seen in a later record goes right after the key it follows
    // there (records list their fields in declaration order, absent ones left out).
    let mut keys: Vec<&String> = Vec::new();
    for record in records {
        if let Value::Object(map) = record {
            let mut at = 0;
            for key in map.keys().filter(|k| !skipped(k)) {
                at = match keys.iter().position(|k| *k == key) {
                    Some(found) => found + 1,
                    None => {
                        keys.insert(at, key);
                        at + 1
                    }
                };
            }
        }
    }
    let shared = |key: &str| {
        let first = records.first().and_then(|r| r.get(key));
        first.is_some() && records.iter().all(|r| r.get(key) == first)
    };
    let (same, columns): (Vec<&String>, Vec<&String>) = keys.into_iter().partition(|k| shared(k));
    out.push(b'{');
    if let Some(first) = records.first().filter(|_| !same.is_empty()) {
        out.extend_from_slice(b"\"same\":");
        delimited(out, b'{', b'}', &same, |key, out| {
            scalar(key.as_str(), out);
            out.push(b':');
            if let Some(value) = first.get(key.as_str()) {
                write(value, &[], out);
            }
        });
        out.push(b',');
    }
    out.extend_from_slice(b"\"columns\":");
    delimited(out, b'[', b']', &columns, |column, out| {
        scalar(column.as_str(), out);
    });
    out.extend_from_slice(b",\"rows\":");
    delimited(out, b'[', b']', records, |record, out| {
        delimited(out, b'[', b']', &columns, |column, out| {
            match record.get(column.as_str()) {
                Some(cell) => write(cell, &[], out),
                None => out.extend_from_slice(b"null"),
            }
        });
    });
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The cell of `column` in row `row`, or the shared value when the column is in `same`.
    fn cell(table: &Value, row: usize, column: &str) -> Option<Value> {
        if let Some(value) = table["same"].get(column) {
            return Some(value.clone());
        }
        let columns = table["columns"].as_array().unwrap();
        let i = columns.iter().position(|c| c == column)?;
        Some(table["rows"][row][i].clone())
    }

    #[test]
    fn records_become_a_table_and_times_their_text() {
        let data = json!({
            "total": 8,
            "entries": [
                {"name": "a", "size_bytes": 1, "owner": "root", "mode": "0644", "modified": {"rfc3339": "2026-12-01T10:00:00+00:00", "epoch": 1, "raw": "Dec  1 10:00"}},
                {"name": "b", "target": "a", "owner": "root", "mode": "0755"},
                {"name": "c", "owner": "root", "mode": "0755", "size_bytes": 1}
            ],
            "one": [{"x": 1}]
        });
        let text: Value = serde_json::from_str(&model_text(&data, &["entries.mode"])).unwrap();
        assert_eq!(text["total"], 8);
        assert_eq!(
            text["one"],
            json!([{"x": 1}]),
            "a single record stays an object"
        );
        let table = &text["entries"];
        assert_eq!(table["same"], json!({"owner": "root"}), "{table}");
        assert_eq!(
            table["columns"],
            json!(["name", "target", "size_bytes", "modified"]),
            "in the records' order, without the skipped and the shared"
        );
        assert_eq!(table["rows"].as_array().unwrap().len(), 3);
        assert_eq!(cell(table, 0, "name").unwrap(), "a");
        assert_eq!(cell(table, 2, "owner").unwrap(), "root");
        assert_eq!(
            cell(table, 0, "modified").unwrap(),
            "2026-12-01T10:00:00+00:00"
        );
        assert_eq!(cell(table, 0, "target").unwrap(), Value::Null);
        assert_eq!(cell(table, 1, "target").unwrap(), "a");
        assert_eq!(cell(table, 1, "size_bytes").unwrap(), Value::Null);
        assert_eq!(
            cell(table, 2, "size_bytes").unwrap(),
            1,
            "a value most rows share is still a column when one lacks it"
        );
        assert_eq!(cell(table, 0, "mode"), None, "skipped");
        // Without skips, mode varies: a column.
        let all: Value = serde_json::from_str(&model_text(&data, &[])).unwrap();
        assert_eq!(cell(&all["entries"], 1, "mode").unwrap(), "0755");
        // An object that only looks like a time in part is left as it is.
        let other = json!({"rfc3339": "x", "epoch": 1, "zone": "UTC"});
        assert_eq!(model_text(&other, &[]), other.to_string());
    }

    #[test]
    fn every_skipped_field_exists_and_says_what_another_does() {
        for info in crate::TYPES {
            let schema = crate::schema(info.name).unwrap();
            for skip in info.model_skips {
                let found = match skip.split_once('.') {
                    None => schema["properties"].get(skip).is_some(),
                    Some((records, field)) => {
                        assert_eq!(records, info.records, "{}: {skip}", info.name);
                        schema.to_string().contains(&format!("\"{field}\":"))
                    }
                };
                assert!(found, "{}: {skip} is no field", info.name);
            }
        }
    }
}
