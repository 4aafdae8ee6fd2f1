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
    // One record is no table: it is written without the skipped columns too.
    let one = json!({"entries": [{"name": "a", "mode": "0644", "permissions": "-rw-r--r--"}]});
    let text: Value = serde_json::from_str(&model_text(&one, &["entries.mode"])).unwrap();
    assert_eq!(
        text["entries"],
        json!([{"name": "a", "permissions": "-rw-r--r--"}])
    );
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
