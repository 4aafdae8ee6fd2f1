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

/// The length of [`crate::Parsed::model_text`] for `data` of type `type_name`.
pub(crate) fn text_len(data: &Value, type_name: &str) -> usize {
    model_text(data, crate::registry::model_skips(type_name)).len()
}

/// What one record adds to its table's rows at most: its cells (every field but `skip`, in the
/// model's form), commas and brackets. A cell shared by every record goes to `same` instead,
/// so the table of several records costs at most the sum of their rows plus its header.
pub(crate) fn row_len(record: &Value, skip: &[&str]) -> usize {
    let Value::Object(map) = record else {
        return 0;
    };
    let mut out = Vec::new();
    delimited(
        &mut out,
        b'[',
        b']',
        map.iter().filter(|(k, _)| !skip.contains(&k.as_str())),
        |(_, cell), out| write(cell, &[], out),
    );
    out.len()
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
                        // Too few records for a table: each written without the skipped
                        // columns all the same (one `ls -l` entry kept its `mode`).
                        Value::Array(items) => {
                            let columns: Vec<&str> = skip
                                .iter()
                                .filter_map(|s| s.split_once('.'))
                                .filter(|(records, _)| records == key)
                                .map(|(_, column)| column)
                                .collect();
                            delimited(out, b'[', b']', items, |item, out| {
                                write(item, &columns, out);
                            });
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
#[path = "model_text_tests.rs"]
mod tests;
